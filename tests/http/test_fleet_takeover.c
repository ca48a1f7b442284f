/* A fleet taking over (test_fleet.c has the rest; helpers in fleet_common.c): two
 * gpulabd on one PostgreSQL database, leases of 2 s. A busy a hands queued jobs to an
 * idle b; chains whose parent ran elsewhere wait for it. kill -9 of a with jobs running
 * and queued: once a's lease ran out, b takes a over: every queued job runs on b (each
 * on one node only), the running one fails `interrupted` naming a, none is lost; a
 * frozen a, taken over, drops what was taken and its late writes change nothing; a
 * draining node keeps its lease. b claims a's queued jobs fairly across clients: one
 * client's flood does not keep another's job waiting behind it. PostgreSQL restarted
 * under load: 503s meanwhile, no job lost; restarted under an idle node: jobs taken
 * again within seconds; stopped: /health says the node is fenced. */
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

/* PostgreSQL restarted while a node is idle: the next job's own commit (on the answering
 * thread) meets the dropped connection and is refused; with nothing queued, the writer
 * thread must still notice and probe, so that jobs are taken again within a few seconds
 * (it slept on, and every job was refused until a restart, when only its own batches
 * told it of a failure). */
static void test_pg_restart_idle(void) {
  struct gpulabd a;
  const char *args[] = {"--backend", "cpu", "--db", db, "--node", "a", NULL};
  gpulabd_start(args, &a);
  json_t *j = job_wait_final(&a, post_or_503(&a), 30); /* everything written: the writer idles */
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  json_decref(j);
  usleep(500 * 1000);
  cluster("restart");
  int refused = 0;
  long long id = 0;
  for (double t0 = now_s(); !id && now_s() - t0 < 15; usleep(50 * 1000))
    refused += (id = post_or_503(&a)) == 0;
  printf("PostgreSQL restarted under an idle node: %d jobs refused before one was taken\n",
         refused);
  CHECK(id != 0);
  j = job_wait_final(&a, id, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  json_decref(j);
  gpulabd_stop(&a);
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

static int setup(void) { return fleet_db_setup("fleet_takeover"); }

/* Each case on an empty database. */
static const struct test_case cases[] = {
    TEST(test_chains_taken_over),
    TEST(test_child_waits_for_parent_elsewhere),
    TEST(test_busy_hands_over),
    TEST(test_take_over),
    TEST(test_fenced_after_take_over),
    TEST(test_drain_keeps_lease),
    TEST(test_fair_claims),
    TEST(test_pg_restart),
    TEST(test_pg_restart_idle),
    TEST(test_fenced_while_db_away),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = setup, .before_each = fleet_db_reset, .teardown = fleet_db_drop};
