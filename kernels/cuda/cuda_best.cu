/* The `best` variant of each kernel experiment: how close to the H200's limits a
 * kernel gets. transpose: 64x64 tiles moved as float4 both ways; gemm: FP32 on the
 * CUDA cores (block, warp and register tiling, double-buffered shared memory) and
 * TF32 on the tensor cores (mma.sync m16n8k8, ldmatrix, a 3-stage cp.async
 * pipeline); stencil: a prefix sum per tile, so an output costs the same at any
 * radius. One body per algorithm; sizes that break 16-byte alignment take 4-byte
 * accesses in the same kernel (a uniform branch), so every size runs. */
#include "kernels/cuda/cuda_kernels.cuh"

#include <stdint.h>
#include <stdio.h>
#include <atomic>

#include "kernels/stencil_best.h"

#define KFUNC(f) reinterpret_cast<const void *>(&(f))

static unsigned ceil_div(long long a, long long b) { return (unsigned)((a + b - 1) / b); }

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Block pid's tile (bm, bn) of a tiles_m x tiles_n grid of tiles when the 1-D grid
 * walks groups of `group` tile rows column by column: the blocks resident at once
 * cover a compact patch instead of a few whole tile rows. gemm: neighbours share A's
 * row panels and B's column panels in L2. transpose: the resident blocks write a few
 * thousand rows of B instead of all of them (all n rows of a 16384^2 B are 1 GiB
 * apart end to end; measured 82% of copy that way, against 92% at 8192^2). */
__device__ __forceinline__ void grouped_tile(int pid, int tiles_m, int tiles_n, int group,
                                             int *bm, int *bn) {
  const int per_group = group * tiles_n;
  const int g = pid / per_group, first = g * group;
  const int rows = min(tiles_m - first, group);
  const int in = pid - g * per_group;
  *bm = first + in % rows;
  *bn = in / rows;
}

/* ---- transpose: A is m x n, B = A^T is n x m, both row-major ---- */

#define TB_TILE 64             /* rows and columns of A per block */
#define TB_Q (TB_TILE / 4)     /* float4 per tile row */
#define TB_GROUP 32            /* tile rows per group of the launch order */

/* Block 32x8 (256 threads) moves one 64x64 tile of A; 1-D grid of ceil(m/64) *
 * ceil(n/64) blocks in grouped order (grouped_tile, 32 tile rows per group). Thread
 * t = 32*ty + tx owns the 4x4
 * block of A at rows 4*(t/16).., columns 4*(t%16)..: four float4 loads (a warp reads
 * two 256-byte row segments per load), a 4x4 transpose in registers, and four float4
 * stores into tile[B row][float4 of B columns]; then it reads tile rows t/16 + 16u
 * (u = 0..3), float4 t%16, and writes them as float4 to B (a warp writes two 256-byte
 * row segments per store). Shared float4 accesses are served 8 threads at a time; the
 * float4 column is XORed with (B row / 4) % 8 so those 8 always hit 8 different
 * 16-byte bank groups, writing and reading (no padding needed). vec: m and n are
 * multiples of 4 and both pointers 16-byte aligned, so every float4 lies wholly inside
 * or outside the matrix; otherwise the same mapping uses guarded 4-byte accesses.
 * Each thread keeps 4 loads of 16 bytes in flight; 16 KiB of shared per block. */
