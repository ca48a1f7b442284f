/* Prometheus metrics: a few labelled counters and histograms in small arrays (the
 * label sets are bounded: routes x methods x statuses, types x outcomes). Label
 * values are escaped; a method outside HTTP's own is counted as "other", so that
 * made-up methods from the network can neither break the exposition nor fill it. */
#include "server/http/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/utf8.h"
#include "server/store/store.h"

#define MAX_SERIES 1024
/* The last slots are kept for {route="other",method="other",status}: where the
 * table is full, a new series is counted there instead of being dropped. */
#define OVERFLOW_SLOTS 64
#define N_BUCKETS 12
static const double bucket_bounds[N_BUCKETS] = {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05,
                                                0.1,    0.5,    1,     5,     30,   300};

struct histogram {
  uint64_t counts[N_BUCKETS + 1]; /* the last one is +Inf */
  double sum;
  uint64_t n;
};

struct request_series {
  char route[32], method[8];
  int status;
  uint64_t count;
};

struct job_series {
  char type[12], state[12];
  uint64_t count;
  struct histogram queue, run; /* per type; filled for every outcome */
};

struct metrics {
  pthread_mutex_t lock;
  struct request_series requests[MAX_SERIES];
  int n_requests;
  struct histogram request_seconds;
  struct job_series jobs[64];
  int n_jobs;
  double started_unix;
};

int metrics_new(struct metrics **out) {
  struct metrics *m = calloc(1, sizeof *m);
  if (!m) return -ENOMEM;
  pthread_mutex_init(&m->lock, NULL);
  m->started_unix = engine_now_unix();
  *out = m;
  return 0;
}

void metrics_free(struct metrics *m) {
  if (!m) return;
  pthread_mutex_destroy(&m->lock);
  free(m);
}

static void observe(struct histogram *h, double x) {
  int b = 0;
  while (b < N_BUCKETS && x > bucket_bounds[b]) b++;
  h->counts[b]++;
  h->sum += x;
  h->n++;
}

/* HTTP's methods (RFC 9110, and PATCH) as themselves; anything else "other". */
static const char *method_label(const char *method) {
  static const char *const known[] = {"GET",   "HEAD",    "POST",    "PUT",  "DELETE",
                                      "PATCH", "OPTIONS", "CONNECT", "TRACE"};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(method, known[i]) == 0) return known[i];
  return "other";
}

static int find_request_series(const struct metrics *m, const char *route, const char *method,
                               int status) {
  int i = 0;
  while (i < m->n_requests &&
         (m->requests[i].status != status || strcmp(m->requests[i].route, route) ||
          strcmp(m->requests[i].method, method)))
    i++;
  return i;
}

void metrics_http_request(struct metrics *m, const char *route, const char *method, int status,
                          double seconds) {
  method = method_label(method);
  pthread_mutex_lock(&m->lock);
  observe(&m->request_seconds, seconds);
  int i = find_request_series(m, route, method, status);
  if (i == m->n_requests && i >= MAX_SERIES - OVERFLOW_SLOTS) { /* full: one series per status */
    route = method = "other";
    i = find_request_series(m, route, method, status);
  }
  if (i == m->n_requests && i < MAX_SERIES) {
    struct request_series *s = &m->requests[m->n_requests++];
    snprintf(s->route, sizeof s->route, "%s", route);
    snprintf(s->method, sizeof s->method, "%s", method);
    s->status = status;
  }
  if (i < MAX_SERIES) m->requests[i].count++;
  pthread_mutex_unlock(&m->lock);
}

void metrics_job_ended(struct metrics *m, const char *type, const char *state, double queue_s,
                       double run_s) {
  pthread_mutex_lock(&m->lock);
  int i = 0;
  while (i < m->n_jobs && (strcmp(m->jobs[i].type, type) || strcmp(m->jobs[i].state, state))) i++;
  if (i == m->n_jobs && i < 64) {
    snprintf(m->jobs[i].type, sizeof m->jobs[i].type, "%s", type);
    snprintf(m->jobs[i].state, sizeof m->jobs[i].state, "%s", state);
    m->n_jobs++;
  }
  if (i < 64) {
    m->jobs[i].count++;
    if (queue_s >= 0) observe(&m->jobs[i].queue, queue_s);
    if (run_s >= 0) observe(&m->jobs[i].run, run_s);
  }
  pthread_mutex_unlock(&m->lock);
}

