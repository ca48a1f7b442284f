/* The CUDA backend's own kernels (cuda_kernels.cu) as the backend's files use them: the
 * input generator's kernel, a run's kernel info from its plan, and the recovery tests'
 * trap. The helpers that experiments use (plans, launches, gen_launch, poison_launch)
 * are cuda_exp.h's. */
#ifndef GPULAB_CUDA_KERNELS_H
#define GPULAB_CUDA_KERNELS_H

#include <cuda_runtime.h>

#include "kernels/backends/cuda/cuda_exp.h"

/* Fills info from plan and the kernel's attributes (registers, static shared and
 * local bytes per thread, from cudaFuncGetAttributes). Cannot fail. */
void cuda_kernel_info_fill(const struct cuda_plan *plan, const struct cudaFuncAttributes *attr,
                           struct exp_kernel_info *info);

/* The input generator's kernel, which every build has: cudaFuncGetAttributes on it
 * fails on a device this binary has no code for. */
const void *gen_kernel_func(void);

/* Recovery tests only (--allow-fault-injection): a kernel that traps, which leaves
 * the context with a sticky error, as a real fault would. */
cudaError_t trap_launch(cudaStream_t stream);

#endif
