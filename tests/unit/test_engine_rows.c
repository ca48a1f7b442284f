/* The rows the engine hands on_job_change (what the durable store records), made by
 * many threads at once: HTTP threads submitting jobs that depend on each other,
 * lanes starting and ending them, cancels. Each thread queues its rows after it has
 * released the engine's lock (engine_unlock), so this checks what the lock no longer
 * orders: each job's rows come in the order of its states, its first row first and
 * flagged first; no job's first row comes before its parents'; an ended job's view
 * shows its last row's ticket and its document, and every row reached the callback. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/transpose/transpose.h"
#include "server/engine/engine.h"
#include "tests/runner.h"

#define SUBMITTERS 6
#define CHAINS 60   /* per submitter */
#define CHAIN_LEN 3 /* jobs per chain, each depending on the one before */
#define MAX_ID (SUBMITTERS * CHAINS * CHAIN_LEN + 16)

/* What the callback saw of each job, in the order it was called. */
struct job_rows {
  int n;
  enum job_state states[8];
  bool first[8];
  uint64_t tickets[8];
  uint64_t first_seq; /* the global order of its first row (0: none yet) */
  uint64_t parents[ENGINE_MAX_PARENTS];
  int n_parents;
};
static struct job_rows rows[MAX_ID];
static pthread_mutex_t rows_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_ticket = 1, next_seq = 1;
static atomic_int out_of_order;

static void on_change(void *arg, const struct job_view *v, const struct engine_job_request *req,
                      bool first, struct engine_recorded *out) {
  (void)arg, (void)req;
  CHECK(v->id < MAX_ID);
  pthread_mutex_lock(&rows_lock);
  struct job_rows *r = &rows[v->id];
  if (first) {
    r->first_seq = next_seq++;
    r->n_parents = v->n_parents;
    memcpy(r->parents, v->parents, sizeof r->parents);
    for (int i = 0; i < v->n_parents; i++) /* a parent's first row came before */
      if (rows[v->parents[i]].first_seq == 0) atomic_fetch_add(&out_of_order, 1);
  }
  if (r->n < 8) {
    r->states[r->n] = v->state;
    r->first[r->n] = first;
    r->tickets[r->n] = next_ticket;
  }
  r->n++;
  out->ticket = next_ticket++;
  pthread_mutex_unlock(&rows_lock);
  if (first && v->id % 5 == 0) usleep(200); /* a slow store: the job's row comes late */
  if (job_state_final(v->state)) {
    out->doc = malloc(32);
    snprintf(out->doc, 32, "{\"id\":%llu}", (unsigned long long)v->id);
  }
}

static struct engine *engine;
static struct job *jobs[MAX_ID];

static void tiny_spec(struct exp_spec *spec) {
  exp_spec_default(EXP_TRANSPOSE, spec);
  spec->p[TRANSPOSE_M] = 16;
  spec->p[TRANSPOSE_N] = 16;
  spec->n_variants = 1;
  spec->timing = (struct exp_timing_params){0, 1, 1};
}

/* Chains of jobs, each depending on the one before; the first of a chain on the
 * newest job of any thread, often one whose first row its thread has not queued yet. */
static void *submitter(void *arg) {
  (void)arg;
  struct exp_spec spec;
  tiny_spec(&spec);
  uint64_t first_id = engine_first_id(engine, ENGINE_IDS_JOBS);
  for (int c = 0; c < CHAINS; c++) {
    uint64_t prev = engine_next_id(engine, ENGINE_IDS_JOBS) - 1;
    if (prev < first_id) prev = 0;
    for (int k = 0; k < CHAIN_LEN; k++) {
      struct engine_job_request req = {.spec = spec, .device = -1, .client = "alice"};
      if (prev) req.depends_on[req.n_depends++] = prev;
      struct engine_error err;
      struct job *job;
      int rc = engine_submit(engine, &req, &job, &err);
      if (rc) CHECK_FAIL_("submit: %s", err.message);
      uint64_t id = job_id(job);
      CHECK(id < MAX_ID);
      jobs[id] = job;
      if (c % 7 == 3 && k == 1) engine_job_cancel(engine, job); /* its child fails */
      prev = id;
    }
  }
  return NULL;
}

static bool rank_ok(enum job_state before, enum job_state after) {
  int rank[JOB_STATE_COUNT] = {[JOB_WAITING] = 0, [JOB_QUEUED] = 1, [JOB_RUNNING] = 2,
                               [JOB_DONE] = 3,    [JOB_FAILED] = 3, [JOB_CANCELED] = 3};
  return rank[after] > rank[before];
}

/* Threads submit chains of jobs; every job's rows come in order, its parents' first. */
static void test_rows_in_order(void) {
  char why[256];
  struct backend *b;
  CHECK_INT_EQ(backend_open(BACKEND_CPU, 0, 4, &b, why, sizeof why), 0);
  struct engine_config cfg = {
      .max_jobs_kept = MAX_ID, .max_queued = MAX_ID, .on_job_change = on_change};
  CHECK_INT_EQ(engine_new(&b, 1, &cfg, &engine), 0);
  pthread_t t[SUBMITTERS];
  for (int i = 0; i < SUBMITTERS; i++)
    CHECK_INT_EQ(pthread_create(&t[i], NULL, submitter, NULL), 0);
  for (int i = 0; i < SUBMITTERS; i++) pthread_join(t[i], NULL);

  int ended = 0, n = 0;
  for (uint64_t id = 0; id < MAX_ID; id++) {
    if (!jobs[id]) continue;
    n++;
    struct job_view v;
    for (int tries = 0; tries < 10000; tries++) { /* each ends within seconds */
      job_get_view(engine, jobs[id], &v);
      if (job_state_final(v.state)) break;
      usleep(1000);
    }
    CHECK(job_state_final(v.state));
    ended++;
    pthread_mutex_lock(&rows_lock);
    struct job_rows *r = &rows[id];
    /* accepted (queued or waiting, or failed at once), maybe running, ended */
    CHECK(r->n >= 1 && r->n <= 4);
    CHECK(r->first[0]);
    for (int i = 1; i < r->n; i++) {
      CHECK(!r->first[i]);
      if (!rank_ok(r->states[i - 1], r->states[i]))
        CHECK_FAIL_("job %llu: row %d %s after %s", (unsigned long long)id, i,
                    job_state_name(r->states[i]), job_state_name(r->states[i - 1]));
    }
    CHECK(job_state_final(r->states[r->n - 1]));
    CHECK_INT_EQ(v.record_ticket, r->tickets[r->n - 1]); /* the view waits for its last row */
    char want[32];
    snprintf(want, sizeof want, "{\"id\":%llu}", (unsigned long long)id);
    CHECK_STR_EQ(v.doc, want);
    for (int i = 0; i < r->n_parents; i++) CHECK(rows[r->parents[i]].first_seq < r->first_seq);
    pthread_mutex_unlock(&rows_lock);
  }
  CHECK_INT_EQ(n, SUBMITTERS * CHAINS * CHAIN_LEN);
  CHECK_INT_EQ(atomic_load(&out_of_order), 0);
  struct engine_counts counts;
  engine_counts(engine, &counts);
  for (uint64_t id = 0; id < MAX_ID; id++) job_unref(jobs[id]);
  engine_free(engine);
  backend_free(b);
  printf(
      "engine rows: %d jobs from %d threads, each job's rows in order, parents' first (%llu "
      "rows waited for another thread's)\n",
      ended, SUBMITTERS, (unsigned long long)counts.row_waits);
}

static const struct test_case cases[] = {
    TEST(test_rows_in_order),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
