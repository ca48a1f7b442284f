/* The gemm's `tf32` variant: the same product on the tensor cores in TF32 with FP32
 * accumulation. Built for sm_90a and run on a cc 9.0 device (the H200), every size takes
 * a Hopper kernel (wgmma fed by TMA, on A and a transposed copy of B) at the tile width
 * and split-K tf32_pick_for chooses; a build or a device without sm_90a takes mma.sync
 * m16n8k8 (ldmatrix, a 3-stage cp.async pipeline). */
#include "kernels/core/cuda/cp_async.cuh"
#include "kernels/gemm/gemm.cuh"
#include "kernels/transpose/transpose.cuh"

#include <stdio.h>
#ifdef GPULAB_CUDA_SM90A
#include <cuda.h>         /* CUtensorMap and its enums: types only, nothing links -lcuda */
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled_v12000 */
#endif

/* ---- mma.sync: every size, every device of compute capability 8.0 and up ---- */

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

/* FP32 bits rounded to TF32 for mma: adding half a TF32 ulp (bit 12) and letting the
 * tensor cores ignore the 13 low bits rounds to nearest, ties away, like cvt.rna for
 * finite values, in one integer add (cvt.rna costs a compare and a predicated add
 * per element: 4.5 ALU instructions per mma here). An infinite input becomes NaN. */
__device__ __forceinline__ unsigned to_tf32(unsigned bits) { return bits + 0x1000u; }

/* Stage s of the pipeline: A's 128x32 panel at k-tile kt into as[128][36] and B's
 * 32x128 panel into bs[32][136], as cp.async 16-byte chunks (vec; consecutive
 * threads take consecutive chunks of a row) or, when a row is not a whole number of
 * float4, 4-byte ones. Outside the matrices the chunks are zero-filled. */
__device__ __forceinline__ void tf32_load_stage(float *as, float *bs, const float *A,
                                                const float *B, int M, int N, int K, int m0, int n0,
                                                int k0, int flags) {
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
              : "r"(af[mi][0]), "r"(af[mi][1]), "r"(af[mi][2]), "r"(af[mi][3]), "r"(bf[ni][0]),
                "r"(bf[ni][1]));
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

#ifdef GPULAB_CUDA_SM90A

/* ---- wgmma: Hopper (sm_90a), every size ----
 *
 * Why: mma.sync stays far below cuBLAS TF32 on the H200 because every warp loads its
 * own fragments through registers and issues small mma; wgmma has a warpgroup (128
 * threads) multiply operands straight from shared memory, and TMA fills that memory
 * with one instruction per tile, so the issue slots go to the tensor cores (on the
 * H200 at 8192^3: mma.sync about a third of cuBLAS TF32, this kernel 97% alone and 86%
 * with the transpose of B below).
 *
 * Operands: wgmma's TF32 form reads both operands K-major (its transposing modes exist
 * for 16-bit types only). A [M,K] row-major is; B [K,N] is not, so B is first
 * transposed into a scratch Bt [N,K] (at row pitch kp), which the product's time
 * includes. C = A Bt^T. TMA needs row pitches of a multiple of 16 bytes, and rows that
 * start 16 bytes into a 32-byte sector ran clearly slower (every kernel, cuBLAS's too, at
 * 2500^3: 0.83 of cuBLAS TF32 at a pitch of k, 1.05 at 32 floats), so where K % 8 != 0
 * A is copied to pitch kp = K rounded up to 32 floats and Bt written at that pitch
 * (tf32_pick_for's rule).
 *
 * Shape: a CTA owns a 128 x BN tile of C (BN from the pick: 256, 224, 192, 128, 64), with
 * k-tiles of 32 floats = 128 bytes, one row of the 128-byte swizzle. 384 threads = 3
 * warpgroups: thread 0 of warpgroup 0 issues the TMA copies, warpgroups 1 and 2 each
 * compute 64 rows of the tile with 4 wgmma m64nBNk8 per k-tile into BN/2 FP32
 * accumulators per thread (no spills; 2 CTAs an SM at BN = 64). Persistent: CTA b takes
 * work units b, b + grid, ..., unit u = tile + tiles z for split z (k in [z kchunk,
 * min(K, (z+1) kchunk)), kchunk a multiple of 32), tiles in grouped order (grouped_tile),
 * so the CTAs working at once share A and Bt panels in L2.
 *
 * Sizes: the tensor maps' dimensions are the true M, N, K, so TMA reads the boxes that
 * cross them as zeros (FLOAT_OOB_FILL_NONE; a box's transaction bytes are the whole box
 * either way) and a partial tile multiplies zeros there; the epilogue stores only rows
 * < M and columns < N (float2 where N is even and C 8-byte aligned, else 4-byte stores).
 * Split z writes C + z M N, a workspace the split-K pass (gemm_splitk_launch) adds in z
 * order.
 *
 * Pipeline: a ring of 4 stages (A 128x32, Bt BNx32) with two mbarriers each. full[s]:
 * the producer's arrive.expect_tx plus the bytes TMA delivers. empty[s]: once
 * wgmma.wait_group shows a k-tile's multiplies are done, lane 0 of each consumer warp
 * arrives (8 arrivals), and the producer may refill the stage. The consumers keep one
 * k-tile's wgmma in flight while the next is issued.
 *
 * Layout: TMA with CU_TENSOR_MAP_SWIZZLE_128B stores row r's 16-byte chunk j at chunk
 * j ^ (r % 8) of a 1024-byte aligned tile, which is wgmma's K-major 128-byte swizzle;
 * a descriptor (desc_k128) then needs only the start address, the 1024-byte stride
 * between 8-row groups and the mode; each k8 step starts 32 bytes further.
 *
 * Precision: the tensor cores read the top 19 bits of each FP32 operand, i.e. they
 * truncate to TF32 where mma.sync rounds (measured bias about -0.7 * 2^-10 * |C|);
 * kernels/gemm/gemm.c's TF32 rule allows for it.
 *
 * Every instance (BN x 4 stages) and the two copy kernels ran and passed on the H200
 * with these launch shapes before they moved here. */

