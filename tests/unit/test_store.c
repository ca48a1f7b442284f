/* The store's API (server/store/store.h) against a real database: an SQLite file, or
 * with $GPULAB_TEST_DB a PostgreSQL cluster (ctest's test_store_pg, on a cluster of
 * its own since it restarts it: $GPULAB_PG_CLUSTER and $GPULAB_PG_DIR name
 * tests/pg/pg_cluster.sh and the cluster's folder). The same cases run on both; the
 * PostgreSQL ones after them: a server restarted under the store, two gpulabd on one
 * database (ids, the schema's migration). */
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
#include "server/engine/job_json.h"
#include "server/store/durable.h"
#include "server/store/store.h"
#include "server/store/store_sqlite.h"
#include "test_db.h"
#include "tests/runner.h"

static char db[512];

/* With $GPULAB_TEST_DB the store is PostgreSQL's (test_store_pg): the cases of SQLite's
 * file alone pass there at once, and those of PostgreSQL alone do here. */
static bool on_pg(void) {
  const char *pg = getenv("GPULAB_TEST_DB");
  return pg && *pg;
}

static struct store *open_store(void) {
  struct store *s = NULL;
  char err[512];
  int rc = store_open(db, &s, err, sizeof err);
  if (rc) CHECK_FAIL_("store_open(%s): %d %s", db, rc, err);
  return s;
}

/* The record the store holds for id is want. */
static void check_record(struct store *s, uint64_t id, const char *want) {
  char *r = store_record(s, id);
  CHECK_STR_EQ(r, want);
  free(r);
}

/* A store whose store_sync commits (durability FULL: no accept journal), for the cases
 * about what a commit takes; test_journal has the journal's. */
static struct store *open_committing_store(void) {
  struct store *s = open_store();
  CHECK_INT_EQ(store_set_durability(s, STORE_DURABILITY_FULL), 0);
  return s;
}

/* Queues one job row, depending on the job parent (0: none), and returns its ticket. */
static uint64_t put_job_after(struct store *s, uint64_t id, const char *state, double finished,
                              const char *record, bool create, uint64_t parent) {
  unsigned char request[40];
  for (size_t i = 0; i < sizeof request; i++)
    request[i] = (unsigned char)(i * 37 + id); /* 0s too */
  struct store_row row = {.table = STORE_JOBS,
                          .id = id,
                          .client = id % 2 ? "alice" : "bob",
                          .type = "gemm",
                          .state = state,
                          .created = 1000.0 + (double)id,
                          .finished = finished,
                          .request = request,
                          .request_len = sizeof request,
                          .record = record,
                          .create = create,
                          .parents = &parent,
                          .n_parents = parent != 0};
  CHECK_INT_EQ(store_put(s, &row), 0);
  return store_ticket(s);
}

/* Queues one job row and returns its ticket. */
static uint64_t put_job(struct store *s, uint64_t id, const char *state, double finished,
                        const char *record, bool create) {
  return put_job_after(s, id, state, finished, record, create, 0);
}

static int listed;
static void count_listed(void *arg, uint64_t id, const char *record) {
  (void)arg, (void)id;
  CHECK(record && record[0] == '{');
  listed++;
}

static int unfinished_n;
static uint64_t unfinished_ids[16];
static void on_unfinished(void *arg, uint64_t id, const char *state, const void *request,
                          size_t len) {
  (void)arg;
  CHECK(strcmp(state, "queued") == 0 || strcmp(state, "running") == 0);
  CHECK_INT_EQ(len, 40);
  const unsigned char *b = request;
  for (size_t i = 0; i < len; i++) CHECK_INT_EQ(b[i], (unsigned char)(i * 37 + id));
  if (unfinished_n < 16) unfinished_ids[unfinished_n++] = id;
}

static int sweeps_n;
static void on_sweep(void *arg, uint64_t id, const char *client, double created,
                     const char *record) {
  (void)arg;
  CHECK_STR_EQ(client, "carol");
  CHECK_NEAR(created, 2000.0 + (double)id, 1e-6);
  CHECK(strstr(record, "\"jobs\"") != NULL);
  sweeps_n++;
}

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

static int kernels_seen;
static void on_kernel(void *arg, const struct store_kernel *k) {
  (void)arg;
  CHECK(k->image == NULL && k->source == NULL);
  CHECK(k->spec && k->report);
  kernels_seen++;
}

