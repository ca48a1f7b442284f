/* The store's API (server/store/store.h) against a real database: an SQLite file, or
 * with $GPULAB_TEST_DB a PostgreSQL cluster (ctest's test_store_pg, on a cluster of
 * its own since it restarts it: $GPULAB_PG_CLUSTER and $GPULAB_PG_DIR name
 * tests/pg/pg_cluster.sh and the cluster's folder). The same cases run on both; the
 * PostgreSQL ones after them: a server restarted under the store, two gpulabd on one
 * database (ids, the schema's migration). SQLite's file alone (its checkpoints, the
 * accept journal) is test_store_sqlite.c's, users' kernels and problems
 * test_store_kernels.c's; the helpers are store_common.h's. */
#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/json_text.h"
#include "server/service/durable.h"
#include "server/service/job_json.h"
#include "server/store/store.h"
#include "server/store/store_sqlite.h"
#include "store_common.h"
#include "test_db.h"
#include "tests/runner.h"

/* put, sync, flush, and every read. */
static void test_rows(void) {
  struct store *s = open_store();
  CHECK_INT_EQ(store_check(s), 0);
  CHECK_INT_EQ(store_sync(s, 0), 0);
  uint64_t t1 = put_job(s, 1, "queued", 0, "{\"id\":1,\"state\":\"queued\"}", true);
  put_job(s, 2, "running", 0, "{\"id\":2,\"state\":\"running\"}", true);
  uint64_t t3 = put_job(s, 3, "done", 1500.25, "{\"id\":3,\"state\":\"done\"}", true);
  CHECK(t3 > t1);
  CHECK_INT_EQ(store_sync(s, t3), 0);
  CHECK_INT_EQ(store_sync(s, t1), 0);
  /* An update without a record keeps the stored one; one of a missing row makes none. */
  put_job(s, 2, "running", 0, NULL, false);
  put_job(s, 9, "done", 1600, "{\"id\":9}", false);
  store_flush(s);
  check_record(s, 2, "{\"id\":2,\"state\":\"running\"}");
  CHECK(store_record(s, 9) == NULL);
  CHECK(store_record(s, 77) == NULL);
  CHECK_INT_EQ(store_max_id(s), 3);

  listed = 0;
  CHECK_INT_EQ(store_list(s, 0, NULL, NULL, NULL, 10, count_listed, NULL), 3);
  CHECK_INT_EQ(store_list(s, 3, NULL, NULL, NULL, 10, count_listed, NULL), 2);
  CHECK_INT_EQ(store_list(s, 0, "done", NULL, NULL, 10, count_listed, NULL), 1);
  CHECK_INT_EQ(store_list(s, 0, NULL, "gemm", "alice", 10, count_listed, NULL), 2);
  CHECK_INT_EQ(store_list(s, 0, NULL, "stencil", NULL, 10, count_listed, NULL), 0);
  CHECK_INT_EQ(store_list(s, 0, NULL, NULL, NULL, 1, count_listed, NULL), 1);
  CHECK_INT_EQ(listed, 3 + 2 + 1 + 2 + 1);

  unfinished_n = 0;
  CHECK_INT_EQ(store_unfinished(s, on_unfinished, NULL), 2);
  CHECK_INT_EQ(unfinished_ids[0], 1);
  CHECK_INT_EQ(unfinished_ids[1], 2);

  /* Sweeps: written whole each time, the newest `limit` oldest first. */
  for (uint64_t id = 1; id <= 3; id++) {
    struct store_row sw = {.table = STORE_SWEEPS,
                           .id = id,
                           .client = "carol",
                           .created = 2000.0 + (double)id,
                           .record = "{\"desc\":{},\"jobs\":[1]}"};
    CHECK_INT_EQ(store_put(s, &sw), 0);
    CHECK_INT_EQ(store_put(s, &sw), 0); /* again: replaced, not doubled */
  }
  sweeps_n = 0;
  CHECK_INT_EQ(store_sweeps(s, 2, on_sweep, NULL), 2);
  CHECK_INT_EQ(store_max_sweep_id(s), 3);

  /* Id marks. */
  CHECK_INT_EQ(store_ids_floor(s, "jobs"), 0);
  CHECK_INT_EQ(store_ids_reserve(s, "jobs", 1024), 0);
  CHECK_INT_EQ(store_ids_floor(s, "jobs"), 1024);
  CHECK_INT_EQ(store_ids_reserve(s, "jobs", 2048), 0);
  CHECK_INT_EQ(store_ids_reserve(s, "jobs", 5), 0); /* a clean stop puts it back */
  CHECK_INT_EQ(store_ids_floor(s, "jobs"), 5);

  /* Pruning by age: finished before the time only. */
  CHECK_INT_EQ(store_prune(s, 1400), 0);
  CHECK_INT_EQ(store_prune(s, 1501), 1);
  CHECK(store_record(s, 3) == NULL);
  CHECK_INT_EQ(store_max_id(s), 2);

  struct store_status st;
  store_status(s, &st);
  CHECK(st.writable);
  CHECK_INT_EQ(st.error, 0);
  CHECK_STR_EQ(st.backend, test_db_is_pg(db) ? "postgresql" : "sqlite");
  CHECK_STR_EQ(st.durability, test_db_is_pg(db) ? "full" : "normal");
  CHECK_INT_EQ(store_set_durability(s, STORE_DURABILITY_FULL), 0);
  store_status(s, &st);
  CHECK_STR_EQ(st.durability, "full");
  CHECK_INT_EQ(store_set_durability(s, STORE_DURABILITY_NORMAL), 0);
  store_status(s, &st);
  CHECK_STR_EQ(st.durability, "normal");
  CHECK(st.used_bytes > 0);
  store_close(s);

  /* What was written is there after a reopen. */
  s = open_store();
  check_record(s, 1, "{\"id\":1,\"state\":\"queued\"}");
  CHECK_INT_EQ(store_ids_floor(s, "jobs"), 5);
  store_close(s);
  printf("rows: ok\n");
}

