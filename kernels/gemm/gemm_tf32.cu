/* The gemm's `tf32` variant: the same product on the tensor cores in TF32 with FP32
 * accumulation. Built for sm_90a and run on a cc 9.0 device (the H200), sizes that tile
 * exactly take a Hopper kernel (wgmma fed by TMA, on A and a transposed copy of B);
 * everything else takes mma.sync m16n8k8 (ldmatrix, a 3-stage cp.async pipeline). */
#include "kernels/gemm/gemm.cuh"
#include "kernels/transpose/transpose.cuh"

#include <stdio.h>
#ifdef GPULAB_CUDA_SM90A
#include <cuda.h>          /* CUtensorMap and its enums: types only, nothing links -lcuda */
#include <cudaTypedefs.h>  /* PFN_cuTensorMapEncodeTiled_v12000 */
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

#ifdef GPULAB_CUDA_SM90A

/* ---- wgmma: Hopper (sm_90a), M and N multiples of 128, K of 32 ----
 *
 * Why: mma.sync stays far below cuBLAS TF32 on the H200 because every warp loads its
 * own fragments through registers and issues small mma; wgmma has a warpgroup (128
 * threads) multiply operands straight from shared memory, and TMA fills that memory
 * with one instruction per tile, so the issue slots go to the tensor cores
 * (bench/lab/tf32_lab.cu measured both; bench/RESULTS.md has the figures).
 *
 * Operands: wgmma's TF32 form reads both operands K-major (its transposing modes exist
 * for 16-bit types only). A [M,K] row-major is; B [K,N] is not, so B is first
 * transposed into a scratch Bt [N,K] by transpose_best_launch, which the product's time
 * includes. C = A Bt^T.
 *
 * Shape: a CTA owns a 128x256 tile of C (128x128 tiles need 4/3 the L2-to-SM bytes
 * per flop, and measured clearly slower), with k-tiles of 32 floats = 128
 * bytes, one row of the 128-byte swizzle. 384 threads = 3 warpgroups: thread 0 of
 * warpgroup 0 issues the TMA copies, warpgroups 1 and 2 each compute 64 rows of the
 * tile with 4 wgmma m64n256k8 per k-tile into 128 FP32 accumulators per thread (155
 * registers, no spills; setmaxnreg would buy nothing). Persistent: one CTA per SM
 * (193 KiB of shared memory), CTA b takes tiles b, b + grid, ... in grouped order
 * (grouped_tile), so the CTAs working at once share A and Bt panels in L2.
 *
 * Pipeline: a ring of 4 stages of 48 KiB (A 128x32, Bt 256x32) with two mbarriers
 * each. full[s]: the producer's arrive.expect_tx plus the bytes TMA delivers. empty[s]:
 * once wgmma.wait_group shows a k-tile's multiplies are done, lane 0 of each consumer
 * warp arrives (8 arrivals), and the producer may refill the stage. The consumers keep
 * one k-tile's wgmma in flight while the next is issued.
 *
 * Layout: TMA with CU_TENSOR_MAP_SWIZZLE_128B stores row r's 16-byte chunk j at chunk
 * j ^ (r % 8) of a 1024-byte aligned tile, which is wgmma's K-major 128-byte swizzle;
 * a descriptor (desc_k128) then needs only the start address, the 1024-byte stride
 * between 8-row groups and the mode; each k8 step starts 32 bytes further.
 *
 * Precision: the tensor cores read the top 19 bits of each FP32 operand, i.e. they
 * truncate to TF32 where mma.sync rounds (measured bias about -0.7 * 2^-10 * |C|);
 * kernels/gemm/gemm.c's TF32 rule allows for it. Tails: a half last N tile (N % 256 == 128)
 * reads zeros past N from TMA and stores nothing there; other tails take mma.sync. */

#define WG_BM 128
#define WG_BN 256
#define WG_BK 32                                  /* floats: 128 bytes, one swizzle row */
#define WG_STAGES 4
#define WG_THREADS 384                            /* producer + 2 consumer warpgroups */
#define WG_CONSUMER_WARPS 8                       /* arrivals that release a stage */
#define WG_A_BYTES (WG_BM * WG_BK * 4)            /* 16 KiB */
#define WG_B_BYTES (WG_BN * WG_BK * 4)            /* 32 KiB */
#define WG_STAGE_BYTES (WG_A_BYTES + WG_B_BYTES)
/* the stages from the first 1024-aligned byte (up to 1 KiB skipped), then 2 mbarriers
 * per stage */
#define WG_SMEM_BYTES ((size_t)WG_STAGES * WG_STAGE_BYTES + 1024 + 16 * WG_STAGES)
/* A real wait lasts microseconds; one this long is a deadlock (slack for debuggers
 * and sanitizers, which slow kernels a hundredfold). */
