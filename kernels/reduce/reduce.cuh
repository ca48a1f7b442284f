/* reduce's kernels and launcher, checked and timed beside CUB on the H200 before they
 * moved here: naive (an atomicAdd per
 * element), shared (a tree in shared memory per block, an atomic per block), warp (the
 * same with warp shuffles), best (16-byte loads, one pass, deterministic: per-block
 * partials and a last-block-done sum) and cub (cub::DeviceReduce::Sum). Changes
 * since: best's grid is at most REDUCE_BEST_MAX_BLOCKS (4 x the H200's 132 SMs) on
 * every device (reduce.h), and with a ticket its caller keeps it is one kernel. The
 * launcher never synchronizes, never allocates (the caller passes reduce_temp_bytes of
 * temp storage) and refuses the default stream. Header only (templates and static
 * inline): reduce.cu includes it. */
#ifndef GPULAB_REDUCE_CUH
#define GPULAB_REDUCE_CUH

#include <cuda_runtime.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <cub/device/device_reduce.cuh>

#include "kernels/core/cuda/combine.cuh"
#include "kernels/reduce/reduce.h"

/* ---- block sums: the result is valid in thread 0 ---- */

/* The lecture's tree: BLOCK values in shared memory, halved log2(BLOCK) times, a
 * barrier per level; thread t adds sh[t + s] into sh[t] (sequential addressing, no
 * bank conflicts). sh holds BLOCK floats. */
template <int BLOCK>
__device__ __forceinline__ float reduce_block_tree(float v, float *sh) {
  const int t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
#pragma unroll
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] += sh[t + s];
    __syncthreads();
  }
  return sh[0];
}

/* Warp shuffles: each warp sums its 32 values in registers (5 steps), lane 0 parks the
 * warp's sum in sh[warp], one barrier, warp 0 sums the BLOCK/32 of them. sh holds
 * BLOCK/32 floats; a second call needs a barrier between (the callers have one). */
template <int BLOCK>
__device__ __forceinline__ float reduce_block_shuffle(float v, float *sh) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) sh[w] = v;
  __syncthreads();
  if (w == 0) v = warp_sum(lane < BLOCK / 32 ? sh[lane] : 0.0f);
  return v;
}

/* ---- kernels ---- */

/* naive: one thread per element, BLOCK per block, grid ceil(n/BLOCK); thread i adds
 * x[i] to *out (zeroed before) with one atomicAdd. Coalesced loads, but all n atomics
 * meet at one address, where the L2 applies them one after another in any order. */
template <int BLOCK>
__global__ __launch_bounds__(BLOCK) void reduce_naive_kernel(const float *__restrict__ x, size_t n,
                                                             float *out) {
  const size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) atomicAdd(out, x[i]);
}

/* shared (SHUFFLE false) and warp (SHUFFLE true): one thread per element as in naive;
 * the block sums its BLOCK values (reduce_block_tree / reduce_block_shuffle) and
 * thread 0 adds the block's sum to *out: n / BLOCK atomics instead of n. */
template <int BLOCK, bool SHUFFLE>
__global__ __launch_bounds__(BLOCK) void reduce_block_kernel(const float *__restrict__ x, size_t n,
                                                             float *out) {
  __shared__ float sh[SHUFFLE ? BLOCK / 32 : BLOCK];
  const size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  v = SHUFFLE ? reduce_block_shuffle<BLOCK>(v, sh) : reduce_block_tree<BLOCK>(v, sh);
  if (threadIdx.x == 0) atomicAdd(out, v);
}

/* best's last step, by one block once every block's partial is visible: *out = the
 * gridDim.x partials summed in a fixed order (thread t adds t, t + BLOCK, ..., then the
 * block sum). */
template <int BLOCK>
__device__ __forceinline__ void reduce_best_final(const float *partials, float *sh, float *out) {
  float r = 0.0f;
  for (unsigned j = threadIdx.x; j < gridDim.x; j += BLOCK) r += __ldcg(partials + j);
  r = reduce_block_shuffle<BLOCK>(r, sh);
  if (threadIdx.x == 0) *out = r;
}

