/* gemm_lab: FP32 SGEMM (CUDA cores, FFMA only) design sweep against cuBLAS, one shot.
 *
 * Build (CMake, not built by default): cmake --build build-gpu --target gemm_lab
 * Run:   build-gpu/gemm_lab [name-filter [size]]   (no arguments: every config, 4096 and 8192)
 *
 * ---- Counting (written before the first run) --------------------------------------
 * FFMA peak: 132 SMs x 128 FP32 lanes x 2 FLOP x 1.98 GHz = 66.9 TFLOP/s. cuBLAS's 50.5
 * (51.3 here) is 76.7% of it. The clock stayed at 1980 MHz through these runs (nvidia-smi
 * dmon, 470-540 W), so the percentages below compare like with like.
 * Shared memory per FFMA: a lane with a TM x TN tile reads TM+TN floats per k for TM*TN
 * FFMAs: 4x4 2 B, 8x8 1 B, 8x16 / 16x8 0.75 B. An SM issues 128 FFMA per clock and its
 * shared memory returns 128 B per clock to registers (one register per lane per clock; an
 * LDS.128 costs 4 clocks, 2 when lane pairs share addresses, see "Lane map"). So 8x8 at
 * full FFMA rate needs 100% of that return path with no pairing, 75% with the current
 * kernel's lanes (A paired, B not), 50% with interleaved lanes; 8x16 37.5% interleaved.
 * Issue slots: per k a lane issues TM*TN FFMA + (TM+TN)/4 LDS.128 (8x8: 64 + 4, 8x16:
 * 128 + 6), plus per step the copies, a barrier and loop code: FFMA at most ~92-95% of
 * issue. Global: a 128x128 tile loads 1 KiB per k for 32K FLOP (32 FLOP/B), ~1.5 TB/s
 * from L2 at 50 TFLOP/s: not a limit.
 * Prediction: the current kernel is held by shared-return bandwidth (75% + stores) and
 * per-step guard/branch code; the winner would be cuBLAS's shape, 128x256 (or 128x128
 * with 128 threads) of 8x16 lanes with a 3-4 stage cp.async ring and interleaved lanes,
 * at 90-95% of cuBLAS; BK 8/16/32 within a few points; 1 block/SM shapes weaker than
 * 2 blocks/SM (a barrier stalls the whole SM).
 *
 * ---- What the H200 said (this file, 2026-11-29; % of cuBLAS at 4096^3 / 8192^3) -----
 *   cpt_128x128x32_t256_8x8_s2_o3              95.9 / 97.2   <- best
 *   cpt_128x128x32_t256_8x8_s3_o3              94.4 / 96.0
 *   cpt_128x128x16_t256_8x8_s3_o3              93.7 / 96.2
 *   cpt_128x128x8_t128_8x16_s4_o4              93.7 / 94.5
 *   cpt_128x128x32_t256_8x8_s3_o0              90.8 / 92.2
 *   cpt_128x128x8_t128_8x16_s4_o0              90.2 / 91.0
 *   reg_128x256x16_t256_8x16_nopipe            88.9 / 89.4
 *   cpt_128x256x8_t256_8x16_s4_o0              89.0 / 89.6   (cuBLAS's own tile)
 *   cpt_128x128x8_t128_8x16_s4_o0_rowmajorlanes 86.4 / 87.8
 *   tpl_baseline_128x128x16_t256_8x8           76.1 / 77.7
 *   gemm_best_kernel (verbatim)                79.1 / 79.5
 * The prediction was wrong about the winner: the current 8x8 / 256-thread shape wins
 * once (1) the main loop has no guards (FULL path; the guarded first versions reached
 * 71-86%), (2) fragments are double-buffered across the barrier (PIPE 1: 91.0 vs 86.1
 * for the same 8x16 tiles), (3) copies are cp.async (no staging registers, 2 blocks/SM
 * stay within 128 registers) and (4) the FMAs of a k run in snake order (o3): with the
 * same instructions, 90.8 -> 94.4 at 4096. ncu (4096^3): cuBLAS issues 2.43e9
 * instructions (88% FFMA) with issue slots 87% busy; ours issue about as many (2.40e9)
 * but were 78% busy; the stall that differed was dispatch_stall, 0.59 -> 0.34 per
 * instruction with the snake order (cuBLAS 0.10), which points at register-bank
 * conflicts in ptxas's allocation. Lane interleaving: +3.2 points for 8x16 (o0),
 * +0.3..0.5 for the 8x8 snake kernel. Also tried and dropped: A kept M-major in shared
 * (16-byte cp.async for A too, reads along k) 76.7 vs 82.0 in the same early build;
 * 256x128x16 with 16x8 lanes 87.8; 8x16 with BK 32 at 1 block/SM 90.8 at 8192 but ncu
 * showed no_instruction stalls (a 4.4k-instruction loop body); 6 stages = 4 stages;
 * register staging with fragment double-buffering 77.6 (33% of cycles with no eligible
 * warp; not understood). The template at the current kernel's parameters runs 2-3
 * points under the verbatim copy: same design, different SASS schedule.
 *
 * ---- ptxas (nvcc 13.0 -O3 -arch=sm_90; registers of the FULL / guarded kernel) ------
 *   K1  cpt_128x128x32_t256_8x8_s2_o3      128 / 128 regs, 66560 B dyn smem
 *   K2  cpt_128x128x32_t256_8x8_s3_o3      127 / 128 regs, 99840 B
 *   K3  cpt_128x128x16_t256_8x8_s3_o3      126 / 128 regs, 49920 B
 *   K4  cpt_128x128x8_t128_8x16_s4_o4      233 / 240 regs, 33280 B
 *   K5  cpt_128x128x32_t256_8x8_s3_o0      128 / 128 regs, 99840 B
 *   K6  cpt_128x128x8_t128_8x16_s4_o0      221 / 239 regs, 33280 B
 *   K7  reg_128x256x16_t256_8x16_nopipe    253 / 249 regs, 49152 B
 *   K8  cpt_128x256x8_t256_8x16_s4_o0      219 / 239 regs, 49664 B
 *   K9  ..._s4_o0_rowmajorlanes            221 / 240 regs, 33280 B
 *   K10 tpl_baseline_128x128x16_t256_8x8   128 / 128 regs, 32768 B
 *   gemm_best_kernel (verbatim)            128 regs, 32768 B static
 *   Every one: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads.
 *   (The 128-register configurations are at their cap: small source changes moved
 *   ptxas between 0 and 84 bytes of spills, see the notes at load_frag's callers.)
 *
 * ---- Checks ------------------------------------------------------------------------
 * 4096 / 8192: max |C - C_cuBLAS| <= 1e-3 * sqrt(K)/64 * max |C_cuBLAS| (0.123 / 0.234 on
 * these inputs; the measured differences were 0: same k order, same FMAs). C is filled
 * with NaN bytes before the warm-ups, so an unwritten entry fails. Odd sizes (1000 x 1003
 * x 997: 4-byte paths; 1000 x 1004 x 996: 16-byte paths with ragged tiles; 33 x 17 x 5:
 * smaller than a tile), against a CPU double reference on rows 0 and M-1, columns 0 and
 * N-1 and 3000 random entries: |c - ref| <= K * 2^-24 * sum_k |a_ik b_kj| + 1e-6 (the
 * FP32 summation bound), every entry finite (NaN prefill), and 16 KiB after C untouched.
 * The whole program took 4 s on the H200.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "kernels/backends/cuda/cublas_loader.h"
/* The product's helpers (grouped launch order, load4, cp.async, the vector flags), as
 * the product's gemm kernels use them. */
