/* The stencil's lecture kernels (seeds/000): naive and shared (B = 256), their plans
 * and launchers, and the stencil's CUDA descriptor, which also reaches its best kernel
 * (stencil_best.cu). Bodies follow the lecture's code; built without fast-math: the
 * divisions are the accurate ones. */
#include <stdio.h>

#include "kernels/stencil/stencil.cuh"

#define STENCIL_BLOCK 256 /* threads and outputs per stencil block (the lecture's B) */

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
__global__ __launch_bounds__(STENCIL_BLOCK) void stencil_shared_kernel(const float *x, float *y,
                                                                       int n, int radius) {
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

/* ---- plans and launchers ---- */

static int stencil_plan(int variant, int n, int radius, struct cuda_plan *p, char *why,
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

static cudaError_t stencil_launch(int variant, const float *d_x, float *d_y, int n, int radius,
                                  cudaStream_t s) {
  if (variant == STENCIL_BEST) return stencil_best_launch(d_x, d_y, n, radius, s);
  struct cuda_plan p;
  char why[128];
  if (stencil_plan(variant, n, radius, &p, why, sizeof why) != 0)
    return cudaErrorInvalidConfiguration;
  void *args[] = {&d_x, &d_y, &n, &radius};
  return cuda_plan_launch(&p, args, s);
}

/* ---- the CUDA descriptor ---- */

static int plan(const struct exp_spec *s, int variant, struct cuda_plan *p, char *why,
                size_t why_len) {
  return stencil_plan(variant, s->p[STENCIL_N], s->p[STENCIL_RADIUS], p, why, why_len);
}

static cudaError_t launch(const struct cuda_launch *a) {
  return stencil_launch(a->variant, a->d_in[0], a->d_out, a->spec->p[STENCIL_N],
                        a->spec->p[STENCIL_RADIUS], a->stream);
}

extern const struct cuda_experiment cuda_exp_stencil = {plan, launch, NULL, NULL, NULL};
