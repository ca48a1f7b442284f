/* The CUDA backend's profiler: what a run launches, replayed once under CUPTI's Range
 * Profiler (kernel replay, one range per kernel: each kernel runs as many passes as the
 * metrics need, device memory saved and restored between them), read as the metrics of
 * kernels/core/profile.c's table, each kernel named and shaped from CUPTI's launch
 * callbacks. libcupti is loaded at run time from the CUDA toolkit (dlopen, as NVRTC
 * is); gpulab links nothing of it. Whether this process may read counters is probed
 * once, at open.
 *
 * The caller owns the device while a profile runs: no other work of this process may
 * launch kernels on the device meanwhile (they would become ranges of the session). One
 * session at a time in the process (CUPTI's callbacks have one subscriber): sessions
 * of several devices take turns. */
#ifndef GPULAB_CUDA_PROFILER_H
#define GPULAB_CUDA_PROFILER_H

#include <cuda_runtime.h>
#include <stddef.h>

#include "kernels/core/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cuda_profiler;

/* Opens the profiler for CUDA device `device` (its primary context made current):
 * libcupti, the profiler's initialization, the chip, which metrics the device's counters
 * offer, the configuration of them all. Returns 0 with *out (cuda_profiler_close frees
 * it), or a negative errno with why: -ENOENT no libcupti (or a symbol missing), -EPERM
 * the driver forbids counters to this user (why says how to allow them), -ENOTSUP the
 * device or chip has no range profiling or no metric was accepted, -EIO another CUPTI
 * or CUDA failure. */
int cuda_profiler_open(int device, struct cuda_profiler **out, char *why, size_t why_len);
void cuda_profiler_close(struct cuda_profiler *p); /* NULL is a no-op */

/* Queues one execution of what is profiled on `stream`: 0, or a negative errno (the
 * profile stops there and returns it). */
typedef int (*cuda_profiler_launch_fn)(void *arg);

/* Runs launch(arg) once under the profiler on p's device, waits for `stream`, and fills
 * out: requested, the replay's conditions, a kernel per launch seen (its name, grid,
 * block, metrics; NaN where the device lacks a metric; at most EXP_PROFILE_MAX_KERNELS
 * kept, n_kernels_seen counting all) and available. Returns 0, also when the profiler
 * failed (out is then unavailable, its reason saying why); or launch's own error. The
 * device's work is complete on return. */
int cuda_profiler_run(struct cuda_profiler *p, cudaStream_t stream, cuda_profiler_launch_fn launch,
                      void *arg, struct exp_profile *out);

#ifdef __cplusplus
}
#endif
#endif
