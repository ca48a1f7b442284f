/* The stencil's `best` variant: a prefix sum per tile, so an output costs the same at
 * any radius (stencil_best.h has the tile geometry, shared with the CPU stand-in and
 * the reference's tolerance). */
#include "kernels/cuda/cuda_best.cuh"

#include <stdio.h>

#include "kernels/stencil_best.h"

/* ---- stencil: y[i] = sum x[i-r..i+r] / (2r+1), x outside [0, n) is 0 ---- */

#define SB_THREADS 256
#define SB_SEGS (STENCIL_BEST_MAX_STEPS * 8) /* 128-float segments: one warp's per step */

/* x[g..g+3], zero outside [0, n); g is a multiple of 4, so g < 0 means all four are.
 * vec: x is 16-byte aligned (one float4 unless the array ends inside it). */
__device__ __forceinline__ float4 stencil_load4(const float *__restrict__ x, long long g, int n,
                                                int vec) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (g < 0 || g >= n) return v;
  if (vec && g + 4 <= n) return __ldg(reinterpret_cast<const float4 *>(x + g));
  v.x = x[g];
  if (g + 1 < n) v.y = x[g + 1];
  if (g + 2 < n) v.z = x[g + 2];
  if (g + 3 < n) v.w = x[g + 3];
  return v;
}

/* Cost per output independent of r: tile k owns the T outputs at k*T (stencil_best.h;
 * T ~ 4096 - 2r) and scans its span x[k*T - lead, k*T + T + r) (lead = r+1 rounded up
 * to 4, so the span starts 16-byte aligned) in `steps` steps of 1024 floats. Block b
 * takes tiles b, b + gridDim.x, ...; when it has a next tile, that tile's float4
 * loads are issued as soon as the current tile's are consumed. The plan launches one
 * block per tile all the same: a persistent grid (as many blocks as fit at once, each
 * prefetching its next tile) measured 68% of copy bandwidth on the H200 against 80%
 * for one tile per block, whose blocks the scheduler starts at staggered times, so
 * that some load while others scan and store (persistent blocks move in lock-step).
 * Thread t holds the float4 at 1024*step + 4t, sums it in double, and a warp shuffle
 * scan gives every float its prefix within the warp's 128-float segment, stored to
 * shared (double) with the segment's total; one warp then scans the <= 40 totals
 * into carries. Output j of the tile (thread t takes j = t, t+256, ...: a warp writes
 * 128 contiguous bytes) is (P[j + r + lead] - P[j + lead - r - 1]) / (2r+1), each P a
 * partial prefix plus its segment's carry, read as consecutive doubles (no bank
 * conflicts). Sums restart at every tile and run in double, so an output's rounding
 * error is at most ~25 * 2^-53 * sum |x| over its tile's span (reference.c states the
 * tolerance); a non-finite input makes its whole tile NaN. Launch SB_THREADS threads,
 * at most ceil(n/T) blocks, (1024*steps + 2*SB_SEGS) doubles of dynamic shared. */
