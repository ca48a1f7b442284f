/* histogram's kernels and launcher, checked and timed beside CUB on the H200 before
 * they moved here: naive (a global atomic per element), shared (per-block private
 * histograms in shared memory, merged with global atomics; bins beyond 48 KiB are tiled
 * over grid.y), best (persistent blocks, 16-byte loads, private copies of each bin in
 * at most 4 KiB, a coalesced merge: a warp's 32 atomics fall on one line, where one
 * atomic a bin a block queued on the same lines; 16-bit packed counters above 16384
 * bins, swept for overflow every 32,768 samples) and cub
 * (cub::DeviceHistogram::HistogramEven). Counts are uint32, binned by histogram_bin
 * (histogram.h). The launcher never synchronizes, never allocates
 * (histogram_temp_bytes from the caller: 0 but for cub) and refuses the default stream.
 * Header only (templates and static inline): histogram.cu includes it. */
#ifndef GPULAB_HISTOGRAM_CUH
#define GPULAB_HISTOGRAM_CUH

#include <cuda_runtime.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <cub/device/device_histogram.cuh>

#include "kernels/core/cuda/combine.cuh"
#include "kernels/core/cuda/launch.cuh"
#include "kernels/histogram/histogram.h"

#define HISTOGRAM_BLOCK 256              /* naive and shared */
#define HISTOGRAM_SHARED_PASS_BINS 12288 /* shared: bins a block holds (48 KiB) */
#define HISTOGRAM_BEST_BLOCK 1024
#define HISTOGRAM_BEST_U32_WORDS 16384 /* best: u32 counters a block holds (64 KiB) */
#define HISTOGRAM_BEST_COPY_WORDS 1024 /* best: u32 copies of the bins fill at most this */

/* ---- naive and shared ---- */

/* naive: one thread per element, BLOCK a block, grid ceil(n/BLOCK); atomicAdd on the
 * global bin (hist zeroed before). With few bins every warp's 32 atomics go to a few
 * addresses and queue in L2. */
template <int BLOCK>
__global__ __launch_bounds__(BLOCK) void histogram_naive_kernel(const float *__restrict__ x,
                                                                size_t n, int bins, float scale,
                                                                uint32_t *hist) {
  const size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const int b = histogram_bin(x[i], bins, scale);
  if (b >= 0) atomicAdd(hist + b, 1u);
}

/* shared: a grid of (G, passes) blocks; block (g, p) keeps bins [p*per_pass, ...) of
 * its own histogram in shared memory (dynamic, per_pass u32), reads elements g*BLOCK
 * + t, + G*BLOCK, ... (grid-stride, coalesced), counts those in its bin range with
 * shared atomics, then adds its nonzero bins to hist with global atomics. One pass
 * holds 12288 bins (48 KiB); more bins take more passes, each reading all of x again
 * (65536 bins: 6 passes). G fills the SMs once, so the merge costs G * bins atomics. */
template <int BLOCK>
__global__ __launch_bounds__(BLOCK) void histogram_shared_kernel(const float *__restrict__ x,
                                                                 size_t n, int bins, float scale,
                                                                 int per_pass, uint32_t *hist) {
  extern __shared__ uint32_t h[];
  const int t = threadIdx.x, lo = (int)blockIdx.y * per_pass;
  const int nb = min(per_pass, bins - lo);
  for (int j = t; j < nb; j += BLOCK) h[j] = 0;
  __syncthreads();
  const size_t stride = (size_t)gridDim.x * BLOCK;
  for (size_t i = (size_t)blockIdx.x * BLOCK + t; i < n; i += stride) {
    const int b = histogram_bin(x[i], bins, scale) - lo; /* dropped: negative */
    if ((unsigned)b < (unsigned)nb) atomicAdd(h + b, 1u);
  }
  __syncthreads();
  for (int j = t; j < nb; j += BLOCK)
    if (h[j]) atomicAdd(hist + lo + j, h[j]);
}

/* ---- best ---- */