#define WG_HANG_NS 10000000000ull

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

/* d (+)= A * B for a 64x256 slice, k = 8: A and B from shared memory through their
 * descriptors; accumulate = 0 overwrites d (the first k step of a tile). */
#define WG_ACC4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define WG_ACC16(i) WG_ACC4(i), WG_ACC4(i + 4), WG_ACC4(i + 8), WG_ACC4(i + 12)
__device__ __forceinline__ void wgmma_m64n256k8(float (&d)[128], uint64_t desc_a,
                                                uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, "
      "%110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
      "%123, %124, %125, %126, %127}, %128, %129, p, 1, 1;\n}\n"
      : WG_ACC16(0), WG_ACC16(16), WG_ACC16(32), WG_ACC16(48), WG_ACC16(64), WG_ACC16(80),
        WG_ACC16(96), WG_ACC16(112)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#undef WG_ACC16
#undef WG_ACC4

/* The producer (one thread): for each k-tile of each of this CTA's tiles, waits until
 * the consumers have released stage s, then has TMA fill it with A's 128x32 box and
 * Bt's 256x32 box, 48 KiB announced on full[s]. */
__device__ __forceinline__ void wgmma_produce(const CUtensorMap *tm_a, const CUtensorMap *tm_bt,
                                              uint32_t base, uint32_t full0, uint32_t empty0,
                                              int tiles_m, int tiles_n, int k_tiles) {
  int s = 0;
  uint32_t phase = 0;
  for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
    int bm, bn;
    grouped_tile(tile, tiles_m, tiles_n, GEMM_GROUP_M, &bm, &bn);
    for (int kt = 0; kt < k_tiles; kt++) {
      mbar_wait(empty0 + 8 * s, phase ^ 1u); /* a fresh barrier passes parity 1 at once */
      const uint32_t full = full0 + 8 * s, dst = base + s * WG_STAGE_BYTES;
      mbar_arrive_expect_tx(full, WG_STAGE_BYTES);
      tma_load_2d(dst, tm_a, full, kt * WG_BK, bm * WG_BM);
      tma_load_2d(dst + WG_A_BYTES, tm_bt, full, kt * WG_BK, bn * WG_BN);
      if (++s == WG_STAGES) s = 0, phase ^= 1u;
    }
  }
}

/* Consumer warpgroup c (0 or 1): rows 64c..64c+63 of each tile. Per k-tile, once
 * full[s] completes: 4 wgmma (k8 steps 32 bytes apart in the 128-byte rows), one
 * commit; then the previous k-tile's group is waited for and its stage released. At
 * the tile's end: drain, release, store. Accumulator layout of m64nNk8: warp w holds
 * rows 16w..16w+15; lane (g = lane/4, t = lane%4) holds for each 8-column group j
 * (row g, columns 8j+2t, 8j+2t+1) in d[4j], d[4j+1] and row g+8 in d[4j+2], d[4j+3]. */
__device__ __forceinline__ void wgmma_consume(float *C, int N, uint32_t base, uint32_t full0,
                                              uint32_t empty0, int tiles_m, int tiles_n,
                                              int k_tiles) {
  const int c = (threadIdx.x >> 7) - 1, w = (threadIdx.x & 127) >> 5, lane = threadIdx.x & 31;
  const uint32_t a_off = (uint32_t)c * 64 * 128; /* 64 rows of 128 bytes */
  float d[WG_BN / 2];
#pragma unroll
  for (int i = 0; i < WG_BN / 2; i++) d[i] = 0.f;
  int s = 0;
  uint32_t phase = 0;
  for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
    int bm, bn;
    grouped_tile(tile, tiles_m, tiles_n, GEMM_GROUP_M, &bm, &bn);
    int prev = 0;
    for (int kt = 0; kt < k_tiles; kt++) {
      mbar_wait(full0 + 8 * s, phase);
      __syncwarp(); /* wgmma is .sync.aligned: the lanes may leave the wait apart */
      const uint32_t stage = base + s * WG_STAGE_BYTES, a = stage + a_off, b = stage + WG_A_BYTES;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < WG_BK / 8; kk++)
        wgmma_m64n256k8(d, desc_k128(a + 32 * kk), desc_k128(b + 32 * kk), kt > 0 || kk > 0);
      wgmma_commit();
      if (kt > 0) {
        wgmma_wait<1>(); /* k-tile kt-1's wgmma are done reading its stage */
        if (lane == 0) mbar_arrive(empty0 + 8 * prev);
      }
      prev = s;
      if (++s == WG_STAGES) s = 0, phase ^= 1u;
    }
    wgmma_wait<0>();
    fence_acc(d);
    if (lane == 0) mbar_arrive(empty0 + 8 * prev);
    const int row = bm * WG_BM + 64 * c + 16 * w + (lane >> 2), col0 = bn * WG_BN + 2 * (lane & 3);
    float *r0 = C + (size_t)row * N, *r8 = C + (size_t)(row + 8) * N;
