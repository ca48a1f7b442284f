/* Users' kernels in a CUDA job (runs kernel:<id> of an experiment with a user block,
 * exp_desc.user): they run in gpulab-runner, a process of its own per device
 * (kernels/user/runner.h), never in this context. The job's inputs are copied into
 * cudaMalloc'ed buffers exported with cudaIpcGetMemHandle, one more such buffer per
 * user run takes its output; the runner opens them, loads the image, and times each
 * launch with its own events after poisoning the output (NaN) (cold: and after
 * flushing the L2 with gpulabd's own flush, cuda_l2flush.h), so a kernel that skips
 * work when its output is already right, or works only once, is caught by the check
 * after the batches. The built-in runs of such a job are timed the same way
 * (cuda_kernel_job.cu). A fault or a launch past its deadline fails the job (-EFAULT
 * kernel_fault, -ETIMEDOUT kernel_timeout); the runner is replaced, this context is
 * untouched. After each request to the runner the inputs it was given are compared with
 * the job's, word for word, on the device: a kernel that wrote into one fails the job
 * (-EROFS, input_modified). The kernel experiments' ops (cuda_kernel_job.cu) call in
 * here for such runs: plan, setup, warm-ups, samples, the job's output, release. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backends/cuda/cuda_job.h"
#include "kernels/core/occupancy.h"
#include "kernels/user/runner.h"
#include "kernels/user/ukreg.h"

#define MAX_IPC (EXP_MAX_INPUTS + EXP_MAX_VARIANTS)

struct cuda_user_job {
  struct runner *runner; /* held (runner_acquire) from setup to release */
  bool held, attached;
  int n_in;             /* the experiment's input slots */
  void *d_ipc[MAX_IPC]; /* cudaMalloc'ed: the inputs, then one output per user run */
  int n_ipc;
  size_t in_floats[EXP_MAX_INPUTS]; /* each input's, for the comparison after each request */
  unsigned long long *d_changed;    /* cudaMalloc'ed: the comparison's count */
  struct ukreg_kernel *k[EXP_MAX_VARIANTS]; /* by run; NULL for the built-ins */
  struct runner_run_msg msg[EXP_MAX_VARIANTS];
};

static pthread_mutex_t runners_mu = PTHREAD_MUTEX_INITIALIZER;
static struct runner *runners[64]; /* one per device ordinal, made on first use, kept */

struct runner *cuda_user_runner(int device) {
  if (device < 0 || device >= 64) return NULL;
  pthread_mutex_lock(&runners_mu);
  if (!runners[device]) {
    char exe[512];
    ukreg_runner_path(exe, sizeof exe);
    struct runner_config cfg = {};
    cfg.exe = exe;
    cfg.mode = RUNNER_MODE_CUDA;
    cfg.device = device;
    if (runner_new(&cfg, &runners[device]) != 0) runners[device] = NULL;
  }
  struct runner *r = runners[device];
  pthread_mutex_unlock(&runners_mu);
  return r;
}

static long long ceil_to(long long a, int b) { return (a + (b > 0 ? b : 1) - 1) / (b > 0 ? b : 1); }

/* The launch of kernel k at the job's sizes: a fixed grid, or its tile's through the
 * experiment's grid rule. */
static void user_grid(const struct exp_spec *s, const struct exp_user *u,
                      const struct ukreg_kernel *k, long long grid[3]) {
  grid[0] = grid[1] = grid[2] = 1;
  if (k->has_grid) {
    for (int i = 0; i < 3; i++) grid[i] = k->grid[i];
    return;
  }
  grid[0] = ceil_to(s->p[u->grid_x], k->tile[0]);
  if (u->grid_y >= 0) grid[1] = ceil_to(s->p[u->grid_y], k->tile[1]);
}

