/* The HTTP tests' harness, continued (http_client.h): what a test reads back from
 * gpulabd: job documents checked and waited for, Server-Sent Events streams, and
 * Prometheus' text format. */
#include "http_client.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "check.h"
#include "kernels/core/clock.h"

/* ---- experiment replies ---- */

bool is_rfc3339_utc(const char *t) {
  static const char shape[] = "dddd-dd-ddTdd:dd:dd";
  size_t n = strlen(shape);
  if (!t || strlen(t) < n + 1) return false;
  for (size_t i = 0; i < n; i++)
    if (shape[i] == 'd' ? !(t[i] >= '0' && t[i] <= '9') : t[i] != shape[i]) return false;
  const char *p = t + n;
  if (*p == '.') {
    if (!(p[1] >= '0' && p[1] <= '9')) return false;
    for (p++; *p >= '0' && *p <= '9'; p++) {}
  }
  return strcmp(p, "Z") == 0;
}

static void reply_fail(json_t *root, const char *file, int line, const char *what) {
  char *text = json_dumps(root, JSON_COMPACT);
  fprintf(stderr, "%s:%d: %s in %.6000s\n", file, line, what, text ? text : "(null)");
  free(text);
  exit(1);
}
#define EXPECT(cond)                                              \
  do {                                                            \
    if (!(cond)) reply_fail(root, file, line, "expected " #cond); \
  } while (0)

void check_run_(json_t *root, const char *unit, bool first, bool want_launch, const char *file,
                int line) {
  EXPECT(json_bool_at_(root, "available", file, line));
  EXPECT(json_bool_at_(root, "check.passed", file, line));
  EXPECT(json_int_at_(root, "check.compared", file, line) > 0);
  EXPECT(json_int_at_(root, "check.mismatches", file, line) == 0);
  double med = json_num_at_(root, "timing.median_ms", file, line);
  double lo = json_num_at_(root, "timing.min_ms", file, line);
  double hi = json_num_at_(root, "timing.max_ms", file, line);
  double mean = json_num_at_(root, "timing.mean_ms", file, line);
  EXPECT(lo > 0 && lo <= med && med <= hi && lo <= mean && mean <= hi);
  EXPECT(json_num_at_(root, "timing.stdev_ms", file, line) >= 0);
  EXPECT(json_int_at_(root, "timing.warmup", file, line) >= 0);
  EXPECT(json_int_at_(root, "timing.reps", file, line) >= 1);
  long long batches = json_int_at_(root, "timing.batches", file, line);
  json_t *samples = json_at(root, "timing.samples_ms");
  EXPECT(json_is_array(samples) && (long long)json_array_size(samples) == batches);
  size_t i;
  json_t *s;
  json_array_foreach(samples, i, s) {
    EXPECT(json_is_number(s));
    EXPECT(json_number_value(s) >= lo && json_number_value(s) <= hi);
  }
  EXPECT(json_num_at_(root, "figure", file, line) > 0);
  EXPECT(strcmp(json_str_at_(root, "unit", file, line), unit) == 0);
  double speedup = json_num_at_(root, "speedup", file, line);
  EXPECT(speedup > 0);
  if (first) EXPECT(speedup == 1.0);
  EXPECT(*json_str_at_(root, "kernel.name", file, line));
  if (want_launch) {
    EXPECT(json_array_size(json_at(root, "kernel.grid")) == 3);
    EXPECT(json_array_size(json_at(root, "kernel.block")) == 3);
    EXPECT(json_int_at_(root, "kernel.grid[0]", file, line) >= 1);
    EXPECT(json_int_at_(root, "kernel.block[0]", file, line) >= 1);
    EXPECT(json_int_at_(root, "kernel.registers", file, line) > 0);
  }
}

void check_job_done_(json_t *root, const char *type, const char *backend, const char *file,
                     int line) {
  EXPECT(json_int_at_(root, "id", file, line) > 0);
  EXPECT(strcmp(json_str_at_(root, "type", file, line), type) == 0);
  EXPECT(strcmp(json_str_at_(root, "state", file, line), "done") == 0);
  EXPECT(json_is_object(json_at(root, "params")));
  const char *created = json_str_at_(root, "created_at", file, line);
  const char *started = json_str_at_(root, "started_at", file, line);
  const char *finished = json_str_at_(root, "finished_at", file, line);
  EXPECT(is_rfc3339_utc(created) && is_rfc3339_utc(started) && is_rfc3339_utc(finished));
  EXPECT(strcmp(created, started) <= 0 && strcmp(started, finished) <= 0);
  EXPECT(json_num_at_(root, "queue_ms", file, line) >= 0);
  EXPECT(json_num_at_(root, "run_ms", file, line) >= 0);
  EXPECT(json_is_null(json_at(root, "error")));
  EXPECT(json_bool_at_(root, "result.passed", file, line));
  EXPECT(strcmp(json_str_at_(root, "result.backend", file, line), backend) == 0);
  const char *unit = strcmp(type, "gemm") == 0 ? "GFLOP/s" : "GB/s";
  EXPECT(strcmp(json_str_at_(root, "result.unit", file, line), unit) == 0);
  json_t *runs = json_at(root, "result.runs");
  EXPECT(json_array_size(runs) > 0);
  size_t i;
  json_t *run;
  bool first = true;
  json_array_foreach(runs, i, run) {
    if (!json_is_true(json_object_get(run, "available"))) continue;
    check_run_(run, unit, first, false, file, line);
    first = false;
  }
}

json_t *job_post_done(struct gpulabd *d, const char *backend, const char *path, const char *type,
                      const char *body) {
  struct http_reply r;
  http_post_json(d, path, body, &r);
  CHECK_STATUS(&r, 200);
  CHECK_JOB_DONE(r.json, type, backend);
  json_t *job = json_incref(r.json);
  http_reply_free(&r);
  return job;
}

json_t *job_wait_final(struct gpulabd *d, long long id, double timeout_s) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  double deadline = clock_mono_s() + timeout_s;
  for (;;) {
    struct http_reply r;
    http_get(d, path, &r);
    CHECK_STATUS(&r, 200);
    const char *state = JSTR(r.json, "state");
    if (strcmp(state, "done") == 0 || strcmp(state, "failed") == 0 ||
        strcmp(state, "canceled") == 0) {
      json_t *job = json_incref(r.json);
      http_reply_free(&r);
      return job;
    }
    if (clock_mono_s() > deadline)
      CHECK_FAIL_("job %lld still %s after %.0f s", id, state, timeout_s);
    http_reply_free(&r);
    usleep(20000);
  }
}

