/* The CPU backend (backend_impl.h): runs every experiment with the CPU stand-ins its
 * descriptor names (exp_desc), timed by the wall clock and checked against its
 * reference. Each job allocates its own buffers, so lanes share nothing mutable; the
 * CPU computes synchronously, so a job's done fence is complete as soon as it exists. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/backends/backend_impl.h"
#include "kernels/backends/cpu/cpu_user.h"
#include "kernels/core/clock.h"
#include "kernels/core/reference.h"
#include "kernels/core/reference_cache.h"
#include "kernels/core/window.h"
#include "kernels/user/ukreg.h"

/* The lecture's repetition counts are sized for a GPU; a CPU call can take a second,
 * so warm-ups and reps are cut to about these budgets (batches never are). */
#define WARMUP_BUDGET_MS 50.0
#define BATCH_BUDGET_MS 100.0

static const char timing_method[] =
    "CPU wall clock (CLOCK_MONOTONIC) around each batch; sample = batch time / reps; "
    "a first untimed probe call sizes warm-ups and reps";
static const char timing_method_graph[] =
    "CPU wall clock (CLOCK_MONOTONIC) around each batch; sample = batch time / reps; "
    "a first untimed probe call sizes warm-ups and reps; "
    "graph: not applicable on the CPU backend; timed as plain calls";
static const char timing_method_cold[] =
    "CPU wall clock (CLOCK_MONOTONIC) around each batch; sample = batch time / reps; "
    "a first untimed probe call sizes warm-ups and reps; "
    "cold: not applicable on the CPU backend (no cache flush); timed warm";
static const char timing_method_runner[] =
    "a CPU-mode gpulab-runner (tests): fresh inputs from a secret seed and the output "
    "poisoned (NaN) before each launch, the runner's monotonic clock around each, its "
    "output checked after; sample = mean of the batch's reps launches";
static const char timing_method_runner_cold[] =
    "a CPU-mode gpulab-runner (tests): fresh inputs from a secret seed and the output "
    "poisoned (NaN) before each launch, the runner's monotonic clock around each, its "
    "output checked after; sample = mean of the batch's reps launches; cold: passed to the runner, not applicable on the CPU backend (no cache flush, as for "
    "the built-ins beside it); timed warm";
static const char capped_reason[] = "cpu time budget: ~100 ms per batch";

struct cpu_impl {
  char model[128];
  int cores;
  uint64_t mem_total_bytes;
  atomic_bool lost;             /* an injected fault (spec->fault) stands for a lost device */
  struct reference_cache *refs; /* references of repeated jobs (reference_cache.h) */
};

/* One job on one lane; everything it points to belongs to the job, except the
 * inputs given as data. */
struct cpu_job {
  const struct exp_spec *spec;
  const struct exp_desc *exp;
  const struct backend_hooks *hooks;
  struct exp_result *result;
  const float *in[EXP_MAX_INPUTS]; /* given (borrowed) or in_owned */
  float *in_owned[EXP_MAX_INPUTS]; /* generated from the slot's seed */
  size_t out_len;
  float *outs[EXP_MAX_VARIANTS]; /* per available run, checked after all timing */
  float *slab;                   /* backs outs */
  float *scratch;                /* exp_desc.cpu_scratch_floats, shared by the job's calls */
  struct exp_run *timeline;      /* the run whose calls record their timeline, or NULL */
  bool in_window;                /* between the window's TIMED and UNTIMED phases */
  char *err;
  size_t err_len;
  atomic_bool *lost;     /* the backend's: set, every job on it fails as on a lost GPU */
  struct cpu_user *user; /* users' kernels through a CPU runner (tests; cpu_user.h), or NULL */
  struct reference_cache *refs; /* the backend's */
  struct reference *ref;        /* when no input is given: the one whose inputs it runs on */
};

/* A CPU fence: set once the job's output is complete. The CPU computes outputs
 * before creating their fences, so waits return at once; the condition variable
 * keeps the contract should that ever change. */
struct backend_fence {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
};

static void *alloc_floats(size_t n) {
  if (n > SIZE_MAX / sizeof(float)) return NULL;
  return malloc(n ? n * sizeof(float) : 1);
}