/* One sample into the block's counters. u32 (PACKED false): C = 2^log2c interleaved
 * copies of each bin, thread t counts into copy t % C, counter (b << log2c) | (t % C):
 * with C >= 32 (bins <= 32) every lane of a warp has its own copy in its own bank, so a
 * warp's 32 atomics never meet, whatever the data; fewer copies bound the bank
 * conflicts that data could force at 32 / C. PACKED: bins 2w and 2w+1 share word w as
 * two 16-bit halves; histogram_sweep empties them before they overflow, so the atomic
 * need not return the old count. */
template <bool PACKED>
__device__ __forceinline__ void histogram_count(uint32_t *sh, float v, int bins, float scale,
                                                int log2c, int rl) {
  const int b = histogram_bin(v, bins, scale);
  if (b < 0) return;
  if (PACKED)
    atomicAdd(sh + (b >> 1), 1u << ((b & 1) << 4));
  else
    atomicAdd(sh + ((b << log2c) | rl), 1u);
}

/* PACKED: moves 0x8000 out of every half at or above it into hist. Between two sweeps a
 * block counts at most 32768 samples, so a half that starts a round below 0x8000 ends
 * it at most 0xffff (no carry into its neighbour) and, swept, below 0x8000 again. The
 * halves to empty are found by reading every counter word, 16 bytes a thread a step
 * (words4: the block's words / 4; they are padded to a multiple of 4); thread t owns
 * words 4t .. 4t+3, 4(t + BLOCK) .. between the two barriers. */
template <int BLOCK>
__device__ __forceinline__ void histogram_sweep(uint32_t *sh, int words4, uint32_t *hist) {
  __syncthreads();
  for (int i = threadIdx.x; i < words4; i += BLOCK) {
    const uint4 q = reinterpret_cast<const uint4 *>(sh)[i];
    if (!((q.x | q.y | q.z | q.w) & 0x80008000u)) continue;
    pdl_wait(); /* hist was zeroed by the kernel before */
    const uint32_t v[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const uint32_t full = v[k] & 0x80008000u;
      if (!full) continue;
      sh[4 * i + k] = v[k] - full;
      if (full & 0x8000u) atomicAdd(hist + 8 * i + 2 * k, 0x8000u);
      if (full >> 16) atomicAdd(hist + 8 * i + 2 * k + 1, 0x8000u);
    }
  }
  __syncthreads();
}

/* best: a persistent grid of G = min(sms * (PACKED ? 1 : 2), chunks) blocks of 1024
 * threads, each with a private histogram in dynamic shared memory (u32: C copies of
 * each bin, bins << log2c words, 4 KiB or one copy of up to 16384 bins, 2 blocks an
 * SM; PACKED: ceil(bins/2) words of two 16-bit counters, 128 KiB at 65536 bins, 1 block
 * an SM). x is a head (0-3 floats to the first 16-byte boundary), n4 float4s and a
 * tail (0-3); chunk c is
 * float4s [c*F*BLOCK, (c+1)*F*BLOCK), thread t takes float4 t, t+BLOCK, ... of it
 * (coalesced 16-byte loads), blocks take chunks c = block, block+G, ... and load the
 * next chunk before counting the current one (its loads stay in flight over the
 * counting and the sweeps' barriers). Past n4 a float4 reads as NaN, which no bin
 * takes. Head and tail go to hist directly (threads 0-5 of block 0). Then each block
 * sums each bin's copies and adds the nonzero ones to hist with global atomics (bins
 * in order across the warps' lanes). hist must be zero at launch (zero_kernel
 * runs before; this kernel is its PDL dependant and waits before its first global
 * atomic; acc is not used). KEPT (u32 only): acc is the caller's own counts (with a
 * ticket after them, histogram_kept_bytes), zero at launch; the blocks add into acc
 * instead, the block that takes the last ticket moves the counts to hist and leaves acc
 * and the ticket zero for the next launch, and hist needs no zeroing; the kernel before
 * it (whatever it was) may have written x, so this one waits for it first thing. */