/* value as a label value of the text format: backslash, double quote and line feed
 * escaped, into buf (cap bytes; cut when longer). Returns buf. */
static const char *label(const char *value, char *buf, size_t cap) {
  size_t n = 0;
  for (const char *p = value; *p && n + 3 <= cap; p++) {
    if (*p == '\\' || *p == '"' || *p == '\n') buf[n++] = '\\';
    buf[n++] = *p == '\n' ? 'n' : *p;
  }
  buf[n] = '\0';
  return buf;
}

/* A growing text buffer. */
struct text {
  char *buf;
  size_t len, cap;
  bool failed;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...) {
  if (t->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->failed = true;
      return;
    }
    if ((size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = t->cap * 2 + (size_t)n;
    char *buf = realloc(t->buf, cap);
    if (!buf) {
      t->failed = true;
      return;
    }
    t->buf = buf;
    t->cap = cap;
  }
}

static void put_histogram(struct text *t, const char *name, const char *labels,
                          const struct histogram *h) {
  uint64_t cumulative = 0;
  for (int b = 0; b < N_BUCKETS; b++) {
    cumulative += h->counts[b];
    put(t, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, *labels ? "," : "", bucket_bounds[b],
        (unsigned long long)cumulative);
  }
  put(t, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, *labels ? "," : "",
      (unsigned long long)h->n);
  put(t, "%s_sum%s%s%s %.9g\n", name, *labels ? "{" : "", labels, *labels ? "}" : "", h->sum);
  put(t, "%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
      (unsigned long long)h->n);
}

/* NVML's readings per device (devices without NVML have no sample). */
static void put_clock_gauges(struct text *t, struct engine *e) {
  static const struct {
    const char *name, *help;
  } g[4] = {{"gpulab_device_sm_clock_hertz", "SM clock now (NVML)."},
            {"gpulab_device_temperature_celsius", "GPU temperature (NVML)."},
            {"gpulab_device_power_watts", "Board power draw (NVML)."},
            {"gpulab_device_clock_event_active",
             "1 while NVML reports this clock-event (throttle) reason."}};
  int n = engine_device_count(e);
  struct backend_device_info *info = calloc((size_t)n, sizeof *info);
  if (!info) {
    t->failed = true;
    return;
  }
  for (int d = 0; d < n; d++) backend_device_info(engine_device(e, d), &info[d]);
  for (int k = 0; k < 4; k++) {
    put(t, "# HELP %s %s\n# TYPE %s gauge\n", g[k].name, g[k].help, g[k].name);
    for (int d = 0; d < n; d++) {
      if (!info[d].nvml) continue;
      if (k == 0) put(t, "%s{device=\"%d\"} %.0f\n", g[k].name, d, info[d].sm_mhz_now * 1e6);
      if (k == 1) put(t, "%s{device=\"%d\"} %d\n", g[k].name, d, info[d].temp_c);
      if (k == 2) put(t, "%s{device=\"%d\"} %.3f\n", g[k].name, d, info[d].power_w);
      for (int b = 0; k == 3 && b < 64; b++) {
        const char *reason = exp_clock_reason_name(1ull << b);
        if (reason)
          put(t, "%s{device=\"%d\",reason=\"%s\"} %d\n", g[k].name, d, reason,
              (int)(info[d].clock_reasons >> b & 1));
      }
    }
  }
  put(t,
      "# HELP gpulab_device_throttled 1 while a thermal, power-brake, hardware-slowdown or "
      "sync-boost reason is active (NVML).\n# TYPE gpulab_device_throttled gauge\n");
  for (int d = 0; d < n; d++)
    if (info[d].nvml)
      put(t, "gpulab_device_throttled{device=\"%d\"} %d\n", d,
          (info[d].clock_reasons & EXP_CLOCK_THROTTLED) != 0);
  free(info);
}

/* Who has jobs now: unfinished jobs per client (a token's name, a Unix user on
 * --socket, or an address), the first 63 clients, the rest as "other". */
static void put_client_gauges(struct text *t, struct engine *e) {
  enum { MAX_CLIENTS = 64 };
  struct engine_client_load *loads = calloc(MAX_CLIENTS, sizeof *loads);
  if (!loads) {
    t->failed = true;
    return;
  }
  int n = engine_client_loads(e, loads, MAX_CLIENTS);
  put(t,
      "# HELP gpulab_client_jobs Unfinished jobs per client (its token's name, its Unix user on --socket, "
      "or its address): the first 63 clients with any, the rest as client=\"other\".\n"
      "# TYPE gpulab_client_jobs gauge\n");
  for (int i = 0; i < n; i++) {
    char name[128], clean[64];
    utf8_scrub(clean, sizeof clean, loads[i].client);
    label(clean, name, sizeof name);
    put(t, "gpulab_client_jobs{client=\"%s\",state=\"queued\"} %d\n", name, loads[i].queued);
    put(t, "gpulab_client_jobs{client=\"%s\",state=\"waiting\"} %d\n", name, loads[i].waiting);
    put(t, "gpulab_client_jobs{client=\"%s\",state=\"running\"} %d\n", name, loads[i].running);
  }
  free(loads);
}

static void put_engine_gauges(struct text *t, struct engine *e) {
  struct engine_counts c;
  engine_counts(e, &c);
  put(t, "# HELP gpulab_jobs Jobs kept by the engine, by state.\n# TYPE gpulab_jobs gauge\n");
  for (int s = 0; s < JOB_STATE_COUNT; s++)
    put(t, "gpulab_jobs{state=\"%s\"} %d\n", job_state_name((enum job_state)s), c.by_state[s]);
  put(t,
      "# HELP gpulab_jobs_inline_total Jobs run on the HTTP thread that waited for them "
      "(an idle lane lent to it; --inline-max-bytes).\n# TYPE gpulab_jobs_inline_total counter\n"
      "gpulab_jobs_inline_total %llu\n",
      (unsigned long long)c.ran_inline);
  put(t, "# HELP gpulab_buffers Buffers listed.\n# TYPE gpulab_buffers gauge\ngpulab_buffers %d\n",
      c.buffers);
  put(t,
      "# HELP gpulab_buffer_bytes Bytes held by listed buffers.\n# TYPE gpulab_buffer_bytes gauge\n"
      "gpulab_buffer_bytes %llu\n",
      (unsigned long long)c.buffer_bytes);
  put(t,
      "# HELP gpulab_device_memory_used_bytes Device memory in use (total - free).\n"
      "# TYPE gpulab_device_memory_used_bytes gauge\n");
  for (int d = 0; d < engine_device_count(e); d++) {
    struct backend_device_info info;
    backend_device_info(engine_device(e, d), &info);
    put(t, "gpulab_device_memory_used_bytes{device=\"%d\",backend=\"%s\"} %llu\n", d, info.backend,
        (unsigned long long)(info.mem_total_bytes - info.mem_free_bytes));
  }
  put(t,
      "# HELP gpulab_device_healthy 1 while the device works, 0 after an unrecoverable error.\n"
      "# TYPE gpulab_device_healthy gauge\n");
  for (int d = 0; d < engine_device_count(e); d++)
    put(t, "gpulab_device_healthy{device=\"%d\"} %d\n", d,
        backend_healthy(engine_device(e, d)) ? 1 : 0);
  put_clock_gauges(t, e);
  put_client_gauges(t, e);
}

/* The store (--db): its size on disk and in use, its bound, and whether it takes writes. */
static void put_store_gauges(struct text *t, struct store *store) {
  struct store_status st;
  store_status(store, &st);
  put(t,
      "# HELP gpulab_store_bytes The job store's database file and its WAL on disk.\n"
      "# TYPE gpulab_store_bytes gauge\ngpulab_store_bytes %llu\n",
      (unsigned long long)st.file_bytes);
  put(t,
      "# HELP gpulab_store_used_bytes The job store's pages in use (what --max-db-bytes bounds).\n"
      "# TYPE gpulab_store_used_bytes gauge\ngpulab_store_used_bytes %llu\n",
      (unsigned long long)st.used_bytes);
  put(t,
      "# HELP gpulab_store_max_bytes --max-db-bytes (0: no bound).\n"
      "# TYPE gpulab_store_max_bytes gauge\ngpulab_store_max_bytes %llu\n",
      (unsigned long long)st.max_bytes);
  put(t,
      "# HELP gpulab_store_fsync_per_commit 1 with --durability full (PRAGMA synchronous=FULL), 0 with "
      "normal.\n"
      "# TYPE gpulab_store_fsync_per_commit gauge\ngpulab_store_fsync_per_commit %d\n",
      strcmp(st.durability, "full") == 0 ? 1 : 0);
  put(t,
      "# HELP gpulab_store_writable 1 while the store takes writes (and new jobs), 0 after a failed write.\n"
      "# TYPE gpulab_store_writable gauge\ngpulab_store_writable %d\n",
      st.writable ? 1 : 0);
  put(t,
      "# HELP gpulab_store_write_errors_total Store transactions that failed.\n"
      "# TYPE gpulab_store_write_errors_total counter\ngpulab_store_write_errors_total %llu\n",
      (unsigned long long)st.write_errors);
  put(t,
      "# HELP gpulab_store_pruned_jobs_total Finished jobs deleted to keep the store within --max-db-bytes.\n"
      "# TYPE gpulab_store_pruned_jobs_total counter\ngpulab_store_pruned_jobs_total %llu\n",
      (unsigned long long)st.pruned_jobs);
}

char *metrics_render(struct metrics *m, struct engine *e, struct store *store, size_t *len) {
  struct text t = {.buf = malloc(8192), .cap = 8192};
  if (!t.buf) return NULL;
  pthread_mutex_lock(&m->lock);
  put(&t,
      "# HELP gpulab_http_requests_total HTTP requests answered, by route, method and status.\n"
      "# TYPE gpulab_http_requests_total counter\n");
  for (int i = 0; i < m->n_requests; i++) {
    char route[80], method[24];
    put(&t, "gpulab_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} %llu\n",
        label(m->requests[i].route, route, sizeof route),
        label(m->requests[i].method, method, sizeof method), m->requests[i].status,
        (unsigned long long)m->requests[i].count);
  }
  put(&t,
      "# HELP gpulab_http_request_duration_seconds Time from a request's first byte to its answer.\n"
      "# TYPE gpulab_http_request_duration_seconds histogram\n");
  put_histogram(&t, "gpulab_http_request_duration_seconds", "", &m->request_seconds);
  put(&t,
      "# HELP gpulab_jobs_total Jobs ended, by type and outcome.\n# TYPE gpulab_jobs_total counter\n");
  for (int i = 0; i < m->n_jobs; i++)
    put(&t, "gpulab_jobs_total{type=\"%s\",outcome=\"%s\"} %llu\n", m->jobs[i].type,
        m->jobs[i].state, (unsigned long long)m->jobs[i].count);
  const char *hist[2][2] = {
      {"gpulab_job_queue_wait_seconds", "Time jobs waited before running."},
      {"gpulab_job_run_seconds", "Time jobs ran (device work, timing and checks)."}};
  for (int h = 0; h < 2; h++) {
    put(&t, "# HELP %s %s\n# TYPE %s histogram\n", hist[h][0], hist[h][1], hist[h][0]);
    for (int i = 0; i < m->n_jobs; i++) {
      char labels[64];
      snprintf(labels, sizeof labels, "type=\"%s\",outcome=\"%s\"", m->jobs[i].type,
               m->jobs[i].state);
      put_histogram(&t, hist[h][0], labels, h == 0 ? &m->jobs[i].queue : &m->jobs[i].run);
    }
  }
  double started = m->started_unix;
  pthread_mutex_unlock(&m->lock);
  put(&t,
      "# HELP process_start_time_seconds When gpulabd started (unix time).\n"
      "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.3f\n",
      started);
  put_engine_gauges(&t, e);
  if (store) put_store_gauges(&t, store);
  if (t.failed) {
    free(t.buf);
    return NULL;
  }
  *len = t.len;
  return t.buf;
}
