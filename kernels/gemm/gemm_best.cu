/* The gemm's `best` variant: FP32 SGEMM on the CUDA cores (FFMA), C[M,N] = A[M,K] B[K,N]
 * row-major, at the configuration gemm_pick_for chooses from the shape and the SM count:
 * one templated tile kernel at seven tile shapes (whole, guarded and hybrid instances)
 * with split-K and a deterministic second pass, and two GEMV-style kernels (m <= 8,
 * n == 1). Every instance here ran and passed on the H200 with these template parameters
 * and launch shapes before it moved here. */
#include "kernels/core/cuda/cp_async.cuh"
#include "kernels/gemm/gemm.cuh"
#include "kernels/gemm/gemm_pick.h"

#include <stdio.h>

#include <type_traits>

/* ---- the tile kernel: design ----
 *
 * Block: THREADS threads own a BM x BN tile of C (1-D grid in grouped order, for L2 reuse
 * of A's and B's panels); warps of WM x WN; a warp's lanes form an 8 x 4 (or 4 x 8) grid
 * and a lane owns TM x TN outputs as 4x4 sub-tiles. K advances by BK through a
 * STAGES-deep cp.async ring: A's BM x BK panel is stored transposed (As[k][m]) and B's
 * BK x BN panel as is (Bs[k][n]), so per k a lane reads its TM A and TN B values as
 * float4 and makes TM TN FMAs. At <128, 128, 32, 64, 32, 8, 8, 2> it is the kernel this
 * variant ran alone before issue 15.
 *
 * Why each choice (the alternatives compared at 128x128 on the H200, % of cuBLAS SGEMM at
 * 4096^3 / 8192^3: this kernel 95.9 / 97.2, the register-staged one it replaced 79 / 80,
 * cuBLAS's own 128x256 tile of 8x16 lanes 89):
 * - 8x8 per lane at 128x128, at most 128 registers, 2 blocks an SM: while one block waits
 *   at its barrier the other computes.
 * - cp.async: the copies need no staging registers and land while the FMAs run. A is
 *   copied element by element (4-byte cp.async) straight into its transposed place; its
 *   pitch of BM + 4 floats puts a warp's 8 k x 4 m writes in 32 distinct banks.
 * - Fragments double-buffered in registers: k+1's reads are issued before k's FMAs, and
 *   the step's barrier sits before its last k, so the next stage's first fragments load
 *   while that k's FMAs run.
 * - Interleaved lanes: lane bit 0 picks the row group and bit 1 the column group, so lane
 *   pairs share every A read (n, n^2) and every B read (n, n^1) and an LDS.128 takes 2
 *   shared-memory cycles instead of 4.
 * - "Snake" FMA order (rows outer, columns alternately forward and back): the same
 *   instructions, fewer dispatch stalls in ptxas's allocation (0.59 to 0.34 a
 *   instruction; 90.8% to 94.4% of cuBLAS at 4096^3).
 * - Three instances of one body (MODE): whole tiles (M, N multiples of the tile, K and
 *   kchunk of BK, pointers 16-byte aligned) without a guard in the main loop; guarded,
 *   where out-of-range elements are zero-filled so partial tiles need no special case,
 *   and B and C take 16-byte accesses where flags allow; hybrid (t128x128 and t64x64w4
 *   only: the instances that ran it), where a block whose tile lies inside M x N copies
 *   its full k-steps and stores unguarded and only edge tiles and the last, partial
 *   k-step take the guarded copies (a guarded tile ran at ~0.73 of a whole one's rate
 *   on the H200).
 * - Split-K: blockIdx.y = z takes k in [z kchunk, min(K, (z+1) kchunk)) (kchunk a multiple
 *   of BK) and writes its partial tile to C + z M N, a workspace when gridDim.y > 1; the
 *   split-K pass then adds the partials in z order, so the result does not depend on
 *   timing (no atomics).
 * Fragile: several instances sit at their register cap (the launch bound's blocks an
 * SM); in the lab, trivial source changes moved ptxas between 0 and 84 bytes of spills.
 * After any change here or an nvcc upgrade: ptxas -v must still say 0 bytes of spills
 * for every instance, and re-measure (bench/run.sh's shapes part). */

template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, int STAGES_, int MINB_,
          int MINB_G_ = MINB_>
