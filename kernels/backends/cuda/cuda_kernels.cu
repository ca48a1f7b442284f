/* The lecture's kernels (seeds/000): transpose naive / tiled<32> / tiled<33> / copy,
 * GEMM naive and tiled (T = TK = 16), stencil naive and shared (B = 256), the
 * pipeline's synthesize, plus the input generator; the `best` variants live in
 * kernels/<experiment>/ and are planned and launched through here. Bodies follow the lecture's code;
 * indices are size_t or 64-bit so sizes near the API's limits do not overflow.
 * Built without fast-math: sinf and the divisions are the accurate ones. */
#include "kernels/backends/cuda/cuda_kernels.cuh"

#include <stdio.h>
#include "kernels/core/gen.h"
#include "kernels/gemm/gemm.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"

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

/* ---- gemm: C[M,N] = A[M,K] B[K,N], row-major ---- */

/* One thread per C[row][col], block 16x16, grid (ceil(N/16), ceil(M/16)); the thread
 * walks all of K with fmaf. A warp reads one A element (broadcast) and 16
 * consecutive B elements per k; neighbouring outputs re-read the same inputs. */
__global__ __launch_bounds__(256) void gemm_naive_kernel(const float *A, const float *B,
                                                         float *C, int M, int N, int K) {
  int row = blockIdx.y * GEMM_TILE + threadIdx.y;
  int col = blockIdx.x * GEMM_TILE + threadIdx.x;
  if (row < M && col < N) {
    float acc = 0;
    for (int k = 0; k < K; ++k) acc = fmaf(A[(size_t)row * K + k], B[(size_t)k * N + col], acc);
    C[(size_t)row * N + col] = acc;
  }
}

/* The lecture's gemm_tiled: block 16x16 owns a 16x16 tile of C, same grid as naive.
 * Per 16-wide slice of K each thread loads one A and one B element into shared
 * (zero outside the matrices, so tails in M, N and K need no special case), barrier,
 * 16 fmaf from shared, barrier before the slice is overwritten. Every input loaded
 * serves 16 outputs. Requires T == TK (one element of each per thread). */
