/* cuDNN through dlopen (see dnn_libs.h). */
#include "dnn_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define TTP_STRINGIFY_(x) #x
#define TTP_STRINGIFY(x) TTP_STRINGIFY_(x)
#define CUDNN_SONAME "libcudnn.so." TTP_STRINGIFY(CUDNN_MAJOR)

dnn_libs gpu_libs;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static ttp_err load_result; /* status and message of the one attempt */

/* One function of `library` into *slot; 0 with load_result set where it is missing. */
static int resolve(void* handle, const char* library, const char* name, void** slot) {
  dlerror();
  *slot = dlsym(handle, name);
  if (*slot) return 1;
  const char* why = dlerror();
  ERR(&load_result, TTP_ERR_CUDNN, "engine cudnn: %s has no %s (%s): not the version this "
      "ttapipe was built with", library, name, why ? why : "null");
  return 0;
}

static void* open_library(const char* library, const char* what) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    ERR(&load_result, TTP_ERR_CUDNN, "engine cudnn needs %s (%s), which this machine lacks or "
        "the loader cannot find: %s", library, what, why ? why : "not found");
  }
  return handle;
}

static void load(void) {
  dnn_libs libs;
  void* dnn = open_library(CUDNN_SONAME, "cuDNN " TTP_STRINGIFY(CUDNN_MAJOR));
  if (!dnn) return;
#define TTP_DNN_RESOLVE(name) \
  if (!resolve(dnn, CUDNN_SONAME, #name, (void**)&libs.name)) return;
  TTP_CUDNN_FUNCTIONS(TTP_DNN_RESOLVE)
#undef TTP_DNN_RESOLVE
  gpu_libs = libs;
  load_result.status = TTP_OK;
}

ttp_status dnn_libs_load(ttp_err* e) {
  pthread_once(&load_once, load);
  if (load_result.status != TTP_OK && e) *e = load_result;
  return load_result.status;
}
