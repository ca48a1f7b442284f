/* The gemm's `best` variant, FP32 on the CUDA cores: block, warp and register
 * tiling, double-buffered shared memory, a grouped launch order for L2 reuse. Every
 * size runs: edges are guarded, unaligned operands take 4-byte accesses. */
#include "kernels/cuda/cuda_best.cuh"

#include <stdio.h>

/* ---- gemm: C[M,N] = A[M,K] B[K,N], row-major ---- */

#define SG_BM 128
#define SG_BN 128
#define SG_BK 16
#define SG_THREADS 256

/* FP32 SGEMM on the CUDA cores. Block of 256 threads owns a 128x128 tile of C (1-D
 * grid of ceil(M/128) * ceil(N/128) blocks in grouped order); warp w a 64x32 part at
 * (64*(w/4), 32*(w%4)); lane l = 4i + j the 8x8 outputs at rows {0, 32} + 4i + 0..3
 * and columns {0, 16} + 4j + 0..3 of it. Per 16-wide step of K the block stages A's
 * 128x16 panel transposed (As[k][m]) and B's 16x128 panel (Bs[k][n]) in shared: each
 * thread loads two float4 of each (A: rows t%128, k-quads t/128 and 2 + t/128, so a
 * warp's 4-byte shared stores hit 32 banks; B: row t/32 (+8), float4 t%32, a warp
 * reading 512 contiguous bytes). Then per k a thread reads its 8 A and 8 B values as
 * 4 float4 (broadcasts: one shared wavefront each) and makes 64 FMAs: 16 FMAs per
 * shared load. Double buffering: the next step's loads are in registers while this
 * step computes, then stored to the other buffer; one barrier per step. vec flags as
 * in load4 (A: K % 4, B and C: N % 4); zeros outside the matrices make tails free.
 * 2 blocks per SM: 32 KiB shared and at most 128 registers per thread each. */
__global__ __launch_bounds__(SG_THREADS, 2) void gemm_best_kernel(const float *__restrict__ A,
                                                                  const float *__restrict__ B,
                                                                  float *__restrict__ C, int M,
                                                                  int N, int K, int flags) {
  __shared__ __align__(16) float As[2][SG_BK][SG_BM];
  __shared__ __align__(16) float Bs[2][SG_BK][SG_BN];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  int bm, bn;
  grouped_tile(blockIdx.x, (M + SG_BM - 1) / SG_BM, (N + SG_BN - 1) / SG_BN, GEMM_GROUP_M, &bm,
               &bn);
  const int m0 = bm * SG_BM, n0 = bn * SG_BN;
  const bool vec_a = flags & GEMM_VEC_A, vec_b = flags & GEMM_VEC_B, vec_c = flags & GEMM_VEC_C;
  const int a_row = t & 127, a_k = 4 * (t >> 7); /* and a_k + 8 */
  const int b_row = t >> 5, b_col = 4 * (t & 31); /* and b_row + 8 */
  const int wm0 = (w >> 2) * 64, wn0 = (w & 3) * 32, lm = 4 * (lane >> 2), ln = 4 * (lane & 3);
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; i++)
#pragma unroll
    for (int j = 0; j < 8; j++) acc[i][j] = 0.f;
  float4 ra[2], rb[2];
  const int steps = (K + SG_BK - 1) / SG_BK;
#pragma unroll
  for (int h = 0; h < 2; h++) { /* step 0's panels (zeros when K is 0) */
    ra[h] = load4(A, M, K, m0 + a_row, a_k + 8 * h, vec_a);
    rb[h] = load4(B, K, N, b_row + 8 * h, n0 + b_col, vec_b);
  }
  for (int s = 0; s < steps; s++) {
    float(*as)[SG_BM] = As[s & 1];
    float(*bs)[SG_BN] = Bs[s & 1];
    /* This step's panels, from registers into buffer s & 1: every thread has passed
     * the previous step's barrier, so none still reads it (it computed step s - 2). */
#pragma unroll
    for (int h = 0; h < 2; h++) {
      as[a_k + 8 * h + 0][a_row] = ra[h].x;
      as[a_k + 8 * h + 1][a_row] = ra[h].y;
      as[a_k + 8 * h + 2][a_row] = ra[h].z;
      as[a_k + 8 * h + 3][a_row] = ra[h].w;
      *reinterpret_cast<float4 *>(&bs[b_row + 8 * h][b_col]) = rb[h];
    }
    __syncthreads();
    if (s + 1 < steps) { /* the next step's panels, in flight during the FMAs */
      const int k0 = (s + 1) * SG_BK;
#pragma unroll
      for (int h = 0; h < 2; h++) {
        ra[h] = load4(A, M, K, m0 + a_row, k0 + a_k + 8 * h, vec_a);
        rb[h] = load4(B, K, N, k0 + b_row + 8 * h, n0 + b_col, vec_b);
      }
    }
#pragma unroll
    for (int k = 0; k < SG_BK; k++) {
      const float4 a0 = *reinterpret_cast<const float4 *>(&as[k][wm0 + lm]);
      const float4 a1 = *reinterpret_cast<const float4 *>(&as[k][wm0 + 32 + lm]);
      const float4 b0 = *reinterpret_cast<const float4 *>(&bs[k][wn0 + ln]);
      const float4 b1 = *reinterpret_cast<const float4 *>(&bs[k][wn0 + 16 + ln]);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const int row = m0 + wm0 + (i >> 2) * 32 + lm + (i & 3);
    if (row >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int col = n0 + wn0 + 16 * h + ln;
      float *dst = C + (size_t)row * N + col;
      const float4 o = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2],
                                   acc[i][4 * h + 3]);
      if (vec_c) {
        if (col < N) *reinterpret_cast<float4 *>(dst) = o;
      } else {
        if (col < N) dst[0] = o.x;
        if (col + 1 < N) dst[1] = o.y;
        if (col + 2 < N) dst[2] = o.z;
        if (col + 3 < N) dst[3] = o.w;
      }
    }
  }
}

/* ---- plan and launcher ---- */

int gemm_best_plan(int m, int n, int k, struct cuda_plan *p, char *why, size_t why_len) {
  cuda_plan_set(p, KFUNC(gemm_best_kernel), "gemm_best_kernel",
                "128x128 C tile per 256 threads, warp 64x32, 8x8 per thread; K by 16, "
                "double-buffered");
  (void)k;
  p->block = dim3(SG_THREADS);
  p->grid = dim3(gemm_blocks(m, n, SG_BM, SG_BN));
  return 0;
}

cudaError_t gemm_best_launch(const float *d_a, const float *d_b, float *d_c, int m, int n,
                             int k, cudaStream_t s) {
  struct cuda_plan p;
  char why[128];
  if (gemm_best_plan(m, n, k, &p, why, sizeof why) != 0) return cudaErrorInvalidConfiguration;
  int flags = gemm_flags(d_a, d_b, d_c, n, k);
  void *args[] = {&d_a, &d_b, &d_c, &m, &n, &k, &flags};
  return cuda_plan_launch(&p, args, s);
}

