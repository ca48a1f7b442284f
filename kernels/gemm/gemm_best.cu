/* The gemm's `best` variant: FP32 SGEMM on the CUDA cores (FFMA), C[M,N] = A[M,K] B[K,N]
 * row-major. One kernel body, compiled twice: without guards for whole tiles, with
 * them for every other size. */
#include "kernels/gemm/gemm.cuh"

#include <stdio.h>

/* ---- design ----
 *
 * Block: 256 threads own a 128x128 tile of C (1-D grid in grouped order, for L2 reuse of
 * A's and B's panels); 8 warps of 64x32 (2 x 4); a warp's lanes form an 8 x 4 grid and a
 * lane owns 8x8 outputs as 2x2 sub-tiles of 4x4. K advances by 32: per step A's 128x32
 * panel is stored transposed (As[k][m]) and B's 32x128 panel as is (Bs[k][n]), so per k
 * a lane reads its 8 A and 8 B values as 4 float4 and makes 64 FMAs.
 *
 * Why each choice (bench/lab/gemm_lab.cu compared the alternatives on the H200; its
 * header and bench/RESULTS.md, "Figures from the code's comments", have the numbers):
 * - 8x8 per lane, at most 128 registers, 2 blocks an SM: while one block waits at its
 *   barrier the other computes (cuBLAS's own 128x256 tile of 8x16 lanes ran slower).
 * - cp.async, 2 stages: the copies need no staging registers, so 2 blocks an SM stay
 *   within 128 registers (register staging with the same pipeline was far slower), and
 *   they land while the FMAs run (3 stages ran slightly slower). A is copied element by
 *   element (4-byte cp.async) straight into its transposed place; its pitch of 132 floats
 *   puts a warp's 8 k x 4 m writes in 32 distinct banks (A kept M-major, read along k,
 *   was slower).
 * - Fragments double-buffered in registers: k+1's reads are issued before k's FMAs, and
 *   the step's barrier sits before its last k, so the next stage's first fragments load
 *   while that k's FMAs run.
 * - Interleaved lanes: lane bit 0 picks the row group and bit 1 the column group, so lane
 *   pairs share every A read (n, n^2) and every B read (n, n^1) and an LDS.128 takes 2
 *   shared-memory cycles instead of 4.
 * - "Snake" FMA order (rows outer, columns alternately forward and back): the same
 *   instructions, fewer dispatch stalls in ptxas's allocation (register-bank conflicts,
 *   presumably); the order alone moved the kernel by several points of cuBLAS.
 * - Whole tiles (M, N multiples of 128, K of 32, pointers 16-byte aligned) take a kernel
 *   with no guard or branch in its main loop (the guarded first versions were much
 *   slower); other sizes take the guarded one: out-of-range elements are zero-filled, so
 *   partial tiles need no special case, and B and C take 16-byte accesses where flags
 *   allow.
 * Results bit-identical to cuBLAS's at 4096^3 and 8192^3 and within the FP32 summation
 * bound of a CPU reference at odd sizes. Both kernels here compile (nvcc 13.0, sm_90 and
 * sm_90a) to machine code byte-identical to the lab's cpt_128x128x32_t256_8x8_s2_o3, so
 * the lab's figures for it are this code's.
 *
 * Fragile: both kernels sit at their 128-register cap. In the lab, trivial source changes
 * (a lambda, a struct for the fragments, a helper call) moved ptxas between 0 and 84 bytes
 * of spills, and the FMA order alone moved its speed. After any change here or an nvcc
 * upgrade: ptxas -v must still say 0 bytes of spills, and re-measure. */

#define SG_BM 128 /* block tile of C */
#define SG_BN 128
#define SG_BK 32 /* K per pipeline step */
#define SG_WM 64 /* warp tile */
#define SG_WN 32
#define SG_TM 8 /* lane tile */
#define SG_TN 8
#define SG_STAGES 2 /* cp.async ring */
#define SG_THREADS 256
#define SG_WARPS_N (SG_BN / SG_WN)
#define SG_LANES_M (SG_WM / SG_TM) /* 8 x 4 lanes a warp */
#define SG_LANES_N (SG_WN / SG_TN)
#define SG_A_PITCH (SG_BM + 4) /* As[k][m] */
#define SG_A_FLOATS (SG_BK * SG_A_PITCH)
#define SG_B_FLOATS (SG_BK * SG_BN) /* Bs[k][n] */
#define SG_STAGE_FLOATS (SG_A_FLOATS + SG_B_FLOATS)
#define SG_SMEM_BYTES (SG_STAGES * SG_STAGE_FLOATS * (int)sizeof(float)) /* 66,560 */
#define SG_A_KLANES 8                                /* A copies: threads along k of a row */
#define SG_A_ROWS (SG_THREADS / SG_A_KLANES)         /* A copies: rows per element step */
#define SG_B_CHUNKS (SG_BK * SG_BN / 4 / SG_THREADS) /* B copies: float4 per thread */

