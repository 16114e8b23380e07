/* The model directory of NVIDIA's cuDNN sample mnistCUDNN: raw little-endian float32 files with
   no header (conv1.bin, conv1.bias.bin, conv2.bin, conv2.bias.bin, ip1.bin, ip1.bias.bin,
   ip2.bin, ip2.bias.bin) for the sample's fixed LeNet, and an optional labels.txt with one class
   name per line. */
#ifndef TTP_MODEL_MNISTCUDNN_H
#define TTP_MODEL_MNISTCUDNN_H

#include "model.h"

/* Builds the sample's network, reads its weights from dir and checks the result (model_check).
   Refuses, naming the file: a missing file, a size other than the layer needs (with the expected
   and actual sizes), NaN or infinite values, and a labels.txt whose line count is not the number
   of classes or that holds an empty name or control characters. *out is NULL on failure. */
ttp_status io_load_mnistcudnn(const char* dir, model** out, ttp_err* e);

#endif
