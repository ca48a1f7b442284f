/* scan's kernels and launcher, checked and timed beside CUB on the H200 before they
 * moved here: naive (Hillis-Steele per 1024-element
 * tile) and shared (Blelloch's work-efficient tree per tile), each followed by the same
 * multi-level pass that scans the tile totals and adds them back; best (one pass,
 * decoupled look-back, 16-byte accesses, 128 threads a tile of 4096: held in registers
 * where one wave holds every tile, else staged in shared memory by cp.async, which lets
 * an SM hold more tiles; the register form at 4-byte accesses for unaligned data; a
 * persistent form keeping the next tiles' loads in flight with cp.async ran at a
 * quarter of CUB's rate and was dropped: a prefetched tile publishes its aggregate only
 * once its block is done with the tile before it, so its successors wait behind that);
 * cub (cub::DeviceScan::InclusiveSum). The launcher never synchronizes, never
 * allocates (scan_temp_bytes of temp from the caller) and refuses the default stream.
 * Header only (templates and static inline): scan.cu includes it. */
#ifndef GPULAB_SCAN_CUH
#define GPULAB_SCAN_CUH

#include <cuda_runtime.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <cub/device/device_scan.cuh>

#include "kernels/core/cuda/combine.cuh"
#include "kernels/core/cuda/cp_async.cuh"
#include "kernels/core/cuda/launch.cuh"
#include "kernels/scan/scan.h"

/* ---- naive and shared: one tile per block ---- */

enum { SCAN_HILLIS_STEELE, SCAN_BLELLOCH };

/* Blelloch's shared index with one pad float per 32: the tree's strided accesses
 * spread over the banks (GPU Gems 3, 39.2.3). */
__device__ __forceinline__ int scan_pad(int i) { return i + (i >> 5); }

/* Block b scans elements [1024 b, 1024 b + 1024) of in into out (inclusive, within the
 * tile; in and out may be the same array) and, when tile_sums is not NULL, stores the
 * tile's total in tile_sums[b]. Elements past n count as 0 and are not stored.
 * HILLIS_STEELE: 1024 threads, thread t owns element t; log2(1024) = 10 steps, step k
 * adds the value 2^k to the left, double-buffered in shared memory, a barrier each
 * (n log n additions: the lecture's simple form). BLELLOCH: 512 threads, thread t
 * loads elements t and t + 512 (coalesced); up-sweep builds partial sums in place (10
 * levels), down-sweep turns them into the exclusive scan (10 levels), plus the
 * element's own value gives the inclusive one (2n additions). */
