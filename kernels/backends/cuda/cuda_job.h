/* Private to the CUDA backend's job runner (cuda_run.cu, cuda_kernel_job.cu,
 * cuda_user.cu, cuda_measure.cu): the kernel experiments' ops, users' kernels within
 * them, and the runner's helpers beyond those an experiment's own ops call (those, with
 * struct cuda_job and struct cuda_job_ops, are cuda_job_ops.h). */
#ifndef GPULAB_CUDA_JOB_H
#define GPULAB_CUDA_JOB_H

#include "kernels/backends/cuda/cuda_backend_impl.h"
#include "kernels/backends/cuda/cuda_check.h"
#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/backends/cuda/cuda_job_ops.h"
#include "kernels/backends/cuda/cuda_kernels.h"

/* The kernel experiments' ops (cuda_kernel_job.cu): one kernel launch per rep between
 * events, or a captured graph of them; cuBLAS variants through the lane's handle;
 * users' kernels in gpulab-runner (below). */
extern const struct cuda_job_ops cuda_kernel_job_ops;

/* Users' kernels of a kernel experiment's job (runs kernel:<id>; cuda_user.cu), for
 * cuda_kernel_job_ops. Each returns 0 or a negative errno with j->err: -EFAULT the
 * kernel faulted, -ETIMEDOUT a launch ran past its deadline (its runner was killed
 * and is replaced), -ENOMEM, -EINVAL. */
/* Run r of variant kernel:<id>: its identity and kernel info, its launch from the
 * kernel's tile (or grid) at the job's sizes within the device's limits; unavailable
 * (with why) when it cannot run here. */
int cuda_user_plan_run(struct cuda_job *j, int r, struct exp_run *run);
/* After the inputs: IPC buffers (the inputs copied in, and each available user run's
 * output, which becomes its d_out), the runner taken, the buffers attached, the
 * kernels loaded. Nothing when the job has no user run. */
int cuda_user_setup(struct cuda_job *j);
/* True for an available user run (valid once its plan ran). */
bool cuda_user_is_run(const struct cuda_job *j, int r);
/* One launch of user run r in the runner, its output then copied to out (a compute_fn
 * for the job's output). */
int cuda_user_launch(struct cuda_job *j, int r, float *out);
/* One warm-up; one sample of timing.reps launches, each poisoned and timed alone by
 * the runner's events (*ms per launch). */
int cuda_user_warm(struct cuda_job *j, int r);
int cuda_user_sample(struct cuda_job *j, int r, double *ms);
/* One launch of user run r under the profiler in the runner's context (runner_run_msg.
 * profile): its counters, or why it has none, into out. */
int cuda_user_profile(struct cuda_job *j, int r, struct exp_profile *out);
/* Detaches and gives the runner back, frees the IPC buffers; after the lane's work.
 * Idempotent. */
void cuda_user_release(struct cuda_job *j);
/* Marks run unavailable on this device, saying why (printf's format); returns 0, so
 * that a plan goes on with the job's other runs. */
int job_run_unavailable(struct exp_run *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

struct ukreg_kernel; /* kernels/user/ukreg.h */

/* Whether a launch of image k (its registers and static shared bytes) with block, grid,
 * dynamic shared bytes and cooperative fits the device: block, grid and shared memory
 * within its limits, a cooperative grid resident at once; else run is unavailable,
 * saying why. For users' and problems' runs. */
bool cuda_launch_fits(const struct cuda_job *j, struct exp_run *run, const int block[3],
                      const long long grid[3], int shared_bytes, bool cooperative,
                      const struct ukreg_kernel *k);

/* A cudaMalloc of bytes for the runner, into *keep (the caller's release frees it, set
 * before anything can fail), exported by IPC into desc (offset 0). Returns 0 or a
 * classified error. For users' and problems' buffers. */
int cuda_ipc_buffer(struct cuda_job *j, size_t bytes, void **keep, struct runner_buffer_desc *desc);

/* The device's runner (made, not started, on first use; kept): NULL out of memory. */
struct runner *cuda_user_runner(int device);

/* The ops of a problem's job (cuda_problem.cu): its reference and users' kernels of it,
 * all in gpulab-runner, which makes the problem's buffers, times each launch and checks
 * it against the reference on the device. */
extern const struct cuda_job_ops cuda_problem_job_ops;

/* The same with run r's own output (d_out[r], then the engine's, not freed with this
 * call's memory) as the job's, after run r's window wrote it: for a job whose whole
 * timing is one launch (cuda_job.output_from_window), so that it is not computed twice. */
int job_issue_run_output(struct cuda_job *j, int r);
/* The first available run, or -1. */
int job_first_available(const struct cuda_job *j);

/* Whether the batch run r is about to sample is its last: the fixed batch count
 * (no noise rule) with the batches before it taken. */
bool job_last_batch(const struct cuda_job *j, int r);
/* In run r's last batch, after its stop event: queues the copy of d_out[r] into the
 * lane's pinned staging (where the checks read it) and synchronizes the lane's
 * stream once, for the batch's events and the copy together. Returns 0 or a
 * classified error. */
int job_stage_output(struct cuda_job *j, int r);

#endif