/* Rows queued under a hold are written together when it is released; flushers wait. */
static void test_hold(void) {
  struct store *s = open_store();
  store_hold(s);
  store_hold(s); /* holds nest */
  put_job(s, 20, "queued", 0, "{\"id\":20}", true);
  uint64_t last = put_job(s, 21, "queued", 0, "{\"id\":21}", true);
  struct flusher f = {.s = s};
  pthread_t t;
  CHECK_INT_EQ(pthread_create(&t, NULL, flush_main, &f), 0);
  usleep(150 * 1000);
  CHECK(!atomic_load(&f.done));
  if (test_db_is_pg(db)) { /* another connection sees none of them yet */
    PGconn *c = PQconnectdb(db);
    PGresult *res = PQexec(c, "SELECT COUNT(*) FROM jobs WHERE id IN (20, 21)");
    CHECK_STR_EQ(PQgetvalue(res, 0, 0), "0");
    PQclear(res);
    PQfinish(c);
  }
  store_release(s);
  usleep(50 * 1000);
  CHECK(!atomic_load(&f.done));
  store_release(s);
  pthread_join(t, NULL);
  CHECK(atomic_load(&f.done));
  CHECK_INT_EQ(store_sync(s, last), 0);
  check_record(s, 20, "{\"id\":20}");
  store_close(s);
  printf("hold: ok\n");
}

/* A record made when its row is written (store_row.make_record), from a copy of arg. */
static atomic_int made;
static char *make_record(const void *arg) {
  atomic_fetch_add(&made, 1);
  char *text = malloc(64);
  snprintf(text, 64, "{\"made\":%d}", *(const int *)arg);
  return text;
}

static void on_replaced_unfinished(void *arg, uint64_t id, const char *state, const void *request,
                                   size_t len) {
  int *seen = arg;
  if (id == 30) seen[0]++;
  if (id != 32) return;
  seen[1]++;
  CHECK_STR_EQ(state, "running");
  CHECK_INT_EQ(len, 40); /* the running row's own request (put_job's) */
}

