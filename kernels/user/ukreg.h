/* Users' kernels as the backends see them: a process-wide table from a kernel's id to
 * what running it takes (its image, entry, launch shape) and what its runs carry (name,
 * owner, source hash). gpulabd fills it from the kernels' table at start and whenever a
 * kernel is stored; a job names a kernel by id only (exp_spec stays plain data), and
 * the backend looks it up when the job runs. Also where gpulab-runner is. Thread-safe. */
#ifndef GPULAB_UKREG_H
#define GPULAB_UKREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/core/experiment.h"
#include "kernels/user/runner_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ukreg_kernel {
  long long id;        /* the version's own id: what a job's variant names */
  long long kernel_id; /* the kernel's id, and this version's number in it */
  int version;
  /* experiment: "transpose", ...; a problem's kernel (and its reference): "problem:<name>" */
  char experiment[80], name[64], owner[64], source_sha[65], entry[64];
  int block[3], tile[2], grid[3];
  bool has_grid;
  /* A problem's kernel: its grid as expressions over the problem's params
   * (kernels/problem/pexpr.h), and the SHA-256 (hex) of the declaration it was compiled
   * with, so that a version of the problem with another signature does not run it. */
  char grid_expr[3][64];
  char problem_sig[65];
  int shared_bytes;        /* dynamic */
  long long scratch_bytes; /* > 0: one more last argument, zeroed before every launch */
  bool cooperative;        /* launched cooperatively: its whole grid resident at once */
  /* Why a stored kernel may not run under today's rules (it was stored before them:
   * state no runner can put back, uimage.h), "" when it may. Its runs are unavailable. */
  char refused[256];
  int registers, static_shared_bytes, stack_bytes, spill_bytes; /* from ptxas */
  uint8_t key[32]; /* SHA-256 of the image: the runner keeps modules by it */
  void *image;     /* the CUBIN */
  size_t image_bytes;
};

/* Keeps a copy of k (image included), replacing one of the same id. 0 or -ENOMEM. */
int ukreg_put(const struct ukreg_kernel *k);
/* A copy of kernel id into *out (ukreg_kernel_free it): 0, -ENOENT, -ENOMEM. */
int ukreg_get(long long id, struct ukreg_kernel **out);
/* Its identity only (no image) into *out: 0 or -ENOENT. */
int ukreg_identity(long long id, struct ukreg_kernel *out);
void ukreg_remove(long long id);
void ukreg_kernel_free(struct ukreg_kernel *k); /* NULL is a no-op */
/* Sets run->user from the table for a user's run (run->variant names a version): its
 * kernel's id and the version, name, owner and source hash when the version is or was
 * there (else the version's id alone). Returns whether it is; false (nothing set) for
 * any other run. */
bool ukreg_run_user(struct exp_run *run);
/* A user's run's label, "kernel:<kernel id>@<version>", for the version of id
 * version_id (exp_set_user_label's hook; main sets it). A version once put keeps its
 * label after ukreg_remove, so that a job that named it says which it named. */
void ukreg_label(long long version_id, char *buf, size_t len);

/* A timed request's fresh inputs and check for a user's kernel of spec's experiment
 * (runner_proto.h's runner_fresh): the experiment's generators for its inputs, its
 * int arguments as the check's params, a new secret seed from the system's CSPRNG.
 * Returns false (f zeroed) where the experiment has no such check. */
bool ukreg_fresh(const struct exp_spec *s, struct runner_fresh *f);
/* What done says of a fresh request of n launches that failed (done->bad_launch > 0),
 * for people: which launch, what was wrong and where. */
void ukreg_fresh_failure(const struct exp_spec *s, const struct runner_done_msg *done, uint32_t n,
                         char *out, size_t len);

/* gpulab-runner's path: set by gpulabd (copied); default: "gpulab-runner" beside the
 * running executable. */
void ukreg_set_runner_path(const char *path);
void ukreg_runner_path(char *buf, size_t len);
/* A launch's deadline in seconds (default 5), set by gpulabd. */
void ukreg_set_deadline(double seconds);
double ukreg_deadline(void);
/* Tests: the CPU backend runs users' kernels through a CPU-mode runner, whose test
 * functions stand for them by entry name (kernels/user/runner_cpu.c). */
void ukreg_set_cpu_runner(bool on);
bool ukreg_cpu_runner(void);

#ifdef __cplusplus
}
#endif
#endif
