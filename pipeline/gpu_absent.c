/* The GPU runner of a CPU-only build (TTAPIPE_CUDA=OFF): it exists, so that ttapipe.h and the
   registry are the same whatever the build, and says why a GPU engine cannot open. */
#include "engine.h"

ttp_status gpu_runner_open(const struct gpu_network_ops* network, const model* m,
                           const engine_config* c, batch_stream* s, ttp_err* e) {
  (void)network, (void)m, (void)c, (void)s;
  return ERR(e, TTP_ERR_NO_GPU, "this ttapipe was built without GPU support (TTAPIPE_CUDA=OFF)");
}

ttp_status gpu_devices_open(const struct gpu_network_ops* network, const model* m,
                            const engine_config* c, batch_stream* s, ttp_err* e) {
  return gpu_runner_open(network, m, c, s, e);
}