static_assert(SG_LANES_M * SG_LANES_N == 32, "32 lanes a warp");
static_assert((SG_BM / SG_WM) * SG_WARPS_N * 32 == SG_THREADS, "warps tile the block");
static_assert(SG_BM % SG_A_ROWS == 0 && SG_BK % SG_A_KLANES == 0, "A copies tile the panel");
static_assert(SG_B_CHUNKS * 4 * SG_THREADS == SG_BK * SG_BN, "whole float4 B chunks");

/* One stage's copies: A's 128x32 panel at (m0, k0) into as, transposed, and B's 32x128
 * panel at (k0, n0) into bs. A element (jr, jk) of thread t: row t/8 + 32 jr, k t%8 +
 * 8 jk (a warp reads 4 rows x 32 bytes, whole sectors); B chunk j: row t/32 + 8 j,
 * float4 t%32 (a warp reads 512 contiguous bytes). B falls back to 4-byte copies when
 * its rows are not whole float4 (flags). */
template <bool WHOLE>
__device__ __forceinline__ void copy_stage(float *as, float *bs, const float *__restrict__ A,
                                           const float *__restrict__ B, int M, int N, int K,
                                           int m0, int n0, int k0, int flags, int t) {
  constexpr int JR = SG_BM / SG_A_ROWS, JK = SG_BK / SG_A_KLANES;
  const int ar = t / SG_A_KLANES, ak = t % SG_A_KLANES;
#pragma unroll
  for (int jk = 0; jk < JK; jk++)
#pragma unroll
    for (int jr = 0; jr < JR; jr++) {
      const int row = ar + SG_A_ROWS * jr, k = ak + SG_A_KLANES * jk;
      float *dst = as + k * SG_A_PITCH + row;
      if constexpr (WHOLE) {
        cp_async4(dst, A + (size_t)(m0 + row) * K + k0 + k);
      } else {
        const bool ok = m0 + row < M && k0 + k < K;
        cp_async4(dst, ok ? A + (size_t)(m0 + row) * K + k0 + k : A, ok);
      }
    }
  constexpr int CPR = SG_BN / 4, RPB = SG_THREADS / CPR; /* B chunks per row, rows per j */
  if (WHOLE || (flags & GEMM_VEC_B)) {
    const int br = t / CPR, bc = 4 * (t % CPR);
#pragma unroll
    for (int j = 0; j < SG_B_CHUNKS; j++) {
      const int row = br + RPB * j;
      float *dst = bs + row * SG_BN + bc;
      if constexpr (WHOLE) {
        cp_async16(dst, B + (size_t)(k0 + row) * N + n0 + bc);
      } else {
        const bool ok = k0 + row < K && n0 + bc < N;
        cp_async16(dst, ok ? B + (size_t)(k0 + row) * N + n0 + bc : B, ok);
      }
    }
  } else {
#pragma unroll 4
    for (int j = 0; j < SG_BK * SG_BN / SG_THREADS; j++) {
      const int e = t + SG_THREADS * j, row = e / SG_BN, col = e % SG_BN;
      const bool ok = k0 + row < K && n0 + col < N;
      cp_async4(bs + row * SG_BN + col, ok ? B + (size_t)(k0 + row) * N + n0 + col : B, ok);
    }
  }
}

/* One k's fragments: the lane's 8 A values (rows a_off + 0..3 and + 32) and 8 B values
 * (columns b_off + 0..3 and + 16), as 4 float4 reads. (Plain arrays: a struct holding
 * them cost spills in the lab.) */
__device__ __forceinline__ void load_frag(float (&a)[SG_TM], float (&b)[SG_TN], const float *as,
                                          const float *bs, int k, int a_off, int b_off) {
#pragma unroll
  for (int s = 0; s < SG_TM / 4; s++) {
    const float4 v =
        *reinterpret_cast<const float4 *>(as + k * SG_A_PITCH + a_off + s * 4 * SG_LANES_M);
    a[4 * s] = v.x, a[4 * s + 1] = v.y, a[4 * s + 2] = v.z, a[4 * s + 3] = v.w;
  }
#pragma unroll
  for (int s = 0; s < SG_TN / 4; s++) {
    const float4 v =
        *reinterpret_cast<const float4 *>(bs + k * SG_BN + b_off + s * 4 * SG_LANES_N);
    b[4 * s] = v.x, b[4 * s + 1] = v.y, b[4 * s + 2] = v.z, b[4 * s + 3] = v.w;
  }
}