bool cuda_launch_fits(const struct cuda_job *j, struct exp_run *run, const int block[3],
                      const long long grid[3], int shared_bytes, bool cooperative,
                      const struct ukreg_kernel *k) {
  const cudaDeviceProp *p = &j->be->prop;
  long long threads = (long long)block[0] * block[1] * block[2];
  if (threads > p->maxThreadsPerBlock || block[0] > p->maxThreadsDim[0] ||
      block[1] > p->maxThreadsDim[1] || block[2] > p->maxThreadsDim[2]) {
    job_run_unavailable(run, "block %dx%dx%d exceeds the device's limits (%d threads)", block[0],
                        block[1], block[2], p->maxThreadsPerBlock);
    return false;
  }
  for (int i = 0; i < 3; i++)
    if (grid[i] > p->maxGridSize[i]) {
      job_run_unavailable(run, "grid dimension %d of %lld exceeds the device's limit %d", i,
                          grid[i], p->maxGridSize[i]);
      return false;
    }
  if ((long long)shared_bytes + k->static_shared_bytes > (long long)p->sharedMemPerBlockOptin) {
    job_run_unavailable(run, "%d bytes of shared memory exceed the device's opt-in maximum %zu",
                        shared_bytes + k->static_shared_bytes, p->sharedMemPerBlockOptin);
    return false;
  }
  if (cooperative) { /* its grid resident at once (the runner asks the driver again) */
    struct occupancy_launch l = {p->major * 10 + p->minor, (int)threads, k->registers,
                                 k->static_shared_bytes, shared_bytes};
    struct occupancy o;
    char why[128];
    long long blocks = grid[0] * grid[1] * grid[2];
    if (occupancy_theoretical(&l, &o, why, sizeof why) == 0 &&
        blocks > (long long)o.blocks_per_sm * p->multiProcessorCount) {
      job_run_unavailable(run,
                          "a cooperative launch of %lld blocks: %d fit on this device at once (%d "
                          "per SM x %d SMs); give a smaller grid",
                          blocks, o.blocks_per_sm * p->multiProcessorCount, o.blocks_per_sm,
                          p->multiProcessorCount);
      return false;
    }
  }
  return true;
}

int cuda_user_plan_run(struct cuda_job *j, int r, struct exp_run *run) {
  const struct exp_spec *s = j->spec;
  const struct exp_user *u = j->exp->user;
  long long id = exp_user_kernel_id(run->variant);
  exp_run_label(s, r, run->label, sizeof run->label);
  if (!j->user && !(j->user = (struct cuda_user_job *)calloc(1, sizeof *j->user))) {
    snprintf(j->err, j->err_len, "host out of memory");
    return -ENOMEM;
  }
  struct ukreg_kernel *k = NULL;
  if (!ukreg_run_user(run) || ukreg_get(id, &k) != 0 || !k->image) {
    ukreg_kernel_free(k);
    return job_run_unavailable(run, "kernel %lld is not loaded here (stored without an image?)",
                               id);
  }
  j->user->k[r] = k; /* cuda_user_release frees it */
  if (!u || strcmp(k->experiment, j->exp->name) != 0)
    return job_run_unavailable(run, "kernel %lld is not a kernel of this experiment", id);
  if (k->refused[0])
    return job_run_unavailable(run, "kernel %lld is refused by today's rules: %.64s; send it again",
                               id, k->refused);
  if (s->graph)
    return job_run_unavailable(
        run,
        "graph: a user's kernel runs in gpulab-runner, another process with its own "
        "CUDA context, so it cannot join this job's CUDA Graph (captured in gpulabd's "
        "context); run it without graph");
  long long grid[3];
  user_grid(s, u, k, grid);
  if (!cuda_launch_fits(j, run, k->block, grid, k->shared_bytes, k->cooperative, k)) return 0;
  struct runner_run_msg *m = &j->user->msg[r];
  memset(m, 0, sizeof *m);
  memcpy(m->key, k->key, sizeof m->key);
  for (int i = 0; i < 3; i++) {
    m->grid[i] = (uint32_t)(grid[i] > 0 ? grid[i] : 0);
    m->block[i] = (uint32_t)k->block[i];
  }
  m->dyn_shared_bytes = (uint32_t)k->shared_bytes;
  m->cooperative = k->cooperative;
  /* The job's sizes empty: nothing to launch, as the built-ins' empty grids. */
  if (grid[0] == 0 || grid[1] == 0) m->grid[0] = m->grid[1] = 0;
  struct exp_kernel_info *ki = &run->kernel;
  snprintf(ki->name, sizeof ki->name, "%.40s (kernel:%lld)", k->name, id);
  snprintf(ki->description, sizeof ki->description, "%.40s's kernel, run in gpulab-runner",
           k->owner);
  ki->has_launch = true;
  for (int i = 0; i < 3; i++) ki->grid[i] = (int)m->grid[i], ki->block[i] = k->block[i];
  ki->registers = k->registers;
  ki->static_shared_bytes = k->static_shared_bytes;
  ki->dynamic_shared_bytes = k->shared_bytes;
  ki->local_bytes = k->stack_bytes;
  return 0;
}

