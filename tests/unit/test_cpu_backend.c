/* The CPU backend end to end: every experiment at small odd sizes passes its check,
 * the phases and timed windows, the output and its fence, buffers, a chain of two
 * jobs, the timing order and budget, cancellation, and two lanes at once. */
#include <math.h>
#include <pthread.h>
#include "kernels/backends/backend.h"
#include "kernels/core/gen.h"
#include "kernels/core/reference.h"
#include "kernels/gemm/gemm.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/stencil/stencil_tile.h"
#include "kernels/transpose/transpose.h"
#include "tests/runner.h"

static struct backend *be; /* two lanes, opened by the setup */

static struct exp_spec small_spec(enum exp_type type) {
  struct exp_spec s;
  exp_spec_default(type, &s);
  s.timing = (struct exp_timing_params){1, 3, 2};
  switch (type) {
  case EXP_TRANSPOSE: s.p[TRANSPOSE_M] = 33, s.p[TRANSPOSE_N] = 47; break;
  case EXP_GEMM: s.p[GEMM_M] = 33, s.p[GEMM_N] = 47, s.p[GEMM_K] = 18; break;
  case EXP_STENCIL: s.p[STENCIL_N] = 1000, s.p[STENCIL_RADIUS] = 32; break;
  case EXP_PIPELINE:
    s.p[PIPELINE_CHUNK] = 333, s.p[PIPELINE_CHUNKS] = 3, s.p[PIPELINE_TERMS] = 16;
    s.n_variants = 3;
    s.variants[0] = 1, s.variants[1] = 2;
    s.variants[2] = 5;
    break;
  default: /* any other experiment: its descriptor's odd sizes */
    for (int i = 0; i < exp_desc(type)->n_params; i++) s.p[i] = exp_desc(type)->params[i].odd;
    break;
  }
  return s;
}

/* Hooks that record the (run, batch) order, the phases and issued, cancel after
 * `cancel_after` polls, and call the k-th timed window contended when bit k of
 * contended_mask is set. */
struct trace {
  int polls, cancel_after, n;
  int run[64], batch[64];
  int n_phases, n_untimed, issued, issued_at;
  enum backend_phase phases[64];
  unsigned contended_mask;
};

static bool trace_canceled(void *arg) {
  struct trace *t = arg;
  return t->cancel_after >= 0 && ++t->polls > t->cancel_after;
}

static void trace_progress(void *arg, int run, int batch, double ms) {
  struct trace *t = arg;
  CHECK(ms >= 0);
  if (t->n < 64) t->run[t->n] = run, t->batch[t->n] = batch, t->n++;
}

static bool trace_phase(void *arg, enum backend_phase phase) {
  struct trace *t = arg;
  CHECK(t->n_phases < 64);
  t->phases[t->n_phases++] = phase;
  return phase == BACKEND_PHASE_UNTIMED && (t->contended_mask >> t->n_untimed++ & 1);
}

static void trace_issued(void *arg) {
  struct trace *t = arg;
  t->issued++;
  t->issued_at = t->n_phases;
}

static int run_traced(struct backend *b, int lane, struct backend_job *job, struct trace *t,
                      struct exp_result *r) {
  struct backend_hooks hooks = {trace_canceled, trace_progress, trace_phase, trace_issued, t};
  char err[160] = "";
  int rc = backend_run(b, lane, job, &hooks, r, err, sizeof err);
  if (rc != 0) CHECK(err[0]);
  return rc;
}

/* The phases were SETUP, then `windows` TIMED/UNTIMED pairs, then IDLE, and the
 * output was issued once, during SETUP. */
static void check_phases(const struct trace *t, int windows) {
  CHECK_INT_EQ(t->n_phases, 2 + 2 * windows);
  CHECK_INT_EQ(t->phases[0], BACKEND_PHASE_SETUP);
  for (int w = 0; w < windows; w++) {
    CHECK_INT_EQ(t->phases[1 + 2 * w], BACKEND_PHASE_TIMED);
    CHECK_INT_EQ(t->phases[2 + 2 * w], BACKEND_PHASE_UNTIMED);
  }
  CHECK_INT_EQ(t->phases[t->n_phases - 1], BACKEND_PHASE_IDLE);
  CHECK_INT_EQ(t->issued, 1);
  CHECK_INT_EQ(t->issued_at, 1);
}

