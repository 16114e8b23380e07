/* A model by its path, the reader chosen by what the path is: a file ending in ".onnx" (onnx.h);
   a directory holding mnistCUDNN's conv1.bin (mnistcudnn.h); a directory holding model.onnx and
   no conv1.bin (its model.onnx: a shipped model of another network than LeNet). */
#ifndef TTP_MODEL_LOAD_H
#define TTP_MODEL_LOAD_H

#include "model.h"

/* Refuses, naming the path, one that is none of those; the reader's refusal otherwise. *out is
   NULL on failure. */
ttp_status model_load(const char* path, model** out, ttp_err* e);

#endif
