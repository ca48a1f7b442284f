/* The CPU backend's users' kernels, for tests only (gpulabd --cpu-runner-test): a
 * CPU-mode gpulab-runner stands in for the GPU's, so that a job's whole path through
 * the runner (buffers as memfds, the arguments from the experiment's user block, a
 * runner that faults, hangs or dies and is replaced, kernel_fault / kernel_timeout,
 * the check after poisoned launches) runs where no GPU is. The runner's test functions
 * (kernels/user/runner_cpu.c) stand for the kernels by their entry's name; they are
 * transposes, so only that experiment's jobs take them. Without the flag a user's run
 * is listed unavailable, with the reason. */
#include "kernels/backends/cpu/cpu_user.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/user/runner.h"
#include "kernels/user/ukreg.h"

/* The experiments runner_cpu.c's test functions have the signatures of: transposes
 * (a, b, m, n), and its reduce_, scan_ and histogram_ functions. */
#define CPU_RUNNER_EXPERIMENTS "transpose, reduce, scan and histogram"
static bool cpu_runner_takes(const char *experiment) {
  return !strcmp(experiment, "transpose") || !strcmp(experiment, "reduce") ||
         !strcmp(experiment, "scan") || !strcmp(experiment, "histogram");
}

#define MAX_BUFS (EXP_MAX_INPUTS + EXP_MAX_VARIANTS)