static void release(struct backend *b, struct backend_job *job) {
  backend_buffer_free(b, job->output);
  backend_fence_free(b, job->done);
  job->output = NULL;
  job->done = NULL;
}

static int first_available(const struct exp_result *r) {
  for (int i = 0; i < r->n_runs; i++)
    if (r->runs[i].available) return i;
  return -1;
}

/* A buffer's floats, downloaded after fence; the caller frees them. */
static float *download(struct backend *b, struct backend_buffer *buf, struct backend_fence *fence) {
  float *h = malloc((backend_buffer_count(buf) + 1) * sizeof *h);
  char err[128];
  CHECK(h != NULL);
  CHECK_INT_EQ(backend_buffer_download(b, buf, fence, h, err, sizeof err), 0);
  return h;
}

/* job->output has the output's shape and passes the first available run's check. */
static void check_output(struct backend *b, const struct backend_job *job,
                         const struct exp_result *r) {
  struct exp_shape shape;
  exp_output_shape(job->spec, &shape);
  CHECK(job->output != NULL && job->done != NULL);
  CHECK_INT_EQ(backend_buffer_count(job->output), exp_shape_count(&shape));
  float *given[EXP_MAX_INPUTS] = {NULL, NULL};
  for (int slot = 0; slot < EXP_MAX_INPUTS; slot++)
    if (job->input[slot]) given[slot] = download(b, job->input[slot], NULL);
  float *out = download(b, job->output, job->done);
  struct reference *ref = NULL;
  CHECK_INT_EQ(reference_new(job->spec, (const float *const *)given, &ref), 0);
  struct exp_check c;
  reference_check(ref, r->runs[first_available(r)].variant, out, &c);
  CHECK(c.passed);
  reference_free(ref);
  free(out);
  for (int slot = 0; slot < EXP_MAX_INPUTS; slot++) free(given[slot]);
}

static void check_result(const struct exp_spec *s, const struct exp_result *r) {
  CHECK_STR_EQ(r->backend, "cpu");
  CHECK(r->device_name[0]);
  int want_runs = s->type == EXP_PIPELINE ? s->n_variants : s->n_variants;
  CHECK_INT_EQ(r->n_runs, want_runs);
  for (int i = 0; i < r->n_runs; i++) {
    const struct exp_run *run = &r->runs[i];
    const struct exp_variant *v = exp_variant_of(s, run->variant);
    if (v && !v->cpu.fn) { /* gemm's cublas, the cub variants: their libraries need CUDA */
      CHECK(!run->available && run->reason[0] && !run->check.done && !run->contended);
      CHECK_STR_EQ(run->label, v->name);
      continue;
    }
    if (!run->check.passed)
      fprintf(stderr, "%s: %" PRId64 " mismatches\n", run->label, run->check.mismatches);
    CHECK(run->available && run->check.done && run->check.passed);
    CHECK(run->check.compared > 0);
    CHECK(run->kernel.name[0] && run->kernel.description[0] && !run->kernel.has_launch);
    CHECK_INT_EQ(run->timing.n_samples, s->timing.batches);
    CHECK_INT_EQ(run->timing.batches, s->timing.batches);
    /* The CPU time budget may cap tiny jobs too on a loaded machine; then it says so. */
    if (run->timing.capped_by == NULL) {
      CHECK_INT_EQ(run->timing.reps, s->timing.reps);
      CHECK_INT_EQ(run->timing.warmup, s->timing.warmup);
    } else {
      CHECK(run->timing.reps <= s->timing.reps && run->timing.warmup <= s->timing.warmup);
      CHECK_INT_EQ(run->timing.reps_requested, s->timing.reps);
    }
    CHECK(run->timing.method != NULL);
    CHECK(run->timing.median_ms > 0 && run->figure > 0 && run->speedup > 0);
    CHECK(run->stream_us_per_launch == 0 && run->graph_us_per_launch == 0);
  }
  if (first_available(r) >= 0) CHECK(r->runs[first_available(r)].speedup == 1.0);
}

