/* A fleet: two gpulabd on one PostgreSQL database ($GPULAB_TEST_DB, ctest's
 * test_fleet, label pg), with leases of 2 s. A job accepted by node a is readable,
 * listed, counted (/metrics) and cancelable from node b (a job no node holds is
 * canceled in the store). A job on a's job sent to b is sent on to a (307), and so is
 * a request for a's buffer or a job on it, until a dies with it (410). Taking over
 * (test_fleet_takeover.c): a busy a hands queued jobs to an idle b; kill -9 of a with
 * jobs running and queued: once
 * a's lease ran out, b takes a over: every queued job runs on b (each on one node
 * only), the running one fails `interrupted` naming a, none is lost; a frozen a,
 * taken over, drops what was taken and its late writes change nothing. b claims a's
 * queued jobs fairly across clients: one client's flood does not keep another's job
 * waiting behind it. PostgreSQL restarted under load: 503s meanwhile, no job lost;
 * stopped: /health says the node is fenced. */
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fleet_common.h"
#include "tests/http_client.h"
#include "tests/runner.h"
#include "tests/test_db.h"

/* a's running and queued jobs, canceled from b: a applies b's requests. */
static void test_cancel_from_other(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  start_node(&b, "b");
  long long running = post_on(&a.http, "/stencil?wait=0", SLOW);
  job_wait_state(&b, running, "running", 30); /* b reads a's running job */
  long long queued = post_on(&a.http, "/transpose?wait=0", SMALL);
  check_seen_from(&b, queued);
  check_fleet_metrics(&b);
  delete_on(&b, queued);
  delete_on(&b, running);
  check_canceled(&b, queued);
  check_canceled(&b, running);
  wait_advertised(&a, "a");
  gpulabd_stop(&a);
  gpulabd_stop(&b);
}

/* b's event streams show a's job (the database's trigger, LISTEN/NOTIFY): its own
 * stream opens on the stored state and follows a's changes to the end, once each;
 * b's /events carries them with a's name. */
static void test_events_from_other(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  start_node(&b, "b");
  struct sse_stream all, one;
  sse_open(&all, b.port, "/events", NULL, 10);
  /* b listens to the fleet's events once a stream wants them: a moment after. */
  bool heard = false;
  for (int i = 0; i < 50 && !heard; i++) {
    long long probe = post_on(&a.http, "/transpose?wait=0", SMALL);
    struct sse_event e;
    while (!heard && sse_next(&all, 0.2, &e) == 1) {
      heard = JINT(e.json, "job") == probe;
      sse_event_free(&e);
    }
  }
  CHECK(heard);
  long long id = post_on(&a.http, "/stencil?wait=0", SLOW);
  job_wait_state(&b, id, "running", 30); /* in the database */
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld/events", id);
  sse_open(&one, b.port, path, NULL, 10);
  CHECK_INT_EQ(one.status, 200);
  struct sse_event e;
  CHECK_INT_EQ(sse_next(&one, 10, &e), 1);
  CHECK_STR_EQ(e.event, "state");
  CHECK_INT_EQ(JINT(e.json, "job"), id);
  CHECK_STR_EQ(JSTR(e.json, "state"), "running");
  CHECK_STR_EQ(JSTR(e.json, "type"), "stencil");
  sse_event_free(&e);
  delete_on(&b, id); /* a cancels it: the stream says so, with a's name, and ends */
  CHECK_INT_EQ(sse_next(&one, 30, &e), 1);
  CHECK_STR_EQ(e.event, "state");
  CHECK_STR_EQ(JSTR(e.json, "state"), "canceled");
  CHECK_STR_EQ(JSTR(e.json, "error"), "canceled");
  CHECK_STR_EQ(JSTR(e.json, "node"), "a");
  sse_event_free(&e);
  CHECK_INT_EQ(sse_next(&one, 10, &e), 0);
  sse_close(&one);
  /* Every job: a's job's states as the database recorded them, in order. */
  const char *seen[4];
  int n = 0;
  while (n < 4) {
    if (sse_next(&all, 30, &e) != 1) CHECK_FAIL_("%s", "b's /events stopped before a's job ended");
    if (JINT(e.json, "job") == id) {
      CHECK_STR_EQ(JSTR(e.json, "node"), "a");
      seen[n++] = strcmp(JSTR(e.json, "state"), "canceled") == 0 ? "canceled" : "other";
    }
    bool ended = n > 0 && strcmp(seen[n - 1], "canceled") == 0;
    sse_event_free(&e);
    if (ended) break;
  }
  CHECK(n >= 2); /* queued or running first (the job's first row), then canceled */
  sse_close(&all);
  gpulabd_stop(&a);
  gpulabd_stop(&b);
}

