/* Private to the transpose's CUDA files, and to gemm_tf32.cu, which transposes B with
 * the best kernel: its plan and launcher (transpose_best.cu). It needs 16-byte aligned
 * pointers and m, n multiples of 4 for its vector path; otherwise the same kernel takes
 * 4-byte accesses. */
#ifndef GPULAB_TRANSPOSE_CUH
#define GPULAB_TRANSPOSE_CUH

#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/transpose/transpose.h"

int transpose_best_plan(int m, int n, struct cuda_plan *plan, char *why, size_t why_len);
/* d_b (n x m) = d_a^T, d_a m x n, on s. */
cudaError_t transpose_best_launch(const float *d_a, float *d_b, int m, int n, cudaStream_t s);

#endif
