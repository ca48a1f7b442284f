/* A fleet: two gpulabd on one PostgreSQL database ($GPULAB_TEST_DB, ctest's
 * test_fleet, label pg), with leases of 2 s. A job accepted by node a is readable,
 * listed, counted (/metrics) and cancelable from node b (a job no node holds is
 * canceled in the store). A busy a hands queued jobs to an idle b; a job on a's job
 * sent to b is sent on to a (307), and so is a request for a's buffer or a job on it,
 * until a dies with it (410). kill -9 of a with jobs running and queued: once
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

#include "tests/http_client.h"
#include "tests/runner.h"
#include "tests/test_db.h"

static char db[512];

#define SMALL "{\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1}"
/* Keeps the one stream busy for seconds. */
#define SLOW \
  "{\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":40,\"reps\":1}"
/* A second or so on one stream. */
#define MEDIUM \
  "{\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":4,\"reps\":1}"
#define FLOOD 12           /* one client's queued jobs behind another's one */
#define RESTART_POSTS 2000 /* at most, while PostgreSQL restarts */

/* Node name with `streams` streams and a 2 s lease; cpu_runner: users' kernels run in
 * the CPU test runner (--cpu-runner-test). */
static void start_node_with(struct gpulabd *d, const char *name, const char *streams,
                            bool cpu_runner) {
  const char *runner = cpu_runner ? "--cpu-runner-test" : NULL; /* NULL: the end */
  const char *args[] = {"--backend", "cpu", "--streams", streams, "--db", db,
                        "--node",    name,  "--lease-s", "2",     runner, NULL};
  gpulabd_start(args, d);
}

