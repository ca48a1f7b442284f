/* The benchmark programs' CUDA error check: a failed call prints where and why,
 * then the program exits 1 (a benchmark has nothing to recover). */
#ifndef GPULAB_BENCH_CUDA_TRY_H
#define GPULAB_BENCH_CUDA_TRY_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_OR_EXIT(call)                                                                   \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

#endif