__global__ __launch_bounds__(256) void transpose_best_kernel(const float *__restrict__ a,
                                                             float *__restrict__ b, int m, int n,
                                                             int vec) {
  __shared__ float4 tile[TB_TILE][TB_Q];
  const int t = threadIdx.y * 32 + threadIdx.x;
  const int bc = t & 15, br = t >> 4;
  int bm, bn;
  grouped_tile(blockIdx.x, (m + TB_TILE - 1) / TB_TILE, (n + TB_TILE - 1) / TB_TILE, TB_GROUP,
               &bm, &bn);
  const long long row0 = (long long)bm * TB_TILE, col0 = (long long)bn * TB_TILE;
  const long long c = col0 + 4 * bc;
  float4 v[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const long long r = row0 + 4 * br + j;
    v[j] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r >= m) continue;
    const float *src = a + r * n + c;
    if (vec) {
      if (c < n) v[j] = __ldg(reinterpret_cast<const float4 *>(src));
    } else {
      if (c < n) v[j].x = src[0];
      if (c + 1 < n) v[j].y = src[1];
      if (c + 2 < n) v[j].z = src[2];
      if (c + 3 < n) v[j].w = src[3];
    }
  }
  /* B rows 4bc+i (A's columns), B columns 4br.. (A's rows) */
  const int sw = bc & 7;
  tile[4 * bc + 0][br ^ sw] = make_float4(v[0].x, v[1].x, v[2].x, v[3].x);
  tile[4 * bc + 1][br ^ sw] = make_float4(v[0].y, v[1].y, v[2].y, v[3].y);
  tile[4 * bc + 2][br ^ sw] = make_float4(v[0].z, v[1].z, v[2].z, v[3].z);
  tile[4 * bc + 3][br ^ sw] = make_float4(v[0].w, v[1].w, v[2].w, v[3].w);
  __syncthreads();
  const int q = t & 15;
#pragma unroll
  for (int u = 0; u < 4; u++) {
    const int row = (t >> 4) + 16 * u; /* of the B tile */
    const float4 o = tile[row][q ^ ((row >> 2) & 7)];
    const long long brow = col0 + row, bcol = row0 + 4 * q;
    if (brow >= n) continue;
    float *dst = b + brow * m + bcol;
    if (vec) { /* __stwb: a plain store, but one the compiler keeps 16 bytes wide (a
                * float4 assignment here was split into four 4-byte STG.E in the SASS) */
      if (bcol < m) __stwb(reinterpret_cast<float4 *>(dst), o);
    } else {
      if (bcol < m) dst[0] = o.x;
      if (bcol + 1 < m) dst[1] = o.y;
      if (bcol + 2 < m) dst[2] = o.z;
      if (bcol + 3 < m) dst[3] = o.w;
    }
  }
}

/* ---- gemm: C[M,N] = A[M,K] B[K,N], row-major ---- */

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

#define SG_BM 128
#define SG_BN 128
#define SG_BK 16
#define SG_THREADS 256
enum { GEMM_VEC_A = 1, GEMM_VEC_B = 2, GEMM_VEC_C = 4 };

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

/* ---- gemm tf32: the same product on the tensor cores ---- */

#define TC_BM 128
#define TC_BN 128
#define TC_BK 32
#define TC_STAGES 3
#define TC_THREADS 256
#define TC_A_PITCH (TC_BK + 4) /* 144-byte rows: ldmatrix's 8 rows hit 8 bank groups */
#define TC_B_PITCH (TC_BN + 8) /* 136 = 8 mod 32: fragment loads (k=t, n=g) hit 32 banks */
#define TC_A_FLOATS (TC_BM * TC_A_PITCH)
#define TC_B_FLOATS (TC_BK * TC_B_PITCH)
#define TC_SMEM_BYTES ((size_t)TC_STAGES * (TC_A_FLOATS + TC_B_FLOATS) * sizeof(float))

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

