/* The transpose's `best` variant, its kernel picked by shape (transpose_pick.h): 64x64
 * tiles moved as float4 both ways where rows are whole float4; a sector-exact kernel
 * (4-byte coalesced loads, B written in whole 32-byte sectors) where they are not and
 * where columns are few; a gather for few rows and a float4 copy for vectors. Every
 * kernel here ran and passed on the H200 with these template parameters and launch
 * shapes before it moved here. */
#include "kernels/core/cuda/launch.cuh"
#include "kernels/transpose/transpose.cuh"
#include "kernels/transpose/transpose_pick.h"
#include "kernels/transpose/transpose_sec.cuh"

#include <stdio.h>

/* ---- transpose: A is m x n, B = A^T is n x m, both row-major ---- */

#define TB_TILE 64         /* rows and columns of A per block */
#define TB_Q (TB_TILE / 4) /* float4 per tile row */
#define TB_GROUP 32        /* tile rows per group of the launch order */

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
  pdl_wait(); /* launched as the PDL dependant of the kernel before it (which may write a) */
  const int t = threadIdx.y * 32 + threadIdx.x;
  const int bc = t & 15, br = t >> 4;
  int bm, bn;
  grouped_tile(blockIdx.x, (m + TB_TILE - 1) / TB_TILE, (n + TB_TILE - 1) / TB_TILE, TB_GROUP, &bm,
               &bn);
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

/* ---- gather: few rows (2 <= m < 32) ----
 * Thread t of block b makes the float4 chunks q = (4b + c) * 256 + t (c < 4) of B's flat
 * array (a warp writes 512 contiguous bytes per c): element p = 4q + e is B[j][i] with
 * j = p / m, i = p % m, read as A[i*n + j] (4-byte loads through L1: a warp's reads are a
 * few A rows). One division per chunk. Launch: 256 threads, ceil(m n / 4096) blocks; b
 * 16-byte aligned. */
__global__ __launch_bounds__(256) void transpose_gather_kernel(const float *__restrict__ a,
                                                               float *__restrict__ b, int m,
                                                               int n) {
  pdl_wait(); /* as transpose_best_kernel's */
  const unsigned long long total = (unsigned long long)m * n;
#pragma unroll
  for (int c = 0; c < 4; c++) {
    const unsigned long long q = ((unsigned long long)blockIdx.x * 4 + c) * 256 + threadIdx.x;
    const unsigned long long p = 4 * q;
    if (p >= total) break;
    unsigned long long j, i;
    if (total <= 0xFFFFFFFFull) {
      const unsigned jj = (unsigned)p / (unsigned)m;
      j = jj, i = (unsigned)p - jj * (unsigned)m;
    } else {
      j = p / m, i = p - j * m;
    }
    float v[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
      v[e] = p + e < total ? __ldg(a + i * n + j) : 0.f;
      if (++i == (unsigned long long)m) i = 0, j++;
    }
    if (p + 4 <= total) {
      __stwb(reinterpret_cast<float4 *>(b + p), make_float4(v[0], v[1], v[2], v[3]));
    } else {
      for (int e = 0; e < 4; e++)
        if (p + e < total) b[p + e] = v[e];
    }
  }
}

/* ---- copy4: vectors (m == 1 or n == 1: B has A's bytes) ----
 * Grid-stride float4 copy, four loads in flight before the stores (cuda_measure.cu's
 * copy kernel), plus the n % 4 tail by the first threads. Launch: 256 threads, at most
 * 8 blocks an SM; both pointers 16-byte aligned. */
__global__ void transpose_copy4_kernel(const float *__restrict__ src, float *__restrict__ dst,
                                       size_t n) {
  pdl_wait(); /* as transpose_best_kernel's */
  const size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
  const float4 *s4 = reinterpret_cast<const float4 *>(src);
  float4 *d4 = reinterpret_cast<float4 *>(dst);
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n % 4) dst[4 * n4 + i] = src[4 * n4 + i];
  for (; i + 3 * stride < n4; i += 4 * stride) {
    float4 x = s4[i], y = s4[i + stride], z = s4[i + 2 * stride], w = s4[i + 3 * stride];
    d4[i] = x, d4[i + stride] = y, d4[i + 2 * stride] = z, d4[i + 3 * stride] = w;
  }
  for (; i < n4; i += stride) d4[i] = s4[i];
}

/* ---- plans and launchers ---- */

