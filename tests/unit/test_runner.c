/* The runner's life cycle in CPU mode (no GPU needed): start and HELLO, buffers as
 * memfds, loads and runs, poisoning, and the failures: a runner that traps, strays,
 * hangs past its deadline, exits or is killed between jobs is replaced, the run fails
 * with the right code, and the next job passes. GPULAB_RUNNER names the executable. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/core/clock.h"
#include "kernels/user/runner.h"
#include "tests/runner.h"

enum { M = 37, N = 53 }; /* odd: tails both ways */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_log[512];
static int n_log;

static void on_log(void *arg, const char *line) {
  (void)arg;
  pthread_mutex_lock(&log_mu);
  snprintf(last_log, sizeof last_log, "%s", line);
  n_log++;
  pthread_mutex_unlock(&log_mu);
  fprintf(stderr, "[runner] %s\n", line);
}

struct bufs {
  int fd[2];
  float *p[2];
  size_t bytes;
};

static void bufs_new(struct bufs *b) {
  b->bytes = sizeof(float) * M * N;
  for (int i = 0; i < 2; i++)
    CHECK_INT_EQ(runner_memfd_new(b->bytes, &b->fd[i], (void **)&b->p[i]), 0);
  for (int i = 0; i < M * N; i++) b->p[0][i] = (float)i * 0.5f;
}

static void bufs_free(struct bufs *b) {
  for (int i = 0; i < 2; i++) runner_memfd_free(b->fd[i], b->p[i], b->bytes);
}

static int64_t mismatches(const struct bufs *b) {
  int64_t bad = 0;
  for (int y = 0; y < M; y++)
    for (int x = 0; x < N; x++) {
      float got = b->p[1][(size_t)x * M + y], want = b->p[0][(size_t)y * N + x];
      bad += !(got == want);
    }
  return bad;
}

static struct runner_run_msg run_msg(const char *entry) {
  struct runner_run_msg m;
  memset(&m, 0, sizeof m);
  memset(m.key, 0, sizeof m.key);
  snprintf((char *)m.key, sizeof m.key, "%s", entry);
  m.grid[0] = m.grid[1] = m.grid[2] = 1;
  m.block[0] = m.block[1] = m.block[2] = 1;
  m.n_args = 4;
  m.args[0] = (struct runner_arg){RUNNER_ARG_BUFFER, 0};
  m.args[1] = (struct runner_arg){RUNNER_ARG_BUFFER, 1};
  m.args[2] = (struct runner_arg){RUNNER_ARG_I32, M};
  m.args[3] = (struct runner_arg){RUNNER_ARG_I32, N};
  m.out_buffer = 1;
  m.out_floats = M * N;
  m.n_launches = 3;
  return m;
}

/* One job: acquire, attach, load entry, run; returns runner_run's code. poison_each:
 * 0 none, 1 NaN before each launch, 2 0.0f before each launch (reset_zero). */
static int job(struct runner *r, const char *entry, int poison_each, double deadline_s,
               struct bufs *b, struct runner_fault *fault, double *ms) {
  char err[256];
  CHECK_INT_EQ(runner_acquire(r, err, sizeof err), 0);
  struct runner_buffer_desc d[2];
  memset(d, 0, sizeof d);
  d[0].bytes = d[1].bytes = b->bytes;
  CHECK_INT_EQ(runner_attach(r, d, b->fd, 2, err, sizeof err), 0);
  struct runner_run_msg m = run_msg(entry);
  struct runner_loaded_msg loaded;
  CHECK_INT_EQ(runner_load(r, m.key, entry, "image", 5, &loaded, err, sizeof err), 0);
  memset(b->p[1], 0xff, b->bytes); /* poisoned by gpulabd before the job's runs */
  m.poison_each = poison_each != 0;
  m.reset_zero = poison_each == 2;
  m.timed = 1;
  struct runner_done_msg done;
  int rc = runner_run(r, &m, deadline_s, &done, fault, err, sizeof err);
  if (rc == 0) {
    if (ms) *ms = done.ms_per_launch;
    CHECK_INT_EQ(runner_detach(r), 0);
  } else {
    printf("%s: %s (%s)\n", entry, err, strerror(-rc));
  }
  runner_release(r);
  return rc;
}

static const char *exe; /* $GPULAB_RUNNER, or ./gpulab-runner */

