/* The CUDA backend tests' helpers (gpu_backend_common.h). */
#include "gpu_backend_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/core/gen.h"
#include "kernels/gemm/gemm.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"
#include "tests/runner.h"

struct backend *be;

/* ---- specs ---- */

struct exp_spec spec_new(enum exp_type type) {
  struct exp_spec s;
  exp_spec_default(type, &s);
  s.timing = (struct exp_timing_params){1, 2, 2};
  return s;
}

struct exp_spec transpose_spec(int m, int n) {
  struct exp_spec s = spec_new(EXP_TRANSPOSE);
  s.p[TRANSPOSE_M] = m;
  s.p[TRANSPOSE_N] = n;
  return s;
}

struct exp_spec gemm_spec(int m, int n, int k) {
  struct exp_spec s = spec_new(EXP_GEMM);
  s.p[GEMM_M] = m;
  s.p[GEMM_N] = n;
  s.p[GEMM_K] = k;
  return s;
}

struct exp_spec stencil_spec(int n, int radius) {
  struct exp_spec s = spec_new(EXP_STENCIL);
  s.p[STENCIL_N] = n;
  s.p[STENCIL_RADIUS] = radius;
  return s;
}

struct exp_spec pipeline_spec(int chunk, int chunks, int terms) {
  struct exp_spec s = spec_new(EXP_PIPELINE);
  s.p[PIPELINE_CHUNK] = chunk;
  s.p[PIPELINE_CHUNKS] = chunks;
  s.p[PIPELINE_TERMS] = terms;
  s.n_variants = 2;
  s.variants[0] = 1;
  s.variants[1] = 3;
  return s;
}

int64_t input_count(const struct exp_spec *s, int slot) {
  struct exp_shape shape;
  exp_input_shape(s, slot, &shape);
  return exp_shape_count(&shape);
}

int64_t output_count(const struct exp_spec *s) {
  struct exp_shape shape;
  exp_output_shape(s, &shape);
  return exp_shape_count(&shape);
}

void size_text(const struct exp_spec *s, char *buf, size_t len) {
  switch (s->type) {
  case EXP_TRANSPOSE: snprintf(buf, len, "%dx%d", s->p[TRANSPOSE_M], s->p[TRANSPOSE_N]); break;
  case EXP_GEMM: snprintf(buf, len, "%dx%dx%d", s->p[GEMM_M], s->p[GEMM_N], s->p[GEMM_K]); break;
  case EXP_STENCIL: snprintf(buf, len, "n=%d r=%d", s->p[STENCIL_N], s->p[STENCIL_RADIUS]); break;
  default:
    snprintf(buf, len, "%dx%d t=%d", s->p[PIPELINE_CHUNK], s->p[PIPELINE_CHUNKS],
             s->p[PIPELINE_TERMS]);
    break;
  }
}

/* ---- hooks that record ---- */

void trace_init(struct trace *t) {
  memset(t, 0, sizeof *t);
  t->cancel_after = -1;
}

void trace_put(struct trace *t, char c) {
  CHECK(t->n_log < (int)sizeof t->log - 1);
  t->log[t->n_log++] = c;
  t->log[t->n_log] = '\0';
}

bool trace_canceled(void *arg) {
  struct trace *t = arg;
  return t->cancel_after >= 0 && t->progress_calls >= t->cancel_after;
}

void trace_progress(void *arg, int run, int batch, double ms) {
  struct trace *t = arg;
  CHECK(run >= 0 && run < EXP_MAX_VARIANTS && batch >= 0 && ms > 0);
  t->progress_calls++;
}

bool trace_phase(void *arg, enum backend_phase phase) {
  struct trace *t = arg;
  static const char names[] = "STUI";
  trace_put(t, names[phase]);
  if (t->on_phase) t->on_phase(t->user, phase);
  return phase == BACKEND_PHASE_UNTIMED && t->contended;
}

void trace_issued(void *arg) {
  struct trace *t = arg;
  trace_put(t, 'i');
  if (t->on_issued) t->on_issued(t->user);
}

/* SETUP, issued, `windows` TIMED/UNTIMED pairs, IDLE. */
void check_phases(const struct trace *t, int windows) {
  char want[64] = "Si";
  for (int w = 0; w < windows; w++) strcat(want, "TU");
  strcat(want, "I");
  CHECK_STR_EQ(t->log, want);
}

int windows_of(const struct exp_spec *s, const struct exp_result *res) {
  int available = 0;
  for (int i = 0; i < res->n_runs; i++) available += res->runs[i].available;
  if (available == 0) return 0;
  return s->order == EXP_ORDER_ALTERNATING ? 1 : available;
}