#define WG_BM 128
#define WG_BK 32 /* floats: 128 bytes, one swizzle row */
#define WG_STAGES 4
#define WG_THREADS 384      /* producer + 2 consumer warpgroups */
#define WG_CONSUMER_WARPS 8 /* arrivals that release a stage */
/* A real wait lasts microseconds; one this long is a deadlock (slack for debuggers
 * and sanitizers, which slow kernels a hundredfold). */
#define WG_HANG_NS 10000000000ull

template <int BN, int STAGES>
struct wg_shape {
  static constexpr int BM = WG_BM, BK = WG_BK, THREADS = WG_THREADS;
  static constexpr int A_BYTES = BM * BK * 4, B_BYTES = BN * BK * 4;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  /* the stages from the first 1024-aligned byte (up to 1 KiB skipped), then 2 mbarriers
   * per stage */
  static constexpr size_t SMEM = (size_t)STAGES * STAGE_BYTES + 1024 + 16 * STAGES;
  /* 2 CTAs an SM for the narrow tile: 85 registers a thread at most */
  static constexpr int MINB = BN <= 64 ? 2 : 1;
  static_assert(STAGE_BYTES % 1024 == 0, "stages stay 1024-byte aligned (128-byte swizzle)");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) /* device code for sm_90a only */

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/* One arrival that also announces `bytes` of TMA transactions for the current phase. */
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/* true once the phase with this parity has completed */
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
/* Waits for the phase; past WG_HANG_NS it traps, so a broken pipeline fails its launch
 * (and the backend reports the device unhealthy) instead of holding the lane forever. */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
  const uint64_t t0 = global_ns();
  while (!mbar_try_wait(bar, parity))
    if (global_ns() - t0 > WG_HANG_NS) __trap();
}

/* TMA: the box at (c0 = k, c1 = row) of map into shared memory at dst; its bytes
 * complete on the mbarrier (announced there by arrive.expect_tx). */
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
/* Keeps the compiler from moving accumulator reads above the wait that completes them. */
template <int N>
__device__ __forceinline__ void fence_acc(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* Shared-memory descriptor of a K-major tile in the 128-byte swizzle layout: rows of
 * 128 bytes, 8-row groups 1024 bytes apart, tile base 1024-aligned (base offset 0). */
__device__ __forceinline__ uint64_t desc_k128(uint32_t saddr) {
  uint64_t d = (uint64_t)((saddr & 0x3FFFF) >> 4); /* bits 0-13: start address >> 4 */
  d |= (uint64_t)1 << 16;                          /* bits 16-29: LBO, unused here: 1 */
  d |= (uint64_t)(1024 >> 4) << 32;                /* bits 32-45: SBO = 1024 bytes */
  d |= (uint64_t)1 << 62;                          /* bits 62-63: 1 = 128-byte swizzle */
  return d;
}

#include "kernels/gemm/wgmma_tf32.cuh"

/* Thread 0 sets up the ring's barriers (full: the producer's arrival and TMA's bytes;
 * empty: one arrival a consumer warp), visible to all threads after the barrier. */
template <int STAGES>
__device__ __forceinline__ void wg_init_barriers(uint32_t full0, uint32_t empty0) {
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; s++) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, WG_CONSUMER_WARPS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
}

/* The producer's loop (one thread): for each k-tile of each of this CTA's units (unit u
 * = tile + tiles z, the tiles of tiles_r x tiles_c in grouped order), waits until the
 * consumers have released stage s, announces STAGE_BYTES on full[s] and has
 * load(dst, full, k, r, c) issue the stage's TMA copies for k-tile k of tile (r, c). */
template <int STAGES, int STAGE_BYTES, typename Load>
__device__ __forceinline__ void ring_produce(uint32_t base, uint32_t full0, uint32_t empty0,
                                             int tiles_r, int tiles_c, int units, int K, int kchunk,
                                             Load load) {
  const int tiles = tiles_r * tiles_c;
  int s = 0;
  uint32_t phase = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const int tile = u % tiles, z = u / tiles;
    int r, c;
    grouped_tile(tile, tiles_r, tiles_c, GEMM_GROUP_M, &r, &c);
    const int kb = z * kchunk, kts = (min(kchunk, K - kb) + WG_BK - 1) / WG_BK;
    for (int kt = 0; kt < kts; kt++) {
      mbar_wait(empty0 + 8 * s, phase ^ 1u); /* a fresh barrier passes parity 1 at once */
      const uint32_t full = full0 + 8 * s;
      mbar_arrive_expect_tx(full, STAGE_BYTES);
      load(base + s * STAGE_BYTES, full, kb + kt * WG_BK, r, c);
      if (++s == STAGES) s = 0, phase ^= 1u;
    }
  }
}

/* The Bt form's producer: A's 128x32 box and Bt's BNx32 box a stage. */
template <int BN, int STAGES>
__device__ __forceinline__ void wg_produce(const CUtensorMap *tm_a, const CUtensorMap *tm_bt,
                                           uint32_t base, uint32_t full0, uint32_t empty0,
                                           int tiles_m, int tiles_n, int units, int K, int kchunk) {
  using S = wg_shape<BN, STAGES>;
  ring_produce<STAGES, S::STAGE_BYTES>(base, full0, empty0, tiles_m, tiles_n, units, K, kchunk,
                                       [&](uint32_t dst, uint32_t full, int k, int bm, int bn) {
                                         tma_load_2d(dst, tm_a, full, k, bm * S::BM);
                                         tma_load_2d(dst + S::A_BYTES, tm_bt, full, k, bn * BN);
                                       });
}