/* cp.async of 16 (or 4) bytes; when !valid nothing is read and the bytes are zeroed. */
__device__ __forceinline__ void cp_async16(float *dst, const float *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async4(float *dst, const float *src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)),
               "l"(src), "r"(valid ? 4 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

/* FP32 bits rounded to TF32 for mma: adding half a TF32 ulp (bit 12) and letting the
 * tensor cores ignore the 13 low bits rounds to nearest, ties away, like cvt.rna for
 * finite values, in one integer add (cvt.rna costs a compare and a predicated add
 * per element: 4.5 ALU instructions per mma here, measured 130 TFLOP/s). An infinite
 * input becomes NaN. */
__device__ __forceinline__ unsigned to_tf32(unsigned bits) { return bits + 0x1000u; }

/* Stage s of the pipeline: A's 128x32 panel at k-tile kt into as[128][36] and B's
 * 32x128 panel into bs[32][136], as cp.async 16-byte chunks (vec; consecutive
 * threads take consecutive chunks of a row) or, when a row is not a whole number of
 * float4, 4-byte ones. Outside the matrices the chunks are zero-filled. */
__device__ __forceinline__ void tf32_load_stage(float *as, float *bs, const float *A,
                                                const float *B, int M, int N, int K, int m0,
                                                int n0, int k0, int flags) {
  const int t = threadIdx.x;
  if (flags & GEMM_VEC_A) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int i = t + TC_THREADS * j, row = i >> 3, col = 4 * (i & 7);
      const bool ok = m0 + row < M && k0 + col < K;
      cp_async16(as + row * TC_A_PITCH + col, ok ? A + (size_t)(m0 + row) * K + k0 + col : A, ok);
    }
  } else {
#pragma unroll 4
    for (int j = 0; j < 16; j++) {
      const int i = t + TC_THREADS * j, row = i >> 5, col = i & 31;
      const bool ok = m0 + row < M && k0 + col < K;
      cp_async4(as + row * TC_A_PITCH + col, ok ? A + (size_t)(m0 + row) * K + k0 + col : A, ok);
    }
  }
  if (flags & GEMM_VEC_B) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int i = t + TC_THREADS * j, row = i >> 5, col = 4 * (i & 31);
      const bool ok = k0 + row < K && n0 + col < N;
      cp_async16(bs + row * TC_B_PITCH + col, ok ? B + (size_t)(k0 + row) * N + n0 + col : B, ok);
    }
  } else {
#pragma unroll 4
    for (int j = 0; j < 16; j++) {
      const int i = t + TC_THREADS * j, row = i >> 7, col = i & 127;
      const bool ok = k0 + row < K && n0 + col < N;
      cp_async4(bs + row * TC_B_PITCH + col, ok ? B + (size_t)(k0 + row) * N + n0 + col : B, ok);
    }
  }
}

/* C[r][c], C[r][c+1] (c even), each only inside the matrix; vec2: N even and C
 * 8-byte aligned, so both are in or out together. */
__device__ __forceinline__ void store2(float *C, int M, int N, int r, int c, float x, float y,
                                       bool vec2) {
  if (r >= M || c >= N) return;
  float *dst = C + (size_t)r * N + c;
  if (vec2) {
    *reinterpret_cast<float2 *>(dst) = make_float2(x, y);
  } else {
    dst[0] = x;
    if (c + 1 < N) dst[1] = y;
  }
}

/* TF32 GEMM on the tensor cores with mma.sync.m16n8k8 (FP32 accumulators). Block of
 * 256 threads owns a 128x128 tile of C (1-D grouped grid as gemm_best); warp w a 64x32
 * part at (64*(w/4), 32*(w%4)): 4x4 mma tiles of 16x8, 64 accumulators per thread.
 * K advances in 32-wide k-tiles through a 3-stage cp.async pipeline (105 KiB of
 * dynamic shared memory, so 2 blocks per SM): while k-tile kt is multiplied, kt+1 and
 * kt+2 are in flight; one barrier per k-tile. Per k8 step a warp loads each 16x8 A
 * fragment with one ldmatrix.x4 (A rows are k-contiguous, a 32-bit element is a pair
 * of b16: lane (g=l/4, t=l%4) receives A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]) and
 * each 8x8 B fragment with two 4-byte loads (B[t][g], B[t+4][g]; B rows are
 * n-contiguous, which ldmatrix cannot split into 32-bit columns), rounds both to TF32
 * (to_tf32) and issues 16 mma. Paddings make the ldmatrix rows and the B loads
 * conflict-free. flags: GEMM_VEC_A (K % 4 == 0) and GEMM_VEC_B (N % 4 == 0) pick
 * 16-byte copies, else 4-byte ones; GEMM_VEC_C (N even) float2 stores. */
