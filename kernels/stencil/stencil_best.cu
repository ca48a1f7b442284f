/* The stencil's `best` variant: a prefix sum per tile, so an output costs the same at
 * any radius (stencil_tile.h has the tile geometry, shared with the CPU stand-in and
 * the reference's tolerance). */
#include "kernels/core/cuda/cp_async.cuh"
#include "kernels/core/cuda/launch.cuh"
#include "kernels/stencil/stencil.cuh"

#include <stdio.h>

#include "kernels/stencil/stencil_tile.h"

/* ---- stencil: y[i] = sum x[i-r..i+r] / (2r+1), x outside [0, n) is 0 ---- */

#define SB_WARPS 8
#define SB_THREADS (SB_WARPS * 32)

/* One instance per span: STEPS steps of 256 floats per warp. Shared memory: the four
 * prefix arrays (SPAN doubles), the warp totals (padded to 16 doubles) and one stage of
 * SPAN floats (the tile's span). */
template <int STEPS>
struct sb_shape {
  static constexpr int REGION = 256 * STEPS; /* floats per warp */
  static constexpr int SPAN = SB_WARPS * REGION;
  static constexpr int Q = SPAN / 4; /* doubles per prefix array */
  static constexpr int WTOT = 16;
  static constexpr int STAGES = 1;
  static constexpr size_t SMEM_BYTES = (size_t)(SPAN + WTOT) * sizeof(double) +
                                       (size_t)STAGES * SPAN * sizeof(float);
  /* Blocks per SM that its 228 KiB of shared memory hold (4, and 2 for the wide span):
   * the launch bound asks the registers to let that many run. */
  static constexpr int FIT = (int)((228 * 1024) / (SMEM_BYTES + 1024));
  static constexpr int MIN_BLOCKS = FIT < 1 ? 1 : FIT > 6 ? 6 : FIT;
};
static_assert(sb_shape<2>::SPAN == STENCIL_BEST_SPAN, "the narrow instance scans a span");
static_assert(sb_shape<4>::SPAN == 2 * STENCIL_BEST_SPAN, "the wide instance scans two");

/* Chunk c of a warp's region lives at chunk swz(c) of its stage: both the copies
 * (lane-consecutive chunks) and the scan's reads (two consecutive chunks a lane) then
 * hit 8 distinct 16-byte bank groups per quarter warp. */
__device__ __forceinline__ int swz(int c) { return c ^ ((c >> 3) & 1); }

__device__ __forceinline__ double warp_incl_scan(double v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const double u = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += u;
  }
  return v;
}

/* cp.async of x[g..g+3] (zero outside [0, n)) to dst. g is a multiple of 4, so the
 * chunk lies wholly before 0, wholly inside, wholly past n, or straddles n. xvec: x is
 * 16-byte aligned, so one 16-byte copy (or zero fill) serves a chunk that does not
 * straddle; every other chunk copies float by float. */
__device__ __forceinline__ void copy_chunk(float *dst, const float *__restrict__ x, long long g,
                                           int n, bool xvec) {
  if (xvec && (g < 0 || g >= n)) {
    cp_async16(dst, x, false);
  } else if (xvec && g + 4 <= n) {
    cp_async16(dst, x + g, true);
  } else {
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const bool in = g + e >= 0 && g + e < n;
      cp_async4(dst + e, in ? x + g + e : x, in);
    }
  }
}

