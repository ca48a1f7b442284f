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
 * in every case. in and outs are borrowed. */
int cpu_user_setup(struct cpu_user **out, const struct exp_spec *s, const struct exp_result *res,
                   const float *const *in, float **outs, size_t out_len, char *err,
                   size_t err_len);
bool cpu_user_is_run(const struct cpu_user *u, int run);
/* n launches of run, its output poisoned (NaN) before each; timed: *ms per launch (the
 * runner's clock). 0, -EFAULT, -ETIMEDOUT, or another negative errno, with err. */
int cpu_user_launches(struct cpu_user *u, int run, int n, bool timed, double *ms, char *err,
                      size_t err_len);
/* The runner detached and given back, the buffers unmapped. NULL is a no-op. */
void cpu_user_free(struct cpu_user *u);

#endif
