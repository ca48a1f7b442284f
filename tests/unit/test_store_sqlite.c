/* The store's API (server/store/store.h) on SQLite's file alone: what stays on disk
 * (requests kept, the rows wanted, awaiting a ticket), the accept journal (its pruning,
 * a row in the batch being written), the WAL's checkpoints, and many threads at once.
 * With $GPULAB_TEST_DB (PostgreSQL) each case passes at once. */
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
  if (test_db_on_pg()) return; /* SQLite\'s alone */
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
  if (test_db_on_pg()) return; /* SQLite\'s alone */
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
  if (test_db_on_pg()) return; /* SQLite\'s alone */
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
  if (test_db_on_pg()) return; /* SQLite\'s alone */
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
  if (test_db_on_pg()) return; /* SQLite\'s alone */
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

/* A crash: before(), the store's first life, in a child process killed by SIGKILL as
 * it ends, waited for here; what it left on disk is the test's to read. */
static void crashed(void (*before)(void)) {
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    before();
    raise(SIGKILL);
  }
  int status;
  CHECK_INT_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* test_journal's first life. */
static void journal_before(void) {
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
}

/* The accept journal (journal.h): store_sync puts a job's first row and its final row
 * there in one write, without a commit; a process killed before the writer committed
 * them finds them in the database when it opens it again, with every rule of a
 * commit's (a first row never goes back over the later state a commit wrote, a
 * final row drops the request), up to a torn tail; rows between, held rows and a
 * dependent job's row are committed as before. Rows gather 10 minutes here: only the
 * syncs and the kill decide what reaches the database. */
static void test_journal(void) {
  if (test_db_on_pg()) return; /* SQLite\'s alone */
  crashed(journal_before);
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

/* test_journal_prune's first life. */
static void journal_prune_before(void) {
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
}

/* A finished job pruned while its first row is still in the accept journal (whose file
 * another job's uncommitted entry keeps) is not brought back by the replay after a
 * crash: it would be queued to run again. The note that says so goes with the journal. */
static void test_journal_prune(void) {
  if (test_db_on_pg()) return; /* SQLite\'s alone */
  crashed(journal_prune_before);
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

/* test_journal_in_batch's first life. */
static void journal_in_batch_before(void) {
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
}

/* A first row in the batch being written goes to the accept journal, so that its
 * answer does not wait for that whole commit: a batch held in flight (its other row's
 * record still being made), the row is synced, the process killed, and the replay
 * brings the job back. */
static void test_journal_in_batch(void) {
  if (test_db_on_pg()) return; /* SQLite\'s alone */
  crashed(journal_in_batch_before);
  struct store *s = open_store();
  CHECK_STR_EQ(unfinished_state(s, 971), "queued");
  CHECK_STR_EQ(unfinished_state(s, 970), ""); /* never committed, never journaled */
  store_close(s);
  printf("journal, a row in the batch being written: ok\n");
}

/* A prune plans from the span of the jobs' ids (LITE_ID_SPAN_SQL): two seeks, whatever
 * the table holds. MAX(id) - MIN(id) over one SELECT stepped through every row, the
 * whole store read at every plan of a prune; SQLite's FULLSCAN_STEP counts such steps. */
static void test_id_span_seeks(void) {
  if (test_db_on_pg()) return; /* SQLite\'s alone */
  struct store *s = open_store();
  for (uint64_t id = 20000; id < 22000; id++)
    put_job(s, id, "done", 9000.0, "{\"pad\":\"a row\"}", true);
  store_flush(s);
  store_close(s); /* the store's VFS keeps the file to itself while open */
  sqlite3 *raw = NULL;
  sqlite3_stmt *span = NULL, *ends = NULL;
  CHECK_INT_EQ(sqlite3_open(db, &raw), SQLITE_OK);
  CHECK_INT_EQ(sqlite3_prepare_v2(raw, LITE_ID_SPAN_SQL, -1, &span, NULL), SQLITE_OK);
  CHECK_INT_EQ(
      sqlite3_prepare_v2(raw, "SELECT MAX(id) - MIN(id) + 1, COUNT(*) FROM jobs", -1, &ends, NULL),
      SQLITE_OK);
  CHECK_INT_EQ(sqlite3_step(span), SQLITE_ROW);
  CHECK_INT_EQ(sqlite3_step(ends), SQLITE_ROW);
  CHECK(sqlite3_column_int64(ends, 1) >= 2000);
  CHECK_INT_EQ(sqlite3_column_int64(span, 0), sqlite3_column_int64(ends, 0));
  /* The single SELECT (ends) scans the table; the span does not. */
  CHECK(sqlite3_stmt_status(ends, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0) >= 1999);
  CHECK_INT_EQ(sqlite3_stmt_status(span, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0), 0);
  sqlite3_finalize(span);
  sqlite3_finalize(ends);
  sqlite3_close(raw);
  printf("id span: two seeks over %d jobs\n", 2000);
}

static const struct test_case cases[] = {
    TEST(test_wanted),
    TEST(test_request_kept),
    TEST(test_await),
    TEST(test_journal),
    TEST(test_journal_prune),
    TEST(test_journal_in_batch),
    TEST(test_sqlite_checkpoints),
    TEST(test_stress), /* after: its 12,000 rows would slow the checkpoints */
    TEST(test_id_span_seeks),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = store_db_setup, .teardown = store_db_teardown};