static void test_all_types(void) {
  struct backend *b = be;
  for (int type = 0; type < EXP_TYPE_COUNT; type++) {
    struct exp_spec s = small_spec(type);
    struct backend_job job = {.spec = &s};
    struct exp_result r;
    struct trace t = {.cancel_after = -1, .contended_mask = 2};
    CHECK_INT_EQ(run_traced(b, 1, &job, &t, &r), 0);
    check_result(&s, &r);
    check_output(b, &job, &r);
    /* every type interleaves by default: one window, not contended (only a second
     * window would be) */
    CHECK_INT_EQ(s.order, EXP_ORDER_ALTERNATING);
    check_phases(&t, 1);
    for (int i = 0; i < r.n_runs; i++) CHECK(!r.runs[i].contended);
    if (type == EXP_PIPELINE) CHECK_STR_EQ(r.runs[2].label, "streams=5");
    /* batch 0 runs forward, batch 1 backward (gemm's cublas is not available here) */
    int nv = exp_variant_count(s.type);
    if (type == EXP_STENCIL || type == EXP_TRANSPOSE) {
      CHECK_INT_EQ(t.n, 3 * nv);
      for (int k = 0; k < nv; k++) {
        CHECK(t.run[k] == k && t.batch[k] == 0);
        CHECK(t.run[nv + k] == nv - 1 - k && t.batch[nv + k] == 1);
      }
      CHECK(t.batch[2 * nv] == 2);
    }
    for (int i = 0; i < r.n_runs; i++) {
      const struct exp_timing *tm = &r.runs[i].timing;
      if (!r.runs[i].available) continue;
      CHECK_STR_EQ(tm->stopped_by, "batches"); /* the lecture's fixed count */
      CHECK_INT_EQ(tm->batches, 3);
      CHECK(r.runs[i].speedup_lo > 0 && r.runs[i].speedup_lo <= r.runs[i].speedup);
      CHECK(r.runs[i].speedup_hi >= r.runs[i].speedup);
      CHECK(!r.runs[i].clocks.valid); /* no NVML on the CPU */
    }
    release(b, &job);
  }
  struct exp_spec s = small_spec(EXP_STENCIL);
  s.p[STENCIL_RADIUS] = 0;
  s.p[STENCIL_N] = 257;
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  char err[128];
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
  check_result(&s, &r);
  check_output(b, &job, &r);
  release(b, &job);
}

/* "order": "sequential" keeps the lecture's per-variant windows: all of run 0's
 * batches first, then run 1's; each run's contended is its own window's. */
static void test_sequential_order(void) {
  struct backend *b = be;
  struct exp_spec s = small_spec(EXP_TRANSPOSE);
  s.order = EXP_ORDER_SEQUENTIAL;
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  struct trace t = {.cancel_after = -1, .contended_mask = 2};
  CHECK_INT_EQ(run_traced(b, 0, &job, &t, &r), 0);
  check_result(&s, &r);
  int nv = exp_variant_count(s.type);
  check_phases(&t, nv);
  CHECK_INT_EQ(t.n, 3 * nv);
  CHECK(t.run[2] == 0 && t.batch[2] == 2 && t.run[3] == 1 && t.batch[3] == 0);
  for (int i = 0; i < r.n_runs; i++) CHECK(r.runs[i].contended == (i == 1));
  release(b, &job);
}

/* The noise rule: max_noise > 0 keeps timing until the samples are quiet enough
 * (at least min_samples), the run's max_time is spent, or EXP_MAX_BATCHES. */
