/* The CPU backend (backend_impl.h): runs every experiment with the plain C kernels
 * of cpu_kernels.h, timed by the wall clock and checked against reference.h. Each
 * job allocates its own buffers, so lanes share nothing mutable. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/backend_impl.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/gen.h"
#include "kernels/reference.h"

/* The lecture's repetition counts are sized for a GPU; a CPU call can take a second,
 * so warm-ups and reps are cut to about these budgets (batches never are). */
#define WARMUP_BUDGET_MS 50.0
#define BATCH_BUDGET_MS 100.0

static const char timing_method[] =
    "CPU wall clock (CLOCK_MONOTONIC) around each batch; sample = batch time / reps; "
    "a first untimed probe call sizes warm-ups and reps";
static const char capped_reason[] = "cpu time budget: ~100 ms per batch";

struct cpu_impl {
  char model[128];
  int cores;
  uint64_t mem_total_bytes;
};

struct kernel_desc {
  const char *name, *description, *mapped_to;
};

static const struct kernel_desc transpose_kernels[] = {
    {"cpu_transpose_naive", "straight loop: reads rows of A, writes columns of B", ""},
    {"cpu_transpose_blocked", "32x32 cache-blocked loop (CPU stand-in for the shared-memory tile)",
     "cpu_transpose_blocked"},
    {"cpu_transpose_blocked", "32x32 cache-blocked loop (a CPU has no banks to pad for)",
     "cpu_transpose_blocked"},
    {"cpu_copy", "memcpy of A: the bandwidth reference", ""},
};
static const struct kernel_desc gemm_kernels[] = {
    {"cpu_gemm_naive", "i-j-k loop: one float fmaf dot product per output", ""},
    {"cpu_gemm_tiled", "16x16 output tiles over 16-wide K steps, float fmaf accumulators", ""},
};
static const struct kernel_desc stencil_kernels[] = {
    {"cpu_stencil_naive", "direct 2r+1 float sum per output", ""},
    {"cpu_stencil_shared", "tiles of 256: tile + halo copied to a local buffer, then summed", ""},
};
static const struct kernel_desc pipeline_kernel = {
    "cpu_synthesize", "upload, synthesize, download per chunk; s threads stand in for s streams",
    ""};