/* A sweep made on a is read, listed and canceled from b (the store's sweeps): its
 * long jobs queue behind a's (or run on b, handed over), and b's DELETE cancels them
 * wherever they are. */
static void test_sweep_from_other(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  start_node(&b, "b");
  long long running = start_slow(&a);
  static const char sweep[] = /* slow points: canceled wherever they run by then */
      "{\"type\":\"stencil\",\"params\":{\"n\":2000000,\"variant\":\"naive\","
      "\"warmup\":0,\"batches\":40,\"reps\":1},\"axes\":{\"radius\":[64,32]}}";
  struct http_reply r;
  http_client_request(&a.http, "POST", "/sweeps?wait=0", "application/json", sweep, strlen(sweep),
                      0, &r);
  CHECK_INT_EQ(r.status, 202);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  char path[64];
  snprintf(path, sizeof path, "/sweeps/%lld", id);
  json_t *j = http_get_json(&b, path);
  CHECK_INT_EQ(JINT(j, "id"), id);
  CHECK_INT_EQ((long long)json_array_size(json_object_get(j, "jobs")), 2);
  CHECK_INT_EQ((long long)json_array_size(json_object_get(j, "rows")), 2);
  json_decref(j);
  j = http_get_json(&b, "/sweeps");
  CHECK_INT_EQ(JINT(j, "sweeps[0].id"), id);
  json_decref(j);
  HTTP_EXPECT(&b, "DELETE", path, 200, NULL, NULL);
  for (int i = 0;; i++, usleep(50 * 1000)) { /* a applies b's requests */
    j = http_get_json(&b, path);
    bool ended = strcmp(JSTR(j, "state"), "canceled") == 0;
    if (ended) CHECK_INT_EQ(JINT(j, "counts.canceled"), 2);
    json_decref(j);
    if (ended) break;
    if (i == 200) CHECK_FAIL_("%s", "b's DELETE of a's sweep never canceled its jobs");
  }
  delete_on(&b, running);
  gpulabd_stop(&a);
  gpulabd_stop(&b);
}

/* A user's kernel stored through a runs where its job is claimed: b, up before the
 * kernel existed, takes over a's queued job on it and runs the kernel (the CPU test
 * runner: compiled for real, run as a test function). */
