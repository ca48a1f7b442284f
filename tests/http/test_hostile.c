/* Requests that try to break gpulabd for everyone, over raw sockets where curl
 * would not send them: stalled and trickled bodies (the whole request is bounded by
 * --timeout), connections from a few addresses that would fill --max-connections,
 * bytes that are not UTF-8 in paths, queries and names (each a JSON error with its
 * own code, and an access-log line), Content-Lengths libmicrohttpd refuses, and
 * made-up methods that would break or fill /metrics (checked by promtool, which must
 * be installed: scripts/gpulab test installs Debian's prometheus). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/http_client.h"
#include "tests/runner.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A TCP connection to 127.0.0.1:port leaving from the address from (127/8 is all
 * loopback on Linux), or -1 when it cannot be made. */
static int raw_connect(const char *from, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK(fd >= 0);
  struct sockaddr_in local = {.sin_family = AF_INET};
  inet_pton(AF_INET, from, &local.sin_addr);
  CHECK_INT_EQ(bind(fd, (struct sockaddr *)&local, sizeof local), 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void send_text(int fd, const char *text) {
  size_t n = strlen(text);
  CHECK(send(fd, text, n, MSG_NOSIGNAL) == (ssize_t)n);
}

/* Reads until the peer closes, timeout_s at most; what came is in buf (NUL-ended).
 * Returns the seconds it took, or -1 when the connection was still open. */
static double read_until_closed(int fd, double timeout_s, char *buf, size_t cap) {
  double start = now_s(), end = start + timeout_s;
  size_t len = 0;
  buf[0] = '\0';
  for (;;) {
    int ms = (int)((end - now_s()) * 1000);
    if (ms <= 0) return -1;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0) continue;
    char chunk[4096];
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return now_s() - start; /* closed (or reset) */
    size_t take = (size_t)n < cap - 1 - len ? (size_t)n : cap - 1 - len;
    memcpy(buf + len, chunk, take);
    len += take;
    buf[len] = '\0';
  }
}

#define STALLED_HEAD                                                                    \
  "POST /jobs?wait=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" \
  "Content-Length: 10\r\n\r\n"

/* --timeout 2: a body that stalls after one byte, and one trickled a byte per
 * 0.5 s (never idle for 2 s), are both dropped about 2 s after the connection
 * began, as a head would be. */
static void test_stalled_bodies(void) {
  const char *args[] = {"--backend", "cpu", "--timeout", "2", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  char buf[4096];
  double t0 = now_s();
  int fd = raw_connect("127.0.0.1", d.port);
  CHECK(fd >= 0);
  send_text(fd, STALLED_HEAD "{");
  double took = read_until_closed(fd, 8, buf, sizeof buf);
  close(fd);
  printf("stalled body: closed after %.2f s\n", took);
  CHECK(took >= 0);                         /* closed, not left open */
  CHECK(now_s() - t0 <= 3.5);               /* by --timeout (2 s, checked every 0.25 s) */
  CHECK(strstr(buf, "HTTP/1.1 2") == NULL); /* nothing was accepted */

  t0 = now_s();
  fd = raw_connect("127.0.0.1", d.port);
  CHECK(fd >= 0);
  send_text(fd,
            "POST /jobs?wait=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n");
  int sent = 0;
  bool cut = false;
  for (; sent < 100 && !cut; sent++) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 500) > 0 || send(fd, " ", 1, MSG_NOSIGNAL) != 1) cut = true;
  }
  took = now_s() - t0;
  printf("trickled body: cut after %d bytes, %.2f s\n", sent, took);
  CHECK(cut);
  CHECK(took <= 3.5);
  close(fd);
  /* And gpulabd still answers, and accepted nothing from either. */
  json_t *list = http_get_json(&d, "/jobs");
  CHECK_INT_EQ(json_array_size(json_at(list, "jobs")), 0);
  json_decref(list);
  gpulabd_stop(&d);
}

/* POSTs total bytes of raw float32 to /buffers at bytes_per_s, in chunks of 1 KiB: the
 * answer's status, or 0 when gpulabd cut the connection first; *took its seconds. */
