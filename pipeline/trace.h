/* NVTX ranges around the stages of a run, so that Nsight Systems shows them by name. NVTX 3 is
   header-only (in the CUDA toolkit); without it (a CPU-only build) the ranges compile to
   nothing. */
#ifndef TTP_TRACE_H
#define TTP_TRACE_H

#if TTAPIPE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#define TRACE_PUSH(name) nvtxRangePushA("ttapipe: " name)
#define TRACE_POP() nvtxRangePop()
#else
#define TRACE_PUSH(name) ((void)0)
#define TRACE_POP() ((void)0)
#endif

#endif