__global__ __launch_bounds__(TC_THREADS, 2) void gemm_tf32_kernel(const float *__restrict__ A,
                                                                  const float *__restrict__ B,
                                                                  float *__restrict__ C, int M,
                                                                  int N, int K, int flags) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) float smem[];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5, g = lane >> 2, tq = lane & 3;
  int bm, bn;
  grouped_tile(blockIdx.x, (M + TC_BM - 1) / TC_BM, (N + TC_BN - 1) / TC_BN, GEMM_GROUP_M, &bm,
               &bn);
  const int m0 = bm * TC_BM, n0 = bn * TC_BN;
  const int wm0 = (w >> 2) * 64, wn0 = (w & 3) * 32;
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
  const int tiles = (K + TC_BK - 1) / TC_BK;
#pragma unroll
  for (int s = 0; s < TC_STAGES - 1; s++) {
    float *as = smem + s * (TC_A_FLOATS + TC_B_FLOATS);
    if (s < tiles) tf32_load_stage(as, as + TC_A_FLOATS, A, B, M, N, K, m0, n0, s * TC_BK, flags);
    cp_async_commit();
  }
  /* ldmatrix row address of this lane inside a 16x8 A fragment */
  const int a_lrow = (lane & 7) + ((lane >> 3) & 1) * 8, a_lcol = (lane >> 4) * 4;
  for (int kt = 0; kt < tiles; kt++) {
    cp_async_wait<TC_STAGES - 2>(); /* k-tile kt has landed (for this thread) */
    __syncthreads();                /* for all threads; and kt-1's stage is free */
    const int next = kt + TC_STAGES - 1;
    if (next < tiles) {
      float *ns = smem + (next % TC_STAGES) * (TC_A_FLOATS + TC_B_FLOATS);
      tf32_load_stage(ns, ns + TC_A_FLOATS, A, B, M, N, K, m0, n0, next * TC_BK, flags);
    }
    cp_async_commit(); /* possibly empty: keeps the group count uniform */
    const float *as = smem + (kt % TC_STAGES) * (TC_A_FLOATS + TC_B_FLOATS);
    const float *bs = as + TC_A_FLOATS;
#pragma unroll
    for (int kk = 0; kk < TC_BK; kk += 8) {
      unsigned af[4][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; mi++) {
        const float *p = as + (wm0 + mi * 16 + a_lrow) * TC_A_PITCH + kk + a_lcol;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(af[mi][0]), "=r"(af[mi][1]), "=r"(af[mi][2]), "=r"(af[mi][3])
                     : "r"(smem_addr(p))
                     : "memory");
#pragma unroll
        for (int e = 0; e < 4; e++) af[mi][e] = to_tf32(af[mi][e]);
      }
#pragma unroll
      for (int ni = 0; ni < 4; ni++) {
        const float *p = bs + (kk + tq) * TC_B_PITCH + wn0 + ni * 8 + g;
        bf[ni][0] = to_tf32(__float_as_uint(p[0]));
        bf[ni][1] = to_tf32(__float_as_uint(p[4 * TC_B_PITCH]));
      }
#pragma unroll
      for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
          asm volatile(
              "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
              "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
              : "+f"(acc[mi][ni][0]), "+f"(acc[mi][ni][1]), "+f"(acc[mi][ni][2]),
                "+f"(acc[mi][ni][3])
              : "r"(af[mi][0]), "r"(af[mi][1]), "r"(af[mi][2]), "r"(af[mi][3]),
                "r"(bf[ni][0]), "r"(bf[ni][1]));
    }
  }
  cp_async_wait<0>();
  const bool vec2 = flags & GEMM_VEC_C;
#pragma unroll
  for (int mi = 0; mi < 4; mi++)
#pragma unroll
    for (int ni = 0; ni < 4; ni++) {
      const int r = m0 + wm0 + mi * 16 + g, c = n0 + wn0 + ni * 8 + 2 * tq;
      store2(C, M, N, r, c, acc[mi][ni][0], acc[mi][ni][1], vec2);
      store2(C, M, N, r + 8, c, acc[mi][ni][2], acc[mi][ni][3], vec2);
    }