void job_wait_state(struct gpulabd *d, long long id, const char *state, double timeout_s) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  double deadline = clock_mono_s() + timeout_s;
  for (;;) {
    json_t *job = http_get_json(d, path);
    bool there = strcmp(JSTR(job, "state"), state) == 0;
    json_decref(job);
    if (there) return;
    if (clock_mono_s() > deadline)
      CHECK_FAIL_("job %lld not %s after %.0f s", id, state, timeout_s);
    usleep(10000);
  }
}

long long job_check_accepted(const struct http_reply *r, const char *type) {
  CHECK_STATUS(r, 202);
  long long id = JINT(r->json, "id");
  char location[64];
  snprintf(location, sizeof location, "/jobs/%lld", id);
  CHECK_STR_EQ(r->location, location);
  CHECK_STR_EQ(JSTR(r->json, "type"), type);
  const char *state = JSTR(r->json, "state");
  CHECK(strcmp(state, "queued") == 0 || strcmp(state, "running") == 0);
  CHECK(is_rfc3339_utc(JSTR(r->json, "created_at")));
  CHECK(json_is_null(json_at(r->json, "finished_at")));
  CHECK(json_is_null(json_at(r->json, "result")));
  return id;
}

void check_run_labels(json_t *job, const char *const *labels, int n) {
  json_t *runs = json_at(job, "result.runs"), *variants = json_at(job, "params.variant");
  CHECK_INT_EQ(json_array_size(runs), n);
  if (variants) CHECK_INT_EQ(json_array_size(variants), n);
  for (int i = 0; i < n; i++) {
    CHECK_STR_EQ(JSTR(json_array_get(runs, (size_t)i), "variant"), labels[i]);
    if (variants) CHECK_STR_EQ(json_string_value(json_array_get(variants, (size_t)i)), labels[i]);
  }
}

/* ---- Server-Sent Events ---- */