/* ---- fences and buffers ---- */

static struct backend_fence *fence_new(bool done) {
  struct backend_fence *f = malloc(sizeof *f);
  if (!f) return NULL;
  if (pthread_mutex_init(&f->mu, NULL) != 0) goto fail;
  if (pthread_cond_init(&f->cv, NULL) != 0) {
    pthread_mutex_destroy(&f->mu);
    goto fail;
  }
  f->done = done;
  return f;
fail:
  free(f);
  return NULL;
}

static void fence_wait(struct backend_fence *f) {
  pthread_mutex_lock(&f->mu);
  while (!f->done) pthread_cond_wait(&f->cv, &f->mu);
  pthread_mutex_unlock(&f->mu);
}

static void cpu_fence_free(struct backend *b, struct backend_fence *f) {
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

static struct backend_buffer *buffer_new(uint64_t count) {
  struct backend_buffer *buf = malloc(sizeof *buf);
  if (!buf) return NULL;
  buf->count = count;
  buf->data = count <= SIZE_MAX ? alloc_floats((size_t)count) : NULL;
  if (buf->data) return buf;
  free(buf);
  return NULL;
}

static int cpu_buffer_upload(struct backend *b, const float *host, uint64_t count,
                             struct backend_buffer **out, char *err, size_t err_len) {
  *out = buffer_new(count);
  if (!*out) {
    snprintf(err, err_len, "host memory: cannot allocate a buffer of %" PRIu64 " floats", count);
    return -ENOMEM;
  }
  if (count) memcpy((*out)->data, host, (size_t)count * sizeof(float));
  return 0;
}

static int cpu_buffer_download(struct backend *b, struct backend_buffer *buf,
                               struct backend_fence *fence, float *host, char *err,
                               size_t err_len) {
  if (fence) fence_wait(fence);
  if (buf->count) memcpy(host, buf->data, (size_t)buf->count * sizeof(float));
  return 0;
}

static void cpu_buffer_free(struct backend *b, struct backend_buffer *buf) {
  free(buf->data);
  free(buf);
}

/* ---- one call of a run's stand-in ---- */

/* Runs the run's entry (a variant, or a runs-list entry) once, writing out. */
static int call_once(struct cpu_job *job, int entry, float *out) {
  const struct exp_variant *v = exp_variant_of(job->spec, entry);
  exp_cpu_fn fn = v ? v->cpu.fn : job->exp->cpu_run;
  struct exp_cpu_call call = {job->spec, job->in,       out,      job->scratch,
                              entry,     job->timeline, job->err, job->err_len};
  return fn(&call);
}

/* ---- timing ---- */

static int device_lost(struct cpu_job *job) {
  snprintf(job->err, job->err_len, "the device was lost (injected fault)");
  return -EIO;
}

static int canceled(struct cpu_job *job) {
  snprintf(job->err, job->err_len, "canceled");
  return -ECANCELED;
}

static int out_of_memory(struct cpu_job *job, const char *what) {
  snprintf(job->err, job->err_len, "host memory: cannot allocate %s", what);
  return -ENOMEM;
}

static int imin(int a, int b) { return a < b ? a : b; }

/* ---- the timed window's CPU side (kernels/core/window.h) ---- */

/* A user's run in the runner: its warm-ups and reps as asked (no CPU budget). */
static int user_warm(struct cpu_job *job, int i) {
  const struct exp_timing_params *p = &job->spec->timing;
  struct exp_timing *t = &job->result->runs[i].timing;
  t->warmup = t->warmup_requested = p->warmup;
  t->reps = t->reps_requested = p->reps;
  t->batches = p->batches;
  t->method = job->spec->cold ? timing_method_runner_cold : timing_method_runner;
  return p->warmup ? cpu_user_launches(job->user, i, p->warmup, false, NULL, job->err, job->err_len)
                   : 0;
}

/* Makes run i's probe call, sizes warm-ups and reps to the CPU time budget and
 * makes the remaining warm-ups. The probe counts as the first warm-up. */
static int cpu_warm(void *ctx, int i) {
  struct cpu_job *job = ctx;
  const struct exp_timing_params *p = &job->spec->timing;
  struct exp_run *run = &job->result->runs[i];
  struct exp_timing *t = &run->timing;
  if (atomic_load(job->lost)) return device_lost(job);
  if (cpu_user_is_run(job->user, i)) return user_warm(job, i);
  double t0 = clock_mono_ms();
  int rc = call_once(job, run->variant, job->outs[i]);
  if (rc < 0) return rc;
  double t1 = fmax(clock_mono_ms() - t0, 1e-6);
  t->warmup = imin(p->warmup, (int)fmax(1.0, ceil(WARMUP_BUDGET_MS / t1)));
  t->reps = imin(p->reps, (int)fmax(1.0, floor(BATCH_BUDGET_MS / t1)));
  t->batches = p->batches;
  t->warmup_requested = p->warmup;
  t->reps_requested = p->reps;
  t->method = job->spec->graph  ? timing_method_graph
              : job->spec->cold ? timing_method_cold
                                : timing_method;
  if (t->warmup < p->warmup || t->reps < p->reps) t->capped_by = capped_reason;
  for (int w = 1; w < t->warmup && rc == 0; w++) rc = call_once(job, run->variant, job->outs[i]);
  return rc;
}

/* Batch b of run i: reps calls inside one clock interval. */
static int cpu_sample(void *ctx, int i, int b, double *ms) {
  struct cpu_job *job = ctx;
  struct exp_run *run = &job->result->runs[i];
  const struct exp_timing *t = &run->timing;
  if (atomic_load(job->lost)) return device_lost(job);
  if (cpu_user_is_run(job->user, i)) /* reps launches in the runner, each timed alone */
    return cpu_user_launches(job->user, i, t->reps, true, ms, job->err, job->err_len);
  /* The last sample's calls record their timeline (the pipeline's passes); the last
   * call's stays. */
  job->timeline = b == t->batches - 1 ? run : NULL;
  double t0 = clock_mono_ms();
  for (int r = 0; r < t->reps; r++) {
    int rc = call_once(job, run->variant, job->outs[i]);
    if (rc < 0) return rc;
  }
  *ms = (clock_mono_ms() - t0) / t->reps;
  job->timeline = NULL;
  return 0;
}

/* The engine's TIMED phase; canceled while it waited: -ECANCELED (still in the
 * window, which cpu_run closes). */
static int cpu_enter(void *ctx) {
  struct cpu_job *job = ctx;
  job->in_window = true;
  return backend_hooks_phase(job->hooks, BACKEND_PHASE_TIMED) ? canceled(job) : 0;
}

static bool cpu_leave(void *ctx) {
  struct cpu_job *job = ctx;
  job->in_window = false;
  return backend_hooks_phase(job->hooks, BACKEND_PHASE_UNTIMED);
}

static int cpu_poll(void *ctx) {
  struct cpu_job *job = ctx;
  return backend_hooks_canceled(job->hooks) ? canceled(job) : 0;
}

static void cpu_progress(void *ctx, int run, int batch, double ms) {
  struct cpu_job *job = ctx;
  backend_hooks_progress(job->hooks, run, batch, ms);
}

/* The CPU computes synchronously: a window's work is complete when its last call
 * returns, so it closes at once, and it has no clocks to read. */
static const struct exp_window_ops cpu_window = {
    .enter = cpu_enter,
    .warm = cpu_warm,
    .poll = cpu_poll,
    .sample = cpu_sample,
    .progress = cpu_progress,
    .leave = cpu_leave,
};

/* Times every available run in the spec's order (experiment.h): sequential one
 * window per run, alternating (interleaved, the default) one window for all. A
 * window a failure ended is closed here. */
static int time_runs(struct cpu_job *job) {
  int rc = exp_window_schedule(job->spec, job->result, &cpu_window, job);
  if (job->in_window) cpu_leave(job);
  return rc;
}

/* Checks every available run's output against the reference: the one an identical
 * earlier job built when every input is generated from a seed (reference_cache.h),
 * else one built on the job's own inputs. */
static int check_runs(struct cpu_job *job) {
  struct exp_result *res = job->result;
  struct reference *ref = job->ref; /* make_inputs' (put back by cpu_job_free) */
  int i = 0;
  while (i < res->n_runs && !res->runs[i].available) i++;
  if (i == res->n_runs) return 0; /* nothing ran */
  const float *given[EXP_MAX_INPUTS] = {job->in[0], job->in[1]};
  bool reused;
  if (!ref && reference_cache_get(job->refs, job->spec, given, &ref, &reused) < 0)
    return out_of_memory(job, "the reference");
  for (; i < res->n_runs; i++)
    if (res->runs[i].available)
      reference_check(ref, res->runs[i].variant, job->outs[i], &res->runs[i].check);
  if (ref != job->ref) reference_cache_put(job->refs, ref);
  return 0;
}

/* ---- setting up a job ---- */

/* The run's identity from its variant's CPU stand-in, then the experiment's say; a
 * user's kernel's from the table of kernels. */
static void describe(const struct cpu_job *job, struct exp_run *run) {
  if (exp_variant_is_user(run->variant)) {
    cpu_user_describe(job->spec, run);
    return;
  }
  const struct exp_variant *v = exp_variant_of(job->spec, run->variant);
  if (v && !v->cpu.fn) {
    run->available = false;
    snprintf(run->reason, sizeof run->reason, "%s", v->cpu.reason);
  } else if (v) {
    snprintf(run->kernel.name, sizeof run->kernel.name, "%s", v->cpu.name);
    snprintf(run->kernel.description, sizeof run->kernel.description, "%s", v->cpu.description);
    snprintf(run->mapped_to, sizeof run->mapped_to, "%s", v->cpu.mapped_to);
  }
  if (job->exp->cpu_describe) job->exp->cpu_describe(job->spec, run);
}

/* Whether entry names a run of spec: a variant, a user's kernel, or a runs-list entry. */
static bool entry_valid(const struct exp_desc *d, int entry) {
  if (!d->runs)
    return (entry >= 0 && entry < d->n_variants) || (d->user && exp_variant_is_user(entry));
  for (int w = 0; d->runs->word && w < d->runs->n_word_runs; w++)
    if (entry == d->runs->word_runs[w]) return true;
  return entry >= d->runs->min && entry <= d->runs->max;
}

/* Fills the runs' identity (variant, label, kernel) from spec; -EINVAL for a spec this
 * backend cannot run. */
static int setup_runs(struct cpu_job *job, char *err, size_t err_len) {
  const struct exp_spec *s = job->spec;
  const struct exp_desc *d = job->exp;
  const struct exp_timing_params *p = &s->timing;
  struct exp_result *res = job->result;
  int n = s->n_variants;
  bool ok = n >= 1 && n <= EXP_MAX_VARIANTS && p->warmup >= 0 && p->reps >= 1 && p->batches >= 1 &&
            p->batches <= EXP_MAX_BATCHES && s->stop.min_samples >= 0 &&
            s->stop.min_samples <= EXP_MAX_BATCHES && s->stop.max_noise >= 0 &&
            s->stop.max_time_s >= 0;
  for (int i = 0; ok && i < d->n_params; i++)
    if (s->p[i] < 0) {
      snprintf(err, err_len, "cpu backend: negative sizes");
      return -EINVAL;
    }
  for (int i = 0; ok && i < n; i++) ok = entry_valid(d, s->variants[i]);
  if (!ok) {
    snprintf(err, err_len, "cpu backend: variants, stream counts or timing out of range");
    return -EINVAL;
  }
  res->n_runs = n;
  for (int i = 0; i < n; i++) {
    struct exp_run *run = &res->runs[i];
    run->variant = s->variants[i];
    run->available = true;
    exp_run_label(s, i, run->label, sizeof run->label);
    exp_spec_work_counts(s, &run->kernel.work);
    run->kernel.has_work = true;
    describe(job, run);
  }
  return 0;
}

/* -EINVAL unless every input given as data holds its slot's shape. */
static int check_given(const struct backend_job *bj, char *err, size_t err_len) {
  for (int slot = 0; slot < exp_input_count(bj->spec->type); slot++) {
    if (!bj->input[slot]) continue;
    struct exp_shape shape;
    exp_input_shape(bj->spec, slot, &shape);
    if (bj->input[slot]->count == (uint64_t)exp_shape_count(&shape)) continue;
    snprintf(err, err_len, "cpu backend: input %s holds %" PRIu64 " floats, the job needs %" PRId64,
             exp_input_name(bj->spec->type, slot), bj->input[slot]->count, exp_shape_count(&shape));
    return -EINVAL;
  }
  return 0;
}

/* Sets the job's inputs. None given as data: those of the reference its check will
 * use (job->ref: an identical earlier job's, kept by the cache, or one built now), so
 * that repeated jobs do not generate them again. Else the given buffers' host data,
 * and the other slots generated from their seeds (the stream and scale their
 * descriptor names, as reference.h does). */
static int make_inputs(struct cpu_job *job, const struct backend_job *bj) {
  const struct exp_spec *s = job->spec;
  bool given = false;
  for (int slot = 0; slot < job->exp->n_inputs; slot++) given = given || bj->input[slot];
  if (!given) {
    bool reused;
    if (reference_cache_get(job->refs, s, NULL, &job->ref, &reused) < 0)
      return out_of_memory(job, "the reference");
    for (int slot = 0; slot < job->exp->n_inputs; slot++)
      job->in[slot] = reference_input(job->ref, slot);
    return 0;
  }
  for (int slot = 0; slot < job->exp->n_inputs; slot++) {
    if (bj->input[slot]) {
      job->in[slot] = bj->input[slot]->data;
      continue;
    }
    const struct exp_input_desc *in = &job->exp->inputs[slot];
    struct exp_shape shape;
    exp_input_shape(s, slot, &shape);
    size_t n = (size_t)exp_shape_count(&shape);
    float *h = job->in_owned[slot] = alloc_floats(n);
    if (!h) return out_of_memory(job, "the job's inputs");
    reference_fill_scaled(h, n, s->inputs[slot].value, (int)in->stream, in->scale);
    job->in[slot] = h;
  }
  return 0;
}

/* Allocates one output per available run (poisoned with NaN, so an output the
 * stand-in never wrote fails its check) and the calls' scratch. */
static int alloc_buffers(struct cpu_job *job) {
  const struct exp_spec *s = job->spec;
  const struct exp_result *res = job->result;
  struct exp_shape shape;
  exp_output_shape(s, &shape);
  job->out_len = (size_t)exp_shape_count(&shape);
  int n_bufs = 0;
  for (int i = 0; i < res->n_runs; i++) n_bufs += res->runs[i].available;
  if (job->out_len > SIZE_MAX / EXP_MAX_VARIANTS) return out_of_memory(job, "the runs' outputs");
  job->slab = alloc_floats(job->out_len * (size_t)n_bufs);
  if (!job->slab) return out_of_memory(job, "the runs' outputs");
  for (size_t j = 0; j < job->out_len * (size_t)n_bufs; j++) job->slab[j] = NAN;
  for (int i = 0, k = 0; i < res->n_runs; i++)
    if (res->runs[i].available) job->outs[i] = job->slab + (size_t)k++ * job->out_len;
  if (job->exp->cpu_scratch_floats) {
    job->scratch = alloc_floats(job->exp->cpu_scratch_floats(s));
    if (!job->scratch) return out_of_memory(job, "the job's scratch");
  }
  return 0;
}

/* The job's output, computed once by the first available run (none: NULL), and
 * its done fence, complete at once. Both go to bj, then to the engine. */
static int make_output(struct cpu_job *job, struct backend_job *bj) {
  const struct exp_result *res = job->result;
  struct backend_buffer *out = NULL;
  int i = 0, rc = 0;
  while (i < res->n_runs && !res->runs[i].available) i++;
  if (i < res->n_runs) {
    if (!(out = buffer_new(job->out_len))) return out_of_memory(job, "the job's output");
    if (cpu_user_is_run(job->user, i)) { /* one launch in the runner, then its output */
      if ((rc = cpu_user_launches(job->user, i, 1, false, NULL, job->err, job->err_len)) < 0)
        goto fail;
      if (job->out_len) memcpy(out->data, job->outs[i], job->out_len * sizeof(float));
    } else if ((rc = call_once(job, res->runs[i].variant, out->data)) < 0) {
      goto fail;
    }
  }
  struct backend_fence *done = fence_new(true);
  if (!done) {
    rc = out_of_memory(job, "a fence");
    goto fail;
  }
  bj->output = out;
  bj->done = done;
  return 0;
fail:
  if (out) cpu_buffer_free(NULL, out);
  return rc;
}

/* SETUP's work: waits for the parents, takes the inputs, makes the output and
 * reports it issued. */
static int prepare(struct cpu_job *job, struct backend_job *bj) {
  for (int i = 0; i < bj->n_after; i++) fence_wait(bj->after[i]);
  int rc = make_inputs(job, bj);
  if (rc == 0) rc = alloc_buffers(job);
  if (rc == 0) /* users' runs: their outputs become buffers the runner shares */
    rc = cpu_user_setup(&job->user, job->spec, job->result, job->in, job->outs, job->out_len,
                        job->err, job->err_len);
  if (rc == 0) rc = make_output(job, bj);
  if (rc == 0) backend_hooks_issued(job->hooks);
  return rc;
}

/* SETUP's work for a problem's job: none of it runs here (its reference and kernels
 * are CUDA C), so every run is unavailable, saying why; the job has no output. */
static int problem_unavailable(struct cpu_job *job, struct backend_job *bj) {
  for (int i = 0; i < job->result->n_runs; i++) {
    struct exp_run *run = &job->result->runs[i];
    ukreg_run_user(run); /* a user's run names its kernel */
    run->available = false;
    snprintf(run->reason, sizeof run->reason, "%s", job->exp->variants[0].cpu.reason);
  }
  for (int i = 0; i < bj->n_after; i++) fence_wait(bj->after[i]);
  if (!(bj->done = fence_new(true))) return out_of_memory(job, "a fence");
  backend_hooks_issued(job->hooks);
  return 0;
}

static void cpu_job_free(struct cpu_job *job) {
  reference_cache_put(job->refs, job->ref);
  cpu_user_free(job->user);
  free(job->scratch);
  free(job->slab);
  for (int i = 0; i < EXP_MAX_INPUTS; i++) free(job->in_owned[i]);
}

/* Phases: SETUP (inputs, output, issued), a timed window per run (sequential) or
 * one for all (alternating), IDLE, then the checks, which use no device. */
static int cpu_run(struct backend *b, int lane, struct backend_job *bj,
                   const struct backend_hooks *hooks, struct exp_result *result, char *err,
                   size_t err_len) {
  const struct cpu_impl *impl = b->impl;
  const struct exp_spec *spec = bj->spec;
  struct cpu_job job = {.spec = spec,
                        .exp = exp_desc(spec->type),
                        .hooks = hooks,
                        .result = result,
                        .err = err,
                        .err_len = err_len,
                        .lost = (atomic_bool *)&impl->lost,
                        .refs = impl->refs};
  memset(result, 0, sizeof *result);
  snprintf(result->backend, sizeof result->backend, "cpu");
  snprintf(result->device_name, sizeof result->device_name, "%.95s", impl->model);
  bj->output = NULL;
  bj->done = NULL;
  if (spec->fault) atomic_store(job.lost, true); /* as a sticky CUDA error: for good */
  if (atomic_load(job.lost)) return device_lost(&job);
  if (!job.exp) {
    snprintf(err, err_len, "cpu backend: unknown experiment type %d", (int)spec->type);
    return -EINVAL;
  }
  int rc = setup_runs(&job, err, err_len);
  if (rc < 0 || (rc = check_given(bj, err, err_len)) < 0) return rc;
  if (backend_hooks_phase(hooks, BACKEND_PHASE_SETUP)) { /* canceled while it waited */
    backend_hooks_phase(hooks, BACKEND_PHASE_IDLE);
    snprintf(err, err_len, "canceled");
    return -ECANCELED;
  }
  if (spec->type == EXP_PROBLEM) {
    rc = problem_unavailable(&job, bj);
  } else {
    rc = prepare(&job, bj);
    if (rc == 0) rc = time_runs(&job);
  }
  backend_hooks_phase(hooks, BACKEND_PHASE_IDLE);
  if (rc == 0) rc = check_runs(&job);
  if (rc == 0) exp_result_finish(spec, result);
  cpu_job_free(&job);
  return rc;
}

/* ---- the backend ---- */

static void read_cpu_model(char *name, size_t len) {
  snprintf(name, len, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) != 0 || !colon) continue;
    colon += strspn(colon + 1, " \t") + 1;
    colon[strcspn(colon, "\n")] = '\0';
    if (*colon) snprintf(name, len, "%s", colon);
    break;
  }
  fclose(f);
}