__global__ __launch_bounds__(256) void gemm_tiled_kernel(const float *A, const float *B,
                                                         float *C, int M, int N, int K) {
  __shared__ float As[GEMM_TILE][GEMM_TILE], Bs[GEMM_TILE][GEMM_TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * GEMM_TILE + ty, col = blockIdx.x * GEMM_TILE + tx;
  float acc = 0;
  for (int base = 0; base < K; base += GEMM_TILE) {
    As[ty][tx] = (row < M && base + tx < K) ? A[(size_t)row * K + base + tx] : 0.0f;
    Bs[ty][tx] = (base + ty < K && col < N) ? B[(size_t)(base + ty) * N + col] : 0.0f;
    __syncthreads(); /* this slice is loaded */
    for (int k = 0; k < GEMM_TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads(); /* everyone is done with it */
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

/* ---- stencil: y[i] = sum x[i-r..i+r] / (2r+1), x outside [0, n) is 0 ---- */

/* RC is the radius when known at compile time (2 and 32, the lecture's, unroll),
 * -1 to take it from the radius argument. */

/* One thread per output, 256 threads per block, grid ceil(n/256). Each thread reads
 * its 2r+1 inputs from global memory; neighbouring windows overlap, so the reuse is
 * left to L1/L2. Sums from x[i-r] upwards, like the shared version. */
template <int RC>
__global__ __launch_bounds__(STENCIL_BLOCK) void stencil_naive_kernel(const float *x, float *y,
                                                                      int n, int radius) {
  const int r = RC >= 0 ? RC : radius;
  long long i = (long long)blockIdx.x * STENCIL_BLOCK + threadIdx.x;
  if (i >= n) return;
  float sum = 0;
#pragma unroll
  for (int d = -r; d <= r; ++d) {
    long long j = i + d;
    if (j >= 0 && j < n) sum += x[j];
  }
  y[i] = sum / (float)(2 * r + 1);
}

/* The lecture's stencil_shared: block of B = 256 threads owns outputs base..base+255;
 * all threads cooperatively load the B + 2r inputs x[base-r .. base+B+r) into the
 * dynamic shared tile (zero outside [0, n)), one barrier, then thread t sums
 * tile[t .. t+2r]. Launch with blockDim.x == STENCIL_BLOCK and
 * (STENCIL_BLOCK + 2r) * 4 bytes of dynamic shared memory. Each input loaded serves
 * up to 2r+1 outputs. The tile is never overwritten, so one barrier suffices. */
template <int RC>
__global__ __launch_bounds__(STENCIL_BLOCK) void stencil_shared_kernel(const float *x,
                                                                       float *y, int n,
                                                                       int radius) {
  extern __shared__ float tile[];
  const int r = RC >= 0 ? RC : radius;
  const int t = threadIdx.x;
  const long long base = (long long)blockIdx.x * STENCIL_BLOCK;
  for (int j = t; j < STENCIL_BLOCK + 2 * r; j += STENCIL_BLOCK) {
    long long g = base + j - r;
    tile[j] = (g >= 0 && g < n) ? x[g] : 0.0f;
  }
  __syncthreads();
  long long i = base + t;
  if (i < n) {
    float sum = 0;
#pragma unroll
    for (int d = 0; d < 2 * r + 1; ++d) sum += tile[t + d];
    y[i] = sum / (float)(2 * r + 1);
  }
}

/* ---- pipeline ---- */

/* The lecture's synthesize: one thread per sample, 256 threads per block, grid
 * ceil(n/256); y[i] = sum_{k=1..terms} sinf(k * x[i]) / k. Compute-heavy per byte,
 * which is what lets copies of other chunks overlap it. */
__global__ __launch_bounds__(SYNTHESIZE_BLOCK) void synthesize_kernel(const float *x, float *y,
                                                                      int n, int terms) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)n) return;
  float xi = x[i];
  float sum = 0.0f;
  for (int k = 1; k <= terms; ++k) sum += sinf(k * xi) / k;
  y[i] = sum;
}

/* ---- inputs ---- */

/* Grid-stride: thread g writes elements g, g + stride, ...; consecutive threads write
 * consecutive floats. Each value depends only on (seed, stream, i) (gen.h). */
__global__ __launch_bounds__(256) void gen_kernel(float *d, size_t n, uint64_t seed,
                                                  uint32_t stream, float scale) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    d[i] = gen_uniform(seed, stream, i) * scale;
}

/* ---- plans ---- */

#define KFUNC(f) reinterpret_cast<const void *>(&(f))

static unsigned ceil_div(long long a, long long b) { return (unsigned)((a + b - 1) / b); }

void cuda_plan_set(struct cuda_plan *p, const void *func, const char *name,
                   const char *description) {
  p->func = func;
  p->name = name;
  p->description = description;
  p->grid = p->block = dim3(1, 1, 1);
  p->dyn_smem_bytes = 0;
}