/* best: a persistent grid of G = min(REDUCE_BEST_MAX_BLOCKS, ceil(n4 / (BLOCK*UNROLL)))
 * blocks (reduce_best_grid; 4 an SM on the H200), launched as the PDL dependant of the
 * kernel before it: its blocks become resident while that one drains, then wait for
 * it (pdl_wait) before they read anything, since that kernel may have written x.
 * x splits into head (0-3 floats up to the first 16-byte boundary), n4 float4s, and a
 * tail (0-3 floats). Thread g of the P = G*BLOCK threads adds float4s g, g+P, g+2P, ...
 * into a float4 accumulator, UNROLL 16-byte loads in flight before the adds (a warp
 * reads 512 contiguous bytes per load); threads 0-2 of block 0 also take the head
 * and the tail. Each block sums its threads (shuffles) into partials[block]; the
 * block that takes the last ticket sums the G partials in a fixed order and writes
 * *out. The order of every addition depends only on n and the alignment of x, so the
 * result is the same bits on every run (and on every GPU, and in cpu_reduce_best).
 * *ticket must be 0 at launch (zero_kernel runs before it, or the ticket is the
 * caller's own, which the last launch left 0); the last block's atomicInc leaves it 0
 * again. */
template <int BLOCK, int UNROLL>
__global__ __launch_bounds__(BLOCK, REDUCE_BEST_PER_SM) void reduce_best_kernel(
    const float *__restrict__ x, size_t n, size_t head, float *__restrict__ partials,
    unsigned *ticket, float *out) {
  __shared__ float sh[BLOCK / 32];
  __shared__ bool last;
  pdl_wait();
  const int t = threadIdx.x;
  const float4 *x4 = reinterpret_cast<const float4 *>(x + head);
  const size_t n4 = (n - head) / 4, P = (size_t)gridDim.x * BLOCK;
  size_t i = (size_t)blockIdx.x * BLOCK + t;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (; i + (UNROLL - 1) * P < n4; i += UNROLL * P) {
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) v[u] = x4[i + u * P];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      acc.x += v[u].x;
      acc.y += v[u].y;
      acc.z += v[u].z;
      acc.w += v[u].w;
    }
  }
  if (i < n4) {
    /* the last 1..UNROLL-1 float4s: loaded together (run 1 took them one after the
     * other, a memory round trip each: at 2^24, 3-4 of a thread's ~16 loads, at 2^22
     * all ~4), added in the same order as before, so the bits do not change */
    float4 v[UNROLL - 1];
#pragma unroll
    for (int u = 0; u < UNROLL - 1; u++)
      v[u] = i + u * P < n4 ? x4[i + u * P] : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int u = 0; u < UNROLL - 1; u++) {
      if (i + u * P < n4) {
        acc.x += v[u].x;
        acc.y += v[u].y;
        acc.z += v[u].z;
        acc.w += v[u].w;
      }
    }
  }
  if (blockIdx.x == 0) {
    const size_t tail0 = head + 4 * n4;
    if ((size_t)t < head) acc.x += x[t];
    if ((size_t)t < n - tail0) acc.y += x[tail0 + t];
  }
  float s = reduce_block_shuffle<BLOCK>((acc.x + acc.y) + (acc.z + acc.w), sh);
  if (t == 0) {
    partials[blockIdx.x] = s;
    __threadfence(); /* the partial is visible before the ticket says so */
    /* atomicInc wraps: the last block's leaves the ticket 0 again */
    last = atomicInc(ticket, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  reduce_best_final<BLOCK>(partials, sh, out);
}

/* ---- plans ---- */

/* Temp storage variant needs at n elements on the current device (0: none; d_temp may
 * then be NULL). Returns cudaSuccess, cudaErrorInvalidValue for an unknown variant or
 * cub above INT_MAX elements, or CUB's error. */
static inline cudaError_t reduce_temp_bytes(int variant, size_t n, size_t *bytes) {
  *bytes = 0;
  switch (variant) {
  case REDUCE_NAIVE:
  case REDUCE_SHARED:
  case REDUCE_WARP: return cudaSuccess;
  case REDUCE_BEST: {
    /* the ticket, then one partial per block; any alignment of x needs at most the
     * grid of an aligned x */
    const unsigned g = reduce_best_grid(n, nullptr, nullptr);
    *bytes = 256 + align256((size_t)g * sizeof(float));
    return cudaSuccess;
  }
  case REDUCE_CUB:
    if (n > (size_t)INT_MAX) return cudaErrorInvalidValue;
    return cub::DeviceReduce::Sum(nullptr, *bytes, (const float *)nullptr, (float *)nullptr, (int)n,
                                  (cudaStream_t)0);
  default: return cudaErrorInvalidValue;
  }
}

/* ---- launcher ---- */

/* *d_out = sum of d_x[0..n) (0 for n == 0), on stream s. naive, shared and warp add
 * into *d_out: out_zeroed says the caller zeroed it on s before (they then launch their
 * kernel alone); false, they zero it first (a memset in the launch). d_temp:
 * reduce_temp_bytes bytes, 256-byte aligned, any contents (the launcher initializes
 * what it uses), unless temp_kept: the caller hands d_temp to every best launch at this
 * n and zeroed it before the first; best then zeroes nothing (its ticket, which each
 * launch leaves 0) and is one kernel instead of two. The caller owns all buffers;
 * d_out must not alias d_x or d_temp.
 * Returns cudaSuccess, the
 * launch's error, or cudaErrorInvalidValue (default stream, unknown variant, NULL
 * buffers, temp too small; cub: also a NULL temp, and n above INT_MAX). Never
 * synchronizes; capturable into a CUDA Graph. */
static inline cudaError_t reduce_launch(int variant, const float *d_x, size_t n, float *d_out,
                                        bool out_zeroed, void *d_temp, size_t temp_bytes,
                                        bool temp_kept, cudaStream_t s) {
  if (cuda_is_default_stream(s) || !d_out || (n && !d_x)) return cudaErrorInvalidValue;
  cudaError_t e = cudaSuccess;
  if (variant == REDUCE_CUB) { /* CUB checks temp_bytes itself; a NULL temp is its size query */
    if (n > (size_t)INT_MAX || !d_temp) return cudaErrorInvalidValue;
  } else {
    size_t need = 0;
    if ((e = reduce_temp_bytes(variant, n, &need)) != cudaSuccess) return e;
    if (need > temp_bytes || (need && !d_temp)) return cudaErrorInvalidValue;
  }
  const unsigned blocks = (unsigned)((n + REDUCE_BLOCK - 1) / REDUCE_BLOCK);
  switch (variant) {
  case REDUCE_NAIVE:
  case REDUCE_SHARED:
  case REDUCE_WARP:
    if (!out_zeroed) e = cudaMemsetAsync(d_out, 0, sizeof(float), s);
    if (e != cudaSuccess || n == 0) return e;
    if (variant == REDUCE_NAIVE)
      reduce_naive_kernel<REDUCE_BLOCK><<<blocks, REDUCE_BLOCK, 0, s>>>(d_x, n, d_out);
    else if (variant == REDUCE_SHARED)
      reduce_block_kernel<REDUCE_BLOCK, false><<<blocks, REDUCE_BLOCK, 0, s>>>(d_x, n, d_out);
    else
      reduce_block_kernel<REDUCE_BLOCK, true><<<blocks, REDUCE_BLOCK, 0, s>>>(d_x, n, d_out);
    return cudaGetLastError();
  case REDUCE_BEST: {
    if (n == 0) return out_zeroed ? cudaSuccess : cudaMemsetAsync(d_out, 0, sizeof(float), s);
    size_t head = 0;
    const unsigned g = reduce_best_grid(n, d_x, &head);
    unsigned *ticket = static_cast<unsigned *>(d_temp);
    float *partials = reinterpret_cast<float *>(static_cast<char *>(d_temp) + 256);
    if (!temp_kept) e = zero_launch(ticket, 1, s);
    if (e != cudaSuccess) return e;
    return launch_pdl(reduce_best_kernel<REDUCE_BLOCK, REDUCE_BEST_UNROLL>, dim3(g),
                      dim3(REDUCE_BLOCK), 0, s, d_x, n, head, partials, ticket, d_out);
  }
  case REDUCE_CUB: {
    size_t bytes = temp_bytes;
    e = cub::DeviceReduce::Sum(d_temp, bytes, d_x, d_out, (int)n, s);
    cudaError_t last = cudaGetLastError();
    return e != cudaSuccess ? e : last;
  }
  default: return cudaErrorInvalidValue;
  }
}

#endif