/* The kernel and launch shape of `kind` at m x n (vec: the tile kernel's float4 path). */
static int plan_kind(enum transpose_kind kind, const char *why_picked, int m, int n, int sms,
                     struct cuda_plan *p) {
  const unsigned long long total = (unsigned long long)m * n;
  switch (kind) {
  case TRANSPOSE_KIND_TILE:
    cuda_plan_set(p, KFUNC(transpose_best_kernel), "transpose_best_kernel", "");
    p->block = dim3(32, 8);
    p->grid = dim3((unsigned)(ceil_div(m, TB_TILE) * (unsigned long long)ceil_div(n, TB_TILE)));
    snprintf(p->description, sizeof p->description,
             "%s: 32x8 block, 64x64 tile: float4 in, 4x4 register transpose, swizzled tile, "
             "float4 out",
             why_picked);
    return 0;
  case TRANSPOSE_KIND_SEC:
    cuda_plan_set(p, KFUNC((transpose_sec_kernel<32, 64, 256>)), "transpose_sec_kernel<32,64,256>",
                  "");
    p->grid = dim3((unsigned)(ceil_div(m + 7, 64) * (unsigned long long)ceil_div(n, 32)));
    break;
  case TRANSPOSE_KIND_SEC_NARROW:
    cuda_plan_set(p, KFUNC((transpose_sec_kernel<16, 256>)), "transpose_sec_kernel<16,256>", "");
    p->grid = dim3((unsigned)(ceil_div(m + 7, 256) * (unsigned long long)ceil_div(n, 16)));
    break;
  case TRANSPOSE_KIND_GATHER:
    cuda_plan_set(p, KFUNC(transpose_gather_kernel), "transpose_gather_kernel", "");
    p->grid = dim3((unsigned)((total + 4095) / 4096));
    snprintf(p->description, sizeof p->description,
             "%s: thread per 4 floats of B (4 of them a warp's 512 bytes), gathered from A",
             why_picked);
    p->block = dim3(256);
    return 0;
  case TRANSPOSE_KIND_COPY: {
    unsigned long long blocks = (total / 4 + 255) / 256, cap = 8ull * (unsigned)sms;
    cuda_plan_set(p, KFUNC(transpose_copy4_kernel), "transpose_copy4_kernel", "");
    p->grid = dim3((unsigned)(blocks < 1 ? 1 : blocks < cap ? blocks : cap));
    snprintf(p->description, sizeof p->description, "%s: grid-stride float4 copy", why_picked);
    p->block = dim3(256);
    return 0;
  }
  default: return -1;
  }
  snprintf(p->description, sizeof p->description,
           "%s: 4-byte coalesced loads, B by whole 32-byte sectors of float4", why_picked);
  p->block = dim3(256);
  return 0;
}

/* The current device's SMs, read once per device (cuda_device_limits_get: the launcher
 * asks the driver nothing); 0 when the device cannot be asked. */
static int device_sms(void) {
  struct cuda_device_limits l;
  if (cuda_device_limits_get(&l) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return l.sms;
}

/* Picks the kernel by the shape (transpose_pick_for); the plan has no pointers, so it
 * assumes 16-byte aligned ones, as every device allocation is (the launch takes the tile
 * kernel's 4-byte path for pointers that are not). */
int transpose_best_plan(int m, int n, struct cuda_plan *p, char *why, size_t why_len) {
  const int sms = device_sms();
  if (sms <= 0) {
    cuda_plan_set(p, NULL, "transpose best", "");
    snprintf(why, why_len, "transpose best: cannot read the device's attributes");
    return -1;
  }
  const struct transpose_pick pk = transpose_pick_for(m, n, true);
  if (plan_kind(pk.kind, pk.why, m, n, sms, p) != 0) {
    snprintf(why, why_len, "transpose best: no kernel for kind %d", (int)pk.kind);
    return -1;
  }
  return 0;
}

cudaError_t transpose_best_launch_kind(enum transpose_kind kind, const float *d_a, float *d_b,
                                       int m, int n, cudaStream_t s) {
  const int sms = device_sms();
  struct cuda_plan p;
  if (sms <= 0 || plan_kind(kind, "", m, n, sms, &p) != 0) return cudaErrorInvalidConfiguration;
  if (kind == TRANSPOSE_KIND_TILE) {
    int vec = m % 4 == 0 && n % 4 == 0 && aligned16(d_a) && aligned16(d_b);
    void *args[] = {&d_a, &d_b, &m, &n, &vec};
    return cuda_plan_launch_pdl(&p, args, s);
  }
  if (kind == TRANSPOSE_KIND_COPY) {
    size_t total = (size_t)m * n;
    void *args[] = {&d_a, &d_b, &total};
    return cuda_plan_launch_pdl(&p, args, s);
  }
  void *args[] = {&d_a, &d_b, &m, &n};
  return cuda_plan_launch_pdl(&p, args, s);
}

cudaError_t transpose_best_launch(const float *d_a, float *d_b, int m, int n, cudaStream_t s) {
  const struct transpose_pick pk = transpose_pick_for(m, n, aligned16(d_a) && aligned16(d_b));
  return transpose_best_launch_kind(pk.kind, d_a, d_b, m, n, s);
}
