/* gpulabd as a shared service: tokens and who sees what, per-client limits (queue,
 * buffer bytes, rate), start-up refusals, TLS, connection limits, the access log
 * and the Prometheus metrics. Against real gpulabd processes on loopback. */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tests/http_client.h"
#include "tests/runner.h"

#define ALICE "alice-token-0123456789"
#define BOB "bob-token-0123456789abc"
#define ROOT "root-token-0123456789abc"
#define SMALL "{\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1}"

static const char *dir; /* test_dir() */

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* A request with a token (NULL: none) on c. */
static void ask(struct http_client *c, const char *method, const char *path, const char *token,
                const char *body, struct http_reply *r) {
  snprintf(c->token, sizeof c->token, "%s", token ? token : "");
  http_client_request(c, method, path, body ? "application/json" : NULL, body,
                      body ? strlen(body) : 0, 0, r);
  c->token[0] = '\0';
}

static void test_start_refusals(void) {
  char log[8192], path[128];
  int status;
  struct gpulabd d;
  /* Any address but loopback needs tokens. */
  const char *open_args[] = {"--backend", "cpu", "--host", "0.0.0.0", NULL};
  CHECK_INT_EQ(gpulabd_try_start(open_args, &d, log, sizeof log, &status), -1);
  CHECK_INT_EQ(status, 2);
  CHECK(strstr(log, "without --tokens") != NULL);
  /* A token file with a bad line is refused, naming the line. */
  snprintf(path, sizeof path, "%s/bad-tokens", dir);
  write_file(path, "# clients\n" ALICE " alice\nshort bob\n");
  const char *bad_args[] = {"--backend", "cpu", "--tokens", path, NULL};
  CHECK_INT_EQ(gpulabd_try_start(bad_args, &d, log, sizeof log, &status), -1);
  CHECK_INT_EQ(status, 2);
  char where[160];
  snprintf(where, sizeof where, "%s:3:", path);
  CHECK(strstr(log, where) != NULL);
  write_file(path, ALICE " alice frequency=3\n");
  CHECK_INT_EQ(gpulabd_try_start(bad_args, &d, log, sizeof log, &status), -1);
  CHECK(strstr(log, ":1: unknown option") != NULL);
}

