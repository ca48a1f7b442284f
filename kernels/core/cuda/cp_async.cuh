/* cp.async (sm_80 and later) for the kernels that stage tiles in shared memory
 * (gemm_best.cu, gemm_tf32.cu, stencil_best.cu): 16- and 4-byte copies, with or without
 * zero fill, their commit and wait. */
#ifndef GPULAB_CORE_CUDA_CP_ASYNC_CUH
#define GPULAB_CORE_CUDA_CP_ASYNC_CUH

#include <cuda_runtime.h>

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

/* cp.async of 16 (or 4) bytes; when !valid nothing is read and the bytes are zeroed. */
__device__ __forceinline__ void cp_async16(float *dst, const float *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async4(float *dst, const float *src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 4 : 0)
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
