/* How an experiment plugs into the CUDA backend: its plans and launchers, defined in
 * the experiment's own .cu files (kernels/<name>/<name>.cu: `const struct
 * cuda_experiment cuda_exp_<name>`) and registered from kernels/core/experiments.def.
 * The C descriptor (exp_desc) never names a CUDA symbol, so a CPU-only build needs none
 * of this. Launchers pick the kernel and launch shape of one variant (a cuda_plan),
 * launch it on the caller's stream and return cudaGetLastError(); they never
 * synchronize or touch the default stream, and allocate only stream-ordered scratch
 * (cudaMallocAsync / cudaFreeAsync on the same stream, which also works inside a graph
 * capture). The plans also feed the kernel info a run reports, so the two cannot
 * disagree. */
#ifndef GPULAB_CUDA_EXP_H
#define GPULAB_CUDA_EXP_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/backends/cuda/cublas_loader.h"
#include "kernels/core/cuda/launch.cuh" /* cuda_is_default_stream */
#include "kernels/core/experiment.h"

/* One kernel of one variant at one size: what runs and how it is launched. A variant
 * that calls a library (cuBLAS, CUB) plans only its name and description: func NULL, and
 * its run reports no launch shape. */
struct cuda_plan {
  const void *func; /* the __global__ function (for cudaFuncGetAttributes) */
  char name[64];    /* e.g. "transpose_tiled_kernel<33>" */
  /* thread-to-data mapping, one line; a variant that picks its kernel by shape (`best`)
   * says which configuration and why */
  char description[192];
  dim3 grid, block;
  size_t dyn_smem_bytes;
};

/* One launch of one run, as the runner makes it (also while capturing a graph). */
struct cuda_launch {
  const struct exp_spec *spec;
  int variant;              /* the run's variant */
  const float *const *d_in; /* the inputs by slot, on this device; never written */
  float *d_out;             /* the run's output (exp_output_shape's count) */
  cudaStream_t stream;      /* the job's lane: never a default stream */
  /* EXP_VARIANT_CUBLAS runs: cuBLAS, loaded, and the lane's handle, bound to stream */
  const struct cublas_fns *cublas;
  cublasHandle_t cublas_handle;
  /* d_out already holds zeros, written on stream before this launch (a launch timed
   * alone: the runner zeroed it untimed, as gpulab-runner does a user's output,
   * exp_user.reset_zero): a launcher whose kernel accumulates into its output then
   * launches the kernel alone; false: it zeroes the output first, inside the launch. */
  bool output_zeroed;
  /* The run's scratch (cuda_experiment.temp_bytes of it), the job's for all of this
   * run's launches and no other run's: zeros before the first, then as the run's last
   * launch left it. A launcher that leaves what it needs zeroed at the end of each
   * launch (a ticket that wraps to 0) then zeroes nothing before. NULL where
   * temp_bytes sized none. */
  void *d_temp;
  size_t temp_bytes;
};

struct cuda_job_ops; /* kernels/backends/cuda/cuda_job_ops.h */

struct cuda_experiment {
  /* Plans variant at spec's sizes on the current device. Returns 0, or -1 with why
   * when the size exceeds a launch limit or the device cannot run it: that run is then
   * unavailable, the job goes on. Sizes of 0 give an empty grid (the launch then
   * launches nothing and succeeds). */
  int (*plan)(const struct exp_spec *spec, int variant, struct cuda_plan *plan, char *why,
              size_t why_len);
  /* One launch of any other variant (our kernels, or a library's such as CUB, whose
   * temporary storage is the run's, cuda_launch.d_temp, or else stream-ordered on
   * a->stream: gemm's; counted by exp_desc.scratch_floats): cudaSuccess, the launch's error,
   * cudaErrorInvalidConfiguration when the plan fails, cudaErrorInvalidValue on a
   * default stream. */
  cudaError_t (*launch)(const struct cuda_launch *launch);
  /* One call of an EXP_VARIANT_CUBLAS variant (NULL: the experiment has none):
   * cuBLAS's status, never a synchronization. */
  cublasStatus_t (*cublas)(const struct cuda_launch *launch);
  /* An experiment that runs its own way (the pipeline: transfers and kernels over
   * several streams, timed on the host); NULL: the backend's kernel runner, which
   * times launches between events. */
  const struct cuda_job_ops *job;
  /* Bytes of scratch variant needs at spec's sizes on the current device, which the job
   * allocates once and hands every launch of the run (cuda_launch.d_temp): no
   * allocation and free around each launch, two host calls that back-to-back launches
   * of small sizes wait for. 0: none. NULL: the experiment needs none. */
  cudaError_t (*temp_bytes)(const struct exp_spec *spec, int variant, size_t *bytes);
};

/* The CUDA side of type, or NULL for an unknown type. */
const struct cuda_experiment *cuda_experiment_of(enum exp_type type);

/* ---- helpers for plans and launchers (kernels/backends/cuda/cuda_kernels.cu) ---- */

#define KFUNC(f) reinterpret_cast<const void *>(&(f))

/* Blocks of b that cover a (a >= 0, b > 0), for grids. */
static inline unsigned ceil_div(long long a, long long b) { return (unsigned)((a + b - 1) / b); }

/* Fills func, name and description (copied, truncated to fit), with a 1x1x1 launch and no
 * shared memory. */
void cuda_plan_set(struct cuda_plan *plan, const void *func, const char *name,
                   const char *description);
/* -1 with why when grid.y or grid.z exceeds 65535; else 0. */
int cuda_plan_grid_ok(const struct cuda_plan *plan, char *why, size_t why_len);
/* Launches plan with args on s (an empty grid launches nothing); returns the launch's
 * error, cudaErrorInvalidValue for a default stream. */
cudaError_t cuda_plan_launch(const struct cuda_plan *plan, void **args, cudaStream_t s);
/* The same as the programmatic dependant of the kernel before it on s (launch.cuh's
 * launch_pdl): plan's kernel must call pdl_wait() before it reads or writes memory. */
cudaError_t cuda_plan_launch_pdl(const struct cuda_plan *plan, void **args, cudaStream_t s);

/* d[i] = gen_uniform(seed, stream, i) * scale for i < n: reference_fill_scaled's
 * numbers, bit for bit. */
cudaError_t gen_launch(float *d, size_t n, uint64_t seed, uint32_t stream, float scale,
                       cudaStream_t s);

/* Fills d[0..n) with NaN (all bits set), so a variant that writes nothing fails its
 * check instead of passing on an earlier variant's output. */
cudaError_t poison_launch(float *d, size_t n, cudaStream_t s);

#endif