static size_t sse_on_body(char *data, size_t size, size_t n, void *arg) {
  struct sse_stream *s = arg;
  size_t add = size * n;
  if (s->len + add + 1 > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + add + 1) cap *= 2;
    char *buf = realloc(s->buf, cap);
    if (!buf) return 0;
    s->buf = buf;
    s->cap = cap;
  }
  for (size_t i = 0; i < add; i++)
    if (data[i] != '\r') s->buf[s->len++] = data[i]; /* lines may end in CRLF */
  s->buf[s->len] = '\0';
  return add;
}

static size_t sse_on_header(char *data, size_t size, size_t n, void *arg) {
  struct sse_stream *s = arg;
  size_t len = size * n;
  if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    free(s->content_type);
    s->content_type = NULL;
  } else if (len <= 2 && (data[0] == '\r' || data[0] == '\n')) {
    s->headers_done = true;
  } else if (len > 13 && strncasecmp(data, "Content-Type:", 13) == 0) {
    const char *v = data + 13, *end = data + len;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
    free(s->content_type);
    s->content_type = strndup(v, (size_t)(end - v));
  }
  return len;
}

/* Moves the transfer on, waiting for the socket until deadline (100 ms at most). */
static void sse_pump(struct sse_stream *s, double deadline) {
  int running = 0, left = 0;
  CHECK(curl_multi_perform(s->multi, &running) == CURLM_OK);
  CURLMsg *msg;
  while ((msg = curl_multi_info_read(s->multi, &left)))
    if (msg->msg == CURLMSG_DONE) {
      s->ended = true;
      s->result = msg->data.result;
    }
  if (s->ended) return;
  int ms = (int)((deadline - clock_mono_s()) * 1e3);
  if (ms > 100) ms = 100;
  if (ms > 0) CHECK(curl_multi_poll(s->multi, NULL, 0, ms, NULL) == CURLM_OK);
}

void sse_open(struct sse_stream *s, int port, const char *path, const char *last_event_id,
              double timeout_s) {
  http_curl_init();
  memset(s, 0, sizeof *s);
  s->buf = calloc(1, 1);
  s->cap = 1;
  CHECK(s->buf != NULL);
  s->multi = curl_multi_init();
  s->curl = curl_easy_init();
  CHECK(s->multi != NULL && s->curl != NULL);
  char url[1024];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  curl_easy_setopt(s->curl, CURLOPT_URL, url);
  curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, sse_on_body);
  curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(s->curl, CURLOPT_HEADERFUNCTION, sse_on_header);
  curl_easy_setopt(s->curl, CURLOPT_HEADERDATA, s);
  s->headers = curl_slist_append(s->headers, "Accept: text/event-stream");
  if (last_event_id) {
    char header[96];
    snprintf(header, sizeof header, "Last-Event-ID: %s", last_event_id);
    s->headers = curl_slist_append(s->headers, header);
  }
  curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, s->headers);
  CHECK(curl_multi_add_handle(s->multi, s->curl) == CURLM_OK);
  double deadline = clock_mono_s() + timeout_s;
  while (!s->headers_done && !s->ended) {
    if (clock_mono_s() > deadline)
      CHECK_FAIL_("GET %s: no response headers within %.1f s", path, timeout_s);
    sse_pump(s, deadline);
  }
  if (!s->headers_done)
    CHECK_FAIL_("GET %s: curl error %d: %s", path, (int)s->result, curl_easy_strerror(s->result));
  curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
}

/* Takes the first whole message block off s->buf into *ev. Returns false when no
 * whole block (one that is not only comments) is there. */