static uint64_t put_lazy(struct store *s, uint64_t id, const char *state, int arg, bool create) {
  struct store_row row = {.table = STORE_JOBS,
                          .id = id,
                          .client = "carol",
                          .type = "transpose",
                          .state = state,
                          .created = 2000.0,
                          .request = "req",
                          .request_len = 3,
                          .make_record = make_record,
                          .record_arg = &arg, /* copied: arg's frame is gone when it is made */
                          .record_arg_len = sizeof arg,
                          .create = create};
  CHECK_INT_EQ(store_put(s, &row), 0);
  return store_ticket(s);
}

/* A job's row still queued is replaced by its next one: a job accepted and finished
 * between two commits is one insert, in its final state, whose queued record is never
 * made; a row without a record keeps the replaced one's (made when written); rows of
 * other jobs and rows already written are left alone. */
static void test_replace(void) {
  struct store *s = open_store();
  store_hold(s); /* nothing is written until the release: every row meets in the queue */
  put_lazy(s, 30, "queued", 1, true);
  put_job(s, 31, "queued", 0, "{\"id\":31}", true);
  uint64_t t30 = put_job(s, 30, "done", 2030.0, "{\"id\":30,\"state\":\"done\"}", false);
  put_lazy(s, 32, "queued", 7, true);
  uint64_t t32 = put_job(s, 32, "running", 0, NULL, false); /* keeps the lazy record */
  store_release(s);
  CHECK_INT_EQ(store_sync(s, t30), 0);
  CHECK_INT_EQ(store_sync(s, t32), 0);
  CHECK_INT_EQ(atomic_load(&made), 1); /* 32's, once; 30's never */
  check_record(s, 30, "{\"id\":30,\"state\":\"done\"}");
  check_record(s, 32, "{\"made\":7}");
  check_record(s, 31, "{\"id\":31}");
  int seen[2] = {0, 0}; /* 32 is running, with its request; 30 is done */
  store_unfinished(s, on_replaced_unfinished, seen);
  CHECK_INT_EQ(seen[0], 0);
  CHECK_INT_EQ(seen[1], 1);
  /* A row written already is not replaced: the next one is an update of it. */
  uint64_t t = put_job(s, 32, "done", 2040.0, "{\"id\":32}", false);
  CHECK_INT_EQ(store_sync(s, t), 0);
  check_record(s, 32, "{\"id\":32}");
  store_close(s);
  printf("replace: ok\n");
}

/* A record given to a row still queued is its record (never made); a row replaced, or
 * already written, refuses it (-ENOENT) and makes its own. */
static void test_give(void) {
  struct store *s = open_store();
  atomic_store(&made, 0);
  store_hold(s);
  uint64_t t40 = put_lazy(s, 40, "queued", 4, true);
  uint64_t t41 = put_lazy(s, 41, "queued", 5, true);
  put_job(s, 41, "running", 0, NULL, false); /* replaces 41's queued row */
  CHECK_INT_EQ(store_give_record(s, t40, strdup("{\"given\":40}")), 0);
  CHECK_INT_EQ(store_give_record(s, t41, strdup("{\"given\":41}")), -ENOENT);
  CHECK_INT_EQ(store_give_record(s, t40, strdup("{\"given\":0}")), -ENOENT); /* has one */
  store_release(s);
  store_flush(s);
  CHECK_INT_EQ(store_give_record(s, t40, strdup("{\"given\":1}")), -ENOENT); /* written */
  CHECK_INT_EQ(atomic_load(&made), 1);                                       /* 41's */
  check_record(s, 40, "{\"given\":40}");
  check_record(s, 41, "{\"made\":5}");
  store_close(s);
  printf("give: ok\n");
}

/* A job answered as accepted (durable_accepted_text): the answer is job_json(v, true)'s
 * text and the record its row got is job_json(v, false)'s, for a queued and a waiting
 * job, with an error and a cancel request too. */