#pragma unroll
    for (int j = 0; j < WG_BN / 8; j++) {
      const int col = col0 + 8 * j;
      if (col < N) { /* false only in a half last tile */
        *reinterpret_cast<float2 *>(r0 + col) = make_float2(d[4 * j], d[4 * j + 1]);
        *reinterpret_cast<float2 *>(r8 + col) = make_float2(d[4 * j + 2], d[4 * j + 3]);
      }
    }
  }
}

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */

/* C[M,N] = A[M,K] Bt[N,K]^T, C row-major (the design is above). tm_a: A as a {K, M}
 * FP32 map with 32 x 128 boxes; tm_bt: Bt as {K, N} with 32 x 256 boxes; both with the
 * 128-byte swizzle. Launch: WG_THREADS threads, WG_SMEM_BYTES of dynamic shared
 * memory, at most one CTA per tile. Needs M % 128 == 0, N % 128 == 0, K % 32 == 0,
 * K > 0 and C 8-byte aligned. */
__global__ void __launch_bounds__(WG_THREADS, 1)
    gemm_tf32_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a,
                           const __grid_constant__ CUtensorMap tm_bt, float *__restrict__ C,
                           int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char wg_smem[];
  const uint32_t base = (smem_addr(wg_smem) + 1023u) & ~1023u;
  const uint32_t full0 = base + WG_STAGES * WG_STAGE_BYTES, empty0 = full0 + 8 * WG_STAGES;
  const int tiles_m = M / WG_BM, tiles_n = (N + WG_BN - 1) / WG_BN, k_tiles = K / WG_BK;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < WG_STAGES; s++) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, WG_CONSUMER_WARPS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  /* Branch on the warpgroup first: with `tid >= 128 ... else if (tid == 0)` ptxas
   * saw the wgmma on a divergent path and serialized them (warning C7518). */
  const int warpgroup = threadIdx.x >> 7;
  if (warpgroup == 0) {
    if (threadIdx.x == 0)
      wgmma_produce(&tm_a, &tm_bt, base, full0, empty0, tiles_m, tiles_n, k_tiles);
  } else {
    wgmma_consume(C, N, base, full0, empty0, tiles_m, tiles_n, k_tiles);
  }
#elif defined(__CUDA_ARCH__)
  /* Code for another architecture (a build for 80 or 90 beside 90a): the host launches
   * this kernel only on a cc 9.0 device, which runs the sm_90a code. Should this body
   * run anyway, fail the launch rather than leave C unwritten. */
  __trap();
#endif
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

/* Fills map for a rows x cols row-major FP32 matrix whose cols (the K of both operands)
 * are contiguous: 32 x box_rows boxes, which TMA writes in the 128-byte swizzle and
 * reads as zeros past the last row. False when the driver refuses it (p not 16-byte
 * aligned, a row not a multiple of 16 bytes) or has no encoder. A host call of about a
 * microsecond, so maps are made per launch: Bt's address is new at every launch. */