static void test_stopping_rules(void) {
  struct backend *b = be;
  struct exp_spec s = small_spec(EXP_STENCIL);
  s.n_variants = 1;
  s.timing = (struct exp_timing_params){1, 2, 1};
  /* max_noise 1 (100%): quiet at once, but not before min_samples. On a loaded
   * machine one preempted batch can keep the samples' noise above 100% for good
   * (the run then ends at max_batches): such a run is tried again, a few times. */
  s.stop = (struct exp_stop_params){6, 1.0, 10.0};
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  char err[128];
  for (int attempt = 0;; attempt++) {
    CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
    if (strcmp(r.runs[0].timing.stopped_by, "max_batches") != 0 || attempt == 4) break;
    fprintf(stderr,
            "note: the noise rule ran to max_batches (relstdev %.2f: a preempted batch?); again\n",
            r.runs[0].timing.relstdev);
    release(b, &job);
  }
  CHECK_STR_EQ(r.runs[0].timing.stopped_by, "noise");
  CHECK_INT_EQ(r.runs[0].timing.n_samples, 6);
  CHECK_INT_EQ(r.runs[0].timing.batches, 6);
  CHECK(r.runs[0].timing.relstdev < 1.0);
  release(b, &job);
  /* an unreachable noise level: the time limit stops it, well before 100 samples
   * of about 100 ms each would */
  exp_spec_default(EXP_TRANSPOSE, &s);
  s.p[TRANSPOSE_M] = s.p[TRANSPOSE_N] = 256;
  s.n_variants = 2;
  s.variants[0] = TRANSPOSE_NAIVE, s.variants[1] = TRANSPOSE_COPY;
  s.timing = (struct exp_timing_params){1, 2, 10000};
  s.stop = (struct exp_stop_params){0, 1e-9, 0.3};
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
  for (int i = 0; i < 2; i++) {
    const struct exp_timing *t = &r.runs[i].timing;
    CHECK_STR_EQ(t->stopped_by, "time");
    CHECK(t->n_samples >= 1 && t->n_samples < EXP_MAX_BATCHES);
    CHECK(r.runs[i].check.passed);
  }
  release(b, &job);
  /* tiny calls: 100 samples come before the time limit. At least 50 before the noise
   * rule may stop them: two tiny calls can take the same nanoseconds (seen: 651 and
   * 651), which is a relative deviation of 0, below any bound. */
  s = small_spec(EXP_TRANSPOSE);
  s.n_variants = 1;
  s.timing = (struct exp_timing_params){0, 1, 1};
  s.stop = (struct exp_stop_params){50, 1e-12, 600};
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
  CHECK_STR_EQ(r.runs[0].timing.stopped_by, "max_batches");
  CHECK_INT_EQ(r.runs[0].timing.n_samples, EXP_MAX_BATCHES);
  release(b, &job);
}

/* speedup_range brackets the speedup; the first run's straddles 1. cold is
 * accepted and said to be not applicable. */
static void test_speedup_range_and_cold(void) {
  struct backend *b = be;
  struct exp_spec s = small_spec(EXP_TRANSPOSE);
  s.n_variants = 2;
  s.variants[0] = TRANSPOSE_NAIVE, s.variants[1] = TRANSPOSE_NAIVE + 1;
  s.timing = (struct exp_timing_params){1, 6, 2};
  s.cold = true;
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  char err[128];
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
  const struct exp_run *first = &r.runs[0], *second = &r.runs[1];
  CHECK(first->speedup == 1.0 && first->speedup_lo <= 1.0 && first->speedup_hi >= 1.0);
  CHECK(second->speedup_lo <= second->speedup && second->speedup <= second->speedup_hi);
  CHECK(strstr(first->timing.method, "cold: not applicable on the CPU backend") != NULL);
  CHECK(!first->timing.cold); /* no launch was timed after a flush */
  release(b, &job);
}

/* An alternating window the engine calls contended marks every run; transpose
 * whose first variant is copy outputs A's shape. */
static void test_contended_and_copy_first(void) {
  struct backend *b = be;
  struct exp_spec s = small_spec(EXP_STENCIL);
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  struct trace t = {.cancel_after = -1, .contended_mask = 1};
  CHECK_INT_EQ(run_traced(b, 0, &job, &t, &r), 0);
  check_phases(&t, 1);
  CHECK(r.runs[0].contended && r.runs[1].contended);
  release(b, &job);
  s = small_spec(EXP_TRANSPOSE);
  s.n_variants = 2;
  s.variants[0] = TRANSPOSE_COPY, s.variants[1] = TRANSPOSE_NAIVE;
  t = (struct trace){.cancel_after = -1};
  CHECK_INT_EQ(run_traced(b, 0, &job, &t, &r), 0);
  check_result(&s, &r);
  check_output(b, &job, &r); /* a copy of A: (33, 47) */
  CHECK(!r.runs[0].contended && !r.runs[1].contended);
  release(b, &job);
}

static void test_graph(void) {
  struct backend *b = be;
  struct exp_spec s = small_spec(EXP_TRANSPOSE);
  s.graph = true;
  s.n_variants = 1;
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  char err[128];
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
  check_result(&s, &r);
  CHECK(strstr(r.runs[0].timing.method,
               "graph: not applicable on the CPU backend; timed as plain calls") != NULL);
  release(b, &job);
}