static void test_kernels(void) {
  struct store *s = open_store();
  unsigned char image[300];
  for (size_t i = 0; i < sizeof image; i++) image[i] = (unsigned char)(i % 7 ? i : 0);
  struct store_kernel k = {.is_public = false,
                           .created = 3000.5,
                           .source = "__global__ void f() {}",
                           .spec = "{\"entry\":\"f\"}",
                           .report = "{\"ok\":true}",
                           .image = image,
                           .image_bytes = sizeof image};
  snprintf(k.owner, sizeof k.owner, "alice");
  snprintf(k.name, sizeof k.name, "mine");
  snprintf(k.experiment, sizeof k.experiment, "gemm");
  snprintf(k.source_sha, sizeof k.source_sha, "%064d", 0);
  int64_t a, b;
  CHECK_INT_EQ(store_kernel_insert(s, &k, &a), 0);
  k.is_public = true;
  k.image = NULL;
  k.image_bytes = 0;
  snprintf(k.owner, sizeof k.owner, "bob");
  CHECK_INT_EQ(store_kernel_insert(s, &k, &b), 0);
  CHECK(b > a);

  struct store_kernel got;
  CHECK_INT_EQ(store_kernel_get(s, a, &got), 0);
  CHECK_STR_EQ(got.owner, "alice");
  CHECK_STR_EQ(got.source, "__global__ void f() {}");
  CHECK_INT_EQ(got.image_bytes, sizeof image);
  CHECK(memcmp(got.image, image, sizeof image) == 0);
  CHECK(!got.is_public);
  CHECK_NEAR(got.created, 3000.5, 1e-9);
  store_kernel_clear(&got);
  CHECK_INT_EQ(store_kernel_get(s, b, &got), 0);
  CHECK(got.image == NULL && got.is_public);
  store_kernel_clear(&got);
  CHECK_INT_EQ(store_kernel_get(s, b + 100, &got), -ENOENT);

  kernels_seen = 0;
  CHECK_INT_EQ(store_kernel_list(s, "alice", NULL, on_kernel, NULL), 2); /* hers + public */
  CHECK_INT_EQ(store_kernel_list(s, "carol", NULL, on_kernel, NULL), 1);
  CHECK_INT_EQ(store_kernel_list(s, NULL, "stencil", on_kernel, NULL), 0);
  CHECK_INT_EQ(kernels_seen, 3);
  int n;
  size_t bytes;
  CHECK_INT_EQ(store_kernel_count(s, "alice", &n, &bytes), 0);
  CHECK_INT_EQ(n, 1);
  CHECK_INT_EQ(bytes, strlen("__global__ void f() {}"));

  CHECK_INT_EQ(store_kernel_delete(s, a), 0);
  CHECK_INT_EQ(store_kernel_delete(s, a), -ENOENT);
  int64_t c;
  CHECK_INT_EQ(store_kernel_insert(s, &k, &c), 0);
  CHECK(c > b); /* never reused */
  store_close(s);
  printf("kernels: ok\n");
}

struct flusher {
  struct store *s;
  atomic_bool done;
};