static void test_tokens(void) {
  char tokens[128], access[128];
  snprintf(tokens, sizeof tokens, "%s/tokens", dir);
  snprintf(access, sizeof access, "%s/access.log", dir);
  write_file(tokens, "# name, limits\n" ALICE " alice max_queued=2 max_buffer_bytes=1000\n" BOB
                     " bob rate=2\n" ROOT " root admin\n");
  const char *args[] = {"--backend", "cpu",          "--streams", "1", "--tokens",
                        tokens,      "--access-log", access,      NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  struct http_client c;
  http_client_open(&c, d.port);
  struct http_reply r;

  ask(&c, "GET", "/health", NULL, NULL, &r); /* health needs no token */
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
  ask(&c, "GET", "/jobs", NULL, NULL, &r);
  CHECK_ERROR(&r, 401, "missing_token", NULL);
  http_reply_free(&r);
  ask(&c, "POST", "/transpose", "alice-token-0123456789X", SMALL, &r);
  CHECK_ERROR(&r, 401, "invalid_token", NULL);
  http_reply_free(&r);

  /* alice's job: bob does not see it (404, not 403), root does. */
  ask(&c, "POST", "/transpose", ALICE, SMALL, &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "client"), "alice");
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", JINT(r.json, "id"));
  http_reply_free(&r);
  ask(&c, "GET", path, BOB, NULL, &r);
  CHECK_ERROR(&r, 404, "job_not_found", "id");
  http_reply_free(&r);
  ask(&c, "DELETE", path, BOB, NULL, &r);
  CHECK_ERROR(&r, 404, "job_not_found", "id");
  http_reply_free(&r);
  ask(&c, "GET", path, ROOT, NULL, &r);
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
  ask(&c, "GET", "/jobs", BOB, NULL, &r);
  CHECK_INT_EQ(json_array_size(json_at(r.json, "jobs")), 0);
  http_reply_free(&r);
  ask(&c, "GET", "/jobs", ROOT, NULL, &r);
  CHECK_INT_EQ(json_array_size(json_at(r.json, "jobs")), 1);
  http_reply_free(&r);
  /* bob cannot read alice's job as an input either. */
  char body[160];
  snprintf(body, sizeof body, "{\"a\":{\"job\":%s},\"variant\":\"naive\"}", path + 6);
  ask(&c, "POST", "/transpose", BOB, body, &r);
  CHECK_ERROR(&r, 404, "job_not_found", "a");
  http_reply_free(&r);

  /* alice's buffer quota: 1000 bytes. */
  float data[200] = {0};
  snprintf(c.token, sizeof c.token, "%s", ALICE);
  http_client_request(&c, "POST", "/buffers?shape=200", "application/octet-stream",
                      (const char *)data, sizeof data, 0, &r);
  CHECK_STATUS(&r, 201);
  http_reply_free(&r);
  http_client_request(&c, "POST", "/buffers?shape=100", "application/octet-stream",
                      (const char *)data, 400, 0, &r);
  CHECK_ERROR(&r, 413, "quota_exceeded", NULL);
  http_reply_free(&r);
  c.token[0] = '\0';
  ask(&c, "GET", "/buffers", BOB, NULL, &r);
  CHECK_INT_EQ(json_array_size(json_at(r.json, "buffers")), 0);
  http_reply_free(&r);

  /* bob: 2 jobs per second, bursts of 4; the next is told when to come back. */
  int limited = 0;
  for (int i = 0; i < 6; i++) {
    ask(&c, "POST", "/transpose?wait=0", BOB, SMALL, &r);
    if (r.status == 429) {
      CHECK_ERROR(&r, 429, "rate_limited", NULL);
      CHECK(r.retry_after != NULL);
      limited++;
    }
    http_reply_free(&r);
  }
  CHECK(limited >= 1);

  /* The access log: one JSON line per request, with the client's name, and the job
   * a request made or named (alice's job: her POST, root's GET). */
  FILE *f = fopen(access, "r");
  CHECK(f != NULL);
  char line[2048];
  int lines = 0, named = 0, with_job = 0;
  long long alice_job = atoll(path + 6);
  while (fgets(line, sizeof line, f)) {
    json_error_t je;
    json_t *j = json_loads(line, 0, &je);
    CHECK(j != NULL);
    CHECK(json_at(j, "time") && json_at(j, "method") && json_at(j, "route") &&
          json_at(j, "status") && json_at(j, "bytes") && json_at(j, "duration_ms"));
    if (json_is_string(json_at(j, "client")) &&
        !strcmp(json_string_value(json_at(j, "client")), "alice"))
      named++;
    int status = (int)json_integer_value(json_at(j, "status"));
    if ((status == 200 || status == 202) && json_integer_value(json_at(j, "job")) == alice_job)
      with_job++;
    if (status == 404) CHECK(json_is_null(json_at(j, "job"))); /* bob's look at it: not named */
    json_decref(j);
    lines++;
  }
  fclose(f);
  CHECK(lines >= 10 && named >= 3);
  CHECK_INT_EQ(with_job, 2); /* alice's POST, root's GET */
  http_client_close(&c);
  gpulabd_stop(&d);
}

/* The value of the sample that starts with prefix (name and labels, as rendered) in
 * text; fails the test when there is none. */
static double sample(const char *text, const char *prefix) {
  for (const char *at = text; (at = strstr(at, prefix)); at++)
    if (at == text || at[-1] == '\n') {
      const char *value = at + strlen(prefix);
      while (*value && *value != ' ') value++; /* the rest of the labels, if prefix stops early */
      return atof(value);
    }
  CHECK_FAIL_("no sample %s in /metrics", prefix);
  return 0;
}

/* /proc/<pid>/fd's entries: the open descriptors of gpulabd, as the test sees them. */
static int open_fds_of(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  DIR *dir = opendir(path);
  CHECK(dir != NULL);
  int n = 0;
  for (struct dirent *de; (de = readdir(dir));) n += de->d_name[0] != '.';
  closedir(dir);
  return n;
}