static void test_buffers(void) {
  struct backend *b = be;
  enum { N = 1001 };
  float host[N], back[N];
  for (int i = 0; i < N; i++) host[i] = gen_uniform(9, GEN_X, (uint64_t)i) * 1e30f;
  struct backend_buffer *buf = NULL, *empty = NULL;
  char err[128];
  CHECK_INT_EQ(backend_buffer_upload(b, host, N, &buf, err, sizeof err), 0);
  CHECK_INT_EQ(backend_buffer_count(buf), N);
  host[0] = 0; /* the buffer holds a copy */
  CHECK_INT_EQ(backend_buffer_download(b, buf, NULL, back, err, sizeof err), 0);
  CHECK(back[0] == gen_uniform(9, GEN_X, 0) * 1e30f);
  CHECK(memcmp(host + 1, back + 1, (N - 1) * sizeof *host) == 0);
  CHECK_INT_EQ(backend_buffer_upload(b, host, 0, &empty, err, sizeof err), 0);
  CHECK_INT_EQ(backend_buffer_count(empty), 0);
  CHECK_INT_EQ(backend_buffer_download(b, empty, NULL, back, err, sizeof err), 0);
  backend_buffer_free(b, empty);
  backend_buffer_free(b, buf);
  backend_buffer_free(b, NULL);
  backend_fence_free(b, NULL);
}

/* job1 transposes A, job2 transposes job1's output after job1's fence: A again,
 * bit for bit, and job2's checks use the given input. */
static void test_chain(void) {
  struct backend *b = be;
  struct exp_spec s1 = small_spec(EXP_TRANSPOSE), s2 = s1;
  s1.inputs[0].value = 21;
  s1.n_variants = 2;
  s1.variants[0] = TRANSPOSE_PADDED33, s1.variants[1] = TRANSPOSE_NAIVE;
  struct backend_job j1 = {.spec = &s1};
  struct exp_result r1, r2;
  struct trace t1 = {.cancel_after = -1}, t2 = {.cancel_after = -1};
  CHECK_INT_EQ(run_traced(b, 0, &j1, &t1, &r1), 0);
  check_result(&s1, &r1);
  s2.p[TRANSPOSE_M] = s1.p[TRANSPOSE_N], s2.p[TRANSPOSE_N] = s1.p[TRANSPOSE_M];
  s2.inputs[0] = (struct exp_input){EXP_INPUT_JOB, 1};
  struct backend_fence *const after[] = {j1.done};
  struct backend_job j2 = {.spec = &s2, .input = {j1.output}, .after = after, .n_after = 1};
  CHECK_INT_EQ(run_traced(b, 1, &j2, &t2, &r2), 0);
  check_result(&s2, &r2);
  check_output(b, &j2, &r2);
  check_phases(&t2, 1); /* interleaved: one window for all variants */
  size_t len = (size_t)s1.p[TRANSPOSE_M] * s1.p[TRANSPOSE_N];
  float *back = malloc(len * sizeof *back), *a = malloc(len * sizeof *a);
  CHECK(back && a);
  char err[128];
  CHECK_INT_EQ(backend_buffer_download(b, j2.output, j2.done, back, err, sizeof err), 0);
  reference_fill(a, len, 21, GEN_A);
  CHECK(memcmp(a, back, len * sizeof *a) == 0);
  free(a);
  free(back);
  release(b, &j2);
  release(b, &j1);
}

/* A stencil on an uploaded input of magnitudes 2^-20 .. 2^20 passes its checks. */
static void test_given_stencil(void) {
  struct backend *b = be;
  struct exp_spec s = small_spec(EXP_STENCIL);
  s.p[STENCIL_N] = 999;
  s.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  float x[999];
  for (int i = 0; i < 999; i++)
    x[i] = ldexpf(gen_uniform(4, GEN_X, (uint64_t)i), (int)(gen_mix64((uint64_t)i) % 40) - 20);
  struct backend_buffer *buf = NULL;
  char err[128];
  CHECK_INT_EQ(backend_buffer_upload(b, x, 999, &buf, err, sizeof err), 0);
  struct backend_job job = {.spec = &s, .input = {buf}};
  struct exp_result r;
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
  check_result(&s, &r);
  check_output(b, &job, &r);
  release(b, &job);
  backend_buffer_free(b, buf);
}

/* The best variants run their CPU stand-ins (mapped_to names them) and pass their
 * checks: stencil best at radii from 0 to its limit, tails in every tile, then a
 * radius past the limit is unavailable, with the reason. */
