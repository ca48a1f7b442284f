/* Private to the transpose's CUDA files, to gemm_tf32.cu, which transposes B with the
 * best variant, and to the GPU tests: its plan and launchers (transpose_best.cu). The
 * kernel is picked by shape (transpose_pick.h); pointers that are not 16-byte aligned
 * take the tile kernel's 4-byte path. */
#ifndef GPULAB_TRANSPOSE_CUH
#define GPULAB_TRANSPOSE_CUH

#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/transpose/transpose.h"
#include "kernels/transpose/transpose_pick.h"

/* The plan of the kernel m x n gets (aligned pointers assumed). */
int transpose_best_plan(int m, int n, struct cuda_plan *plan, char *why, size_t why_len);
/* d_b (n x m) = d_a^T, d_a m x n, on s. */
cudaError_t transpose_best_launch(const float *d_a, float *d_b, int m, int n, cudaStream_t s);
/* The same by a given kind (the GPU tests force each one): COPY needs m == 1 or n == 1;
 * every kind but TILE needs 16-byte aligned pointers. */
cudaError_t transpose_best_launch_kind(enum transpose_kind kind, const float *d_a, float *d_b,
                                       int m, int n, cudaStream_t s);

#endif
