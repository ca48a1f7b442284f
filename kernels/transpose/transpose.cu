/* The transpose's lecture kernels (seeds/000): naive, tiled<32> / tiled<33> (the
 * shared-memory tile without and with its pad column) and copy, their plans and
 * launchers, and the transpose's CUDA descriptor, which also reaches its best kernel
 * (transpose_best.cu). Bodies follow the lecture's code; indices are size_t so sizes
 * near the API's limits do not overflow. */
#include <stdio.h>

#include "kernels/transpose/transpose.cuh"

#define TRANSPOSE_TILE 32

/* ---- transpose: A is m x n, B = A^T is n x m, both row-major ---- */

/* One thread per element, block 32x32, grid (ceil(n/32), ceil(m/32)). Thread (x, y)
 * reads A[y][x] and writes B[x][y]: a warp (consecutive x) reads one row segment of A
 * (coalesced) but writes 32 elements m floats apart (one sector each). */
__global__ __launch_bounds__(1024) void transpose_naive_kernel(const float *a, float *b, int m,
                                                               int n) {
  size_t x = (size_t)blockIdx.x * TRANSPOSE_TILE + threadIdx.x; /* column of A */
  size_t y = (size_t)blockIdx.y * TRANSPOSE_TILE + threadIdx.y; /* row of A */
  if (x < (size_t)n && y < (size_t)m) b[x * m + y] = a[y * n + x];
}

/* The lecture's tiled<S>: block 32x32 loads a 32x32 tile of A by rows (coalesced),
 * barrier, then writes it to B by rows with block coordinates and tile indices
 * swapped, reading the tile by columns. S is the shared row stride: 32 makes that
 * column read a 32-way bank conflict, 33 (one pad float per row) spreads it over all
 * 32 banks. Threads outside A still reach the barrier; predicates guard only the
 * global accesses. */
template <int S>
__global__ __launch_bounds__(1024) void transpose_tiled_kernel(const float *a, float *b, int m,
                                                               int n) {
  __shared__ float tile[TRANSPOSE_TILE][S];
  int tx = threadIdx.x, ty = threadIdx.y;
  size_t x = (size_t)blockIdx.x * TRANSPOSE_TILE + tx;
  size_t y = (size_t)blockIdx.y * TRANSPOSE_TILE + ty;
  if (x < (size_t)n && y < (size_t)m) tile[ty][tx] = a[y * n + x];
  __syncthreads();
  size_t out_x = (size_t)blockIdx.y * TRANSPOSE_TILE + tx; /* column of B: A's row block */
  size_t out_y = (size_t)blockIdx.x * TRANSPOSE_TILE + ty; /* row of B: A's column block */
  if (out_x < (size_t)m && out_y < (size_t)n) b[out_y * m + out_x] = tile[tx][ty];
}

/* The bandwidth reference beside the transposes (not a transpose): same grid and
 * block as naive, thread (x, y) copies A[y][x] to B[y][x], both sides coalesced. */
__global__ __launch_bounds__(1024) void copy_kernel(const float *a, float *b, int m, int n) {
  size_t x = (size_t)blockIdx.x * TRANSPOSE_TILE + threadIdx.x;
  size_t y = (size_t)blockIdx.y * TRANSPOSE_TILE + threadIdx.y;
  if (x < (size_t)n && y < (size_t)m) b[y * n + x] = a[y * n + x];
}

/* ---- plans and launchers ---- */

static int transpose_plan(int variant, int m, int n, struct cuda_plan *p, char *why,
                          size_t why_len) {
  switch (variant) {
  case TRANSPOSE_BEST: return transpose_best_plan(m, n, p, why, why_len);
  case TRANSPOSE_NAIVE:
    cuda_plan_set(p, KFUNC(transpose_naive_kernel), "transpose_naive_kernel",
                  "thread per element; reads A rows coalesced, writes B columns m floats apart");
    break;
  case TRANSPOSE_SHARED32:
    cuda_plan_set(p, KFUNC(transpose_tiled_kernel<32>), "transpose_tiled_kernel<32>",
                  "thread per element via tile[32][32]; coalesced both ways, 32-way bank conflict");
    break;
  case TRANSPOSE_PADDED33:
    cuda_plan_set(p, KFUNC(transpose_tiled_kernel<33>), "transpose_tiled_kernel<33>",
                  "thread per element via tile[32][33]; coalesced both ways, no bank conflict");
    break;
  case TRANSPOSE_COPY:
    cuda_plan_set(p, KFUNC(copy_kernel), "copy_kernel",
                  "thread per element, B[y][x] = A[y][x]; bandwidth reference, not a transpose");
    break;
  default: snprintf(why, why_len, "unknown transpose variant %d", variant); return -1;
  }
  p->block = dim3(TRANSPOSE_TILE, TRANSPOSE_TILE);
  p->grid = dim3(ceil_div(n, TRANSPOSE_TILE), ceil_div(m, TRANSPOSE_TILE));
  p->dyn_smem_bytes = 0;
  return cuda_plan_grid_ok(p, why, why_len);
}

static cudaError_t transpose_launch(int variant, const float *d_a, float *d_b, int m, int n,
                                    cudaStream_t s) {
  if (variant == TRANSPOSE_BEST) return transpose_best_launch(d_a, d_b, m, n, s);
  struct cuda_plan p;
  char why[128];
  if (transpose_plan(variant, m, n, &p, why, sizeof why) != 0) return cudaErrorInvalidConfiguration;
  void *args[] = {&d_a, &d_b, &m, &n};
  return cuda_plan_launch(&p, args, s);
}

/* ---- the CUDA descriptor ---- */

static int plan(const struct exp_spec *s, int variant, struct cuda_plan *p, char *why,
                size_t why_len) {
  return transpose_plan(variant, s->p[TRANSPOSE_M], s->p[TRANSPOSE_N], p, why, why_len);
}

static cudaError_t launch(const struct cuda_launch *a) {
  return transpose_launch(a->variant, a->d_in[0], a->d_out, a->spec->p[TRANSPOSE_M],
                          a->spec->p[TRANSPOSE_N], a->stream);
}

extern const struct cuda_experiment cuda_exp_transpose = {plan, launch, NULL, NULL, NULL};