static int paced_upload(int port, int total, double bytes_per_s, double *took) {
  double t0 = now_s();
  int fd = raw_connect("127.0.0.1", port);
  CHECK(fd >= 0);
  char head[256];
  snprintf(head, sizeof head,
           "POST /buffers?shape=%d HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n",
           total / 4, total);
  send_text(fd, head);
  static const char zeros[1024];
  bool cut = false;
  for (int sent = 0; sent < total && !cut;) {
    int n = total - sent < (int)sizeof zeros ? total - sent : (int)sizeof zeros;
    struct pollfd p = {.fd = fd, .events = POLLIN}; /* anything read now: cut (or refused) */
    if (poll(&p, 1, (int)(1000.0 * n / bytes_per_s)) > 0 ||
        send(fd, zeros, (size_t)n, MSG_NOSIGNAL) != n)
      cut = true;
    sent += n;
  }
  char buf[4096];
  read_until_closed(fd, 5, buf, sizeof buf);
  close(fd);
  *took = now_s() - t0;
  int status = 0;
  if (sscanf(buf, "HTTP/1.1 %d", &status) != 1) status = 0;
  return status;
}

/* --timeout 2 --min-upload-rate 4096: each 4 KiB of a body extend its deadline by a
 * second, so 32 KiB sent at 8 KiB/s (4 s, twice the plain deadline) are taken, while
 * the same body at 1 KiB/s is cut (after about 2.7 s: 2 s + 2.7 KiB / 4 KiB/s); with
 * --min-upload-rate 0 the 8 KiB/s upload is cut at --timeout as any body is. */