/* One job on one lane; everything it points to belongs to the job. */
struct job {
  const struct exp_spec *spec;
  const struct backend_hooks *hooks;
  struct exp_result *result;
  struct reference *ref;
  size_t out_len;
  float *outs[EXP_MAX_VARIANTS]; /* per run; sequential runs share one buffer */
  float *slab;                   /* backs outs */
  float *tile;                   /* stencil_shared's tile + halo */
  float *d_in, *d_out;           /* pipeline: the "device" buffers */
  char *err;
  size_t err_len;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *alloc_floats(size_t n) {
  if (n > SIZE_MAX / sizeof(float)) return NULL;
  return malloc(n ? n * sizeof(float) : 1);
}

/* ---- the pipeline: chunks over emulated streams ---- */

struct pass_share {
  const struct job *job;
  float *h_out;
  int streams, t;
};

/* Stream t's work: chunks c with c % streams == t, submitted as the lecture does
 * (all uploads, then all kernels, then all downloads); a stream runs in order. */
static void *pass_worker(void *arg) {
  const struct pass_share *sh = arg;
  const struct job *job = sh->job;
  const float *h_in = reference_input(job->ref, GEN_X);
  int chunk = job->spec->u.pipeline.chunk, chunks = job->spec->u.pipeline.chunks;
  int terms = job->spec->u.pipeline.terms;
  for (int c = sh->t; c < chunks; c += sh->streams)
    cpu_copy(h_in + (size_t)c * chunk, job->d_in + (size_t)c * chunk, (size_t)chunk);
  for (int c = sh->t; c < chunks; c += sh->streams)
    cpu_synthesize(job->d_in + (size_t)c * chunk, job->d_out + (size_t)c * chunk, chunk, terms);
  for (int c = sh->t; c < chunks; c += sh->streams)
    cpu_copy(job->d_out + (size_t)c * chunk, sh->h_out + (size_t)c * chunk, (size_t)chunk);
  return NULL;
}

/* One pass over all chunks with `streams` streams: the caller is stream 0, the
 * others are threads started for this pass. */
static int pipeline_pass(struct job *job, float *h_out, int streams) {
  pthread_t threads[EXP_MAX_STREAMS];
  struct pass_share shares[EXP_MAX_STREAMS];
  int started = 1, rc = 0;
  for (int t = 0; t < streams; t++) shares[t] = (struct pass_share){job, h_out, streams, t};
  for (; started < streams; started++) {
    if (pthread_create(&threads[started], NULL, pass_worker, &shares[started]) != 0) {
      snprintf(job->err, job->err_len, "cannot start a thread for stream %d", started);
      rc = BACKEND_ENOMEM;
      break;
    }
  }
  if (rc == 0) pass_worker(&shares[0]);
  for (int t = 1; t < started; t++) pthread_join(threads[t], NULL);
  return rc;
}

/* ---- one call of run i's kernel ---- */

static int call_once(struct job *job, int i) {
  const struct exp_spec *s = job->spec;
  int variant = job->result->runs[i].variant;
  float *out = job->outs[i];
  switch (s->type) {
  case EXP_TRANSPOSE: {
    const float *a = reference_input(job->ref, GEN_A);
    int m = s->u.transpose.m, n = s->u.transpose.n;
    if (variant == TRANSPOSE_NAIVE) cpu_transpose_naive(a, out, m, n);
    else if (variant == TRANSPOSE_COPY) cpu_copy(a, out, job->out_len);
    else cpu_transpose_blocked(a, out, m, n);
    return 0;
  }
  case EXP_GEMM: {
    const float *a = reference_input(job->ref, GEN_A), *b = reference_input(job->ref, GEN_B);
    if (variant == GEMM_NAIVE) cpu_gemm_naive(a, b, out, s->u.gemm.m, s->u.gemm.n, s->u.gemm.k);
    else cpu_gemm_tiled(a, b, out, s->u.gemm.m, s->u.gemm.n, s->u.gemm.k);
    return 0;
  }
  case EXP_STENCIL: {
    const float *x = reference_input(job->ref, GEN_X);
    if (variant == STENCIL_NAIVE) cpu_stencil_naive(x, out, s->u.stencil.n, s->u.stencil.radius);
    else cpu_stencil_shared(x, out, s->u.stencil.n, s->u.stencil.radius, job->tile);
    return 0;
  }
  default: return pipeline_pass(job, out, variant);
  }
}

/* ---- timing ---- */

static int canceled(struct job *job) {
  snprintf(job->err, job->err_len, "canceled");
  return BACKEND_ECANCELED;
}

static int imin(int a, int b) { return a < b ? a : b; }

/* Poisons run i's output with NaN (so an output the kernel never wrote fails the
 * check), makes the probe call, sizes warm-ups and reps to the CPU time budget and
 * makes the remaining warm-ups. The probe counts as the first warm-up. */
static int warm_up(struct job *job, int i) {
  const struct exp_timing_params *p = &job->spec->timing;
  struct exp_timing *t = &job->result->runs[i].timing;
  if (backend_hooks_canceled(job->hooks)) return canceled(job);
  for (size_t j = 0; j < job->out_len; j++) job->outs[i][j] = NAN;
  double t0 = now_ms();
  int rc = call_once(job, i);
  if (rc < 0) return rc;
  double t1 = fmax(now_ms() - t0, 1e-6);
  t->warmup = imin(p->warmup, (int)fmax(1.0, ceil(WARMUP_BUDGET_MS / t1)));
  t->reps = imin(p->reps, (int)fmax(1.0, floor(BATCH_BUDGET_MS / t1)));
  t->batches = p->batches;
  t->warmup_requested = p->warmup;
  t->reps_requested = p->reps;
  t->method = timing_method;
  if (t->warmup < p->warmup || t->reps < p->reps) t->capped_by = capped_reason;
  for (int w = 1; w < t->warmup && rc == 0; w++) rc = call_once(job, i);
  return rc;
}

/* Batch b of run i: reps calls inside one clock interval. */
static int time_batch(struct job *job, int i, int b) {
  struct exp_timing *t = &job->result->runs[i].timing;
  if (backend_hooks_canceled(job->hooks)) return canceled(job);
  double t0 = now_ms();
  for (int r = 0; r < t->reps; r++) {
    int rc = call_once(job, i);
    if (rc < 0) return rc;
  }
  t->samples_ms[b] = (now_ms() - t0) / t->reps;
  t->n_samples = b + 1;
  backend_hooks_progress(job->hooks, i, b, t->samples_ms[b]);
  return 0;
}

static void finish_run(struct job *job, int i) {
  struct exp_run *run = &job->result->runs[i];
  exp_timing_summarize(&run->timing);
  reference_check(job->ref, run->variant, job->outs[i], &run->check);
}

/* Times every available run in the type's order (experiment.h) and checks it. */
static int time_runs(struct job *job) {
  struct exp_result *res = job->result;
  int batches = job->spec->timing.batches, rc = 0;
  if (exp_type_order(job->spec->type) == EXP_ORDER_SEQUENTIAL) {
    for (int i = 0; i < res->n_runs; i++) {
      if (!res->runs[i].available) continue;
      if ((rc = warm_up(job, i)) < 0) return rc;
      for (int b = 0; b < batches; b++)
        if ((rc = time_batch(job, i, b)) < 0) return rc;
      finish_run(job, i); /* before the next run overwrites the shared output */
    }
    return 0;
  }
  for (int i = 0; i < res->n_runs; i++)
    if ((rc = warm_up(job, i)) < 0) return rc;
  /* Alternate the order per batch so no variant always runs first (or last). */
  for (int b = 0; b < batches; b++)
    for (int o = 0; o < res->n_runs; o++)
      if ((rc = time_batch(job, b % 2 == 0 ? o : res->n_runs - 1 - o, b)) < 0) return rc;
  for (int i = 0; i < res->n_runs; i++) finish_run(job, i);
  return 0;
}

/* ---- setting up a job ---- */

static void describe(struct exp_run *run, const struct kernel_desc *k) {
  snprintf(run->kernel.name, sizeof run->kernel.name, "%s", k->name);
  snprintf(run->kernel.description, sizeof run->kernel.description, "%s", k->description);
  snprintf(run->mapped_to, sizeof run->mapped_to, "%s", k->mapped_to);
}

static const struct kernel_desc *kernel_of(enum exp_type type, int variant) {
  switch (type) {
  case EXP_TRANSPOSE: return &transpose_kernels[variant];
  case EXP_GEMM: return variant == GEMM_CUBLAS ? NULL : &gemm_kernels[variant];
  case EXP_STENCIL: return &stencil_kernels[variant];
  default: return &pipeline_kernel;
  }
}

/* Fills the runs' identity (variant, label, kernel) from spec; BACKEND_EINVAL for a
 * spec this backend cannot run. */
static int setup_runs(const struct exp_spec *s, struct exp_result *res, char *err,
                      size_t err_len) {
  const struct exp_timing_params *p = &s->timing;
  bool pipeline = s->type == EXP_PIPELINE;
  int n = pipeline ? s->u.pipeline.n_stream_counts : s->n_variants;
  if ((unsigned)s->type >= EXP_TYPE_COUNT || n < 1 || n > EXP_MAX_VARIANTS ||
      p->warmup < 0 || p->reps < 1 || p->batches < 1 || p->batches > EXP_MAX_BATCHES)
    goto fail;
  res->n_runs = n;
  for (int i = 0; i < n; i++) {
    struct exp_run *run = &res->runs[i];
    int v = pipeline ? s->u.pipeline.stream_counts[i] : s->variants[i];
    if (pipeline ? v < 1 || v > EXP_MAX_STREAMS : v < 0 || v >= exp_variant_count(s->type))
      goto fail;
    run->variant = v;
    run->available = true;
    if (pipeline) snprintf(run->label, sizeof run->label, "streams=%d", v);
    else snprintf(run->label, sizeof run->label, "%s", exp_variant_name(s->type, v));
    const struct kernel_desc *k = kernel_of(s->type, v);
    if (k) {
      describe(run, k);
      continue;
    }
    run->available = false;
    snprintf(run->reason, sizeof run->reason, "cuBLAS needs the CUDA backend");
  }
  return 0;
fail:
  snprintf(err, err_len, "cpu backend: variants, stream counts or timing out of range");
  return BACKEND_EINVAL;
}

/* Allocates the job's buffers; alternating runs each get their own output so one
 * run's result survives the others' batches until it is checked. */
static int alloc_buffers(struct job *job) {
  const struct exp_spec *s = job->spec;
  int n_bufs = exp_type_order(s->type) == EXP_ORDER_ALTERNATING ? job->result->n_runs : 1;
  job->out_len = reference_output_len(job->ref);
  if (job->out_len > SIZE_MAX / EXP_MAX_VARIANTS) return BACKEND_ENOMEM;
  job->slab = alloc_floats(job->out_len * (size_t)n_bufs);
  if (!job->slab) return BACKEND_ENOMEM;
  for (int i = 0; i < job->result->n_runs; i++)
    job->outs[i] = job->slab + (n_bufs > 1 ? (size_t)i * job->out_len : 0);
  if (s->type == EXP_STENCIL) {
    job->tile = alloc_floats(CPU_STENCIL_TILE + 2 * (size_t)s->u.stencil.radius);
    if (!job->tile) return BACKEND_ENOMEM;
  }
  if (s->type == EXP_PIPELINE) {
    job->d_in = alloc_floats(job->out_len);
    job->d_out = alloc_floats(job->out_len);
    if (!job->d_in || !job->d_out) return BACKEND_ENOMEM;
  }
  return 0;
}

static int cpu_run(struct backend *b, int lane, const struct exp_spec *spec,
                   const struct backend_hooks *hooks, struct exp_result *result, char *err,
                   size_t err_len) {
  const struct cpu_impl *impl = b->impl;
  struct job job = {.spec = spec, .hooks = hooks, .result = result};
  job.err = err;
  job.err_len = err_len;
  memset(result, 0, sizeof *result);
  snprintf(result->backend, sizeof result->backend, "cpu");
  snprintf(result->device_name, sizeof result->device_name, "%.95s", impl->model);
  int rc = setup_runs(spec, result, err, err_len);
  if (rc < 0) goto fail;
  rc = reference_new(spec, &job.ref);
  if (rc == -EINVAL) {
    snprintf(err, err_len, "cpu backend: negative sizes");
    rc = BACKEND_EINVAL;
    goto fail;
  }
  if (rc < 0 || (rc = alloc_buffers(&job)) < 0) {
    snprintf(err, err_len, "host memory: cannot allocate the job's buffers");
    rc = BACKEND_ENOMEM;
    goto fail;
  }
  if ((rc = time_runs(&job)) < 0) goto fail;
  exp_result_finish(spec, result);
fail:
  free(job.d_out);
  free(job.d_in);
  free(job.tile);
  free(job.slab);
  reference_free(job.ref);
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
}

static uint64_t cpu_memory_limit(const struct backend *b) {
  const struct cpu_impl *impl = b->impl;
  return impl->mem_total_bytes / 4;
}

static bool cpu_healthy(const struct backend *b) { return true; }

static void cpu_free(struct backend *b) {
  free(b->impl);
  free(b);
}

static const struct backend_ops cpu_ops = {
    .name = "cpu",
    .device_info = cpu_device_info,
    .memory_limit = cpu_memory_limit,
    .healthy = cpu_healthy,
    .run = cpu_run,
    .free = cpu_free,
};

int cpu_backend_open(int n_lanes, struct backend **out, char *why, size_t why_len) {
  *out = NULL;
  if (n_lanes < 1) {
    snprintf(why, why_len, "cpu backend: n_lanes must be >= 1, not %d", n_lanes);
    return BACKEND_EINVAL;
  }
  struct backend *b = calloc(1, sizeof *b);
  struct cpu_impl *impl = calloc(1, sizeof *impl);
  if (!b || !impl) goto fail;
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
  return BACKEND_ENOMEM;
}