__global__ __launch_bounds__(SB_THREADS) void stencil_best_kernel(const float *__restrict__ x,
                                                                  float *__restrict__ y, int n,
                                                                  int r, int tile, int steps,
                                                                  double inv_width, int vec) {
  extern __shared__ __align__(16) double prefix[]; /* 1024 * steps partial prefixes */
  double *seg_total = prefix + STENCIL_BEST_STEP * steps, *carry = seg_total + SB_SEGS;
  const unsigned full = 0xffffffffu;
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const int lead = stencil_best_lead(r), hi_off = lead + r, lo_off = lead - r - 1;
  const long long tiles = ((long long)n + tile - 1) / tile;
  long long k = blockIdx.x;
  float4 v[STENCIL_BEST_MAX_STEPS];
#pragma unroll
  for (int q = 0; q < STENCIL_BEST_MAX_STEPS; q++)
    v[q] = q < steps ? stencil_load4(x, k * tile - lead + STENCIL_BEST_STEP * q + 4 * t, n, vec)
                     : make_float4(0.f, 0.f, 0.f, 0.f);
  for (; k < tiles; k += gridDim.x) {
    const long long base = k * tile;
#pragma unroll
    for (int q = 0; q < STENCIL_BEST_MAX_STEPS; q++) {
      if (q >= steps) break; /* uniform across the block */
      const double s0 = v[q].x, s1 = s0 + v[q].y, s2 = s1 + v[q].z, s3 = s2 + v[q].w;
      double incl = s3;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const double u = __shfl_up_sync(full, incl, o);
        if (lane >= o) incl += u;
      }
      double excl = __shfl_up_sync(full, incl, 1);
      if (lane == 0) excl = 0.0;
      double2 *dst = reinterpret_cast<double2 *>(prefix + STENCIL_BEST_STEP * q + 4 * t);
      dst[0] = make_double2(excl + s0, excl + s1);
      dst[1] = make_double2(excl + s2, excl + s3);
      if (lane == 31) seg_total[8 * q + w] = incl;
    }
    const long long next = k + gridDim.x; /* its loads fly during the rest of this tile */
#pragma unroll
    for (int q = 0; q < STENCIL_BEST_MAX_STEPS; q++)
      v[q] = q < steps && next < tiles
                 ? stencil_load4(x, next * tile - lead + STENCIL_BEST_STEP * q + 4 * t, n, vec)
                 : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads(); /* prefixes and totals written */
    if (w == 0) { /* carries: exclusive scan of the segment totals, lane l has 2l, 2l+1 */
      const int segs = 8 * steps;
      const double lo = 2 * lane < segs ? seg_total[2 * lane] : 0.0;
      const double hi = 2 * lane + 1 < segs ? seg_total[2 * lane + 1] : 0.0;
      double incl = lo + hi;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const double u = __shfl_up_sync(full, incl, o);
        if (lane >= o) incl += u;
      }
      double excl = __shfl_up_sync(full, incl, 1);
      if (lane == 0) excl = 0.0;
      if (2 * lane < segs) carry[2 * lane] = excl;
      if (2 * lane + 1 < segs) carry[2 * lane + 1] = excl + lo;
    }
    __syncthreads(); /* carries written */
#pragma unroll 4
    for (int j = t; j < tile; j += SB_THREADS) {
      const long long i = base + j;
      if (i >= n) break;
      const int hi = j + hi_off, lo = j + lo_off;
      const double p_hi = prefix[hi] + carry[hi >> 7], p_lo = prefix[lo] + carry[lo >> 7];
      y[i] = (float)((p_hi - p_lo) * inv_width);
    }
    __syncthreads(); /* everyone is done with prefix and carry before the next tile */
  }
}

/* ---- plan and launcher ---- */

int stencil_best_plan(int n, int radius, struct cuda_plan *p, char *why, size_t why_len) {
  cuda_plan_set(p, KFUNC(stencil_best_kernel), "stencil_best_kernel",
                "256 threads per ~4096-output tile: float4 loads, double prefix scan in shared, "
                "P[hi]-P[lo]");
  const int tile = stencil_best_tile(radius);
  if (tile == 0) {
    snprintf(why, why_len, "stencil best supports radii 0..%d, not %d", STENCIL_BEST_MAX_RADIUS,
             radius);
    return -1;
  }
  const int steps = stencil_best_steps(radius);
  p->block = dim3(SB_THREADS);
  p->dyn_smem_bytes = ((size_t)STENCIL_BEST_STEP * steps + 2 * SB_SEGS) * sizeof(double);
  p->grid = dim3(ceil_div(n, tile)); /* one tile per block: see the kernel's comment */
  return 0;
}

cudaError_t stencil_best_launch(const float *d_x, float *d_y, int n, int radius,
                                cudaStream_t s) {
  struct cuda_plan p;
  char why[128];
  if (stencil_best_plan(n, radius, &p, why, sizeof why) != 0)
    return cudaErrorInvalidConfiguration;
  int tile = stencil_best_tile(radius), steps = stencil_best_steps(radius);
  int vec = aligned16(d_x);
  double inv_width = 1.0 / (double)(2 * radius + 1);
  void *args[] = {&d_x, &d_y, &n, &radius, &tile, &steps, &inv_width, &vec};
  return cuda_plan_launch(&p, args, s);
}