/* The first "model name" of /proc/cpuinfo ("" without one), as the CPU backend names
 * its device. */
static void cpu_model(char *buf, size_t len) {
  snprintf(buf, len, "%s", "");
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
      const char *v = strchr(line, ':') + 1;
      while (*v == ' ' || *v == '\t') v++;
      snprintf(buf, len, "%.*s", (int)strcspn(v, "\n"), v);
      break;
    }
  if (f) fclose(f);
}

/* /metrics in Prometheus' text format, checked by promtool (which must be installed):
 * request durations by route pattern and method (a path under /v1 counted with its
 * alias), the process's metrics against /proc/<pid>, gpulab_build_info, and the device
 * series labelled as the DCGM exporter labels a GPU. */
static void test_metrics(struct gpulabd *d) {
  struct http_reply r;
  http_post_json(d, "/transpose", SMALL, &r);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  char path[128];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  http_get(d, path, &r);
  http_reply_free(&r);
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  http_get(d, path, &r);
  CHECK_INT_EQ(r.status, 200);
  http_reply_free(&r);
  http_request(d, "GET", "/metrics", NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK(strstr(r.content_type, "text/plain") != NULL);
  const char *m = r.body;
  CHECK(strstr(
      m, "gpulab_http_requests_total{route=\"/transpose\",method=\"POST\",status=\"200\"} 1"));
  CHECK(strstr(m,
               "gpulab_http_requests_total{route=\"/jobs/{id}\",method=\"GET\",status=\"200\"} 2"));
  /* Durations by route and method, in buckets about 2x apart from 50 us to 300 s. */
  CHECK_INT_EQ(
      sample(m, "gpulab_http_request_duration_seconds_count{route=\"/jobs/{id}\",method=\"GET\"}"),
      2);
  CHECK_INT_EQ(
      sample(m, "gpulab_http_request_duration_seconds_count{route=\"/transpose\",method=\"POST\"}"),
      1);
  CHECK_INT_EQ(
      sample(
          m,
          "gpulab_http_request_duration_seconds_bucket{route=\"/jobs/{id}\",method=\"GET\",le=\"+Inf\"}"),
      2);
  CHECK(strstr(
      m,
      "gpulab_http_request_duration_seconds_bucket{route=\"/transpose\",method=\"POST\",le=\"5e-05\"}"));
  CHECK(strstr(
      m,
      "gpulab_http_request_duration_seconds_bucket{route=\"/transpose\",method=\"POST\",le=\"300\"}"));
  CHECK(!strstr(m, "route=\"/jobs/1\"") && !strstr(m, "route=\"/v1/")); /* patterns, not paths */
  int n_bounds = 0;
  double last = 0;
  for (
      const char *at = m;
      (at = strstr(
           at,
           "gpulab_http_request_duration_seconds_bucket{route=\"/transpose\",method=\"POST\",le=\""));
      at++) {
    const char *le = strstr(at, "le=\"") + 4;
    if (*le == '+') break;
    double bound = atof(le);
    CHECK(n_bounds == 0 || (bound / last >= 1.5 && bound / last <= 3.01));
    last = bound;
    n_bounds++;
  }
  CHECK(n_bounds >= 20 && last == 300);
  /* Jobs by type, outcome and device. */
  CHECK(strstr(m, "gpulab_jobs_total{type=\"transpose\",outcome=\"done\",gpu=\"0\"} 1"));
  CHECK(strstr(
      m, "gpulab_job_queue_wait_seconds_bucket{type=\"transpose\",outcome=\"done\",gpu=\"0\",le="));
  CHECK(strstr(m, "gpulab_job_run_seconds_count{type=\"transpose\",outcome=\"done\",gpu=\"0\"} 1"));
  CHECK(strstr(m, "gpulab_jobs{state=\"queued\"} 0"));
  CHECK(strstr(m, "gpulab_jobs_inline_total ")); /* test_inline checks its value */
  /* The process, against what /proc says of it. */
  double cpu = sample(m, "process_cpu_seconds_total");
  CHECK(cpu >= 0 && cpu < 3600);
  double rss = sample(m, "process_resident_memory_bytes");
  CHECK(rss > 1e6 && rss < 64e9);
  int fds = open_fds_of(d->pid);
  double fds_seen = sample(m, "process_open_fds");
  CHECK(fds_seen >= fds - 3 && fds_seen <= fds + 3); /* connections come and go */
  CHECK(sample(m, "process_max_fds") >= fds_seen);
  CHECK(
      strstr(m, "gpulab_build_info{version=\"0.1.0\",cuda=\"\",driver=\"\"} 1")); /* CPU backend */
  /* The device as DCGM labels a GPU; the CPU backend has no UUID or PCI bus id, its
   * modelName is /proc/cpuinfo's model name. */
  char model[256], host[64] = "", labels[512];
  cpu_model(model, sizeof model);
  gethostname(host, sizeof host - 1);
  snprintf(labels, sizeof labels,
           "{gpu=\"0\",UUID=\"\",pci_bus_id=\"\",modelName=\"%s\",Hostname=\"%s\"", model, host);
  char key[640];
  snprintf(key, sizeof key, "gpulab_device_memory_used_bytes%s,backend=\"cpu\"}", labels);
  double used = sample(m, key);
  snprintf(key, sizeof key, "gpulab_device_memory_total_bytes%s,backend=\"cpu\"}", labels);
  double total = sample(m, key);
  CHECK(total > 0 && used > 0 && used <= total);
  snprintf(key, sizeof key, "gpulab_device_healthy%s}", labels);
  CHECK_INT_EQ(sample(m, key), 1);
  CHECK(!strstr(m, "device=\"")); /* DCGM's device is "nvidia0": gpulab says gpu */
  CHECK(!strstr(m, "\ngpulab_device_utilization_ratio{")); /* no NVML on the CPU */
  snprintf(path, sizeof path, "%s/metrics.txt", dir);
  check_promtool_metrics(r.body, path);
  http_reply_free(&r);
}

/* Every route under /v1 as well: the same answers, Location under the prefix the
 * request came by, and 404 for what is neither. */
static void test_v1(struct gpulabd *d) {
  struct http_reply r;
  http_post_json(d, "/v1/transpose?wait=0", SMALL, &r);
  CHECK(r.status == 202 || r.status == 200);
  long long id = JINT(r.json, "id");
  if (r.status == 202) {
    char want[64];
    snprintf(want, sizeof want, "/v1/jobs/%lld", id);
    CHECK(r.location != NULL);
    CHECK_STR_EQ(r.location, want);
  }
  http_reply_free(&r);
  http_post_json(d, "/jobs?wait=0", "{\"type\":\"transpose\",\"params\":{\"m\":33,\"n\":47}}", &r);
  CHECK(r.status == 202 || r.status == 200);
  if (r.status == 202) CHECK(r.location && strncmp(r.location, "/jobs/", 6) == 0);
  http_reply_free(&r);
  json_decref(job_wait_final(d, id, 30));
  const char *same[][2] = {{"/v1/health", "/health"}, {"/v1/device", "/device"}, {"/v1/me", "/me"}};
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
    struct http_reply a, b;
    http_get(d, same[i][0], &a);
    http_get(d, same[i][1], &b);
    CHECK_INT_EQ(a.status, 200);
    CHECK_INT_EQ(a.status, b.status);
    CHECK(json_is_object(a.json) && json_object_size(a.json) == json_object_size(b.json));
    const char *key;
    json_t *value;
    json_object_foreach(a.json, key, value) CHECK(json_object_get(b.json, key) != NULL);
    http_reply_free(&a);
    http_reply_free(&b);
  }
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  http_get(d, path, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_INT_EQ(JINT(r.json, "id"), id);
  http_reply_free(&r);
  http_get(d, "/v1/openapi.json", &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK(strstr(r.body, "/v1") != NULL); /* its servers entry names the prefix */
  http_reply_free(&r);
  http_request(d, "DELETE", "/v1/health", NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 405);
  http_reply_free(&r);
  const char *missing[] = {"/v1x/health", "/v2/health", "/v1/v1/health", "/v1/nope"};
  for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
    http_get(d, missing[i], &r);
    CHECK_INT_EQ(r.status, 404);
    http_reply_free(&r);
  }
  http_get(d, "/v1", &r); /* the index, as "/" */
  CHECK_INT_EQ(r.status, 200);
  CHECK(json_is_array(json_object_get(r.json, "routes")));
  http_reply_free(&r);
}

/* A waited-for job within --inline-max-bytes runs on the HTTP thread (same result
 * as through a worker); a bigger one, an unwaited one, or any with the limit 0 go
 * through the workers. */
static void test_inline(void) {
  const char *args[] = {"--backend", "cpu", "--inline-max-bytes", "100000", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  struct http_reply r;
  /* Inline only when a lane's worker sleeps: right after start-up one may not yet. */
  long long ran = 0;
  for (int i = 0; i < 50 && ran == 0; i++) {
    http_post_json(&d, "/transpose", SMALL, &r); /* 2 x 33 x 47 floats: 12 KB */
    CHECK_INT_EQ(r.status, 200);
    CHECK_STR_EQ(JSTR(r.json, "state"), "done");
    CHECK(json_is_true(json_object_get(json_at(r.json, "result"), "passed")));
    http_reply_free(&r);
    ran = http_metric(&d, "gpulab_jobs_inline_total");
  }
  CHECK_INT_EQ(ran, 1);
  http_post_json(&d, "/transpose", "{\"m\":200,\"n\":200,\"batches\":1,\"reps\":1}",
                 &r); /* 320 KB */
  CHECK_INT_EQ(r.status, 200);
  CHECK_STR_EQ(JSTR(r.json, "state"), "done");
  http_reply_free(&r);
  http_post_json(&d, "/transpose?wait=0", SMALL, &r);
  CHECK(r.status == 202 || r.status == 200); /* 200 when a worker was quicker */
  http_reply_free(&r);
  CHECK_INT_EQ(http_metric(&d, "gpulab_jobs_inline_total"), 1);
  gpulabd_stop(&d);

  const char *off[] = {"--backend", "cpu", "--inline-max-bytes", "0", NULL};
  gpulabd_start(off, &d);
  for (int i = 0; i < 5; i++) {
    http_post_json(&d, "/transpose", SMALL, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_STR_EQ(JSTR(r.json, "state"), "done");
    http_reply_free(&r);
  }
  CHECK_INT_EQ(http_metric(&d, "gpulab_jobs_inline_total"), 0);
  gpulabd_stop(&d);
}

/* --db none: no store; jobs run, answer and list from memory all the same, and no
 * database file appears. */
static void test_no_store(void) {
  char cwd[512];
  CHECK(getcwd(cwd, sizeof cwd) != NULL);
  CHECK_INT_EQ(chdir(dir), 0); /* where a default ./gpulab.db would go */
  const char *args[] = {"--backend", "cpu", "--db", "none", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  struct http_reply r;
  http_post_json(&d, "/transpose", SMALL, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_STR_EQ(JSTR(r.json, "state"), "done");
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  json_t *job = http_get_json(&d, path);
  CHECK_STR_EQ(JSTR(job, "state"), "done");
  json_decref(job);
  json_t *list = http_get_json(&d, "/jobs");
  CHECK_INT_EQ(json_array_size(json_at(list, "jobs")), 1);
  json_decref(list);
  gpulabd_stop(&d);
  struct stat st;
  CHECK(stat("gpulab.db", &st) != 0 && stat("none", &st) != 0);
  CHECK_INT_EQ(chdir(cwd), 0);
}

/* Past --max-connections-per-ip the next connection from that address is refused. */
static void test_connection_limit(void) {
  const char *args[] = {"--backend", "cpu", "--max-connections-per-ip", "2", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d); /* its own client holds no connection yet */
  struct http_client c[3];
  struct http_reply r;
  for (int i = 0; i < 3; i++) {
    http_client_open(&c[i], d.port);
    http_client_request(&c[i], "GET", "/health", NULL, NULL, 0, HTTP_TRANSPORT_OK, &r);
    CHECK_INT_EQ(r.status, i < 2 ? 200 : 0); /* keep-alive: the first two stay open */
    http_reply_free(&r);
  }
  for (int i = 0; i < 3; i++) http_client_close(&c[i]);
  gpulabd_stop(&d);
}

static size_t discard(char *p, size_t size, size_t n, void *arg) { return size * n; }

/* A client that opens a connection and then sends too slowly is dropped after
 * --timeout seconds without a byte. */
static void test_idle_timeout(void) {
  const char *args[] = {"--backend", "cpu", "--timeout", "2", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  CHECK_INT_EQ(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  CHECK(write(fd, "GET /hea", 8) == 8); /* half a request line, then nothing */
  struct timeval wait = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char buf[64];
  double t0 = (double)time(NULL);
  ssize_t n = read(fd, buf, sizeof buf);
  CHECK(n <= 0);                       /* closed (or reset), with no answer */
  CHECK((double)time(NULL) - t0 <= 4); /* by the timeout, not by our 5 s read limit */
  close(fd);
  /* One byte every 0.4 s never leaves the connection idle, but its head is overdue
   * after the timeout (2 s here): dropped all the same. */
  fd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK_INT_EQ(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  const char *head =
      "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
  int sent = 0, refused = 0;
  for (size_t i = 0; head[i] && !refused; i++) {
    if (send(fd, head + i, 1, MSG_NOSIGNAL) != 1)
      refused = 1;
    else
      sent++;
    usleep(400 * 1000);
  }
  CHECK(refused || read(fd, buf, sizeof buf) <= 0); /* cut off before the head was whole */
  CHECK(sent < (int)strlen(head));
  close(fd);
  gpulabd_stop(&d);
}

static void test_tls(void) {
  char cert[128], key[128], cmd[512];
  snprintf(cert, sizeof cert, "%s/cert.pem", dir);
  snprintf(key, sizeof key, "%s/key.pem", dir);
  snprintf(cmd, sizeof cmd,
           "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s -out %s -days 1 "
           "-subj /CN=127.0.0.1 >/dev/null 2>&1",
           key, cert);
  if (system("command -v openssl >/dev/null 2>&1") != 0)
    CHECK_FAIL_(
        "%s is not installed: no certificate for the TLS test (apt-get install openssl; "
        "scripts/gpulab test installs it)",
        "openssl");
  if (system(cmd) != 0) CHECK_FAIL_("openssl could not make a certificate: %s", cmd);
  const char *args[] = {"--backend", "cpu", "--tls-cert", cert, "--tls-key", key, NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  /* HTTPS answers (the certificate is self-signed: not verified here)... */
  CURL *h = curl_easy_init();
  char url[64];
  long status = 0;
  snprintf(url, sizeof url, "https://127.0.0.1:%d/health", d.port);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
  CHECK_INT_EQ(curl_easy_perform(h), CURLE_OK);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  CHECK_INT_EQ(status, 200);
  /* ...and plain HTTP on the same port does not. */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/health", d.port);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
  status = 0;
  CURLcode rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  CHECK(rc != CURLE_OK || status != 200);
  curl_easy_cleanup(h);
  gpulabd_stop(&d);
}

static int make_dir(void) {
  dir = test_dir();
  return 0;
}

/* /metrics and /v1 on one plain gpulabd of their own. */
static void test_metrics_and_v1(void) {
  const char *args[] = {"--backend", "cpu", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  test_metrics(&d);
  test_v1(&d);
  gpulabd_stop(&d);
}

static const struct test_case cases[] = {
    TEST(test_start_refusals),
    TEST(test_tokens),
    TEST(test_connection_limit),
    TEST(test_metrics_and_v1),
    TEST(test_inline),
    TEST(test_no_store),
    TEST(test_tls),
    TEST(test_idle_timeout),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = make_dir};