/* C[col], C[col+1] of one row, each only inside the matrix; vec2: N even and C 8-byte
 * aligned, so both are in or out together. */
__device__ __forceinline__ void wg_store2(float *row_p, int col, int N, float x, float y,
                                          bool vec2) {
  if (vec2 && col + 1 < N) {
    *reinterpret_cast<float2 *>(row_p + col) = make_float2(x, y);
  } else {
    if (col < N) row_p[col] = x;
    if (col + 1 < N) row_p[col + 1] = y;
  }
}

/* Consumer warpgroup c (0 or 1): rows 64c..64c+63 of each unit's tile. Per k-tile, once
 * full[s] completes: 4 wgmma (k8 steps 32 bytes apart in the 128-byte rows), one
 * commit; then the previous k-tile's group is waited for and its stage released. At
 * the unit's end: drain, release, store. Accumulator layout of m64nNk8: warp w holds
 * rows 16w..16w+15; lane (g = lane/4, t = lane%4) holds for each 8-column group j
 * (row g, columns 8j+2t, 8j+2t+1) in d[4j], d[4j+1] and row g+8 in d[4j+2], d[4j+3]. */
template <int BN, int STAGES>
__device__ __forceinline__ void wg_consume(float *C, int M, int N, uint32_t base, uint32_t full0,
                                           uint32_t empty0, int tiles_m, int tiles_n, int units,
                                           int K, int kchunk, bool vec2) {
  using S = wg_shape<BN, STAGES>;
  const int c = (threadIdx.x >> 7) - 1, w = (threadIdx.x & 127) >> 5, lane = threadIdx.x & 31;
  const uint32_t a_off = (uint32_t)c * 64 * 128; /* 64 rows of 128 bytes */
  const int tiles = tiles_m * tiles_n;
  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; i++) d[i] = 0.f;
  int s = 0;
  uint32_t phase = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const int tile = u % tiles, z = u / tiles;
    int bm, bn;
    grouped_tile(tile, tiles_m, tiles_n, GEMM_GROUP_M, &bm, &bn);
    const int kb = z * kchunk, kts = (min(kchunk, K - kb) + S::BK - 1) / S::BK;
    int prev = 0;
    for (int kt = 0; kt < kts; kt++) {
      mbar_wait(full0 + 8 * s, phase);
      __syncwarp(); /* wgmma is .sync.aligned: the lanes may leave the wait apart */
      const uint32_t stage = base + s * S::STAGE_BYTES, a = stage + a_off, b = stage + S::A_BYTES;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < S::BK / 8; kk++)
        wgmma_tf32<BN>::mma(d, desc_k128(a + 32 * kk), desc_k128(b + 32 * kk), kt > 0 || kk > 0);
      wgmma_commit();
      if (kt > 0) {
        wgmma_wait<1>(); /* k-tile kt-1's wgmma are done reading its stage */
        if (lane == 0) mbar_arrive(empty0 + 8 * prev);
      }
      prev = s;
      if (++s == STAGES) s = 0, phase ^= 1u;
    }
    wgmma_wait<0>();
    fence_acc(d);
    if (lane == 0) mbar_arrive(empty0 + 8 * prev);
    float *out = C + (size_t)z * M * N;
    const int row = bm * S::BM + 64 * c + 16 * w + (lane >> 2);
    const int col0 = bn * BN + 2 * (lane & 3);
    float *r0 = out + (size_t)row * N, *r8 = out + (size_t)(row + 8) * N;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
      const int col = col0 + 8 * j;
      if (row < M) wg_store2(r0, col, N, d[4 * j], d[4 * j + 1], vec2);
      if (row + 8 < M) wg_store2(r8, col, N, d[4 * j + 2], d[4 * j + 3], vec2);
    }
  }
}

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */

/* C (+ z M N) = A[M,K] Bt[N,K]^T per work unit (the design is above). tm_a: A as a {K, M}
 * FP32 map with 32 x 128 boxes; tm_bt: Bt as {K, N} with 32 x BN boxes; both with the
 * 128-byte swizzle and row pitches of a multiple of 16 bytes. Launch: 384 threads,
 * wg_shape::SMEM bytes of dynamic shared memory, at most one CTA per unit (units =
 * ceil(M/128) ceil(N/BN) splits); K >= 1; vec2: N even and C 8-byte aligned. */
template <int BN, int STAGES>
__global__ void __launch_bounds__(WG_THREADS, (wg_shape<BN, STAGES>::MINB))
    gemm_tf32_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a,
                           const __grid_constant__ CUtensorMap tm_bt, float *__restrict__ C, int M,
                           int N, int K, int kchunk, int splits, int vec2) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char wg_smem[];
  const uint32_t base = (smem_addr(wg_smem) + 1023u) & ~1023u;
  const uint32_t full0 = base + STAGES * wg_shape<BN, STAGES>::STAGE_BYTES;
  const uint32_t empty0 = full0 + 8 * STAGES;
  const int tiles_m = (M + WG_BM - 1) / WG_BM, tiles_n = (N + BN - 1) / BN;
  const int units = tiles_m * tiles_n * splits;
  wg_init_barriers<STAGES>(full0, empty0);
  /* Branch on the warpgroup first: with `tid >= 128 ... else if (tid == 0)` ptxas
   * saw the wgmma on a divergent path and serialized them (warning C7518). */
  const int warpgroup = threadIdx.x >> 7;
  if (warpgroup == 0) {
    if (threadIdx.x == 0)
      wg_produce<BN, STAGES>(&tm_a, &tm_bt, base, full0, empty0, tiles_m, tiles_n, units, K,
                             kchunk);
  } else {
    wg_consume<BN, STAGES>(C, M, N, base, full0, empty0, tiles_m, tiles_n, units, K, kchunk,
                           vec2 != 0);
  }
