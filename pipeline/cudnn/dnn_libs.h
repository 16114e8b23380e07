/* cuDNN, loaded when the cudnn engine first opens, not when the library loads: a process that
   runs the CPU engines, prints help or reads a model never maps it (BENCHMARKS.md, "Time to
   result"), and the library loads and runs its CPU engines on a machine that lacks it. The engine
   calls every function of cuDNN's through `gpu_libs`, e.g. gpu_libs.cudnnCreate(&handle), after
   dnn_libs_load has succeeded. (No cuBLAS: the fc layers run ttapipe's kernel, fc_kernel.h.) */
#ifndef TTP_DNN_LIBS_H
#define TTP_DNN_LIBS_H

#include <cudnn.h>

#include "../error.h"

/* Every function of theirs the engine calls. */
#define TTP_CUDNN_FUNCTIONS(X)                                                                \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString)                     \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnDestroyTensorDescriptor) \
  X(cudnnCreateFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnDestroyFilterDescriptor) \
  X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor)                      \
  X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)                             \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnGetConvolutionForwardAlgorithm_v7)              \
  X(cudnnFindConvolutionForwardAlgorithm) X(cudnnGetConvolutionForwardWorkspaceSize)          \
  X(cudnnConvolutionForward) X(cudnnConvolutionBiasActivationForward)                         \
  X(cudnnCreateActivationDescriptor) X(cudnnSetActivationDescriptor)                          \
  X(cudnnDestroyActivationDescriptor) X(cudnnCreateLRNDescriptor) X(cudnnSetLRNDescriptor)    \
  X(cudnnDestroyLRNDescriptor) X(cudnnLRNCrossChannelForward) X(cudnnSoftmaxForward)       \
  X(cudnnGetVersion)

typedef struct dnn_libs {
#define TTP_DNN_POINTER(name) __typeof__(name)* name;
  TTP_CUDNN_FUNCTIONS(TTP_DNN_POINTER)
#undef TTP_DNN_POINTER
} dnn_libs;

/* Filled by the first dnn_libs_load that succeeds; read-only after. */
extern dnn_libs gpu_libs;

/* Loads libcudnn.so.<cuDNN's major version> (the version this ttapipe was built with) and
   resolves gpu_libs, once a process (thread-safe); TTP_ERR_CUDNN naming the library and the
   loader's reason where it is missing or lacks a function. */
ttp_status dnn_libs_load(ttp_err* e);

#endif
