/* gpulab-runner's CPU mode: buffers are memfds that gpulabd passed (SCM_RIGHTS), mapped
 * shared, and "images" name one of the C functions below by their entry. It runs no
 * user code: it exists so that the runner's life cycle (start, answers, a runner that
 * dies or hangs and is replaced, deadlines, poisoning, scratch, fresh inputs and their
 * check) is tested where no GPU is; its functions stand for kernels and their cheats.
 * Every function but the reduce_, scan_ and histogram_ ones has the transpose signature
 * (a, b, m, n): A is m x n, B = A^T; those have their experiments' ((x, out, n), (x, y,
 * n), (x, counts, n, bins)). With scratch_bytes, one more last argument, the scratch,
 * zeroed before every launch. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/core/clock.h"
#include "kernels/core/gen.h"
#include "kernels/core/sum_rule.h"
#include "kernels/histogram/histogram.h"
#include "kernels/user/runner_impl.h"

static struct {
  int n;
  void *base[RUNNER_MAX_BUFFERS];
  uint64_t bytes[RUNNER_MAX_BUFFERS];
} att;

#define MAX_MODULES 32
static struct {
  uint8_t key[32];
  char entry[64];
  int used;
  int calls;       /* launches since loaded or attached (the lazy kernels' memory) */
  int timed_calls; /* of them timed */
} mods[MAX_MODULES];

static int cpu_init(int device, struct runner_hello_msg *h, char *msg, size_t msg_len) {
  h->cc_major = 0, h->cc_minor = 0;
  h->sms = (int)sysconf(_SC_NPROCESSORS_ONLN);
  h->max_threads_per_block = 1024;
  h->max_block[0] = h->max_block[1] = 1024, h->max_block[2] = 64;
  h->max_grid[0] = 0x7fffffff, h->max_grid[1] = h->max_grid[2] = 65535;
  h->max_shared_per_block = 48 << 10;
  h->max_shared_optin = 227 << 10;
  snprintf(h->name, sizeof h->name, "cpu runner (test kernels only)");
  return 0;
}

static void cpu_detach(void) {
  for (int i = 0; i < att.n; i++) munmap(att.base[i], att.bytes[i]);
  att.n = 0;
  for (int i = 0; i < MAX_MODULES; i++) mods[i].calls = mods[i].timed_calls = 0;
}

static int cpu_attach(const struct runner_attach_msg *m, const int *fds, int n_fds, char *msg,
                      size_t msg_len) {
  int rc = 0;
  if (m->n > RUNNER_MAX_BUFFERS || (int)m->n != n_fds) {
    snprintf(msg, msg_len, "attach: %u buffers but %d fds", m->n, n_fds);
    rc = -EINVAL;
    goto out;
  }
  for (int i = 0; i < n_fds; i++) {
    void *p = m->buf[i].bytes
                  ? mmap(NULL, m->buf[i].bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0)
                  : NULL;
    if (p == MAP_FAILED) {
      rc = -errno;
      snprintf(msg, msg_len, "mmap of buffer %d (%llu bytes): %s", i,
               (unsigned long long)m->buf[i].bytes, strerror(errno));
      cpu_detach();
      goto out;
    }
    att.base[att.n] = p;
    att.bytes[att.n++] = m->buf[i].bytes;
  }
out:
  for (int i = 0; i < n_fds; i++) close(fds[i]);
  return rc;
}

static int find_module(const uint8_t key[32]) {
  for (int i = 0; i < MAX_MODULES; i++)
    if (mods[i].used && !memcmp(mods[i].key, key, 32)) return i;
  return -1;
}

static const char *const known[] = {
    "kernel",        "transpose", "wrong",         "lazy",         "once",
    "trap",          "oob",       "hang",          "die",          "scratch",
    "scribble",      "staged",    "memo",          "reduce_sum",   "reduce_memo",
    "reduce_skip",   "scan_sum",  "scan_scribble", "scan_float16", "histogram_count",
    "histogram_once"};

static float *memo; /* the memo function's result cache, and its floats */
static size_t memo_floats;

static void *scratch; /* the scratch of runs that ask for it, kept and grown */
static uint64_t scratch_cap;