#endif
}

/* ---- stencil: y[i] = sum x[i-r..i+r] / (2r+1), x outside [0, n) is 0 ---- */

#define SB_THREADS 256
#define SB_SEGS (STENCIL_BEST_MAX_STEPS * 8) /* 128-float segments: one warp's per step */

/* x[g..g+3], zero outside [0, n); g is a multiple of 4, so g < 0 means all four are.
 * vec: x is 16-byte aligned (one float4 unless the array ends inside it). */
__device__ __forceinline__ float4 stencil_load4(const float *__restrict__ x, long long g, int n,
                                                int vec) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (g < 0 || g >= n) return v;
  if (vec && g + 4 <= n) return __ldg(reinterpret_cast<const float4 *>(x + g));
  v.x = x[g];
  if (g + 1 < n) v.y = x[g + 1];
  if (g + 2 < n) v.z = x[g + 2];
  if (g + 3 < n) v.w = x[g + 3];
  return v;
}

/* Cost per output independent of r: tile k owns the T outputs at k*T (stencil_best.h;
 * T ~ 4096 - 2r) and scans its span x[k*T - lead, k*T + T + r) (lead = r+1 rounded up
 * to 4, so the span starts 16-byte aligned) in `steps` steps of 1024 floats. Block b
 * takes tiles b, b + gridDim.x, ...; when it has a next tile, that tile's float4
 * loads are issued as soon as the current tile's are consumed. The plan launches one
 * block per tile all the same: a persistent grid (as many blocks as fit at once, each
 * prefetching its next tile) measured 68% of copy bandwidth on the H200 against 80%
 * for one tile per block, whose blocks the scheduler starts at staggered times, so
 * that some load while others scan and store (persistent blocks move in lock-step).
 * Thread t holds the float4 at 1024*step + 4t, sums it in double, and a warp shuffle
 * scan gives every float its prefix within the warp's 128-float segment, stored to
 * shared (double) with the segment's total; one warp then scans the <= 40 totals
 * into carries. Output j of the tile (thread t takes j = t, t+256, ...: a warp writes
 * 128 contiguous bytes) is (P[j + r + lead] - P[j + lead - r - 1]) / (2r+1), each P a
 * partial prefix plus its segment's carry, read as consecutive doubles (no bank
 * conflicts). Sums restart at every tile and run in double, so an output's rounding
 * error is at most ~25 * 2^-53 * sum |x| over its tile's span (reference.c states the
 * tolerance); a non-finite input makes its whole tile NaN. Launch SB_THREADS threads,
 * at most ceil(n/T) blocks, (1024*steps + 2*SB_SEGS) doubles of dynamic shared. */
