/* Prometheus metrics: a few labelled counters and histograms in small arrays (the
 * label sets are bounded: routes x methods x statuses, types x outcomes x devices).
 * Label values are escaped; a method outside HTTP's own is counted as "other", so
 * that made-up methods from the network can neither break the exposition nor fill
 * it. Device series carry the labels the DCGM exporter gives a GPU (gpu, UUID,
 * pci_bus_id, modelName, Hostname), so that they join with its series. */
#include "server/http/metrics.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api/utf8.h"
#include "server/service/service.h"

#define MAX_SERIES 1024
/* The last slots are kept for {route="other",method="other",status}: where the
 * table is full, a new series is counted there instead of being dropped. */
#define OVERFLOW_SLOTS 64
#define MAX_DURATIONS 128 /* (route, method) pairs; the last one for "other" */
#define MAX_JOB_SERIES 256
/* About a factor 2 apart (1, 2, 5 a decade) from 50 us to 300 s, so that a quantile
 * of a fast GET and one of a POST that waits for its job both fall between close
 * bounds. */
#define N_BUCKETS 22
static const double bucket_bounds[N_BUCKETS] = {
    0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
    0.2,     0.5,    1,      2,      5,     10,    20,    50,   100,  200,  300};

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

struct duration_series {
  char route[32], method[8];
  struct histogram seconds;
};

struct job_series {
  char type[12], state[12];
  int device; /* -1: it ended before it was placed */
  uint64_t count;
  struct histogram queue, run; /* per type; filled for every outcome */
};

struct metrics {
  pthread_mutex_t lock;
  struct request_series requests[MAX_SERIES];
  int n_requests;
  struct duration_series durations[MAX_DURATIONS];
  int n_durations;
  struct job_series jobs[MAX_JOB_SERIES];
  int n_jobs;
  double started_unix;
  char version[32];
  char hostname[128]; /* escaped as a label value */
};

static const char *label(const char *value, char *buf, size_t cap);