#include "kernels/core/cuda/cp_async.cuh"
#include "kernels/gemm/gemm.cuh"

#define CK(call)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,               \
              cudaGetErrorString(e_));                                                   \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)


/* ======================================================================================
 * Baseline: the gemm_best_kernel this lab's winner replaced (a lab-only copy now; the
 * product's gemm_best is the template's cpt_128x128x32_t256_8x8_s2_o3), so this run
 * measures it beside the template that re-expresses it.
 * ==================================================================================== */

#define SG_BM 128
#define SG_BN 128
#define SG_BK 16
#define SG_THREADS 256

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

/* ======================================================================================
 * The template.
 *
 * Block: BM x BN tile of C, (BM/WM) x (BN/WN) warps, each a WM x WN warp tile; a lane owns
 * TM x TN outputs. The warp's lanes form a LANES_M x LANES_N grid (LANES_M = WM/TM,
 * LANES_N = WN/TN, product 32). A lane's outputs are (TM/4) x (TN/4) sub-tiles of 4x4:
 * rows wm0 + s*4*LANES_M + 4*lr + 0..3, columns wn0 + s*4*LANES_N + 4*lc + 0..3, so per k
 * it reads TM/4 float4 of A (A is K-major in shared: As[k][m]) and TN/4 float4 of B.
 *
 * Lane map. Shared memory returns 128 bytes per clock per SM; an LDS.128 returns 4
 * registers to 32 lanes, so it costs 4 cycles, or 2 when every lane pair (n, n^1) or
 * every pair (n, n^2) reads one address (NVIDIA forum, "uniform" LDS packs two lanes'
 * data). LANES_ROWMAJOR (lr = lane / LANES_N, lc = lane % LANES_N, the current kernel)
 * pairs lanes for A only: its B reads cost 4 cycles. LANES_INTERLEAVED puts lane bit 0
 * into lr and bit 1 into lc, so A reads pair (n, n^2) and B reads pair (n, n^1): every
 * fragment read costs 2 cycles. Both read 8 (or 4) distinct consecutive float4: no bank
 * conflicts.
 *
 * Loads (global -> shared):
 *   LD_REG (STAGES 2): the current kernel's scheme: the next step's panels are loaded
 *     into registers (LDG.128) during this step's FMAs, then stored (A transposed with
 *     4-byte STS, B with STS.128) into the other buffer.
 *   LD_CPT: cp.async, STAGES-deep ring; A copied element by element (4-byte cp.async)
 *     straight into its transposed place As[k][m] (pitch BM+4: a warp writes 8 k x 4 m,
 *     32 distinct banks, while reading whole 32-byte sectors of 4 A rows from global);
 *     B as 16-byte cp.async. No staging registers and no STS.
 *   (Tried and dropped: A kept M-major in shared with 16-byte cp.async, each lane then
 *     reading float4 along k: 76.7% of cuBLAS where LD_CPT gave 82.0%, same tiles.)
 * Pipeline:
 *   PIPE 0: per step: (stores,) barrier, issue next loads, then for each k read the
 *     fragments and do the FMAs: the current kernel's order; the compiler schedules.
 *   PIPE 1: fragments double-buffered in registers: the reads for k+1 are issued
 *     before the FMAs of k, and the step's barrier sits before its last k, so the next
 *     stage's first fragments load while that k's FMAs run (CUTLASS's order).
 * ORDER: the order of a k's TM x TN FMAs in the source (fma_frag). Same instructions,
 *   but ptxas allocates and schedules differently; the H200 runs found 4 points in it.
 * FULL (a kernel template flag): M % BM, N % BN and K % BK are 0 and all three pointers
 * 16-byte aligned: no guards, no branches in the main loop. Otherwise every access is
 * guarded, out-of-range elements are zero (so partial tiles need no special case), and
 * 16-byte accesses are used where flags say the rows allow them.
 * ==================================================================================== */

enum { LD_REG = 0, LD_CPT = 1 };
enum { LANES_ROWMAJOR = 0, LANES_INTERLEAVED = 1 };

template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, int STAGES_,
          int LOAD_, int LANEMAP_, int PIPE_, int MINB_, int ORDER_ = 0>
struct Cfg {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, TM = TM_, TN = TN_;
  static constexpr int STAGES = STAGES_, LOAD = LOAD_, LANEMAP = LANEMAP_, PIPE = PIPE_;
  static constexpr int MINB = MINB_;   /* blocks per SM promised to ptxas (register cap) */
  static constexpr int ORDER = ORDER_; /* FMA order within a k: see fma_frag */
  static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN, THREADS = 32 * WARPS_M * WARPS_N;
  static constexpr int LANES_M = WM / TM, LANES_N = WN / TN;
  static constexpr int A_PITCH = BM + (LOAD == LD_CPT ? 4 : 0); /* As[k][m] */
  static constexpr int A_FLOATS = BK * A_PITCH;
  static constexpr int B_PITCH = BN; /* Bs[k][n] */
  static constexpr int B_FLOATS = BK * B_PITCH;
  static constexpr int STAGE_FLOATS = A_FLOATS + B_FLOATS;
  static constexpr int SMEM = STAGES * STAGE_FLOATS * (int)sizeof(float);
  /* global -> shared copy shapes */
  static constexpr int NA4 = BM * BK / 4 / THREADS;  /* LD_REG: A float4 chunks per thread */
  static constexpr int NB4 = BK * BN / 4 / THREADS;  /* B float4 chunks per thread */
  static constexpr int KL = BK < 8 ? BK : 8;         /* LD_CPT: lanes along k per A row */
  static constexpr int RPJ = THREADS / KL;           /* LD_CPT: A rows per element step */

  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block");
  static_assert(LANES_M * LANES_N == 32 && LANES_M >= 2 && LANES_N >= 2, "32 lanes per warp");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0 && BK % 2 == 0, "float4 fragments");
  static_assert(LOAD != LD_REG || STAGES == 2, "register staging is double buffering");
  static_assert(STAGES >= 2, "at least double buffering");
  static_assert(NA4 >= 1 && NA4 * 4 * THREADS == BM * BK && NB4 >= 1 &&
                    NB4 * 4 * THREADS == BK * BN,
                "whole float4 chunks per thread");
  static_assert(LOAD != LD_CPT || (BM % RPJ == 0), "A copy steps tile the rows");
};


