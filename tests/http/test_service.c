/* gpulabd as a shared service: tokens and who sees what, per-client limits (queue,
 * buffer bytes, rate), start-up refusals, TLS, connection limits, the access log
 * and the Prometheus metrics. Against real gpulabd processes on loopback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/http_client.h"

#define ALICE "alice-token-0123456789"
#define BOB "bob-token-0123456789abc"
#define ROOT "root-token-0123456789abc"
#define SMALL "{\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1}"

static char dir[64];

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
  http_client_request(c, method, path, body ? "application/json" : NULL, body, body ? strlen(body) : 0, 0, r);
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
  write_file(tokens, "# name, limits\n" ALICE " alice max_queued=2 max_buffer_bytes=1000\n"
                     BOB " bob rate=2\n" ROOT " root admin\n");
  const char *args[] = {"--backend", "cpu", "--streams", "1", "--tokens", tokens, "--access-log",
                        access, NULL};
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
  http_client_request(&c, "POST", "/buffers?shape=200", "application/octet-stream", (const char *)data,
                      sizeof data, 0, &r);
  CHECK_STATUS(&r, 201);
  http_reply_free(&r);
  http_client_request(&c, "POST", "/buffers?shape=100", "application/octet-stream", (const char *)data,
                      400, 0, &r);
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

  /* The access log: one JSON line per request, with the client's name. */
  FILE *f = fopen(access, "r");
  CHECK(f != NULL);
  char line[2048];
  int lines = 0, named = 0;
  while (fgets(line, sizeof line, f)) {
    json_error_t je;
    json_t *j = json_loads(line, 0, &je);
    CHECK(j != NULL);
    CHECK(json_at(j, "time") && json_at(j, "method") && json_at(j, "route") &&
          json_at(j, "status") && json_at(j, "bytes") && json_at(j, "duration_ms"));
    if (json_is_string(json_at(j, "client")) && !strcmp(json_string_value(json_at(j, "client")), "alice")) named++;
    json_decref(j);
    lines++;
  }
  fclose(f);
  CHECK(lines >= 10 && named >= 3);
  http_client_close(&c);
  gpulabd_stop(&d);
}

/* /metrics in Prometheus' text format, checked by promtool (which must be installed). */
static void test_metrics(struct gpulabd *d) {
  struct http_reply r;
  http_post_json(d, "/transpose", SMALL, &r);
  http_reply_free(&r);
  http_request(d, "GET", "/metrics", NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK(strstr(r.content_type, "text/plain") != NULL);
  CHECK(strstr(r.body, "gpulab_http_requests_total{route=\"/transpose\",method=\"POST\",status=\"200\"} 1"));
  CHECK(strstr(r.body, "gpulab_jobs_total{type=\"transpose\",outcome=\"done\"} 1"));
  CHECK(strstr(r.body, "gpulab_job_queue_wait_seconds_bucket"));
  CHECK(strstr(r.body, "gpulab_jobs{state=\"queued\"} 0"));
  CHECK(strstr(r.body, "gpulab_device_memory_used_bytes{device=\"0\""));
  CHECK(strstr(r.body, "gpulab_jobs_inline_total ")); /* test_inline checks its value */
  char path[128];
  snprintf(path, sizeof path, "%s/metrics.txt", dir);
  write_file(path, r.body);
  http_reply_free(&r);
  if (system("command -v promtool >/dev/null 2>&1") != 0)
    CHECK_FAIL_("%s is not installed: the exposition cannot be checked (apt-get install "
                "prometheus; scripts/gpulab test installs it)", "promtool");
  char cmd[256];
  snprintf(cmd, sizeof cmd, "promtool check metrics < %s", path);
  CHECK_INT_EQ(system(cmd), 0);
}

/* The value of an unlabelled counter in /metrics. */
static long long metric(struct gpulabd *d, const char *name) {
  struct http_reply r;
  http_request(d, "GET", "/metrics", NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 200);
  char key[96];
  snprintf(key, sizeof key, "\n%s ", name);
  const char *at = strstr(r.body, key);
  CHECK(at != NULL);
  long long v = atoll(at + strlen(key));
  http_reply_free(&r);
  return v;
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
    ran = metric(&d, "gpulab_jobs_inline_total");
  }
  CHECK_INT_EQ(ran, 1);
  http_post_json(&d, "/transpose", "{\"m\":200,\"n\":200,\"batches\":1,\"reps\":1}", &r); /* 320 KB */
  CHECK_INT_EQ(r.status, 200);
  CHECK_STR_EQ(JSTR(r.json, "state"), "done");
  http_reply_free(&r);
  http_post_json(&d, "/transpose?wait=0", SMALL, &r);
  CHECK(r.status == 202 || r.status == 200); /* 200 when a worker was quicker */
  http_reply_free(&r);
  CHECK_INT_EQ(metric(&d, "gpulab_jobs_inline_total"), 1);
  gpulabd_stop(&d);

  const char *off[] = {"--backend", "cpu", "--inline-max-bytes", "0", NULL};
  gpulabd_start(off, &d);
  for (int i = 0; i < 5; i++) {
    http_post_json(&d, "/transpose", SMALL, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_STR_EQ(JSTR(r.json, "state"), "done");
    http_reply_free(&r);
  }
  CHECK_INT_EQ(metric(&d, "gpulab_jobs_inline_total"), 0);
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
  CHECK(n <= 0);                        /* closed (or reset), with no answer */
  CHECK((double)time(NULL) - t0 <= 4);  /* by the timeout, not by our 5 s read limit */
  close(fd);
  /* One byte every 0.4 s never leaves the connection idle, but its head is overdue
   * after the timeout (2 s here): dropped all the same. */
  fd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK_INT_EQ(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  const char *head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
  int sent = 0, refused = 0;
  for (size_t i = 0; head[i] && !refused; i++) {
    if (send(fd, head + i, 1, MSG_NOSIGNAL) != 1) refused = 1;
    else sent++;
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
           "-subj /CN=127.0.0.1 >/dev/null 2>&1", key, cert);
  if (system("command -v openssl >/dev/null 2>&1") != 0)
    CHECK_FAIL_("%s is not installed: no certificate for the TLS test (apt-get install openssl; "
                "scripts/gpulab test installs it)", "openssl");
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

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/gpulab-service-XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  test_start_refusals();
  test_tokens();
  test_connection_limit();
  const char *args[] = {"--backend", "cpu", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  test_metrics(&d);
  gpulabd_stop(&d);
  test_inline();
  test_no_store();
  test_tls();
  test_idle_timeout();
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  (void)!system(cmd);
  printf("test_service: ok\n");
  return 0;
}