static void test_accepted_text(void) {
  struct store *s = open_store();
  struct job_view v;
  memset(&v, 0, sizeof v);
  exp_spec_default(EXP_TRANSPOSE, &v.spec);
  snprintf(v.client, sizeof v.client, "dave");
  v.device = 0;
  v.lane = -1;
  v.created_at = 1e9 + 0.25;
  for (int i = 0; i < 3; i++) {
    v.id = 50 + (uint64_t)i;
    v.state = i == 1 ? JOB_WAITING : JOB_QUEUED;
    v.n_parents = i == 1;
    v.parents[0] = 7;
    v.cancel_requested = i == 2;
    if (i == 2) snprintf(v.error_code, sizeof v.error_code, "odd\"error\":");
    struct engine_recorded out = {0, NULL};
    struct engine_job_request req;
    memset(&req, 0, sizeof req);
    durable_record(s, &v, &req, true, &out);
    char *answer = durable_accepted_text(s, &v, out.ticket);
    json_t *with = job_json(&v, true), *without = job_json(&v, false);
    char *want_answer = json_text(with, NULL), *want_record = json_text(without, NULL);
    CHECK_STR_EQ(answer, want_answer);
    CHECK_INT_EQ(store_sync(s, out.ticket), 0);
    check_record(s, v.id, want_record);
    free(answer);
    free(want_answer);
    free(want_record);
    json_decref(with);
    json_decref(without);
  }
  store_close(s);
  printf("accepted text: ok\n");
}

/* --max-db-bytes: past the bound, the oldest finished jobs go; unfinished ones stay. */
static void test_limit(void) {
  struct store *s = open_store();
  char record[2048];
  unsigned seed = 1; /* letters that do not compress (PostgreSQL compresses a record) */
  for (size_t i = 0; i < sizeof record; i++)
    record[i] = (char)('a' + (seed = seed * 1103515245u + 12345u) % 26);
  memcpy(record, "{\"pad\":\"", 8);
  memcpy(record + sizeof record - 3, "\"}", 3);
  for (uint64_t id = 100; id < 400; id++)
    put_job(s, id, id < 390 ? "done" : "queued", id < 390 ? 5000.0 + (double)id : 0, record, true);
  store_flush(s);
  struct store_status st;
  store_status(s, &st);
  uint64_t before = st.used_bytes;
  CHECK(before > 300 * 1000);
  store_limit(s, before / 2);
  store_status(s, &st);
  CHECK(st.pruned_jobs > 0);
  CHECK(st.used_bytes <= before / 2);
  CHECK_INT_EQ(store_check(s), 0);
  char *r = store_record(s, 100);
  CHECK(r == NULL); /* the oldest finished went first */
  r = store_record(s, 395);
  CHECK(r != NULL);
  free(r);
  store_limit(s, 0);
  store_close(s);
  printf("limit: ok\n");
}

/* ---- PostgreSQL only ---- */

static void cluster(const char *what) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' %s '%s'", getenv("GPULAB_PG_CLUSTER"), what,
           getenv("GPULAB_PG_DIR"));
  if (system(cmd) != 0) CHECK_FAIL_("%s failed", cmd);
}

/* The server goes away under the store and comes back: writes meanwhile fail -EIO and
 * store_check says so; the store reconnects; every row queued before the failure is
 * written or reported failed by store_sync, none lost silently. */