bool cuda_user_is_run(const struct cuda_job *j, int r) {
  return j->user && r >= 0 && r < EXP_MAX_VARIANTS && j->user->k[r] && j->result->runs[r].available;
}

/* A runner's error as the backend's (negative errno), its message in j->err. */
static int runner_error(struct cuda_job *j, int r, int rc, const char *what, const char *msg) {
  snprintf(j->err, j->err_len, "kernel:%lld: %s: %s",
           exp_user_kernel_id(j->result->runs[r].variant), what, msg);
  return rc == -EFAULT || rc == -ETIMEDOUT || rc == -ENOMEM ? rc : -EINVAL;
}

/* Counts the 32-bit words where a and b differ into *changed. Grid-stride, one atomic
 * per thread that found any. */
__global__ void words_differ_kernel(const uint32_t *a, const uint32_t *b, size_t n,
                                    unsigned long long *changed) {
  unsigned long long mine = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    mine += a[i] != b[i];
  if (mine) atomicAdd(changed, mine);
}

/* After a request of user run r: the inputs the runner was given, compared with the
 * job's on the lane's stream; 0, or -EROFS (input_modified) naming the kernel and the
 * input, or a CUDA error. */
static int inputs_unchanged(struct cuda_job *j, int r) {
  struct cuda_user_job *u = j->user;
  for (int slot = 0; slot < u->n_in; slot++) {
    size_t n = u->in_floats[slot];
    if (n == 0) continue;
    unsigned long long changed = 0;
    CUDA_TRY(j, cudaMemsetAsync(u->d_changed, 0, sizeof changed, j->lane->stream));
    int blocks = (int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    words_differ_kernel<<<blocks, 256, 0, j->lane->stream>>>(
        (const uint32_t *)u->d_ipc[slot], (const uint32_t *)j->d_in[slot], n, u->d_changed);
    CUDA_TRY(j, cudaGetLastError());
    CUDA_TRY(j, cudaMemcpyAsync(&changed, u->d_changed, sizeof changed, cudaMemcpyDeviceToHost,
                                j->lane->stream));
    CUDA_TRY(j, cudaStreamSynchronize(j->lane->stream));
    if (changed) {
      snprintf(
          j->err, j->err_len,
          "kernel:%lld wrote into its input %s: %llu of %zu elements changed; inputs are read-only",
          exp_user_kernel_id(j->result->runs[r].variant), j->exp->inputs[slot].name, changed, n);
      return -EROFS;
    }
  }
  return 0;
}

int cuda_ipc_buffer(struct cuda_job *j, size_t bytes, void **keep,
                    struct runner_buffer_desc *desc) {
  *keep = NULL; /* what release frees if the cudaMalloc fails */
  CUDA_TRY(j, cudaMalloc(keep, bytes));
  cudaIpcMemHandle_t h;
  CUDA_TRY(j, cudaIpcGetMemHandle(&h, *keep));
  static_assert(sizeof h <= sizeof desc->ipc, "an IPC handle fits the wire's");
  memcpy(desc->ipc, &h, sizeof h);
  desc->bytes = bytes;
  desc->offset = 0;
  return 0;
}

/* An IPC buffer of count floats (at least one); its handle into desc. Input slot
 * `slot` (>= 0) is copied in on the lane's stream. */
static int ipc_buffer(struct cuda_job *j, size_t count, int slot, struct runner_buffer_desc *desc) {
  struct cuda_user_job *u = j->user;
  void **d = &u->d_ipc[u->n_ipc++]; /* cuda_user_release frees it */
  RC_TRY(cuda_ipc_buffer(j, (count ? count : 1) * sizeof(float), d, desc));
  if (slot >= 0 && count)
    CUDA_TRY(j, cudaMemcpyAsync(*d, j->d_in[slot], count * sizeof(float), cudaMemcpyDeviceToDevice,
                                j->lane->stream));
  return 0;
}

/* User run r's message: its arguments from the experiment's user block, its output in
 * buffer out, poisoned before every launch. */
static void fill_args(struct cuda_job *j, int r, int out) {
  const struct exp_user *usr = j->exp->user;
  struct runner_run_msg *m = &j->user->msg[r];
  m->n_args = (uint32_t)usr->n_args;
  for (int a = 0; a < usr->n_args; a++) {
    const struct exp_user_arg *arg = &usr->args[a];
    if (arg->kind == EXP_USER_ARG_PARAM)
      m->args[a] = {RUNNER_ARG_I32, j->spec->p[arg->index]};
    else
      m->args[a] = {RUNNER_ARG_BUFFER, arg->kind == EXP_USER_ARG_INPUT ? arg->index : out};
  }
  m->out_buffer = (uint32_t)out;
  m->out_floats = j->out_len;
  m->poison_each = 1;
  m->reset_zero = usr->reset_zero;
  m->cold = j->spec->cold; /* the runner flushes its L2 before each timed launch */
  m->scratch_bytes = (uint64_t)j->user->k[r]->scratch_bytes; /* zeroed before each launch */
}

int cuda_user_setup(struct cuda_job *j) {
  struct cuda_user_job *u = j->user;
  int runs[EXP_MAX_VARIANTS], n_user = 0;
  for (int r = 0; r < j->result->n_runs; r++)
    if (cuda_user_is_run(j, r)) runs[n_user++] = r;
  if (n_user == 0) return 0;
  u->n_in = exp_input_count(j->spec->type);
  if (u->n_in + n_user > RUNNER_MAX_BUFFERS) {
    snprintf(j->err, j->err_len, "%d users' kernels in one job: at most %d", n_user,
             RUNNER_MAX_BUFFERS - u->n_in);
    return -EINVAL;
  }
  struct runner_buffer_desc desc[RUNNER_MAX_BUFFERS];
  memset(desc, 0, sizeof desc);
  for (int slot = 0; slot < u->n_in; slot++) {
    struct exp_shape shape;
    exp_input_shape(j->spec, slot, &shape);
    u->in_floats[slot] = (size_t)exp_shape_count(&shape);
    RC_TRY(ipc_buffer(j, u->in_floats[slot], slot, &desc[slot]));
  }
  CUDA_TRY(j, cudaMalloc((void **)&u->d_changed, sizeof *u->d_changed));
  for (int k = 0; k < n_user; k++) {
    RC_TRY(ipc_buffer(j, j->out_len, -1, &desc[u->n_in + k]));
    j->d_out[runs[k]] = (float *)u->d_ipc[u->n_in + k];
  }
  CUDA_TRY(j, cudaStreamSynchronize(j->lane->stream)); /* the runner reads them next */
  char err[256] = "";
  if (!(u->runner = cuda_user_runner(j->be->device)))
    return runner_error(j, runs[0], -ENOMEM, "runner", "out of memory");
  int rc = runner_acquire(u->runner, err, sizeof err);
  if (rc) return runner_error(j, runs[0], rc, "gpulab-runner did not start", err);
  u->held = true;
  if ((rc = runner_attach(u->runner, desc, NULL, u->n_in + n_user, err, sizeof err)))
    return runner_error(j, runs[0], rc, "attach", err);
  u->attached = true;
  for (int k = 0; k < n_user; k++) {
    int r = runs[k];
    const struct ukreg_kernel *uk = u->k[r];
    struct runner_loaded_msg loaded;
    rc = runner_load(u->runner, uk->key, uk->entry, uk->image, uk->image_bytes, &loaded, err,
                     sizeof err);
    if (rc) return runner_error(j, r, rc, "load", err);
    fill_args(j, r, u->n_in + k);
  }
  return 0;
}

/* One request of n launches of user run r, poisoned before each; timed: *ms per launch
 * (cold: each after the runner's L2 flush, which its answer must show), each on fresh
 * inputs the runner checks where the experiment has a check; a launch that failed it is
 * kept as the run's launch_failure. */
static int request(struct cuda_job *j, int r, uint32_t n, bool timed, double *ms) {
  struct runner_run_msg *m = &j->user->msg[r];
  m->n_launches = n;
  m->timed = timed;
  if (!timed || !ukreg_fresh(j->spec, &m->fresh)) memset(&m->fresh, 0, sizeof m->fresh);
  struct runner_done_msg done;
  struct runner_fault fault;
  char err[256];
  int rc = runner_run(j->user->runner, m, ukreg_deadline(), &done, &fault, err, sizeof err);
  if (rc) return runner_error(j, r, rc, "launch", err);
  struct exp_run *run = &j->result->runs[r];
  if (m->fresh.check &&
      done.fresh_checked != n) { /* a fresh figure that was not checked is no figure */
    snprintf(err, sizeof err, "the runner checked %u of %u timed launches on fresh inputs",
             done.fresh_checked, n);
    return runner_error(j, r, -EPROTO, "launch", err);
  }
  if (done.bad_launch && !run->launch_failure[0])
    ukreg_fresh_failure(j->spec, &done, n, run->launch_failure, sizeof run->launch_failure);
  if (timed && m->cold && done.l2_flushes != n) { /* a cold figure that is not cold is no figure */
    snprintf(err, sizeof err, "cold: the runner flushed the L2 before %u of %u timed launches",
             done.l2_flushes, n);
    return runner_error(j, r, -EPROTO, "launch", err);
  }
  if (ms) *ms = done.ms_per_launch;
  return 0;
}

/* n launches of user run r (request); after a fresh one, the job's inputs put back and
 * one untimed launch on them, so that the output the check after the batches reads is
 * of the job's inputs; then the inputs verified unchanged. */
static int launches(struct cuda_job *j, int r, uint32_t n, bool timed, double *ms) {
  RC_TRY(request(j, r, n, timed, ms));
  struct cuda_user_job *u = j->user;
  if (u->msg[r].fresh.check) {
    for (int slot = 0; slot < u->n_in; slot++)
      if (u->in_floats[slot])
        CUDA_TRY(j,
                 cudaMemcpyAsync(u->d_ipc[slot], j->d_in[slot], u->in_floats[slot] * sizeof(float),
                                 cudaMemcpyDeviceToDevice, j->lane->stream));
    CUDA_TRY(j, cudaStreamSynchronize(j->lane->stream)); /* the runner reads them next */
    RC_TRY(request(j, r, 1, false, NULL));
  }
  return inputs_unchanged(j, r);
}

int cuda_user_launch(struct cuda_job *j, int r, float *out) {
  RC_TRY(launches(j, r, 1, false, NULL));
  if (out != j->d_out[r] && j->out_len)
    CUDA_TRY(j, cudaMemcpyAsync(out, j->d_out[r], j->out_len * sizeof(float),
                                cudaMemcpyDeviceToDevice, j->lane->stream));
  return 0;
}

int cuda_user_warm(struct cuda_job *j, int r) { return launches(j, r, 1, false, NULL); }

int cuda_user_sample(struct cuda_job *j, int r, double *ms) {
  return launches(j, r, (uint32_t)j->result->runs[r].timing.reps, true, ms);
}

int cuda_user_profile(struct cuda_job *j, int r, struct exp_profile *out) {
  struct runner_run_msg m = j->user->msg[r]; /* the run's launch, as it is timed */
  m.n_launches = 1;
  m.timed = 0;
  m.cold = 0;
  m.profile = 1;
  memset(&m.fresh, 0, sizeof m.fresh);
  struct runner_done_msg done;
  struct runner_fault fault;
  char err[256];
  int rc = runner_run(j->user->runner, &m, ukreg_deadline(), &done, &fault, err, sizeof err);
  if (rc) return runner_error(j, r, rc, "profile", err);
  *out = done.profile;
  return 0;
}

void cuda_user_release(struct cuda_job *j) {
  struct cuda_user_job *u = j->user;
  if (!u) return;
  if (u->attached) runner_detach(u->runner);
  if (u->held) runner_release(u->runner); /* a runner that died is started again here */
  if (u->n_ipc) (void)cudaStreamSynchronize(j->lane->stream);
  for (int i = 0; i < u->n_ipc; i++) (void)cudaFree(u->d_ipc[i]);
  if (u->d_changed) (void)cudaFree(u->d_changed);
  for (int r = 0; r < EXP_MAX_VARIANTS; r++) {
    if (u->k[r]) j->d_out[r] = NULL; /* its output was an IPC buffer, freed above */
    ukreg_kernel_free(u->k[r]);
  }
  free(u);
  j->user = NULL;
  (void)cudaGetLastError();
}