template <bool PACKED, bool KEPT = false, int BLOCK = HISTOGRAM_BEST_BLOCK, int F = 2>
__global__ __launch_bounds__(BLOCK, PACKED ? 1 : 2048 / BLOCK) void histogram_best_kernel(
    const float *__restrict__ x, size_t n, size_t head, int bins, float scale, int log2c,
    uint32_t *hist, uint32_t *acc) {
  /* PACKED: chunks between sweeps, at most 32768 samples (histogram_sweep) */
  constexpr int ROUND = 32768 / (4 * F * BLOCK);
  static_assert(!PACKED || ROUND >= 1, "a chunk holds more samples than a sweep allows");
  static_assert(!(PACKED && KEPT), "kept counts are the u32 form's");
  extern __shared__ uint32_t sh[];
  if (KEPT) pdl_wait();
  uint32_t *const counts = KEPT ? acc : hist; /* where the blocks add */
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const int words = PACKED ? ((bins + 1) / 2 + 3) & ~3 : bins << log2c;
  for (int i = t; i < words; i += BLOCK) sh[i] = 0;
  __syncthreads();

  const int rl = t & ((1 << log2c) - 1); /* this thread's copy */
  const float4 *x4 = reinterpret_cast<const float4 *>(x + head);
  const size_t n4 = (n - head) / 4, chunks = (n4 + F * BLOCK - 1) / (F * BLOCK);
  const float nan = __int_as_float(0x7fffffff);
  float4 cur[F], nxt[F];
  size_t c = blockIdx.x;
#pragma unroll
  for (int f = 0; f < F; f++) {
    const size_t i = c * F * BLOCK + f * BLOCK + t;
    cur[f] = i < n4 ? x4[i] : make_float4(nan, nan, nan, nan);
  }
  int since = 0;
  for (; c < chunks; c += gridDim.x) {
    const size_t next = c + gridDim.x;
#pragma unroll
    for (int f = 0; f < F; f++) {
      const size_t i = next * F * BLOCK + f * BLOCK + t;
      nxt[f] = next < chunks && i < n4 ? x4[i] : make_float4(nan, nan, nan, nan);
    }
#pragma unroll
    for (int f = 0; f < F; f++) {
      histogram_count<PACKED>(sh, cur[f].x, bins, scale, log2c, rl);
      histogram_count<PACKED>(sh, cur[f].y, bins, scale, log2c, rl);
      histogram_count<PACKED>(sh, cur[f].z, bins, scale, log2c, rl);
      histogram_count<PACKED>(sh, cur[f].w, bins, scale, log2c, rl);
      cur[f] = nxt[f];
    }
    if (PACKED && ++since == ROUND) {
      since = 0;
      histogram_sweep<BLOCK>(sh, words / 4, counts);
    }
  }
  __syncthreads();
  pdl_wait();
  if (blockIdx.x == 0 && t < 6) {
    const size_t tail0 = head + 4 * n4;
    const size_t i = t < 3 ? (size_t)t : tail0 + (t - 3);
    if ((t < 3 && i < head) || (t >= 3 && i < n)) {
      const int b = histogram_bin(x[i], bins, scale);
      if (b >= 0) atomicAdd(counts + b, 1u);
    }
  }
  if (PACKED) {
    for (int b = t; b < bins; b += BLOCK) {
      const uint32_t v = (sh[b >> 1] >> ((b & 1) << 4)) & 0xffffu;
      if (v) atomicAdd(counts + b, v);
    }
  } else {
    /* u32: sum each bin's C copies into its copy 0 (the words of a bin are read and
     * written by one warp only, so in place needs no barrier), then one pass adds the
     * totals to hist with lane l of a warp on bin base + l: a warp's 32 atomics hit
     * 32 consecutive words, one L2 line, one request (the lab's run 1 added each total
     * from the lane that held it: a request a bin a block, queued on few lines). */
    const int C = 1 << log2c;
    if (log2c >= 5) {
      /* C >= 32: warp w sums bin w, w + 32, ...: lane l adds copies l, l + 32, ...
       * (consecutive words, no bank conflict), then a warp sum */
      for (int b = w; b < bins; b += BLOCK / 32) {
        uint32_t v = 0;
        for (int k = lane; k < C; k += 32) v += sh[(b << log2c) + k];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(COMBINE_FULL_MASK, v, o);
        if (lane == 0) sh[b << log2c] = v;
      }
    } else if (log2c > 0) {
      /* 1 < C < 32: warp w sums 32 consecutive words a step: segments of C lanes hold
       * one bin's C copies (conflict-free reads), a segmented shuffle sum */
      for (int base = w * 32; base < words; base += BLOCK) {
        const int wi = base + lane;
        uint32_t v = wi < words ? sh[wi] : 0;
        for (int o = C / 2; o > 0; o >>= 1) v += __shfl_down_sync(COMBINE_FULL_MASK, v, o, C);
        if ((lane & (C - 1)) == 0 && wi < words) sh[wi] = v;
      }
    }
    __syncthreads();
    for (int b = t; b < bins; b += BLOCK) {
      const uint32_t v = sh[b << log2c];
      if (v) atomicAdd(counts + b, v);
    }
  }
  if constexpr (KEPT) {
    __shared__ bool last;
    __threadfence(); /* this thread's adds are visible before the ticket says so */
    __syncthreads();
    unsigned *ticket = reinterpret_cast<unsigned *>(acc + bins);
    if (t == 0) last = atomicInc(ticket, gridDim.x - 1) == gridDim.x - 1; /* wraps to 0 */
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int b = t; b < bins; b += BLOCK) {
      hist[b] = __ldcg(acc + b);
      acc[b] = 0;
    }
  }
}

