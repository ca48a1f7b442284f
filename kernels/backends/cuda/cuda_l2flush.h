/* The L2 flush of cold runs, one kernel and one size rule for both places that time
 * launches: gpulabd's built-ins (cuda_kernel_job.cu, on the job's stream) and
 * gpulab-runner's users' kernels (kernels/user/runner_cuda.c, in the runner's own
 * context), so that a user's kernel and a built-in in one cold job start from the same
 * cache. C and C++ both include it; cuda_l2flush.cu defines it. */
#ifndef GPULAB_CUDA_L2FLUSH_H
#define GPULAB_CUDA_L2FLUSH_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The floats a flush reads on a device whose L2 is l2_bytes (cudaDevAttrL2CacheSize,
 * cudaDeviceProp.l2CacheSize): twice the L2, rounded up to a multiple of 4. The
 * buffer holds 4 floats more, the sink. */
size_t l2_flush_floats(int l2_bytes);

/* Reads n floats of d (n a multiple of 4, d 16-byte aligned) through L2 on s, leaving
 * L2 full of clean lines of d; sink is one float it writes only in theory (so that the
 * loads stay). sms: the device's SM count (the grid is 4 blocks per SM). Returns the
 * launch's error. */
cudaError_t l2_flush_launch(const float *d, size_t n, float *sink, int sms, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