static bool tensor_map(CUtensorMap *map, const float *p, int rows, int cols, int box_rows) {
  PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  const cuuint64_t row_bytes[1] = {(cuuint64_t)cols * sizeof(float)};
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

static int tf32_device_read(struct tf32_device *d) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&d->major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&d->minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&d->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
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
/* Whether the wgmma kernel takes m x n x k here, pointers aside (gemm_tf32_launch
 * checks those): sizes it tiles exactly, a cc 9.0 device (its sm_90a code runs on no
 * other), room for its shared memory, and the driver's tensor-map encoder. */
static bool wgmma_applies(int m, int n, int k, const struct tf32_device *d) {
  return m > 0 && n > 0 && k > 0 && m % WG_BM == 0 && n % 128 == 0 && k % WG_BK == 0 &&
         d->major == 9 && d->minor == 0 && (size_t)d->smem_optin >= WG_SMEM_BYTES &&
         tensor_map_encoder() != NULL;
}

static void wgmma_plan(int m, int n, int sms, struct cuda_plan *p) {
  cuda_plan_set(p, KFUNC(gemm_tf32_wgmma_kernel), "gemm_tf32_wgmma_kernel",
                "B^T to scratch; persistent 128x256 C tiles: TMA producer + 2 wgmma m64n256k8 "
                "warpgroups");
  const unsigned tiles = gemm_blocks(m, n, WG_BM, WG_BN);
  p->block = dim3(WG_THREADS);
  p->grid = dim3(tiles < (unsigned)sms ? tiles : (unsigned)sms); /* one CTA per SM */
  p->dyn_smem_bytes = WG_SMEM_BYTES;
}
#endif

int gemm_tf32_plan(int m, int n, int k, struct cuda_plan *p, char *why, size_t why_len) {
  struct tf32_device d;
  if (tf32_device_read(&d) != 0) {
    snprintf(why, why_len, "gemm tf32: cannot read the device's attributes");
    return -1;
  }
#ifdef GPULAB_CUDA_SM90A
  if (wgmma_applies(m, n, k, &d)) {
    wgmma_plan(m, n, d.sms, p);
    return 0;
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

/* Both kernels use more than the default 48 KiB of dynamic shared memory: the limit
 * is raised once per kernel and device (smem_raise_once), before the first launch. */
static std::atomic<unsigned long long> mma_smem_raised{0};

#ifdef GPULAB_CUDA_SM90A
static std::atomic<unsigned long long> wgmma_smem_raised{0};

/* The wgmma path of plan p on s: a scratch Bt (N x K floats) allocated stream-ordered,
 * B transposed into it, the kernel, the scratch freed after it. Stream-ordered
 * allocation is legal while s is being captured (CUDA 11.4+): cudaMallocAsync and
 * cudaFreeAsync become the graph's own allocation and free nodes, and the allocation's
 * address stays fixed for the graph's life, so the tensor maps baked into the captured
 * launch hold at every replay. Returns false when the path cannot start (a default
 * stream, A or C not 16-byte aligned, no memory for the scratch, a map refused), having
 * left nothing in flight but a freed scratch: the caller then runs mma.sync. Otherwise
 * true, with the first error in *err. */
static bool wgmma_launch(const struct cuda_plan *p, const float *d_a, const float *d_b,
                         float *d_c, int m, int n, int k, cudaStream_t s, cudaError_t *err) {
  CUtensorMap tm_a, tm_bt;
  if (s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread) return false;
  if (!aligned16(d_a) || !aligned16(d_c) || !tensor_map(&tm_a, d_a, m, k, WG_BM)) return false;
  if (smem_raise_once(&wgmma_smem_raised, p->func, p->dyn_smem_bytes, false) != cudaSuccess) {
    (void)cudaGetLastError(); /* a sticky error shows again in the fallback's launch */
    return false;
  }
  float *d_bt = NULL;
  if (cudaMallocAsync((void **)&d_bt, (size_t)k * n * sizeof(float), s) != cudaSuccess) {
    (void)cudaGetLastError(); /* out of memory is not sticky; mma.sync needs no scratch */
    return false;
  }
  if (!tensor_map(&tm_bt, d_bt, n, k, WG_BN)) {
    (void)cudaFreeAsync(d_bt, s);
    (void)cudaGetLastError();
    return false;
  }
  cudaError_t e = transpose_best_launch(d_b, d_bt, k, n, s); /* B is k x n */
  if (e == cudaSuccess) {
    void *args[] = {&tm_a, &tm_bt, &d_c, &m, &n, &k};
    e = cuda_plan_launch(p, args, s);
  }
  cudaError_t freed = cudaFreeAsync(d_bt, s); /* stream-ordered: after the kernel */
  *err = e != cudaSuccess ? e : freed;
  return true;
}
#endif

/* The plan's kernel on s: the wgmma path where it can start, else mma.sync. Unlike the
 * other launchers this one allocates (the wgmma path's scratch, stream-ordered on s, so
 * it still never synchronizes; exp_spec_bytes counts it in a job's memory). */
cudaError_t gemm_tf32_launch(const float *d_a, const float *d_b, float *d_c, int m, int n,
                             int k, cudaStream_t s) {
  struct cuda_plan p;
  char why[160];
  if (gemm_tf32_plan(m, n, k, &p, why, sizeof why) != 0) return cudaErrorInvalidConfiguration;
#ifdef GPULAB_CUDA_SM90A
  if (p.func == KFUNC(gemm_tf32_wgmma_kernel)) {
    cudaError_t e = cudaSuccess;
    if (wgmma_launch(&p, d_a, d_b, d_c, m, n, k, s, &e)) return e;
    mma_plan(m, n, &p); /* the plan's device checks hold for mma.sync a fortiori */
  }
#endif
  cudaError_t e = smem_raise_once(&mma_smem_raised, p.func, p.dyn_smem_bytes, false);
  if (e != cudaSuccess) return e;
  int flags = gemm_flags(d_a, d_b, d_c, n, k);
  if (n % 2 == 0 && ((uintptr_t)d_c & 7) == 0) flags |= GEMM_VEC_C; /* float2 stores */
  void *args[] = {&d_a, &d_b, &d_c, &m, &n, &k, &flags};
  return cuda_plan_launch(&p, args, s);
}