int run_traced(int lane, struct backend_job *job, struct trace *t, struct exp_result *res,
               char *err, size_t err_len) {
  struct backend_hooks hooks = {trace_canceled, trace_progress, trace_phase, trace_issued, t};
  return backend_run(be, lane, job, &hooks, res, err, err_len);
}

void job_drop(struct backend_job *job) {
  backend_buffer_free(be, job->output);
  backend_fence_free(be, job->done);
  job->output = NULL;
  job->done = NULL;
}

/* ---- checks ---- */

/* Every run must be available, pass its check and carry batches samples; in graph
 * mode also both per-launch figures (cuBLAS may not capture: its graph figure is 0
 * then, and its method says so). */
void expect_passed(const struct exp_spec *s, const struct exp_result *res) {
  char size[64];
  size_text(s, size, sizeof size);
  int want_runs = s->type == EXP_PIPELINE ? s->n_variants : s->n_variants;
  CHECK_INT_EQ(res->n_runs, want_runs);
  CHECK_STR_EQ(res->backend, "cuda");
  for (int i = 0; i < res->n_runs; i++) {
    const struct exp_run *run = &res->runs[i];
    const struct exp_check *c = &run->check;
    printf(
        "%-9s %-10s %-20s median %10.4f ms  %10.1f %-7s check %s (%lld compared%s, "
        "max abs err %.3g)",
        exp_type_name(s->type), run->label, size, run->timing.median_ms, run->figure,
        exp_figure_unit(s->type), c->passed ? "passed" : "FAILED", (long long)c->compared,
        c->sampled ? ", sampled" : "", c->max_abs_err);
    if (s->graph)
      printf("  stream %.2f us graph %.2f us", run->stream_us_per_launch, run->graph_us_per_launch);
    printf("  %s\n", run->available ? run->kernel.name : run->reason);
    fflush(stdout);
    CHECK(run->available);
    CHECK(c->done);
    CHECK_INT_EQ(c->mismatches, 0);
    CHECK(c->passed);
    CHECK_INT_EQ(run->timing.n_samples, s->timing.batches);
    CHECK(run->timing.median_ms > 0);
    CHECK(run->figure > 0 || exp_spec_work(s) == 0); /* gemm with k = 0 does no work */
    CHECK(run->kernel.name[0] != '\0');
    CHECK(run->timing.method != NULL);
    if (!s->graph) {
      CHECK(run->stream_us_per_launch == 0 && run->graph_us_per_launch == 0);
      continue;
    }
    CHECK(run->stream_us_per_launch > 0);
    bool cublas = s->type == EXP_GEMM &&
                  (run->variant == GEMM_CUBLAS || run->variant == GEMM_CUBLAS_TF32);
    if (cublas && run->graph_us_per_launch == 0)
      CHECK(strstr(run->timing.method, "could not be captured") != NULL);
    else
      CHECK(run->graph_us_per_launch > 0);
  }
}

/* Runs job on lane: it must succeed, pass, report the phases in order and hand
 * over an output of the output shape and a fence. Both are freed unless keep. */
void run_job_ok(int lane, struct backend_job *job, struct exp_result *res, bool keep) {
  char err[256] = "";
  struct trace t;
  trace_init(&t);
  int rc = run_traced(lane, job, &t, res, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "%s on lane %d: rc %d: %s\n", exp_type_name(job->spec->type), lane, rc, err);
  CHECK_INT_EQ(rc, 0);
  expect_passed(job->spec, res);
  check_phases(&t, windows_of(job->spec, res));
  CHECK(job->output != NULL && job->done != NULL);
  CHECK_INT_EQ(backend_buffer_count(job->output), output_count(job->spec));
  if (!keep) job_drop(job);
}

void run_ok_on(int lane, const struct exp_spec *s, struct exp_result *res) {
  struct backend_job job = {.spec = s};
  run_job_ok(lane, &job, res, false);
}

void run_ok(struct exp_spec s) {
  static struct exp_result res; /* large; one job at a time on the main thread */
  run_ok_on(0, &s, &res);
}

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *const gpu_backend_modes[] = {"--small", NULL};
bool gpu_small;

int gpu_backend_open(void) {
  gpu_small = test_mode && strcmp(test_mode, "--small") == 0;
  char why[256] = "";
  if (backend_open(BACKEND_CUDA, 0, 2, &be, why, sizeof why) != 0) {
    printf("skip: %s\n", why);
    return CHECK_SKIP;
  }
  printf("%s\n", why);
  return 0;
}

void gpu_backend_close(void) {
  CHECK(backend_healthy(be));
  backend_free(be);
}
