/* Chooses the model's reader by its path: see load.h. */
#include "load.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "mnistcudnn.h"
#include "onnx.h"

static int is_file(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

ttp_status model_load(const char* path, model** out, ttp_err* e) {
  *out = NULL;
  const size_t len = strlen(path);
  if (len > 5 && strcmp(path + len - 5, ".onnx") == 0) return io_load_onnx(path, out, e);
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode))
    return ERR(e, TTP_ERR_MODEL, "%s: not a model (an .onnx file, or a directory of mnistCUDNN's "
               ".bin files or of a model.onnx)", path);
  char inner[4096];
  snprintf(inner, sizeof inner, "%s/conv1.bin", path);
  if (is_file(inner)) return io_load_mnistcudnn(path, out, e);
  snprintf(inner, sizeof inner, "%s/model.onnx", path);
  if (is_file(inner)) return io_load_onnx(inner, out, e);
  return io_load_mnistcudnn(path, out, e); /* names the missing conv1.bin */
}