static void test_pg_restart(void) {
  if (!test_db_on_pg()) return; /* PostgreSQL\'s alone */
  struct store *s = open_store();
  uint64_t ok = put_job(s, 50, "queued", 0, "{\"id\":50}", true);
  CHECK_INT_EQ(store_sync(s, ok), 0);
  /* Rows racing the stop, and rows held until the server is gone (their batch fails). */
  uint64_t tickets[8];
  for (int i = 0; i < 4; i++) tickets[i] = put_job(s, 60 + (uint64_t)i, "queued", 0, "{}", true);
  store_hold(s);
  for (int i = 4; i < 8; i++) tickets[i] = put_job(s, 60 + (uint64_t)i, "queued", 0, "{}", true);
  cluster("pgstop");
  store_release(s);
  CHECK_INT_EQ(store_sync(s, tickets[7]), -EIO);
  uint64_t down = put_job(s, 70, "queued", 0, "{\"id\":70}", true);
  CHECK_INT_EQ(store_sync(s, down), -EIO);
  CHECK_INT_EQ(store_check(s), -EIO);
  struct store_status st;
  store_status(s, &st);
  CHECK(!st.writable);
  CHECK_INT_EQ(st.error, -EIO);
  CHECK(st.message[0] != '\0');
  printf("while down: %s\n", st.message);
  CHECK(store_record(s, 50) == NULL); /* reads fail too, and say nothing */
  cluster("pgstart");
  int waited = 0;
  while (store_check(s) != 0 && waited++ < 100) usleep(100 * 1000); /* the probe, each second */
  CHECK_INT_EQ(store_check(s), 0);
  uint64_t again = put_job(s, 71, "queued", 0, "{\"id\":71}", true);
  CHECK_INT_EQ(store_sync(s, again), 0);
  check_record(s, 71, "{\"id\":71}");
  check_record(s, 50, "{\"id\":50}");
  CHECK(store_record(s, 70) == NULL); /* failed, and said so */
  int written = 0;
  for (int i = 0; i < 8; i++) {
    int rc = store_sync(s, tickets[i]);
    char *r = store_record(s, 60 + (uint64_t)i);
    if (rc == 0) {
      CHECK(r != NULL);
      written++;
    } else {
      CHECK_INT_EQ(rc, -EIO);
      CHECK(r == NULL);
    }
    free(r);
  }
  printf("restart: ok (%d of 8 rows queued before it written, the others reported failed)\n",
         written);
  store_status(s, &st);
  CHECK(st.writable);
  CHECK(st.write_errors >= 1);
  store_close(s);
}

/* Two gpulabd on one database: each records its name (--node) on the jobs it creates;
 * a reserve from a mark the other moved is refused (-EBUSY), and a take moves past
 * the other's ids instead; nothing is handed out twice. */
