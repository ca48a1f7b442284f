/* The CUDA backend's buffers: inputs given as buffers, a chain of two jobs through an
 * output and its fence, a job of one launch, buffer calls from threads while a job
 * runs, and out of memory. Exits 77 where no CUDA device answers. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "gpu_backend_common.h"
#include "kernels/backends/backend.h"
#include "kernels/core/gen.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_pick.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"
#include "tests/runner.h"

static void fill(float *h, size_t n, uint64_t seed, float scale) {
  for (size_t i = 0; i < n; i++) h[i] = gen_uniform(seed, 7, i) * scale;
}

static struct backend_buffer *upload(const float *h, uint64_t count) {
  struct backend_buffer *buf = NULL;
  char err[256] = "";
  int rc = backend_buffer_upload(be, h, count, &buf, err, sizeof err);
  if (rc != 0) fprintf(stderr, "upload of %llu floats: %s\n", (unsigned long long)count, err);
  CHECK_INT_EQ(rc, 0);
  CHECK(buf != NULL);
  CHECK_INT_EQ(backend_buffer_count(buf), count);
  return buf;
}

static void download(struct backend_buffer *buf, struct backend_fence *fence, float *h) {
  char err[256] = "";
  int rc = backend_buffer_download(be, buf, fence, h, err, sizeof err);
  if (rc != 0) fprintf(stderr, "download: %s\n", err);
  CHECK_INT_EQ(rc, 0);
}

/* Transposes an uploaded matrix (all variants, checked against the uploaded data),
 * then downloads the output and compares it with a host transpose. */
static void transpose_buffer(int m, int n) {
  static struct exp_result res;
  size_t count = (size_t)m * n;
  float *h = malloc(count * sizeof *h), *out = malloc(count * sizeof *out);
  CHECK(h && out);
  fill(h, count, 11, 1.0f);
  struct backend_buffer *in = upload(h, count);
  struct exp_spec s = transpose_spec(m, n);
  s.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  struct backend_job job = {.spec = &s, .input = {in}};
  run_job_ok(0, &job, &res, true);
  download(job.output, job.done, out);
  for (int r = 0; r < m; r++)
    for (int c = 0; c < n; c++) CHECK(out[(size_t)c * m + r] == h[(size_t)r * n + c]);
  download(in, NULL, out); /* the input was only read */
  CHECK(memcmp(out, h, count * sizeof *h) == 0);
  job_drop(&job);
  backend_buffer_free(be, in);
  free(h);
  free(out);
}

/* gemm with both inputs uploaded; the output within the reference's tolerance of
 * an FP64 product on the host. */
static void gemm_buffers(int m, int n, int k) {
  static struct exp_result res;
  float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
  float *c = malloc((size_t)m * n * sizeof *c);
  CHECK(a && b && c);
  fill(a, (size_t)m * k, 21, 1.0f);
  fill(b, (size_t)k * n, 22, 1.0f);
  struct backend_buffer *da = upload(a, (uint64_t)m * k), *db = upload(b, (uint64_t)k * n);
  struct exp_spec s = gemm_spec(m, n, k);
  s.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  s.inputs[1] = (struct exp_input){EXP_INPUT_BUFFER, 2};
  struct backend_job job = {.spec = &s, .input = {da, db}};
  run_job_ok(1, &job, &res, true);
  download(job.output, job.done, c);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double want = 0, mag = 0;
      for (int kk = 0; kk < k; kk++) {
        double p = (double)a[(size_t)i * k + kk] * b[(size_t)kk * n + j];
        want += p;
        mag += fabs(p);
      }
      CHECK_NEAR(c[(size_t)i * n + j], want, k * mag / 8388608.0 + 1e-30);
    }
  job_drop(&job);
  backend_buffer_free(be, da);
  backend_buffer_free(be, db);
  free(a);
  free(b);
  free(c);
}