template <int ALGO>
__global__ __launch_bounds__(ALGO == SCAN_HILLIS_STEELE
                                 ? SCAN_TILE
                                 : SCAN_TILE / 2) void scan_tile_kernel(const float *in, float *out,
                                                                        size_t n,
                                                                        float *tile_sums) {
  const int t = threadIdx.x;
  const size_t base = (size_t)blockIdx.x * SCAN_TILE;
  if (ALGO == SCAN_HILLIS_STEELE) {
    __shared__ float buf[2][SCAN_TILE];
    const size_t i = base + t;
    buf[0][t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    int p = 0;
#pragma unroll
    for (int o = 1; o < SCAN_TILE; o <<= 1) {
      float a = buf[p][t];
      if (t >= o) a += buf[p][t - o];
      buf[p ^ 1][t] = a;
      p ^= 1;
      __syncthreads();
    }
    const float r = buf[p][t];
    if (i < n) out[i] = r;
    if (tile_sums && t == SCAN_TILE - 1) tile_sums[blockIdx.x] = r;
  } else {
    __shared__ float s[SCAN_TILE + SCAN_TILE / 32];
    __shared__ float total;
    const int ai = t, bi = t + SCAN_TILE / 2;
    const float xa = base + ai < n ? in[base + ai] : 0.0f;
    const float xb = base + bi < n ? in[base + bi] : 0.0f;
    s[scan_pad(ai)] = xa;
    s[scan_pad(bi)] = xb;
    int off = 1;
#pragma unroll
    for (int d = SCAN_TILE / 2; d > 0; d >>= 1, off <<= 1) {
      __syncthreads();
      if (t < d) s[scan_pad(off * (2 * t + 2) - 1)] += s[scan_pad(off * (2 * t + 1) - 1)];
    }
    if (t == 0) {
      total = s[scan_pad(SCAN_TILE - 1)];
      s[scan_pad(SCAN_TILE - 1)] = 0.0f;
    }
#pragma unroll
    for (int d = 1; d < SCAN_TILE; d <<= 1) {
      off >>= 1;
      __syncthreads();
      if (t < d) {
        const int a = scan_pad(off * (2 * t + 1) - 1), b = scan_pad(off * (2 * t + 2) - 1);
        const float u = s[a];
        s[a] = s[b];
        s[b] += u;
      }
    }
    __syncthreads();
    if (base + ai < n) out[base + ai] = s[scan_pad(ai)] + xa;
    if (base + bi < n) out[base + bi] = s[scan_pad(bi)] + xb;
    if (tile_sums && t == 0) tile_sums[blockIdx.x] = total;
  }
}

/* The second pass: one thread per element of tiles 1, 2, ... (BLOCK a block, grid
 * ceil((n - 1024) / BLOCK)); element i adds tile_incl[i / 1024 - 1], the inclusive
 * scan of the tile totals, i.e. everything in the tiles before its own. */
template <int BLOCK>
__global__ __launch_bounds__(BLOCK) void scan_add_kernel(float *y, size_t n,
                                                         const float *__restrict__ tile_incl) {
  const size_t i = SCAN_TILE + (size_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] += tile_incl[i / SCAN_TILE - 1];
}

/* ---- best: single pass, decoupled look-back (Merrill and Garland, 2016) ---- */

/* Tile status: a 64-bit word per tile, flag in the high half, the float's bits in the
 * low, written and read whole (so a reader never sees a flag without its value). The
 * flag is the launch's epoch << 2 | the kind: an aggregate or an inclusive prefix; any
 * other flag (a zeroed word, another launch's) means nothing published yet. The epoch
 * is the word after the tiles' (scan_best_epoch): a launch's last tile adds one to it,
 * so the next launch on the same words needs no zeroing. */
enum { SCAN_FLAG_A = 1, SCAN_FLAG_P = 2 }; /* the kinds: aggregate, inclusive */
/* best's longest sleep in the look-back, ns, and the windows of 32 tiles it reads a step
 * (bench/lab/scan_lookback.cu times others). */
#define SCAN_BEST_SLEEP_MAX 512u
#define SCAN_BEST_LOOKBACK_DEPTH 1

__device__ __forceinline__ unsigned scan_flag_of(unsigned epoch, unsigned kind) {
  return epoch << 2 | kind;
}
__device__ __forceinline__ unsigned long long scan_pack(unsigned flag, float v) {
  return ((unsigned long long)flag << 32) | __float_as_uint(v);
}
__device__ __forceinline__ unsigned scan_flag(unsigned long long w) { return (unsigned)(w >> 32); }
__device__ __forceinline__ float scan_value(unsigned long long w) {
  return __uint_as_float((unsigned)w);
}
__device__ __forceinline__ unsigned long long scan_status_load(const unsigned long long *p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void scan_status_store(unsigned long long *p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}

/* Warp 0 of tile `tile` (>= 1) in launch `epoch`: publishes its aggregate, then walks
 * back over the predecessors DEPTH windows of 32 at a time (lane l reads tiles pred -
 * 32k - l, k < DEPTH, all DEPTH loads issued together: one round trip a step), and
 * takes the windows nearest first, waiting while any tile of the window has published
 * nothing. At the first window holding an inclusive prefix (the lowest such lane, i.e.
 * the nearest tile) it adds that prefix and the aggregates between; a window of
 * aggregates only is added whole and the walk goes on. Returns the tile's exclusive
 * prefix, the same bits in every lane. Needs every tile below to be resident or done:
 * blocks start in index order, which CUB's look-back relies on too. While it waits it
 * sleeps 32 ns, doubling up to SLEEP_MAX (0: it spins). */
template <unsigned SLEEP_MAX, int DEPTH>
__device__ __forceinline__ float scan_lookback(unsigned long long *status, long long tile,
                                               float agg, int lane, unsigned epoch) {
  const unsigned e4 = scan_flag_of(epoch, 0), fp = e4 + SCAN_FLAG_P;
  if (lane == 0) scan_status_store(status + tile, scan_pack(e4 + SCAN_FLAG_A, agg));
  float excl = 0.0f;
  unsigned ns = 32;
  for (long long pred = tile - 1;; pred -= 32 * DEPTH) {
    unsigned long long w[DEPTH];
#pragma unroll
    for (int k = 0; k < DEPTH; k++) {
      const long long idx = pred - 32 * k - lane;
      w[k] = idx >= 0 ? scan_status_load(status + idx) : scan_pack(fp, 0.0f);
    }
#pragma unroll
    for (int k = 0; k < DEPTH; k++) {
      /* this launch's aggregate or prefix: the flag minus e4 is 1 or 2 */
      while (__any_sync(COMBINE_FULL_MASK, scan_flag(w[k]) - e4 - 1u > 1u)) {
        if constexpr (SLEEP_MAX > 0) {
          __nanosleep(ns);
          if (ns < SLEEP_MAX) ns *= 2;
        }
        if (scan_flag(w[k]) - e4 - 1u > 1u) w[k] = scan_status_load(status + pred - 32 * k - lane);
      }
      const float v = scan_value(w[k]);
      const unsigned pm = __ballot_sync(COMBINE_FULL_MASK, scan_flag(w[k]) == fp);
      if (pm) {
        const int j = __ffs(pm) - 1;
        const float between = warp_sum(lane < j ? v : 0.0f);
        return (__shfl_sync(COMBINE_FULL_MASK, v, j) + between) + excl;
      }
      excl += warp_sum(v);
    }
  }
}

/* Element idx .. idx+3 (idx % 4 == 0), zero past n; VEC: one 16-byte access when all
 * four are inside (x and y 16-byte aligned), else four 4-byte ones. */
template <bool VEC>
__device__ __forceinline__ float4 scan_load4(const float *x, size_t idx, size_t n) {
  if (VEC && idx + 3 < n) return *reinterpret_cast<const float4 *>(x + idx);
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (idx < n) v.x = x[idx];
  if (idx + 1 < n) v.y = x[idx + 1];
  if (idx + 2 < n) v.z = x[idx + 2];
  if (idx + 3 < n) v.w = x[idx + 3];
  return v;
}
template <bool VEC, bool STREAM = false>
__device__ __forceinline__ void scan_store4(float *y, size_t idx, size_t n, float4 v) {
  if (VEC && idx + 3 < n) {
    if (STREAM)
      __stcs(reinterpret_cast<float4 *>(y + idx), v); /* st.global.cs: evict first */
    else
      *reinterpret_cast<float4 *>(y + idx) = v;
    return;
  }
  if (idx < n) y[idx] = v.x;
  if (idx + 1 < n) y[idx + 1] = v.y;
  if (idx + 2 < n) y[idx + 2] = v.z;
  if (idx + 3 < n) y[idx + 3] = v.w;
}

/* A warp's step of one segment of a tile (lane l holds its float4 l): returns the
 * float4 scanned inclusive within the segment (3 adds in the thread, a warp scan of the
 * float4 totals, the exclusive part added); lane 31 parks the segment's total in
 * *total. Both forms of best's kernel take it, so their additions are the same. */
__device__ __forceinline__ float4 scan_best_segment(float4 v, int lane, float *total) {
  v.y += v.x;
  v.z += v.y;
  v.w += v.z;
  const float inc = warp_inclusive(v.w, lane);
  float ex = __shfl_up_sync(COMBINE_FULL_MASK, inc, 1);
  if (lane == 0) ex = 0.0f;
  if (lane == 31) *total = inc;
  return make_float4(v.x + ex, v.y + ex, v.z + ex, v.w + ex);
}

/* The launch's epoch: the word after the gridDim.x tiles' status words. */
__device__ __forceinline__ unsigned *scan_best_epoch(unsigned long long *status) {
  return reinterpret_cast<unsigned *>(status + gridDim.x);
}

/* Warp 0's step of a tile, between the block's two barriers: seg holds the tile's 32
 * segment totals in order; scans them (the tile's aggregate), does the look-back,
 * publishes the tile's inclusive prefix and leaves each segment's exclusive prefix,
 * look-back included, in seg. The last tile then moves the epoch on: every other tile
 * has published (its prefix needed them all), so every tile has read it. */
template <unsigned SLEEP_MAX, int DEPTH>
__device__ __forceinline__ void scan_best_publish(unsigned long long *status, long long tile,
                                                  float *seg, int lane) {
  const float inc = warp_inclusive(seg[lane], lane);
  float ex = __shfl_up_sync(COMBINE_FULL_MASK, inc, 1);
  if (lane == 0) ex = 0.0f;
  const float agg = __shfl_sync(COMBINE_FULL_MASK, inc, 31);
  const unsigned epoch = *reinterpret_cast<volatile unsigned *>(scan_best_epoch(status));
  float excl = 0.0f;
  if (tile > 0) excl = scan_lookback<SLEEP_MAX, DEPTH>(status, tile, agg, lane, epoch);
  if (lane == 0) {
    scan_status_store(status + tile, scan_pack(scan_flag_of(epoch, SCAN_FLAG_P), excl + agg));
    if (tile == (long long)gridDim.x - 1) /* its word is the epoch's */
      *reinterpret_cast<unsigned *>(status + tile + 1) = epoch + 1;
  }
  seg[lane] = excl + ex;
}

/* The work of one 4096-element tile once its data is in registers: v[j] is float4 j*BLOCK
 * + t of the tile (round j, thread t), so every load and store is a warp's 512
 * contiguous bytes; W = BLOCK/32 warps, R = 32/W rounds. The tile is 32 segments of 32
 * float4 (segment j*W + w: round j, warp w), in order. Each thread scans its float4 in
 * registers (3 adds), each warp scans its 32 float4 totals (shuffles) and parks the
 * segment total in seg; warp 0 scans the 32 segment totals, which gives the tile's
 * aggregate, does the look-back, publishes the inclusive prefix, and leaves each
 * segment's prefix in seg;
 * then every element, which already holds its prefix within the segment, adds its
 * segment's and is stored. Two barriers; a caller that calls it again for another
 * tile needs a barrier in between (seg is read after the second). */
template <int BLOCK, bool VEC, unsigned SLEEP_MAX, int DEPTH>
__device__ __forceinline__ void scan_best_tile(float4 (&v)[32 / (BLOCK / 32)],
                                               float *__restrict__ y, size_t n,
                                               unsigned long long *status, long long tile,
                                               float *seg) {
  constexpr int W = BLOCK / 32, R = 32 / W;
  static_assert(W * R == 32 && R * BLOCK * 4 == SCAN_BEST_TILE, "32 segments of 32 float4");
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const size_t base = (size_t)tile * SCAN_BEST_TILE;
#pragma unroll
  for (int j = 0; j < R; j++) v[j] = scan_best_segment(v[j], lane, &seg[j * W + w]);
  __syncthreads();
  if (w == 0) scan_best_publish<SLEEP_MAX, DEPTH>(status, tile, seg, lane);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < R; j++) {
    const float off = seg[j * W + w];
    scan_store4<VEC>(y, base + 4 * (size_t)(j * BLOCK + t), n,
                     make_float4(v[j].x + off, v[j].y + off, v[j].z + off, v[j].w + off));
  }
}

/* best's register form: one tile a block, grid = ceil(n / 4096), tile = blockIdx.x
 * (blocks start in index order, so every tile below is resident or done); the R loads
 * go out before anything waits. A tile waits in registers for the look-back with no
 * load in flight, so the rate follows the tiles an SM holds: 8 at 128 threads (63
 * registers), fewer at other block sizes. best runs it where one wave holds every
 * tile (scan_best_registers) and for unaligned x or y (<256, false>); above one wave,
 * the staged form below. */
template <int BLOCK, bool VEC, unsigned SLEEP_MAX = SCAN_BEST_SLEEP_MAX,
          int DEPTH = SCAN_BEST_LOOKBACK_DEPTH>
__global__ __launch_bounds__(BLOCK) void scan_best_kernel(const float *__restrict__ x,
                                                          float *__restrict__ y, size_t n,
                                                          unsigned long long *status) {
  constexpr int R = 32 / (BLOCK / 32);
  __shared__ float seg[32];
  pdl_wait(); /* the kernel before may have written x, or the status words */
  const int t = threadIdx.x;
  const long long tile = blockIdx.x;
  const size_t base = (size_t)tile * SCAN_BEST_TILE;
  float4 v[R];
#pragma unroll
  for (int j = 0; j < R; j++) v[j] = scan_load4<VEC>(x, base + 4 * (size_t)(j * BLOCK + t), n);
  scan_best_tile<BLOCK, VEC, SLEEP_MAX, DEPTH>(v, y, n, status, tile, seg);
}

/* best's staged form, for 16-byte aligned x and y: the same tile and work, but the tile
 * is copied into shared memory by cp.async, where the register form loads it into
 * registers. A tile that waits on its predecessors then holds shared memory, not
 * registers, and an SM holds 13 tiles (its 227 KiB) instead of 8; the rate follows the
 * tiles an SM holds (bench/RESULTS.md, "The scan's tiles an SM holds"). Each thread scans
 * the float4s it copied, in place (it reads back only its own copies: no barrier), warp
 * 0 publishes, then every float4 adds its segment's prefix on its way out. In the last
 * tile a float4 that straddles n is copied float by float and one past n zero-filled;
 * stores stop at n. STREAM (best's): the stores marked evict-first, since nothing here
 * reads them back (a little faster: bench/RESULTS.md, "Three tails that did not
 * shorten"). */
template <int BLOCK, bool STREAM = false>
__global__ __launch_bounds__(BLOCK) void scan_staged_kernel(const float *__restrict__ x,
                                                            float *__restrict__ y, size_t n,
                                                            unsigned long long *status) {
  constexpr int W = BLOCK / 32, R = 32 / W;
  static_assert(W * R == 32 && R * BLOCK * 4 == SCAN_BEST_TILE, "32 segments of 32 float4");
  __shared__ __align__(16) float4 stage[R * BLOCK];
  __shared__ float seg[32];
  pdl_wait(); /* the kernel before may have written x, or the status words */
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const long long tile = blockIdx.x;
  const size_t base = (size_t)tile * SCAN_BEST_TILE;
#pragma unroll
  for (int j = 0; j < R; j++) {
    const size_t idx = base + 4 * (size_t)(j * BLOCK + t);
    float *dst = reinterpret_cast<float *>(&stage[j * BLOCK + t]);
    if (idx + 3 < n) {
      cp_async16(dst, x + idx);
    } else {
#pragma unroll
      for (int k = 0; k < 4; k++) cp_async4(dst + k, idx + k < n ? x + idx + k : x, idx + k < n);
    }
  }
  cp_async_commit();
  cp_async_wait<0>();
#pragma unroll
  for (int j = 0; j < R; j++)
    stage[j * BLOCK + t] = scan_best_segment(stage[j * BLOCK + t], lane, &seg[j * W + w]);
  __syncthreads();
  if (w == 0)
    scan_best_publish<SCAN_BEST_SLEEP_MAX, SCAN_BEST_LOOKBACK_DEPTH>(status, tile, seg, lane);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < R; j++) {
    const float off = seg[j * W + w];
    const float4 v = stage[j * BLOCK + t];
    scan_store4<true, STREAM>(y, base + 4 * (size_t)(j * BLOCK + t), n,
                              make_float4(v.x + off, v.y + off, v.z + off, v.w + off));
  }
}