static void test_upload_rate(void) {
  const char *args[] = {"--backend", "cpu", "--timeout", "2", "--min-upload-rate", "4096", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  double took;
  int status = paced_upload(d.port, 32768, 8192, &took);
  printf("32 KiB at 8 KiB/s: %d after %.2f s\n", status, took);
  CHECK_INT_EQ(status, 201); /* outlived --timeout: its bytes moved the deadline */
  status = paced_upload(d.port, 32768, 1024, &took);
  printf("32 KiB at 1 KiB/s: %d after %.2f s\n", status, took);
  CHECK_INT_EQ(status, 0); /* cut, nothing answered */
  json_t *list = http_get_json(&d, "/buffers");
  CHECK_INT_EQ(json_array_size(json_at(list, "buffers")), 1); /* the first one only */
  json_decref(list);
  gpulabd_stop(&d);

  const char *fixed[] = {"--backend", "cpu", "--timeout", "2", "--min-upload-rate", "0", NULL};
  gpulabd_start(fixed, &d);
  status = paced_upload(d.port, 32768, 8192, &took);
  printf("32 KiB at 8 KiB/s, --min-upload-rate 0: %d after %.2f s\n", status, took);
  CHECK_INT_EQ(status, 0);
  gpulabd_stop(&d);
}

/* --max-connections 12: each address may hold at most a quarter (3), so two
 * addresses that open every connection they can, and stall them, leave room:
 * a third address still gets its /health. */
static void test_room_for_others(void) {
  const char *args[] = {"--backend", "cpu", "--max-connections", "12", "--timeout", "30", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  int fds[2][12], held[2] = {0, 0};
  const char *from[2] = {"127.0.0.2", "127.0.0.3"};
  for (int a = 0; a < 2; a++)
    for (int i = 0; i < 12; i++) {
      fds[a][i] = raw_connect(from[a], d.port);
      if (fds[a][i] >= 0) /* one over the limit may be closed already: not checked */
        (void)!send(fds[a][i], STALLED_HEAD "{", strlen(STALLED_HEAD "{"), MSG_NOSIGNAL);
    }
  usleep(300 * 1000);
  for (int a = 0; a < 2; a++)
    for (int i = 0; i < 12; i++) { /* those over the limit were closed at once */
      char buf[256];
      if (fds[a][i] >= 0 && read_until_closed(fds[a][i], 0.05, buf, sizeof buf) < 0) held[a]++;
    }
  printf("stalled connections held: %d from %s, %d from %s\n", held[0], from[0], held[1], from[1]);
  CHECK(held[0] <= 3 && held[1] <= 3);
  CHECK(held[0] >= 1 && held[1] >= 1);
  struct http_client c;
  http_client_open_from(&c, d.port, "127.0.0.4");
  struct http_reply r;
  http_client_request(&c, "GET", "/health", NULL, NULL, 0, 0, &r);
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
  http_client_close(&c);
  for (int a = 0; a < 2; a++)
    for (int i = 0; i < 12; i++)
      if (fds[a][i] >= 0) close(fds[a][i]);
  gpulabd_stop(&d);
}

static const char *dir; /* test_dir() */

/* Lines of the access log, each parsed (the caller decrefs); how many. */
static int read_log(const char *path, json_t **lines, int max) {
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  char line[4096];
  int n = 0;
  while (n < max && fgets(line, sizeof line, f)) {
    json_error_t je;
    lines[n] = json_loads(line, 0, &je);
    if (!lines[n]) CHECK_FAIL_("access log line %d is not JSON (%s): %s", n + 1, je.text, line);
    n++;
  }
  fclose(f);
  return n;
}

/* A name of n two-byte letters (é), as JSON text wants it. */
static const char *accented(int n) {
  static char buf[256];
  for (int i = 0; i < n; i++) memcpy(buf + 2 * i, "\xc3\xa9", 2);
  buf[2 * n] = '\0';
  return buf;
}

/* Paths and queries that are not UTF-8 once decoded get the answer the same route
 * gives any unknown id or value (not 500); names of accented letters longer than a
 * message keeps are cut at a character boundary; every request has its log line. */
static void test_invalid_utf8(void) {
  char access[96];
  snprintf(access, sizeof access, "%s/access.log", dir);
  const char *args[] = {"--backend", "cpu", "--access-log", access, NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  static const struct {
    const char *method, *path;
    long status;
    const char *code, *field;
  } cases[] = {
      {"GET", "/jobs/%ff", 404, "job_not_found", "id"},
      {"GET", "/nope%ff", 404, "not_found", NULL},
      {"GET", "/jobs?state=%ff", 400, "unknown_state", "state"},
      {"GET", "/jobs?type=%c3", 400, "unknown_type", "type"},
      {"DELETE", "/buffers/%c3", 404, "buffer_not_found", "id"},
      {"GET", "/static/%c0%ae%c0%ae/etc/passwd", 404, "not_found", NULL},
      {"GET", "/sweeps/%e2%82", 404, "sweep_not_found", "id"},
  };
  int requests = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct http_reply r;
    http_request(&d, cases[i].method, cases[i].path, NULL, NULL, 0, &r);
    CHECK_ERROR(&r, cases[i].status, cases[i].code, cases[i].field); /* JSON: valid UTF-8 */
    http_reply_free(&r);
    requests++;
  }
  /* Names of 30 to 40 accented letters, cut by the message or the field's size. */
  for (int n = 30; n <= 40; n += 5) {
    char body[512];
    struct http_reply r;
    snprintf(body, sizeof body, "{\"variant\":\"%s\"}", accented(n));
    http_post_json(&d, "/transpose", body, &r);
    CHECK_ERROR(&r, 400, "unknown_variant", "variant");
    http_reply_free(&r);
    snprintf(body, sizeof body, "{\"type\":\"transpose\",\"params\":{\"%s\":1}}", accented(n));
    http_post_json(&d, "/jobs", body, &r);
    CHECK(r.json != NULL);
    CHECK_INT_EQ(r.status, 400);
    CHECK_STR_EQ(JSTR(r.json, "code"), "unknown_field");
    CHECK(strncmp(JSTR(r.json, "field"), "params.\xc3\xa9", 9) == 0);
    http_reply_free(&r);
    snprintf(body, sizeof body, "{\"type\":\"%s\"}", accented(n));
    http_post_json(&d, "/jobs", body, &r);
    CHECK_ERROR(&r, 400, "unknown_type", "type");
    http_reply_free(&r);
    requests += 3;
  }
  gpulabd_stop(&d);
  json_t *lines[64];
  int n = read_log(access, lines, 64);
  CHECK_INT_EQ(n, requests);
  CHECK_STR_EQ(JSTR(lines[0], "path"), "/jobs/%ff"); /* as sent */
  CHECK_INT_EQ(JINT(lines[0], "status"), 404);
  for (int i = 0; i < n; i++) json_decref(lines[i]);
}

/* Content-Length: -1, or 23 digits: libmicrohttpd 0.9.75 answers these itself,
 * before gpulabd sees the request (400 and 413, an HTML body; its header block is
 * written twice), with no way for the application to answer instead: what gpulabd
 * can see to is that the connection is closed at once, nothing is accepted, the
 * service goes on, and the access log has the request. */
static void test_bad_content_length(void) {
  char access[96];
  snprintf(access, sizeof access, "%s/access-cl.log", dir);
  const char *args[] = {"--backend", "cpu", "--access-log", access, NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  static const struct {
    const char *length, *status;
  } cases[] = {{"-1", "HTTP/1.1 400 "},
               {"12345678901234567890123", "HTTP/1.1 413 "},
               {"1x", "HTTP/1.1 400 "}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int fd = raw_connect("127.0.0.1", d.port);
    CHECK(fd >= 0);
    char head[256], buf[4096];
    snprintf(head, sizeof head,
             "POST /jobs?wait=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             "Content-Type: application/json\r\nContent-Length: %s\r\n\r\n{}",
             cases[i].length);
    send_text(fd, head);
    double took = read_until_closed(fd, 5, buf, sizeof buf);
    close(fd);
    printf("Content-Length: %s: closed after %.3f s, answer starts '%.13s'\n", cases[i].length,
           took, buf);
    CHECK(took >= 0 && took < 2);
    CHECK(strncmp(buf, cases[i].status, strlen(cases[i].status)) == 0);
  }
  struct http_reply r;
  http_get(&d, "/health", &r);
  CHECK_STATUS(&r, 200);
  CHECK_INT_EQ(JINT(r.json, "jobs_submitted"), 0);
  http_reply_free(&r);
  gpulabd_stop(&d);
  json_t *lines[8];
  int n = read_log(access, lines, 8);
  CHECK_INT_EQ(n, 4); /* the three, and /health */
  CHECK_INT_EQ(JINT(lines[0], "status"), 400);
  CHECK_INT_EQ(JINT(lines[1], "status"), 413);
  CHECK_STR_EQ(JSTR(lines[0], "path"), "/jobs");
  for (int i = 0; i < n; i++) json_decref(lines[i]);
}

/* promtool check metrics on text (check_promtool_metrics). */
static void check_promtool(const char *text) {
  char path[96];
  snprintf(path, sizeof path, "%s/metrics.txt", dir);
  check_promtool_metrics(text, path);
}

/* The count of one request series in /metrics, 0 when absent. */
static long long request_count(struct gpulabd *d, const char *route, const char *method, int status,
                               char **page) {
  struct http_reply r;
  http_get(d, "/metrics", &r);
  CHECK_INT_EQ(r.status, 200);
  char key[160];
  snprintf(key, sizeof key, "gpulab_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} ",
           route, method, status);
  const char *at = strstr(r.body, key);
  long long n = at ? atoll(at + strlen(key)) : 0;
  if (page) *page = strdup(r.body);
  http_reply_free(&r);
  return n;
}

/* Methods from the network: one with a quote and a brace (a 405) must not end up
 * unescaped in /metrics, and 600 made-up ones are one "other" series, so that the
 * series cap stays free for real requests: GET /health is still counted after. */
static void test_metrics_methods(void) {
  const char *args[] = {"--backend", "cpu", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  struct http_reply r;
  http_request(&d, "X\"Y}", "/health", NULL, NULL, 0, &r);
  CHECK_ERROR(&r, 405, "method_not_allowed", NULL);
  http_reply_free(&r);
  for (int i = 0; i < 600; i++) {
    char method[16];
    snprintf(method, sizeof method, "M%03d", i);
    http_request(&d, method, i % 2 ? "/health" : "/nope", NULL, NULL, 0, &r);
    CHECK(r.status == 405 || r.status == 404);
    http_reply_free(&r);
  }
  long long health = request_count(&d, "/health", "GET", 200, NULL);
  HTTP_EXPECT(&d, "GET", "/health", 200, NULL, NULL);
  char *page;
  CHECK_INT_EQ(request_count(&d, "/health", "GET", 200, &page), health + 1);
  CHECK_INT_EQ(request_count(&d, "/health", "other", 405, NULL), 301); /* X"Y} and 300 */
  CHECK_INT_EQ(request_count(&d, "other", "other", 404, NULL), 300);
  CHECK(strstr(page, "X\"Y}") == NULL && strstr(page, "M001") == NULL);
  check_promtool(page);
  free(page);
  gpulabd_stop(&d);
}

static int make_dir(void) {
  dir = test_dir();
  return 0;
}

static const struct test_case cases[] = {
    TEST(test_invalid_utf8),
    TEST(test_bad_content_length),
    TEST(test_metrics_methods),
    TEST(test_stalled_bodies),
    TEST(test_upload_rate),
    TEST(test_room_for_others),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = make_dir};
