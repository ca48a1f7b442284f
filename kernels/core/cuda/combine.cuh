/* Shared by the kernels in which many threads combine their values into one (reduce,
 * scan, histogram: kernels/<name>/<name>.cuh): warp sums and prefix sums, programmatic
 * dependent launch (PDL) with the zeroing kernel that runs ahead of it, and the sizes
 * their launchers plan with. Header only: kernels are templates, host functions inline. */
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

/* Runs launch(d_temp, bytes) with `bytes` of temp storage allocated for it from the
 * device's stream-ordered pool on s and freed after it on s (cudaMallocAsync and
 * cudaFreeAsync: legal while s is captured, where they become the graph's own nodes),
 * none when bytes is 0 (d_temp NULL). Returns the first error: the allocation's
 * (cudaErrorMemoryAllocation), the launch's, the free's. Never synchronizes. */
template <typename Launch>
static inline cudaError_t with_pool_temp(size_t bytes, cudaStream_t s, Launch launch) {
  if (cuda_is_default_stream(s)) return cudaErrorInvalidValue;
  void *d_temp = nullptr;
  if (bytes) {
    cudaError_t e = cudaMallocAsync(&d_temp, bytes, s);
    if (e != cudaSuccess) return e;
  }
  cudaError_t e = launch(d_temp, bytes);
  if (d_temp) {
    cudaError_t f = cudaFreeAsync(d_temp, s); /* stream-ordered: after the launch's work */
    if (e == cudaSuccess) e = f;
  }
  return e;
}

/* ---- programmatic dependent launch (sm_90) ----
 * A kernel launched with launch_pdl may start while the kernel before it on the stream
 * is still running. Everything it does before pdl_wait() must not depend on that
 * kernel (it may read inputs that earlier work produced: the kernel before it started
 * only after that work ended); pdl_wait() returns once that kernel has finished and
 * its writes are visible. The kernel before it is zero_kernel, which lets its
 * dependant start at once; or, for reduce's best on a ticket it keeps, whatever kernel
 * ran before on the stream, which it waits for before it reads anything (its blocks
 * still become resident while that kernel drains). Where no kernel precedes (or on a
 * GPU before sm_90) the wait returns immediately. */
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
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

/* Launches kernel<<<grid, block, smem, s>>>(args...) as the programmatic dependant of
 * the kernel before it on s (see pdl_wait). Returns the launch's error. Works in
 * stream capture (the graph gets a programmatic edge). */
template <typename... KArgs, typename... Args>
static inline cudaError_t launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                     cudaStream_t s, Args... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
  cudaError_t last = cudaGetLastError();
  return e != cudaSuccess ? e : last;
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
