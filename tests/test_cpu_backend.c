/* The CPU backend end to end: every experiment at small odd sizes passes its check,
 * the timing order and budget, cancellation, and two lanes at once. */
#include <pthread.h>
#include "kernels/backend.h"
#include "tests/check.h"

static struct exp_spec small_spec(enum exp_type type) {
  struct exp_spec s;
  exp_spec_default(type, &s);
  s.timing = (struct exp_timing_params){1, 3, 2};
  switch (type) {
  case EXP_TRANSPOSE: s.u.transpose.m = 33, s.u.transpose.n = 47; break;
  case EXP_GEMM: s.u.gemm.m = 33, s.u.gemm.n = 47, s.u.gemm.k = 18; break;
  case EXP_STENCIL: s.u.stencil.n = 1000, s.u.stencil.radius = 32; break;
  default:
    s.u.pipeline.chunk = 333, s.u.pipeline.chunks = 3, s.u.pipeline.terms = 16;
    s.u.pipeline.n_stream_counts = 3;
    s.u.pipeline.stream_counts[0] = 1, s.u.pipeline.stream_counts[1] = 2;
    s.u.pipeline.stream_counts[2] = 5;
    break;
  }
  return s;
}

/* Hooks that record the (run, batch) order and cancel after `cancel_after` polls. */
struct trace {
  int polls, cancel_after, n;
  int run[64], batch[64];
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

static void check_result(const struct exp_spec *s, const struct exp_result *r) {
  CHECK_STR_EQ(r->backend, "cpu");
  CHECK(r->device_name[0]);
  int want_runs = s->type == EXP_PIPELINE ? s->u.pipeline.n_stream_counts : s->n_variants;
  CHECK_INT_EQ(r->n_runs, want_runs);
  for (int i = 0; i < r->n_runs; i++) {
    const struct exp_run *run = &r->runs[i];
    if (s->type == EXP_GEMM && run->variant == GEMM_CUBLAS) {
      CHECK(!run->available && run->reason[0] && !run->check.done);
      CHECK_STR_EQ(run->label, "cublas");
      continue;
    }
    if (!run->check.passed)
      fprintf(stderr, "%s: %" PRId64 " mismatches\n", run->label, run->check.mismatches);
    CHECK(run->available && run->check.done && run->check.passed);
    CHECK(run->check.compared > 0);
    CHECK(run->kernel.name[0] && run->kernel.description[0] && !run->kernel.has_launch);
    CHECK_INT_EQ(run->timing.n_samples, s->timing.batches);
    CHECK_INT_EQ(run->timing.batches, s->timing.batches);
    CHECK_INT_EQ(run->timing.reps, s->timing.reps);
    CHECK_INT_EQ(run->timing.warmup, s->timing.warmup);
    CHECK(run->timing.capped_by == NULL && run->timing.method != NULL);
    CHECK(run->timing.median_ms > 0 && run->figure > 0 && run->speedup > 0);
  }
  CHECK(r->runs[0].speedup == 1.0);
}

static void test_all_types(struct backend *b) {
  for (int type = 0; type < EXP_TYPE_COUNT; type++) {
    struct exp_spec s = small_spec(type);
    struct exp_result r;
    struct trace t = {.cancel_after = -1};
    struct backend_hooks hooks = {trace_canceled, trace_progress, &t};
    char err[128] = "";
    CHECK_INT_EQ(backend_run(b, 1, &s, &hooks, &r, err, sizeof err), 0);
    check_result(&s, &r);
    if (type == EXP_PIPELINE) CHECK_STR_EQ(r.runs[2].label, "streams=5");
    /* stencil alternates: batch 0 runs forward, batch 1 backward */
    if (type == EXP_STENCIL) {
      CHECK_INT_EQ(t.n, 6);
      CHECK(t.run[0] == 0 && t.run[1] == 1 && t.run[2] == 1 && t.run[3] == 0);
      CHECK(t.batch[2] == 1 && t.batch[4] == 2);
    }
    if (type == EXP_TRANSPOSE) { /* sequential: all of run 0's batches first */
      CHECK_INT_EQ(t.n, 12);
      CHECK(t.run[2] == 0 && t.batch[2] == 2 && t.run[3] == 1 && t.batch[3] == 0);
    }
  }
  struct exp_spec s = small_spec(EXP_STENCIL);
  s.u.stencil.radius = 0;
  s.u.stencil.n = 257;
  struct exp_result r;
  char err[128];
  CHECK_INT_EQ(backend_run(b, 0, &s, NULL, &r, err, sizeof err), 0);
  check_result(&s, &r);
}

static void test_cancel_and_invalid(struct backend *b) {
  struct exp_spec s = small_spec(EXP_GEMM);
  struct exp_result r;
  struct trace t = {.cancel_after = 2};
  struct backend_hooks hooks = {trace_canceled, trace_progress, &t};
  char err[128] = "";
  CHECK_INT_EQ(backend_run(b, 0, &s, &hooks, &r, err, sizeof err), BACKEND_ECANCELED);
  CHECK(err[0]);
  CHECK_INT_EQ(t.n, 1); /* polls: warm-up, batch 0, then canceled before batch 1 */
  s.variants[0] = 7;
  CHECK_INT_EQ(backend_run(b, 0, &s, NULL, &r, err, sizeof err), BACKEND_EINVAL);
  s = small_spec(EXP_TRANSPOSE);
  CHECK_INT_EQ(backend_run(b, 2, &s, NULL, &r, err, sizeof err), BACKEND_EINVAL);
}

static void test_capped(struct backend *b) {
  struct exp_spec s;
  exp_spec_default(EXP_TRANSPOSE, &s);
  s.u.transpose.m = s.u.transpose.n = 512;
  s.n_variants = 1;
  s.timing = (struct exp_timing_params){1000000, 1, 1000000};
  struct exp_result r;
  char err[128];
  CHECK_INT_EQ(backend_run(b, 0, &s, NULL, &r, err, sizeof err), 0);
  const struct exp_timing *t = &r.runs[0].timing;
  CHECK(t->capped_by != NULL);
  CHECK(t->reps >= 1 && t->reps < 1000000 && t->warmup >= 1 && t->warmup < 1000000);
  CHECK_INT_EQ(t->reps_requested, 1000000);
  CHECK_INT_EQ(t->warmup_requested, 1000000);
  CHECK_INT_EQ(t->batches, 1);
  CHECK(r.runs[0].check.passed);
}

struct lane_job {
  struct backend *b;
  int lane, rc;
  struct exp_spec spec;
  struct exp_result result;
};

static void *lane_main(void *arg) {
  struct lane_job *j = arg;
  char err[128];
  j->rc = backend_run(j->b, j->lane, &j->spec, NULL, &j->result, err, sizeof err);
  return NULL;
}

static void test_two_lanes(struct backend *b) {
  struct lane_job jobs[2] = {{b, 0, -99, small_spec(EXP_PIPELINE), {0}},
                             {b, 1, -99, small_spec(EXP_STENCIL), {0}}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) CHECK_INT_EQ(pthread_create(&th[i], NULL, lane_main, &jobs[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    CHECK_INT_EQ(jobs[i].rc, 0);
    check_result(&jobs[i].spec, &jobs[i].result);
  }
}

int main(void) {
  struct backend *b = NULL;
  char why[256] = "";
  CHECK_INT_EQ(backend_open(BACKEND_CPU, 0, 2, &b, why, sizeof why), 0);
  CHECK(b && why[0]);
  CHECK_STR_EQ(backend_name(b), "cpu");
  CHECK_INT_EQ(backend_lanes(b), 2);
  CHECK(backend_healthy(b));
  struct backend_device_info info;
  backend_device_info(b, &info);
  CHECK_STR_EQ(info.backend, "cpu");
  CHECK(info.name[0] && info.cpu_cores >= 1 && info.mem_total_bytes > 0);
  CHECK(info.mem_free_bytes <= info.mem_total_bytes);
  CHECK_INT_EQ(backend_memory_limit(b), info.mem_total_bytes / 4);
  test_all_types(b);
  test_cancel_and_invalid(b);
  test_capped(b);
  test_two_lanes(b);
  backend_free(b);
  backend_free(NULL);
  printf("test_cpu_backend: ok (%s)\n", info.name);
  return 0;
}
