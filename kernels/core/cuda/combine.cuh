/* Shared by the kernels in which many threads combine their values into one (reduce,
 * scan, histogram: kernels/<name>/<name>.cuh): warp sums and prefix sums, the zeroing
 * kernel that runs ahead of a PDL launch (launch.cuh), and the sizes their launchers
 * plan with. Header only: kernels are templates, host functions inline. */
#ifndef GPULAB_CORE_CUDA_COMBINE_CUH
#define GPULAB_CORE_CUDA_COMBINE_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/core/cuda/launch.cuh"

#define COMBINE_FULL_MASK 0xffffffffu

static inline size_t align256(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

/* Multiprocessors of the current device (cuda_device_limits_get: read once per device);
 * 0 on error (callers then fail the launch). */
static inline int current_sm_count() {
  struct cuda_device_limits d;
  return cuda_device_limits_get(&d) == cudaSuccess ? d.sms : 0;
}

/* Zeroes p[0..n): the first step of a launcher whose main kernel needs zeroed
 * counters, flags or bins. Grid-stride, BLOCK threads a block; it releases its
 * dependant first thing, so the main kernel's launch and its loads overlap this. */
template <int BLOCK>
__global__ __launch_bounds__(BLOCK) void zero_kernel(uint32_t *p, size_t n) {
  pdl_release();
  const size_t stride = (size_t)gridDim.x * BLOCK;
  for (size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride) p[i] = 0;
}

static inline cudaError_t zero_launch(uint32_t *p, size_t n, cudaStream_t s) {
  size_t blocks = (n + 4 * 256 - 1) / (4 * 256);
  if (blocks < 1) blocks = 1;
  if (blocks > 264) blocks = 264;
  zero_kernel<256><<<(unsigned)blocks, 256, 0, s>>>(p, n);
  return cudaGetLastError();
}

/* ---- warp arithmetic ---- */

/* Sum over the warp, every lane gets it: a butterfly of 5 additions, the same tree in
 * every lane (so all lanes hold the same bits; lane l adds lane l^o's value at step o,
 * which the CPU stand-ins repeat). */
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(COMBINE_FULL_MASK, v, o);
  return v;
}

/* Inclusive prefix sum over the lanes (Kogge-Stone, 5 steps): lane l gets
 * v_0 + ... + v_l. */
__device__ __forceinline__ float warp_inclusive(float v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    float u = __shfl_up_sync(COMBINE_FULL_MASK, v, o);
    if (lane >= o) v += u;
  }
  return v;
}

#endif