static uint64_t pages_bytes(int which) {
  long pages = sysconf(which), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

static void cpu_device_info(struct backend *b, struct backend_device_info *info) {
  const struct cpu_impl *impl = b->impl;
  memset(info, 0, sizeof *info);
  snprintf(info->backend, sizeof info->backend, "cpu");
  snprintf(info->name, sizeof info->name, "%s", impl->model);
  info->cpu_cores = impl->cores;
  info->mem_total_bytes = impl->mem_total_bytes;
  info->mem_free_bytes = pages_bytes(_SC_AVPHYS_PAGES);
  snprintf(info->nvml_why, sizeof info->nvml_why, "cpu backend");
}

static uint64_t cpu_memory_limit(const struct backend *b) {
  const struct cpu_impl *impl = b->impl;
  return impl->mem_total_bytes / 4;
}

static bool cpu_healthy(const struct backend *b) {
  const struct cpu_impl *impl = b->impl;
  return !atomic_load(&impl->lost);
}

static void cpu_free(struct backend *b) {
  struct cpu_impl *impl = b->impl;
  if (impl) reference_cache_free(impl->refs);
  free(b->impl);
  free(b);
}

static enum backend_profiling cpu_profiling(const struct backend *b, char *why, size_t why_len) {
  (void)b;
  snprintf(why, why_len,
           "the CPU backend has no hardware counters: a profile needs gpulabd's CUDA backend on "
           "an NVIDIA GPU");
  return BACKEND_PROFILE_MARK;
}

static const struct backend_ops cpu_ops = {
    .name = "cpu",
    .device_info = cpu_device_info,
    .memory_limit = cpu_memory_limit,
    .healthy = cpu_healthy,
    .run = cpu_run,
    .buffer_upload = cpu_buffer_upload,
    .buffer_download = cpu_buffer_download,
    .buffer_free = cpu_buffer_free,
    .fence_free = cpu_fence_free,
    .free = cpu_free,
    .profiling = cpu_profiling,
};

/* The host is one device for every ordinal (tests open several). */
static int cpu_open(int device, int n_lanes, struct backend **out, char *why, size_t why_len) {
  *out = NULL;
  if (n_lanes < 1) {
    snprintf(why, why_len, "cpu backend: n_lanes must be >= 1, not %d", n_lanes);
    return -EINVAL;
  }
  struct backend *b = calloc(1, sizeof *b);
  struct cpu_impl *impl = calloc(1, sizeof *impl);
  if (!b || !impl ||
      reference_cache_new(REFERENCE_CACHE_ENTRIES, REFERENCE_CACHE_BYTES, &impl->refs))
    goto fail;
  read_cpu_model(impl->model, sizeof impl->model);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  impl->cores = cores > 0 ? (int)cores : 1;
  impl->mem_total_bytes = pages_bytes(_SC_PHYS_PAGES);
  b->ops = &cpu_ops;
  b->n_lanes = n_lanes;
  b->impl = impl;
  snprintf(why, why_len, "cpu backend: %s, %d cores", impl->model, impl->cores);
  *out = b;
  return 0;
fail:
  free(impl);
  free(b);
  snprintf(why, why_len, "cpu backend: out of memory");
  return -ENOMEM;
}

const struct backend_plugin cpu_backend_plugin = {BACKEND_CPU, cpu_open, NULL, NULL};
