/* Private to the stencil's CUDA files: the best kernel's plan and launcher
 * (stencil_best.cu). It needs 16-byte aligned pointers for its vector loads, else it
 * takes 4-byte ones in the same kernel. */
#ifndef GPULAB_STENCIL_CUH
#define GPULAB_STENCIL_CUH

#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/stencil/stencil.h"

int stencil_best_plan(int n, int radius, struct cuda_plan *plan, char *why, size_t why_len);
cudaError_t stencil_best_launch(const float *d_x, float *d_y, int n, int radius, cudaStream_t s);

#endif
