/* Private to the CPU backend: users' kernels through a CPU-mode gpulab-runner, for
 * tests (gpulabd --cpu-runner-test; cpu_user.c says why). Errors are negative errno
 * values as backend.h has them, with -EFAULT (the kernel faulted: its runner died) and
 * -ETIMEDOUT (a launch ran past its deadline: its runner was killed). */
#ifndef GPULAB_CPU_USER_H
#define GPULAB_CPU_USER_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/core/experiment.h"

struct cpu_user;

/* A user's run (run->variant kernel:<id>): its identity from the table of kernels
 * (run->user), available or not with the reason, its kernel info. */
void cpu_user_describe(const struct exp_spec *s, struct exp_run *run);
/* For the available users' runs of res: memfd buffers (the inputs copied in, in slot
 * order; each such run's output after them, which becomes outs[run], shared with the
 * runner), the runner taken, the buffers attached, the kernels loaded. *out stays NULL
 * when the job has none. Returns 0 or a negative errno with err; cpu_user_free(*out)
 * in every case. s, res, in and outs are borrowed for the job's life (a run whose timed
 * launch fails the runner's check on fresh inputs gets its launch_failure in res). */
int cpu_user_setup(struct cpu_user **out, const struct exp_spec *s, struct exp_result *res,
                   const float *const *in, float **outs, size_t out_len, char *err, size_t err_len);
bool cpu_user_is_run(const struct cpu_user *u, int run);
/* n launches of run, its output poisoned (NaN) before each; timed: *ms per launch (the
 * runner's clock), each on fresh inputs checked by the runner, then the job's inputs put
 * back and one untimed launch on them (what the check after the batches reads). The
 * inputs verified unchanged after. 0, -EFAULT, -ETIMEDOUT, -EROFS (input_modified), or
 * another negative errno, with err. */
int cpu_user_launches(struct cpu_user *u, int run, int n, bool timed, double *ms, char *err,
                      size_t err_len);
/* The runner detached and given back, the buffers unmapped. NULL is a no-op. */
void cpu_user_free(struct cpu_user *u);

#endif