static int setup(void) {
  /* Under AddressSanitizer the runner would turn its SIGSEGV into exit status 1; let
   * the signal end it, as it does in a plain build. */
  char asan[512];
  const char *old = getenv("ASAN_OPTIONS");
  snprintf(asan, sizeof asan, "%s%shandle_segv=0", old ? old : "", old && old[0] ? ":" : "");
  setenv("ASAN_OPTIONS", asan, 1);
  exe = getenv("GPULAB_RUNNER");
  if (!exe) exe = "./gpulab-runner";
  return 0;
}

/* One runner through good, wrong, lazy, trapping, straying, hanging and dying kernels:
 * each fault fails its job alone, a new runner takes the next. */
static void test_life_cycle(void) {
  struct runner_config cfg = {.exe = exe, .mode = RUNNER_MODE_CPU, .log = on_log};
  struct runner *r;
  CHECK_INT_EQ(runner_new(&cfg, &r), 0);
  struct bufs b;
  bufs_new(&b);
  struct runner_fault fault;
  struct runner_stats st;
  double ms = 0;

  /* Start, HELLO, a good kernel; poisoned per launch or not, it transposes. */
  CHECK_INT_EQ(job(r, "transpose", 1, 2, &b, &fault, &ms), 0);
  CHECK_INT_EQ(mismatches(&b), 0);
  CHECK(ms > 0);
  runner_stats(r, &st);
  CHECK_INT_EQ(st.starts, 1);
  CHECK(st.pid > 0);
  printf("runner started in %.1f ms (pid %d)\n", st.last_start_ms, (int)st.pid);
  pid_t first = st.pid;
  char err[256];
  CHECK_INT_EQ(runner_acquire(r, err, sizeof err), 0);
  CHECK_INT_EQ(runner_hello(r)->mode, RUNNER_MODE_CPU);
  CHECK_INT_EQ(runner_hello(r)->pid, first);
  runner_release(r);
  CHECK_INT_EQ(job(r, "kernel", 0, 2, &b, &fault, &ms), 0);
  CHECK_INT_EQ(mismatches(&b), 0);

  /* A wrong kernel: three mismatches; the runner lives on. */
  CHECK_INT_EQ(job(r, "wrong", 1, 2, &b, &fault, NULL), 0);
  CHECK_INT_EQ(mismatches(&b), 3);

  /* The lazy kernel computes only when its output is NaN: poisoned before every
   * launch, it does every launch's work, and the result is right. */
  CHECK_INT_EQ(job(r, "lazy", 1, 2, &b, &fault, NULL), 0);
  CHECK_INT_EQ(mismatches(&b), 0);
  /* A kernel that works on its first call only: poisoned before each launch, its
   * output after the launches is NaN, which the check after the batches refuses. */
  CHECK_INT_EQ(job(r, "once", 1, 2, &b, &fault, NULL), 0);
  CHECK_INT_EQ(mismatches(&b), M * N);
  /* Reset to 0.0f instead (an experiment whose kernels accumulate): the later
   * launches leave zeros, wrong but for A's one zero; a good kernel transposes. */
  CHECK_INT_EQ(job(r, "once", 2, 2, &b, &fault, NULL), 0);
  for (int i = 0; i < M * N; i++) CHECK(b.p[1][i] == 0.0f);
  CHECK_INT_EQ(job(r, "transpose", 2, 2, &b, &fault, NULL), 0);
  CHECK_INT_EQ(mismatches(&b), 0);
  runner_stats(r, &st);
  CHECK_INT_EQ(st.starts, 1);
  CHECK_INT_EQ(st.pid, first);

  /* A trap: the run fails with the signal's name, the runner's stderr reached the
   * log, a new runner is up for the next job, which passes. */
  CHECK_INT_EQ(job(r, "trap", 1, 2, &b, &fault, NULL), -EFAULT);
  CHECK_STR_EQ(fault.name, "SIGABRT");
  pthread_mutex_lock(&log_mu);
  CHECK(strstr(last_log, "trap: aborting") != NULL);
  pthread_mutex_unlock(&log_mu);
  runner_stats(r, &st);
  CHECK_INT_EQ(st.starts, 2);
  CHECK_INT_EQ(st.faults, 1);
  CHECK(st.pid != first && st.pid > 0);
  CHECK_INT_EQ(job(r, "transpose", 1, 2, &b, &fault, NULL), 0);
  CHECK_INT_EQ(mismatches(&b), 0);

  /* An out-of-range store. */
  CHECK_INT_EQ(job(r, "oob", 1, 2, &b, &fault, NULL), -EFAULT);
  CHECK_STR_EQ(fault.name, "SIGSEGV");
  CHECK_INT_EQ(job(r, "transpose", 1, 2, &b, &fault, NULL), 0);

  /* An endless loop: killed at its deadline; the time to a passing job is recovery. */
  double t0 = clock_mono_ms();
  CHECK_INT_EQ(job(r, "hang", 1, 0.2, &b, &fault, NULL), -ETIMEDOUT);
  CHECK_STR_EQ(fault.name, "kernel_timeout");
  double waited = clock_mono_ms() - t0;
  CHECK(waited >= 200);
  t0 = clock_mono_ms();
  CHECK_INT_EQ(job(r, "transpose", 1, 2, &b, &fault, NULL), 0);
  CHECK_INT_EQ(mismatches(&b), 0);
  printf("hang: failed after %.0f ms, next job passed %.1f ms later\n", waited,
         clock_mono_ms() - t0);
  runner_stats(r, &st);
  CHECK_INT_EQ(st.timeouts, 1);

  /* A runner that exits in a launch, and one killed between jobs. */
  CHECK_INT_EQ(job(r, "die", 1, 2, &b, &fault, NULL), -EFAULT);
  CHECK_STR_EQ(fault.name, "runner_exit");
  runner_stats(r, &st);
  kill(st.pid, SIGKILL);
  usleep(50000);
  CHECK_INT_EQ(job(r, "transpose", 1, 2, &b, &fault, NULL), 0);
  runner_stats(r, &st);
  CHECK_INT_EQ(st.starts, 6);

  /* Cold, gpulabd's flag on the wire: the CPU mode takes it and flushes nothing (the
   * CPU backend times its built-ins warm), its answer says so, each launch is timed
   * alone, and the kernel still transposes after its poisoned launches. A value other
   * than 0 or 1 is refused and the runner lives on. */
  CHECK_INT_EQ(runner_acquire(r, err, sizeof err), 0);
  struct runner_buffer_desc cd[2];
  memset(cd, 0, sizeof cd);
  cd[0].bytes = cd[1].bytes = b.bytes;
  CHECK_INT_EQ(runner_attach(r, cd, b.fd, 2, err, sizeof err), 0);
  struct runner_run_msg cm = run_msg("transpose");
  struct runner_loaded_msg cl;
  CHECK_INT_EQ(runner_load(r, cm.key, "transpose", "image", 5, &cl, err, sizeof err), 0);
  memset(b.p[1], 0xff, b.bytes);
  cm.timed = 1, cm.cold = 1, cm.poison_each = 1;
  struct runner_done_msg cdone;
  memset(&cdone, 0x5a, sizeof cdone);
  CHECK_INT_EQ(runner_run(r, &cm, 2, &cdone, &fault, err, sizeof err), 0);
  CHECK(cdone.ms_per_launch > 0);
  CHECK_INT_EQ(cdone.l2_flushes, 0);
  CHECK_INT_EQ(cdone.flush_bytes, 0);
  CHECK_INT_EQ(mismatches(&b), 0);
  cm.poison_each = 0; /* cold alone also times launch by launch */
  CHECK_INT_EQ(runner_run(r, &cm, 2, &cdone, &fault, err, sizeof err), 0);
  CHECK(cdone.ms_per_launch > 0);
  CHECK_INT_EQ(mismatches(&b), 0);
  cm.cold = 2;
  CHECK_INT_EQ(runner_run(r, &cm, 2, &cdone, &fault, err, sizeof err), -EINVAL);
  CHECK(strstr(err, "cold is 0 or 1") != NULL);
  CHECK_INT_EQ(runner_detach(r), 0);
  runner_release(r);
  runner_stats(r, &st);
  CHECK_INT_EQ(st.starts, 6);

  /* Errors that leave the runner alive: an unknown function, a bad launch. */
  CHECK_INT_EQ(runner_acquire(r, err, sizeof err), 0);
  struct runner_run_msg m = run_msg("nosuch");
  struct runner_loaded_msg loaded;
  CHECK_INT_EQ(runner_load(r, m.key, "nosuch", "x", 1, &loaded, err, sizeof err), -ENOENT);
  CHECK(strstr(err, "nosuch") != NULL);
  struct runner_done_msg done;
  CHECK_INT_EQ(runner_run(r, &m, 1, &done, &fault, err, sizeof err), -ENOENT);
  runner_release(r);
  runner_stats(r, &st);
  CHECK_INT_EQ(st.starts, 6);
  runner_free(r);
  bufs_free(&b);
}

