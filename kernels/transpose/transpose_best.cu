/* The transpose's `best` variant: 64x64 tiles moved as float4 both ways, through a
 * swizzled shared tile, in a grouped launch order. Sizes that break 16-byte alignment
 * take 4-byte accesses in the same kernel (a uniform branch), so every size runs. */
#include "kernels/backends/cuda/cuda_best.cuh"
#include "kernels/transpose/transpose.cuh"

#include <stdio.h>

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

/* ---- plan and launcher ---- */

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