static int cpu_load(const struct runner_load_msg *m, const void *image,
                    struct runner_loaded_msg *out, char *msg, size_t msg_len) {
  int i = find_module(m->key);
  out->cached = i >= 0;
  if (i < 0) {
    bool ok = false;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
      ok = ok || !strncmp(m->entry, known[k], sizeof m->entry);
    if (!ok) {
      snprintf(msg, msg_len, "the CPU runner has no test function %.64s", m->entry);
      return -ENOENT;
    }
    for (i = 0; i < MAX_MODULES && mods[i].used; i++) {}
    if (i == MAX_MODULES) i = 0; /* full: reuse the first slot */
    memcpy(mods[i].key, m->key, 32);
    snprintf(mods[i].entry, sizeof mods[i].entry, "%.63s", m->entry);
    mods[i].used = 1;
    mods[i].calls = mods[i].timed_calls = 0;
  }
  out->registers = 0, out->static_shared_bytes = 0, out->local_bytes = 0;
  out->max_threads_per_block = 1024;
  return 0;
}

static void transpose(const float *a, float *b, int m, int n) {
  for (int y = 0; y < m; y++)
    for (int x = 0; x < n; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
}

/* Which experiment's signature a test function has, by its entry's prefix. */
enum shape { SHAPE_TRANSPOSE, SHAPE_REDUCE, SHAPE_SCAN, SHAPE_HISTOGRAM };
static enum shape shape_of(const char *entry) {
  return !strncmp(entry, "reduce_", 7)       ? SHAPE_REDUCE
         : !strncmp(entry, "scan_", 5)       ? SHAPE_SCAN
         : !strncmp(entry, "histogram_", 10) ? SHAPE_HISTOGRAM
                                             : SHAPE_TRANSPOSE;
}

/* counts[b] += the x[0..n) in bin b (histogram.h's rule); bins in 1..HISTOGRAM_MAX_BINS. */
static void count_bins(const float *x, int64_t n, int bins, uint32_t *counts) {
  const float scale = histogram_scale(bins);
  for (int64_t i = 0; i < n; i++) {
    int b = histogram_bin(x[i], bins, scale);
    if (b >= 0) counts[b]++;
  }
}

/* The reduce_, scan_ and histogram_ functions: x (n floats), out, n, and bins (0 for
 * reduce and scan); calls: launches before this one. Reduce adds into out[0] and
 * histogram into counts, zeroed before every launch (their reset_zero). */
static void call_1d(const char *e, const float *x, float *out, int n, int bins, int calls) {
  if (!strcmp(e, "reduce_sum") || !strcmp(e, "reduce_skip")) { /* skip: the last element */
    float sum = 0;
    for (int i = 0; i < n - !strcmp(e, "reduce_skip"); i++) sum += x[i];
    out[0] += sum;
  } else if (!strcmp(e, "reduce_memo")) { /* a result cache: its first sum, given back after */
    static float kept;
    if (calls == 0) {
      kept = 0;
      for (int i = 0; i < n; i++) kept += x[i];
    }
    out[0] = kept;
  } else if (!strcmp(e, "scan_sum") || !strcmp(e, "scan_scribble")) { /* scribble: x[0] too */
    float sum = 0;
    for (int i = 0; i < n; i++) out[i] = sum += x[i];
    if (n > 0 && !strcmp(e, "scan_scribble")) ((float *)x)[0] = -x[0];
  } else if (!strcmp(e, "scan_float16")) { /* a prefix kept to 11 bits, as in half */
    float sum = 0;
    for (int i = 0; i < n; i++) {
      sum += x[i];
      int exp2 = 0; /* set by frexpf before it is read: an argument's order is free */
      const float mantissa = frexpf(sum, &exp2);
      out[i] = sum = ldexpf(rintf(ldexpf(mantissa, 11)), exp2 - 11);
    }
  } else if (!strcmp(e, "histogram_count") || !strcmp(e, "histogram_once")) { /* once: counts
                                                                                  on call 0 only */
    if (bins < 1 || bins > HISTOGRAM_MAX_BINS || (calls > 0 && !strcmp(e, "histogram_once")))
      return;
    count_bins(x, n, bins, (uint32_t *)out);
  }
}

/* One "launch" of function entry with (a, b, m, n) and the scratch (NULL: none); timed:
 * a launch of a timed batch. */
static void call(int mod, const float *a, float *b, int m, int n, unsigned *s, bool timed) {
  const char *e = mods[mod].entry;
  int calls = mods[mod].calls++, timed_calls = timed ? mods[mod].timed_calls++ : -1;
  if (shape_of(e) != SHAPE_TRANSPOSE) {
    call_1d(e, a, b, m, n, calls);
  } else if (!strcmp(e, "kernel") || !strcmp(e, "transpose")) {
    transpose(a, b, m, n);
  } else if (!strcmp(e, "wrong")) { /* three elements off */
    transpose(a, b, m, n);
    for (int i = 0; i < 3 && i < m * n; i++) b[i] += 1.0f;
  } else if (!strcmp(e, "lazy")) { /* works only when it sees its output poisoned */
    if (isnan(b[0])) transpose(a, b, m, n);
  } else if (!strcmp(e, "once")) { /* works on its first call only */
    if (calls == 0) transpose(a, b, m, n);
  } else if (!strcmp(e, "trap")) {
    fprintf(stderr, "cpu test kernel trap: aborting\n"); /* as a device printf would */
    abort();
  } else if (!strcmp(e, "oob")) {
    volatile float *far = b + ((size_t)1 << 40);
    *far = 1.0f;
  } else if (!strcmp(e, "hang")) {
    for (volatile int spin = 1; spin;) {}
  } else if (!strcmp(e, "die")) {
    _exit(9);
  } else if (!strcmp(e, "staged")) { /* right; 100 ms a launch, its second timed one
                                        1 s: one batch lies apart from the others */
    transpose(a, b, m, n);
    /* Spun on the wall clock, not slept: a sleep overshoots by a varying fraction of a
     * millisecond, a spin ends on time (the tests compare two jobs' medians). */
    double until = clock_mono_ms() + (timed_calls == 1 ? 1000 : 100);
    while (clock_mono_ms() < until) {}
  } else if (!strcmp(e, "memo")) { /* a result cache: its first output, given back after */
    size_t len = (size_t)m * (size_t)n;
    if (calls == 0 || memo_floats != len) {
      transpose(a, b, m, n);
      float *keep = realloc(memo, (len ? len : 1) * sizeof *keep);
      if (keep) memcpy(keep, b, len * sizeof *keep), memo = keep, memo_floats = len;
    } else {
      memcpy(b, memo, len * sizeof *b);
    }
  } else if (!strcmp(e, "scribble")) { /* right, but leaves a mark in its input */
    transpose(a, b, m, n);
    if (m > 0 && n > 0) ((float *)a)[0] = -a[0];
  } else if (!strcmp(e, "scratch")) { /* right only on a scratch zeroed before its launch */
    transpose(a, b, m, n);
    if (!s || s[0]++ != 0) b[0] += 1.0f;
  }
}

/* A fresh run's inputs for launch l (runner_fresh: input 0, the CPU runner's functions'
 * one input). */
static void fresh_generate(const struct runner_fresh *f, uint32_t l) {
  float *a = att.base[0];
  for (uint64_t i = 0; i < f->floats[0]; i++)
    a[i] = gen_uniform(f->seed + l, f->stream[0], i) * f->scale[0];
}

/* Output elements of launch l that break f's check (exact transposes, reduce and scan
 * by sum_rule.h's random rule, exact counts) into *bad, the first into *first. */
static void fresh_check_output(const struct runner_fresh *f, const float *a, const float *b,
                               uint64_t *bad, uint64_t *first) {
  int64_t n = f->p[0];
  if (f->check == RUNNER_CHECK_TRANSPOSE) {
    int64_t m = f->p[0], cols = f->p[1];
    for (int64_t o = 0; o < m * cols; o++) {
      int64_t x = o / m, y = o % m;
      if (!(b[o] == a[y * cols + x]) && !(*bad)++) *first = (uint64_t)o;
    }
  } else if (f->check == RUNNER_CHECK_REDUCE || f->check == RUNNER_CHECK_SCAN) {
    double sum = 0, max_prefix = 0;
    for (int64_t i = 0; i < n; i++) {
      sum += a[i];
      if (fabs(sum) > max_prefix) max_prefix = fabs(sum);
    }
    if (f->check == RUNNER_CHECK_REDUCE) {
      if (!isfinite(b[0]) || !(fabs((double)b[0] - sum) <= sum_rule_random((double)n, max_prefix)))
        *bad = 1, *first = 0;
      return;
    }
    sum = 0, max_prefix = 0; /* y[i]: the largest prefix up to i */
    for (int64_t i = 0; i < n; i++) {
      sum += a[i];
      if (fabs(sum) > max_prefix) max_prefix = fabs(sum);
      if (!isfinite(b[i]) ||
          !(fabs((double)b[i] - sum) <= sum_rule_random((double)(i + 1), max_prefix)))
        if (!(*bad)++) *first = (uint64_t)i;
    }
  } else if (f->check == RUNNER_CHECK_HISTOGRAM) {
    int bins = (int)f->p[1];
    uint32_t *want = bins >= 1 && bins <= HISTOGRAM_MAX_BINS ? calloc((size_t)bins, sizeof *want)
                                                             : NULL;
    if (!want) { /* cannot check: say the first count is wrong rather than pass */
      *bad = 1, *first = 0;
      return;
    }
    count_bins(a, n, bins, want);
    for (int k = 0; k < bins; k++)
      if (((const uint32_t *)b)[k] != want[k] && !(*bad)++) *first = (uint64_t)k;
    free(want);
  }
}

/* Launch l of a fresh run, checked into done when it is the first to fail: the input
 * as generated, and the output by the check. */
static void fresh_check(const struct runner_fresh *f, const float *b, uint32_t l,
                        struct runner_done_msg *done) {
  const float *a = att.base[0];
  uint64_t bad = 0, first = 0;
  for (uint64_t i = 0; i < f->floats[0]; i++)
    if (a[i] != gen_uniform(f->seed + l, f->stream[0], i) * f->scale[0] && !bad++) first = i;
  if (bad && !done->bad_launch) {
    done->bad_launch = l + 1, done->bad_what = 2, done->bad_input = 0;
    done->bad_count = bad, done->bad_index = first;
    return;
  }
  fresh_check_output(f, a, b, &bad, &first);
  if (bad && !done->bad_launch) {
    done->bad_launch = l + 1, done->bad_what = 1;
    done->bad_count = bad, done->bad_index = first;
  }
}

static int cpu_run(const struct runner_run_msg *m, struct runner_done_msg *done,
                   struct runner_fault_msg *fault, char *msg, size_t msg_len) {
  if (m->problem.on) {
    snprintf(msg, msg_len,
             "run: problems run on CUDA only; the CPU runner has no problem's buffers");
    return -ENOTSUP;
  }
  if (m->profile) /* gpulabd's CPU backend asks for none; a test's request may */
    exp_profile_unavailable(&done->profile, "gpulab-runner in CPU mode reads no counters");
  int mod = find_module(m->key);
  if (mod < 0) {
    snprintf(msg, msg_len, "run: no image loaded under that key");
    return -ENOENT;
  }
  /* The test functions take (buffer a, buffer b, int m[, int n]): 3 ints for reduce's
   * and scan's (x, out, n), whose n stands in m. */
  const enum shape shape = shape_of(mods[mod].entry);
  const bool one_d = shape != SHAPE_TRANSPOSE;
  if (m->n_args < 3 || m->n_args > 4 || m->args[0].kind != RUNNER_ARG_BUFFER ||
      m->args[1].kind != RUNNER_ARG_BUFFER || m->args[2].kind != RUNNER_ARG_I32 ||
      (m->n_args == 4 && m->args[3].kind != RUNNER_ARG_I32) || (m->n_args == 3 && !one_d) ||
      m->args[0].value < 0 || m->args[0].value >= att.n || m->args[1].value < 0 ||
      m->args[1].value >= att.n || m->out_buffer >= (uint32_t)att.n) {
    snprintf(msg, msg_len,
             "run: the CPU runner takes (buffer, buffer, int, int), or (buffer, "
             "buffer, int[, int]) for its reduce_, scan_ and histogram_ functions");
    return -EINVAL;
  }
  const float *a = att.base[m->args[0].value];
  float *b = att.base[m->args[1].value];
  int rows = m->args[2].value, cols = m->n_args == 4 ? m->args[3].value : 0;
  /* x is rows floats for the 1-D functions, their output one float (reduce_), rows
   * (scan_) or cols counts (histogram_, cols its bins). */
  uint64_t need = (one_d ? (uint64_t)rows : (uint64_t)rows * (uint64_t)cols) * sizeof(float),
           out_need = shape == SHAPE_TRANSPOSE ? need
                      : shape == SHAPE_REDUCE  ? sizeof(float)
                      : shape == SHAPE_SCAN    ? (uint64_t)rows * sizeof(float)
                                               : (uint64_t)cols * sizeof(uint32_t);
  if (rows < 0 || cols < 0 || need > att.bytes[m->args[0].value] ||
      out_need > att.bytes[m->args[1].value] || m->out_floats * 4 > att.bytes[m->out_buffer] ||
      (one_d && m->args[1].value != (int32_t)m->out_buffer) ||
      (shape == SHAPE_HISTOGRAM && cols > HISTOGRAM_MAX_BINS)) {
    snprintf(msg, msg_len, "run: %d x %d does not fit the buffers", rows, cols);
    return -EINVAL;
  }
  /* cold is accepted and does nothing here: the CPU backend times its built-ins warm
   * in a cold job (their timing.method says cold does not apply on the CPU backend),
   * so the test functions beside them are timed warm too, and the answer says that no
   * flush was done (l2_flushes 0). Evicting this box's caches per call would make a
   * user's run colder than the built-ins it is ranked against. */
  if (m->cold > 1) {
    snprintf(msg, msg_len, "run: cold is 0 or 1, not %u", m->cold);
    return -EINVAL;
  }
  if (m->scratch_bytes > scratch_cap) {
    void *p = realloc(scratch, m->scratch_bytes);
    if (!p) {
      snprintf(msg, msg_len, "run: %llu bytes of scratch: out of memory",
               (unsigned long long)m->scratch_bytes);
      return -ENOMEM;
    }
    scratch = p, scratch_cap = m->scratch_bytes;
  }
  const struct runner_fresh *f = &m->fresh;
  bool fresh = m->timed && f->check != RUNNER_CHECK_NONE;
  const bool checkable = f->check == RUNNER_CHECK_TRANSPOSE || f->check == RUNNER_CHECK_REDUCE ||
                         f->check == RUNNER_CHECK_SCAN || f->check == RUNNER_CHECK_HISTOGRAM;
  if (fresh && (!checkable || f->n_in != 1 || m->args[0].value != 0 ||
                f->floats[0] * sizeof(float) > att.bytes[0] || f->p[0] != rows || f->p[1] != cols ||
                (f->check == RUNNER_CHECK_SCAN && m->out_floats < (uint64_t)rows) ||
                (f->check == RUNNER_CHECK_HISTOGRAM && m->out_floats < (uint64_t)cols))) {
    snprintf(msg, msg_len,
             "run: the CPU runner checks fresh inputs of its one input only, "
             "for transposes, sums, scans and histograms");
    return -EINVAL;
  }
  float *out = att.base[m->out_buffer];
  double timed = 0, t_all = clock_mono_ms();
  for (uint32_t i = 0; i < m->n_launches; i++) {
    if (fresh) fresh_generate(f, i);
    if (m->poison_each) memset(out, m->reset_zero ? 0 : 0xff, m->out_floats * sizeof(float));
    if (m->scratch_bytes) memset(scratch, 0, m->scratch_bytes);
    double t0 = clock_mono_ms();
    call(mod, a, b, rows, cols, m->scratch_bytes >= sizeof(unsigned) ? scratch : NULL, m->timed);
    timed += clock_mono_ms() - t0;
    if (fresh) fresh_check(f, b, i, done);
  }
  if (fresh) done->fresh_checked = m->n_launches;
  if (m->timed && m->n_launches)
    done->ms_per_launch = (m->poison_each || m->cold || fresh ? timed : clock_mono_ms() - t_all) /
                          m->n_launches;
  (void)fault;
  return 0;
}

/* Problems' kernels are CUDA C for the device: nothing here could run them. */
static int cpu_problem(const struct runner_problem_msg *m, struct runner_problem_ready_msg *ready,
                       struct runner_fault_msg *fault, char *msg, size_t msg_len) {
  (void)m, (void)ready, (void)fault;
  snprintf(msg, msg_len, "problem: problems run on CUDA only, not in the CPU runner");
  return -ENOTSUP;
}

const struct runner_ops runner_cpu_ops = {cpu_init, cpu_attach, cpu_detach,
                                          cpu_load, cpu_run,    cpu_problem};
