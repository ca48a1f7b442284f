/* Private to the gemm's CUDA files (gemm.cu, gemm_best.cu, gemm_tf32.cu) and the GPU
 * tests: the best kernels' plans and launchers, and the helpers the FP32 and TF32
 * kernels share. The launchers need 16-byte aligned pointers for their vector paths
 * (every device allocation is); a pointer or a row length that is not falls back to
 * 4-byte accesses (best: its guarded instances; tf32: A's copy). A plan describes the
 * kernel its sizes get, assuming aligned pointers. */
#ifndef GPULAB_GEMM_CUH
#define GPULAB_GEMM_CUH

#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/core/cuda/launch.cuh"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_pick.h"

/* Plans describe the configuration gemm_pick_for / tf32_pick_for choose at the sizes and
 * the current device's SM count. */
int gemm_best_plan(int m, int n, int k, struct cuda_plan *plan, char *why, size_t why_len);
int gemm_tf32_plan(int m, int n, int k, struct cuda_plan *plan, char *why, size_t why_len);
/* Unlike the other launchers these allocate: scratch stream-ordered on s from the pool
 * (best: the split-K workspace; tf32: Bt, A's copy and the workspace), freed on s after
 * the kernels, so they still never synchronize and work inside a graph capture;
 * exp_spec_bytes counts it in a job's memory (gemm_pick.h's *_scratch_floats). */
cudaError_t gemm_best_launch(const float *d_a, const float *d_b, float *d_c, int m, int n, int k,
                             cudaStream_t s);
cudaError_t gemm_tf32_launch(const float *d_a, const float *d_b, float *d_c, int m, int n, int k,
                             cudaStream_t s);
/* The same for a given configuration (any pick; the GPU tests force each one). */
cudaError_t gemm_best_launch_pick(const struct gemm_pick *pick, const float *d_a, const float *d_b,
                                  float *d_c, int m, int n, int k, cudaStream_t s);
/* tf32's wgmma path at a given configuration; cudaErrorNotSupported where it cannot run
 * (no sm_90a code or device, k = 0, or its fallback conditions: then nothing ran). */
cudaError_t gemm_tf32_launch_pick(const struct tf32_pick *pick, const float *d_a, const float *d_b,
                                  float *d_c, int m, int n, int k, cudaStream_t s);
/* The split-K pass: d_c[i] = sum over z < splits of d_ws[z mn + i], in z order. */
cudaError_t gemm_splitk_launch(const float *d_ws, float *d_c, size_t mn, int splits, int sms,
                               cudaStream_t s);

#define GEMM_GROUP_M 8 /* block rows per group in the launch order (L2 reuse) */

/* Element (row, col) .. (row, col+3) of a rows x cols row-major matrix, zero outside;
 * vec: cols % 4 == 0, p 16-byte aligned and col % 4 == 0 (one float4, wholly in or
 * out). */
__device__ __forceinline__ float4 load4(const float *p, int rows, int cols, int row, int col,
                                        bool vec) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (row >= rows) return v;
  const float *s = p + (size_t)row * cols + col;
  if (vec) {
    if (col < cols) v = *reinterpret_cast<const float4 *>(s);
  } else {
    if (col < cols) v.x = s[0];
    if (col + 1 < cols) v.y = s[1];
    if (col + 2 < cols) v.z = s[2];
    if (col + 3 < cols) v.w = s[3];
  }
  return v;
}

/* Which operands take 16-byte (C: 8-byte) accesses; the rest take 4-byte ones. */
enum { GEMM_VEC_A = 1, GEMM_VEC_B = 2, GEMM_VEC_C = 4 };

/* Blocks of a 1-D grid of bm x bn tiles over an m x n C. */
static inline unsigned gemm_blocks(int m, int n, int bm, int bn) {
  return (unsigned)(ceil_div(m, bm) * (unsigned long long)ceil_div(n, bn));
}

static inline int gemm_flags(const float *a, const float *b, const float *c, int n, int k) {
  int flags = 0;
  if (k % 4 == 0 && aligned16(a)) flags |= GEMM_VEC_A;
  if (n % 4 == 0 && aligned16(b)) flags |= GEMM_VEC_B;
  if (n % 4 == 0 && aligned16(c)) flags |= GEMM_VEC_C;
  return flags;
}

#endif