static void test_no_executable(void) {
  char err[256];
  struct runner *r;
  /* No executable: acquire says so. */
  struct runner_config bad = {.exe = "/nonexistent/gpulab-runner", .mode = RUNNER_MODE_CPU};
  CHECK_INT_EQ(runner_new(&bad, &r), 0);
  CHECK_INT_EQ(runner_acquire(r, err, sizeof err), -ENOENT);
  CHECK(strstr(err, "/nonexistent/gpulab-runner") != NULL);
  runner_free(r);
}

static void test_cuda_refused(void) {
#ifndef GPULAB_HAVE_CUDA
  char err[256];
  struct runner *r;
  /* A CPU-only runner asked for CUDA refuses at start, with its reason. */
  struct runner_config cu = {.exe = exe, .mode = RUNNER_MODE_CUDA};
  CHECK_INT_EQ(runner_new(&cu, &r), 0);
  CHECK_INT_EQ(runner_acquire(r, err, sizeof err), -ENODEV);
  CHECK(strstr(err, "without mode cuda") != NULL);
  runner_free(r);
#endif
}

/* Problems run on CUDA only: the CPU runner answers PROBLEM and a problem's RUN with
 * -ENOTSUP and its reason, and serves the next job (no new start). */
static void test_problem_refused(void) {
  struct runner_config cfg = {.exe = exe, .mode = RUNNER_MODE_CPU, .log = on_log};
  struct runner *r;
  CHECK_INT_EQ(runner_new(&cfg, &r), 0);
  char err[256] = "";
  CHECK_INT_EQ(runner_acquire(r, err, sizeof err), 0);
  struct runner_problem_msg pm;
  memset(&pm, 0, sizeof pm);
  pm.n_in = pm.n_out = pm.n_runs = 1;
  pm.in[0] = (struct runner_problem_input){RUNNER_DTYPE_FLOAT32, RUNNER_INIT_UNIFORM, -1, 1, 16};
  pm.out[0] = (struct runner_problem_output){RUNNER_DTYPE_FLOAT32, 1, 0, 0, 16};
  pm.ref_grid[0] = pm.ref_grid[1] = pm.ref_grid[2] = 1;
  pm.ref_block[0] = pm.ref_block[1] = pm.ref_block[2] = 1;
  struct runner_problem_ready_msg ready;
  struct runner_fault fault;
  CHECK_INT_EQ(runner_problem(r, &pm, 1, &ready, &fault, err, sizeof err), -ENOTSUP);
  printf("PROBLEM in CPU mode: %s\n", err);
  CHECK(strstr(err, "CUDA only") != NULL);
  struct runner_run_msg m = run_msg("transpose");
  struct runner_loaded_msg loaded;
  CHECK_INT_EQ(runner_load(r, m.key, "transpose", "image", 5, &loaded, err, sizeof err), 0);
  m.problem.on = 1;
  struct runner_done_msg done;
  err[0] = '\0';
  CHECK_INT_EQ(runner_run(r, &m, 1, &done, &fault, err, sizeof err), -ENOTSUP);
  CHECK(strstr(err, "CUDA only") != NULL);
  runner_release(r);
  struct bufs b;
  bufs_new(&b);
  CHECK_INT_EQ(job(r, "transpose", 1, 2, &b, &fault, NULL), 0);
  CHECK_INT_EQ(mismatches(&b), 0);
  struct runner_stats st;
  runner_stats(r, &st);
  CHECK_INT_EQ(st.starts, 1);
  runner_free(r);
  bufs_free(&b);
}

static const struct test_case cases[] = {
    TEST(test_life_cycle),
    TEST(test_problem_refused),
    TEST(test_no_executable),
    TEST(test_cuda_refused),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = setup};