__global__ __launch_bounds__(SB_THREADS) void stencil_best_kernel(const float *__restrict__ x,
                                                                  float *__restrict__ y, int n,
                                                                  int r, int tile, int steps,
                                                                  double inv_width, int vec) {
  extern __shared__ __align__(16) double prefix[]; /* 1024 * steps partial prefixes */
  double *seg_total = prefix + STENCIL_BEST_STEP * steps, *carry = seg_total + SB_SEGS;
  const unsigned full = 0xffffffffu;
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const int lead = stencil_best_lead(r), hi_off = lead + r, lo_off = lead - r - 1;
  const long long tiles = ((long long)n + tile - 1) / tile;
  long long k = blockIdx.x;
  float4 v[STENCIL_BEST_MAX_STEPS];
#pragma unroll
  for (int q = 0; q < STENCIL_BEST_MAX_STEPS; q++)
    v[q] = q < steps ? stencil_load4(x, k * tile - lead + STENCIL_BEST_STEP * q + 4 * t, n, vec)
                     : make_float4(0.f, 0.f, 0.f, 0.f);
  for (; k < tiles; k += gridDim.x) {
    const long long base = k * tile;
#pragma unroll
    for (int q = 0; q < STENCIL_BEST_MAX_STEPS; q++) {
      if (q >= steps) break; /* uniform across the block */
      const double s0 = v[q].x, s1 = s0 + v[q].y, s2 = s1 + v[q].z, s3 = s2 + v[q].w;
      double incl = s3;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const double u = __shfl_up_sync(full, incl, o);
        if (lane >= o) incl += u;
      }
      double excl = __shfl_up_sync(full, incl, 1);
      if (lane == 0) excl = 0.0;
      double2 *dst = reinterpret_cast<double2 *>(prefix + STENCIL_BEST_STEP * q + 4 * t);
      dst[0] = make_double2(excl + s0, excl + s1);
      dst[1] = make_double2(excl + s2, excl + s3);
      if (lane == 31) seg_total[8 * q + w] = incl;
    }
    const long long next = k + gridDim.x; /* its loads fly during the rest of this tile */
#pragma unroll
    for (int q = 0; q < STENCIL_BEST_MAX_STEPS; q++)
      v[q] = q < steps && next < tiles
                 ? stencil_load4(x, next * tile - lead + STENCIL_BEST_STEP * q + 4 * t, n, vec)
                 : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads(); /* prefixes and totals written */
    if (w == 0) { /* carries: exclusive scan of the segment totals, lane l has 2l, 2l+1 */
      const int segs = 8 * steps;
      const double lo = 2 * lane < segs ? seg_total[2 * lane] : 0.0;
      const double hi = 2 * lane + 1 < segs ? seg_total[2 * lane + 1] : 0.0;
      double incl = lo + hi;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const double u = __shfl_up_sync(full, incl, o);
        if (lane >= o) incl += u;
      }
      double excl = __shfl_up_sync(full, incl, 1);
      if (lane == 0) excl = 0.0;
      if (2 * lane < segs) carry[2 * lane] = excl;
      if (2 * lane + 1 < segs) carry[2 * lane + 1] = excl + lo;
    }
    __syncthreads(); /* carries written */
#pragma unroll 4
    for (int j = t; j < tile; j += SB_THREADS) {
      const long long i = base + j;
      if (i >= n) break;
      const int hi = j + hi_off, lo = j + lo_off;
      const double p_hi = prefix[hi] + carry[hi >> 7], p_lo = prefix[lo] + carry[lo >> 7];
      y[i] = (float)((p_hi - p_lo) * inv_width);
    }
    __syncthreads(); /* everyone is done with prefix and carry before the next tile */
  }
}

/* ---- plans and launchers ---- */

int transpose_best_plan(int m, int n, struct cuda_plan *p, char *why, size_t why_len) {
  cuda_plan_set(p, KFUNC(transpose_best_kernel), "transpose_best_kernel",
                "32x8 block, 64x64 tile: float4 in, 4x4 register transpose, swizzled tile, "
                "float4 out");
  p->block = dim3(32, 8);
  p->grid = dim3((unsigned)(ceil_div(m, TB_TILE) * (unsigned long long)ceil_div(n, TB_TILE)));
  return 0;
}

cudaError_t transpose_best_launch(const float *d_a, float *d_b, int m, int n, cudaStream_t s) {
  struct cuda_plan p;
  char why[128];
  if (transpose_best_plan(m, n, &p, why, sizeof why) != 0) return cudaErrorInvalidConfiguration;
  int vec = m % 4 == 0 && n % 4 == 0 && aligned16(d_a) && aligned16(d_b);
  void *args[] = {&d_a, &d_b, &m, &n, &vec};
  return cuda_plan_launch(&p, args, s);
}

static unsigned gemm_blocks(int m, int n, int bm, int bn) {
  return (unsigned)(ceil_div(m, bm) * (unsigned long long)ceil_div(n, bn));
}

static int gemm_flags(const float *a, const float *b, const float *c, int n, int k) {
  int flags = 0;
  if (k % 4 == 0 && aligned16(a)) flags |= GEMM_VEC_A;
  if (n % 4 == 0 && aligned16(b)) flags |= GEMM_VEC_B;
  if (n % 4 == 0 && aligned16(c)) flags |= GEMM_VEC_C;
  return flags;
}

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