#elif defined(__CUDA_ARCH__)
  /* Code for another architecture (a build for 80 or 90 beside 90a): the host launches
   * this kernel only on a cc 9.0 device, which runs the sm_90a code. Should this body
   * run anyway, fail the launch rather than leave C unwritten. */
  __trap();
#endif
}

/* ---- wgmma with B in place: C^T = B^T A^T (sm_90a) ----
 *
 * Why: the form above transposes B at every launch (at 2048^3 about an eighth of the
 * job). wgmma reads its A operand from registers too, and registers hold any layout:
 * with the product turned around, D = C^T = B^T A^T, D's rows are C's columns, B's
 * row-major k x n panel gives D's A fragments by plain shared-memory loads, and A
 * [M,K] row-major is the K-major B operand as it is. A CTA owns a 128 (n) x BW (m) tile
 * of D, the same work and shared memory as a 128 x BW tile above.
 *
 * Loads: per k-tile TMA brings A's BW x 32 box (tm_a: {K, M}, 128-byte swizzle, as Bt
 * above) and B's 32 (k) x 128 (n) panel as four 32 x 32 boxes (tm_b: {N, K}, 128-byte
 * rows of n, swizzled the same way: 16-byte chunk j of row k at chunk j ^ (k % 8)).
 * Consumer warpgroup c multiplies D rows 64c..64c+63, boxes 2c and 2c+1. Its warp w's
 * fragment rows (g, g+8: h = 0, 1) are the columns n = (g & 3) + 4 (2 (w & 1) + h) +
 * 16 (g / 4) of box 2c + w / 2: for each of a lane's 4 words (k = t, t+4) the 32 lanes
 * then hit 32 different banks (chunk (2 (w&1) + h + 4 (g/4)) ^ k differs in bit 2 by g /
 * 4 and in bits 0-1 by t). A k-tile's fragments are 16 words a lane; k-tile kt's stay
 * untouched until its wgmma are done (wgmma reads registers as it runs), so k-tiles
 * alternate between two buffers: kt's is refilled at kt + 2, after wgmma.wait_group
 * showed kt's multiplies done.
 *
 * Registers: BW/2 accumulators and 32 fragment words: more than a third of the
 * register file at BW = 256, so the producer warpgroup gives its registers up
 * (setmaxnreg to 40) and the consumers take them (232); one CTA an SM.
 *
 * Epilogue: accumulator d[4j + 2h + e] is D(row, 8j + 2t + e), C[m0 + 8j + 2t + e][n(h)],
 * stored as 4-byte words (16 bytes of a row per 4 lanes; the other half of each 32-byte
 * sector comes from h = 1). Rows and columns past M and N are not stored; TMA read them
 * as zeros. Pipeline, split-K, persistence and the grouped order as above. */

#define CT_TILE_N 128 /* D rows (columns of C) a CTA: two consumer warpgroups of 64 */
#define CT_BOX 32     /* B's boxes: 32 rows of k x 32 floats of n (128 bytes) */