/* Raises the staged kernel's shared-memory carveout to the largest once per device (its
 * 16 KiB are static; the plan calls it too, so that the occupancy reported is the
 * launch's). */
static inline cudaError_t scan_staged_raise() {
  static std::atomic<unsigned long long> raised{0};
  return smem_raise_once(
      &raised, reinterpret_cast<const void *>(&scan_staged_kernel<SCAN_BEST_BLOCK, true>), 0, true);
}

/* Tiles the register form holds at once on the current device (its blocks an SM x the
 * SMs), asked of the driver once per device: the plan's call asks, launches find it.
 * 0 when it cannot be asked. */
static inline long long scan_register_wave() {
  static std::atomic<long long> cache[64];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 0;
  long long v = cache[dev].load(std::memory_order_relaxed);
  if (v > 0) return v;
  struct cuda_device_limits d;
  int per_sm = 0;
  if (cuda_device_limits_get(&d) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &per_sm, scan_best_kernel<SCAN_BEST_BLOCK, true>, SCAN_BEST_BLOCK, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  v = (long long)per_sm * d.sms;
  cache[dev].store(v, std::memory_order_relaxed);
  return v;
}

/* Whether best runs the register form at n (aligned data): when its one wave holds
 * every tile, no tile waits for a slot, and staging would only add its pass through
 * shared memory (measured: bench/RESULTS.md); above, the staged form. */
static inline bool scan_best_registers(size_t n) {
  const long long wave = scan_register_wave();
  return wave > 0 && (long long)scan_best_tiles(n) <= wave;
}

/* ---- plans ---- */

/* Temp storage variant needs at n elements (0: none). Returns cudaSuccess,
 * cudaErrorInvalidValue (unknown variant, cub above INT_MAX elements, best above 2^31
 * tiles) or CUB's error. best: a status word a tile, and one more word: the launch's
 * epoch (scan_best_epoch). */
static inline cudaError_t scan_temp_bytes(int variant, size_t n, size_t *bytes) {
  *bytes = 0;
  switch (variant) {
  case SCAN_NAIVE:
  case SCAN_SHARED: {
    struct scan_levels L;
    scan_levels_of(n, &L);
    *bytes = L.bytes;
    return cudaSuccess;
  }
  case SCAN_BEST:
    if (scan_best_tiles(n) > (size_t)INT_MAX) return cudaErrorInvalidValue;
    *bytes = align256((scan_best_tiles(n) + 1) * sizeof(unsigned long long));
    return cudaSuccess;
  case SCAN_CUB:
    if (n > (size_t)INT_MAX) return cudaErrorInvalidValue;
    return cub::DeviceScan::InclusiveSum(nullptr, *bytes, (const float *)nullptr, (float *)nullptr,
                                         (int)n, (cudaStream_t)0);
  default: return cudaErrorInvalidValue;
  }
}

/* ---- launchers of best's forms ---- */

/* Zeroes best's status words and the epoch after them on s (temp of any contents); the
 * main kernel, launched next as its PDL dependant, waits for it first thing. */
static inline cudaError_t scan_best_zero(void *d_temp, size_t tiles, cudaStream_t s) {
  return zero_launch(static_cast<uint32_t *>(d_temp), 2 * (tiles + 1), s);
}

/* best: when x and y are 16-byte aligned, the register form at 128 threads a tile where
 * its one wave holds every tile (scan_best_registers), else the staged kernel; unaligned
 * data, the 256-thread register form with 4-byte accesses (<128, false> spills). n > 0;
 * arguments checked by scan_launch. */
static inline cudaError_t scan_best_launch(const float *d_x, size_t n, float *d_y, void *d_temp,
                                           bool temp_kept, cudaStream_t s) {
  const size_t tiles = scan_best_tiles(n);
  if (tiles > (size_t)INT_MAX) return cudaErrorInvalidValue;
  unsigned long long *status = static_cast<unsigned long long *>(d_temp);
  cudaError_t e = scan_staged_raise();
  if (e == cudaSuccess && !temp_kept) e = scan_best_zero(d_temp, tiles, s);
  if (e != cudaSuccess) return e;
  if (aligned16(d_x) && aligned16(d_y) && scan_best_registers(n))
    return launch_pdl(scan_best_kernel<SCAN_BEST_BLOCK, true>, dim3((unsigned)tiles),
                      dim3(SCAN_BEST_BLOCK), 0, s, d_x, d_y, n, status);
  if (aligned16(d_x) && aligned16(d_y))
    return launch_pdl(scan_staged_kernel<SCAN_BEST_BLOCK, true>, dim3((unsigned)tiles),
                      dim3(SCAN_BEST_BLOCK), 0, s, d_x, d_y, n, status);
  return launch_pdl(scan_best_kernel<SCAN_BEST_SCALAR_BLOCK, false>, dim3((unsigned)tiles),
                    dim3(SCAN_BEST_SCALAR_BLOCK), 0, s, d_x, d_y, n, status);
}

/* d_y[i] = d_x[0] + ... + d_x[i] for i < n, on stream s (n == 0 launches nothing).
 * d_temp: scan_temp_bytes bytes, 256-byte aligned, any contents, unless temp_kept: the
 * caller hands d_temp to every best launch at this n and zeroed it before the first;
 * best then zeroes nothing (each launch leaves the next its epoch) and is one kernel
 * instead of two. d_y must not alias d_x or d_temp; the caller owns all three. best
 * takes 16-byte accesses when d_x and d_y are both 16-byte aligned, 4-byte ones (same
 * kernel) otherwise. Returns cudaSuccess, the first launch error, or
 * cudaErrorInvalidValue (default stream, unknown variant, NULL buffers, temp too small;
 * cub: also a NULL temp, and n above INT_MAX). Never synchronizes; capturable. */
static inline cudaError_t scan_launch(int variant, const float *d_x, size_t n, float *d_y,
                                      void *d_temp, size_t temp_bytes, bool temp_kept,
                                      cudaStream_t s) {
  if (cuda_is_default_stream(s) || (n && (!d_x || !d_y))) return cudaErrorInvalidValue;
  cudaError_t e = cudaSuccess;
  if (variant == SCAN_CUB) { /* CUB checks temp_bytes itself; a NULL temp is its size query */
    if (n > (size_t)INT_MAX || !d_temp) return cudaErrorInvalidValue;
  } else {
    size_t need = 0;
    if ((e = scan_temp_bytes(variant, n, &need)) != cudaSuccess) return e;
    if (need > temp_bytes || (need && !d_temp)) return cudaErrorInvalidValue;
  }
  if (n == 0) return cudaSuccess;
  switch (variant) {
  case SCAN_NAIVE:
  case SCAN_SHARED: {
    struct scan_levels L;
    scan_levels_of(n, &L);
    char *tmp = static_cast<char *>(d_temp);
    for (int l = 0; l < L.count; l++) {
      const float *in = l == 0 ? d_x : reinterpret_cast<float *>(tmp + L.off[l]);
      float *out = l == 0 ? d_y : reinterpret_cast<float *>(tmp + L.off[l]);
      float *sums = l + 1 < L.count ? reinterpret_cast<float *>(tmp + L.off[l + 1]) : nullptr;
      const unsigned grid = (unsigned)((L.len[l] + SCAN_TILE - 1) / SCAN_TILE);
      if (variant == SCAN_NAIVE)
        scan_tile_kernel<SCAN_HILLIS_STEELE><<<grid, SCAN_TILE, 0, s>>>(in, out, L.len[l], sums);
      else
        scan_tile_kernel<SCAN_BLELLOCH><<<grid, SCAN_TILE / 2, 0, s>>>(in, out, L.len[l], sums);
      if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    for (int l = L.count - 2; l >= 0; l--) {
      float *out = l == 0 ? d_y : reinterpret_cast<float *>(tmp + L.off[l]);
      const float *incl = reinterpret_cast<const float *>(tmp + L.off[l + 1]);
      const unsigned grid = (unsigned)((L.len[l] - SCAN_TILE + SCAN_ADD_BLOCK - 1) /
                                       SCAN_ADD_BLOCK);
      scan_add_kernel<SCAN_ADD_BLOCK><<<grid, SCAN_ADD_BLOCK, 0, s>>>(out, L.len[l], incl);
      if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
  case SCAN_BEST: return scan_best_launch(d_x, n, d_y, d_temp, temp_kept, s);
  case SCAN_CUB: {
    size_t bytes = temp_bytes;
    e = cub::DeviceScan::InclusiveSum(d_temp, bytes, d_x, d_y, (int)n, s);
    cudaError_t last = cudaGetLastError();
    return e != cudaSuccess ? e : last;
  }
  default: return cudaErrorInvalidValue;
  }
}

#endif