/* One k's 64 FMAs in snake order: rows outer, columns forward on even rows and backward
 * on odd ones (see the design note: this order measured fastest). */
__device__ __forceinline__ void fma_frag(const float (&a)[SG_TM], const float (&b)[SG_TN],
                                         float (&acc)[SG_TM][SG_TN]) {
#pragma unroll
  for (int i = 0; i < SG_TM; i++)
#pragma unroll
    for (int jj = 0; jj < SG_TN; jj++) {
      const int j = (i & 1) ? SG_TN - 1 - jj : jj;
      acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

/* The lane's tile into C, row by row as 2 float4 (or guarded 4-byte stores when C's
 * rows are not whole float4). (The row and column sums are written out as in the lab:
 * summed in another order, the sm_80 code differed.) */
template <bool WHOLE>
__device__ __forceinline__ void store_tile(float *__restrict__ C, const float (&acc)[SG_TM][SG_TN],
                                           int M, int N, int m0, int wm0, int lr, int n0,
                                           int b_off, int flags) {
  const bool vec_c = WHOLE || (flags & GEMM_VEC_C);
#pragma unroll
  for (int i = 0; i < SG_TM; i++) {
    const int row = m0 + wm0 + (i / 4) * 4 * SG_LANES_M + 4 * lr + (i % 4);
    if (!WHOLE && row >= M) continue;
#pragma unroll
    for (int s = 0; s < SG_TN / 4; s++) {
      const int col = n0 + b_off + s * 4 * SG_LANES_N;
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

/* FP32 SGEMM, mapping and reasons in the design note. Launch: 256 threads, a 1-D grid
 * of ceil(M/128) * ceil(N/128) blocks, SG_SMEM_BYTES of dynamic shared memory (the
 * launcher raises the limit). WHOLE: M % 128, N % 128, K % 32 are 0 and A, B, C
 * 16-byte aligned (flags unused); otherwise flags say which rows allow 16-byte
 * accesses (gemm_flags). Warp w: rows 64 (w/4), columns 32 (w%4) of the tile; lane l:
 * lr = l&1 | ((l>>2)&3)<<1, lc = (l>>1)&1 | (l>>4)<<1. */
template <bool WHOLE>
__global__ __launch_bounds__(SG_THREADS, 2) void gemm_best_kernel(const float *__restrict__ A,
                                                                  const float *__restrict__ B,
                                                                  float *__restrict__ C, int M,
                                                                  int N, int K, int flags) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) float smem[];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  int bm, bn;
  grouped_tile(blockIdx.x, (M + SG_BM - 1) / SG_BM, (N + SG_BN - 1) / SG_BN, GEMM_GROUP_M, &bm,
               &bn);
  const int m0 = bm * SG_BM, n0 = bn * SG_BN;
  const int wm0 = (w / SG_WARPS_N) * SG_WM, wn0 = (w % SG_WARPS_N) * SG_WN;
  constexpr int HM = SG_LANES_M / 2; /* bit 0 -> lr, bit 1 -> lc, bits 2..4 split */
  const int lr = (lane & 1) | (((lane >> 2) % HM) << 1);
  const int lc = ((lane >> 1) & 1) | (((lane >> 2) / HM) << 1);
  const int a_off = wm0 + 4 * lr, b_off = wn0 + 4 * lc;

  float acc[SG_TM][SG_TN];
#pragma unroll
  for (int i = 0; i < SG_TM; i++)
#pragma unroll
    for (int j = 0; j < SG_TN; j++) acc[i][j] = 0.f;
  const int steps = (K + SG_BK - 1) / SG_BK;

  /* The ring: stages 0..S-2 in flight before the loop; step s refills the slot of step
   * s-1 with step s+S-1 once every thread is past the barrier that follows its last
   * read of that slot. Commits are unconditional, so the group count stays in step with
   * s and wait_group<S-2> always means "step s+1 has landed". */
#pragma unroll
  for (int st = 0; st < SG_STAGES - 1; st++) {
    float *as = smem + st * SG_STAGE_FLOATS;
    if (st < steps)
      copy_stage<WHOLE>(as, as + SG_A_FLOATS, A, B, M, N, K, m0, n0, st * SG_BK, flags, t);
    cp_async_commit();
  }
  int rd = 0, wr = SG_STAGES - 1; /* ring slots of step s and of step s+S-1 */
  cp_async_wait<SG_STAGES - 2>();
  __syncthreads();
  float fa[2][SG_TM], fb[2][SG_TN]; /* fragments of k and k+1 */
  load_frag(fa[0], fb[0], smem, smem + SG_A_FLOATS, 0, a_off, b_off);
  for (int s = 0; s < steps; s++) {
#pragma unroll
    for (int k = 0; k < SG_BK; k++) {
      if (k == SG_BK - 1) { /* step s+1 landed and visible; step s-1's slot free */
        cp_async_wait<SG_STAGES - 2>();
        __syncthreads();
        rd = rd + 1 == SG_STAGES ? 0 : rd + 1;
      }
      /* k+1's fragments; after the barrier, the next step's k = 0 (unused after the last
       * step, and harmless: nothing writes that slot any more) */
      const float *as = smem + rd * SG_STAGE_FLOATS;
      load_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], as, as + SG_A_FLOATS, (k + 1) % SG_BK, a_off,
                b_off);
      if (k == 0) {
        if (s + SG_STAGES - 1 < steps) {
          float *was = smem + wr * SG_STAGE_FLOATS;
          copy_stage<WHOLE>(was, was + SG_A_FLOATS, A, B, M, N, K, m0, n0,
                            (s + SG_STAGES - 1) * SG_BK, flags, t);
        }
        cp_async_commit();
        wr = wr + 1 == SG_STAGES ? 0 : wr + 1;
      }
      fma_frag(fa[k & 1], fb[k & 1], acc);
    }
  }
  cp_async_wait<0>(); /* only empty groups can remain; leave none behind */
  store_tile<WHOLE>(C, acc, M, N, m0, wm0, lr, n0, b_off, flags);
#endif
}

/* ---- plan and launcher ---- */

static bool whole_tiles(int m, int n, int k) {
  return m % SG_BM == 0 && n % SG_BN == 0 && k % SG_BK == 0;
}

static void plan_shape(bool whole, int m, int n, struct cuda_plan *p) {
  if (whole)
    cuda_plan_set(p, KFUNC(gemm_best_kernel<true>), "gemm_best_kernel<true>",
                  "128x128 C tile per 256 threads, warp 64x32, 8x8 per lane; K by 32, 2-stage "
                  "cp.async, whole tiles: no guards");
  else
    cuda_plan_set(p, KFUNC(gemm_best_kernel<false>), "gemm_best_kernel<false>",
                  "128x128 C tile per 256 threads, warp 64x32, 8x8 per lane; K by 32, 2-stage "
                  "cp.async, guarded edges");
  p->block = dim3(SG_THREADS);
  p->grid = dim3(gemm_blocks(m, n, SG_BM, SG_BN));
  p->dyn_smem_bytes = SG_SMEM_BYTES;
}

/* Picks the kernel by the sizes alone: the plan has no pointers, so it assumes 16-byte
 * aligned ones, as every device allocation is; gemm_best_launch takes the guarded
 * kernel for pointers that are not. -1 with why below compute capability 8.0 or with
 * less opt-in shared memory per block than SG_SMEM_BYTES (the run is unavailable). */
int gemm_best_plan(int m, int n, int k, struct cuda_plan *p, char *why, size_t why_len) {
  plan_shape(whole_tiles(m, n, k), m, n, p);
  int dev = 0, major = 0, optin = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, why_len, "gemm best: cannot read the device's attributes");
    return -1;
  }
  if (major < 8 || optin < SG_SMEM_BYTES) {
    snprintf(why, why_len,
             "gemm best needs compute capability 8.0 (cp.async) and %d bytes of shared "
             "memory per block (this device: %d.x, %d)",
             SG_SMEM_BYTES, major, optin);
    return -1;
  }
  return 0;
}