/* LD_CPT: one stage's copies, A's BM x BK panel at k0 into as (transposed), B's BK x BN
 * panel into bs. A element j of this thread: row t/KL + RPJ*(j % (BM/RPJ)), k t%KL +
 * KL*(j / (BM/RPJ)); B chunk j: row t/(BN/4) + j*THREADS/(BN/4), float4 t%(BN/4). */
template <class P, bool FULL>
__device__ __forceinline__ void cp_stage(float *as, float *bs, const float *__restrict__ A,
                                         const float *__restrict__ B, int M, int N, int K,
                                         int m0, int n0, int k0, int flags, int t) {
  constexpr int JR = P::BM / P::RPJ, JK = P::BK / P::KL;
  const int ar = t / P::KL, ak = t % P::KL;
#pragma unroll
  for (int jk = 0; jk < JK; jk++)
#pragma unroll
    for (int jr = 0; jr < JR; jr++) {
      const int row = ar + P::RPJ * jr, k = ak + P::KL * jk;
      float *dst = as + k * P::A_PITCH + row;
      if constexpr (FULL) {
        cp_async4(dst, A + (size_t)(m0 + row) * K + k0 + k);
      } else {
        const bool ok = m0 + row < M && k0 + k < K;
        cp_async4(dst, ok ? A + (size_t)(m0 + row) * K + k0 + k : A, ok);
      }
    }
  constexpr int CPR = P::BN / 4, RPB = P::THREADS / CPR; /* B chunks per row, rows per step */
  static_assert(P::THREADS % CPR == 0, "B rows split evenly");
  if (FULL || (flags & GEMM_VEC_B)) {
    const int br = t / CPR, bc = 4 * (t % CPR);
#pragma unroll
    for (int j = 0; j < P::NB4; j++) {
      const int row = br + RPB * j;
      float *dst = bs + row * P::B_PITCH + bc;
      if constexpr (FULL) {
        cp_async16(dst, B + (size_t)(k0 + row) * N + n0 + bc);
      } else {
        const bool ok = k0 + row < K && n0 + bc < N;
        cp_async16(dst, ok ? B + (size_t)(k0 + row) * N + n0 + bc : B, ok);
      }
    }
  } else {
#pragma unroll 4
    for (int j = 0; j < P::BK * P::BN / P::THREADS; j++) {
      const int e = t + P::THREADS * j, row = e / P::BN, col = e % P::BN;
      const bool ok = k0 + row < K && n0 + col < N;
      cp_async4(bs + row * P::B_PITCH + col, ok ? B + (size_t)(k0 + row) * N + n0 + col : B, ok);
    }
  }
}

/* LD_REG: the next panels into registers. A chunk h: row c % BM, k-quad c / BM (c = t +
 * THREADS*h; a warp's transposed 4-byte stores then hit 32 banks); B chunk h: row
 * c / (BN/4), float4 c % (BN/4). */
template <class P, bool FULL>
__device__ __forceinline__ void reg_load(float4 (&ra)[P::NA4], float4 (&rb)[P::NB4],
                                         const float *__restrict__ A,
                                         const float *__restrict__ B, int M, int N, int K,
                                         int m0, int n0, int k0, bool vec_a, bool vec_b,
                                         int t) {
#pragma unroll
  for (int h = 0; h < P::NA4; h++) {
    const int c = t + P::THREADS * h, row = m0 + c % P::BM, k = k0 + 4 * (c / P::BM);
    if constexpr (FULL)
      ra[h] = *reinterpret_cast<const float4 *>(A + (size_t)row * K + k);
    else
      ra[h] = load4(A, M, K, row, k, vec_a);
  }
#pragma unroll
  for (int h = 0; h < P::NB4; h++) {
    const int c = t + P::THREADS * h, row = k0 + c / (P::BN / 4), col = n0 + 4 * (c % (P::BN / 4));
    if constexpr (FULL)
      rb[h] = *reinterpret_cast<const float4 *>(B + (size_t)row * N + col);
    else
      rb[h] = load4(B, K, N, row, col, vec_b);
  }
}
template <class P>
__device__ __forceinline__ void reg_store(const float4 (&ra)[P::NA4], const float4 (&rb)[P::NB4],
                                          float *as, float *bs, int t) {
#pragma unroll
  for (int h = 0; h < P::NA4; h++) {
    const int c = t + P::THREADS * h, row = c % P::BM, k = 4 * (c / P::BM);
    as[(k + 0) * P::A_PITCH + row] = ra[h].x;
    as[(k + 1) * P::A_PITCH + row] = ra[h].y;
    as[(k + 2) * P::A_PITCH + row] = ra[h].z;
    as[(k + 3) * P::A_PITCH + row] = ra[h].w;
  }
#pragma unroll
  for (int h = 0; h < P::NB4; h++) {
    const int c = t + P::THREADS * h;
    *reinterpret_cast<float4 *>(bs + (c / (P::BN / 4)) * P::B_PITCH + 4 * (c % (P::BN / 4))) =
        rb[h];
  }
}

/* One k's fragments: TM values of A and TN of B, as float4 reads. (Plain arrays: a
 * struct holding them cost the baseline configuration spills.) */