struct tile_cfg {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, TM = TM_, TN = TN_;
  /* blocks an SM promised to ptxas (the register cap): whole tiles, guarded and hybrid */
  static constexpr int STAGES = STAGES_, MINB = MINB_, MINB_G = MINB_G_;
  static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN, THREADS = 32 * WARPS_M * WARPS_N;
  static constexpr int LANES_M = WM / TM, LANES_N = WN / TN;
  static constexpr int A_PITCH = BM + 4; /* As[k][m]: a warp's 8 k x 4 m writes, 32 banks */
  static constexpr int A_FLOATS = BK * A_PITCH, B_FLOATS = BK * BN;
  static constexpr int STAGE_FLOATS = A_FLOATS + B_FLOATS;
  static constexpr int SMEM = STAGES * STAGE_FLOATS * (int)sizeof(float);
  static constexpr int KL = 8;              /* A copies: threads along k of a row */
  static constexpr int RPJ = THREADS / KL;  /* A copies: rows per element step */
  static constexpr int CPR = BN / 4;        /* B copies: float4 per row */
  static constexpr int RPB = THREADS / CPR; /* B copies: rows per chunk step */
  static constexpr int B_CHUNKS = BK * BN / 4 / THREADS;
  static_assert(BM % WM == 0 && BN % WN == 0, "warps tile the block");
  static_assert(LANES_M * LANES_N == 32 && LANES_M % 2 == 0 && LANES_N % 2 == 0, "32 lanes");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % KL == 0, "float4 fragments, A copies");
  static_assert(BM % RPJ == 0 && THREADS % CPR == 0 && B_CHUNKS * 4 * THREADS == BK * BN,
                "copies tile the panels");
  static_assert(STAGES >= 2, "a ring");
};

/* The menu, in gemm_pick.h's order (gemm_tile_id); plan_tile checks that the two agree. */
using tile_128x128 = tile_cfg<128, 128, 32, 64, 32, 8, 8, 2, 2>;
using tile_128x64 = tile_cfg<128, 64, 32, 64, 32, 8, 8, 2, 4, 3>; /* guarded at 4 would spill */
using tile_64x128 = tile_cfg<64, 128, 32, 64, 32, 8, 8, 2, 4>;
using tile_64x64 = tile_cfg<64, 64, 16, 64, 32, 8, 8, 3, 8, 6>; /* guarded at 8 would spill */
using tile_64x64w4 = tile_cfg<64, 64, 32, 32, 32, 4, 8, 2, 4>;
using tile_256x16 = tile_cfg<256, 16, 32, 64, 16, 8, 4, 2, 2>; /* 4 warps of 64 rows */
using tile_16x256 = tile_cfg<16, 256, 32, 16, 64, 4, 8, 2, 3>; /* 4 warps of 64 columns */

/* One stage: A's BM x BK panel at (m0, k0) transposed into as, B's BK x BN panel at
 * (k0, n0) into bs. A element (jr, jk) of thread t: row t/8 + RPJ jr, k t%8 + 8 jk (a
 * warp reads 4 rows x 32 bytes, whole sectors); B chunk j: row t/CPR + RPB j, float4
 * t%CPR (a warp reads contiguous runs of a row). lda = K; kext: the k extent of this
 * split (A and B already point at its first k). B falls back to 4-byte copies when its
 * rows are not whole float4 (flags). */
template <class P, bool WHOLE>
__device__ __forceinline__ void copy_stage(float *as, float *bs, const float *__restrict__ A,
                                           const float *__restrict__ B, int M, int N, int lda,
                                           int kext, int m0, int n0, int k0, int flags, int t) {
  constexpr int JR = P::BM / P::RPJ, JK = P::BK / P::KL;
  const int ar = t / P::KL, ak = t % P::KL;
#pragma unroll
  for (int jk = 0; jk < JK; jk++)
#pragma unroll
    for (int jr = 0; jr < JR; jr++) {
      const int row = ar + P::RPJ * jr, k = ak + P::KL * jk;
      float *dst = as + k * P::A_PITCH + row;
      if constexpr (WHOLE) {
        cp_async4(dst, A + (size_t)(m0 + row) * lda + k0 + k);
      } else {
        const bool ok = m0 + row < M && k0 + k < kext;
        cp_async4(dst, ok ? A + (size_t)(m0 + row) * lda + k0 + k : A, ok);
      }
    }
  if (WHOLE || (flags & GEMM_VEC_B)) {
    const int br = t / P::CPR, bc = 4 * (t % P::CPR);
#pragma unroll
    for (int j = 0; j < P::B_CHUNKS; j++) {
      const int row = br + P::RPB * j;
      float *dst = bs + row * P::BN + bc;
      if constexpr (WHOLE) {
        cp_async16(dst, B + (size_t)(k0 + row) * N + n0 + bc);
      } else {
        const bool ok = k0 + row < kext && n0 + bc < N;
        cp_async16(dst, ok ? B + (size_t)(k0 + row) * N + n0 + bc : B, ok);
      }
    }
  } else {
#pragma unroll 4
    for (int j = 0; j < P::BK * P::BN / P::THREADS; j++) {
      const int e = t + P::THREADS * j, row = e / P::BN, col = e % P::BN;
      const bool ok = k0 + row < kext && n0 + col < N;
      cp_async4(bs + row * P::BN + col, ok ? B + (size_t)(k0 + row) * N + n0 + col : B, ok);
    }
  }
}