static void test_best_variants(void) {
  struct backend *b = be;
  static const struct {
    enum exp_type type;
    int variant;
    const char *label, *mapped_to;
  } best[] = {{EXP_TRANSPOSE, TRANSPOSE_BEST, "best", "cpu_transpose_blocked"},
              {EXP_GEMM, GEMM_BEST, "best", "cpu_gemm_tiled"},
              {EXP_GEMM, GEMM_TF32, "tf32", "cpu_gemm_tiled"},
              {EXP_STENCIL, STENCIL_BEST, "best", "cpu_stencil_window"}};
  char err[128];
  for (size_t i = 0; i < sizeof best / sizeof best[0]; i++) {
    struct exp_spec s = small_spec(best[i].type);
    s.n_variants = 1;
    s.variants[0] = best[i].variant;
    struct backend_job job = {.spec = &s};
    struct exp_result r;
    CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
    check_result(&s, &r);
    check_output(b, &job, &r);
    CHECK_STR_EQ(r.runs[0].label, best[i].label);
    CHECK_STR_EQ(r.runs[0].mapped_to, best[i].mapped_to);
    release(b, &job);
  }
  static const int radii[] = {0, 1, 2, 32, 64, 255, 1023, 1024, STENCIL_BEST_MAX_RADIUS};
  static const int sizes[] = {1, 1000, 4093, 10007};
  for (int ri = 0; ri < 9; ri++)
    for (int ni = 0; ni < 4; ni++) {
      struct exp_spec s = small_spec(EXP_STENCIL);
      s.p[STENCIL_N] = sizes[ni];
      s.p[STENCIL_RADIUS] = radii[ri];
      s.n_variants = 2;
      s.variants[0] = STENCIL_BEST, s.variants[1] = STENCIL_NAIVE;
      struct backend_job job = {.spec = &s};
      struct exp_result r;
      CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
      check_result(&s, &r);
      check_output(b, &job, &r);
      release(b, &job);
    }
  struct exp_spec s = small_spec(EXP_STENCIL);
  s.p[STENCIL_RADIUS] = STENCIL_BEST_MAX_RADIUS + 1;
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
  CHECK(r.runs[0].available && r.runs[0].check.passed);
  CHECK(!r.runs[STENCIL_BEST].available);
  CHECK(strstr(r.runs[STENCIL_BEST].reason, "radii 0..2047") != NULL);
  release(b, &job);
}

/* gemm with only cuBLAS: nothing runs, no output, but a fence that is complete. */
static void test_cublas_only(void) {
  struct backend *b = be;
  struct exp_spec s = small_spec(EXP_GEMM);
  s.n_variants = 1;
  s.variants[0] = GEMM_CUBLAS;
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  struct trace t = {.cancel_after = -1};
  CHECK_INT_EQ(run_traced(b, 0, &job, &t, &r), 0);
  check_result(&s, &r);
  CHECK(!r.runs[0].available && !exp_result_passed(&r));
  CHECK(job.output == NULL && job.done != NULL);
  check_phases(&t, 0);
  float one = 1, back = 0;
  struct backend_buffer *buf = NULL;
  char err[128];
  CHECK_INT_EQ(backend_buffer_upload(b, &one, 1, &buf, err, sizeof err), 0);
  CHECK_INT_EQ(backend_buffer_download(b, buf, job.done, &back, err, sizeof err), 0);
  CHECK(back == 1);
  backend_buffer_free(b, buf);
  release(b, &job);
}

static void test_cancel_and_invalid(void) {
  struct backend *b = be;
  struct exp_spec s = small_spec(EXP_GEMM);
  s.n_variants = 1; /* naive alone: its warm-up, then its batches */
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  struct trace t = {.cancel_after = 2};
  CHECK_INT_EQ(run_traced(b, 0, &job, &t, &r), -ECANCELED);
  CHECK_INT_EQ(t.n, 1); /* polls: after the warm-ups, after batch 0, then after batch 1: canceled */
  check_phases(&t, 1);  /* the window is closed, IDLE follows */
  CHECK(job.output != NULL && job.done != NULL); /* issued: the engine's now */
  release(b, &job);
  char err[128];
  s.variants[0] = 7;
  t = (struct trace){.cancel_after = -1};
  CHECK_INT_EQ(run_traced(b, 0, &job, &t, &r), -EINVAL);
  CHECK(t.n_phases == 0 && t.issued == 0 && job.output == NULL && job.done == NULL);
  s = small_spec(EXP_TRANSPOSE);
  CHECK_INT_EQ(backend_run(b, 2, &job, NULL, &r, err, sizeof err), -EINVAL);
  float ten[10] = {0};
  struct backend_buffer *buf = NULL;
  CHECK_INT_EQ(backend_buffer_upload(b, ten, 10, &buf, err, sizeof err), 0);
  job.input[0] = buf; /* 10 floats for a 33 x 47 input */
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), -EINVAL);
  CHECK(strstr(err, "input a") != NULL);
  CHECK(job.output == NULL && job.done == NULL);
  backend_buffer_free(b, buf);
  s.p[TRANSPOSE_M] = -1;
  job.input[0] = NULL;
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), -EINVAL);
}

