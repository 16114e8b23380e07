/* The cudnn engine of a CPU-only build (TTAPIPE_CUDA=OFF): it exists, so that ttapipe.h is the
   same whatever the build, and says why it cannot open. */
#include "../engine.h"

static ttp_status absent_open(const model* m, const engine_config* c, void** state, ttp_err* e) {
  (void)m, (void)c;
  *state = NULL;
  return ERR(e, TTP_ERR_NO_GPU, "this ttapipe was built without GPU support (TTAPIPE_CUDA=OFF)");
}

static ttp_status absent_run(void* state, const uint8_t* images, size_t count, ttp_result* results,
                             float* merged, ttp_err* e) {
  (void)state, (void)images, (void)count, (void)results, (void)merged;
  return ERR(e, TTP_ERR_NO_GPU, "this ttapipe was built without GPU support");
}

static const char* absent_describe(void* state) {
  (void)state;
  return "";
}

static void absent_close(void* state) { (void)state; }

const engine_ops cudnn_engine_ops = {
    .name = "cudnn",
    .open = absent_open,
    .run = absent_run,
    .describe = absent_describe,
    .close = absent_close,
};