/* Node name with one stream (a long job keeps it busy) and a 2 s lease. */
static void start_node(struct gpulabd *d, const char *name) {
  start_node_with(d, name, "1", false);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long long post_on(struct http_client *c, const char *path, const char *body) {
  struct http_reply r;
  http_client_request(c, "POST", path, "application/json", body, strlen(body), 0, &r);
  CHECK_STATUS(&r, 202);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

/* SLOW on d's one stream, running once this returns. */
static long long start_slow(struct gpulabd *d) {
  long long id = post_on(&d->http, "/stencil?wait=0", SLOW);
  job_wait_state(d, id, "running", 30);
  return id;
}

/* The one value sql reads ("" for NULL). */
static void query_text(const char *sql, char *out, size_t len) {
  PGconn *c = PQconnectdb(db);
  PGresult *res = PQexec(c, sql);
  CHECK_INT_EQ(PQntuples(res), 1);
  snprintf(out, len, "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  PQfinish(c);
}

/* Runs sql, which must succeed. */
static void exec_sql(const char *sql) {
  PGconn *c = PQconnectdb(db);
  PGresult *res = PQexec(c, sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    CHECK_FAIL_("%s: %s", sql, PQresultErrorMessage(res));
  PQclear(res);
  PQfinish(c);
}

/* The jobs.node column of job id ("" for NULL). */
static void node_of(long long id, char *out, size_t len) {
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT node FROM jobs WHERE id = %lld", id);
  query_text(sql, out, len);
}

/* Until table nodes has d's URL (--port 0's, known once it listens: a renewal later). */
static void wait_advertised(struct gpulabd *d, const char *name) {
  char url[64], stored[64] = "", sql[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", d->port);
  snprintf(sql, sizeof sql, "SELECT advertise FROM nodes WHERE name = '%s'", name);
  for (int i = 0; i < 100 && strcmp(stored, url); i++, usleep(20000))
    query_text(sql, stored, sizeof stored);
  CHECK_STR_EQ(stored, url);
}

static bool listed(json_t *page, long long id) {
  size_t i;
  json_t *job;
  json_array_foreach(json_object_get(page, "jobs"), i, job) if (JINT(job, "id") == id) return true;
  return false;
}

/* a's queued job read and listed from b, before a goes. */
static void check_seen_from(struct gpulabd *b, long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  json_t *j = http_get_json(b, path);
  CHECK_INT_EQ(JINT(j, "id"), id);
  CHECK_STR_EQ(JSTR(j, "state"), "queued");
  json_decref(j);
  json_t *page = http_get_json(b, "/jobs?limit=100");
  CHECK(listed(page, id));
  json_decref(page);
}

static void delete_on(struct gpulabd *d, long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  struct http_reply r;
  http_request(d, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
}

static void check_canceled(struct gpulabd *d, long long id) {
  json_t *j = job_wait_final(d, id, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "canceled");
  json_decref(j);
}

/* b's /metrics, once it counts one job queued on a (the count is of b's last lease
 * tick), through promtool. */
static void check_fleet_metrics(struct gpulabd *b) {
  for (int i = 0;; i++, usleep(50 * 1000)) {
    struct http_reply r;
    http_get(b, "/metrics", &r);
    CHECK_INT_EQ(r.status, 200);
    bool counted = strstr(r.body, "\ngpulab_fleet_queued_jobs{node=\"a\"} 1\n") != NULL;
    if (counted) {
      CHECK(strstr(r.body, "\ngpulab_fleet_fenced 0\n") != NULL);
      check_promtool_metrics(r.body, "/tmp/gpulab-test-fleet.metrics");
    }
    http_reply_free(&r);
    if (counted) return;
    if (i == 100) CHECK_FAIL_("%s", "b's /metrics never counted a's queued job");
  }
}

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
  http_request(&b, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
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

/* A job on parent, on d, waiting for it: started once it ended (a host dependency,
 * so started_at says when). */
static long long post_child(struct gpulabd *d, long long parent) {
  char body[256];
  snprintf(body, sizeof body,
           "{\"type\":\"transpose\",\"params\":" SMALL
           ",\"depends_on\":[%lld],\"dependency\":\"host\"}",
           parent);
  return post_on(&d->http, "/jobs?wait=0", body);
}

/* Chains survive a take-over: a dies with p1 running (c1 on it) and p2 queued (c2 on
 * it). On b (two streams, so that nothing but the chain orders c2 after p2), c1 fails
 * as the child of a failed parent, and c2 runs only after p2 ended. */
static void test_chains_taken_over(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  long long p1 = start_slow(&a);
  long long c1 = post_child(&a, p1);
  long long p2 = post_on(&a.http, "/stencil?wait=0", MEDIUM);
  long long c2 = post_child(&a, p2);
  job_wait_state(&a, c2, "waiting", 10);
  char node[64] = "";
  for (int i = 0; i < 100 && strcmp(node, "a") != 0; i++, usleep(20000))
    node_of(c2, node, sizeof node); /* its row written */
  gpulabd_kill(&a);
  start_node_with(&b, "b", "2", false);
  json_t *j = job_wait_final(&b, p1, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK_STR_EQ(JSTR(j, "error.code"), "interrupted");
  json_decref(j);
  j = job_wait_final(&b, c1, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK_STR_EQ(JSTR(j, "error.code"), "parent_failed");
  json_decref(j);
  json_t *parent = job_wait_final(&b, p2, 60), *child = job_wait_final(&b, c2, 60);
  CHECK_STR_EQ(JSTR(parent, "state"), "done");
  CHECK_STR_EQ(JSTR(child, "state"), "done");
  CHECK_STR_EQ(JSTR(child, "node"), "b");
  CHECK(strcmp(JSTR(child, "started_at"), JSTR(parent, "finished_at")) >= 0);
  json_decref(parent);
  json_decref(child);
  gpulabd_stop(&b);
}

/* A queued job whose parent runs on another live node is claimed by none until the
 * parent ended (then by any node). The parent is moved to a made-up node x, as the
 * database would show a chain split across nodes. */
static void test_child_waits_for_parent_elsewhere(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  long long parent = start_slow(&a);
  long long child = post_child(&a, parent);
  char node[64] = "", sql[256];
  for (int i = 0; i < 100 && strcmp(node, "a") != 0; i++, usleep(20000))
    node_of(child, node, sizeof node); /* its row written */
  gpulabd_kill(&a);
  exec_sql(
      "INSERT INTO nodes(name, advertise, started, lease_until, epoch, devices) VALUES"
      " ('x', 'http://127.0.0.1:9', 0, extract(epoch from now()) + 3600, 1, '[]')");
  snprintf(sql, sizeof sql, "UPDATE jobs SET node = 'x' WHERE id = %lld", parent);
  exec_sql(sql);
  start_node(&b, "b");
  for (int i = 0; i < 300 && strcmp(node, "") != 0; i++, usleep(20000))
    node_of(child, node, sizeof node); /* a taken over: its child queued for any node */
  CHECK_STR_EQ(node, "");
  usleep(2500 * 1000); /* b's claims meanwhile: a lease and more */
  node_of(child, node, sizeof node);
  CHECK_STR_EQ(node, ""); /* not claimed: its parent runs on x */
  snprintf(sql, sizeof sql,
           "UPDATE jobs SET state = 'done', record = jsonb_set(record::jsonb, '{state}',"
           " '\"done\"')::text WHERE id = %lld",
           parent);
  exec_sql(sql);
  json_t *j = job_wait_final(&b, child, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK_STR_EQ(JSTR(j, "node"), "b");
  json_decref(j);
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

/* a busy (its one stream taken by a long job) hands its queued jobs to an idle b:
 * they are done on b before a's long job ends; the oldest stays for a's lane. */
static void test_busy_hands_over(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  start_node(&b, "b");
  long long running = start_slow(&a);
  long long queued[4];
  for (int i = 0; i < 4; i++) queued[i] = post_on(&a.http, "/transpose?wait=0", SMALL);
  json_t *slow = job_wait_final(&a, running, 60);
  int on_b = 0;
  for (int i = 0; i < 4; i++) {
    json_t *j = job_wait_final(&a, queued[i], 30); /* a reads b's jobs too */
    CHECK_STR_EQ(JSTR(j, "state"), "done");
    char node[64];
    node_of(queued[i], node, sizeof node);
    CHECK_STR_EQ(JSTR(j, "node"), node);     /* the job says where it ran */
    CHECK_STR_EQ(node, i == 0 ? "a" : node); /* the oldest stays: a's lane takes it next */
    if (strcmp(node, "b") == 0) {
      on_b++;
      CHECK(strcmp(JSTR(j, "finished_at"), JSTR(slow, "finished_at")) < 0);
    }
    json_decref(j);
  }
  json_decref(slow);
  printf("busy node: %d of its 4 queued jobs ran on the idle node, before its long job ended\n",
         on_b);
  CHECK(on_b >= 2);
  gpulabd_stop(&a);
  gpulabd_stop(&b);
}

/* b starts after a died: none of a's jobs was handed over before. */
static void test_take_over(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  long long running = start_slow(&a);
  long long queued[3];
  for (int i = 0; i < 3; i++) queued[i] = post_on(&a.http, "/transpose?wait=0", SMALL);
  gpulabd_kill(&a);
  double t0 = now_s();
  start_node(&b, "b");
  for (int i = 0; i < 3; i++) {
    json_t *j = job_wait_final(&b, queued[i], 30);
    CHECK_STR_EQ(JSTR(j, "state"), "done");
    json_decref(j);
    char node[64];
    node_of(queued[i], node, sizeof node);
    CHECK_STR_EQ(node, "b"); /* run by b alone: a died before it started it */
  }
  json_t *j = job_wait_final(&b, running, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK_STR_EQ(JSTR(j, "error.code"), "interrupted");
  CHECK(strstr(JSTR(j, "error.message"), "node a") != NULL);
  json_decref(j);
  printf(
      "take-over: a's 3 queued jobs done on b, its running one interrupted, %.1f s after "
      "kill -9\n",
      now_s() - t0);
  gpulabd_stop(&b);
}

/* a frozen (SIGSTOP) past its lease is taken over by b, which runs a's queued job and
 * fails its running one; a, thawed, finds itself taken over: it drops both (its late
 * writes change nothing) and joins again, taking jobs as before. */
static void test_fenced_after_take_over(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  long long running = start_slow(&a);
  long long queued = post_on(&a.http, "/transpose?wait=0", SMALL);
  kill(a.pid, SIGSTOP);
  start_node(&b, "b");
  json_t *j = job_wait_final(&b, queued, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  json_decref(j);
  kill(a.pid, SIGCONT);
  json_t *dropped = job_wait_final(&a, running, 30); /* a's copy in memory */
  CHECK_STR_EQ(JSTR(dropped, "state"), "canceled");
  json_decref(dropped);
  usleep(500 * 1000); /* a's late writes, were they not fenced, would have landed */
  char node[64];
  node_of(queued, node, sizeof node);
  CHECK_STR_EQ(node, "b");
  j = job_wait_final(&b, running, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK_STR_EQ(JSTR(j, "error.code"), "interrupted");
  json_decref(j);
  j = job_wait_final(&b, queued, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  json_decref(j);
  struct http_reply r;
  http_post_json(&a, "/transpose", SMALL, &r); /* a joined again */
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
  gpulabd_stop(&a);
  gpulabd_stop(&b);
}

/* SIGTERM to a running a long job: a claims nothing more but keeps its lease while
 * the job finishes (within --grace), so b does not fail it `interrupted` meanwhile.
 * The job times batches for 4 s (the `max_time` rule: never enough samples for its
 * noise rule), twice the lease, however fast this build runs a batch (SLOW's 40
 * batches take 35 s under the sanitizers, past --grace's 30). */
static void test_drain_keeps_lease(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  start_node(&b, "b");
  long long running = post_on(&a.http, "/stencil?wait=0",
                              "{\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,"
                              "\"batches\":1,\"reps\":1,\"min_samples\":100,"
                              "\"max_noise\":0.000001,\"max_time\":4}");
  job_wait_state(&a, running, "running", 30);
  gpulabd_stop_within(&a, 60); /* waits for the job: 4 s and its last batch */
  json_t *j = job_wait_final(&b, running, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JNUM(j, "run_ms") > 2000); /* longer than the lease: b would have taken it */
  printf("drain: a's job, SIGTERM as it started, ran %.1f s (lease 2 s): done\n",
         JNUM(j, "run_ms") / 1e3);
  json_decref(j);
  gpulabd_stop(&b);
}

/* A floods a with FLOOD jobs, then B sends one; a dies; b, one stream, claims one job
 * at a time in turns across clients: B's job runs second at the latest. */
static void test_fair_claims(void) {
  struct gpulabd a, b;
  start_node(&a, "a");
  start_slow(&a); /* the flood stays queued */
  long long flood[FLOOD];
  for (int i = 0; i < FLOOD; i++) flood[i] = post_on(&a.http, "/transpose?wait=0", SMALL);
  struct http_client other;
  http_client_open_from(&other, a.port, "127.0.0.2");
  long long late = post_on(&other, "/transpose?wait=0", SMALL);
  http_client_close(&other);
  gpulabd_kill(&a);
  start_node(&b, "b");
  json_t *j = job_wait_final(&b, late, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  const char *late_start = JSTR(j, "started_at");
  int before = 0; /* the flood's jobs that started first */
  for (int i = 0; i < FLOOD; i++) {
    json_t *f = job_wait_final(&b, flood[i], 30);
    CHECK_STR_EQ(JSTR(f, "state"), "done");
    if (strcmp(JSTR(f, "started_at"), late_start) < 0) before++;
    json_decref(f);
  }
  json_decref(j);
  printf("fair claims: the other client's job started after %d of the flood's %d\n", before, FLOOD);
  CHECK(before <= 1);
  gpulabd_stop(&b);
}

static void cluster(const char *what) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' %s '%s' >/dev/null", getenv("GPULAB_PG_CLUSTER"), what,
           getenv("GPULAB_PG_DIR"));
  if (system(cmd) != 0) CHECK_FAIL_("%s failed", cmd);
}

static void *restart_cluster(void *arg) {
  (void)arg;
  usleep(300 * 1000); /* under load already */
  cluster("restart");
  return NULL;
}

/* One job posted to d: its id when accepted, 0 when refused with 503
 * store_unavailable (the database away); anything else fails the test. */
static long long post_or_503(struct gpulabd *d) {
  struct http_reply r;
  http_client_request(&d->http, "POST", "/transpose?wait=0", "application/json", SMALL,
                      strlen(SMALL), HTTP_TRANSPORT_OK, &r);
  long long id = 0;
  if (r.status == 503) {
    CHECK_ERROR(&r, 503, "store_unavailable", NULL);
  } else {
    CHECK_STATUS(&r, r.status == 200 ? 200 : 202); /* 200: run at once, inline */
    id = JINT(r.json, "id");
  }
  http_reply_free(&r);
  return id;
}

/* PostgreSQL restarted while a and b take jobs: meanwhile jobs are refused with a clear
 * 503, never lost; both take jobs again once it is back, and every job accepted (before,
 * during, after) ends done. Leases of 10 s: the restart is shorter than a lease. */
static void test_pg_restart(void) {
  struct gpulabd nodes[2];
  const char *names[] = {"a", "b"};
  for (int i = 0; i < 2; i++) {
    const char *args[] = {"--backend", "cpu", "--db", db, "--node", names[i], NULL};
    gpulabd_start(args, &nodes[i]);
  }
  long long accepted[RESTART_POSTS];
  int n_accepted = 0, refused = 0, after = 0;
  pthread_t restarter;
  pthread_create(&restarter, NULL, restart_cluster, NULL);
  double t0 = now_s();
  for (int i = 0; i < RESTART_POSTS && (now_s() - t0 < 30) && after < 20; i++) {
    long long id = post_or_503(&nodes[i % 2]);
    if (id) accepted[n_accepted++] = id;
    refused += id == 0;
    after += id && refused > 0; /* taken again once the server was back */
    usleep(10 * 1000);
  }
  pthread_join(restarter, NULL);
  for (int i = 0; i < n_accepted; i++) {
    json_t *j = job_wait_final(&nodes[i % 2], accepted[i], 30);
    CHECK_STR_EQ(JSTR(j, "state"), "done");
    json_decref(j);
  }
  printf("PostgreSQL restart: %d jobs accepted (all done), %d refused with 503 meanwhile\n",
         n_accepted, refused);
  CHECK(refused > 0 && after == 20);
  for (int i = 0; i < 2; i++) gpulabd_stop(&nodes[i]);
}

/* /health's fleet part, polled until its status is want (10 s at most). */
static void wait_fleet_status(struct gpulabd *d, const char *want) {
  for (int i = 0;; i++, usleep(50 * 1000)) {
    struct http_reply r;
    http_get(d, "/health", &r);
    bool seen = strcmp(JSTR(r.json, "fleet.status"), want) == 0;
    if (seen) {
      CHECK_INT_EQ(r.status, strcmp(want, "ok") == 0 ? 200 : 503);
      CHECK_STR_EQ(JSTR(r.json, "fleet.node"), "a");
    }
    http_reply_free(&r);
    if (seen) return;
    if (i == 200) CHECK_FAIL_("/health's fleet.status never became %s", want);
  }
}

/* PostgreSQL stopped: a node that cannot renew its lease for half of it says so in
 * /health (503, fleet.status fenced) and starts no job; once the server is back it
 * renews, and says ok again. */
static void test_fenced_while_db_away(void) {
  struct gpulabd a;
  start_node(&a, "a");
  wait_fleet_status(&a, "ok");
  cluster("pgstop");
  wait_fleet_status(&a, "fenced");
  cluster("pgstart");
  wait_fleet_status(&a, "ok");
  gpulabd_stop(&a);
}

static int setup(void) {
  if (!getenv("GPULAB_TEST_DB") || !getenv("GPULAB_PG_CLUSTER") || !getenv("GPULAB_PG_DIR")) {
    printf(
        "test_fleet: needs a PostgreSQL cluster of its own ($GPULAB_TEST_DB,"
        " $GPULAB_PG_CLUSTER, $GPULAB_PG_DIR; ctest starts one)\n");
    return CHECK_SKIP;
  }
  test_db_make("fleet", db, sizeof db);
  return 0;
}

static void teardown(void) { test_db_drop(db); }

/* Each case on an empty database. */
static void reset(void) { test_db_reset(db); }

static const struct test_case cases[] = {
    TEST(test_cancel_from_other),
    TEST(test_cancel_unclaimed),
    TEST(test_events_from_other),
    TEST(test_fleet_devices),
    TEST(test_sweep_from_other),
    TEST(test_kernel_on_other),
    TEST(test_chains_taken_over),
    TEST(test_child_waits_for_parent_elsewhere),
    TEST(test_busy_hands_over),
    TEST(test_chain_sent_to_parent),
    TEST(test_buffer_sent_home),
    TEST(test_take_over),
    TEST(test_fenced_after_take_over),
    TEST(test_drain_keeps_lease),
    TEST(test_fair_claims),
    TEST(test_pg_restart),
    TEST(test_fenced_while_db_away),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = setup, .before_each = reset, .teardown = teardown};