/* Both kernels' dynamic shared memory is above the default 48 KiB: raised once per
 * kernel and device (bit d of smem_raised[whole]), before the first launch there. */
static std::atomic<unsigned long long> smem_raised[2];

static cudaError_t raise_smem(const struct cuda_plan *p, bool whole) {
  return smem_raise_once(&smem_raised[whole], p->func, p->dyn_smem_bytes, false);
}

cudaError_t gemm_best_launch(const float *d_a, const float *d_b, float *d_c, int m, int n,
                             int k, cudaStream_t s) {
  struct cuda_plan p;
  char why[160];
  if (gemm_best_plan(m, n, k, &p, why, sizeof why) != 0) return cudaErrorInvalidConfiguration;
  const bool whole =
      whole_tiles(m, n, k) && aligned16(d_a) && aligned16(d_b) && aligned16(d_c);
  if (!whole) plan_shape(false, m, n, &p); /* the plan assumed aligned pointers */
  cudaError_t e = raise_smem(&p, whole);
  if (e != cudaSuccess) return e;
  int flags = whole ? 0 : gemm_flags(d_a, d_b, d_c, n, k);
  void *args[] = {&d_a, &d_b, &d_c, &m, &n, &k, &flags};
  return cuda_plan_launch(&p, args, s);
}
