/* Shared by the `best` kernels of several experiments (transpose_best.cu,
 * gemm_best.cu, gemm_tf32.cu, stencil_best.cu): alignment, the grouped launch order,
 * raising the shared-memory limit once, and cp.async. */
#ifndef GPULAB_CUDA_BEST_CUH
#define GPULAB_CUDA_BEST_CUH

#include <stdint.h>

#include <atomic>

#include "kernels/backends/cuda/cuda_exp.h"

static inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Block pid's tile (bm, bn) of a tiles_m x tiles_n grid of tiles when the 1-D grid
 * walks groups of `group` tile rows column by column: the blocks resident at once
 * cover a compact patch instead of a few whole tile rows. gemm: neighbours share A's
 * row panels and B's column panels in L2. transpose: the resident blocks write a few
 * thousand rows of B instead of all of them (all n rows of a 16384^2 B are 1 GiB
 * apart end to end: before this order 16384^2 reached 82% of copy, 8192^2 92%). */
__device__ __forceinline__ void grouped_tile(int pid, int tiles_m, int tiles_n, int group,
                                             int *bm, int *bn) {
  const int per_group = group * tiles_n;
  const int g = pid / per_group, first = g * group;
  const int rows = min(tiles_m - first, group);
  const int in = pid - g * per_group;
  *bm = first + in % rows;
  *bn = in / rows;
}


/* ---- launches ---- */

/* A kernel with more than the default 48 KiB of dynamic shared memory must have its
 * limit raised before its first launch on each device: done once per kernel and
 * device (bit d of *raised; one atomic per kernel), with the largest shared-memory
 * carveout when max_carveout (so the occupancy planned is the one launched). */
static inline cudaError_t smem_raise_once(std::atomic<unsigned long long> *raised,
                                          const void *func, size_t bytes, bool max_carveout) {
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

/* ---- cp.async ---- */

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

/* cp.async of 16 (or 4) bytes; when !valid nothing is read and the bytes are zeroed. */
__device__ __forceinline__ void cp_async16(float *dst, const float *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async4(float *dst, const float *src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)),
               "l"(src), "r"(valid ? 4 : 0)
               : "memory");
}
/* The same without a source size, for copies known to be inside the matrix (no
 * zero fill: gemm best's whole-tile kernel). */
__device__ __forceinline__ void cp_async16(float *dst, const float *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src)
               : "memory");
}
__device__ __forceinline__ void cp_async4(float *dst, const float *src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(dst)), "l"(src)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

#endif