/* Cost per output independent of r: tile k owns the T outputs at k*T (stencil_tile.h:
 * T ~ SPAN - 2r) and scans its span x[k*T - lead, k*T - lead + SPAN), SPAN = 4096
 * floats (8192 when the halo is over 2048, r >~ 1020: STEPS = 4, the same work per
 * output). 8 warps; warp w owns the contiguous region [w*REGION, (w+1)*REGION) of the
 * span, in STEPS steps of 256 floats, 8 consecutive floats a lane.
 *  - Loads: each warp cp.asyncs its region of the tile into its part of one shared
 *    stage, then waits for it: with one stage a block holds 48 KiB (96 KiB for the wide
 *    span), so 4 (2) blocks share an SM and keep its loads going while each computes
 *    (on the H200 this ran faster at every n and radius than two stages that prefetch
 *    the next tile with 3 (1) blocks an SM: at 2^22 0.0123-0.0127 ms against
 *    0.0128-0.0131, at r = 1024 0.0150 against 0.0199). The stage is
 *    private to the warp, so wait_group + __syncwarp make it visible: no block barrier
 *    guards it; the next tile's copies overwrite it only after every lane of the warp
 *    read its floats (before the tile's first barrier). With x 16-byte aligned (every
 *    device allocation) the span starts aligned (lead and T are multiples of 4) and a
 *    chunk is one 16-byte copy; an unaligned x copies float by float: the same tiles
 *    and sums, slower.
 *  - Scan: a lane sums its 8 floats in double in registers, one warp shuffle scan per
 *    8 floats, a running total across steps; the 8 warp totals go through shared and
 *    ONE barrier, then each thread adds the totals of the warps before its own and
 *    writes final prefixes: no carry lookup is left for the outputs. Two barriers a
 *    tile in all.
 *  - Prefix layout: 4 arrays, P_a[m] = prefix at span position 4m + a; the scan's
 *    writes (a double2 per array, lanes 16 bytes apart) and the outputs' reads
 *    (component c of 4 outputs from one array, lanes 8 bytes apart) are conflict-free.
 *  - Outputs: thread t makes outputs 4t + 1024m .. +3 of the tile, each
 *    (P[j + lead + r] - P[j + lead - r - 1]) / (2r+1), and stores one float4 (4
 *    scalar stores in the last tile or when y is not 16-byte aligned).
 *  - Grid: block b takes tiles b, b + gridDim.x, ... (any grid is correct); the plan
 *    gives 2 tiles a block for the 4096-float span and 1 for the 8192-float one (near
 *    the best of 11 grids and instances measured on the H200 at every n from 2^22 to
 *    2^26 and r from 0 to 1024, in two runs), while the scheduler
 *    starts blocks at staggered times, keeping loads and arithmetic out of phase across
 *    an SM's blocks (a persistent grid's blocks move in lock-step, and measured slower
 *    again).
 * The body ran and passed on the H200 at these launch shapes before it moved
 * here. Sums restart at every
 * tile and run in double; a prefix is a chain of at most ~20 additions of partials no
 * larger than sum |x| over the span, so an output's rounding error is at most
 * ~45 * 2^-53 * sum |x| over its tile's span / (2r+1) before the final rounding to
 * float (kernels/stencil/stencil.c states the tolerance); a non-finite input spoils the
 * rest of its tile. Launch SB_THREADS threads, ceil(ceil(n/T) / tiles a block) blocks
 * and sb_shape<STEPS>::SMEM_BYTES of dynamic shared memory; tile = stencil_best_tile(r),
 * xvec / yvec: x / y 16-byte aligned. */