/* One k's fragments: the lane's TM A values (rows a_off + 4 LANES_M s + 0..3) and TN B
 * values (columns b_off + 4 LANES_N s + 0..3), as float4 reads. (Plain arrays: a struct
 * holding them cost spills in the lab.) */
template <class P>
__device__ __forceinline__ void load_frag(float (&a)[P::TM], float (&b)[P::TN], const float *as,
                                          const float *bs, int k, int a_off, int b_off) {
#pragma unroll
  for (int s = 0; s < P::TM / 4; s++) {
    const float4 v = *reinterpret_cast<const float4 *>(as + k * P::A_PITCH + a_off +
                                                       s * 4 * P::LANES_M);
    a[4 * s] = v.x, a[4 * s + 1] = v.y, a[4 * s + 2] = v.z, a[4 * s + 3] = v.w;
  }
#pragma unroll
  for (int s = 0; s < P::TN / 4; s++) {
    const float4 v = *reinterpret_cast<const float4 *>(bs + k * P::BN + b_off + s * 4 * P::LANES_N);
    b[4 * s] = v.x, b[4 * s + 1] = v.y, b[4 * s + 2] = v.z, b[4 * s + 3] = v.w;
  }
}

/* One k's TM TN FMAs in snake order: rows outer, columns forward on even rows and
 * backward on odd ones (see the design note: this order measured fastest). */