/* ---- plans ---- */

/* log2 of the u32 copies best keeps per bin: the most, up to 1024 (one a thread), that
 * fit 1024 words (1: 1024, 32: 32, 256: 4, 1024 and up: 1). Every block zeroes its
 * copies and sums them at the end, which below 2^24 elements is much of a launch; the
 * bank conflicts that fewer copies allow cost less on uniform data (bench/RESULTS.md,
 * "The histogram's copies and counters"). */
static inline int histogram_best_log2c(int bins) {
  int r = 0;
  while (r < 10 && ((long long)bins << (r + 1)) <= HISTOGRAM_BEST_COPY_WORDS) r++;
  return r;
}

static inline bool histogram_best_packed(int bins) { return bins > HISTOGRAM_BEST_U32_WORDS; }

/* Bytes of the counts and ticket best keeps when its caller keeps them for every launch
 * (histogram_launch's temp_kept): up to HISTOGRAM_BEST_KEPT_BINS bins, where the last
 * block's move of the counts to hist is short; 0 above (best then zeroes hist first). */
static inline size_t histogram_kept_bytes(int variant, int bins) {
  if (variant != HISTOGRAM_BEST || bins < 1 || bins > HISTOGRAM_BEST_KEPT_BINS) return 0;
  return align256(((size_t)bins + 1) * sizeof(uint32_t));
}

/* Dynamic shared memory of best's block at bins. */
static inline size_t histogram_best_smem(int bins) {
  if (histogram_best_packed(bins)) return (size_t)(((bins + 1) / 2 + 3) & ~3) * sizeof(uint32_t);
  return ((size_t)bins << histogram_best_log2c(bins)) * sizeof(uint32_t);
}

/* Temp storage variant needs (0: none) at n elements and bins. Returns cudaSuccess,
 * cudaErrorInvalidValue (unknown variant, bins outside 1..65536, cub above INT_MAX
 * elements) or CUB's error. */
static inline cudaError_t histogram_temp_bytes(int variant, size_t n, int bins, size_t *bytes) {
  *bytes = 0;
  if (bins < 1 || bins > HISTOGRAM_MAX_BINS) return cudaErrorInvalidValue;
  switch (variant) {
  case HISTOGRAM_NAIVE:
  case HISTOGRAM_SHARED:
  case HISTOGRAM_BEST: return cudaSuccess;
  case HISTOGRAM_CUB:
    if (n > (size_t)INT_MAX) return cudaErrorInvalidValue;
    return cub::DeviceHistogram::HistogramEven(nullptr, *bytes, (const float *)nullptr,
                                               (unsigned int *)nullptr, bins + 1, -1.0f, 1.0f,
                                               (int)n, (cudaStream_t)0);
  default: return cudaErrorInvalidValue;
  }
}

/* shared's launch at n elements and bins on the current device: bins in passes of at
 * most 12288 (grid.y), per_pass bins of dynamic shared memory a block, and as many
 * blocks as fill the SMs once (grid.x, no more than the elements' blocks). The device's
 * limits are read once (cuda_device_limits_get: the plan's call reads them, the
 * launcher's finds them). Returns cudaSuccess or the device query's error. */