template <int STEPS>
__global__ void __launch_bounds__(SB_THREADS, sb_shape<STEPS>::MIN_BLOCKS)
    stencil_best_kernel(const float *__restrict__ x, float *__restrict__ y, int n, int r, int tile,
                        double inv_width, int xvec, int yvec) {
  using S = sb_shape<STEPS>;
  constexpr int REGION = S::REGION, SPAN = S::SPAN, Q = S::Q;
  pdl_wait(); /* launched as the PDL dependant of the kernel before it (which may write x) */
  extern __shared__ __align__(16) double sb_smem[];
  double *P = sb_smem;                                      /* 4 arrays of Q doubles */
  double *wtot = P + SPAN;                                  /* the warp totals */
  float *stage = reinterpret_cast<float *>(wtot + S::WTOT); /* a span of floats */
  const unsigned full = 0xffffffffu;
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
  const int lead = stencil_best_lead(r);
  const long long tiles = ((long long)n + tile - 1) / tile, G = gridDim.x;

  /* Output reads, fixed by r: component c of output j = 4u reads P at j+hi_off+c and
   * j+lo_off+c, i.e. array (off+c)&3 at index u + (off+c)/4; thread tid starts at
   * u = tid and steps by SB_THREADS. */
  const int hi_off = lead + r, lo_off = lead - r - 1;
  const double *hp[4], *lp[4];
#pragma unroll
  for (int c = 0; c < 4; c++) {
    hp[c] = P + ((hi_off + c) & 3) * Q + ((hi_off + c) >> 2) + tid;
    lp[c] = P + ((lo_off + c) & 3) * Q + ((lo_off + c) >> 2) + tid;
  }
  /* swz(c + 32i) = swz(c) + 32i, so one offset serves every copy of the lane, and
   * swz(2 lane + 64q) = swz(2 lane) + 64q every read. */
  const int cp_off = 4 * swz(lane), rd_off0 = 4 * swz(2 * lane), rd_off1 = 4 * swz(2 * lane + 1);

  /* Warp w copies its region of tile kk into the stage. */
  auto issue = [&](long long kk) {
    float *dst = stage + w * REGION + cp_off;
    const long long g0 = kk * tile - lead + (long long)w * REGION + 4 * lane;
    if (xvec && g0 - 4 * lane >= 0 && g0 - 4 * lane + REGION <= n) { /* all inside x */
#pragma unroll
      for (int i = 0; i < REGION / 128; i++) cp_async16(dst + 128 * i, x + g0 + 128 * i, true);
    } else {
#pragma unroll
      for (int i = 0; i < REGION / 128; i++) copy_chunk(dst + 128 * i, x, g0 + 128 * i, n, xvec);
    }
  };

  for (int it = 0;; it++) {
    const long long k = blockIdx.x + it * G;
    if (k >= tiles) break; /* uniform across the block */
    issue(k);              /* every lane of this warp read the stage's last tile into v */
    cp_async_commit();
    cp_async_wait<0>();
    __syncwarp(); /* the other lanes' copies of this warp's region are visible */
    const float *src = stage + w * REGION;
    float4 v[2 * STEPS];
#pragma unroll
    for (int q = 0; q < STEPS; q++) {
      v[2 * q] = *reinterpret_cast<const float4 *>(src + 256 * q + rd_off0);
      v[2 * q + 1] = *reinterpret_cast<const float4 *>(src + 256 * q + rd_off1);
    }

    /* Scan: d[q][e] = inclusive sum of the lane's first e+1 floats of step q;
     * pre[q] = everything before the lane within the warp's region. */
    double d[STEPS][8], pre[STEPS], run = 0.0;
#pragma unroll
    for (int q = 0; q < STEPS; q++) {
      const float4 a = v[2 * q], b = v[2 * q + 1];
      d[q][0] = a.x;
      d[q][1] = d[q][0] + a.y;
      d[q][2] = d[q][1] + a.z;
      d[q][3] = d[q][2] + a.w;
      d[q][4] = d[q][3] + b.x;
      d[q][5] = d[q][4] + b.y;
      d[q][6] = d[q][5] + b.z;
      d[q][7] = d[q][6] + b.w;
      const double incl = warp_incl_scan(d[q][7], lane);
      pre[q] = run + (incl - d[q][7]);
      run += __shfl_sync(full, incl, 31);
    }
    if (lane == 0) wtot[w] = run;
    __syncthreads(); /* warp totals written; every warp is past last tile's outputs */
    double carry = 0.0;
#pragma unroll
    for (int i = 0; i < SB_WARPS - 1; i++)
      if (i < w) carry += wtot[i];
#pragma unroll
    for (int q = 0; q < STEPS; q++) {
      const double b = carry + pre[q];
      const int m0 = (w * REGION + 256 * q) / 4 + 2 * lane;
#pragma unroll
      for (int a = 0; a < 4; a++)
        *reinterpret_cast<double2 *>(P + a * Q + m0) = make_double2(b + d[q][a], b + d[q][a + 4]);
    }
    __syncthreads(); /* prefixes written */

    /* Outputs: SPAN / (4 SB_THREADS) rounds, fully unrolled so that all the shared
     * loads can be in flight at once; the last round is partial. */
    const long long base = k * tile;
    float *yt = y + base + 4 * tid;
    if (yvec && base + tile <= n) {
#pragma unroll
      for (int m = 0; m < SPAN / (4 * SB_THREADS); m++) {
        if (4 * tid + 4 * SB_THREADS * m >= tile) break;
        const int u = SB_THREADS * m;
        float4 o;
        o.x = (float)((hp[0][u] - lp[0][u]) * inv_width);
        o.y = (float)((hp[1][u] - lp[1][u]) * inv_width);
        o.z = (float)((hp[2][u] - lp[2][u]) * inv_width);
        o.w = (float)((hp[3][u] - lp[3][u]) * inv_width);
        *reinterpret_cast<float4 *>(yt + 4 * u) = o;
      }
    } else { /* last tile, or y not 16-byte aligned: the same values, scalar stores */
      for (int m = 0; m < SPAN / (4 * SB_THREADS); m++) {
        const int u = SB_THREADS * m;
        if (4 * tid + 4 * u >= tile) break;
#pragma unroll
        for (int c = 0; c < 4; c++)
          if (base + 4 * tid + 4 * u + c < n)
            yt[4 * u + c] = (float)((hp[c][u] - lp[c][u]) * inv_width);
      }
    }
  }
  cp_async_wait<0>();
}