static void *flush_main(void *arg) {
  struct flusher *f = arg;
  store_flush(f->s);
  atomic_store(&f->done, true);
  return NULL;
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

/* ---- SQLite only ---- */

/* Bytes of db's file with suffix, -1 if none. */
static long long file_bytes(const char *suffix) {
  char path[600];
  struct stat st;
  snprintf(path, sizeof path, "%s%s", db, suffix);
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* One store per file: a second open is refused (its lock file). The WAL is checkpointed
 * by the store's own thread (the writing connection has no auto-checkpoint): 3,000
 * commits of a row each, 12 MB of WAL unchecked, leave it near the bound's threshold
 * (4 MiB: 64 frames, 256 at most); the close checkpoints the rest and removes it. */
static void test_sqlite_checkpoints(void) {
  if (on_pg()) return; /* SQLite\'s alone */
  struct store *s = open_store(), *second = NULL;
  char err[512];
  CHECK_INT_EQ(store_open(db, &second, err, sizeof err), -EBUSY);
  CHECK(strstr(err, "another gpulabd") != NULL);
  store_limit(s, 4 << 20);
  long long wal_max = 0;
  for (uint64_t id = 5000; id < 8000; id++) {
    CHECK_INT_EQ(store_sync(s, put_job(s, id, "done", 9000.0, "{\"pad\":\"a row\"}", true)), 0);
    long long wal = file_bytes("-wal");
    if (wal > wal_max) wal_max = wal;
  }
  store_limit(s, 0);
  store_close(s);
  printf("checkpoints: the WAL peaked at %lld bytes over 3000 commits\n", wal_max);
  CHECK(wal_max > 0 && wal_max < 4 << 20);
  CHECK_INT_EQ(file_bytes("-wal"), -1);
}

/* Bytes of job id's stored request as the database file holds it, read by a
 * connection of its own (not the store's, whose reads write every queued row first):
 * -1 when the row has none (NULL), -2 when there is no such row. */
static int request_on_disk(uint64_t id) {
  sqlite3 *c = NULL;
  sqlite3_stmt *st = NULL;
  CHECK_INT_EQ(sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, LITE_VFS), SQLITE_OK);
  CHECK_INT_EQ(sqlite3_prepare_v2(c, "SELECT length(request) FROM jobs WHERE id=?1", -1, &st, NULL),
               SQLITE_OK);
  sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
  int n = sqlite3_step(st) != SQLITE_ROW              ? -2
          : sqlite3_column_type(st, 0) == SQLITE_NULL ? -1
                                                      : sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(c);
  return n;
}

/* Whether the database file holds job id (request_on_disk's connection). */
static bool on_disk(uint64_t id) { return request_on_disk(id) != -2; }

/* SQLite keeps a job's request while the job may run again (recovery reads it), and
 * drops it with the job's final row: whether that row updates the first (a ?wait=0
 * job's) or is the first itself (a tiny job's rows met in the queue); the record stays. */
static void test_request_kept(void) {
  if (on_pg()) return; /* SQLite\'s alone */
  struct store *s = open_committing_store();
  CHECK_INT_EQ(store_sync(s, put_job(s, 930, "queued", 0, "{\"s\":\"queued\"}", true)), 0);
  CHECK_INT_EQ(request_on_disk(930), 40);
  CHECK_INT_EQ(store_sync(s, put_job(s, 930, "running", 0, NULL, false)), 0);
  CHECK_INT_EQ(request_on_disk(930), 40); /* still what recovery needs */
  CHECK_INT_EQ(store_sync(s, put_job(s, 930, "done", 2930.0, "{\"s\":\"done\"}", false)), 0);
  CHECK_INT_EQ(request_on_disk(930), -1);
  check_record(s, 930, "{\"s\":\"done\"}");
  CHECK_INT_EQ(store_sync(s, put_job(s, 931, "failed", 2931.0, "{\"s\":\"failed\"}", true)), 0);
  CHECK(on_disk(931));
  CHECK_INT_EQ(request_on_disk(931), -1);
  store_close(s);
  printf("request kept while unfinished: ok\n");
}

/* store_sync writes the rows waited for, and the first rows of the jobs they depend on,
 * but no row nobody waits for until it has gathered (here never: until a flush); a
 * ticket whose row a later one replaced is written with that one. store_status counts
 * the rows and commits, and the syncs that waited. */
static void test_wanted(void) {
  if (on_pg()) return; /* SQLite\'s alone */
  struct store *s = open_committing_store();
  store_set_gather_ms(s, 600 * 1000, STORE_AWAITED_MS);
  put_job(s, 900, "queued", 0, "{\"id\":900}", true); /* nobody waits for it */
  put_job(s, 901, "queued", 0, "{\"id\":901}", true);
  CHECK_INT_EQ(store_sync(s, put_job_after(s, 902, "queued", 0, "{\"id\":902}", true, 901)), 0);
  CHECK(on_disk(902));
  CHECK(on_disk(901)); /* the job it depends on, in the same transaction */
  CHECK(!on_disk(900));
  struct store_status st;
  store_status(s, &st);
  CHECK_INT_EQ(st.commits, 1);
  CHECK_INT_EQ(st.rows_written, 2);
  CHECK_INT_EQ(st.syncs_waited, 1);
  /* A job's three rows, the first waited for after the last was queued: one write. */
  uint64_t first = put_job(s, 903, "queued", 0, "{\"id\":903}", true);
  put_job(s, 903, "running", 0, NULL, false);
  put_job(s, 903, "done", 2903.0, "{\"id\":903,\"state\":\"done\"}", false);
  CHECK_INT_EQ(store_sync(s, first), 0);
  CHECK_INT_EQ(store_sync(s, first), 0); /* written: no wait */
  CHECK(on_disk(903));
  CHECK(!on_disk(900));
  store_status(s, &st); /* 6 rows queued: 903's three written as one row */
  CHECK_INT_EQ(st.rows_queued, 6);
  CHECK_INT_EQ(st.rows_written, 3);
  CHECK_INT_EQ(st.commits, 2);
  CHECK_INT_EQ(st.syncs_waited, 2);
  CHECK(st.sync_wait_s > 0 && st.sync_wait_s < 60);
  CHECK(st.commit_s > 0 && st.commit_s <= st.sync_wait_s); /* the syncs wrote both */
  check_record(s, 903, "{\"id\":903,\"state\":\"done\"}"); /* a read: every row first */
  CHECK(on_disk(900));
  store_close(s);
  printf("wanted: ok\n");
}

/* store_await: the rows of a job whose client waits for its end stay queued past
 * gather_ms (its final row most often replaces them); that final row is wanted as soon
 * as it is queued (another answer's commit takes it); a job depending on such a job is
 * never written without it. Awaited rows gather 10 minutes here, so that no clock
 * decides which commit takes them (a slow machine once wrote them first). */
static void test_await(void) {
  if (on_pg()) return; /* SQLite\'s alone */
  struct store *s = open_committing_store();
  store_set_gather_ms(s, 1, 600 * 1000);
  uint64_t id = 910;
  uint64_t first = put_job(s, id, "queued", 0, "{\"s\":\"queued\"}", true);
  store_await(s, first);
  put_job(s, id, "running", 0, NULL, false);
  put_job(s, id + 1, "queued", 0, "{\"s\":\"queued\"}", true); /* nobody waits for it */
  usleep(10 * 1000); /* id + 1 has gathered, id's rows have not */
  CHECK_INT_EQ(store_sync(s, put_job(s, id + 2, "queued", 0, "{}", true)), 0);
  CHECK(on_disk(id + 1) && on_disk(id + 2));
  CHECK(!on_disk(id));
  struct store_status before, after;
  store_status(s, &before);
  put_job(s, id, "done", 2910.0, "{\"s\":\"done\"}", false); /* wanted at once */
  CHECK_INT_EQ(store_sync(s, put_job(s, id + 3, "queued", 0, "{}", true)), 0);
  CHECK(on_disk(id)); /* in id + 3's commit */
  CHECK_INT_EQ(store_sync(s, first), 0);
  store_status(s, &after);
  CHECK_INT_EQ(after.rows_written - before.rows_written, 2); /* id's three rows as one */
  CHECK_INT_EQ(after.commits - before.commits, 1);
  check_record(s, id, "{\"s\":\"done\"}");
  /* A child gathers sooner than its awaited parent: it takes the parent along. */
  uint64_t parent = put_job(s, 990, "queued", 0, "{}", true);
  store_await(s, parent);
  put_job_after(s, 991, "queued", 0, "{}", true, 990);
  usleep(10 * 1000);
  CHECK_INT_EQ(store_sync(s, put_job(s, 992, "queued", 0, "{}", true)), 0);
  CHECK(on_disk(991) && on_disk(990));
  store_close(s);
  printf("await: ok\n");
}

/* Threads that queue jobs' rows as gpulabd's do (a first row, maybe a running one, a
 * final one; a job depending on the one before it), wait for some rows and not for
 * others, and flush now and then, all at once: no wait hangs (ctest's timeout), every
 * sync says 0, and every job reads back final. */
#define STRESS_THREADS 8
#define STRESS_JOBS 1500
static void *stress_main(void *arg) {
  struct store *s = arg;
  static atomic_uint_fast64_t next_id = 100000;
  uint64_t prev = 0;
  for (int i = 0; i < STRESS_JOBS; i++) {
    uint64_t id = atomic_fetch_add(&next_id, 1);
    uint64_t first = put_job_after(s, id, "queued", 0, "{\"s\":\"queued\"}", true,
                                   i % 3 == 0 ? prev : 0);
    if (i % 4 == 0) CHECK_INT_EQ(store_sync(s, first), 0); /* a ?wait=0 answer */
    if (i % 2 == 0) put_job(s, id, "running", 0, NULL, false);
    if (i % 5 == 0) usleep(50); /* long enough, now and then, for rows to gather */
    uint64_t last = put_job(s, id, "done", 3001.0, "{\"s\":\"done\"}", false);
    if (i % 3 != 1) CHECK_INT_EQ(store_sync(s, i % 2 ? first : last), 0); /* a waited answer */
    if (i % 97 == 0) store_flush(s);                                      /* a listing */
    prev = id;
  }
  return NULL;
}

static void test_stress(void) {
  if (on_pg()) return; /* SQLite\'s alone */
  struct store *s = open_store();
  pthread_t t[STRESS_THREADS];
  for (int i = 0; i < STRESS_THREADS; i++)
    CHECK_INT_EQ(pthread_create(&t[i], NULL, stress_main, s), 0);
  for (int i = 0; i < STRESS_THREADS; i++) pthread_join(t[i], NULL);
  for (uint64_t id = 100000; id < 100000 + STRESS_THREADS * STRESS_JOBS; id++) {
    char *r = store_record(s, id);
    if (!r || strcmp(r, "{\"s\":\"done\"}") != 0)
      CHECK_FAIL_("job %llu reads %s", (unsigned long long)id, r ? r : "nothing");
    free(r);
  }
  store_close(s);
  printf("stress: %d threads, %d jobs each: every row written, no wait lost\n", STRESS_THREADS,
         STRESS_JOBS);
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
  if (!on_pg()) return; /* PostgreSQL\'s alone */
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
  if (!on_pg()) return; /* PostgreSQL\'s alone */
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
  if (!on_pg()) return; /* PostgreSQL\'s alone */
  test_db_reset(db);
  pthread_t t[4];
  int rc[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, open_main, &rc[i]);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++) CHECK_INT_EQ(rc[i], 0);
  PGconn *c = PQconnectdb(db);
  PGresult *res = PQexec(c, "SELECT COUNT(*), MAX(version) FROM gpulab_schema");
  CHECK_STR_EQ(PQgetvalue(res, 0, 0), "1");
  CHECK_STR_EQ(PQgetvalue(res, 0, 1), "4"); /* store_pg.c's last step */
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

struct listed_state {
  uint64_t id;
  char state[16]; /* "" while not listed */
};
static void on_state(void *arg, uint64_t id, const char *state, const void *request, size_t len) {
  (void)request, (void)len;
  struct listed_state *js = arg;
  if (id == js->id) snprintf(js->state, sizeof js->state, "%s", state);
}

/* The state store_unfinished reads back for id; "" when it lists no such job. */
static const char *unfinished_state(struct store *s, uint64_t id) {
  static struct listed_state js;
  js = (struct listed_state){.id = id};
  store_unfinished(s, on_state, &js);
  return js.state;
}

/* The accept journal (journal.h): store_sync puts a job's first row and its final row
 * there in one write, without a commit; a process killed before the writer committed
 * them finds them in the database when it opens it again, with every rule of a
 * commit's (a first row never goes back over the later state a commit wrote, a
 * final row drops the request), up to a torn tail; rows between, held rows and a
 * dependent job's row are committed as before. Rows gather 10 minutes here: only the
 * syncs and the kill decide what reaches the database. */
static void test_journal(void) {
  if (on_pg()) return; /* SQLite\'s alone */
  pid_t child = fork();
  if (child == 0) {
    struct store *s = open_store();
    store_set_gather_ms(s, 600 * 1000, 600 * 1000);
    CHECK_INT_EQ(store_sync(s, put_job(s, 950, "queued", 0, "{\"s\":\"queued\"}", true)), 0);
    uint64_t first = put_job(s, 951, "queued", 0, "{\"s\":\"queued\"}", true);
    put_job(s, 951, "done", 2951.0, "{\"s\":\"done\"}", false); /* replaces it in the queue */
    CHECK_INT_EQ(store_sync(s, first), 0);
    CHECK_INT_EQ(store_sync(s, put_job(s, 952, "queued", 0, "{\"s\":\"queued\"}", true)), 0);
    CHECK_INT_EQ(store_sync(s, put_job(s, 952, "running", 0, "{\"s\":\"running\"}", false)), 0);
    CHECK(on_disk(952)); /* a row between: committed */
    CHECK(!on_disk(950) && !on_disk(951));
    store_hold(s);
    uint64_t held = put_job(s, 953, "queued", 0, "{}", true);
    store_release(s);
    CHECK_INT_EQ(store_sync(s, held), 0);
    CHECK(on_disk(953));
    CHECK_INT_EQ(store_sync(s, put_job_after(s, 954, "queued", 0, "{}", true, 953)), 0);
    CHECK(on_disk(954));
    struct store_status st;
    store_status(s, &st);
    CHECK_INT_EQ(st.rows_journaled, 3); /* 950, 951 and 952's first row */
    CHECK(!on_disk(950) && !on_disk(951));
    raise(SIGKILL);
  }
  int status;
  CHECK_INT_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  CHECK(file_bytes("-accepted.0") > 0);
  /* A torn entry after them (a power loss's): the replay stops there. */
  char path[600];
  snprintf(path, sizeof path, "%s-accepted.0", db);
  FILE *f = fopen(path, "ab");
  CHECK(f != NULL);
  fwrite("GAJ1 torn", 1, 9, f);
  fclose(f);
  struct store *s = open_store();
  CHECK_INT_EQ(file_bytes("-accepted.0"), 0); /* applied, and opened empty */
  CHECK_STR_EQ(unfinished_state(s, 950), "queued");
  CHECK_STR_EQ(unfinished_state(s, 952), "running"); /* not taken back to queued */
  CHECK_STR_EQ(unfinished_state(s, 951), "");
  check_record(s, 951, "{\"s\":\"done\"}");
  CHECK_INT_EQ(request_on_disk(951), -1);
  CHECK_INT_EQ(request_on_disk(950), 40);
  /* A clean close leaves no journal; FULL durability journals nothing. */
  store_close(s);
  CHECK_INT_EQ(file_bytes("-accepted.0"), -1);
  CHECK_INT_EQ(file_bytes("-accepted.1"), -1);
  s = open_committing_store();
  CHECK_INT_EQ(store_sync(s, put_job(s, 955, "queued", 0, "{}", true)), 0);
  CHECK(on_disk(955));
  struct store_status st;
  store_status(s, &st);
  CHECK_INT_EQ(st.rows_journaled, 0);
  CHECK_INT_EQ(file_bytes("-accepted.0"), -1);
  store_close(s);
  printf("accept journal: ok\n");
}

/* Whether pruned_in_journal (the prune's notes, store_sqlite_query.c) holds job id, read
 * as on_disk reads. */
static bool noted_pruned(uint64_t id) {
  sqlite3 *c = NULL;
  sqlite3_stmt *st = NULL;
  CHECK_INT_EQ(sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, LITE_VFS), SQLITE_OK);
  CHECK_INT_EQ(sqlite3_prepare_v2(c, "SELECT 1 FROM pruned_in_journal WHERE id=?1", -1, &st, NULL),
               SQLITE_OK);
  sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
  bool noted = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  sqlite3_close(c);
  return noted;
}