int metrics_new(const char *version, struct metrics **out) {
  struct metrics *m = calloc(1, sizeof *m);
  if (!m) return -ENOMEM;
  pthread_mutex_init(&m->lock, NULL);
  m->started_unix = engine_now_unix();
  snprintf(m->version, sizeof m->version, "%s", version);
  char host[64] = "", clean[64];
  gethostname(host, sizeof host - 1);
  utf8_scrub(clean, sizeof clean, host);
  label(clean, m->hostname, sizeof m->hostname);
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

/* The duration histogram of (route, method); the last slot is route="other",
 * method="other" once the others are taken. Under m->lock. */
static struct histogram *duration_of(struct metrics *m, const char *route, const char *method) {
  int i = 0;
  while (i < m->n_durations &&
         (strcmp(m->durations[i].route, route) || strcmp(m->durations[i].method, method)))
    i++;
  if (i < m->n_durations) return &m->durations[i].seconds;
  if (i >= MAX_DURATIONS - 1) { /* full: the overflow slot */
    i = MAX_DURATIONS - 1;
    route = method = "other";
  }
  struct duration_series *s = &m->durations[i];
  if (i == m->n_durations) {
    snprintf(s->route, sizeof s->route, "%s", route);
    snprintf(s->method, sizeof s->method, "%s", method);
    m->n_durations++;
  }
  return &s->seconds;
}

void metrics_http_request(struct metrics *m, const char *route, const char *method, int status,
                          double seconds) {
  method = method_label(method);
  pthread_mutex_lock(&m->lock);
  observe(duration_of(m, route, method), seconds);
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

void metrics_job_ended(struct metrics *m, const char *type, const char *state, int device,
                       double queue_s, double run_s) {
  if (device < 0) device = -1;
  pthread_mutex_lock(&m->lock);
  int i = 0;
  while (i < m->n_jobs && (strcmp(m->jobs[i].type, type) || strcmp(m->jobs[i].state, state) ||
                           m->jobs[i].device != device))
    i++;
  if (i == m->n_jobs && i < MAX_JOB_SERIES) {
    snprintf(m->jobs[i].type, sizeof m->jobs[i].type, "%s", type);
    snprintf(m->jobs[i].state, sizeof m->jobs[i].state, "%s", state);
    m->jobs[i].device = device;
    m->n_jobs++;
  }
  if (i < MAX_JOB_SERIES) {
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

/* The devices as read now, with the labels of each. */
struct device_view {
  int n;
  struct backend_device_info *info;
  char (*labels)[768]; /* gpu="0",UUID="...",pci_bus_id="...",modelName="...",Hostname="..." */
};

static int device_view_read(struct metrics *m, struct engine *e, struct device_view *v) {
  v->n = engine_device_count(e);
  v->info = calloc((size_t)v->n, sizeof *v->info);
  v->labels = calloc((size_t)v->n, sizeof *v->labels);
  if (!v->info || !v->labels) return -ENOMEM;
  for (int d = 0; d < v->n; d++) {
    struct backend_device_info *info = &v->info[d];
    backend_device_info(engine_device(e, d), info);
    char model[sizeof info->name], model_label[2 * sizeof info->name];
    utf8_scrub(model, sizeof model, info->name);
    snprintf(v->labels[d], sizeof v->labels[d],
             "gpu=\"%d\",UUID=\"%s\",pci_bus_id=\"%s\",modelName=\"%s\",Hostname=\"%s\"", d,
             info->uuid, info->pci_bus_id, label(model, model_label, sizeof model_label),
             m->hostname);
  }
  return 0;
}

static void device_view_free(struct device_view *v) {
  free(v->info);
  free(v->labels);
}

/* NVML's readings per device (devices without NVML have no sample). */
static void put_nvml_gauges(struct text *t, const struct device_view *v) {
  static const struct {
    const char *name, *help;
  } g[6] = {{"gpulab_device_sm_clock_hertz", "SM clock now (NVML)."},
            {"gpulab_device_temperature_celsius", "GPU temperature (NVML)."},
            {"gpulab_device_power_watts", "Board power draw (NVML)."},
            {"gpulab_device_utilization_ratio",
             "Share of NVML's last sample period (1/6 s to 1 s) in which a kernel ran "
             "(nvmlDeviceGetUtilizationRates; DCGM_FI_DEV_GPU_UTIL / 100)."},
            {"gpulab_device_memory_utilization_ratio",
             "Share of NVML's last sample period in which device memory was read or written."},
            {"gpulab_device_clock_event_active",
             "1 while NVML reports this clock-event (throttle) reason."}};
  for (int k = 0; k < 6; k++) {
    put(t, "# HELP %s %s\n# TYPE %s gauge\n", g[k].name, g[k].help, g[k].name);
    for (int d = 0; d < v->n; d++) {
      const struct backend_device_info *info = &v->info[d];
      const char *l = v->labels[d];
      if (!info->nvml) continue;
      if (k == 0) put(t, "%s{%s} %.0f\n", g[k].name, l, info->sm_mhz_now * 1e6);
      if (k == 1) put(t, "%s{%s} %d\n", g[k].name, l, info->temp_c);
      if (k == 2) put(t, "%s{%s} %.3f\n", g[k].name, l, info->power_w);
      if (k == 3 && info->util) put(t, "%s{%s} %.2f\n", g[k].name, l, info->util_gpu_pct / 100.0);
      if (k == 4 && info->util) put(t, "%s{%s} %.2f\n", g[k].name, l, info->util_mem_pct / 100.0);
      for (int b = 0; k == 5 && b < 64; b++) {
        const char *reason = exp_clock_reason_name(1ull << b);
        if (reason)
          put(t, "%s{%s,reason=\"%s\"} %d\n", g[k].name, l, reason,
              (int)(info->clock_reasons >> b & 1));
      }
    }
  }
  put(t,
      "# HELP gpulab_device_throttled 1 while a thermal, power-brake, hardware-slowdown or "
      "sync-boost reason is active (NVML).\n# TYPE gpulab_device_throttled gauge\n");
  for (int d = 0; d < v->n; d++)
    if (v->info[d].nvml)
      put(t, "gpulab_device_throttled{%s} %d\n", v->labels[d],
          (v->info[d].clock_reasons & EXP_CLOCK_THROTTLED) != 0);
}

/* Every device's memory and health, and NVML's readings. */
static void put_device_gauges(struct text *t, struct engine *e, const struct device_view *v) {
  put(t,
      "# HELP gpulab_device_memory_used_bytes Device memory in use (total - free; the CPU "
      "backend: the host's).\n# TYPE gpulab_device_memory_used_bytes gauge\n");
  for (int d = 0; d < v->n; d++)
    put(t, "gpulab_device_memory_used_bytes{%s,backend=\"%s\"} %llu\n", v->labels[d],
        v->info[d].backend,
        (unsigned long long)(v->info[d].mem_total_bytes - v->info[d].mem_free_bytes));
  put(t,
      "# HELP gpulab_device_memory_total_bytes Device memory in all.\n"
      "# TYPE gpulab_device_memory_total_bytes gauge\n");
  for (int d = 0; d < v->n; d++)
    put(t, "gpulab_device_memory_total_bytes{%s,backend=\"%s\"} %llu\n", v->labels[d],
        v->info[d].backend, (unsigned long long)v->info[d].mem_total_bytes);
  put(t,
      "# HELP gpulab_device_healthy 1 while the device works, 0 after an unrecoverable error.\n"
      "# TYPE gpulab_device_healthy gauge\n");
  for (int d = 0; d < v->n; d++)
    put(t, "gpulab_device_healthy{%s} %d\n", v->labels[d],
        backend_healthy(engine_device(e, d)) ? 1 : 0);
  put_nvml_gauges(t, v);
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
  put(t,
      "# HELP gpulab_engine_lock_waits_total Times a thread found the engine's lock (its jobs "
      "and queues) taken.\n# TYPE gpulab_engine_lock_waits_total counter\n"
      "gpulab_engine_lock_waits_total %llu\n"
      "# HELP gpulab_engine_lock_wait_seconds_total Time threads waited for the engine's lock.\n"
      "# TYPE gpulab_engine_lock_wait_seconds_total counter\ngpulab_engine_lock_wait_seconds_total %.6f\n"
      "# HELP gpulab_engine_row_waits_total Times a job's row for the store waited for an "
      "earlier one (its job's, or a parent's first) still with another thread.\n"
      "# TYPE gpulab_engine_row_waits_total counter\ngpulab_engine_row_waits_total %llu\n",
      (unsigned long long)c.lock_waits, c.lock_wait_s, (unsigned long long)c.row_waits);
  put(t, "# HELP gpulab_buffers Buffers listed.\n# TYPE gpulab_buffers gauge\ngpulab_buffers %d\n",
      c.buffers);
  put(t,
      "# HELP gpulab_buffer_bytes Bytes held by listed buffers.\n# TYPE gpulab_buffer_bytes gauge\n"
      "gpulab_buffer_bytes %llu\n",
      (unsigned long long)c.buffer_bytes);
  put_client_gauges(t, e);
}

/* The store (--db): its size on disk and in use, its bound, and whether it takes writes. */
static void put_store_gauges(struct text *t, const struct store_status *s) {
  struct store_status st = *s;
  put(t,
      "# HELP gpulab_store_backend_info The job store's database: sqlite or postgresql (--db).\n"
      "# TYPE gpulab_store_backend_info gauge\ngpulab_store_backend_info{backend=\"%s\"} 1\n",
      st.backend);
  put(t,
      "# HELP gpulab_store_bytes The job store on disk: the SQLite file and its WAL, or the "
      "PostgreSQL tables.\n"
      "# TYPE gpulab_store_bytes gauge\ngpulab_store_bytes %llu\n",
      (unsigned long long)st.file_bytes);
  put(t,
      "# HELP gpulab_store_used_bytes The job store's pages in use, or PostgreSQL's live job rows "
      "(what --max-db-bytes bounds).\n"
      "# TYPE gpulab_store_used_bytes gauge\ngpulab_store_used_bytes %llu\n",
      (unsigned long long)st.used_bytes);
  put(t,
      "# HELP gpulab_store_max_bytes --max-db-bytes (0: no bound).\n"
      "# TYPE gpulab_store_max_bytes gauge\ngpulab_store_max_bytes %llu\n",
      (unsigned long long)st.max_bytes);
  put(t,
      "# HELP gpulab_store_fsync_per_commit 1 with --durability full (PRAGMA synchronous=FULL; "
      "PostgreSQL's default, synchronous_commit=on), 0 with normal.\n"
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
  put(t,
      "# HELP gpulab_store_rows_queued_total Job rows (accepted, running, finished) queued for the store.\n"
      "# TYPE gpulab_store_rows_queued_total counter\ngpulab_store_rows_queued_total %llu\n"
      "# HELP gpulab_store_rows_written_total Rows committed; the rest were replaced in the queue "
      "by a later row of their job.\n"
      "# TYPE gpulab_store_rows_written_total counter\ngpulab_store_rows_written_total %llu\n"
      "# HELP gpulab_store_rows_journaled_total Rows an answer waited for that went to the accept "
      "journal (one write) and were committed later.\n"
      "# TYPE gpulab_store_rows_journaled_total counter\ngpulab_store_rows_journaled_total %llu\n"
      "# HELP gpulab_store_commits_total Store transactions committed (group commit: many rows each).\n"
      "# TYPE gpulab_store_commits_total counter\ngpulab_store_commits_total %llu\n"
      "# HELP gpulab_store_commit_seconds_total Time spent writing transactions, one at a time "
      "(its rate: the share of time the store is writing).\n"
      "# TYPE gpulab_store_commit_seconds_total counter\ngpulab_store_commit_seconds_total %.6f\n",
      (unsigned long long)st.rows_queued, (unsigned long long)st.rows_written,
      (unsigned long long)st.rows_journaled, (unsigned long long)st.commits, st.commit_s);
  put(t,
      "# HELP gpulab_store_waits_total Answers that waited for their rows to be committed.\n"
      "# TYPE gpulab_store_waits_total counter\ngpulab_store_waits_total %llu\n"
      "# HELP gpulab_store_wait_seconds_total Time those answers waited, their own commits included.\n"
      "# TYPE gpulab_store_wait_seconds_total counter\ngpulab_store_wait_seconds_total %.6f\n",
      (unsigned long long)st.syncs_waited, st.sync_wait_s);
  put(t,
      "# HELP gpulab_store_queue_lock_waits_total Times a thread found the store's row queue "
      "locked.\n# TYPE gpulab_store_queue_lock_waits_total counter\n"
      "gpulab_store_queue_lock_waits_total %llu\n"
      "# HELP gpulab_store_queue_lock_wait_seconds_total Time threads waited for the row queue.\n"
      "# TYPE gpulab_store_queue_lock_wait_seconds_total counter\n"
      "gpulab_store_queue_lock_wait_seconds_total %.6f\n",
      (unsigned long long)st.queue_lock_waits, st.queue_lock_wait_s);
}

/* The standard process metrics, as Prometheus' client libraries name them, from
 * /proc/self (stat: CPU time and resident pages; fd: open descriptors). A figure that
 * cannot be read is left out. */
static void put_process_gauges(struct text *t, double started_unix) {
  put(t,
      "# HELP process_start_time_seconds When gpulabd started (unix time).\n"
      "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.3f\n",
      started_unix);
  char stat[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
  if (f) fclose(f);
  stat[n] = '\0';
  const char *p = strrchr(stat, ')'); /* the name may hold spaces; fields follow it */
  unsigned long long utime = 0, stime = 0, rss_pages = 0;
  /* after ")": state(3) ... utime(14) stime(15) ... rss(24) */
  if (p && sscanf(p + 1,
                  " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
                  "%*d %*u %*u %llu",
                  &utime, &stime, &rss_pages) == 3) {
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    put(t,
        "# HELP process_cpu_seconds_total User and system CPU time spent.\n"
        "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n",
        (double)(utime + stime) / (double)(tick > 0 ? tick : 100));
    put(t,
        "# HELP process_resident_memory_bytes Resident memory size.\n"
        "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %llu\n",
        rss_pages * (unsigned long long)(page > 0 ? page : 4096));
  }
  DIR *dir = opendir("/proc/self/fd");
  if (dir) {
    long fds = -1; /* opendir's own descriptor is listed too */
    for (struct dirent *de; (de = readdir(dir));)
      if (de->d_name[0] != '.') fds++;
    closedir(dir);
    put(t,
        "# HELP process_open_fds Open file descriptors.\n# TYPE process_open_fds gauge\n"
        "process_open_fds %ld\n",
        fds);
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    put(t,
        "# HELP process_max_fds The limit on open file descriptors.\n"
        "# TYPE process_max_fds gauge\nprocess_max_fds %llu\n",
        (unsigned long long)rl.rlim_cur);
}

/* gpulab_build_info: 1, with gpulabd's version, the CUDA runtime's and the NVIDIA
 * driver's (the first CUDA device's; "" on the CPU backend or without NVML). */
static void put_build_info(struct text *t, const struct metrics *m, const struct device_view *v) {
  char cuda[16] = "";
  const char *driver = "";
  for (int d = 0; d < v->n; d++)
    if (strcmp(v->info[d].backend, "cuda") == 0) {
      snprintf(cuda, sizeof cuda, "%d.%d", v->info[d].runtime_version / 1000,
               v->info[d].runtime_version % 1000 / 10);
      driver = v->info[d].driver;
      break;
    }
  char version[64], driver_label[64];
  put(t,
      "# HELP gpulab_build_info gpulabd's version, the CUDA runtime's and the NVIDIA driver's "
      "(\"\" where there is none).\n# TYPE gpulab_build_info gauge\n"
      "gpulab_build_info{version=\"%s\",cuda=\"%s\",driver=\"%s\"} 1\n",
      label(m->version, version, sizeof version), cuda,
      label(driver, driver_label, sizeof driver_label));
}

/* The (route, method) histograms of request durations and the job series. Under m->lock. */
static void put_request_and_job_series(struct text *t, const struct metrics *m) {
  put(t,
      "# HELP gpulab_http_requests_total HTTP requests answered, by route, method and status.\n"
      "# TYPE gpulab_http_requests_total counter\n");
  for (int i = 0; i < m->n_requests; i++) {
    char route[80], method[24];
    put(t, "gpulab_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} %llu\n",
        label(m->requests[i].route, route, sizeof route),
        label(m->requests[i].method, method, sizeof method), m->requests[i].status,
        (unsigned long long)m->requests[i].count);
  }
  put(t,
      "# HELP gpulab_http_request_duration_seconds Time from a request's first byte to its "
      "answer, by route (the router's pattern, not the path) and method.\n"
      "# TYPE gpulab_http_request_duration_seconds histogram\n");
  for (int i = 0; i < m->n_durations; i++) {
    char route[80], method[24], labels[128];
    snprintf(labels, sizeof labels, "route=\"%s\",method=\"%s\"",
             label(m->durations[i].route, route, sizeof route),
             label(m->durations[i].method, method, sizeof method));
    put_histogram(t, "gpulab_http_request_duration_seconds", labels, &m->durations[i].seconds);
  }
  put(t,
      "# HELP gpulab_jobs_total Jobs ended, by type, outcome and device (gpu=\"none\": ended "
      "before it was placed).\n# TYPE gpulab_jobs_total counter\n");
  char labels[MAX_JOB_SERIES][80];
  for (int i = 0; i < m->n_jobs; i++) {
    char gpu[16];
    snprintf(gpu, sizeof gpu, m->jobs[i].device < 0 ? "none" : "%d", m->jobs[i].device);
    snprintf(labels[i], sizeof labels[i], "type=\"%s\",outcome=\"%s\",gpu=\"%s\"", m->jobs[i].type,
             m->jobs[i].state, gpu);
    put(t, "gpulab_jobs_total{%s} %llu\n", labels[i], (unsigned long long)m->jobs[i].count);
  }
  const char *hist[2][2] = {
      {"gpulab_job_queue_wait_seconds", "Time jobs waited before running."},
      {"gpulab_job_run_seconds", "Time jobs ran (device work, timing and checks)."}};
  for (int h = 0; h < 2; h++) {
    put(t, "# HELP %s %s\n# TYPE %s histogram\n", hist[h][0], hist[h][1], hist[h][0]);
    for (int i = 0; i < m->n_jobs; i++)
      put_histogram(t, hist[h][0], labels[i], h == 0 ? &m->jobs[i].queue : &m->jobs[i].run);
  }
}

/* A fleet's node: its lease, and the fleet's queued jobs per node (fleet.h). */
static void put_fleet_gauges(struct text *t, const struct service_fleet *f) {
  put(t,
      "# HELP gpulab_fleet_lease_age_seconds Since this node last renewed its lease (--lease-s).\n"
      "# TYPE gpulab_fleet_lease_age_seconds gauge\ngpulab_fleet_lease_age_seconds %.3f\n",
      f->lease_age_s);
  put(t,
      "# HELP gpulab_fleet_fenced 1 while the lease is late: no job starts on this node.\n"
      "# TYPE gpulab_fleet_fenced gauge\ngpulab_fleet_fenced %d\n",
      f->fenced ? 1 : 0);
  const struct fleet_queued *q = f->queued;
  int n = f->n_queued;
  put(t,
      "# HELP gpulab_fleet_queued_jobs Queued jobs of the fleet per node that holds them "
      "(node=\"\": claimed by none yet), as of this node's last lease tick.\n"
      "# TYPE gpulab_fleet_queued_jobs gauge\n");
  for (int i = 0; i < n; i++) {
    char node[2 * sizeof q[i].node];
    put(t, "gpulab_fleet_queued_jobs{node=\"%s\"} %lld\n", label(q[i].node, node, sizeof node),
        (long long)q[i].jobs);
  }
}

char *metrics_render(struct metrics *m, struct engine *e, const struct service *svc, size_t *len) {
  struct text t = {.buf = malloc(16384), .cap = 16384};
  struct device_view v = {0};
  if (!t.buf || device_view_read(m, e, &v)) goto fail;
  pthread_mutex_lock(&m->lock);
  put_request_and_job_series(&t, m);
  pthread_mutex_unlock(&m->lock);
  put_build_info(&t, m, &v);
  put_process_gauges(&t, m->started_unix);
  put_engine_gauges(&t, e);
  put_device_gauges(&t, e, &v);
  struct store_status st;
  if (service_store_status(svc, &st)) put_store_gauges(&t, &st);
  struct service_fleet fleet;
  if (service_fleet_status(svc, &fleet)) put_fleet_gauges(&t, &fleet);
  if (t.failed) goto fail;
  device_view_free(&v);
  *len = t.len;
  return t.buf;
fail:
  device_view_free(&v);
  free(t.buf);
  return NULL;
}