template <class P>
__device__ __forceinline__ void fma_frag(const float (&a)[P::TM], const float (&b)[P::TN],
                                         float (&acc)[P::TM][P::TN]) {
#pragma unroll
  for (int i = 0; i < P::TM; i++)
#pragma unroll
    for (int jj = 0; jj < P::TN; jj++) {
      const int j = (i & 1) ? P::TN - 1 - jj : jj;
      acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

/* The lane's tile into C, row by row as float4 (or guarded 4-byte stores when C's rows
 * are not whole float4). */
template <class P, bool WHOLE>
__device__ __forceinline__ void store_tile(float *__restrict__ C, const float (&acc)[P::TM][P::TN],
                                           int M, int N, int m0, int wm0, int lr, int n0, int b_off,
                                           int flags) {
  const bool vec_c = WHOLE || (flags & GEMM_VEC_C);
#pragma unroll
  for (int i = 0; i < P::TM; i++) {
    const int row = m0 + wm0 + (i / 4) * 4 * P::LANES_M + 4 * lr + (i % 4);
    if (!WHOLE && row >= M) continue;
#pragma unroll
    for (int s = 0; s < P::TN / 4; s++) {
      const int col = n0 + b_off + s * 4 * P::LANES_N;
      float *dst = C + (size_t)row * N + col;
      const float4 o = make_float4(acc[i][4 * s], acc[i][4 * s + 1], acc[i][4 * s + 2],
                                   acc[i][4 * s + 3]);
      if (vec_c) {
        if (WHOLE || col < N) *reinterpret_cast<float4 *>(dst) = o;
      } else {
        if (col < N) dst[0] = o.x;
        if (col + 1 < N) dst[1] = o.y;
        if (col + 2 < N) dst[2] = o.z;
        if (col + 3 < N) dst[3] = o.w;
      }
    }
  }
}

/* MODE 1: whole tiles; 0: every copy and store guarded; 2 (hybrid): an inner tile's full
 * k-steps unguarded, the rest guarded. */
template <class P, int MODE>
__device__ __forceinline__ void copy_any(float *as, float *bs, const float *__restrict__ A,
                                         const float *__restrict__ B, int M, int N, int lda,
                                         int kext, int m0, int n0, int k0, int flags, int t,
                                         bool inner) {
  if constexpr (MODE == 1) {
    copy_stage<P, true>(as, bs, A, B, M, N, lda, kext, m0, n0, k0, flags, t);
  } else if constexpr (MODE == 0) {
    copy_stage<P, false>(as, bs, A, B, M, N, lda, kext, m0, n0, k0, flags, t);
  } else {
    if (inner && k0 + P::BK <= kext)
      copy_stage<P, true>(as, bs, A, B, M, N, lda, kext, m0, n0, k0, flags, t);
    else
      copy_stage<P, false>(as, bs, A, B, M, N, lda, kext, m0, n0, k0, flags, t);
  }
}

/* FP32 SGEMM, mapping and reasons in the design note. Launch: P::THREADS threads, grid
 * (ceil(M/BM) ceil(N/BN), splits), P::SMEM bytes of dynamic shared memory (raised by the
 * launcher). MODE 1 (whole): M % BM, N % BN, K % BK, kchunk % BK are 0 and A, B, C
 * 16-byte aligned (flags unused); 0 (guarded): flags say which rows allow 16-byte
 * accesses (gemm_flags); 2 (hybrid): as 0 with GEMM_VEC_B and GEMM_VEC_C set. Warp w:
 * rows WM (w / WARPS_N), columns WN (w % WARPS_N) of the tile; lane l: lr = l&1 |
 * ((l>>2) % (LANES_M/2))<<1, lc = (l>>1)&1 | ((l>>2) / (LANES_M/2))<<1. Split z =
 * blockIdx.y writes C + z M N. */
template <class P, int MODE>
__global__ __launch_bounds__(P::THREADS, MODE == 1 ? P::MINB : P::MINB_G) void gemm_tile_kernel(
    const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M, int N,
    int K, int kchunk, int flags) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) float smem[];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const int kb = blockIdx.y * kchunk, kext = min(K - kb, kchunk);
  A += kb;
  B += (size_t)kb * N;
  C += (size_t)blockIdx.y * M * N;
  int bm, bn;
  grouped_tile(blockIdx.x, (M + P::BM - 1) / P::BM, (N + P::BN - 1) / P::BN, GEMM_GROUP_M, &bm,
               &bn);
  const int m0 = bm * P::BM, n0 = bn * P::BN;
  const bool inner = m0 + P::BM <= M && n0 + P::BN <= N;
  const int wm0 = (w / P::WARPS_N) * P::WM, wn0 = (w % P::WARPS_N) * P::WN;
  constexpr int HM = P::LANES_M / 2; /* bit 0 -> lr, bit 1 -> lc, bits 2..4 split */
  const int lr = (lane & 1) | (((lane >> 2) % HM) << 1);
  const int lc = ((lane >> 1) & 1) | (((lane >> 2) / HM) << 1);
  const int a_off = wm0 + 4 * lr, b_off = wn0 + 4 * lc;

  float acc[P::TM][P::TN];
#pragma unroll
  for (int i = 0; i < P::TM; i++)
#pragma unroll
    for (int j = 0; j < P::TN; j++) acc[i][j] = 0.f;
  const int steps = (kext + P::BK - 1) / P::BK;

  /* The ring: stages 0..S-2 in flight before the loop; step s refills the slot of step
   * s-1 with step s+S-1 once every thread is past the barrier that follows its last
   * read of that slot. Commits are unconditional, so the group count stays in step with
   * s and wait_group<S-2> always means "step s+1 has landed". */
#pragma unroll
  for (int st = 0; st < P::STAGES - 1; st++) {
    float *as = smem + st * P::STAGE_FLOATS;
    if (st < steps)
      copy_any<P, MODE>(as, as + P::A_FLOATS, A, B, M, N, K, kext, m0, n0, st * P::BK, flags, t,
                        inner);
    cp_async_commit();
  }
  int rd = 0, wr = P::STAGES - 1; /* ring slots of step s and of step s+S-1 */
  cp_async_wait<P::STAGES - 2>();
  __syncthreads();
  float fa[2][P::TM], fb[2][P::TN]; /* fragments of k and k+1 */
  load_frag<P>(fa[0], fb[0], smem, smem + P::A_FLOATS, 0, a_off, b_off);
  for (int s = 0; s < steps; s++) {
#pragma unroll
    for (int k = 0; k < P::BK; k++) {
      if (k == P::BK - 1) { /* step s+1 landed and visible; step s-1's slot free */
        cp_async_wait<P::STAGES - 2>();
        __syncthreads();
        rd = rd + 1 == P::STAGES ? 0 : rd + 1;
      }
      /* k+1's fragments; after the barrier, the next step's k = 0 (unused after the last
       * step, and harmless: nothing writes that slot any more) */
      const float *as = smem + rd * P::STAGE_FLOATS;
      load_frag<P>(fa[(k + 1) & 1], fb[(k + 1) & 1], as, as + P::A_FLOATS, (k + 1) % P::BK, a_off,
                   b_off);
      if (k == 0) {
        if (s + P::STAGES - 1 < steps) {
          float *was = smem + wr * P::STAGE_FLOATS;
          copy_any<P, MODE>(was, was + P::A_FLOATS, A, B, M, N, K, kext, m0, n0,
                            (s + P::STAGES - 1) * P::BK, flags, t, inner);
        }
        cp_async_commit();
        wr = wr + 1 == P::STAGES ? 0 : wr + 1;
      }
      fma_frag<P>(fa[k & 1], fb[k & 1], acc);
    }
  }
  cp_async_wait<0>(); /* only empty groups can remain; leave none behind */
  if (MODE == 1 || (MODE == 2 && inner))
    store_tile<P, true>(C, acc, M, N, m0, wm0, lr, n0, b_off, flags);
  else
    store_tile<P, false>(C, acc, M, N, m0, wm0, lr, n0, b_off, flags);
#endif
}