/* Stencil and pipeline on uploaded x (the pipeline's as phases in [-pi, pi)). */
static void x_buffer(struct exp_spec s, float scale) {
  static struct exp_result res;
  size_t count = (size_t)input_count(&s, 0);
  float *h = malloc(count * sizeof *h);
  CHECK(h);
  fill(h, count, 31, scale);
  struct backend_buffer *in = upload(h, count);
  s.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  struct backend_job job = {.spec = &s, .input = {in}};
  run_job_ok(0, &job, &res, false);
  s.graph = true;
  run_job_ok(1, &job, &res, false);
  backend_buffer_free(be, in);
  free(h);
}

static void test_buffer_inputs(void) {
  transpose_buffer(37, 53);
  transpose_buffer(1024, 1000);
  gemm_buffers(70, 45, 130);
  x_buffer(stencil_spec(10007, 5), 1.0f);
  x_buffer(pipeline_spec(3000, 4, 16), 3.14159265f);

  /* An empty buffer round-trips. */
  float one = 1;
  struct backend_buffer *empty = upload(&one, 0);
  download(empty, NULL, &one);
  backend_buffer_free(be, empty);
}

/* ---- a chain: job 2 transposes job 1's output back ---- */

struct chain {
  struct exp_spec s1, s2;
  struct backend_job j1, j2;
  struct trace t1, t2;
  struct exp_result r1, r2;
  pthread_t thread2;
  int rc2;
  char err2[256];
  pthread_mutex_t mu;
  pthread_cond_t cond;
  bool issued2;
  double issued2_at, returned1_at;
};

static void *chain_job2(void *arg) {
  struct chain *c = arg;
  c->rc2 = run_traced(1, &c->j2, &c->t2, &c->r2, c->err2, sizeof c->err2);
  return NULL;
}

/* Job 1's issued hook: job 2 starts at once on another thread, behind job 1's fence. */
static void chain_start2(void *user) {
  struct chain *c = user;
  c->j2 = (struct backend_job){
      .spec = &c->s2, .input = {c->j1.output}, .after = &c->j1.done, .n_after = 1};
  CHECK_INT_EQ(pthread_create(&c->thread2, NULL, chain_job2, c), 0);
}

static void chain_issued2(void *user) {
  struct chain *c = user;
  pthread_mutex_lock(&c->mu);
  c->issued2 = true;
  c->issued2_at = now_s();
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->mu);
}

/* Job 1 ends only once job 2 was issued (within 20 s): job 2 must be able to issue
 * while job 1 is still running, without waiting for it on the host. */
static void chain_phase1(void *user, enum backend_phase phase) {
  struct chain *c = user;
  if (phase != BACKEND_PHASE_IDLE) return;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 20;
  pthread_mutex_lock(&c->mu);
  while (!c->issued2 && pthread_cond_timedwait(&c->cond, &c->mu, &until) == 0) {}
  pthread_mutex_unlock(&c->mu);
}

static void test_chain(void) {
  static struct chain c;
  const int m = 1031, n = 2053;
  char err[256] = "";
  pthread_mutex_init(&c.mu, NULL);
  pthread_cond_init(&c.cond, NULL);
  c.s1 = transpose_spec(m, n);
  c.s2 = transpose_spec(n, m);
  c.s2.inputs[0] = (struct exp_input){EXP_INPUT_JOB, 1};
  c.j1 = (struct backend_job){.spec = &c.s1};
  trace_init(&c.t1);
  trace_init(&c.t2);
  c.t1.user = c.t2.user = &c;
  c.t1.on_issued = chain_start2;
  c.t1.on_phase = chain_phase1;
  c.t2.on_issued = chain_issued2;
  int rc1 = run_traced(0, &c.j1, &c.t1, &c.r1, err, sizeof err);
  c.returned1_at = now_s();
  pthread_mutex_lock(&c.mu);
  bool issued_before_return = c.issued2;
  pthread_mutex_unlock(&c.mu);
  CHECK_INT_EQ(pthread_join(c.thread2, NULL), 0);
  if (rc1 != 0 || c.rc2 != 0) fprintf(stderr, "chain: job 1: %s; job 2: %s\n", err, c.err2);
  CHECK_INT_EQ(rc1, 0);
  CHECK_INT_EQ(c.rc2, 0);
  CHECK(issued_before_return);
  printf("chain: job 2 issued %.3f ms before job 1 returned\n",
         (c.returned1_at - c.issued2_at) * 1e3);
  expect_passed(&c.s1, &c.r1);
  expect_passed(&c.s2, &c.r2);
  check_phases(&c.t1, windows_of(&c.s1, &c.r1));
  check_phases(&c.t2, windows_of(&c.s2, &c.r2));

  size_t count = (size_t)m * n;
  float *h = malloc(count * sizeof *h);
  CHECK(h);
  download(c.j2.output, c.j2.done, h); /* A again, bit for bit */
  for (size_t i = 0; i < count; i++) CHECK(h[i] == gen_uniform(c.s1.inputs[0].value, GEN_A, i));
  download(c.j1.output, c.j1.done, h); /* A^T */
  for (int r = 0; r < m; r++)
    for (int col = 0; col < n; col++)
      CHECK(h[(size_t)col * m + r] ==
            gen_uniform(c.s1.inputs[0].value, GEN_A, (uint64_t)r * n + col));
  free(h);
  job_drop(&c.j2);
  job_drop(&c.j1);
  pthread_cond_destroy(&c.cond);
  pthread_mutex_destroy(&c.mu);
}