static inline cudaError_t histogram_shared_plan(size_t n, int bins, dim3 *grid, int *per_pass,
                                                size_t *smem) {
  const int passes = (bins + HISTOGRAM_SHARED_PASS_BINS - 1) / HISTOGRAM_SHARED_PASS_BINS;
  *per_pass = (bins + passes - 1) / passes;
  *smem = (size_t)*per_pass * sizeof(uint32_t);
  struct cuda_device_limits d;
  const cudaError_t e = cuda_device_limits_get(&d);
  if (e != cudaSuccess) return e;
  if (d.sms < 1) return cudaErrorInvalidDevice;
  long long per_sm = d.smem_per_sm / (long long)(*smem + d.smem_reserved);
  if (per_sm > 2048 / HISTOGRAM_BLOCK) per_sm = 2048 / HISTOGRAM_BLOCK;
  if (per_sm < 1) per_sm = 1;
  long long g = d.sms * per_sm;
  const long long need_blocks = (long long)((n + HISTOGRAM_BLOCK - 1) / HISTOGRAM_BLOCK);
  if (g > need_blocks) g = need_blocks;
  *grid = dim3((unsigned)g, (unsigned)passes);
  return cudaSuccess;
}

/* best's grid at n elements from x (its alignment sets the head: 0-3 floats, *head):
 * min(SMs x (1 packed, 2 u32), chunks of 2 x 1024 float4s), at least 1; 0 when the
 * device cannot be asked. */
static inline unsigned histogram_best_grid(size_t n, const float *x, int bins, size_t *head) {
  const bool packed = histogram_best_packed(bins);
  size_t h = ((16 - ((uintptr_t)x & 15)) & 15) / 4;
  if (h > n) h = n;
  if (head) *head = h;
  const int sms = current_sm_count();
  const size_t chunk = (size_t)2 * HISTOGRAM_BEST_BLOCK; /* F = 2 float4s a thread */
  size_t g = ((n - h) / 4 + chunk - 1) / chunk;
  const size_t cap = (size_t)sms * (packed ? 1 : 2);
  if (g > cap) g = cap;
  if (g < 1) g = 1;
  return sms < 1 ? 0 : (unsigned)g;
}

/* Raises best's dynamic shared-memory limit to its largest block's (64 KiB u32, 128
 * KiB packed) with the largest carveout, once per kernel and device; the plan calls it
 * too, so the backend's occupancy query never finds a lower limit. */
static inline cudaError_t histogram_best_raise(bool packed) {
  static std::atomic<unsigned long long> raised_u32{0}, raised_packed{0};
  const void *func = packed ? reinterpret_cast<const void *>(&histogram_best_kernel<true>)
                            : reinterpret_cast<const void *>(&histogram_best_kernel<false>);
  return smem_raise_once(packed ? &raised_packed : &raised_u32, func,
                         packed ? histogram_best_smem(HISTOGRAM_MAX_BINS)
                                : HISTOGRAM_BEST_U32_WORDS * sizeof(uint32_t),
                         true);
}

/* ---- launcher ---- */

/* d_hist[0..bins) = counts of d_x[0..n) by histogram_bin (all zero for n == 0), on
 * stream s. naive, shared and best add into d_hist: hist_zeroed says the caller zeroed
 * it on s before (they then launch their kernel alone; best's is then nobody's PDL
 * dependant and its waits return at once); false, they zero it first (naive and shared
 * a memset, best zero_kernel, in the launch). The device's limits are read once
 * (histogram_shared_plan, histogram_best_grid), so a launch asks the driver nothing.
 * d_temp: histogram_temp_bytes bytes (NULL when 0), 256-byte aligned, any
 * contents; or temp_kept: the caller hands d_temp to every launch of this variant and
 * bins and zeroed it before the first, with histogram_kept_bytes more for best, which
 * then leaves them zero and zeroes nothing before (one kernel instead of two). d_hist
 * must not alias d_x or d_temp; the caller owns all three. Returns
 * cudaSuccess, the first launch error, or cudaErrorInvalidValue (default stream,
 * unknown variant, bins outside 1..65536, NULL buffers, temp too small; cub: also a
 * NULL temp, and n above INT_MAX). Never synchronizes; capturable into a CUDA Graph. */