static void test_pg_two_nodes(void) {
  if (!test_db_on_pg()) return; /* PostgreSQL\'s alone */
  struct store *a = open_store(), *b = open_store();
  store_set_node(a, "node-a"); /* --node: on the job rows each creates */
  store_set_node(b, "node-b");
  CHECK_INT_EQ(store_sync(a, put_job(a, 80, "queued", 0, "{\"id\":80}", true)), 0);
  CHECK_INT_EQ(store_sync(b, put_job(b, 81, "queued", 0, "{\"id\":81}", true)), 0);
  /* Writes are fenced (fleet.h): b's update of a's job changes nothing, a's does. */
  put_job(b, 80, "done", 4000, "{\"id\":80}", false);
  store_flush(b);
  PGconn *c = PQconnectdb(db);
  const char *rows = "SELECT id, node, state FROM jobs WHERE id IN (80, 81) ORDER BY id";
  PGresult *res = PQexec(c, rows);
  CHECK_INT_EQ(PQntuples(res), 2);
  CHECK_STR_EQ(PQgetvalue(res, 0, 1), "node-a");
  CHECK_STR_EQ(PQgetvalue(res, 0, 2), "queued");
  CHECK_STR_EQ(PQgetvalue(res, 1, 1), "node-b");
  PQclear(res);
  put_job(a, 80, "done", 4000, "{\"id\":80}", false);
  store_flush(a);
  res = PQexec(c, rows);
  CHECK_STR_EQ(PQgetvalue(res, 0, 2), "done");
  PQclear(res);
  PQfinish(c);
  /* Each reads back its own unfinished jobs only (a restart recovers those). */
  unfinished_n = 0;
  CHECK_INT_EQ(store_unfinished(a, on_unfinished, NULL), 0);
  CHECK_INT_EQ(store_unfinished(b, on_unfinished, NULL), 1);
  CHECK_INT_EQ(unfinished_ids[0], 81);
  uint64_t f = store_ids_floor(a, "buffers");
  CHECK_INT_EQ(store_ids_floor(b, "buffers"), f); /* both start above f */
  uint64_t from_a = f + 1, from_b = f + 1;
  CHECK_INT_EQ(store_ids_take(a, "buffers", &from_a, f + 1024), 0);
  CHECK_INT_EQ(from_a, f + 1);
  /* b's block moves past a's, its length kept; a reserve could not move it. */
  CHECK_INT_EQ(store_ids_reserve(b, "buffers", f + 1024), -EBUSY);
  CHECK_INT_EQ(store_check(b), 0); /* not a failing store */
  CHECK_INT_EQ(store_ids_take(b, "buffers", &from_b, f + 1024), 0);
  CHECK_INT_EQ(from_b, f + 1025);
  CHECK_INT_EQ(store_ids_floor(a, "buffers"), f + 2048);
  /* a's clean stop cannot put the mark back over b's ids; b's can (nobody took more). */
  CHECK_INT_EQ(store_ids_reserve(a, "buffers", f + 10), -EBUSY);
  CHECK_INT_EQ(store_ids_reserve(b, "buffers", f + 1030), 0);
  /* a's next block: from its next id f + 11, past b's last f + 1030. */
  uint64_t next_a = f + 11;
  CHECK_INT_EQ(store_ids_take(a, "buffers", &next_a, f + 1034), 0);
  CHECK_INT_EQ(next_a, f + 1031);
  CHECK_INT_EQ(store_ids_floor(b, "buffers"), f + 2054);
  /* A mark below the block asked for takes it where it is. */
  uint64_t far = f + 5000;
  CHECK_INT_EQ(store_ids_take(b, "buffers", &far, f + 5099), 0);
  CHECK_INT_EQ(far, f + 5000);
  store_close(a);
  store_close(b);
  printf("two nodes: ok\n");
}

/* sql on the test's own connection, its result dropped. */
static void exec_sql(const char *sql) {
  PGconn *c = PQconnectdb(db);
  PGresult *res = PQexec(c, sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK) CHECK_FAIL_("%s: %s", sql, PQerrorMessage(c));
  PQclear(res);
  PQfinish(c);
}

/* Buffers' homes (store_buffer_put, store_buffer_elsewhere): SQLite records none (one
 * box). PostgreSQL: a buffer node a made is found from b while a's lease is live, lost
 * once it is not, and unknown once a deleted it (b cannot delete a's); a's own is not
 * elsewhere for a; forget drops a's rows only; pruning drops a dead node's old ones. */