/* A finished job pruned while its first row is still in the accept journal (whose file
 * another job's uncommitted entry keeps) is not brought back by the replay after a
 * crash: it would be queued to run again. The note that says so goes with the journal. */
static void test_journal_prune(void) {
  if (on_pg()) return; /* SQLite\'s alone */
  pid_t child = fork();
  if (child == 0) {
    struct store *s = open_store();
    store_set_gather_ms(s, 600 * 1000, 600 * 1000);
    CHECK_INT_EQ(store_sync(s, put_job(s, 960, "queued", 0, "{}", true)), 0);
    CHECK_INT_EQ(store_sync(s, put_job(s, 961, "queued", 0, "{}", true)), 0);
    store_hold(s); /* a held row is committed, not journaled */
    uint64_t done = put_job(s, 961, "done", 2961.0, "{\"s\":\"done\"}", false);
    store_release(s);
    CHECK_INT_EQ(store_sync(s, done), 0);
    CHECK(on_disk(961) && !on_disk(960)); /* 960's entry keeps the journal's file */
    store_limit(s, 1);                    /* prunes every finished job */
    CHECK(!on_disk(961) && noted_pruned(961));
    CHECK(!noted_pruned(951)); /* pruned too, but the journal held none of its entries */
    raise(SIGKILL);
  }
  int status;
  CHECK_INT_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  struct store *s = open_store();
  CHECK_STR_EQ(unfinished_state(s, 960), "queued");
  CHECK_STR_EQ(unfinished_state(s, 961), ""); /* not queued again */
  CHECK(!on_disk(961) && !noted_pruned(961));
  store_close(s);
  printf("journal and pruning: ok\n");
}

