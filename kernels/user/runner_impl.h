/* Inside gpulab-runner: what a mode (CPU, CUDA) provides to the request loop of
 * runner_main.c. One request at a time, on the runner's only thread. */
#ifndef GPULAB_RUNNER_IMPL_H
#define GPULAB_RUNNER_IMPL_H

#include <stddef.h>
#include "kernels/user/runner_proto.h"

struct runner_ops {
  /* Opens device; fills hello's limits and name. 0 or a negative errno with msg. */
  int (*init)(int device, struct runner_hello_msg *hello, char *msg, size_t msg_len);
  /* Takes the job's buffers (CPU: fds, which it then owns). 0 or -errno with msg. */
  int (*attach)(const struct runner_attach_msg *m, const int *fds, int n_fds, char *msg,
                size_t msg_len);
  void (*detach)(void);
  /* Loads (or finds) the image under m->key. 0 or -errno with msg. */
  int (*load)(const struct runner_load_msg *m, const void *image, struct runner_loaded_msg *out,
              char *msg, size_t msg_len);
  /* Runs m: 0 (done filled), 1 when the kernel faulted (fault filled: the loop answers
   * FAULT and the runner exits), or -errno with msg (the request failed, e.g. a launch
   * shape the device refused; the runner goes on). */
  int (*run)(const struct runner_run_msg *m, struct runner_done_msg *done,
             struct runner_fault_msg *fault, char *msg, size_t msg_len);
  /* Makes a problem's buffers (runner_proto.h's RUNNER_MSG_PROBLEM), the previous
   * problem's freed: 0 (ready filled), 1 when the reference faulted (fault filled, as
   * run), or -errno with msg (-ENOTSUP: a mode without problems; -ENOENT: the
   * reference's image is not loaded; -ENOMEM; -EINVAL: a bad message). */
  int (*problem)(const struct runner_problem_msg *m, struct runner_problem_ready_msg *ready,
                 struct runner_fault_msg *fault, char *msg, size_t msg_len);
};

extern const struct runner_ops runner_cpu_ops;
#ifdef GPULAB_RUNNER_CUDA
extern const struct runner_ops runner_cuda_ops;
#endif

#endif