/* ---- a tiny job: one launch is its whole timing ---- */

/* spec with one run of variant, timed by its one launch (warm-up 0, 1 batch of 1). */
static struct exp_spec one_launch(struct exp_spec s, int variant, uint64_t seed) {
  s.n_variants = 1;
  s.variants[0] = variant;
  s.timing = (struct exp_timing_params){0, 1, 1};
  for (int i = 0; i < EXP_MAX_INPUTS; i++) s.inputs[i].value = seed;
  return s;
}

/* Runs a one-launch job on lane 0: it passes, and its output (kept) was issued after
 * its window, as that launch's ("STUiI"), not computed before it ("SiTUI"). */
static void run_one_launch(struct backend_job *job, struct exp_result *res) {
  char err[256] = "";
  struct trace t;
  trace_init(&t);
  int rc = run_traced(0, job, &t, res, err, sizeof err);
  if (rc != 0) fprintf(stderr, "one launch: rc %d: %s\n", rc, err);
  CHECK_INT_EQ(rc, 0);
  expect_passed(job->spec, res);
  CHECK_STR_EQ(t.log, "STUiI");
  CHECK(job->output != NULL && job->done != NULL);
}

/* Tiny jobs as the HTTP path sends them: the output is the timed launch's, and the
 * lane keeps small generated inputs for the next jobs. Each check below passes only
 * when the input read was the one asked for: the same seed again (kept), a smaller
 * input of it (the kept one's first elements), another seed, another size, and GEMM's
 * two inputs of one seed (streams A and B: not each other's). Then a child reads a
 * one-launch job's output (A^T^T == A, bit for bit). */
static void test_one_launch(void) {
  static struct exp_result res;
  struct backend_job job;
  const uint64_t seeds[] = {7, 7, 7, 8, 7};
  const int sizes[] = {64, 64, 32, 64, 96};
  for (int i = 0; i < 5; i++) {
    struct exp_spec s = one_launch(transpose_spec(sizes[i], sizes[i] + 3), TRANSPOSE_NAIVE,
                                   seeds[i]);
    job = (struct backend_job){.spec = &s};
    run_one_launch(&job, &res);
    job_drop(&job);
  }
  for (int i = 0; i < 2; i++) {
    struct exp_spec g = one_launch(gemm_spec(48, 40, 56), GEMM_TILED, 11);
    job = (struct backend_job){.spec = &g};
    run_one_launch(&job, &res);
    job_drop(&job);
  }
  const int m = 45, n = 77;
  struct exp_spec s1 = one_launch(transpose_spec(m, n), TRANSPOSE_NAIVE, 5);
  struct exp_spec s2 = one_launch(transpose_spec(n, m), TRANSPOSE_NAIVE, 5);
  s2.inputs[0] = (struct exp_input){EXP_INPUT_JOB, 1};
  struct backend_job parent = {.spec = &s1};
  run_one_launch(&parent, &res);
  struct backend_job child = {
      .spec = &s2, .input = {parent.output}, .after = &parent.done, .n_after = 1};
  run_one_launch(&child, &res);
  float h[m * n];
  download(child.output, child.done, h);
  for (int i = 0; i < m * n; i++) CHECK(h[i] == gen_uniform(5, GEN_A, (uint64_t)i));
  job_drop(&child);
  job_drop(&parent);
}