/* test_journal_in_batch: a record made as its row's batch is written, which holds that
 * batch in flight (until the process is killed). */
static sem_t batch_entered, batch_release;
static char *record_in_flight(const void *arg) {
  (void)arg;
  sem_post(&batch_entered);
  sem_wait(&batch_release); /* never posted */
  return strdup("{}");
}

struct sync_call {
  struct store *s;
  uint64_t ticket;
  int rc;
  sem_t done;
};

static void *sync_main(void *arg) {
  struct sync_call *c = arg;
  c->rc = store_sync(c->s, c->ticket);
  sem_post(&c->done);
  return NULL;
}

/* sem_wait for at most 10 s: false when it timed out. */
static bool wait_10s(sem_t *sem) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  while (sem_timedwait(sem, &until) != 0)
    if (errno != EINTR) return false;
  return true;
}

/* A first row in the batch being written goes to the accept journal, so that its
 * answer does not wait for that whole commit: a batch held in flight (its other row's
 * record still being made), the row is synced, the process killed, and the replay
 * brings the job back. */
static void test_journal_in_batch(void) {
  if (on_pg()) return; /* SQLite\'s alone */
  pid_t child = fork();
  if (child == 0) {
    struct store *s = open_store();
    store_set_gather_ms(s, 600 * 1000, 600 * 1000);
    sem_init(&batch_entered, 0, 0);
    sem_init(&batch_release, 0, 0);
    store_hold(s); /* 970: written, never journaled */
    char none = 0;
    struct store_row slow = {.table = STORE_JOBS,
                             .id = 970,
                             .client = "alice",
                             .type = "gemm",
                             .state = "queued",
                             .created = 1970.0,
                             .create = true,
                             .make_record = record_in_flight,
                             .record_arg = &none,
                             .record_arg_len = 1};
    CHECK_INT_EQ(store_put(s, &slow), 0);
    store_release(s);
    struct sync_call call = {.s = s, .ticket = put_job(s, 971, "queued", 0, "{}", true)};
    sem_init(&call.done, 0, 0);
    struct flusher f = {.s = s};
    pthread_t flusher, syncer;
    CHECK_INT_EQ(pthread_create(&flusher, NULL, flush_main, &f), 0);
    CHECK(wait_10s(&batch_entered)); /* 970 and 971 in the batch, held */
    CHECK_INT_EQ(pthread_create(&syncer, NULL, sync_main, &call), 0);
    CHECK(wait_10s(&call.done)); /* answered while the batch is in flight */
    CHECK_INT_EQ(call.rc, 0);
    struct store_status st;
    store_status(s, &st);
    CHECK_INT_EQ(st.rows_journaled, 1);
    CHECK(!on_disk(970) && !on_disk(971));
    raise(SIGKILL);
  }
  int status;
  CHECK_INT_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  struct store *s = open_store();
  CHECK_STR_EQ(unfinished_state(s, 971), "queued");
  CHECK_STR_EQ(unfinished_state(s, 970), ""); /* never committed, never journaled */
  store_close(s);
  printf("journal, a row in the batch being written: ok\n");
}

static int setup(void) {
  if (on_pg() && (!getenv("GPULAB_PG_CLUSTER") || !getenv("GPULAB_PG_DIR")))
    CHECK_FAIL_("%s", "GPULAB_PG_CLUSTER and GPULAB_PG_DIR must name the cluster");
  test_db_make("store", db, sizeof db);
  printf("store at %s\n", db);
  return 0;
}

static void teardown(void) { test_db_drop(db); }

static const struct test_case cases[] = {
    TEST(test_rows),
    TEST(test_kernels),
    TEST(test_hold),
    TEST(test_replace),
    TEST(test_give),
    TEST(test_accepted_text),
    TEST(test_limit),
    TEST(test_buffers),
    TEST(test_wanted),
    TEST(test_request_kept),
    TEST(test_await),
    TEST(test_journal),
    TEST(test_journal_prune),
    TEST(test_journal_in_batch),
    TEST(test_sqlite_checkpoints),
    TEST(test_stress), /* after: its 12,000 rows would slow the checkpoints */
    TEST(test_pg_two_nodes),
    TEST(test_pg_restart),
    TEST(test_pg_migrate_race),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = setup, .teardown = teardown};
