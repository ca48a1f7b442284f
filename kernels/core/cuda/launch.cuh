/* Launch helpers shared by the kernels of several experiments (transpose_best.cu,
 * gemm_best.cu, gemm_tf32.cu, stencil_best.cu, histogram.cuh, scan.cuh): alignment, the
 * grouped launch order, the default streams, raising the shared-memory limit once. */
#ifndef GPULAB_CORE_CUDA_LAUNCH_CUH
#define GPULAB_CORE_CUDA_LAUNCH_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>

static inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Block pid's tile (bm, bn) of a tiles_m x tiles_n grid of tiles when the 1-D grid
 * walks groups of `group` tile rows column by column: the blocks resident at once
 * cover a compact patch instead of a few whole tile rows. gemm: neighbours share A's
 * row panels and B's column panels in L2. transpose: the resident blocks write a few
 * thousand rows of B instead of all of them (all n rows of a 16384^2 B are 1 GiB
 * apart end to end: before this order 16384^2 reached 82% of copy, 8192^2 92%). */
__device__ __forceinline__ void grouped_tile(int pid, int tiles_m, int tiles_n, int group, int *bm,
                                             int *bn) {
  const int per_group = group * tiles_n;
  const int g = pid / per_group, first = g * group;
  const int rows = min(tiles_m - first, group);
  const int in = pid - g * per_group;
  *bm = first + in % rows;
  *bn = in / rows;
}

/* ---- launches ---- */

/* True for the legacy, per-thread and null streams (launchers refuse them). */
static inline bool cuda_is_default_stream(cudaStream_t s) {
  return s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

/* A kernel with more than the default 48 KiB of dynamic shared memory must have its
 * limit raised before its first launch on each device: done once per kernel and
 * device (bit d of *raised; one atomic per kernel), with the largest shared-memory
 * carveout when max_carveout (so the occupancy planned is the one launched). */
static inline cudaError_t smem_raise_once(std::atomic<unsigned long long> *raised, const void *func,
                                          size_t bytes, bool max_carveout) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  const unsigned long long bit = dev < 64 ? 1ull << dev : 0;
  if (bit && (raised->load() & bit)) return cudaSuccess;
  e = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e == cudaSuccess && max_carveout)
    e = cudaFuncSetAttribute(func, cudaFuncAttributePreferredSharedMemoryCarveout,
                             (int)cudaSharedmemCarveoutMaxShared);
  if (e == cudaSuccess) raised->fetch_or(bit);
  return e;
}

#endif
