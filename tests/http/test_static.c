/* The dashboard's files as gpulabd serves them (server/http/static.c), against a real
 * gpulabd on the CPU backend: the page at GET /, content types, ETags and 304s, the
 * Content-Security-Policy, Chart.js from --chartjs and CodeMirror's three files from
 * --codemirror (and the page without them; a FIFO
 * there or in --web-root is a 404, not a hung thread),
 * --web-root, every traversal attempt a JSON 404; and the data the page reads:
 * GET /jobs?fields=result and the pipeline's per-stream timeline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http_client.h"
#include "kernels/core/experiment.h"
#include "runner.h"

#define CHARTJS "/usr/share/javascript/chart.js/chart.min.js"
#define CODEMIRROR "/usr/share/javascript/codemirror"
#define FAST "\"warmup\":1,\"batches\":2,\"reps\":1"

static struct gpulabd A; /* defaults: embedded files, Chart.js from CHARTJS */
static struct gpulabd B; /* --chartjs and --codemirror pointing at what does not exist */
static struct gpulabd C; /* --web-root a folder this test writes */

static const char *const assets[][2] = {
    {"/static/app.css", "text/css; charset=utf-8"},
    {"/static/common.js", "text/javascript; charset=utf-8"},
    {"/static/dashboard.js", "text/javascript; charset=utf-8"},
    {"/static/job.js", "text/javascript; charset=utf-8"},
    {"/static/app.js", "text/javascript; charset=utf-8"},
    {"/static/favicon.svg", "image/svg+xml"},
};

/* ---- a raw request: any headers, the path sent as written ---- */

struct raw_reply {
  long status;
  char headers[8192]; /* every header line, as received */
  size_t headers_len;
  char *body;
  size_t body_len;
};

static size_t on_raw_header(char *data, size_t size, size_t n, void *arg) {
  struct raw_reply *r = arg;
  size_t len = size * n;
  if (r->headers_len + len < sizeof r->headers) {
    memcpy(r->headers + r->headers_len, data, len);
    r->headers_len += len;
    r->headers[r->headers_len] = '\0';
  }
  return len;
}

static size_t on_raw_body(char *data, size_t size, size_t n, void *arg) {
  struct raw_reply *r = arg;
  size_t len = size * n;
  r->body = realloc(r->body, r->body_len + len + 1);
  CHECK(r->body != NULL);
  memcpy(r->body + r->body_len, data, len);
  r->body_len += len;
  r->body[r->body_len] = '\0';
  return len;
}

/* method path (sent as is: no dot-segment removal) with extra header lines (NULL-
 * terminated, or NULL). Free with raw_free. */
static void raw(struct gpulabd *d, const char *method, const char *path, const char *const *headers,
                struct raw_reply *out) {
  memset(out, 0, sizeof *out);
  out->body = calloc(1, 1);
  char url[1024];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", d->port, path);
  CURL *h = curl_easy_init();
  CHECK(h != NULL);
  struct curl_slist *list = NULL;
  for (int i = 0; headers && headers[i]; i++) list = curl_slist_append(list, headers[i]);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_raw_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_raw_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  if (strcmp(method, "HEAD") == 0)
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  else if (strcmp(method, "GET") != 0)
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) CHECK_FAIL_("%s %s: %s", method, path, curl_easy_strerror(rc));
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
  curl_slist_free_all(list);
  curl_easy_cleanup(h);
}

static void raw_free(struct raw_reply *r) {
  free(r->body);
  r->body = NULL;
}

/* The value of header name (case-insensitive), copied into buf; NULL when absent. */
static const char *header(const struct raw_reply *r, const char *name, char *buf, size_t len) {
  size_t n = strlen(name);
  for (const char *line = r->headers; *line;) {
    const char *end = strstr(line, "\r\n");
    size_t line_len = end ? (size_t)(end - line) : strlen(line);
    if (line_len > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      while (*v == ' ') v++;
      size_t vlen = (size_t)(line + line_len - v);
      if (vlen >= len) vlen = len - 1;
      memcpy(buf, v, vlen);
      buf[vlen] = '\0';
      return buf;
    }
    line += line_len + (end ? 2 : 0);
  }
  return NULL;
}