static void test_kernel_on_other(void) {
  struct gpulabd a, b;
  start_node_with(&a, "a", "1", true);
  start_node_with(&b, "b", "1", true);
  static const char src[] =
      "extern \"C\" __global__ void transpose(const float* a, float* b, int m, int n) {}\n";
  struct http_reply r;
  http_request(&a, "POST", "/kernels?experiment=transpose&name=t&entry=transpose", "text/x-cuda",
               src, strlen(src), &r);
  CHECK_STATUS(&r, 201);
  long long kernel = JINT(r.json, "id");
  http_reply_free(&r);
  start_slow(&a);
  char body[200];
  snprintf(body, sizeof body,
           "{\"m\":37,\"n\":53,\"variant\":[\"padded33\",\"kernel:%lld\"],\"warmup\":0,"
           "\"batches\":1,\"reps\":1}",
           kernel);
  long long id = post_on(&a.http, "/transpose?wait=0", body);
  char node[64] = "";
  for (int i = 0; i < 100 && strcmp(node, "a") != 0; i++, usleep(20000))
    node_of(id, node, sizeof node); /* its row written */
  gpulabd_kill(&a);
  json_t *j = job_wait_final(&b, id, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK_STR_EQ(JSTR(j, "node"), "b");
  CHECK(JBOOL(j, "result.runs[1].available"));
  CHECK(JBOOL(j, "result.runs[1].check.passed"));
  json_decref(j);
  gpulabd_stop(&b);
}

/* How many of b's GET /devices "fleet" entries are node's (its advertised URL in
 * url's place when url is not NULL). */
static int devices_of(json_t *devices, const char *node, char *url, size_t len) {
  int n = 0;
  size_t i;
  json_t *d;
  json_array_foreach(json_object_get(devices, "fleet"), i, d) {
    if (strcmp(JSTR(d, "node"), node) != 0) continue;
    n++;
    CHECK(json_is_true(json_object_get(d, "healthy")));
    CHECK_STR_EQ(JSTR(d, "backend"), "cpu");
    if (url) snprintf(url, len, "%s", JSTR(d, "advertise"));
  }
  return n;
}

/* GET /devices on b lists the fleet's devices, each with its node and URL; a node
 * whose lease ran out is no longer listed. */
static void test_fleet_devices(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  start_node(&b, "b");
  wait_advertised(&a, "a");
  char url[128] = "", want[64];
  snprintf(want, sizeof want, "http://127.0.0.1:%d", a.port);
  for (int i = 0; i < 100 && strcmp(url, want) != 0; i++, usleep(50 * 1000)) {
    json_t *d = http_get_json(&b, "/devices");
    if (devices_of(d, "a", url, sizeof url) == 0) url[0] = 0;
    json_decref(d);
  }
  CHECK_STR_EQ(url, want); /* a's, as a said at its last renewal */
  json_t *d = http_get_json(&b, "/devices");
  CHECK_INT_EQ(devices_of(d, "a", NULL, 0), 1);
  CHECK_INT_EQ(devices_of(d, "b", NULL, 0), 1);
  CHECK_STR_EQ(JSTR(json_array_get(json_object_get(d, "devices"), 0), "node"), "b");
  json_decref(d);
  gpulabd_kill(&a);
  int listed = 1;
  for (int i = 0; i < 200 && listed; i++, usleep(50 * 1000)) {
    d = http_get_json(&b, "/devices");
    listed = devices_of(d, "a", NULL, 0);
    json_decref(d);
  }
  CHECK_INT_EQ(listed, 0); /* a's lease ran out */
  gpulabd_stop(&b);
}

/* A job no node holds (its node died, the others are full) is canceled in the store. */
static void test_cancel_unclaimed(void) {
  struct gpulabd a, b;
  start_node(&b, "b");
  long long b_running = start_slow(&b);
  long long b_queued = post_on(&b.http, "/stencil?wait=0", SLOW); /* b claims no more */
  start_node(&a, "a");
  start_slow(&a); /* the next one stays queued */
  long long queued = post_on(&a.http, "/transpose?wait=0", SMALL);
  gpulabd_kill(&a);
  char node[64] = "a";
  for (int i = 0; i < 300 && node[0]; i++, usleep(20000)) node_of(queued, node, sizeof node);
  CHECK_STR_EQ(node, ""); /* a taken over: its queued job unclaimed */
  delete_on(&b, queued);
  check_canceled(&b, queued);
  delete_on(&b, b_queued);
  delete_on(&b, b_running);
  gpulabd_stop(&b);
}

/* A job on a's job, sent to b, is sent on to a (307 job_elsewhere, Location the same
 * request on a), where it runs after its parent. */
static void test_chain_sent_to_parent(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  start_node(&b, "b");
  long long parent = start_slow(&a);
  wait_advertised(&a, "a");
  char body[256], want[96];
  snprintf(body, sizeof body, "{\"type\":\"transpose\",\"params\":" SMALL ",\"depends_on\":[%lld]}",
           parent);
  struct http_reply r;
  http_client_request(&b.http, "POST", "/jobs?wait=0", "application/json", body, strlen(body), 0,
                      &r);
  CHECK_ERROR(&r, 307, "job_elsewhere", NULL);
  snprintf(want, sizeof want, "http://127.0.0.1:%d/jobs?wait=0", a.port);
  CHECK_STR_EQ(r.location, want);
  http_reply_free(&r);
  long long child = post_on(&a.http, "/jobs?wait=0", body); /* where Location says */
  json_t *j = job_wait_final(&b, child, 60);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  json_decref(j);
  char node[64];
  node_of(child, node, sizeof node);
  CHECK_STR_EQ(node, "a");
  gpulabd_stop(&a);
  gpulabd_stop(&b);
}

#define ROWS 33
#define COLS 47

/* The request r's Location names on d (it must be d's URL), sent on d's client. */
static void follow(struct gpulabd *d, const struct http_reply *r, const char *method,
                   const char *body, struct http_reply *out) {
  size_t base = strlen(d->http.base_url);
  CHECK(r->location && strncmp(r->location, d->http.base_url, base) == 0);
  http_client_request(&d->http, method, r->location + base, body ? "application/json" : NULL, body,
                      body ? strlen(body) : 0, 0, out);
}

/* path on b: 307 buffer_elsewhere, Location the same path on a. */
static void check_sent_to(struct gpulabd *b, struct gpulabd *a, const char *method,
                          const char *path, const char *body, struct http_reply *r) {
  char want[128];
  http_client_request(&b->http, method, path, body ? "application/json" : NULL, body,
                      body ? strlen(body) : 0, 0, r);
  CHECK_ERROR(r, 307, "buffer_elsewhere", NULL);
  snprintf(want, sizeof want, "%s%s", a->http.base_url, path);
  CHECK_STR_EQ(r->location, want);
}

/* check_sent_to, then the request again where the 307 sent it (curl -L): a's answer in
 * there (the 307 itself freed). */
static void sent_and_followed(struct gpulabd *b, struct gpulabd *a, const char *method,
                              const char *path, const char *body, struct http_reply *there) {
  struct http_reply r;
  check_sent_to(b, a, method, path, body, &r);
  follow(a, &r, method, body, there);
  http_reply_free(&r);
}

static long long upload_on(struct gpulabd *d, const float *x) {
  struct http_reply r;
  http_request(d, "POST", "/buffers?shape=33,47", "application/octet-stream", (const char *)x,
               ROWS * COLS * sizeof *x, &r);
  CHECK_STATUS(&r, 201);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

/* Buffers live where they were made: a's upload asked of b is sent to a (307
 * buffer_elsewhere), whose answer is the bytes uploaded; a job on it sent to b goes to a
 * and runs there, and its kept output is sent to a too; a DELETE through b deletes it
 * on a. Once a died (kill -9, its lease run out), b says its buffer was lost with it
 * (410 buffer_lost), as an id and as an input. */
static void test_buffer_sent_home(void) {
  static float x[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)i * 0.5f - 7.0f;
  struct gpulabd a, b;
  start_node(&a, "a");
  start_node(&b, "b");
  wait_advertised(&a, "a");
  long long buf = upload_on(&a, x);
  char path[64], body[256];
  snprintf(path, sizeof path, "/buffers/%lld", buf);
  struct http_reply r, there;
  sent_and_followed(&b, &a, "GET", path, NULL, &there);
  CHECK_INT_EQ(there.status, 200);
  CHECK(there.body_len > sizeof x &&
        memcmp(there.body + there.body_len - sizeof x, x, sizeof x) == 0);
  http_reply_free(&there);
  /* A job on it, sent to b, runs on a; so does the form of /jobs. */
  snprintf(body, sizeof body,
           "{\"a\":{\"buffer\":%lld},\"variant\":\"naive\",\"keep_output\":true,"
           "\"warmup\":0,\"batches\":1,\"reps\":1}",
           buf);
  sent_and_followed(&b, &a, "POST", "/transpose?wait=0", body, &there);
  CHECK_STATUS(&there, there.status == 200 ? 200 : 202); /* 200: done at once */
  long long job = JINT(there.json, "id");
  http_reply_free(&there);
  json_t *j = job_wait_final(&b, job, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  long long kept = JINT(j, "output.buffer");
  json_decref(j);
  char node[64];
  node_of(job, node, sizeof node);
  CHECK_STR_EQ(node, "a");
  char form[320];
  snprintf(form, sizeof form,
           "{\"type\":\"transpose\",\"params\":{\"a\":{\"buffer\":%lld}},\"keep_output\":true}",
           buf);
  check_sent_to(&b, &a, "POST", "/jobs?wait=0", form, &r);
  http_reply_free(&r);
  char sweep[320]; /* a sweep over it too, whose points read it */
  snprintf(sweep, sizeof sweep,
           "{\"type\":\"transpose\",\"params\":{\"a\":{\"buffer\":%lld}},"
           "\"axes\":{\"variant\":[\"naive\",\"copy\"]}}",
           buf);
  sent_and_followed(&b, &a, "POST", "/sweeps?wait=0", sweep, &there);
  CHECK(there.status == 200 || there.status == 202); /* made on a */
  http_reply_free(&there);
  snprintf(path, sizeof path, "/buffers/%lld", kept); /* a job's kept output: a's too */
  check_sent_to(&b, &a, "GET", path, NULL, &r);
  http_reply_free(&r);
  /* DELETE through b: sent to a, which deletes it; b then knows it no more. */
  snprintf(path, sizeof path, "/buffers/%lld", buf);
  sent_and_followed(&b, &a, "DELETE", path, NULL, &there);
  CHECK_STATUS(&there, 200);
  http_reply_free(&there);
  for (int i = 0;; i++, usleep(20 * 1000)) { /* a's delete of its row, a moment after */
    http_get(&b, path, &r);
    bool gone = r.status == 404;
    if (gone) CHECK_ERROR(&r, 404, "buffer_not_found", "id");
    http_reply_free(&r);
    if (gone) break;
    if (i == 100) CHECK_FAIL_("%s", "b still sends a deleted buffer to a");
  }
  /* a dies with its buffers: once its lease ran out, b says they were lost. */
  long long lost = upload_on(&a, x);
  gpulabd_kill(&a);
  snprintf(path, sizeof path, "/buffers/%lld", lost);
  for (int i = 0;; i++, usleep(50 * 1000)) {
    http_get(&b, path, &r);
    bool sent = r.status == 307;
    if (!sent) CHECK_ERROR(&r, 410, "buffer_lost", "id");
    if (!sent) CHECK(strstr(JSTR(r.json, "detail"), "node a ") != NULL);
    http_reply_free(&r);
    if (!sent) break;
    if (i == 200) CHECK_FAIL_("%s", "b never said that a's buffer was lost");
  }
  snprintf(body, sizeof body, "{\"a\":{\"buffer\":%lld},\"variant\":\"naive\"}", lost);
  http_client_request(&b.http, "POST", "/transpose?wait=0", "application/json", body, strlen(body),
                      0, &r);
  CHECK_ERROR(&r, 410, "buffer_lost", "a");
  http_reply_free(&r);
  snprintf(sweep, sizeof sweep,
           "{\"type\":\"transpose\",\"params\":{\"a\":{\"buffer\":%lld}},"
           "\"axes\":{\"variant\":[\"naive\",\"copy\"]}}",
           lost);
  http_client_request(&b.http, "POST", "/sweeps", "application/json", sweep, strlen(sweep), 0, &r);
  CHECK_ERROR(&r, 410, "buffer_lost", "params.a");
  http_reply_free(&r);
  gpulabd_stop(&b);
}

static int setup(void) { return fleet_db_setup("fleet"); }

/* Each case on an empty database. */
static const struct test_case cases[] = {
    TEST(test_cancel_from_other),    TEST(test_cancel_unclaimed), TEST(test_events_from_other),
    TEST(test_fleet_devices),        TEST(test_sweep_from_other), TEST(test_kernel_on_other),
    TEST(test_chain_sent_to_parent), TEST(test_buffer_sent_home), TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = setup, .before_each = fleet_db_reset, .teardown = fleet_db_drop};
