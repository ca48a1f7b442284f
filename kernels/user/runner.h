/* gpulabd's side of a runner: one long-lived gpulab-runner process per device, started
 * with fork + exec (never a bare fork of a process whose CUDA is initialized), spoken
 * to over a socketpair (runner_proto.h). A job takes the runner for the whole of its
 * use (runner_acquire ... runner_release): attaches its buffers, loads the images of
 * its users' kernels, runs launches with a deadline each, detaches. A kernel that
 * faults ends the runner (-EFAULT, with the CUDA error's or the signal's name); one
 * past its deadline is killed (-ETIMEDOUT); either way the runner is started again
 * when it is released, so that the next job finds one. The runner's stderr goes to
 * the log callback line by line, never to a client. */
#ifndef GPULAB_RUNNER_H
#define GPULAB_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "kernels/user/runner_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

struct runner;

struct runner_config {
  const char *exe;          /* gpulab-runner's path (copied) */
  enum runner_mode mode;    /* RUNNER_MODE_CPU or RUNNER_MODE_CUDA */
  int device;               /* the CUDA ordinal the runner opens */
  double start_timeout_s;   /* for its HELLO; 0: 30 s (a CUDA context may take seconds) */
  double deadline_margin_s; /* added to a run's launches' deadlines; 0: 1 s */
  /* Each line the runner writes to stderr or stdout, from a thread of the runner
   * module's own; NULL: gpulabd's stderr, prefixed "gpulab-runner[dev N pid P]: ". */
  void (*log)(void *arg, const char *line);
  void *log_arg;
};

/* A runner that is not started yet (runner_acquire starts it). Returns 0 with *out
 * (runner_free it) or -ENOMEM / -EINVAL. cfg is copied. */
int runner_new(const struct runner_config *cfg, struct runner **out);
/* Asks the runner to exit, kills it if it has not within a second, frees r. No job may
 * hold it. NULL is a no-op. */
void runner_free(struct runner *r);

/* Takes r for one job (blocking while another holds it), starting the runner when
 * none is alive. Returns 0 (then runner_release it), or an error with err (the runner
 * could not start: -ENOENT no executable, -ENODEV the device did not open, -ETIMEDOUT
 * no HELLO in time, -EPROTO another protocol version); r is then not held. */
int runner_acquire(struct runner *r, char *err, size_t err_len);
/* Gives r back; a runner that died or was killed in the meantime is started again now
 * (a failure is logged and retried at the next acquire). */
void runner_release(struct runner *r);

/* While held: what the runner said at start (its device's limits). */
const struct runner_hello_msg *runner_hello(const struct runner *r);

/* A failed launch: what the runner, the CUDA error or the signal said. */
struct runner_fault {
  char name[64]; /* "cudaErrorIllegalAddress", "SIGSEGV", "kernel_timeout" */
  char msg[192];
};

/* While held. Each returns 0, or: -ECHILD the runner is gone (died outside a run),
 * -EPROTO a bad answer, or the runner's own error (its negative errno, err says
 * why: a buffer it could not open, an image the device refused). */
/* The job's buffers, n <= RUNNER_MAX_BUFFERS: CUDA mode their IPC handles and offsets
 * in bufs; CPU mode memfds in fds (borrowed; the runner gets copies). */
int runner_attach(struct runner *r, const struct runner_buffer_desc *bufs, const int *fds, int n,
                  char *err, size_t err_len);
int runner_detach(struct runner *r);
/* Loads image (a CUBIN; CPU mode: ignored but for entry) under key. */
int runner_load(struct runner *r, const uint8_t key[32], const char *entry, const void *image,
                size_t image_bytes, struct runner_loaded_msg *loaded, char *err, size_t err_len);
/* Runs m (its n_launches) with deadline_s per launch (m->deadline_ms is set from it).
 * Also -EFAULT: the kernel faulted or the runner died in the run (fault says how);
 * -ETIMEDOUT: past the deadline, the runner was killed (fault->name "kernel_timeout").
 * The runner is then gone until runner_release starts another. */
int runner_run(struct runner *r, struct runner_run_msg *m, double deadline_s,
               struct runner_done_msg *done, struct runner_fault *fault, char *err, size_t err_len);

/* A problem's buffers (CUDA mode; runner_proto.h's RUNNER_MSG_PROBLEM): made by the
 * runner, its reference launched twice on the job's inputs, *ready says whether the
 * two agreed. Its images loaded first (runner_load). Also -ENOTSUP in CPU mode,
 * -ENOMEM when the device has not the memory, -EFAULT / -ETIMEDOUT as runner_run. */
int runner_problem(struct runner *r, const struct runner_problem_msg *m, double deadline_s,
                   struct runner_problem_ready_msg *ready, struct runner_fault *fault, char *err,
                   size_t err_len);

struct runner_stats {
  uint64_t starts; /* processes started */
  uint64_t faults, timeouts;
  double last_start_ms; /* fork to HELLO of the latest start */
  pid_t pid;            /* the live runner's, 0 when none */
};
void runner_stats(struct runner *r, struct runner_stats *s); /* any thread */

/* For CPU mode: a shared-memory buffer of bytes (a memfd, sealed against shrinking),
 * mapped here at *ptr. Returns 0 with *fd and *ptr (runner_memfd_free them) or -errno. */
int runner_memfd_new(size_t bytes, int *fd, void **ptr);
void runner_memfd_free(int fd, void *ptr, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