template <int BW, int STAGES>
struct ct_shape {
  static constexpr int A_BYTES = BW * WG_BK * 4;
  static constexpr int B_BOX_BYTES = CT_BOX * CT_BOX * 4;
  static constexpr int B_BYTES = (CT_TILE_N / CT_BOX) * B_BOX_BYTES;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr size_t SMEM = (size_t)STAGES * STAGE_BYTES + 1024 + 16 * STAGES;
  static_assert(STAGE_BYTES % 1024 == 0, "stages stay 1024-byte aligned (128-byte swizzle)");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
/* volatile: the word changes with the stage's contents, which the compiler cannot see */
__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

/* The C^T form's producer: A's BW x 32 box and B's four 32 x 32 boxes a stage. */
template <int BW, int STAGES>
__device__ __forceinline__ void ct_produce(const CUtensorMap *tm_a, const CUtensorMap *tm_b,
                                           uint32_t base, uint32_t full0, uint32_t empty0,
                                           int tiles_n, int tiles_m, int units, int K, int kchunk) {
  using S = ct_shape<BW, STAGES>;
  ring_produce<STAGES, S::STAGE_BYTES>(base, full0, empty0, tiles_n, tiles_m, units, K, kchunk,
                                       [&](uint32_t dst, uint32_t full, int k, int bn, int bm) {
                                         tma_load_2d(dst, tm_a, full, k, bm * BW);
#pragma unroll
                                         for (int j = 0; j < CT_TILE_N / CT_BOX; j++)
                                           tma_load_2d(dst + S::A_BYTES + j * S::B_BOX_BYTES, tm_b,
                                                       full, bn * CT_TILE_N + CT_BOX * j, k);
                                       });
}

/* One k-tile of a consumer: wait for stage s, load its 16 fragment words into fr (off:
 * the lane's byte offsets in the B panel at k8 step 0; a step is 8 rows, 1024 bytes on),
 * 4 wgmma, commit; then k-tile kt-1's group is waited for and its stage released. */
template <int BW, int STAGES>
__device__ __forceinline__ void ct_ktile(float (&d)[BW / 2], uint32_t (&fr)[4][4],
                                         const uint32_t (&off)[4], uint32_t base, uint32_t full0,
                                         uint32_t empty0, int kt, int lane, int &s, uint32_t &phase,
                                         int &prev) {
  using S = ct_shape<BW, STAGES>;
  mbar_wait(full0 + 8 * s, phase);
  __syncwarp(); /* wgmma is .sync.aligned: the lanes may leave the wait apart */
  const uint32_t a = base + s * S::STAGE_BYTES, b = a + S::A_BYTES;
#pragma unroll
  for (int kk = 0; kk < WG_BK / 8; kk++)
#pragma unroll
    for (int r = 0; r < 4; r++) fr[kk][r] = lds32(b + off[r] + 1024 * kk);
  wgmma_fence(); /* the fragments' registers were written since the last wgmma */
#pragma unroll
  for (int kk = 0; kk < WG_BK / 8; kk++)
    wgmma_tf32<BW>::mma_rs(d, fr[kk], desc_k128(a + 32 * kk), kt > 0 || kk > 0);
  wgmma_commit();
  if (kt > 0) {
    wgmma_wait<1>(); /* k-tile kt-1's wgmma are done with its stage and its fragments */
    if (lane == 0) mbar_arrive(empty0 + 8 * prev);
  }
  prev = s;
  if (++s == STAGES) s = 0, phase ^= 1u;
}

/* Consumer warpgroup c (0 or 1): D rows 64c..64c+63 of each unit's tile. */
template <int BW, int STAGES>
__device__ __forceinline__ void ct_consume(float *C, int M, int N, uint32_t base, uint32_t full0,
                                           uint32_t empty0, int tiles_n, int tiles_m, int units,
                                           int K, int kchunk) {
  using S = ct_shape<BW, STAGES>;
  const int c = (threadIdx.x >> 7) - 1, w = (threadIdx.x & 127) >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  uint32_t off[4]; /* word r: h = r & 1, k = t + 4 (r >> 1) */
#pragma unroll
  for (int r = 0; r < 4; r++) {
    const int h = r & 1, k = t + 4 * (r >> 1), chunk = 2 * (w & 1) + h + 4 * (g >> 2);
    off[r] = (2 * c + (w >> 1)) * S::B_BOX_BYTES + k * 128 + ((chunk ^ k) << 4) + (g & 3) * 4;
  }
  const int tiles = tiles_n * tiles_m;
  float d[BW / 2];
#pragma unroll
  for (int i = 0; i < BW / 2; i++) d[i] = 0.f;
  uint32_t fr0[4][4], fr1[4][4];
  int s = 0, prev = 0;
  uint32_t phase = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const int tile = u % tiles, z = u / tiles;
    int bn, bm;
    grouped_tile(tile, tiles_n, tiles_m, GEMM_GROUP_M, &bn, &bm);
    const int kb = z * kchunk, kts = (min(kchunk, K - kb) + WG_BK - 1) / WG_BK;
    for (int kt = 0; kt < kts; kt += 2) { /* even k-tiles' fragments in fr0, odd in fr1 */
      ct_ktile<BW, STAGES>(d, fr0, off, base, full0, empty0, kt, lane, s, phase, prev);
      if (kt + 1 < kts)
        ct_ktile<BW, STAGES>(d, fr1, off, base, full0, empty0, kt + 1, lane, s, phase, prev);
    }
    wgmma_wait<0>();
    fence_acc(d);
    if (lane == 0) mbar_arrive(empty0 + 8 * prev);
    float *out = C + (size_t)z * M * N;
    /* n of fragment rows g (h = 0); g + 8 (h = 1) is 4 columns on */
    const int n = bn * CT_TILE_N + 64 * c + 32 * (w >> 1) + 8 * (w & 1) + 16 * (g >> 2) + (g & 3);
    const int m = bm * BW + 2 * t;
#pragma unroll
    for (int j = 0; j < BW / 8; j++)
#pragma unroll
      for (int e = 0; e < 2; e++) {
        if (m + 8 * j + e >= M) continue;
        float *row = out + (size_t)(m + 8 * j + e) * N;
        if (n < N) row[n] = d[4 * j + e];
        if (n + 4 < N) row[n + 4] = d[4 * j + 2 + e];
      }
  }
}

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */

/* C (+ z M N) = (B^T A^T)^T per work unit (the design is above). tm_a: A as a {K, M}
 * FP32 map with 32 x BW boxes; tm_b: B as {N, K} with 32 x 32 boxes; both with the
 * 128-byte swizzle. Launch: 384 threads, ct_shape::SMEM bytes of dynamic shared memory,
 * at most one CTA per unit (units = ceil(N/128) ceil(M/BW) splits); K % 8 == 0 and
 * N % 8 == 0 (tf32_ct_fits). */
template <int BW, int STAGES>
__global__ void __launch_bounds__(WG_THREADS, 1)
    gemm_tf32_ct_kernel(const __grid_constant__ CUtensorMap tm_a,
                        const __grid_constant__ CUtensorMap tm_b, float *__restrict__ C, int M,
                        int N, int K, int kchunk, int splits) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char ct_smem[];
  const uint32_t base = (smem_addr(ct_smem) + 1023u) & ~1023u;
  const uint32_t full0 = base + STAGES * ct_shape<BW, STAGES>::STAGE_BYTES;
  const uint32_t empty0 = full0 + 8 * STAGES;
  const int tiles_n = (N + CT_TILE_N - 1) / CT_TILE_N, tiles_m = (M + BW - 1) / BW;
  const int units = tiles_n * tiles_m * splits;
  wg_init_barriers<STAGES>(full0, empty0);
  if (threadIdx.x >> 7 == 0) { /* one branch a role (setmaxnreg; and see the kernel above) */
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0)
      ct_produce<BW, STAGES>(&tm_a, &tm_b, base, full0, empty0, tiles_n, tiles_m, units, K, kchunk);
  } else {
    setmaxnreg_inc<232>();
    ct_consume<BW, STAGES>(C, M, N, base, full0, empty0, tiles_n, tiles_m, units, K, kchunk);
  }
#elif defined(__CUDA_ARCH__)
  __trap(); /* as the kernel above */
#endif
}

/* ---- the operands' copies ---- */

/* Ap[m][k] = A[m][k] for k < K, 0 up to ldp: thread per element of Ap, grid-stride. */
__global__ void tf32_pad_rows_kernel(const float *__restrict__ A, float *__restrict__ Ap, int M,
                                     int K, int ldp) {
  const size_t total = (size_t)M * ldp, stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int m = (int)(i / ldp), k = (int)(i % ldp);
    Ap[i] = k < K ? A[(size_t)m * K + k] : 0.f;
  }
}

