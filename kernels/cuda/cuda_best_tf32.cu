/* The gemm's `tf32` variant: the same product on the tensor cores in TF32 with FP32
 * accumulation (mma.sync m16n8k8, ldmatrix, a 3-stage cp.async pipeline). */
#include "kernels/cuda/cuda_best.cuh"

#include <stdio.h>
#include <atomic>

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

/* ---- plan and launcher ---- */

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