static bool sse_take(struct sse_stream *s, struct sse_event *ev) {
  for (;;) {
    char *end = strstr(s->buf, "\n\n");
    if (!end) return false;
    size_t block_len = (size_t)(end - s->buf) + 2;
    memset(ev, 0, sizeof *ev);
    ev->id = -1;
    snprintf(ev->event, sizeof ev->event, "message");
    bool any = false;
    size_t data_len = 0;
    ev->data = calloc(1, 1);
    CHECK(ev->data != NULL);
    for (char *line = s->buf; line < end + 1;) {
      char *nl = memchr(line, '\n', (size_t)(end + 1 - line));
      *nl = '\0';
      char *colon = strchr(line, ':');
      const char *value = colon ? colon + 1 + (colon[1] == ' ') : "";
      if (colon) *colon = '\0';
      if (line[0] == '\0' && colon) {
        s->comments++;
      } else if (strcmp(line, "id") == 0) {
        ev->id = strtoll(value, NULL, 10);
        any = true;
      } else if (strcmp(line, "event") == 0) {
        snprintf(ev->event, sizeof ev->event, "%s", value);
        any = true;
      } else if (strcmp(line, "data") == 0) {
        size_t add = strlen(value);
        ev->data = realloc(ev->data, data_len + add + 2);
        CHECK(ev->data != NULL);
        if (data_len) ev->data[data_len++] = '\n';
        memcpy(ev->data + data_len, value, add + 1);
        data_len += add;
        any = true;
      }
      line = nl + 1;
    }
    memmove(s->buf, s->buf + block_len, s->len - block_len + 1);
    s->len -= block_len;
    if (any) {
      ev->json = json_loads(ev->data, 0, NULL);
      return true;
    }
    sse_event_free(ev); /* only comments: look further */
  }
}

int sse_next(struct sse_stream *s, double timeout_s, struct sse_event *ev) {
  double deadline = clock_mono_s() + timeout_s;
  for (;;) {
    if (sse_take(s, ev)) return 1;
    if (s->ended) return 0;
    if (clock_mono_s() > deadline) return -1;
    sse_pump(s, deadline);
  }
}

void sse_event_free(struct sse_event *ev) {
  free(ev->data);
  json_decref(ev->json);
  memset(ev, 0, sizeof *ev);
}

void sse_close(struct sse_stream *s) {
  if (s->multi && s->curl) curl_multi_remove_handle(s->multi, s->curl);
  if (s->curl) curl_easy_cleanup(s->curl);
  if (s->multi) curl_multi_cleanup(s->multi);
  curl_slist_free_all(s->headers);
  free(s->content_type);
  free(s->buf);
  memset(s, 0, sizeof *s);
}

/* A label name with a capital outside DCGM's own (UUID, modelName, Hostname). */
static void check_label_names(const char *text) {
  static const char *const dcgm[] = {"UUID", "modelName", "Hostname"};
  for (const char *p = text; (p = strpbrk(p, "{,")); p++) {
    const char *name = p + 1, *end = name;
    while (*end == '_' || (*end >= 'a' && *end <= 'z') || (*end >= 'A' && *end <= 'Z') ||
           (*end >= '0' && *end <= '9'))
      end++;
    if (*end != '=' || end[1] != '"') continue; /* not a label name */
    bool capital = false, known = false;
    for (const char *c = name; c < end; c++) capital |= *c >= 'A' && *c <= 'Z';
    for (size_t i = 0; i < sizeof dcgm / sizeof dcgm[0]; i++)
      known |= (size_t)(end - name) == strlen(dcgm[i]) && strncmp(name, dcgm[i], end - name) == 0;
    if (capital && !known)
      CHECK_FAIL_("label name %.*s has capitals and is not DCGM's", (int)(end - name), name);
  }
}

void check_promtool_metrics(const char *text, const char *path) {
  if (system("command -v promtool >/dev/null 2>&1") != 0)
    CHECK_FAIL_("%s",
                "promtool is not installed (Debian: apt-get install prometheus; scripts/gpulab "
                "test installs it): /metrics cannot be checked");
  check_label_names(text);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
  FILE *out = popen(cmd, "r");
  CHECK(out != NULL);
  char line[512];
  int complaints = 0;
  while (fgets(line, sizeof line, out)) {
    fputs(line, stderr);
    if (!strstr(line, "label names should be written in 'snake_case' not 'camelCase'"))
      complaints++;
  }
  int status = pclose(out);
  CHECK(status != -1 && WIFEXITED(status));
  CHECK_INT_EQ(complaints, 0);
  if (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3) /* 3: lint problems, all taken */
    CHECK_FAIL_("promtool check metrics exited %d", WEXITSTATUS(status));
}

long long http_metric(struct gpulabd *d, const char *name) {
  struct http_reply r;
  http_get(d, "/metrics", &r);
  CHECK_INT_EQ(r.status, 200);
  char key[96];
  snprintf(key, sizeof key, "\n%s ", name);
  const char *at = strstr(r.body, key);
  if (!at) CHECK_FAIL_("%s is not in /metrics", name);
  long long v = atoll(at + strlen(key));
  http_reply_free(&r);
  return v;
}