static void test_capped(void) {
  struct backend *b = be;
  struct exp_spec s;
  exp_spec_default(EXP_TRANSPOSE, &s);
  s.p[TRANSPOSE_M] = s.p[TRANSPOSE_N] = 512;
  s.n_variants = 1;
  s.timing = (struct exp_timing_params){1000000, 1, 1000000};
  struct backend_job job = {.spec = &s};
  struct exp_result r;
  char err[128];
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &r, err, sizeof err), 0);
  const struct exp_timing *t = &r.runs[0].timing;
  CHECK(t->capped_by != NULL);
  CHECK(t->reps >= 1 && t->reps < 1000000 && t->warmup >= 1 && t->warmup < 1000000);
  CHECK_INT_EQ(t->reps_requested, 1000000);
  CHECK_INT_EQ(t->warmup_requested, 1000000);
  CHECK_INT_EQ(t->batches, 1);
  CHECK(r.runs[0].check.passed);
  release(b, &job);
}

struct lane_job {
  struct backend *b;
  int lane, rc;
  struct exp_spec spec;
  struct backend_job job;
  struct exp_result result;
};

static void *lane_main(void *arg) {
  struct lane_job *j = arg;
  char err[128];
  j->job.spec = &j->spec;
  j->rc = backend_run(j->b, j->lane, &j->job, NULL, &j->result, err, sizeof err);
  return NULL;
}

static void test_two_lanes(void) {
  struct backend *b = be;
  struct lane_job jobs[2] = {{.b = b, .lane = 0, .rc = -99, .spec = small_spec(EXP_PIPELINE)},
                             {.b = b, .lane = 1, .rc = -99, .spec = small_spec(EXP_STENCIL)}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) CHECK_INT_EQ(pthread_create(&th[i], NULL, lane_main, &jobs[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    CHECK_INT_EQ(jobs[i].rc, 0);
    check_result(&jobs[i].spec, &jobs[i].result);
    check_output(b, &jobs[i].job, &jobs[i].result);
    release(b, &jobs[i].job);
  }
}

static int open_backend(void) {
  char why[256] = "";
  CHECK_INT_EQ(backend_open(BACKEND_CPU, 0, 2, &be, why, sizeof why), 0);
  CHECK(be && why[0]);
  return 0;
}

static void close_backend(void) {
  backend_free(be);
  backend_free(NULL);
}

static void test_open(void) {
  struct backend *b = be;
  CHECK_STR_EQ(backend_name(b), "cpu");
  CHECK_INT_EQ(backend_lanes(b), 2);
  CHECK(backend_healthy(b));
  struct backend_device_info info;
  backend_device_info(b, &info);
  CHECK_STR_EQ(info.backend, "cpu");
  CHECK(info.name[0] && info.cpu_cores >= 1 && info.mem_total_bytes > 0);
  CHECK(info.mem_free_bytes <= info.mem_total_bytes);
  CHECK_INT_EQ(backend_memory_limit(b), info.mem_total_bytes / 4);
  printf("cpu backend: %s\n", info.name);
}

static const struct test_case cases[] = {
    TEST(test_open),
    TEST(test_all_types),
    TEST(test_contended_and_copy_first),
    TEST(test_sequential_order),
    TEST(test_stopping_rules),
    TEST(test_speedup_range_and_cold),
    TEST(test_graph),
    TEST(test_buffers),
    TEST(test_chain),
    TEST(test_given_stencil),
    TEST(test_best_variants),
    TEST(test_cublas_only),
    TEST(test_cancel_and_invalid),
    TEST(test_capped),
    TEST(test_two_lanes),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = open_backend, .teardown = close_backend};