static inline cudaError_t histogram_launch(int variant, const float *d_x, size_t n, int bins,
                                           uint32_t *d_hist, bool hist_zeroed, void *d_temp,
                                           size_t temp_bytes, bool temp_kept, cudaStream_t s) {
  if (cuda_is_default_stream(s) || !d_hist || (n && !d_x)) return cudaErrorInvalidValue;
  if (bins < 1 || bins > HISTOGRAM_MAX_BINS) return cudaErrorInvalidValue;
  cudaError_t e = cudaSuccess;
  if (variant == HISTOGRAM_CUB) { /* CUB checks temp_bytes itself; a NULL temp is its query */
    if (n > (size_t)INT_MAX || !d_temp) return cudaErrorInvalidValue;
  } else {
    size_t need = 0;
    if ((e = histogram_temp_bytes(variant, n, bins, &need)) != cudaSuccess) return e;
    if (need > temp_bytes || (need && !d_temp)) return cudaErrorInvalidValue;
  }
  const float scale = histogram_scale(bins);
  switch (variant) {
  case HISTOGRAM_NAIVE:
    if (!hist_zeroed) e = cudaMemsetAsync(d_hist, 0, (size_t)bins * sizeof(uint32_t), s);
    if (e != cudaSuccess || n == 0) return e;
    histogram_naive_kernel<HISTOGRAM_BLOCK>
        <<<(unsigned)((n + HISTOGRAM_BLOCK - 1) / HISTOGRAM_BLOCK), HISTOGRAM_BLOCK, 0, s>>>(
            d_x, n, bins, scale, d_hist);
    return cudaGetLastError();
  case HISTOGRAM_SHARED: {
    if (!hist_zeroed) e = cudaMemsetAsync(d_hist, 0, (size_t)bins * sizeof(uint32_t), s);
    if (e != cudaSuccess || n == 0) return e;
    dim3 grid;
    int per_pass = 0;
    size_t smem = 0;
    if ((e = histogram_shared_plan(n, bins, &grid, &per_pass, &smem)) != cudaSuccess) return e;
    histogram_shared_kernel<HISTOGRAM_BLOCK>
        <<<grid, HISTOGRAM_BLOCK, smem, s>>>(d_x, n, bins, scale, per_pass, d_hist);
    return cudaGetLastError();
  }
  case HISTOGRAM_BEST: {
    const bool packed = histogram_best_packed(bins);
    if ((e = histogram_best_raise(packed)) != cudaSuccess) return e;
    const size_t kept = temp_kept ? histogram_kept_bytes(variant, bins) : 0;
    if (kept > temp_bytes) return cudaErrorInvalidValue;
    uint32_t *acc = kept && n ? static_cast<uint32_t *>(d_temp) : nullptr;
    if (!hist_zeroed && !acc) e = zero_launch(d_hist, (size_t)bins, s);
    if (e != cudaSuccess || n == 0) return e;
    size_t head = 0;
    const unsigned g = histogram_best_grid(n, d_x, bins, &head);
    if (g == 0) return cudaErrorInvalidDevice;
    const int log2c = packed ? 0 : histogram_best_log2c(bins);
    auto kernel = packed ? histogram_best_kernel<true>
                  : acc  ? histogram_best_kernel<false, true>
                         : histogram_best_kernel<false>;
    return launch_pdl(kernel, dim3(g), dim3(HISTOGRAM_BEST_BLOCK), histogram_best_smem(bins), s,
                      d_x, n, head, bins, scale, log2c, d_hist, acc);
  }
  case HISTOGRAM_CUB: {
    size_t bytes = temp_bytes;
    e = cub::DeviceHistogram::HistogramEven(d_temp, bytes, d_x, d_hist, bins + 1, -1.0f, 1.0f,
                                            (int)n, s);
    cudaError_t last = cudaGetLastError();
    return e != cudaSuccess ? e : last;
  }
  default: return cudaErrorInvalidValue;
  }
}

#endif