int gemm_tf32_plan(int m, int n, int k, struct cuda_plan *p, char *why, size_t why_len) {
  cuda_plan_set(p, KFUNC(gemm_tf32_kernel), "gemm_tf32_kernel",
                "128x128 C tile per 256 threads, warp 64x32 of mma.m16n8k8 tf32; 3-stage "
                "cp.async");
  (void)k;
  p->block = dim3(TC_THREADS);
  p->grid = dim3(gemm_blocks(m, n, TC_BM, TC_BN));
  p->dyn_smem_bytes = TC_SMEM_BYTES;
  int dev = 0, major = 0, optin = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, why_len, "gemm tf32: cannot read the device's attributes");
    return -1;
  }
  if (major < 8 || (size_t)optin < TC_SMEM_BYTES) {
    snprintf(why, why_len,
             "gemm tf32 needs compute capability 8.0 and %zu bytes of shared memory per "
             "block (this device: %d.x, %d)",
             TC_SMEM_BYTES, major, optin);
    return -1;
  }
  return 0;
}

/* The tf32 kernel's dynamic shared memory is above the default 48 KiB: raised once
 * per device (bit d of tf32_smem_raised), before the first launch on it. */
static std::atomic<unsigned long long> tf32_smem_raised{0};

static cudaError_t tf32_raise_smem(void) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  unsigned long long bit = dev < 64 ? 1ull << dev : 0;
  if (bit && (tf32_smem_raised.load() & bit)) return cudaSuccess;
  e = cudaFuncSetAttribute(gemm_tf32_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)TC_SMEM_BYTES);
  if (e == cudaSuccess) tf32_smem_raised.fetch_or(bit);
  return e;
}

cudaError_t gemm_tf32_launch(const float *d_a, const float *d_b, float *d_c, int m, int n,
                             int k, cudaStream_t s) {
  struct cuda_plan p;
  char why[160];
  if (gemm_tf32_plan(m, n, k, &p, why, sizeof why) != 0) return cudaErrorInvalidConfiguration;
  cudaError_t e = tf32_raise_smem();
  if (e != cudaSuccess) return e;
  int flags = gemm_flags(d_a, d_b, d_c, n, k);
  if (n % 2 == 0 && ((uintptr_t)d_c & 7) == 0) flags |= GEMM_VEC_C; /* float2 stores */
  void *args[] = {&d_a, &d_b, &d_c, &m, &n, &k, &flags};
  return cuda_plan_launch(&p, args, s);
}

int stencil_best_plan(int n, int radius, struct cuda_plan *p, char *why, size_t why_len) {
  cuda_plan_set(p, KFUNC(stencil_best_kernel), "stencil_best_kernel",
                "256 threads per ~4096-output tile: float4 loads, double prefix scan in shared, "
                "P[hi]-P[lo]");
  const int tile = stencil_best_tile(radius);
  if (tile == 0) {
    snprintf(why, why_len, "stencil best supports radii 0..%d, not %d", STENCIL_BEST_MAX_RADIUS,
             radius);
    return -1;
  }
  const int steps = stencil_best_steps(radius);
  p->block = dim3(SB_THREADS);
  p->dyn_smem_bytes = ((size_t)STENCIL_BEST_STEP * steps + 2 * SB_SEGS) * sizeof(double);
  p->grid = dim3(ceil_div(n, tile)); /* one tile per block: see the kernel's comment */
  return 0;
}

cudaError_t stencil_best_launch(const float *d_x, float *d_y, int n, int radius,
                                cudaStream_t s) {
  struct cuda_plan p;
  char why[128];
  if (stencil_best_plan(n, radius, &p, why, sizeof why) != 0)
    return cudaErrorInvalidConfiguration;
  int tile = stencil_best_tile(radius), steps = stencil_best_steps(radius);
  int vec = aligned16(d_x);
  double inv_width = 1.0 / (double)(2 * radius + 1);
  void *args[] = {&d_x, &d_y, &n, &radius, &tile, &steps, &inv_width, &vec};
  return cuda_plan_launch(&p, args, s);
}