template <class P>
__device__ __forceinline__ void load_frag(float (&a)[P::TM], float (&b)[P::TN], const float *as,
                                          const float *bs, int k, int a_off, int b_off) {
#pragma unroll
  for (int s = 0; s < P::TM / 4; s++) {
    const float4 v =
        *reinterpret_cast<const float4 *>(as + k * P::A_PITCH + a_off + s * 4 * P::LANES_M);
    a[4 * s] = v.x, a[4 * s + 1] = v.y, a[4 * s + 2] = v.z, a[4 * s + 3] = v.w;
  }
#pragma unroll
  for (int s = 0; s < P::TN / 4; s++) {
    const float4 v =
        *reinterpret_cast<const float4 *>(bs + k * P::B_PITCH + b_off + s * 4 * P::LANES_N);
    b[4 * s] = v.x, b[4 * s + 1] = v.y, b[4 * s + 2] = v.z, b[4 * s + 3] = v.w;
  }
}
/* A k's TM x TN FMAs. The order only changes what ptxas sees, yet on the H200 (% of
 * cuBLAS at 8192^3): 8x8 BK 32: o0 92.5, o1 87.0, o2 92.9, o3 96.0, o4 89.2, o5 95.1;
 * 8x16 BK 8: o0 91.0, o1 90.2, o2 90.8, o3 85.5, o4 94.5, o5 91.4. The good orders had
 * fewer dispatch stalls (register-bank conflicts, presumably). Compiler-specific:
 * re-check after an nvcc upgrade. */