/* ---- buffers from several threads while a job runs ---- */

static void *buffer_main(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int it = 0; it < 25; it++) {
    size_t count = 1000 + 4099 * (size_t)id + 31 * (size_t)it;
    float *h = malloc(count * sizeof *h), *back = malloc(count * sizeof *back);
    CHECK(h && back);
    fill(h, count, 100 + id * 1000 + it, 1.0f);
    struct backend_buffer *buf = upload(h, count);
    download(buf, NULL, back);
    CHECK(memcmp(h, back, count * sizeof *h) == 0);
    backend_buffer_free(be, buf);
    free(h);
    free(back);
  }
  return NULL;
}

static void *busy_main(void *arg) {
  struct exp_spec s = stencil_spec(1 << 22, 32);
  s.timing = (struct exp_timing_params){5, 5, 50};
  run_ok_on(0, &s, arg);
  return NULL;
}

static void test_buffers_concurrent(void) {
  static struct exp_result res;
  pthread_t busy, t[4];
  CHECK_INT_EQ(pthread_create(&busy, NULL, busy_main, &res), 0);
  for (int i = 0; i < 4; i++)
    CHECK_INT_EQ(pthread_create(&t[i], NULL, buffer_main, (void *)(intptr_t)i), 0);
  for (int i = 0; i < 4; i++) CHECK_INT_EQ(pthread_join(t[i], NULL), 0);
  CHECK_INT_EQ(pthread_join(busy, NULL), 0);
  CHECK(backend_healthy(be));
}

static void check_errors(void) {
  static struct exp_result res;
  char err[256] = "";
  struct trace t;
  trace_init(&t);
  struct exp_spec s = stencil_spec(1000, 2);
  s.timing.batches = 0;
  struct backend_job job = {.spec = &s};
  CHECK_INT_EQ(run_traced(0, &job, &t, &res, err, sizeof err), -EINVAL);
  CHECK_STR_EQ(t.log, ""); /* refused before any device work */
  CHECK(job.output == NULL && job.done == NULL);

  /* A buffer of the wrong size for its slot. */
  float h[10] = {0};
  struct backend_buffer *small = upload(h, 10);
  s = stencil_spec(11, 2);
  s.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  job = (struct backend_job){.spec = &s, .input = {small}};
  CHECK_INT_EQ(run_traced(0, &job, &t, &res, err, sizeof err), -EINVAL);
  printf("wrong-sized input: %s\n", err);
  backend_buffer_free(be, small);

  /* 2 x 4 TiB: more than any GPU has; the backend says so, issues nothing and
   * stays healthy. */
  s = transpose_spec(1 << 20, 1 << 20);
  job = (struct backend_job){.spec = &s};
  trace_init(&t);
  int rc = run_traced(0, &job, &t, &res, err, sizeof err);
  printf("4 TiB transpose: rc %d: %s\n", rc, err);
  CHECK_INT_EQ(rc, -ENOMEM);
  CHECK_STR_EQ(t.log, "SI");
  CHECK(job.output == NULL && job.done == NULL);
  struct backend_buffer *huge = NULL;
  CHECK_INT_EQ(backend_buffer_upload(be, h, 1ull << 40, &huge, err, sizeof err), -ENOMEM);
  CHECK(huge == NULL);
  CHECK(backend_healthy(be));
  run_ok(transpose_spec(77, 3));
}

static void test_errors(void) {
  if (!gpu_small) check_errors();
}

static const struct test_case cases[] = {
    TEST(test_buffer_inputs),      TEST(test_chain),  TEST(test_one_launch),
    TEST(test_buffers_concurrent), TEST(test_errors), TEST_END,
};
const struct test_suite test_suite = {.cases = cases,
                                      .modes = gpu_backend_modes,
                                      .setup = gpu_backend_open,
                                      .teardown = gpu_backend_close};
