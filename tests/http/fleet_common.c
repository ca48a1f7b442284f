/* The fleet tests' helpers (fleet_common.h). */
#include "fleet_common.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/test_db.h"

char db[512];

/* Node name with `streams` streams and a 2 s lease; cpu_runner: users' kernels run in
 * the CPU test runner (--cpu-runner-test). */
void start_node_with(struct gpulabd *d, const char *name, const char *streams, bool cpu_runner) {
  const char *runner = cpu_runner ? "--cpu-runner-test" : NULL; /* NULL: the end */
  const char *args[] = {"--backend", "cpu", "--streams", streams, "--db", db,
                        "--node",    name,  "--lease-s", "2",     runner, NULL};
  gpulabd_start(args, d);
}

/* Node name with one stream (a long job keeps it busy) and a 2 s lease. */
void start_node(struct gpulabd *d, const char *name) { start_node_with(d, name, "1", false); }

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

long long post_on(struct http_client *c, const char *path, const char *body) {
  struct http_reply r;
  http_client_request(c, "POST", path, "application/json", body, strlen(body), 0, &r);
  CHECK_STATUS(&r, 202);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

/* SLOW on d's one stream, running once this returns. */
long long start_slow(struct gpulabd *d) {
  long long id = post_on(&d->http, "/stencil?wait=0", SLOW);
  job_wait_state(d, id, "running", 30);
  return id;
}

/* The one value sql reads ("" for NULL). */
void query_text(const char *sql, char *out, size_t len) {
  PGconn *c = PQconnectdb(db);
  PGresult *res = PQexec(c, sql);
  CHECK_INT_EQ(PQntuples(res), 1);
  snprintf(out, len, "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  PQfinish(c);
}

/* Runs sql, which must succeed. */
void exec_sql(const char *sql) {
  PGconn *c = PQconnectdb(db);
  PGresult *res = PQexec(c, sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    CHECK_FAIL_("%s: %s", sql, PQresultErrorMessage(res));
  PQclear(res);
  PQfinish(c);
}

/* The jobs.node column of job id ("" for NULL). */
void node_of(long long id, char *out, size_t len) {
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT node FROM jobs WHERE id = %lld", id);
  query_text(sql, out, len);
}

/* Until table nodes has d's URL (--port 0's, known once it listens: a renewal later). */
void wait_advertised(struct gpulabd *d, const char *name) {
  char url[64], stored[64] = "", sql[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", d->port);
  snprintf(sql, sizeof sql, "SELECT advertise FROM nodes WHERE name = '%s'", name);
  for (int i = 0; i < 100 && strcmp(stored, url); i++, usleep(20000))
    query_text(sql, stored, sizeof stored);
  CHECK_STR_EQ(stored, url);
}

bool listed(json_t *page, long long id) {
  size_t i;
  json_t *job;
  json_array_foreach(json_object_get(page, "jobs"), i, job) if (JINT(job, "id") == id) return true;
  return false;
}

/* a's queued job read and listed from b, before a goes. */
void check_seen_from(struct gpulabd *b, long long id) {
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

void delete_on(struct gpulabd *d, long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  HTTP_EXPECT(d, "DELETE", path, 200, NULL, NULL);
}

void check_canceled(struct gpulabd *d, long long id) {
  json_t *j = job_wait_final(d, id, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "canceled");
  json_decref(j);
}

/* b's /metrics, once it counts one job queued on a (the count is of b's last lease
 * tick), through promtool. */
void check_fleet_metrics(struct gpulabd *b) {
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

int fleet_db_setup(const char *name) {
  if (!getenv("GPULAB_TEST_DB") || !getenv("GPULAB_PG_CLUSTER") || !getenv("GPULAB_PG_DIR")) {
    printf(
        "%s: needs a PostgreSQL cluster of its own ($GPULAB_TEST_DB,"
        " $GPULAB_PG_CLUSTER, $GPULAB_PG_DIR; ctest starts one)\n",
        name);
    return CHECK_SKIP;
  }
  test_db_make(name, db, sizeof db);
  return 0;
}

void fleet_db_reset(void) { test_db_reset(db); }

void fleet_db_drop(void) { test_db_drop(db); }