template <class P>
__device__ __forceinline__ void fma_frag(const float (&a)[P::TM], const float (&b)[P::TN],
                                         float (&acc)[P::TM][P::TN]) {
  if constexpr (P::ORDER == 0) { /* rows outer */
#pragma unroll
    for (int i = 0; i < P::TM; i++)
#pragma unroll
      for (int j = 0; j < P::TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  } else if constexpr (P::ORDER == 1) { /* columns outer */
#pragma unroll
    for (int j = 0; j < P::TN; j++)
#pragma unroll
      for (int i = 0; i < P::TM; i++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  } else if constexpr (P::ORDER == 2) { /* 4x4 sub-tile by sub-tile */
#pragma unroll
    for (int si = 0; si < P::TM; si += 4)
#pragma unroll
      for (int sj = 0; sj < P::TN; sj += 4)
#pragma unroll
        for (int i = si; i < si + 4; i++)
#pragma unroll
          for (int j = sj; j < sj + 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  } else if constexpr (P::ORDER == 3) { /* rows outer, columns snaking */
#pragma unroll
    for (int i = 0; i < P::TM; i++)
#pragma unroll
      for (int jj = 0; jj < P::TN; jj++) {
        const int j = (i & 1) ? P::TN - 1 - jj : jj;
        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
  } else if constexpr (P::ORDER == 4) { /* columns outer, rows snaking */
#pragma unroll
    for (int j = 0; j < P::TN; j++)
#pragma unroll
      for (int ii = 0; ii < P::TM; ii++) {
        const int i = (j & 1) ? P::TM - 1 - ii : ii;
        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
  } else { /* 4x4 sub-tile by sub-tile, snaking inside each */
#pragma unroll
    for (int si = 0; si < P::TM; si += 4)
#pragma unroll
      for (int sj = 0; sj < P::TN; sj += 4)
#pragma unroll
        for (int i = si; i < si + 4; i++)
#pragma unroll
          for (int jj = 0; jj < 4; jj++) {
            const int j = sj + ((i & 1) ? 3 - jj : jj);
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
          }
  }
}

template <class P, bool FULL>
__global__ __launch_bounds__(P::THREADS, P::MINB) void gemm_tpl(const float *__restrict__ A,
                                                                const float *__restrict__ B,
                                                                float *__restrict__ C, int M,
                                                                int N, int K, int flags) {
  extern __shared__ __align__(16) float smem[];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  int bm, bn;
  grouped_tile(blockIdx.x, (M + P::BM - 1) / P::BM, (N + P::BN - 1) / P::BN, GEMM_GROUP_M, &bm,
               &bn);
  const int m0 = bm * P::BM, n0 = bn * P::BN;
  const int wm0 = (w / P::WARPS_N) * P::WM, wn0 = (w % P::WARPS_N) * P::WN;
  int lr, lc;
  if constexpr (P::LANEMAP == LANES_ROWMAJOR) {
    lr = lane / P::LANES_N, lc = lane % P::LANES_N;
  } else { /* bit 0 -> lr, bit 1 -> lc, bits 2..4 split between them */
    constexpr int HM = P::LANES_M / 2;
    lr = (lane & 1) | (((lane >> 2) % HM) << 1);
    lc = ((lane >> 1) & 1) | (((lane >> 2) / HM) << 1);
  }
  const int a_off = wm0 + 4 * lr, b_off = wn0 + 4 * lc;

  float acc[P::TM][P::TN];
#pragma unroll
  for (int i = 0; i < P::TM; i++)
#pragma unroll
    for (int j = 0; j < P::TN; j++) acc[i][j] = 0.f;
  const int steps = (K + P::BK - 1) / P::BK;

  /* (Slot addresses are written out: through a lambda, ptxas spilled the 8x8
   * configurations at their 128-register cap.) */
  if constexpr (P::LOAD == LD_REG) {
    const bool vec_a = flags & GEMM_VEC_A, vec_b = flags & GEMM_VEC_B;
    float4 ra[P::NA4], rb[P::NB4];
    reg_load<P, FULL>(ra, rb, A, B, M, N, K, m0, n0, 0, vec_a, vec_b, t); /* zeros when K is 0 */
    if constexpr (P::PIPE == 0) {
      for (int s = 0; s < steps; s++) {
        float *as = smem + (s & 1) * P::STAGE_FLOATS, *bs = as + P::A_FLOATS;
        /* buffer s&1 was last read in step s-2: all threads passed step s-1's barrier */
        reg_store<P>(ra, rb, as, bs, t);
        __syncthreads();
        if (s + 1 < steps) /* next step's panels, in flight during the FMAs */
          reg_load<P, FULL>(ra, rb, A, B, M, N, K, m0, n0, (s + 1) * P::BK, vec_a, vec_b, t);
#pragma unroll
        for (int k = 0; k < P::BK; k++) {
          /* load_frag written out: called here, ptxas spilled the baseline
           * configuration (8x8, 128-register cap) */
          float a[P::TM], b[P::TN];
#pragma unroll
          for (int i = 0; i < P::TM / 4; i++) {
            const float4 v = *reinterpret_cast<const float4 *>(as + k * P::A_PITCH + a_off +
                                                               i * 4 * P::LANES_M);
            a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
          }
#pragma unroll
          for (int j = 0; j < P::TN / 4; j++) {
            const float4 v = *reinterpret_cast<const float4 *>(bs + k * P::B_PITCH + b_off +
                                                               j * 4 * P::LANES_N);
            b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
          }
          fma_frag<P>(a, b, acc);
        }
      }
    } else {
      reg_store<P>(ra, rb, smem, smem + P::A_FLOATS, t);
      __syncthreads();
      float fa[2][P::TM], fb[2][P::TN]; /* fragments of k and k+1 */
      load_frag<P>(fa[0], fb[0], smem, smem + P::A_FLOATS, 0, a_off, b_off);
      for (int s = 0; s < steps; s++) {
        const float *as = smem + (s & 1) * P::STAGE_FLOATS, *bs = as + P::A_FLOATS;
        float *nas = smem + ((s + 1) & 1) * P::STAGE_FLOATS, *nbs = nas + P::A_FLOATS;
        const bool more = s + 1 < steps;
#pragma unroll
        for (int k = 0; k < P::BK; k++) {
          if (k == P::BK - 1 && more) {
            /* the other buffer was last read before the previous step's barrier */
            reg_store<P>(ra, rb, nas, nbs, t);
            __syncthreads();
          }
          if (k + 1 < P::BK)
            load_frag<P>(fa[(k + 1) & 1], fb[(k + 1) & 1], as, bs, k + 1, a_off, b_off);
          else if (more)
            load_frag<P>(fa[0], fb[0], nas, nbs, 0, a_off, b_off);
          if (k == 0 && more) /* in flight during this step's FMAs */
            reg_load<P, FULL>(ra, rb, A, B, M, N, K, m0, n0, (s + 1) * P::BK, vec_a, vec_b, t);
          fma_frag<P>(fa[k & 1], fb[k & 1], acc);
        }
      }
    }
  } else {
    /* cp.async ring: stages 0..S-2 in flight before the loop; step s refills the slot
     * of step s-1 with step s+S-1 once every thread is past the barrier that follows
     * its last read of that slot. Commits are unconditional so that the group count
     * stays in step with s and wait_group<S-2> always means "step s+1 has landed". */
#pragma unroll
    for (int st = 0; st < P::STAGES - 1; st++) {
      float *as = smem + st * P::STAGE_FLOATS;
      if (st < steps)
        cp_stage<P, FULL>(as, as + P::A_FLOATS, A, B, M, N, K, m0, n0, st * P::BK, flags, t);
      cp_async_commit();
    }
    int rd = 0, wr = P::STAGES - 1; /* ring slots of step s and of step s+S-1 */
    if constexpr (P::PIPE == 0) {
      for (int s = 0; s < steps; s++) {
        cp_async_wait<P::STAGES - 2>();
        __syncthreads();
        if (s + P::STAGES - 1 < steps) {
          float *was = smem + wr * P::STAGE_FLOATS;
          cp_stage<P, FULL>(was, was + P::A_FLOATS, A, B, M, N, K, m0, n0,
                            (s + P::STAGES - 1) * P::BK, flags, t);
        }
        cp_async_commit();
        const float *as = smem + rd * P::STAGE_FLOATS, *bs = as + P::A_FLOATS;
#pragma unroll
        for (int k = 0; k < P::BK; k++) {
          float a[P::TM], b[P::TN];
          load_frag<P>(a, b, as, bs, k, a_off, b_off);
          fma_frag<P>(a, b, acc);
        }
        rd = rd + 1 == P::STAGES ? 0 : rd + 1;
        wr = wr + 1 == P::STAGES ? 0 : wr + 1;
      }
    } else {
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
          /* k+1's fragments; after the barrier, the next step's k = 0 (unused after the
           * last step, and harmless: nothing writes that slot any more) */
          const float *as = smem + rd * P::STAGE_FLOATS;
          load_frag<P>(fa[(k + 1) & 1], fb[(k + 1) & 1], as, as + P::A_FLOATS, (k + 1) % P::BK,
                       a_off, b_off);
          if (k == 0) {
            if (s + P::STAGES - 1 < steps) {
              float *was = smem + wr * P::STAGE_FLOATS;
              cp_stage<P, FULL>(was, was + P::A_FLOATS, A, B, M, N, K, m0, n0,
                                (s + P::STAGES - 1) * P::BK, flags, t);
            }
            cp_async_commit();
            wr = wr + 1 == P::STAGES ? 0 : wr + 1;
          }
          fma_frag<P>(fa[k & 1], fb[k & 1], acc);
        }
      }
    }
    cp_async_wait<0>(); /* only empty groups can remain; leave none behind */
  }

  /* C: row i of the lane's tile as TN/4 float4 (or guarded 4-byte stores) */
  const bool vec_c = FULL || (flags & GEMM_VEC_C);
#pragma unroll
  for (int i = 0; i < P::TM; i++) {
    const int row = m0 + wm0 + (i / 4) * 4 * P::LANES_M + 4 * lr + (i % 4);
    if (!FULL && row >= M) continue;
#pragma unroll
    for (int s = 0; s < P::TN / 4; s++) {
      const int col = n0 + b_off + s * 4 * P::LANES_N;
      float *dst = C + (size_t)row * N + col;
      const float4 o = make_float4(acc[i][4 * s], acc[i][4 * s + 1], acc[i][4 * s + 2],
                                   acc[i][4 * s + 3]);
      if (vec_c) {
        if (FULL || col < N) *reinterpret_cast<float4 *>(dst) = o;
      } else {
        if (col < N) dst[0] = o.x;
        if (col + 1 < N) dst[1] = o.y;
        if (col + 2 < N) dst[2] = o.z;
        if (col + 3 < N) dst[3] = o.w;
      }
    }
  }
}

/* ======================================================================================
 * Configurations, in the order they run: most promising first (by the H200 runs in the
 * header). Name: load_BMxBNxBK_threads_TMxTN_stages_order[_variant]; PIPE 1 and
 * interleaved lanes unless the name says otherwise.
 * ==================================================================================== */

//                   BM   BN  BK  WM  WN  TM  TN  S  load    lanes              pipe minB order
using K1 = Cfg<128, 128, 32, 64, 32, 8, 8, 2, LD_CPT, LANES_INTERLEAVED, 1, 2, 3>;
using K2 = Cfg<128, 128, 32, 64, 32, 8, 8, 3, LD_CPT, LANES_INTERLEAVED, 1, 2, 3>;
using K3 = Cfg<128, 128, 16, 64, 32, 8, 8, 3, LD_CPT, LANES_INTERLEAVED, 1, 2, 3>;
using K4 = Cfg<128, 128, 8, 64, 64, 8, 16, 4, LD_CPT, LANES_INTERLEAVED, 1, 2, 4>;
using K5 = Cfg<128, 128, 32, 64, 32, 8, 8, 3, LD_CPT, LANES_INTERLEAVED, 1, 2, 0>;
using K6 = Cfg<128, 128, 8, 64, 64, 8, 16, 4, LD_CPT, LANES_INTERLEAVED, 1, 2, 0>;
using K7 = Cfg<128, 256, 16, 64, 64, 8, 16, 2, LD_REG, LANES_INTERLEAVED, 0, 1, 0>;
using K8 = Cfg<128, 256, 8, 64, 64, 8, 16, 4, LD_CPT, LANES_INTERLEAVED, 1, 1, 0>;
using K9 = Cfg<128, 128, 8, 64, 64, 8, 16, 4, LD_CPT, LANES_ROWMAJOR, 1, 2, 0>;
using K10 = Cfg<128, 128, 16, 64, 32, 8, 8, 2, LD_REG, LANES_ROWMAJOR, 0, 2, 0>;

/* ======================================================================================
 * Host side
 * ==================================================================================== */

static const struct cublas_fns *g_cublas;
static cublasHandle_t g_handle;

struct Variant {
  const char *name, *desc;
  const void *func;  /* the kernel timed at 4096 and 8192 (FULL path); NULL: cuBLAS */
  const void *gfunc; /* the guarded kernel for other sizes */
  int threads, bm, bn;
  int smem; /* dynamic bytes */
  void (*launch)(const float *, const float *, float *, int, int, int, cudaStream_t);
};

/* FULL path when every tile is whole and every pointer 16-byte aligned. */
template <class P>
static void launch_tpl(const float *A, const float *B, float *C, int M, int N, int K,
                       cudaStream_t s) {
  const unsigned blocks = ceil_div(M, P::BM) * ceil_div(N, P::BN);
  if (M % P::BM == 0 && N % P::BN == 0 && K % P::BK == 0 && aligned16(A) && aligned16(B) &&
      aligned16(C))
    gemm_tpl<P, true><<<blocks, P::THREADS, P::SMEM, s>>>(A, B, C, M, N, K, 0);
  else
    gemm_tpl<P, false><<<blocks, P::THREADS, P::SMEM, s>>>(A, B, C, M, N, K,
                                                           gemm_flags(A, B, C, N, K));
  CK(cudaGetLastError());
}
static void launch_best(const float *A, const float *B, float *C, int M, int N, int K,
                        cudaStream_t s) {
  const int flags = gemm_flags(A, B, C, N, K);
  const unsigned blocks = ceil_div(M, SG_BM) * ceil_div(N, SG_BN);
  gemm_best_kernel<<<blocks, SG_THREADS, 0, s>>>(A, B, C, M, N, K, flags);
  CK(cudaGetLastError());
}
static void launch_cublas(const float *A, const float *B, float *C, int M, int N, int K,
                          cudaStream_t) {
  cublasStatus_t st = cublas_loader_sgemm_rowmajor(g_cublas, g_handle, M, N, K, A, B, C);
  if (st != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublas sgemm failed: %s\n", cublas_loader_status_name(st));
    exit(1);
  }
}

template <class P>
static Variant make_variant(const char *name, const char *desc) {
  auto f = gemm_tpl<P, true>;
  auto g = gemm_tpl<P, false>;
  CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, P::SMEM));
  CK(cudaFuncSetAttribute(g, cudaFuncAttributeMaxDynamicSharedMemorySize, P::SMEM));
  return Variant{name, desc, reinterpret_cast<const void *>(f), reinterpret_cast<const void *>(g),
                 P::THREADS, P::BM, P::BN, P::SMEM, launch_tpl<P>};
}

/* Uniform [-1, 1) from a hash of the index (no host copy of the big matrices). */
__global__ void fill_kernel(float *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ (unsigned)(i >> 32) ^ seed;
    x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
    p[i] = (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

/* max |c - r| and max |r| as float bits (non-negative floats order like unsigned; a NaN
 * difference has the largest bits and so shows up as NaN). */
__global__ void diff_kernel(const float *c, const float *r, size_t n, unsigned *out) {
  unsigned md = 0, mr = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    md = max(md, __float_as_uint(fabsf(c[i] - r[i])));
    mr = max(mr, __float_as_uint(fabsf(r[i])));
  }
  atomicMax(&out[0], md);
  atomicMax(&out[1], mr);
}

static cudaStream_t g_stream;

/* 2 warm-ups, then `reps` launches each between its own pair of events; median ms. */
static double time_variant(const Variant &v, const float *A, const float *B, float *C, int n,
                           int reps) {
  for (int i = 0; i < 2; i++) v.launch(A, B, C, n, n, n, g_stream);
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto &e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < reps; i++) {
    CK(cudaEventRecord(ev[2 * i], g_stream));
    v.launch(A, B, C, n, n, n, g_stream);
    CK(cudaEventRecord(ev[2 * i + 1], g_stream));
  }
  CK(cudaStreamSynchronize(g_stream));
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; i++) CK(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
  for (auto &e : ev) CK(cudaEventDestroy(e));
  std::sort(ms.begin(), ms.end());
  return ms[reps / 2];
}

/* Odd-size check against a CPU double reference: C is pre-filled with NaN bytes and has
 * a guard zone after it, so unwritten entries and writes past the end both fail. */
struct OddCase {
  int M, N, K;
  std::vector<float> a, b;
  float *dA, *dB, *dC;
};
static const int kGuard = 4096; /* floats after C that must stay untouched */

static void odd_setup(OddCase &o, int M, int N, int K, unsigned seed) {
  o.M = M, o.N = N, o.K = K;
  o.a.resize((size_t)M * K), o.b.resize((size_t)K * N);
  unsigned x = seed;
  auto rnd = [&x]() {
    x = x * 1664525u + 1013904223u;
    return (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
  };
  for (auto &v : o.a) v = rnd();
  for (auto &v : o.b) v = rnd();
  CK(cudaMalloc(&o.dA, o.a.size() * 4));
  CK(cudaMalloc(&o.dB, o.b.size() * 4));
  CK(cudaMalloc(&o.dC, ((size_t)M * N + kGuard) * 4));
  CK(cudaMemcpy(o.dA, o.a.data(), o.a.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(o.dB, o.b.data(), o.b.size() * 4, cudaMemcpyHostToDevice));
}

/* Returns true if it passes; *worst = max over checked entries of |diff| / tolerance.
 * Tolerance per entry: K * 2^-24 * sum_k |a_ik b_kj| (the rounding bound of an FP32 sum
 * of K products) + 1e-6: never a false alarm, yet far below one missing or doubled term. */
static bool odd_check(const Variant &v, OddCase &o, double *worst) {
  const int M = o.M, N = o.N, K = o.K;
  const size_t total = (size_t)M * N + kGuard;
  CK(cudaMemset(o.dC, 0xFF, total * 4));
  v.launch(o.dA, o.dB, o.dC, M, N, K, g_stream);
  CK(cudaStreamSynchronize(g_stream));
  std::vector<float> c(total);
  CK(cudaMemcpy(c.data(), o.dC, total * 4, cudaMemcpyDeviceToHost));
  bool ok = true;
  for (size_t i = (size_t)M * N; i < total; i++) {
    uint32_t bits;
    memcpy(&bits, &c[i], 4);
    if (bits != 0xFFFFFFFFu) { ok = false; break; }
  }
  if (!ok) printf("    %dx%dx%d: write past the end of C\n", M, N, K);
  for (size_t i = 0; i < (size_t)M * N && ok; i++)
    if (!isfinite(c[i])) {
      printf("    %dx%dx%d: C[%zu][%zu] not written (or not finite)\n", M, N, K, i / N, i % N);
      ok = false;
    }
  /* entries: all of rows 0, M-1 and columns 0, N-1, plus 3000 pseudo-random ones */
  std::vector<std::pair<int, int>> ent;
  for (int j = 0; j < N; j++) ent.push_back({0, j}), ent.push_back({M - 1, j});
  for (int i = 0; i < M; i++) ent.push_back({i, 0}), ent.push_back({i, N - 1});
  unsigned x = 12345u;
  for (int s = 0; s < 3000; s++) {
    x = x * 1664525u + 1013904223u;
    int i = (int)((x >> 8) % (unsigned)M);
    x = x * 1664525u + 1013904223u;
    ent.push_back({i, (int)((x >> 8) % (unsigned)N)});
  }
  *worst = 0;
  for (auto [i, j] : ent) {
    double ref = 0, mag = 0;
    for (int k = 0; k < K; k++) {
      const double p = (double)o.a[(size_t)i * K + k] * o.b[(size_t)k * N + j];
      ref += p, mag += fabs(p);
    }
    const double tol = K * ldexp(1.0, -24) * mag + 1e-6;
    const double d = fabs((double)c[(size_t)i * N + j] - ref);
    if (!(d <= tol)) {
      if (ok) printf("    %dx%dx%d: C[%d][%d] = %.7g, reference %.7g (tol %.3g)\n", M, N, K, i, j,
                     c[(size_t)i * N + j], ref, tol);
      ok = false;
    }
    *worst = std::max(*worst, d / tol);
  }
  return ok;
}

struct Row {
  const char *name;
  int n;
  double ms, tflops, pct;
  char check[96];
};
static std::vector<Row> g_rows;

static void print_row(const Row &r) {
  printf("| %s | %d^3 | %.3f | %.2f | %.1f%% | %s |\n", r.name, r.n, r.ms, r.tflops, r.pct,
         r.check);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  int sizes[2] = {4096, 8192}, nsizes = 2;
  if (argc > 2) sizes[0] = atoi(argv[2]), nsizes = 1;
  if (sizes[0] < 1 || sizes[0] > 8192) {
    fprintf(stderr, "size must be 1..8192 (the buffers are 8192^2)\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);

  int dev = 0, sms = 0, khz = 0, smem_sm = 0, regs_sm = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
  CK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  CK(cudaDeviceGetAttribute(&regs_sm, cudaDevAttrMaxRegistersPerMultiprocessor, dev));
  const double peak = sms * 128.0 * 2 * khz * 1e3 / 1e12;
  printf("device: %s, cc %d.%d, %d SMs, max clock %.0f MHz, %d KiB shared/SM, %d regs/SM\n",
         prop.name, prop.major, prop.minor, sms, khz / 1e3, smem_sm / 1024, regs_sm);
  printf("FP32 FFMA peak at max clock: %d SMs x 128 lanes x 2 x %.2f GHz = %.1f TFLOP/s\n", sms,
         khz / 1e6, peak);
  if (prop.major != 9)
    printf("warning: built for sm_90, running on cc %d.%d\n", prop.major, prop.minor);

  const char *why = NULL;
  g_cublas = cublas_loader_get(&why);
  if (!g_cublas) {
    fprintf(stderr, "cuBLAS not loaded: %s\n", why ? why : "?");
    return 1;
  }
  CK(cudaStreamCreate(&g_stream));
  cublasStatus_t cst = cublas_loader_handle_new(g_cublas, g_stream, &g_handle);
  if (cst != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublas handle: %s\n", cublas_loader_status_name(cst));
    return 1;
  }

  std::vector<Variant> vars;
#define V(C, name, desc) vars.push_back(make_variant<C>(name, desc))
  V(K1, "cpt_128x128x32_t256_8x8_s2_o3",
    "warp 64x32 of 8x4 lanes, 2 blocks/SM, cp.async 2 stages of BK 32, snake FMA order");
  V(K2, "cpt_128x128x32_t256_8x8_s3_o3", "as above with 3 stages");
  V(K3, "cpt_128x128x16_t256_8x8_s3_o3", "BK 16, 3 stages, snake FMA order");
  V(K4, "cpt_128x128x8_t128_8x16_s4_o4",
    "4 warps of 64x64 (8x4 lanes of 8x16), 2 blocks/SM, 4 stages, column-snake FMA order");
  V(K5, "cpt_128x128x32_t256_8x8_s3_o0", "as cpt_..._s3_o3 with the plain row-by-row FMA order");
  V(K6, "cpt_128x128x8_t128_8x16_s4_o0", "as cpt_..._8x16_s4_o4 with the plain FMA order");
  V(K7, "reg_128x256x16_t256_8x16_nopipe",
    "register-staged (current scheme) on a 128x256 tile, 1 block/SM, compiler-scheduled");
  V(K8, "cpt_128x256x8_t256_8x16_s4_o0", "cuBLAS's tile (128x256x8, warp 64x64), 4 stages");
  V(K9, "cpt_128x128x8_t128_8x16_s4_o0_rowmajorlanes",
    "as cpt_128x128x8_t128_8x16_s4_o0 with row-major lanes (B reads unpaired)");
  V(K10, "tpl_baseline_128x128x16_t256_8x8", "the template set to the current kernel's design");
#undef V
  vars.push_back(Variant{"gemm_best_kernel (verbatim)", "current kernel, copied verbatim",
                         reinterpret_cast<const void *>(gemm_best_kernel),
                         reinterpret_cast<const void *>(gemm_best_kernel), SG_THREADS, SG_BM,
                         SG_BN, 0, launch_best});
  const Variant cublas{"cuBLAS SGEMM", "default math (TF32 off)", NULL, NULL, 0, 0, 0, 0,
                       launch_cublas};

  /* Big operands: 8192^2 each; a 4096 run uses the first 4096^2 elements. */
  const size_t big = (size_t)8192 * 8192;
  float *dA, *dB, *dC;
  float *dRef[2] = {NULL, NULL};
  unsigned *dDiff;
  CK(cudaMalloc(&dA, big * 4));
  CK(cudaMalloc(&dB, big * 4));
  CK(cudaMalloc(&dC, big * 4));
  CK(cudaMalloc(&dDiff, 2 * sizeof(unsigned)));
  fill_kernel<<<4 * sms, 256, 0, g_stream>>>(dA, big, 0x1234567u);
  CK(cudaGetLastError());
  fill_kernel<<<4 * sms, 256, 0, g_stream>>>(dB, big, 0x89abcdefu);
  CK(cudaGetLastError());

  /* cuBLAS first: time it and keep its output as each size's reference */
  double cublas_ms[2];
  for (int si = 0; si < nsizes; si++) {
    const int n = sizes[si];
    CK(cudaMalloc(&dRef[si], (size_t)n * n * 4));
    cublas_ms[si] = time_variant(cublas, dA, dB, dRef[si], n, n >= 8192 ? 5 : 7);
    Row r{cublas.name, n, cublas_ms[si], 2.0 * n * n * n / (cublas_ms[si] * 1e-3) / 1e12, 100.0,
          "reference"};
    print_row(r);
    g_rows.push_back(r);
  }

  OddCase odd[3];
  odd_setup(odd[0], 1000, 1003, 997, 1u);  /* 4-byte paths everywhere */
  odd_setup(odd[1], 1000, 1004, 996, 2u);  /* 16-byte paths with ragged tiles */
  odd_setup(odd[2], 33, 17, 5, 3u);        /* smaller than one tile, K < BK */

  for (const Variant &v : vars) {
    if (filter && !strstr(v.name, filter)) continue;
    cudaFuncAttributes fa, ga;
    CK(cudaFuncGetAttributes(&fa, v.func));
    CK(cudaFuncGetAttributes(&ga, v.gfunc));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, v.func, v.threads, v.smem));
    printf("\n== %s: %s\n   block %d threads, tile %dx%d, grid %u blocks at 4096^2 and %u at "
           "8192^2 (1-D, grouped by %d tile rows), dyn smem %d B + static %zu B, %d regs (guarded "
           "kernel %d), local %zu B, occupancy %d blocks/SM (%d warps/SM)\n",
           v.name, v.desc, v.threads, v.bm, v.bn, ceil_div(4096, v.bm) * ceil_div(4096, v.bn),
           ceil_div(8192, v.bm) * ceil_div(8192, v.bn), GEMM_GROUP_M, v.smem, fa.sharedSizeBytes,
           fa.numRegs, ga.numRegs, fa.localSizeBytes + ga.localSizeBytes, occ,
           occ * v.threads / 32);
    bool odd_ok = true;
    for (auto &o : odd) {
      double worst;
      const bool ok = odd_check(v, o, &worst);
      printf("   odd %dx%dx%d: %s (worst |diff|/tol %.3f)\n", o.M, o.N, o.K, ok ? "PASS" : "FAIL",
             worst);
      odd_ok &= ok;
    }
    for (int si = 0; si < nsizes; si++) {
      const int n = sizes[si];
      CK(cudaMemsetAsync(dC, 0xFF, (size_t)n * n * 4, g_stream)); /* NaN: unwritten fails */
      const double ms = time_variant(v, dA, dB, dC, n, n >= 8192 ? 5 : 7);
      CK(cudaMemsetAsync(dDiff, 0, 2 * sizeof(unsigned), g_stream));
      diff_kernel<<<4 * sms, 256, 0, g_stream>>>(dC, dRef[si], (size_t)n * n, dDiff);
      CK(cudaGetLastError());
      unsigned hd[2];
      CK(cudaMemcpy(hd, dDiff, sizeof hd, cudaMemcpyDeviceToHost));
      float md, mr;
      memcpy(&md, &hd[0], 4), memcpy(&mr, &hd[1], 4);
      /* |diff| <= 1e-3 * sqrt(K)/64 * max|C_ref| (0.1% of max|C| at K = 4096) */
      const double tol = 1e-3 * sqrt((double)n) / 64.0 * mr;
      const bool ok = md <= tol && odd_ok;
      Row r{v.name, n, ms, 2.0 * n * n * n / (ms * 1e-3) / 1e12, 100.0 * cublas_ms[si] / ms, ""};
      snprintf(r.check, sizeof r.check, "%s (max|d| %.2e <= %.2e%s)", ok ? "PASS" : "FAIL", md,
               tol, odd_ok ? ", odd sizes ok" : ", ODD SIZES FAIL");
      print_row(r);
      g_rows.push_back(r);
    }
  }

  /* cuBLAS again: how far the clocks drifted over the run */
  for (int si = 0; si < nsizes; si++) {
    const int n = sizes[si];
    const double ms = time_variant(cublas, dA, dB, dC, n, n >= 8192 ? 5 : 7);
    Row r{"cuBLAS SGEMM (again, at the end)", n, ms, 2.0 * n * n * n / (ms * 1e-3) / 1e12,
          100.0 * cublas_ms[si] / ms, "drift check"};
    print_row(r);
    g_rows.push_back(r);
  }

  printf("\n| config | size | median ms | TFLOP/s | %% of cuBLAS | check |\n");
  printf("| --- | --- | --- | --- | --- | --- |\n");
  for (const Row &r : g_rows) print_row(r);

  for (auto &o : odd) {
    CK(cudaFree(o.dA));
    CK(cudaFree(o.dB));
    CK(cudaFree(o.dC));
  }
  for (int si = 0; si < nsizes; si++) CK(cudaFree(dRef[si]));
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
  CK(cudaFree(dDiff));
  cst = g_cublas->destroy(g_handle);
  if (cst != CUBLAS_STATUS_SUCCESS)
    fprintf(stderr, "cublas destroy: %s\n", cublas_loader_status_name(cst));
  CK(cudaStreamDestroy(g_stream));
  return 0;
}