#define CHECK_HEADER(reply, name, want)                                       \
  do {                                                                        \
    char buf_[512];                                                           \
    const char *got_ = header((reply), (name), buf_, sizeof buf_);            \
    if (!got_) CHECK_FAIL_("no %s header in:\n%s", (name), (reply)->headers); \
    CHECK_STR_EQ(got_, (want));                                               \
  } while (0)

static const char *const html[] = {"Accept: text/html,application/xhtml+xml,*/*;q=0.8", NULL};

/* The CSP allows only the page's own origin: no inline code, no other host. */
static void check_csp(const struct raw_reply *r) {
  char csp[512];
  if (!header(r, "Content-Security-Policy", csp, sizeof csp))
    CHECK_FAIL_("no Content-Security-Policy in:\n%s", r->headers);
  CHECK(strstr(csp, "default-src 'self'"));
  CHECK(strstr(csp, "script-src 'self'"));
  CHECK(strstr(csp, "style-src 'self'"));
  CHECK(strstr(csp, "connect-src 'self'"));
  CHECK(strstr(csp, "object-src 'none'"));
  CHECK(strstr(csp, "frame-ancestors 'none'"));
  CHECK(!strstr(csp, "unsafe-inline"));
  CHECK(!strstr(csp, "unsafe-eval"));
  CHECK(!strstr(csp, "http"));
  CHECK(!strstr(csp, "*"));
}

/* ---- the page ---- */