/* Bt[n][k] = B[k][n] at row pitch ldt, zero for K <= k < ldt: the lecture's padded
 * 32x33 tile, block 32x8 over a 32x32 tile of B (grid ceil(N/32) x ceil(ldt/32)), each
 * thread 4 elements; reads and writes coalesced. */
__global__ void tf32_transpose_pitch_kernel(const float *__restrict__ B, float *__restrict__ Bt,
                                            int K, int N, int ldt) {
  __shared__ float tile[32][33];
  const int n0 = blockIdx.x * 32, k0 = blockIdx.y * 32;
  for (int j = threadIdx.y; j < 32; j += 8) {
    const int k = k0 + j, n = n0 + threadIdx.x;
    tile[j][threadIdx.x] = k < K && n < N ? B[(size_t)k * N + n] : 0.f;
  }
  __syncthreads();
  for (int j = threadIdx.y; j < 32; j += 8) {
    const int n = n0 + j, k = k0 + threadIdx.x;
    if (n < N && k < ldt) Bt[(size_t)n * ldt + k] = k < K ? tile[threadIdx.x][j] : 0.f;
  }
}

/* cuTensorMapEncodeTiled, looked up once through the runtime: gpulabd links the CUDA
 * runtime statically and not libcuda, whose symbol a direct call would need. Version
 * 12000 is the ABI of PFN_cuTensorMapEncodeTiled_v12000. NULL when the driver lacks it. */
static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(void) {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void *fn = NULL;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                     cudaEnableDefault, &found);
#else
    cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault,
                                            &found);
#endif
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError(); /* not sticky; the size then takes mma.sync */
      fn = NULL;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

/* Fills map for a rows x cols row-major FP32 matrix at row pitch `pitch` floats whose
 * cols (the K of both operands) are contiguous: 32 x box_rows boxes, which TMA writes in
 * the 128-byte swizzle and reads as zeros past the last row and column. False when the
 * driver refuses it (p not 16-byte aligned, a pitch not a multiple of 16 bytes) or has
 * no encoder. A host call of about a microsecond, so maps are made per launch: the
 * scratch's address is new at every launch. */