static void test_buffers(void) {
  struct store *a = open_store(); /* one gpulabd per SQLite file */
  store_set_node(a, "node-a");
  struct store_buffer_home home;
  uint64_t made = store_buffer_put(a, 700, "alice", 1234.5, true);
  if (!test_db_is_pg(db)) {
    CHECK_INT_EQ(made, 0); /* nothing queued: an upload waits for no write */
    CHECK_INT_EQ(store_buffer_elsewhere(a, 700, &home), -ENOENT);
    CHECK_INT_EQ(store_buffers_forget(a), 0);
    store_close(a);
    printf("buffers' homes: none on SQLite\n");
    return;
  }
  struct store *b = open_store();
  store_set_node(b, "node-b");
  CHECK(made > 0);
  CHECK_INT_EQ(store_sync(a, made), 0);
  CHECK_INT_EQ(store_buffer_elsewhere(b, 700, &home), -EHOSTDOWN); /* node-a holds no lease */
  CHECK_STR_EQ(home.node, "node-a");
  CHECK_STR_EQ(home.client, "alice");
  CHECK_INT_EQ(store_buffer_elsewhere(a, 700, &home), -ENOENT); /* its own */
  exec_sql(
      "INSERT INTO nodes(name, advertise, started, lease_until, epoch, devices) VALUES"
      " ('node-a', 'http://a:1', 0, extract(epoch from clock_timestamp()) + 60, 1, '[]')");
  memset(&home, 0, sizeof home);
  CHECK_INT_EQ(store_buffer_elsewhere(b, 700, &home), 0);
  CHECK_STR_EQ(home.url, "http://a:1");
  CHECK_STR_EQ(home.node, "node-a");
  CHECK_INT_EQ(store_sync(b, store_buffer_put(b, 700, "alice", 0, false)), 0); /* not b's */
  CHECK_INT_EQ(store_buffer_elsewhere(b, 700, &home), 0);
  CHECK_INT_EQ(store_sync(a, store_buffer_put(a, 700, "alice", 0, false)), 0);
  CHECK_INT_EQ(store_buffer_elsewhere(b, 700, &home), -ENOENT);
  /* a's restart forgets a's buffers, not b's. */
  store_buffer_put(a, 701, "alice", 1.0, true);
  store_buffer_put(b, 702, "bob", 1.0, true);
  store_flush(b);
  CHECK_INT_EQ(store_buffers_forget(a), 0);
  CHECK_INT_EQ(store_buffer_elsewhere(b, 701, &home), -ENOENT);
  CHECK_INT_EQ(store_buffer_elsewhere(a, 702, &home), -EHOSTDOWN);
  /* Pruning: the dead b's old row goes; the live a's stays. */
  CHECK_INT_EQ(store_sync(a, store_buffer_put(a, 703, "alice", 1.0, true)), 0);
  store_prune(a, 1e12);
  CHECK_INT_EQ(store_buffer_elsewhere(a, 702, &home), -ENOENT);
  CHECK_INT_EQ(store_buffer_elsewhere(b, 703, &home), 0);
  exec_sql("DELETE FROM nodes; DELETE FROM buffers");
  store_close(a);
  store_close(b);
  printf("buffers' homes: ok\n");
}

static void *open_main(void *arg) {
  struct store *s = NULL;
  char err[512];
  *(int *)arg = store_open(db, &s, err, sizeof err);
  if (*(int *)arg) fprintf(stderr, "store_open: %s\n", err);
  store_close(s);
  return NULL;
}

/* Two gpulabd starting at once on an empty database: one creates the schema, the
 * other waits for it (the advisory lock), both open. */
static void test_pg_migrate_race(void) {
  if (!test_db_on_pg()) return; /* PostgreSQL\'s alone */
  test_db_reset(db);
  pthread_t t[4];
  int rc[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, open_main, &rc[i]);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++) CHECK_INT_EQ(rc[i], 0);
  PGconn *c = PQconnectdb(db);
  PGresult *res = PQexec(c, "SELECT COUNT(*), MAX(version) FROM gpulab_schema");
  CHECK_STR_EQ(PQgetvalue(res, 0, 0), "1");
  CHECK_STR_EQ(PQgetvalue(res, 0, 1), "7"); /* store_pg.c's last step */
  PQclear(res);
  /* A newer gpulabd's schema is refused, not misread. */
  PQclear(PQexec(c, "UPDATE gpulab_schema SET version = 99"));
  PQfinish(c);
  struct store *s = NULL;
  char err[512];
  CHECK(store_open(db, &s, err, sizeof err) < 0);
  CHECK(strstr(err, "newer") != NULL);
  CHECK(strstr(err, "version 99") != NULL);
  printf("migrate race: ok\n");
}

static const struct test_case cases[] = {
    TEST(test_rows),
    TEST(test_hold),
    TEST(test_replace),
    TEST(test_give),
    TEST(test_accepted_text),
    TEST(test_limit),
    TEST(test_buffers),
    TEST(test_pg_two_nodes),
    TEST(test_pg_restart),
    TEST(test_pg_migrate_race),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = store_db_setup, .teardown = store_db_teardown};