/* ---- the split-K pass: C[i] = sum_{z < S} ws[z mn + i], in z order (deterministic) ----
 * Grid-stride: thread g takes float4 g, g + stride, ... (vec: mn % 4 == 0, pointers
 * 16-byte aligned; else floats), its S loads issued before the adds. */
__global__ void gemm_splitk_kernel(const float *__restrict__ ws, float *__restrict__ C, size_t mn,
                                   int S, int vec) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (vec) {
    const size_t n4 = mn / 4;
    const float4 *w4 = reinterpret_cast<const float4 *>(ws);
    for (; i < n4; i += stride) {
      float4 s = w4[i];
      for (int z = 1; z < S; z++) {
        const float4 v = w4[z * n4 + i];
        s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
      }
      reinterpret_cast<float4 *>(C)[i] = s;
    }
  } else {
    for (; i < mn; i += stride) {
      float s = ws[i];
      for (int z = 1; z < S; z++) s += ws[z * mn + i];
      C[i] = s;
    }
  }
}

cudaError_t gemm_splitk_launch(const float *d_ws, float *d_c, size_t mn, int splits, int sms,
                               cudaStream_t s) {
  if (cuda_is_default_stream(s)) return cudaErrorInvalidValue;
  if (mn == 0) return cudaSuccess;
  size_t blocks = (mn / 4 + 255) / 256;
  if (blocks > (size_t)8 * sms) blocks = (size_t)8 * sms;
  if (blocks < 1) blocks = 1;
  const int vec = mn % 4 == 0 && aligned16(d_ws) && aligned16(d_c);
  gemm_splitk_kernel<<<(unsigned)blocks, 256, 0, s>>>(d_ws, d_c, mn, splits, vec);
  return cudaGetLastError();
}

/* ---- gemv_t: M <= MR rows of A times B ----
 * Block of 256 threads owns 128 columns of C: lane l the float4 of columns
 * 128 blockIdx.x + 4l; warp w the k-quads kb + 4w + 32j of the block's split (blockIdx.y:
 * k in [kb, ke)), so a warp reads 4 rows x 512 contiguous bytes of B per step, and
 * A[i][k..k+3] as one uniform (broadcast) float4 per row. The 8 warps' partial sums go
 * through shared memory and are added in warp order; the block writes C + z M N. VEC:
 * N % 4 == 0, K % 4 == 0, pointers 16-byte aligned (float4 loads); otherwise the same
 * mapping with guarded 4-byte loads. */