static void test_page(void) {
  struct raw_reply r;
  raw(&A, "GET", "/", html, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_HEADER(&r, "Content-Type", "text/html; charset=utf-8");
  CHECK_HEADER(&r, "Vary", "Accept");
  CHECK_HEADER(&r, "X-Content-Type-Options", "nosniff");
  check_csp(&r);
  CHECK(strncasecmp(r.body, "<!doctype html>", 15) == 0);
  CHECK(strstr(r.body, "<script src=\"/static/app.js\""));
  CHECK(strstr(r.body, "<script src=\"/static/chart.min.js\""));
  CHECK(strstr(r.body, "<link rel=\"stylesheet\" href=\"/static/app.css\">"));
  /* Everything the CSP would block stays out: inline scripts, styles, handlers. */
  for (const char *p = r.body; (p = strstr(p, "<script")); p++)
    CHECK(strncmp(p, "<script src=", 12) == 0);
  CHECK(!strstr(r.body, "<style"));
  CHECK(!strstr(r.body, "style="));
  CHECK(!strstr(r.body, "onclick="));
  CHECK(!strstr(r.body, "javascript:"));
  /* Every file the page names is served. */
  for (const char *p = r.body; (p = strstr(p, "\"/static/")); p++) {
    char path[128];
    size_t n = strcspn(p + 1, "\"");
    CHECK(n < sizeof path);
    memcpy(path, p + 1, n);
    path[n] = '\0';
    if (strcmp(path, "/static/chart.min.js") == 0 && access(CHARTJS, R_OK) != 0) continue;
    struct raw_reply a;
    raw(&A, "GET", path, NULL, &a);
    if (a.status != 200) CHECK_FAIL_("the page names %s, which answers %ld", path, a.status);
    raw_free(&a);
  }
  raw_free(&r);

  /* HEAD: the same headers, no body. */
  raw(&A, "HEAD", "/", html, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_HEADER(&r, "Content-Type", "text/html; charset=utf-8");
  CHECK_INT_EQ(r.body_len, 0);
  raw_free(&r);

  /* A client that does not ask for HTML still gets the list of routes. */
  json_t *index = http_get_json(&A, "/");
  CHECK_STR_EQ(JSTR(index, "service"), "gpulabd");
  json_decref(index);
}

static void test_assets(void) {
  for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++) {
    struct raw_reply r;
    raw(&A, "GET", assets[i][0], NULL, &r);
    if (r.status != 200) CHECK_FAIL_("%s: %ld %s", assets[i][0], r.status, r.body);
    CHECK_HEADER(&r, "Content-Type", assets[i][1]);
    CHECK_HEADER(&r, "X-Content-Type-Options", "nosniff");
    CHECK_HEADER(&r, "Cache-Control", "no-cache");
    check_csp(&r);
    char etag[128];
    CHECK(header(&r, "ETag", etag, sizeof etag));
    CHECK(etag[0] == '"' && etag[strlen(etag) - 1] == '"' && strlen(etag) > 8);
    CHECK(r.body_len > 100);
    raw_free(&r);
  }
  /* The page's own code never writes inline styles or evaluates strings. */
  struct raw_reply r;
  raw(&A, "GET", "/static/common.js", NULL, &r);
  CHECK(!strstr(r.body, "eval("));
  CHECK(!strstr(r.body, "innerHTML"));
  raw_free(&r);

  struct http_reply post;
  http_request(&A, "POST", "/static/app.js", "application/json", "{}", 2, &post);
  CHECK_ERROR(&post, 405, "method_not_allowed", NULL);
  CHECK_STR_EQ(post.allow, "GET, HEAD");
  http_reply_free(&post);
}

/* ETag / If-None-Match on path: 304 (no body, same ETag) for the tag, a weak form
 * of it, a list holding it and "*"; 200 for another tag. */
static void check_etag(struct gpulabd *d, const char *path) {
  struct raw_reply r;
  raw(d, "GET", path, NULL, &r);
  CHECK_INT_EQ(r.status, 200);
  char etag[128], again[128];
  CHECK(header(&r, "ETag", etag, sizeof etag));
  size_t full = r.body_len;
  raw_free(&r);

  char lines[4][200];
  snprintf(lines[0], sizeof lines[0], "If-None-Match: %s", etag);
  snprintf(lines[1], sizeof lines[1], "If-None-Match: W/%s", etag);
  snprintf(lines[2], sizeof lines[2], "If-None-Match: \"nope\", %s", etag);
  snprintf(lines[3], sizeof lines[3], "If-None-Match: *");
  for (int i = 0; i < 4; i++) {
    const char *h[] = {lines[i], NULL};
    raw(d, "GET", path, h, &r);
    if (r.status != 304) CHECK_FAIL_("%s with '%s': %ld", path, lines[i], r.status);
    CHECK_INT_EQ(r.body_len, 0);
    CHECK(header(&r, "ETag", again, sizeof again));
    CHECK_STR_EQ(again, etag);
    raw_free(&r);
  }
  const char *other[] = {"If-None-Match: \"0123456789\"", NULL};
  raw(d, "GET", path, other, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_INT_EQ(r.body_len, full);
  raw_free(&r);
}

static void test_etags(void) {
  check_etag(&A, "/static/app.js");
  check_etag(&A, "/static/app.css");
  const char *h[] = {html[0], NULL};
  struct raw_reply r;
  raw(&A, "GET", "/", h, &r);
  char etag[128], line[200];
  CHECK(header(&r, "ETag", etag, sizeof etag));
  raw_free(&r);
  snprintf(line, sizeof line, "If-None-Match: %s", etag);
  const char *h2[] = {html[0], line, NULL};
  raw(&A, "GET", "/", h2, &r);
  CHECK_INT_EQ(r.status, 304);
  raw_free(&r);
  /* Different files, different tags. */
  struct raw_reply a, b;
  raw(&A, "GET", "/static/app.js", NULL, &a);
  raw(&A, "GET", "/static/job.js", NULL, &b);
  char ea[128], eb[128];
  CHECK(header(&a, "ETag", ea, sizeof ea) && header(&b, "ETag", eb, sizeof eb));
  CHECK(strcmp(ea, eb) != 0);
  raw_free(&a);
  raw_free(&b);
}

/* ---- nothing outside the asset set ---- */

static const char *const outside[] = {
    "/../etc/passwd",
    "/static/../../etc/passwd",
    "/static/../static/app.js",
    "/static/./app.js",
    "/static/%2e%2e/%2e%2e/etc/passwd",
    "/static/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
    "/static/..%2f..%2f..%2fetc%2fpasswd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/static//etc/passwd",
    "/static/%2fetc%2fpasswd",
    "//etc/passwd",
    "/etc/passwd",
    "/static/..\\..\\etc\\passwd",
    "/static/..%5c..%5cetc%5cpasswd",
    "/static/%5cetc%5cpasswd",
    "/static/chart.min.js/../../../../etc/passwd",
    "/static/index.html/../../server/static.c",
    "/static/embed.cmake", /* in web/, but not one of the page's files */
    "/static/../CMakeLists.txt",
    "/static/",
    "/static",
    "/static/app.js/",
    "/static/APP.JS",
    "/web/app.js",
    "/app.js",
    "/index.html/..",
};

static void check_outside(struct gpulabd *d) {
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
    struct raw_reply r;
    raw(d, "GET", outside[i], html, &r);
    if (r.status != 404) CHECK_FAIL_("GET %s: %ld, not 404:\n%s", outside[i], r.status, r.body);
    CHECK(!strstr(r.body, "root:"));
    CHECK(!strstr(r.body, "#include"));
    /* A JSON error like every other route's. */
    char ct[128];
    struct http_reply as_json = {.status = r.status,
                                 .body = r.body,
                                 .body_len = r.body_len,
                                 .content_type = (char *)header(&r, "Content-Type", ct, sizeof ct)};
    as_json.json = json_loads(r.body, 0, NULL);
    if (!as_json.json) CHECK_FAIL_("GET %s: not JSON: %s", outside[i], r.body);
    CHECK_ERROR(&as_json, 404, "not_found", NULL);
    json_decref(as_json.json);
    raw_free(&r);
  }
}

static void test_traversal(void) {
  check_outside(&A);
  check_outside(&C); /* reading from --web-root changes nothing */
}

/* ---- Chart.js ---- */

static void test_chartjs(void) {
  if (access(CHARTJS, R_OK) != 0)
    CHECK_FAIL_(
        "%s is missing: the Chart.js checks cannot run (apt-get install libjs-chart.js; "
        "scripts/gpulab test installs it)",
        CHARTJS);
  struct raw_reply r;
  raw(&A, "GET", "/static/chart.min.js", NULL, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_HEADER(&r, "Content-Type", "text/javascript; charset=utf-8");
  check_csp(&r);
  struct stat st;
  CHECK(stat(CHARTJS, &st) == 0);
  CHECK_INT_EQ(r.body_len, st.st_size);
  CHECK(strstr(r.body, "Chart"));
  raw_free(&r);
  check_etag(&A, "/static/chart.min.js");
}

/* --chartjs at a missing file: the page and its files are served, Chart.js is a
 * JSON 404 saying what to install. */
static void test_without_chartjs(void) {
  struct raw_reply r;
  raw(&B, "GET", "/", html, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK(strstr(r.body, "/static/app.js"));
  raw_free(&r);
  for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++) {
    raw(&B, "GET", assets[i][0], NULL, &r);
    CHECK_INT_EQ(r.status, 200);
    raw_free(&r);
  }
  struct http_reply c;
  http_get(&B, "/static/chart.min.js", &c);
  CHECK_ERROR(&c, 404, "not_found", NULL);
  CHECK(strstr(JSTR(c.json, "detail"), "libjs-chart.js"));
  http_reply_free(&c);
}

/* ---- CodeMirror ---- */

/* The editors' four files from libjs-codemirror, each with its type; nothing
 * else of its directory is reachable. */
static void test_codemirror(void) {
  static const char *const files[][3] = {
      {"/static/codemirror/codemirror.js", CODEMIRROR "/codemirror.js",
       "text/javascript; charset=utf-8"},
      {"/static/codemirror/codemirror.css", CODEMIRROR "/codemirror.css",
       "text/css; charset=utf-8"},
      {"/static/codemirror/clike.js", CODEMIRROR "/mode/clike/clike.js",
       "text/javascript; charset=utf-8"},
      {"/static/codemirror/javascript.js", CODEMIRROR "/mode/javascript/javascript.js",
       "text/javascript; charset=utf-8"},
  };
  if (access(files[0][1], R_OK) != 0)
    CHECK_FAIL_(
        "%s is missing: the CodeMirror checks cannot run (apt-get install libjs-codemirror; "
        "scripts/gpulab test installs it)",
        files[0][1]);
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    struct raw_reply r;
    raw(&A, "GET", files[i][0], NULL, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_HEADER(&r, "Content-Type", files[i][2]);
    check_csp(&r);
    struct stat st;
    CHECK(stat(files[i][1], &st) == 0);
    CHECK_INT_EQ(r.body_len, st.st_size);
    raw_free(&r);
    check_etag(&A, files[i][0]);
  }
  static const char *const unreachable[] = {
      "/static/codemirror/lib/codemirror.js", "/static/codemirror/mode/clike/clike.js",
      "/static/codemirror/mode/javascript/javascript.js", "/static/codemirror/../chart.min.js",
      "/static/codemirror/"};
  for (size_t i = 0; i < sizeof unreachable / sizeof unreachable[0]; i++) {
    struct raw_reply r;
    raw(&A, "GET", unreachable[i], NULL, &r);
    CHECK_INT_EQ(r.status, 404);
    raw_free(&r);
  }
}

/* --codemirror at a missing directory: each of its files is a JSON 404 saying what
 * to install (the page keeps its plain text area). */
static void test_without_codemirror(void) {
  struct http_reply c;
  http_get(&B, "/static/codemirror/clike.js", &c);
  CHECK_ERROR(&c, 404, "not_found", NULL);
  CHECK(strstr(JSTR(c.json, "detail"), "libjs-codemirror"));
  CHECK(strstr(JSTR(c.json, "detail"), "/nonexistent/codemirror/mode/clike/clike.js"));
  http_reply_free(&c);
}

/* ---- --web-root ---- */

static char web_root[64];

static void write_file(const char *dir, const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

static void test_web_root(void) {
  struct raw_reply r;
  raw(&C, "GET", "/", html, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_HEADER(&r, "Content-Type", "text/html; charset=utf-8");
  check_csp(&r);
  CHECK(strstr(r.body, "from --web-root"));
  raw_free(&r);
  check_etag(&C, "/static/app.css");
  /* A page file the folder lacks is a 404, not the embedded copy. */
  struct http_reply missing;
  http_get(&C, "/static/app.js", &missing);
  CHECK_ERROR(&missing, 404, "not_found", NULL);
  http_reply_free(&missing);
  /* Files in the folder that are not page files stay unreachable. */
  raw(&C, "GET", "/static/secret.txt", NULL, &r);
  CHECK_INT_EQ(r.status, 404);
  CHECK(!strstr(r.body, "do not serve"));
  raw_free(&r);
}

/* A FIFO as --chartjs and as a page file in --web-root: opening one for reading
 * would wait for a writer; gpulabd serves regular files only, so each is a 404 at
 * once and its one HTTP thread goes on answering (it would hang on the first). */
static void test_fifos(void) {
  char fifo_root[64], chartjs[96], page[96];
  snprintf(fifo_root, sizeof fifo_root, "/tmp/gpulab-fifo-root-XXXXXX");
  CHECK(mkdtemp(fifo_root) != NULL);
  snprintf(chartjs, sizeof chartjs, "%s/chart.min.js", fifo_root);
  snprintf(page, sizeof page, "%s/app.css", fifo_root);
  CHECK_INT_EQ(mkfifo(chartjs, 0600), 0);
  CHECK_INT_EQ(mkfifo(page, 0600), 0);
  const char *args[] = {"--backend", "cpu",        "--http-threads", "1", "--chartjs",
                        chartjs,     "--web-root", fifo_root,        NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  for (int i = 0; i < 2; i++) {
    struct http_reply r;
    http_get(&d, "/static/chart.min.js", &r);
    CHECK_ERROR(&r, 404, "not_found", NULL);
    CHECK(r.total_s < 2);
    http_reply_free(&r);
    HTTP_EXPECT(&d, "GET", "/static/app.css", 404, "not_found", NULL);
    HTTP_EXPECT(&d, "GET", "/health", 200, NULL, NULL);
  }
  gpulabd_stop(&d);
  unlink(chartjs);
  unlink(page);
  rmdir(fifo_root);
}

/* ---- the data the page reads ---- */

static void test_jobs_fields(void) {
  json_t *job = job_post_done(&A, "cpu", "/transpose", "transpose",
                              "{\"m\":33,\"n\":47,\"variant\":\"naive\"," FAST "}");
  long long id = JINT(job, "id");
  json_decref(job);
  json_t *plain = http_get_json(&A, "/jobs?limit=1");
  CHECK_INT_EQ(JINT(plain, "jobs[0].id"), id);
  CHECK(json_at(plain, "jobs[0].result") == NULL);
  CHECK(JBOOL(plain, "jobs[0].passed"));
  json_decref(plain);
  json_t *full = http_get_json(&A, "/jobs?limit=1&fields=result&type=transpose&state=done");
  CHECK_INT_EQ(JINT(full, "jobs[0].id"), id);
  CHECK_STR_EQ(JSTR(full, "jobs[0].result.runs[0].variant"), "naive");
  CHECK(JNUM(full, "jobs[0].result.runs[0].timing.median_ms") > 0);
  json_decref(full);
  struct http_reply bad;
  http_get(&A, "/jobs?fields=everything", &bad);
  CHECK_ERROR(&bad, 400, "unknown_field", "fields");
  http_reply_free(&bad);
}

/* experiments.json: what the page's forms offer, from the descriptors (api/describe.c). */
static void test_experiments(void) {
  struct raw_reply r;
  raw(&A, "GET", "/static/experiments.json", NULL, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_HEADER(&r, "Content-Type", "application/json");
  check_csp(&r);
  raw_free(&r);
  check_etag(&A, "/static/experiments.json");
  json_t *x = http_get_json(&A, "/static/experiments.json");
  CHECK_STR_EQ(JSTR(x, "types.transpose.variants[0]"), "naive");
  CHECK_STR_EQ(JSTR(x, "types.transpose.variants[2]"), "padded33");
  CHECK_STR_EQ(JSTR(x, "types.transpose.inputs[0]"), "a");
  CHECK_STR_EQ(JSTR(x, "types.transpose.unit"), "GB/s");
  CHECK_INT_EQ(JINT(x, "types.transpose.defaults.m"), 4096);
  CHECK_INT_EQ(JINT(x, "types.gemm.defaults.k"), 1024);
  CHECK_STR_EQ(JSTR(x, "types.gemm.unit"), "GFLOP/s");
  CHECK_STR_EQ(JSTR(x, "types.gemm.inputs[1]"), "b");
  CHECK_INT_EQ(JINT(x, "types.stencil.defaults.radius"), 32);
  CHECK_INT_EQ(JINT(x, "types.stencil.defaults.warmup"), 20);
  CHECK_INT_EQ(JINT(x, "types.pipeline.defaults.streams[1]"), 3);
  CHECK_INT_EQ(json_array_size(json_at(x, "types.pipeline.variants")), 0);
  CHECK_INT_EQ(json_object_size(json_at(x, "types")), EXP_TYPE_COUNT);
  for (int t = 0; t < EXP_TYPE_COUNT; t++) { /* every descriptor, in the registry's order */
    const struct exp_desc *d = exp_desc((enum exp_type)t);
    CHECK_STR_EQ(json_string_value(json_array_get(json_at(x, "order"), (size_t)t)), d->name);
    json_t *info = json_object_get(json_at(x, "types"), d->name),
           *params = json_object_get(info, "params");
    CHECK_INT_EQ(json_array_size(params), d->n_params);
    for (int i = 0; i < d->n_params; i++) {
      json_t *p = json_array_get(params, (size_t)i);
      CHECK_STR_EQ(json_string_value(json_object_get(p, "name")), d->params[i].name);
      CHECK_INT_EQ(json_integer_value(json_object_get(p, "min")), d->params[i].min);
      CHECK_INT_EQ(json_integer_value(json_object_get(p, "max")), d->params[i].max);
      CHECK_INT_EQ(json_integer_value(json_object_get(p, "default")), d->params[i].def);
    }
    CHECK_INT_EQ(json_array_size(json_object_get(info, "variants")), d->n_variants);
    CHECK_INT_EQ(json_array_size(json_object_get(info, "inputs")), d->n_inputs);
    CHECK(json_is_null(json_object_get(info, "runs")) == (d->runs == NULL));
  }
  CHECK_STR_EQ(JSTR(x, "types.gemm.title"), "GEMM");
  CHECK_STR_EQ(JSTR(x, "types.pipeline.runs.name"), "streams");
  CHECK_STR_EQ(JSTR(x, "types.transpose.ceiling"), "copy_gbps");
  /* The params every experiment takes, typed for the forms: what the parser takes. */
  json_t *common = json_at(x, "common"), *p;
  size_t i;
  int seen = 0;
  json_array_foreach(common, i, p) {
    const char *name = json_string_value(json_object_get(p, "name"));
    const char *kind = json_string_value(json_object_get(p, "kind"));
    if (!strcmp(name, "order")) {
      CHECK_STR_EQ(kind, "choice");
      CHECK_STR_EQ(JSTR(p, "values[0]"), "interleaved");
      CHECK_STR_EQ(JSTR(p, "values[1]"), "sequential");
    } else if (!strcmp(name, "profile")) { /* "off" the default: the form sends none */
      CHECK_STR_EQ(kind, "choice");
      CHECK_STR_EQ(JSTR(p, "values[0]"), "off");
      CHECK_STR_EQ(JSTR(p, "values[2]"), "full");
    } else if (!strcmp(name, "max_noise") || !strcmp(name, "max_time")) {
      CHECK_STR_EQ(kind, "number");
    } else if (!strcmp(name, "graph") || !strcmp(name, "cold")) {
      CHECK_STR_EQ(kind, "boolean");
    } else {
      CHECK_STR_EQ(kind, "integer");
    }
    if (!strcmp(kind, "integer") ||
        !strcmp(kind, "number")) { /* the bounds, as the parser has them */
      char body[160];
      if (!strcmp(kind, "number"))
        snprintf(body, sizeof body, "{\"m\":33,\"n\":47,\"%s\":%.17g}", name,
                 JNUM(p, "max") * 2 + 1);
      else if (JINT(p, "max") < INT64_MAX)
        snprintf(body, sizeof body, "{\"m\":33,\"n\":47,\"%s\":%lld}", name, JINT(p, "max") + 1);
      else
        snprintf(body, sizeof body, "{\"m\":33,\"n\":47,\"%s\":%lld}", name, JINT(p, "min") - 1);
      struct http_reply bad;
      http_post_json(&A, "/transpose?wait=0", body, &bad);
      CHECK_ERROR(&bad, 400, "out_of_range", name);
      http_reply_free(&bad);
    }
    seen++;
  }
  /* seed, warmup, batches, reps, min_samples, order, max_noise, max_time, graph, cold,
   * profile */
  CHECK_INT_EQ(seen, 11);
  json_decref(x);
}

static int op_index(const char *op) {
  return !strcmp(op, "upload") ? 0 : !strcmp(op, "kernel") ? 1 : !strcmp(op, "download") ? 2 : -1;
}

/* The pipeline's last pass, per stream: every chunk's three ops, on stream chunk % s,
 * each after the one before it on the same chunk, within the pass. */
static void test_pipeline_timeline(void) {
  json_t *job = job_post_done(&A, "cpu", "/pipeline", "pipeline",
                              "{\"chunk\":4099,\"chunks\":5,\"terms\":4,\"streams\":[1,2]," FAST
                              "}");
  for (int r = 0; r < 2; r++) {
    char path[64];
    snprintf(path, sizeof path, "result.runs[%d]", r);
    json_t *run = json_at(job, path);
    int streams = (int)JINT(run, "streams");
    CHECK_INT_EQ(JINT(run, "timeline_chunks"), 5);
    json_t *tl = json_at(run, "timeline");
    CHECK(json_is_array(tl));
    CHECK_INT_EQ(json_array_size(tl), 15);
    double end[5][3] = {{0}}, start[5][3] = {{0}};
    int seen[5][3] = {{0}};
    size_t i;
    json_t *op;
    json_array_foreach(tl, i, op) {
      int c = (int)JINT(op, "chunk"), k = op_index(JSTR(op, "op"));
      CHECK(c >= 0 && c < 5 && k >= 0);
      CHECK_INT_EQ(JINT(op, "stream"), c % streams);
      start[c][k] = JNUM(op, "start_ms");
      end[c][k] = JNUM(op, "end_ms");
      CHECK(start[c][k] >= 0 && end[c][k] >= start[c][k]);
      CHECK(end[c][k] <= JNUM(run, "timing.max_ms") * 1.01 + 0.01);
      seen[c][k]++;
    }
    for (int c = 0; c < 5; c++)
      for (int k = 0; k < 3; k++) {
        CHECK_INT_EQ(seen[c][k], 1);
        if (k) CHECK(start[c][k] >= end[c][k - 1]);
      }
  }
  json_decref(job);
  /* Other types carry none. */
  job = job_post_done(&A, "cpu", "/stencil", "stencil", "{\"n\":1000,\"radius\":3," FAST "}");
  CHECK(json_at(job, "result.runs[0].timeline") == NULL);
  json_decref(job);
}

static int start(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  snprintf(web_root, sizeof web_root, "/tmp/gpulab-web-root-XXXXXX");
  CHECK(mkdtemp(web_root) != NULL);
  write_file(web_root, "index.html", "<!doctype html><title>from --web-root</title>\n");
  write_file(web_root, "app.css", "body { color: #123; }\n");
  write_file(web_root, "secret.txt", "do not serve\n");

  static const char *const args_a[] = {"--backend", "cpu", "--streams", "2", NULL};
  static const char *const args_b[] = {"--backend",
                                       "cpu",
                                       "--chartjs",
                                       "/nonexistent/chart.min.js",
                                       "--codemirror",
                                       "/nonexistent/codemirror",
                                       NULL};
  const char *args_c[] = {"--backend", "cpu", "--web-root", web_root, NULL};
  gpulabd_start(args_a, &A);
  gpulabd_start(args_b, &B);
  gpulabd_start(args_c, &C);
  return 0;
}

static void stop(void) {
  gpulabd_stop(&C);
  gpulabd_stop(&B);
  gpulabd_stop(&A);
  char path[128];
  for (const char *const *n = (const char *const[]){"index.html", "app.css", "secret.txt", NULL};
       *n; n++) {
    snprintf(path, sizeof path, "%s/%s", web_root, *n);
    unlink(path);
  }
  rmdir(web_root);
  curl_global_cleanup();
}

static const struct test_case cases[] = {
    TEST(test_page),
    TEST(test_assets),
    TEST(test_etags),
    TEST(test_traversal),
    TEST(test_chartjs),
    TEST(test_without_chartjs),
    TEST(test_codemirror),
    TEST(test_without_codemirror),
    TEST(test_web_root),
    TEST(test_fifos),
    TEST(test_experiments),
    TEST(test_jobs_fields),
    TEST(test_pipeline_timeline),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