struct cpu_user {
  struct runner *runner;
  const struct exp_spec *spec; /* the job's (borrowed) */
  struct exp_result *res;      /* the job's (borrowed): runs' launch_failure */
  enum exp_type type;
  int n_in;
  const float *in[EXP_MAX_INPUTS]; /* the job's inputs (borrowed): what the memfds must hold */
  size_t in_floats[EXP_MAX_INPUTS];
  int variant[EXP_MAX_VARIANTS]; /* by run */
  bool held, attached;
  int n_bufs;
  int fd[MAX_BUFS];
  void *ptr[MAX_BUFS];
  size_t bytes[MAX_BUFS];
  struct runner_run_msg msg[EXP_MAX_VARIANTS]; /* by run */
  bool is_user[EXP_MAX_VARIANTS];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct runner *shared_runner; /* one CPU runner for the process, made on first use */

void cpu_user_describe(const struct exp_spec *s, struct exp_run *run) {
  const struct exp_desc *d = exp_desc(s->type);
  long long id = exp_user_kernel_id(run->variant);
  bool known = ukreg_run_user(run);
  struct ukreg_kernel k;
  run->available = false;
  if (!ukreg_cpu_runner()) {
    snprintf(run->reason, sizeof run->reason,
             "users' kernels run on a CUDA device (in gpulab-runner); this is the CPU backend");
  } else if (!known || ukreg_identity(id, &k) != 0) {
    snprintf(run->reason, sizeof run->reason, "kernel %lld is not loaded here", id);
  } else if (k.refused[0]) {
    snprintf(run->reason, sizeof run->reason,
             "kernel %lld is refused by today's rules: %.64s; send it again", id, k.refused);
  } else if (!cpu_runner_takes(d->name)) {
    snprintf(run->reason, sizeof run->reason, "the CPU test runner has %s functions only",
             CPU_RUNNER_EXPERIMENTS);
  } else {
    run->available = true;
    snprintf(run->kernel.name, sizeof run->kernel.name, "%.40s (kernel:%lld)", k.name, id);
    snprintf(run->kernel.description, sizeof run->kernel.description,
             "test function %.40s in a CPU-mode gpulab-runner", k.entry);
  }
}

/* A runner's error as the backend's: its message in err. */
static int fail(char *err, size_t err_len, int rc, const char *what, const char *msg) {
  snprintf(err, err_len, "%s: %s", what, msg); /* msg: the fault's name, then what it was */
  return rc == -EFAULT || rc == -ETIMEDOUT || rc == -ENOMEM || rc == -EROFS ? rc : -EINVAL;
}

/* The process's CPU runner, made (not started) on first use; NULL when out of memory. */
static struct runner *runner_get(void) {
  pthread_mutex_lock(&mu);
  if (!shared_runner) {
    char exe[512];
    ukreg_runner_path(exe, sizeof exe);
    struct runner_config cfg = {.exe = exe, .mode = RUNNER_MODE_CPU};
    if (runner_new(&cfg, &shared_runner) != 0) shared_runner = NULL;
  }
  struct runner *r = shared_runner;
  pthread_mutex_unlock(&mu);
  return r;
}

/* The memfds: the inputs (copied in), then one output per user run (outs[r]). */
static int make_buffers(struct cpu_user *u, const struct exp_spec *s, const struct exp_result *res,
                        const float *const *in, float **outs, size_t out_len, char *err,
                        size_t err_len) {
  int n_in = exp_input_count(s->type);
  for (int slot = 0; slot < n_in; slot++) {
    struct exp_shape shape;
    exp_input_shape(s, slot, &shape);
    u->bytes[u->n_bufs++] = (size_t)exp_shape_count(&shape) * sizeof(float);
  }
  for (int r = 0; r < res->n_runs; r++)
    if (u->is_user[r]) u->bytes[u->n_bufs++] = out_len * sizeof(float);
  for (int i = 0; i < u->n_bufs; i++) {
    size_t bytes = u->bytes[i] ? u->bytes[i] : sizeof(float);
    int rc = runner_memfd_new(bytes, &u->fd[i], &u->ptr[i]);
    if (rc) {
      u->n_bufs = i; /* those made so far are freed */
      return fail(err, err_len, rc == -ENOMEM ? rc : -ENOMEM, "memfd", strerror(-rc));
    }
    if (i < n_in && u->bytes[i]) memcpy(u->ptr[i], in[i], u->bytes[i]);
    u->bytes[i] = bytes;
  }
  for (int r = 0, k = n_in; r < res->n_runs; r++)
    if (u->is_user[r]) outs[r] = u->ptr[k++]; /* the run's output: its memfd, shared */
  return 0;
}

/* Run r's message: the kernel loaded under its image's key, its arguments from the
 * experiment's user block (buffer `out` its output). */
static int load_run(struct cpu_user *u, const struct exp_spec *s, int r, int variant, int out,
                    size_t out_len, char *err, size_t err_len) {
  const struct exp_user *usr = exp_user_of(s->type);
  struct ukreg_kernel *kk;
  if (ukreg_get(exp_user_kernel_id(variant), &kk) != 0)
    return fail(err, err_len, -ENOENT, "kernel", "not loaded");
  struct runner_run_msg *m = &u->msg[r];
  memset(m, 0, sizeof *m);
  memcpy(m->key, kk->key, sizeof m->key);
  struct runner_loaded_msg loaded;
  char msg[256];
  int rc = runner_load(u->runner, m->key, kk->entry, kk->image, kk->image_bytes, &loaded, msg,
                       sizeof msg);
  m->scratch_bytes = (uint64_t)kk->scratch_bytes; /* the runner zeroes it before each launch */
  m->cooperative = kk->cooperative; /* the CPU runner calls a function: nothing to wait for */
  ukreg_kernel_free(kk);
  if (rc) return fail(err, err_len, rc, "load", msg);
  for (int i = 0; i < 3; i++) m->grid[i] = m->block[i] = 1; /* the CPU runner calls once */
  m->n_args = (uint32_t)usr->n_args;
  for (int a = 0; a < usr->n_args; a++) {
    const struct exp_user_arg *arg = &usr->args[a];
    if (arg->kind == EXP_USER_ARG_PARAM)
      m->args[a] = (struct runner_arg){RUNNER_ARG_I32, s->p[arg->index]};
    else
      m->args[a] = (struct runner_arg){RUNNER_ARG_BUFFER,
                                       arg->kind == EXP_USER_ARG_INPUT ? arg->index : out};
  }
  m->out_buffer = (uint32_t)out;
  m->out_floats = out_len;
  m->poison_each = 1;
  m->reset_zero = usr->reset_zero;
  m->cold = s->cold; /* the CPU runner takes it and flushes nothing (runner_cpu.c says why) */
  return 0;
}

int cpu_user_setup(struct cpu_user **out, const struct exp_spec *s, struct exp_result *res,
                   const float *const *in, float **outs, size_t out_len, char *err,
                   size_t err_len) {
  *out = NULL;
  int users = 0;
  for (int r = 0; r < res->n_runs; r++)
    users += res->runs[r].available && exp_variant_is_user(res->runs[r].variant);
  if (users == 0) return 0;
  if (exp_input_count(s->type) + users > RUNNER_MAX_BUFFERS)
    return fail(err, err_len, -EINVAL, "runner", "more buffers than the runner takes");
  struct cpu_user *u = calloc(1, sizeof *u);
  if (!u) return fail(err, err_len, -ENOMEM, "users' kernels", "host out of memory");
  *out = u;
  for (int r = 0; r < res->n_runs; r++) {
    u->is_user[r] = res->runs[r].available && exp_variant_is_user(res->runs[r].variant);
    u->variant[r] = res->runs[r].variant;
  }
  u->type = s->type;
  u->spec = s, u->res = res;
  u->n_in = exp_input_count(s->type);
  for (int i = 0; i < u->n_in; i++) {
    struct exp_shape shape;
    exp_input_shape(s, i, &shape);
    u->in[i] = in[i];
    u->in_floats[i] = (size_t)exp_shape_count(&shape);
  }
  int rc = make_buffers(u, s, res, in, outs, out_len, err, err_len);
  if (rc) return rc;
  if (!(u->runner = runner_get())) return fail(err, err_len, -ENOMEM, "runner", "out of memory");
  char msg[256];
  if ((rc = runner_acquire(u->runner, msg, sizeof msg)))
    return fail(err, err_len, rc, "gpulab-runner did not start", msg);
  u->held = true;
  struct runner_buffer_desc desc[RUNNER_MAX_BUFFERS];
  memset(desc, 0, sizeof desc);
  for (int i = 0; i < u->n_bufs; i++) desc[i].bytes = u->bytes[i];
  if ((rc = runner_attach(u->runner, desc, u->fd, u->n_bufs, msg, sizeof msg)))
    return fail(err, err_len, rc, "attach", msg);
  u->attached = true;
  for (int r = 0, k = exp_input_count(s->type); r < res->n_runs; r++)
    if (u->is_user[r] && (rc = load_run(u, s, r, res->runs[r].variant, k++, out_len, err, err_len)))
      return rc;
  return 0;
}

bool cpu_user_is_run(const struct cpu_user *u, int run) {
  return u && run >= 0 && run < EXP_MAX_VARIANTS && u->is_user[run];
}

/* After run's launches: its inputs as the job gave them, bit for bit, else -EROFS
 * (input_modified) naming the kernel, the input and the elements changed. */
static int inputs_unchanged(const struct cpu_user *u, int run, char *err, size_t err_len) {
  for (int i = 0; i < u->n_in; i++) {
    size_t n = u->in_floats[i];
    if (!u->in[i] || n == 0 || memcmp(u->ptr[i], u->in[i], n * sizeof(float)) == 0) continue;
    const uint32_t *got = u->ptr[i], *want = (const uint32_t *)u->in[i];
    size_t changed = 0, first = n;
    for (size_t k = 0; k < n; k++)
      if (got[k] != want[k]) changed++, first = first < k ? first : k;
    snprintf(err, err_len,
             "kernel:%lld wrote into its input %s: %zu of %zu elements changed (the first at %zu); "
             "inputs are read-only",
             exp_user_kernel_id(u->variant[run]), exp_desc(u->type)->inputs[i].name, changed, n,
             first);
    return -EROFS;
  }
  return 0;
}

/* One request of n launches of run (timed: on fresh inputs where its experiment has a
 * check); a fresh launch that failed is kept as the run's launch_failure. */
static int request(struct cpu_user *u, int run, int n, bool timed, double *ms, char *err,
                   size_t err_len) {
  struct runner_run_msg *m = &u->msg[run];
  m->n_launches = (uint32_t)n;
  m->timed = timed;
  if (!timed || !ukreg_fresh(u->spec, &m->fresh)) memset(&m->fresh, 0, sizeof m->fresh);
  struct runner_done_msg done;
  struct runner_fault fault;
  char msg[256];
  int rc = runner_run(u->runner, m, ukreg_deadline(), &done, &fault, msg, sizeof msg);
  if (rc) return fail(err, err_len, rc, "launch", msg);
  struct exp_run *r = &u->res->runs[run];
  if (m->fresh.check && done.fresh_checked != (uint32_t)n) /* unchecked: no figure */
    return fail(err, err_len, -EPROTO, "launch",
                "the runner did not check every launch on fresh inputs");
  if (done.bad_launch && !r->launch_failure[0])
    ukreg_fresh_failure(u->spec, &done, m->n_launches, r->launch_failure, sizeof r->launch_failure);
  if (ms) *ms = done.ms_per_launch;
  return 0;
}

int cpu_user_launches(struct cpu_user *u, int run, int n, bool timed, double *ms, char *err,
                      size_t err_len) {
  int rc = request(u, run, n, timed, ms, err, err_len);
  if (rc == 0 && u->msg[run].fresh.check) { /* the job's inputs back, and its output on them */
    for (int i = 0; i < u->n_in; i++)
      if (u->in[i] && u->in_floats[i]) memcpy(u->ptr[i], u->in[i], u->in_floats[i] * sizeof(float));
    rc = request(u, run, 1, false, NULL, err, err_len);
  }
  return rc ? rc : inputs_unchanged(u, run, err, err_len);
}

void cpu_user_free(struct cpu_user *u) {
  if (!u) return;
  if (u->attached) runner_detach(u->runner);
  if (u->held) runner_release(u->runner);
  for (int i = 0; i < u->n_bufs; i++) runner_memfd_free(u->fd[i], u->ptr[i], u->bytes[i]);
  free(u);
}