template <int MR, bool VEC>
__global__ __launch_bounds__(256) void gemv_t_kernel(const float *__restrict__ A,
                                                     const float *__restrict__ B,
                                                     float *__restrict__ C, int M, int N, int K,
                                                     int kchunk) {
  __shared__ float4 red[8][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int kb = blockIdx.y * kchunk, ke = min(K, kb + kchunk);
  C += (size_t)blockIdx.y * M * N;
  const int col = (blockIdx.x * 32 + lane) * 4;
  float acc[MR][4];
#pragma unroll
  for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
#pragma unroll 2
  for (int k = kb + 4 * w; k < ke; k += 32) {
    float4 b[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
      b[e] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (k + e < ke) b[e] = load4(B, K, N, k + e, col, VEC);
    }
#pragma unroll
    for (int i = 0; i < MR; i++) {
      if (i >= M) break;
      float4 a;
      if (VEC && k + 4 <= ke) {
        a = __ldg(reinterpret_cast<const float4 *>(A + (size_t)i * K + k));
      } else {
        a.x = A[(size_t)i * K + k];
        a.y = k + 1 < ke ? A[(size_t)i * K + k + 1] : 0.f;
        a.z = k + 2 < ke ? A[(size_t)i * K + k + 2] : 0.f;
        a.w = k + 3 < ke ? A[(size_t)i * K + k + 3] : 0.f;
      }
      const float av[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
      for (int e = 0; e < 4; e++) {
        acc[i][0] = fmaf(av[e], b[e].x, acc[i][0]);
        acc[i][1] = fmaf(av[e], b[e].y, acc[i][1]);
        acc[i][2] = fmaf(av[e], b[e].z, acc[i][2]);
        acc[i][3] = fmaf(av[e], b[e].w, acc[i][3]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < MR; i++) {
    if (i >= M) break; /* uniform */
    red[w][lane] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    __syncthreads();
    if (w == 0) {
      float4 s = red[0][lane];
#pragma unroll
      for (int ww = 1; ww < 8; ww++) {
        const float4 v = red[ww][lane];
        s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
      }
      float *dst = C + (size_t)i * N + col;
      if (VEC) {
        if (col < N) *reinterpret_cast<float4 *>(dst) = s;
      } else {
        if (col < N) dst[0] = s.x;
        if (col + 1 < N) dst[1] = s.y;
        if (col + 2 < N) dst[2] = s.z;
        if (col + 3 < N) dst[3] = s.w;
      }
    }
    __syncthreads();
  }
}

/* ---- gemv_n: A times N <= NR columns of B ----
 * Warp w of block b owns rows (8b + w) R .. +R-1 of A; lane l the k-quads kb + 4l + 128j
 * of the split (blockIdx.y), so a warp reads R rows x 512 contiguous bytes of A per step
 * and B's 4 x N floats of those k (from L1, shared by the block's warps). Each lane
 * accumulates R x NR partial sums; a fixed xor-shuffle tree adds the lanes; lane 0
 * writes C + z M N. VEC: K % 4 == 0 and A 16-byte aligned (float4 loads of A); B whole
 * when N == NR and B aligned. */
template <int NR, int R, bool VEC>
__global__ __launch_bounds__(256) void gemv_n_kernel(const float *__restrict__ A,
                                                     const float *__restrict__ B,
                                                     float *__restrict__ C, int M, int N, int K,
                                                     int kchunk) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int kb = blockIdx.y * kchunk, ke = min(K, kb + kchunk);
  C += (size_t)blockIdx.y * M * N;
  const int row0 = (blockIdx.x * 8 + w) * R;
  if (row0 >= M) return; /* whole warp */
  float acc[R][NR];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int c = 0; c < NR; c++) acc[r][c] = 0.f;
  const bool bvec = VEC && N == NR;
#pragma unroll 2
  for (int k = kb + 4 * lane; k < ke; k += 128) {
    float a[R][4];
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int row = min(row0 + r, M - 1); /* rows past M: computed, never stored */
      const float *p = A + (size_t)row * K + k;
      if (VEC && k + 4 <= ke) {
        const float4 v = __ldg(reinterpret_cast<const float4 *>(p));
        a[r][0] = v.x, a[r][1] = v.y, a[r][2] = v.z, a[r][3] = v.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; e++) a[r][e] = k + e < ke ? p[e] : 0.f;
      }
    }
#pragma unroll
    for (int e = 0; e < 4; e++) {
      if (k + e >= ke) break;
      float b[NR];
      const float *q = B + (size_t)(k + e) * N;
      if (bvec && NR % 4 == 0) {
#pragma unroll
        for (int c = 0; c < NR; c += 4) {
          const float4 v = __ldg(reinterpret_cast<const float4 *>(q + c));
          b[c] = v.x, b[c + 1] = v.y, b[c + 2] = v.z, b[c + 3] = v.w;
        }
      } else {
#pragma unroll
        for (int c = 0; c < NR; c++) b[c] = c < N ? __ldg(q + c) : 0.f;
      }
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < NR; c++) acc[r][c] = fmaf(a[r][e], b[c], acc[r][c]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int c = 0; c < NR; c++) {
      float v = acc[r][c];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      acc[r][c] = v;
    }
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < R; r++) {
      if (row0 + r >= M) break;
#pragma unroll
      for (int c = 0; c < NR; c++)
        if (c < N) C[(size_t)(row0 + r) * N + c] = acc[r][c];
    }
  }
}

#define GEMV_N_ROWS 2 /* rows a warp of gemv_n owns at one column (gemm_pick.c's model) */

/* ---- plans and launchers ---- */

/* What a plan needs to know of the current device. */
struct best_device {
  int major, smem_optin, sms;
};

/* From the limits read once per device (cuda_device_limits_get): the launcher asks the
 * driver nothing. 0, or -1 when the device cannot be asked. */
