/* The CUDA backend's own kernels and the helpers every experiment's plans and launchers
 * use (cuda_exp.h): the input generator, the poison fill, a trap for the recovery tests,
 * setting up and launching a cuda_plan, and a run's kernel info from its plan. */
#include <stdio.h>

#include "kernels/backends/cuda/cuda_kernels.h"
#include "kernels/core/gen.h"

/* ---- inputs ---- */

/* Grid-stride: thread g writes elements g, g + stride, ...; consecutive threads write
 * consecutive floats. Each value depends only on (seed, stream, i) (gen.h). */
__global__ __launch_bounds__(256) void gen_kernel(float *d, size_t n, uint64_t seed,
                                                  uint32_t stream, float scale) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    d[i] = gen_uniform(seed, stream, i) * scale;
}

const void *gen_kernel_func(void) { return KFUNC(gen_kernel); }

/* ---- plans ---- */

void cuda_plan_set(struct cuda_plan *p, const void *func, const char *name,
                   const char *description) {
  p->func = func;
  snprintf(p->name, sizeof p->name, "%s", name);
  snprintf(p->description, sizeof p->description, "%s", description);
  p->grid = p->block = dim3(1, 1, 1);
  p->dyn_smem_bytes = 0;
}

int cuda_plan_grid_ok(const struct cuda_plan *p, char *why, size_t why_len) {
  if (p->grid.y > 65535 || p->grid.z > 65535) {
    snprintf(why, why_len, "%s needs grid.y = %u, above CUDA's limit of 65535", p->name, p->grid.y);
    return -1;
  }
  return 0;
}

/* ---- launchers ---- */

/* Launches plan with args; an empty grid launches nothing. */
cudaError_t cuda_plan_launch(const struct cuda_plan *p, void **args, cudaStream_t s) {
  if (cuda_is_default_stream(s)) return cudaErrorInvalidValue;
  if (p->grid.x == 0 || p->grid.y == 0 || p->grid.z == 0) return cudaSuccess;
  cudaError_t e = cudaLaunchKernel(p->func, p->grid, p->block, args, p->dyn_smem_bytes, s);
  cudaError_t last = cudaGetLastError();
  return e != cudaSuccess ? e : last;
}

cudaError_t cuda_plan_launch_pdl(const struct cuda_plan *p, void **args, cudaStream_t s) {
  if (cuda_is_default_stream(s)) return cudaErrorInvalidValue;
  if (p->grid.x == 0 || p->grid.y == 0 || p->grid.z == 0) return cudaSuccess;
  return launch_pdl_args(p->func, p->grid, p->block, args, p->dyn_smem_bytes, s);
}

cudaError_t gen_launch(float *d, size_t n, uint64_t seed, uint32_t stream, float scale,
                       cudaStream_t s) {
  if (cuda_is_default_stream(s)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  size_t blocks = (n + 255) / 256;
  if (blocks > 8192) blocks = 8192; /* grid-stride beyond ~8 waves of the largest GPU */
  gen_kernel<<<(unsigned)blocks, 256, 0, s>>>(d, n, seed, stream, scale);
  return cudaGetLastError();
}

cudaError_t poison_launch(float *d, size_t n, cudaStream_t s) {
  if (cuda_is_default_stream(s)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return cudaMemsetAsync(d, 0xFF, n * sizeof(float), s); /* 0xFFFFFFFF is a NaN */
}

void cuda_kernel_info_fill(const struct cuda_plan *plan, const struct cudaFuncAttributes *attr,
                           struct exp_kernel_info *info) {
  snprintf(info->name, sizeof info->name, "%s", plan->name);
  snprintf(info->description, sizeof info->description, "%s", plan->description);
  info->has_launch = true;
  info->grid[0] = (int)plan->grid.x;
  info->grid[1] = (int)plan->grid.y;
  info->grid[2] = (int)plan->grid.z;
  info->block[0] = (int)plan->block.x;
  info->block[1] = (int)plan->block.y;
  info->block[2] = (int)plan->block.z;
  info->registers = attr->numRegs;
  info->static_shared_bytes = (int)attr->sharedSizeBytes;
  info->dynamic_shared_bytes = (int)plan->dyn_smem_bytes;
  info->local_bytes = (int)attr->localSizeBytes;
}

/* One thread executes trap: the launch fails with cudaErrorLaunchFailure and the
 * context stays unusable (sticky), which is what the recovery test needs. */
__global__ void trap_kernel() { asm volatile("trap;"); }

cudaError_t trap_launch(cudaStream_t stream) {
  if (stream == 0) return cudaErrorInvalidValue;
  trap_kernel<<<1, 1, 0, stream>>>();
  cudaError_t e = cudaGetLastError();
  return e != cudaSuccess ? e : cudaStreamSynchronize(stream);
}