/* ---- plan and launcher ---- */

/* Tiles a block takes (the grid's divisor): the shape labs' rule, 2 for the 4096-float
 * span, 1 for the 8192-float one. */
static int tiles_per_block(bool wide) { return wide ? 1 : 2; }

/* The instance, launch shape and shared memory for n and a radius that has a tile. */
static void plan_shape(int n, int radius, int tile, struct cuda_plan *p) {
  const bool wide = stencil_best_span(radius) > STENCIL_BEST_SPAN;
  if (wide)
    cuda_plan_set(p, KFUNC(stencil_best_kernel<4>), "stencil_best_kernel<4>",
                  "halo over 2048: 8192-float spans, 1 tile a block, one stage (2 blocks an "
                  "SM); 256 threads: span by cp.async, double warp scans");
  else
    cuda_plan_set(p, KFUNC(stencil_best_kernel<2>), "stencil_best_kernel<2>",
                  "4096-float spans, 2 tiles a block, one stage (4 blocks an SM); 256 threads: "
                  "span by cp.async, double warp scans");
  p->block = dim3(SB_THREADS);
  p->dyn_smem_bytes = wide ? sb_shape<4>::SMEM_BYTES : sb_shape<2>::SMEM_BYTES;
  p->grid = dim3(ceil_div(ceil_div(n, tile), tiles_per_block(wide)));
}

/* Both instances' dynamic shared memory is above the default 48 KiB: raised once per
 * instance and device (bit d of smem_raised[wide]), before the first launch there,
 * with the largest shared carveout, as measured (4 narrow blocks an SM take 193 KiB). */
static std::atomic<unsigned long long> smem_raised[2];

static cudaError_t raise_smem(const struct cuda_plan *p, bool wide) {
  return smem_raise_once(&smem_raised[wide], p->func, p->dyn_smem_bytes, true);
}

int stencil_best_plan(int n, int radius, struct cuda_plan *p, char *why, size_t why_len) {
  const int tile = stencil_best_tile(radius);
  if (tile == 0) {
    cuda_plan_set(p, KFUNC(stencil_best_kernel<2>), "stencil_best_kernel<2>", "");
    snprintf(why, why_len, "stencil best supports radii 0..%d, not %d", STENCIL_BEST_MAX_RADIUS,
             radius);
    return -1;
  }
  plan_shape(n, radius, tile, p);
  struct cuda_device_limits d;
  if (cuda_device_limits_get(&d) != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, why_len, "stencil best: cannot read the device's attributes");
    return -1;
  }
  const int optin = d.smem_optin;
  if ((size_t)optin < p->dyn_smem_bytes) {
    snprintf(why, why_len,
             "stencil best at radius %d needs %zu bytes of shared memory per block (this "
             "device: %d)",
             radius, p->dyn_smem_bytes, optin);
    return -1;
  }
  /* now, so that the occupancy reported from the plan is the launch's */
  if (raise_smem(p, stencil_best_span(radius) > STENCIL_BEST_SPAN) != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, why_len, "stencil best: cannot raise the kernel's shared memory");
    return -1;
  }
  return 0;
}

cudaError_t stencil_best_launch(const float *d_x, float *d_y, int n, int radius, cudaStream_t s) {
  int tile = stencil_best_tile(radius);
  if (tile == 0) return cudaErrorInvalidConfiguration;
  struct cuda_plan p;
  plan_shape(n, radius, tile, &p);
  cudaError_t e = raise_smem(&p, stencil_best_span(radius) > STENCIL_BEST_SPAN);
  if (e != cudaSuccess) return e;
  int xvec = aligned16(d_x), yvec = aligned16(d_y);
  double inv_width = 1.0 / (double)(2 * radius + 1);
  void *args[] = {&d_x, &d_y, &n, &radius, &tile, &inv_width, &xvec, &yvec};
  return cuda_plan_launch_pdl(&p, args, s);
}
