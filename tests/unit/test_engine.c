/* The engine on the CPU backend: queueing, watches, cancellation, listing, limits. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "kernels/gemm/gemm.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"
#include "server/engine/engine.h"
#include "tests/runner.h"

struct flag {
  atomic_int fired;
  enum job_state state_seen;
  struct engine *engine;
  struct job *job;
};

static void on_fire(void *arg) {
  struct flag *f = arg;
  struct job_view v;
  job_get_view(f->engine, f->job, &v);
  f->state_seen = v.state;
  atomic_fetch_add(&f->fired, 1);
}

static void wait_fired(struct flag *f, double timeout_s) {
  double end = engine_now_mono() + timeout_s;
  while (!atomic_load(&f->fired) && engine_now_mono() < end) usleep(1000);
  CHECK_INT_EQ(atomic_load(&f->fired), 1);
}

static enum job_state state_of(struct engine *e, struct job *job) {
  struct job_view v;
  job_get_view(e, job, &v);
  return v.state;
}

static int submit(struct engine *e, const struct exp_spec *spec, const char *client,
                  struct job **out) {
  struct engine_job_request req = {.spec = *spec, .exclusive = true};
  snprintf(req.client, sizeof req.client, "%s", client);
  struct engine_error err;
  int rc = engine_submit(e, &req, out, &err);
  if (rc && rc != -EAGAIN && rc != -EFBIG && rc != -ESHUTDOWN)
    fprintf(stderr, "submit: %s\n", err.message);
  return rc;
}

/* A stencil that takes a good fraction of a second on the CPU. */
static void slow_spec(struct exp_spec *spec, int batches) {
  exp_spec_default(EXP_STENCIL, spec);
  spec->p[STENCIL_N] = 1 << 20;
  spec->p[STENCIL_RADIUS] = 64;
  spec->n_variants = 1;
  spec->timing = (struct exp_timing_params){1, batches, 1};
}

static void small_spec(struct exp_spec *spec) {
  exp_spec_default(EXP_TRANSPOSE, spec);
  spec->p[TRANSPOSE_M] = 33;
  spec->p[TRANSPOSE_N] = 47;
  spec->timing = (struct exp_timing_params){1, 2, 1};
}

/* One lane, two queued at most: watches, cancellation queued and running, listing,
 * the memory limit, and stopping. */