static int best_device_read(struct best_device *d) {
  struct cuda_device_limits l;
  if (cuda_device_limits_get(&l) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  d->major = l.major;
  d->smem_optin = l.smem_optin;
  d->sms = l.sms;
  return 0;
}

/* The instance (gemm_tile_kernel's MODE) a tile configuration takes with these pointers:
 * 1 whole, 2 hybrid (where the pick asks for it and B's and C's rows take 16-byte
 * accesses: flags), 0 guarded. The plan passes aligned = true (device allocations are). */
static int tile_mode_of(const struct gemm_pick *pk, int m, int n, int k, int flags, bool aligned) {
  const struct gemm_tile_cfg *t = &gemm_tile_cfgs[pk->tile];
  const bool whole = m % t->bm == 0 && n % t->bn == 0 && k % t->bk == 0 &&
                     pk->kchunk % t->bk == 0 && aligned;
  if (whole) return 1;
  if (pk->hybrid && t->hybrid && (flags & GEMM_VEC_B) && (flags & GEMM_VEC_C)) return 2;
  return 0;
}

/* The two tiles with a hybrid instance (gemm_tile_cfgs[].hybrid says the same). */
template <class P>
constexpr bool has_hybrid = std::is_same<P, tile_128x128>::value ||
                            std::is_same<P, tile_64x64w4>::value;

/* Each instance's dynamic shared memory may be above the default 48 KiB: raised once per
 * instance and device (bit d), when it is first planned there, so that the occupancy
 * reported from the plan is the launch's. */
template <class P, int MODE>
static std::atomic<unsigned long long> tile_smem_raised{0};

template <class P, int MODE>
static cudaError_t plan_tile_mode(struct cuda_plan *p, const char *label) {
  static const char *const mode_name[] = {"guarded", "whole", "hybrid"};
  char name[64];
  snprintf(name, sizeof name, "gemm_tile_kernel<%dx%dx%d,%s>", P::BM, P::BN, P::BK,
           mode_name[MODE]);
  cuda_plan_set(p, KFUNC((gemm_tile_kernel<P, MODE>)), name, label);
  p->block = dim3(P::THREADS);
  p->dyn_smem_bytes = P::SMEM;
  return smem_raise_once(&tile_smem_raised<P, MODE>, p->func, P::SMEM, false);
}

template <class P>
static cudaError_t plan_tile(const struct gemm_tile_cfg *t, int mode, struct cuda_plan *p,
                             const char *label) {
  if (t->bm != P::BM || t->bn != P::BN || t->bk != P::BK || t->threads != P::THREADS ||
      t->hybrid != has_hybrid<P>)
    return cudaErrorInvalidConfiguration; /* gemm_pick.c's menu and this file's disagree */
  if (mode == 1) return plan_tile_mode<P, 1>(p, label);
  if (mode == 0) return plan_tile_mode<P, 0>(p, label);
  if constexpr (has_hybrid<P>) return plan_tile_mode<P, 2>(p, label);
  return cudaErrorInvalidConfiguration;
}

static cudaError_t plan_tile_any(int tile, int mode, struct cuda_plan *p, const char *label) {
  const struct gemm_tile_cfg *t = &gemm_tile_cfgs[tile];
  switch (tile) {
  case GEMM_T128X128: return plan_tile<tile_128x128>(t, mode, p, label);
  case GEMM_T128X64: return plan_tile<tile_128x64>(t, mode, p, label);
  case GEMM_T64X128: return plan_tile<tile_64x128>(t, mode, p, label);
  case GEMM_T64X64: return plan_tile<tile_64x64>(t, mode, p, label);
  case GEMM_T64X64W4: return plan_tile<tile_64x64w4>(t, mode, p, label);
  case GEMM_T256X16: return plan_tile<tile_256x16>(t, mode, p, label);
  case GEMM_T16X256: return plan_tile<tile_16x256>(t, mode, p, label);
  }
  return cudaErrorInvalidConfiguration;
}

/* The main kernel of pick pk at m x n x k with these pointer properties (the split-K
 * pass, when splits > 1, follows it): cudaSuccess, cudaErrorInvalidConfiguration for a
 * pick this file has no kernel for, or the shared-memory raise's error. */
static cudaError_t plan_pick(const struct gemm_pick *pk, int m, int n, int k, int flags,
                             bool aligned, int sms, struct cuda_plan *p) {
  char label[192];
  gemm_pick_describe(pk, m, n, k, sms, label, sizeof label);
  if (pk->kind == GEMM_KIND_TILE) {
    if (pk->tile < 0 || pk->tile >= GEMM_N_TILES) return cudaErrorInvalidConfiguration;
    const int mode = tile_mode_of(pk, m, n, k, flags, aligned);
    const cudaError_t e = plan_tile_any(pk->tile, mode, p, label);
    const struct gemm_tile_cfg *t = &gemm_tile_cfgs[pk->tile];
    p->grid = dim3(gemm_blocks(m, n, t->bm, t->bn), (unsigned)pk->splits);
    return e;
  }
  if (pk->kind == GEMM_KIND_GEMV_T) {
    const bool vec = n % 4 == 0 && k % 4 == 0 && aligned;
    if (pk->rows == 1)
      cuda_plan_set(p, vec ? KFUNC((gemv_t_kernel<1, true>)) : KFUNC((gemv_t_kernel<1, false>)),
                    vec ? "gemv_t_kernel<1,vec>" : "gemv_t_kernel<1,scalar>", label);
    else if (pk->rows == 8)
      cuda_plan_set(p, vec ? KFUNC((gemv_t_kernel<8, true>)) : KFUNC((gemv_t_kernel<8, false>)),
                    vec ? "gemv_t_kernel<8,vec>" : "gemv_t_kernel<8,scalar>", label);
    else
      return cudaErrorInvalidConfiguration;
    p->block = dim3(256);
    p->grid = dim3(ceil_div(n, 128), (unsigned)pk->splits);
    return cudaSuccess;
  }
  if (pk->kind != GEMM_KIND_GEMV_N || pk->rows != 1) return cudaErrorInvalidConfiguration;
  const bool vec = k % 4 == 0 && aligned;
  cuda_plan_set(p,
                vec ? KFUNC((gemv_n_kernel<1, GEMV_N_ROWS, true>))
                    : KFUNC((gemv_n_kernel<1, GEMV_N_ROWS, false>)),
                vec ? "gemv_n_kernel<1,2,vec>" : "gemv_n_kernel<1,2,scalar>", label);
  p->block = dim3(256);
  p->grid = dim3(ceil_div(m, 8 * GEMV_N_ROWS), (unsigned)pk->splits);
  return cudaSuccess;
}

/* The configuration m x n x k gets on this device: picked under the workspace a job
 * counts for it (gemm_best_scratch_floats), so a device with more SMs than the count's
 * never needs more. */
static struct gemm_pick pick_here(int m, int n, int k, int sms) {
  return gemm_pick_for(m, n, k, sms, gemm_best_scratch_floats(m, n, k));
}

/* Picks the configuration by the sizes and the device's SM count; the plan has no
 * pointers, so it assumes 16-byte aligned ones, as every device allocation is (the
 * launch takes the guarded instance for pointers that are not). -1 with why below
 * compute capability 8.0 (cp.async) or with less opt-in shared memory per block than
 * the configuration needs (the run is unavailable). */
int gemm_best_plan(int m, int n, int k, struct cuda_plan *p, char *why, size_t why_len) {
  struct best_device d;
  if (best_device_read(&d) != 0) {
    cuda_plan_set(p, NULL, "gemm best", "");
    snprintf(why, why_len, "gemm best: cannot read the device's attributes");
    return -1;
  }
  const struct gemm_pick pk = pick_here(m > 0 ? m : 1, n > 0 ? n : 1, k > 0 ? k : 1, d.sms);
  const cudaError_t e = plan_pick(&pk, m, n, k, gemm_flags(NULL, NULL, NULL, n, k), true, d.sms, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, why_len, "gemm best: configuration %s: %s", pk.name, cudaGetErrorString(e));
    return -1;
  }
  if (d.major < 8 || (size_t)d.smem_optin < p->dyn_smem_bytes) {
    snprintf(why, why_len,
             "gemm best (%s) needs compute capability 8.0 (cp.async) and %zu bytes of shared "
             "memory per block (this device: %d.x, %d)",
             pk.name, p->dyn_smem_bytes, d.major, d.smem_optin);
    return -1;
  }
  return cuda_plan_grid_ok(p, why, why_len);
}

