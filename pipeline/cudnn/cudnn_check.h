/* CUDNN_TRY: as CUDA_TRY (cuda_check.h), for cuDNN's calls (through gpu_libs, dnn_libs.h). */
#ifndef TTP_CUDNN_CHECK_H
#define TTP_CUDNN_CHECK_H

#include "../cuda_check.h"
#include "dnn_libs.h"

#define CUDNN_TRY(e, call)                                                                   \
  do {                                                                                       \
    cudnnStatus_t cudnn_status_ = (call);                                                    \
    if (cudnn_status_ != CUDNN_STATUS_SUCCESS)                                               \
      return ERR((e), TTP_ERR_CUDNN, "%s: %s", #call, gpu_libs.cudnnGetErrorString(cudnn_status_));   \
  } while (0)


#endif