static void test_lifecycle(void) {
  char why[256];
  struct backend *b;
  CHECK_INT_EQ(backend_open(BACKEND_CPU, 0, 1, &b, why, sizeof why), 0);
  struct engine_config cfg = {.max_jobs_kept = 100, .max_queued = 2};
  struct engine *e;
  CHECK_INT_EQ(engine_new(&b, 1, &cfg, &e), 0);

  struct exp_spec slow, small;
  slow_spec(&slow, 8);
  small_spec(&small);
  struct job *a, *bj, *c, *d;
  CHECK_INT_EQ(submit(e, &slow, "alice", &a), 0);
  /* Wait until the one lane took a, so b and c stay queued behind it. */
  while (state_of(e, a) != JOB_RUNNING) usleep(1000);
  CHECK_INT_EQ(submit(e, &small, "bob", &bj), 0);
  CHECK_INT_EQ(submit(e, &small, "bob", &c), 0);
  CHECK_INT_EQ(submit(e, &small, "bob", &d), -EAGAIN); /* max_queued */
  CHECK(d == NULL);

  /* A watch with a short deadline fires on time while the job is still queued. */
  struct flag fb = {.engine = e, .job = bj};
  struct engine_watch wb;
  engine_watch_add(e, bj, &wb, engine_now_mono() + 0.05, on_fire, &fb);
  wait_fired(&fb, 2);
  CHECK_INT_EQ(fb.state_seen, JOB_QUEUED);

  /* Canceling a queued job ends it at once; its watch fires. */
  struct flag fc = {.engine = e, .job = c};
  struct engine_watch wc;
  engine_watch_add(e, c, &wc, engine_now_mono() + 60, on_fire, &fc);
  CHECK_INT_EQ(engine_job_cancel(e, c), 0);
  wait_fired(&fc, 2);
  CHECK_INT_EQ(fc.state_seen, JOB_CANCELED);
  CHECK_INT_EQ(engine_job_cancel(e, c), -EALREADY);

  /* A watch on a running job fires when it is done, with its result. */
  struct flag fa = {.engine = e, .job = a};
  struct engine_watch wa;
  engine_watch_add(e, a, &wa, engine_now_mono() + 60, on_fire, &fa);
  wait_fired(&fa, 60);
  CHECK_INT_EQ(fa.state_seen, JOB_DONE);
  struct job_view v;
  job_get_view(e, a, &v);
  CHECK(v.result != NULL);
  CHECK(exp_result_passed(v.result));
  CHECK_STR_EQ(v.client, "alice");
  CHECK(v.created_at <= v.started_at && v.started_at <= v.finished_at);
  CHECK_INT_EQ(v.lane, 0);

  /* b runs after a; a watch added after the end fires at once. */
  struct flag fb2 = {.engine = e, .job = bj};
  struct engine_watch wb2;
  engine_watch_add(e, bj, &wb2, engine_now_mono() + 60, on_fire, &fb2);
  wait_fired(&fb2, 60);
  CHECK_INT_EQ(fb2.state_seen, JOB_DONE);

  /* Listing: newest first, filtered, paged. */
  struct job *list[8];
  struct engine_list_filter all = {.state = -1, .type = -1};
  int n = engine_jobs_list(e, &all, list, 8);
  CHECK_INT_EQ(n, 3);
  job_get_view(e, list[0], &v);
  CHECK_INT_EQ(v.id, 3);
  for (int i = 0; i < n; i++) job_unref(list[i]);
  struct engine_list_filter done = {.state = JOB_DONE, .type = EXP_STENCIL};
  n = engine_jobs_list(e, &done, list, 8);
  CHECK_INT_EQ(n, 1);
  job_unref(list[0]);
  struct engine_list_filter page = {.state = -1, .type = -1, .before_id = 3};
  n = engine_jobs_list(e, &page, list, 1);
  CHECK_INT_EQ(n, 1);
  job_get_view(e, list[0], &v);
  CHECK_INT_EQ(v.id, 2);
  job_unref(list[0]);

  /* Too big for the backend's memory limit. */
  struct exp_spec huge;
  exp_spec_default(EXP_TRANSPOSE, &huge);
  huge.p[TRANSPOSE_M] = huge.p[TRANSPOSE_N] = 1 << 20;
  CHECK_INT_EQ(submit(e, &huge, "x", &d), -EFBIG);

  /* Canceling a running job stops it at a batch boundary. */
  struct exp_spec longer;
  slow_spec(&longer, 100);
  struct job *r;
  CHECK_INT_EQ(submit(e, &longer, "carol", &r), 0);
  while (state_of(e, r) != JOB_RUNNING) usleep(1000);
  struct flag fr = {.engine = e, .job = r};
  struct engine_watch wr;
  engine_watch_add(e, r, &wr, engine_now_mono() + 60, on_fire, &fr);
  double t0 = engine_now_mono();
  CHECK_INT_EQ(engine_job_cancel(e, r), 0);
  wait_fired(&fr, 30);
  CHECK_INT_EQ(fr.state_seen, JOB_CANCELED);
  CHECK(engine_now_mono() - t0 < 5); /* 100 batches would take far longer */
  job_get_view(e, r, &v);
  CHECK_STR_EQ(v.error_code, "canceled");

  /* Stopping cancels what is queued and fires pending watches. */
  struct job *q1, *q2;
  CHECK_INT_EQ(submit(e, &longer, "dave", &q1), 0);
  CHECK_INT_EQ(submit(e, &small, "dave", &q2), 0);
  struct flag fq = {.engine = e, .job = q2};
  struct engine_watch wq;
  engine_watch_add(e, q2, &wq, engine_now_mono() + 600, on_fire, &fq);
  engine_stop(e);
  CHECK_INT_EQ(atomic_load(&fq.fired), 1);
  CHECK(job_state_final(state_of(e, q1)));
  CHECK_INT_EQ(state_of(e, q2), JOB_CANCELED);
  struct job *late;
  CHECK_INT_EQ(submit(e, &small, "x", &late), -ESHUTDOWN);

  job_unref(a);
  job_unref(bj);
  job_unref(c);
  job_unref(r);
  job_unref(q1);
  job_unref(q2);
  engine_free(e);
  backend_free(b);
}

static void test_prune(void) {
  char why[256];
  struct backend *b;
  CHECK_INT_EQ(backend_open(BACKEND_CPU, 0, 1, &b, why, sizeof why), 0);
  struct engine *e;
  struct exp_spec small;
  small_spec(&small);
  /* Finished jobs beyond max_jobs_kept are forgotten, oldest first, in passes: the
   * table holds at most 1/16 more than the limit. */
  struct engine_config keep = {.max_jobs_kept = 32, .max_queued = 1000};
  CHECK_INT_EQ(engine_new(&b, 1, &keep, &e), 0);
  struct job *last = NULL;
  for (int i = 0; i < 100; i++) {
    job_unref(last);
    CHECK_INT_EQ(submit(e, &small, "erin", &last), 0);
    while (!job_state_final(state_of(e, last))) usleep(200); /* all finished: all prunable */
  }
  struct engine_counts counts;
  engine_counts(e, &counts);
  int kept = 0;
  for (int s = 0; s < JOB_STATE_COUNT; s++) kept += counts.by_state[s];
  CHECK(kept >= 32 && kept <= 32 + 32 / 16);
  struct job *oldest = engine_job_get(e, 1), *newest = engine_job_get(e, 100);
  CHECK(oldest == NULL);
  CHECK(newest == last);
  CHECK_INT_EQ(engine_oldest_id(e), (uint64_t)(100 - kept + 1));
  job_unref(newest);
  job_unref(last);
  engine_free(e);
  backend_free(b);
}

static const struct test_case cases[] = {
    TEST(test_lifecycle),
    TEST(test_prune),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