static bool tensor_map(CUtensorMap *map, const float *p, int rows, int cols, int pitch,
                       int box_rows) {
  PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  const cuuint64_t row_bytes[1] = {(cuuint64_t)pitch * sizeof(float)};
  const cuuint32_t box[2] = {WG_BK, (cuuint32_t)box_rows}, steps[2] = {1, 1};
  return encode && encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float *>(p), dims,
                          row_bytes, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

#endif /* GPULAB_CUDA_SM90A */

/* ---- plan and launcher ---- */

/* What the plan needs to know of the current device. */
struct tf32_device {
  int major, minor, smem_optin, sms;
};

/* From the limits read once per device (cuda_device_limits_get): the launcher asks the
 * driver nothing. 0, or -1 when the device cannot be asked. */
static int tf32_device_read(struct tf32_device *d) {
  struct cuda_device_limits l;
  if (cuda_device_limits_get(&l) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  d->major = l.major;
  d->minor = l.minor;
  d->smem_optin = l.smem_optin;
  d->sms = l.sms;
  return 0;
}

static void mma_plan(int m, int n, struct cuda_plan *p) {
  cuda_plan_set(p, KFUNC(gemm_tf32_kernel), "gemm_tf32_kernel",
                "128x128 C tile per 256 threads, warp 64x32 of mma.m16n8k8 tf32; 3-stage "
                "cp.async");
  p->block = dim3(TC_THREADS);
  p->grid = dim3(gemm_blocks(m, n, TC_BM, TC_BN));
  p->dyn_smem_bytes = TC_SMEM_BYTES;
}

#ifdef GPULAB_CUDA_SM90A
/* Whether the wgmma kernel runs here: a cc 9.0 device (its sm_90a code runs on no other),
 * room for the widest instance's shared memory, and the driver's tensor-map encoder. */
static bool wgmma_available(const struct tf32_device *d) {
  return d->major == 9 && d->minor == 0 &&
         (size_t)d->smem_optin >= wg_shape<256, WG_STAGES>::SMEM && tensor_map_encoder() != NULL;
}

/* The configuration m x n x k gets on this device, under the scratch a job counts for it
 * (gemm_tf32_scratch_floats: the pick at GEMM_PICK_COUNT_SMS): this device's pick within
 * the counted split-K workspace, or the counted pick itself where this one would need
 * more (the Bt form's copy of B where the count took the C^T form). */
static struct tf32_pick pick_here(int m, int n, int k, int sms) {
  const struct tf32_pick counted = tf32_pick_for(m, n, k, GEMM_PICK_COUNT_SMS, UINT64_MAX);
  const struct tf32_pick here = tf32_pick_for(m, n, k, sms, tf32_pick_ws_floats(&counted, m, n));
  return tf32_pick_scratch_floats(&here, m, n) <= tf32_pick_scratch_floats(&counted, m, n)
             ? here
             : counted;
}

/* Each instance's shared memory is above the default 48 KiB: raised once per instance and
 * device (bit d), when it is first planned there. */
template <int BN>
static std::atomic<unsigned long long> wg_smem_raised{0};

template <int BN>
static cudaError_t wg_plan_bn(const struct tf32_pick *pk, int m, int n, int sms,
                              struct cuda_plan *p, const char *label) {
  using S = wg_shape<BN, WG_STAGES>;
  char name[64];
  snprintf(name, sizeof name, "gemm_tf32_wgmma_kernel<%d>", BN);
  cuda_plan_set(p, KFUNC((gemm_tf32_wgmma_kernel<BN, WG_STAGES>)), name, label);
  const long long units = (long long)ceil_div(m, WG_BM) * ceil_div(n, BN) * pk->splits;
  const long long resident = (long long)tf32_tile_cfgs[pk->tile].ctas_per_sm * sms;
  p->grid = dim3((unsigned)(units < resident ? units : resident)); /* persistent */
  p->block = dim3(WG_THREADS);
  p->dyn_smem_bytes = S::SMEM;
  return smem_raise_once(&wg_smem_raised<BN>, p->func, S::SMEM, false);
}

template <int BW>
static std::atomic<unsigned long long> ct_smem_raised{0};

template <int BW>
static cudaError_t ct_plan_bw(const struct tf32_pick *pk, int m, int n, int sms,
                              struct cuda_plan *p, const char *label) {
  using S = ct_shape<BW, WG_STAGES>;
  char name[64];
  snprintf(name, sizeof name, "gemm_tf32_ct_kernel<%d>", BW);
  cuda_plan_set(p, KFUNC((gemm_tf32_ct_kernel<BW, WG_STAGES>)), name, label);
  const long long units = (long long)ceil_div(n, CT_TILE_N) * ceil_div(m, BW) * pk->splits;
  p->grid = dim3((unsigned)(units < sms ? units : sms)); /* persistent, one CTA an SM */
  p->block = dim3(WG_THREADS);
  p->dyn_smem_bytes = S::SMEM;
  return smem_raise_once(&ct_smem_raised<BW>, p->func, S::SMEM, false);
}

/* The pick's kernel (its copies and split-K pass go around it): cudaSuccess,
 * cudaErrorInvalidConfiguration for a tile this file lacks, or the raise's error. */
static cudaError_t wg_plan(const struct tf32_pick *pk, int m, int n, int k, int sms,
                           struct cuda_plan *p) {
  char label[192];
  tf32_pick_describe(pk, m, n, k, sms, label, sizeof label);
  if (pk->tile < 0 || pk->tile >= TF32_N_TILES) return cudaErrorInvalidConfiguration;
  if (pk->ct) {
    if (!tf32_tile_cfgs[pk->tile].ct || !tf32_ct_fits(m, n, k))
      return cudaErrorInvalidConfiguration;
    switch (tf32_tile_cfgs[pk->tile].bn) {
    case 256: return ct_plan_bw<256>(pk, m, n, sms, p, label);
    case 224: return ct_plan_bw<224>(pk, m, n, sms, p, label);
    case 192: return ct_plan_bw<192>(pk, m, n, sms, p, label);
    case 128: return ct_plan_bw<128>(pk, m, n, sms, p, label);
    }
    return cudaErrorInvalidConfiguration;
  }
  switch (tf32_tile_cfgs[pk->tile].bn) {
  case 256: return wg_plan_bn<256>(pk, m, n, sms, p, label);
  case 224: return wg_plan_bn<224>(pk, m, n, sms, p, label);
  case 192: return wg_plan_bn<192>(pk, m, n, sms, p, label);
  case 128: return wg_plan_bn<128>(pk, m, n, sms, p, label);
  case 64: return wg_plan_bn<64>(pk, m, n, sms, p, label);
  }
  return cudaErrorInvalidConfiguration;
}
#endif

int gemm_tf32_plan(int m, int n, int k, struct cuda_plan *p, char *why, size_t why_len) {
  struct tf32_device d;
  if (tf32_device_read(&d) != 0) {
    cuda_plan_set(p, NULL, "gemm tf32", "");
    snprintf(why, why_len, "gemm tf32: cannot read the device's attributes");
    return -1;
  }
#ifdef GPULAB_CUDA_SM90A
  if (wgmma_available(&d) && m > 0 && n > 0 && k > 0) {
    const struct tf32_pick pk = pick_here(m, n, k, d.sms);
    const cudaError_t e = wg_plan(&pk, m, n, k, d.sms, p);
    if (e == cudaSuccess) return 0;
    (void)cudaGetLastError();
    snprintf(why, why_len, "gemm tf32: configuration %s: %s", pk.name, cudaGetErrorString(e));
    return -1;
  }
#endif
  mma_plan(m, n, p);
  if (d.major < 8 || (size_t)d.smem_optin < TC_SMEM_BYTES) {
    snprintf(why, why_len,
             "gemm tf32 needs compute capability 8.0 and %zu bytes of shared memory per "
             "block (this device: %d.x, %d)",
             TC_SMEM_BYTES, d.major, d.smem_optin);
    return -1;
  }
  return 0;
}

/* The mma.sync kernel uses more than the default 48 KiB of dynamic shared memory: the
 * limit is raised once per device (smem_raise_once), before the first launch. */
static std::atomic<unsigned long long> mma_smem_raised{0};

#ifdef GPULAB_CUDA_SM90A
static size_t round32(size_t f) { return (f + 31) / 32 * 32; }

/* B's operand for the Bt form: B transposed into bt at pitch kp (and A copied to ap at
 * pitch kp where copy_a). */
static cudaError_t bt_prepare(const struct tf32_pick *pk, const float *d_a, const float *d_b,
                              float *bt, float *ap, int m, int n, int k, int sms, cudaStream_t s) {
  if (!pk->copy_a) return transpose_best_launch(d_b, bt, k, n, s); /* B is k x n */
  tf32_pad_rows_kernel<<<8 * sms, 256, 0, s>>>(d_a, ap, m, k, pk->kp);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  tf32_transpose_pitch_kernel<<<dim3(ceil_div(n, 32), ceil_div(pk->kp, 32)), dim3(32, 8), 0, s>>>(
      d_b, bt, k, n, pk->kp);
  return cudaGetLastError();
}

/* The wgmma path of pick pk on s: one scratch block stream-ordered from the pool
 * (tf32_pick_scratch_floats: in the Bt form Bt and A's copy, then the split-K
 * workspace; in the C^T form the workspace only, where splits > 1), the Bt form's B
 * transposed into it (and A copied at pitch kp), the kernel, the split-K pass, the
 * scratch freed after them. The C^T form reads A and B in place.
 * Stream-ordered allocation is legal while s is being captured (CUDA 11.4+):
 * cudaMallocAsync and cudaFreeAsync become the graph's own allocation and free nodes, and
 * the allocation's address stays fixed for the graph's life, so the tensor maps baked
 * into the captured launch hold at every replay. Returns false when the path cannot start
 * (A or, in the C^T form, B not 16-byte aligned where read in place, no memory for the
 * scratch, a map refused), having left nothing in flight but a freed scratch: the caller
 * then runs mma.sync. Otherwise true, with the first error in *err. */
static bool wgmma_launch(const struct tf32_pick *pk, const float *d_a, const float *d_b, float *d_c,
                         int m, int n, int k, int sms, cudaStream_t s, cudaError_t *err) {
  const bool ct = pk->ct;
  if (cuda_is_default_stream(s) || (!pk->copy_a && !aligned16(d_a)) || (ct && !aligned16(d_b)))
    return false;
  struct cuda_plan p;
  if (wg_plan(pk, m, n, k, sms, &p) != cudaSuccess) {
    (void)cudaGetLastError(); /* a sticky error shows again in the fallback's launch */
    return false;
  }
  const size_t scratch_floats = tf32_pick_scratch_floats(pk, m, n);
  float *scratch = NULL;
  if (scratch_floats &&
      cudaMallocAsync((void **)&scratch, scratch_floats * sizeof(float), s) != cudaSuccess) {
    (void)cudaGetLastError(); /* out of memory is not sticky; mma.sync needs no scratch */
    return false;
  }
  float *bt = scratch, *ap = bt + (ct ? 0 : round32((size_t)n * pk->kp));
  float *ws = ap + (pk->copy_a ? round32((size_t)m * pk->kp) : 0);
  const int bn = tf32_tile_cfgs[pk->tile].bn;
  CUtensorMap tm_a, tm_b;
  const bool mapped = ct ? tensor_map(&tm_a, d_a, m, k, k, bn) &&
                               tensor_map(&tm_b, d_b, k, n, n, CT_BOX)
                         : tensor_map(&tm_a, pk->copy_a ? ap : d_a, m, k, pk->kp, WG_BM) &&
                               tensor_map(&tm_b, bt, n, k, pk->kp, bn);
  if (!mapped) {
    if (scratch) (void)cudaFreeAsync(scratch, s);
    (void)cudaGetLastError();
    return false;
  }
  cudaError_t e = ct ? cudaSuccess : bt_prepare(pk, d_a, d_b, bt, ap, m, n, k, sms, s);
  float *out = pk->splits > 1 ? ws : d_c;
  int kchunk = pk->kchunk, splits = pk->splits;
  int vec2 = n % 2 == 0 && ((uintptr_t)out & 7) == 0; /* the Bt form's float2 stores */
  if (e == cudaSuccess) {
    /* the C^T kernel takes the first eight (cudaLaunchKernel reads one a parameter) */
    void *args[] = {&tm_a, &tm_b, &out, &m, &n, &k, &kchunk, &splits, &vec2};
    e = cuda_plan_launch(&p, args, s);
  }
  if (e == cudaSuccess && pk->splits > 1)
    e = gemm_splitk_launch(ws, d_c, (size_t)m * n, pk->splits, sms, s);
  const cudaError_t freed = scratch ? cudaFreeAsync(scratch, s) : cudaSuccess; /* after them */
  *err = e != cudaSuccess ? e : freed;
  return true;
}
#endif

cudaError_t gemm_tf32_launch_pick(const struct tf32_pick *pk, const float *d_a, const float *d_b,
                                  float *d_c, int m, int n, int k, cudaStream_t s) {
#ifdef GPULAB_CUDA_SM90A
  struct tf32_device d;
  if (tf32_device_read(&d) != 0) return cudaErrorInvalidConfiguration;
  if (m <= 0 || n <= 0 || k <= 0 || !wgmma_available(&d)) return cudaErrorNotSupported;
  cudaError_t e = cudaSuccess;
  return wgmma_launch(pk, d_a, d_b, d_c, m, n, k, d.sms, s, &e) ? e : cudaErrorNotSupported;
#else
  (void)pk, (void)d_a, (void)d_b, (void)d_c, (void)m, (void)n, (void)k, (void)s;
  return cudaErrorNotSupported;
#endif
}

/* The plan's kernel on s: the wgmma path where it can start, else mma.sync. */
cudaError_t gemm_tf32_launch(const float *d_a, const float *d_b, float *d_c, int m, int n, int k,
                             cudaStream_t s) {
  struct tf32_device d;
  if (tf32_device_read(&d) != 0) return cudaErrorInvalidConfiguration;
#ifdef GPULAB_CUDA_SM90A
  if (wgmma_available(&d) && m > 0 && n > 0 && k > 0) {
    const struct tf32_pick pk = pick_here(m, n, k, d.sms);
    cudaError_t e = cudaSuccess;
    if (wgmma_launch(&pk, d_a, d_b, d_c, m, n, k, d.sms, s, &e)) return e;
  }
#endif
  struct cuda_plan p;
  mma_plan(m, n, &p);
  if (d.major < 8 || (size_t)d.smem_optin < TC_SMEM_BYTES) return cudaErrorInvalidConfiguration;
  cudaError_t e = smem_raise_once(&mma_smem_raised, p.func, p.dyn_smem_bytes, false);
  if (e != cudaSuccess) return e;
  int flags = gemm_flags(d_a, d_b, d_c, n, k);
  if (n % 2 == 0 && ((uintptr_t)d_c & 7) == 0) flags |= GEMM_VEC_C; /* float2 stores */
  void *args[] = {&d_a, &d_b, &d_c, &m, &n, &k, &flags};
  return cuda_plan_launch(&p, args, s);
}