static bool is_default_stream(cudaStream_t s) {
  return s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

int cuda_plan_grid_ok(const struct cuda_plan *p, char *why, size_t why_len) {
  if (p->grid.y > 65535 || p->grid.z > 65535) {
    snprintf(why, why_len, "%s needs grid.y = %u, above CUDA's limit of 65535", p->name,
             p->grid.y);
    return -1;
  }
  return 0;
}

int transpose_plan(int variant, int m, int n, struct cuda_plan *p, char *why, size_t why_len) {
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

int gemm_plan(int variant, int m, int n, int k, struct cuda_plan *p, char *why,
              size_t why_len) {
  switch (variant) {
  case GEMM_BEST: return gemm_best_plan(m, n, k, p, why, why_len);
  case GEMM_TF32: return gemm_tf32_plan(m, n, k, p, why, why_len);
  case GEMM_NAIVE:
    cuda_plan_set(p, KFUNC(gemm_naive_kernel), "gemm_naive_kernel",
          "thread per C element, 16x16 block; full K dot product from global memory");
    break;
  case GEMM_TILED:
    cuda_plan_set(p, KFUNC(gemm_tiled_kernel), "gemm_tiled_kernel",
          "thread per C element, 16x16 block; 16x16 A and B tiles in shared per K step");
    break;
  default: snprintf(why, why_len, "gemm variant %d has no kernel of its own", variant); return -1;
  }
  (void)k;
  p->block = dim3(GEMM_TILE, GEMM_TILE);
  p->grid = dim3(ceil_div(n, GEMM_TILE), ceil_div(m, GEMM_TILE));
  p->dyn_smem_bytes = 0;
  return cuda_plan_grid_ok(p, why, why_len);
}

int stencil_plan(int variant, int n, int radius, struct cuda_plan *p, char *why,
                 size_t why_len) {
  if (variant == STENCIL_BEST) return stencil_best_plan(n, radius, p, why, why_len);
  bool shared = variant == STENCIL_SHARED;
  if (variant != STENCIL_NAIVE && !shared) {
    snprintf(why, why_len, "unknown stencil variant %d", variant);
    return -1;
  }
  if (radius < 0) {
    snprintf(why, why_len, "stencil radius %d is negative", radius);
    return -1;
  }
  const void *func;
  const char *name;
  if (radius == 2) {
    func = shared ? KFUNC(stencil_shared_kernel<2>) : KFUNC(stencil_naive_kernel<2>);
    name = shared ? "stencil_shared_kernel<2>" : "stencil_naive_kernel<2>";
  } else if (radius == 32) {
    func = shared ? KFUNC(stencil_shared_kernel<32>) : KFUNC(stencil_naive_kernel<32>);
    name = shared ? "stencil_shared_kernel<32>" : "stencil_naive_kernel<32>";
  } else {
    func = shared ? KFUNC(stencil_shared_kernel<-1>) : KFUNC(stencil_naive_kernel<-1>);
    name = shared ? "stencil_shared_kernel<-1>" : "stencil_naive_kernel<-1>";
  }
  cuda_plan_set(p, func, name,
           shared ? "thread per output, 256 per block; B+2R inputs loaded once into shared"
                  : "thread per output, 256 per block; reads its 2R+1 inputs from global");
  p->block = dim3(STENCIL_BLOCK);
  p->grid = dim3(ceil_div(n, STENCIL_BLOCK));
  p->dyn_smem_bytes = shared ? (size_t)(STENCIL_BLOCK + 2 * (size_t)radius) * sizeof(float) : 0;
  if (p->dyn_smem_bytes > 48 * 1024) {
    snprintf(why, why_len, "radius %d needs %zu bytes of shared memory per block, above 48 KiB",
             radius, p->dyn_smem_bytes);
    return -1;
  }
  return 0;
}

int synthesize_plan(int n, struct cuda_plan *p, char *why, size_t why_len) {
  cuda_plan_set(p, KFUNC(synthesize_kernel), "synthesize_kernel",
        "thread per sample, 256 per block; sum of terms sinf(k x) / k");
  p->block = dim3(SYNTHESIZE_BLOCK);
  p->grid = dim3(ceil_div(n, SYNTHESIZE_BLOCK));
  p->dyn_smem_bytes = 0;
  return cuda_plan_grid_ok(p, why, why_len);
}

/* ---- launchers ---- */

/* Launches plan with args; an empty grid launches nothing. */
cudaError_t cuda_plan_launch(const struct cuda_plan *p, void **args, cudaStream_t s) {
  if (is_default_stream(s)) return cudaErrorInvalidValue;
  if (p->grid.x == 0 || p->grid.y == 0 || p->grid.z == 0) return cudaSuccess;
  cudaError_t e = cudaLaunchKernel(p->func, p->grid, p->block, args, p->dyn_smem_bytes, s);
  cudaError_t last = cudaGetLastError();
  return e != cudaSuccess ? e : last;
}

cudaError_t transpose_launch(int variant, const float *d_a, float *d_b, int m, int n,
                             cudaStream_t s) {
  if (variant == TRANSPOSE_BEST) return transpose_best_launch(d_a, d_b, m, n, s);
  struct cuda_plan p;
  char why[128];
  if (transpose_plan(variant, m, n, &p, why, sizeof why) != 0)
    return cudaErrorInvalidConfiguration;
  void *args[] = {&d_a, &d_b, &m, &n};
  return cuda_plan_launch(&p, args, s);
}

cudaError_t gemm_launch(int variant, const float *d_a, const float *d_b, float *d_c, int m,
                        int n, int k, cudaStream_t s) {
  if (variant == GEMM_BEST) return gemm_best_launch(d_a, d_b, d_c, m, n, k, s);
  if (variant == GEMM_TF32) return gemm_tf32_launch(d_a, d_b, d_c, m, n, k, s);
  struct cuda_plan p;
  char why[128];
  if (gemm_plan(variant, m, n, k, &p, why, sizeof why) != 0)
    return cudaErrorInvalidConfiguration;
  void *args[] = {&d_a, &d_b, &d_c, &m, &n, &k};
  return cuda_plan_launch(&p, args, s);
}

cudaError_t stencil_launch(int variant, const float *d_x, float *d_y, int n, int radius,
                           cudaStream_t s) {
  if (variant == STENCIL_BEST) return stencil_best_launch(d_x, d_y, n, radius, s);
  struct cuda_plan p;
  char why[128];
  if (stencil_plan(variant, n, radius, &p, why, sizeof why) != 0)
    return cudaErrorInvalidConfiguration;
  void *args[] = {&d_x, &d_y, &n, &radius};
  return cuda_plan_launch(&p, args, s);
}

cudaError_t synthesize_launch(const float *d_x, float *d_y, int n, int terms,
                              cudaStream_t s) {
  struct cuda_plan p;
  char why[128];
  if (synthesize_plan(n, &p, why, sizeof why) != 0) return cudaErrorInvalidConfiguration;
  void *args[] = {&d_x, &d_y, &n, &terms};
  return cuda_plan_launch(&p, args, s);
}

cudaError_t gen_launch(float *d, size_t n, uint64_t seed, uint32_t stream, float scale,
                       cudaStream_t s) {
  if (is_default_stream(s)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  size_t blocks = (n + 255) / 256;
  if (blocks > 8192) blocks = 8192; /* grid-stride beyond ~8 waves of the largest GPU */
  gen_kernel<<<(unsigned)blocks, 256, 0, s>>>(d, n, seed, stream, scale);
  return cudaGetLastError();
}

cudaError_t poison_launch(float *d, size_t n, cudaStream_t s) {
  if (is_default_stream(s)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return cudaMemsetAsync(d, 0xFF, n * sizeof(float), s); /* 0xFFFFFFFF is a NaN */
}

void cuda_kernel_info_fill(const struct cuda_plan *plan, const struct cudaFuncAttributes *attr,
                           struct exp_kernel_info *info) {
  snprintf(info->name, sizeof info->name, "%s", plan->name);
  snprintf(info->description, sizeof info->description, "%s", plan->description);
  info->has_launch = true;
  info->grid[0] = (int)plan->grid.x;
  info->grid[1] = (int)plan->grid.y;
  info->grid[2] = (int)plan->grid.z;
  info->block[0] = (int)plan->block.x;
  info->block[1] = (int)plan->block.y;
  info->block[2] = (int)plan->block.z;
  info->registers = attr->numRegs;
  info->static_shared_bytes = (int)attr->sharedSizeBytes;
  info->dynamic_shared_bytes = (int)plan->dyn_smem_bytes;
  info->local_bytes = (int)attr->localSizeBytes;
}

/* One thread executes trap: the launch fails with cudaErrorLaunchFailure and the
 * context stays unusable (sticky), which is what the recovery test needs. */
__global__ void trap_kernel() { asm volatile("trap;"); }

cudaError_t trap_launch(cudaStream_t stream) {
  if (stream == 0) return cudaErrorInvalidValue;
  trap_kernel<<<1, 1, 0, stream>>>();
  cudaError_t e = cudaGetLastError();
  return e != cudaSuccess ? e : cudaStreamSynchronize(stream);
}