/* Pick pk's kernels on s (any pick: the tests force each configuration through here):
 * the split-K workspace stream-ordered from the pool (legal while s is captured: the
 * graph gets its own allocation and free nodes), the main kernel, the split-K pass, the
 * workspace freed after it. */
cudaError_t gemm_best_launch_pick(const struct gemm_pick *pk, const float *d_a, const float *d_b,
                                  float *d_c, int m, int n, int k, cudaStream_t s) {
  if (cuda_is_default_stream(s)) return cudaErrorInvalidValue;
  if (m <= 0 || n <= 0) return cudaSuccess; /* nothing to write */
  struct best_device d;
  if (best_device_read(&d) != 0) return cudaErrorInvalidConfiguration;
  float *d_ws = NULL;
  const size_t ws_floats = pk->splits > 1 ? (size_t)pk->splits * m * n : 0;
  if (ws_floats) {
    cudaError_t e = cudaMallocAsync((void **)&d_ws, ws_floats * sizeof(float), s);
    if (e != cudaSuccess) return e;
  }
  float *out = d_ws ? d_ws : d_c;
  int flags = gemm_flags(d_a, d_b, out, n, k), kchunk = pk->kchunk;
  const bool aligned = aligned16(d_a) && aligned16(d_b) && aligned16(out);
  struct cuda_plan p;
  cudaError_t e = plan_pick(pk, m, n, k, flags, aligned, d.sms, &p);
  if (e == cudaSuccess) {
    void *args[] = {&d_a, &d_b, &out, &m, &n, &k, &kchunk, &flags}; /* gemv: no flags */
    e = cuda_plan_launch(&p, args, s);
  }
  if (e == cudaSuccess && d_ws)
    e = gemm_splitk_launch(d_ws, d_c, (size_t)m * n, pk->splits, d.sms, s);
  if (d_ws) {
    const cudaError_t freed = cudaFreeAsync(d_ws, s); /* stream-ordered: after the pass */
    if (e == cudaSuccess) e = freed;
  }
  return e;
}

cudaError_t gemm_best_launch(const float *d_a, const float *d_b, float *d_c, int m, int n, int k,
                             cudaStream_t s) {
  struct best_device d;
  if (best_device_read(&d) != 0) return cudaErrorInvalidConfiguration;
  if (m <= 0 || n <= 0) return cudaSuccess;
  const struct gemm_pick pk = pick_here(m, n, k > 0 ? k : 1, d.sms);
  return gemm_best_launch_pick(&pk, d_a, d_b, d_c, m, n, k, s);
}
