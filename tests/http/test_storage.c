/* Storage faults: a job is on disk before its answer, or it is refused (507 or 503),
 * never accepted and lost. A full filesystem (a file size limit, RLIMIT_FSIZE with
 * SIGXFSZ ignored, as `ulimit -f` gives it; and a small tmpfs where this test may
 * mount one), then kill -9 and a restart: every accepted job is there, none reuses
 * another's id, nothing refused appears. A read-only or corrupted database is
 * refused at start-up. The crash rounds print their counts. On PostgreSQL (ctest's
 * test_storage_pg) the size bound's tests alone: a file size limit, a full tmpfs, a
 * read-only or corrupted file are faults of SQLite's own file (the PostgreSQL
 * server's full disk is SQLSTATE 53100, -ENOSPC: store_pg.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/http_client.h"
#include "tests/runner.h"
#include "tests/test_db.h"

static const char *dir; /* test_dir() */

#define JOB                                                                                   \
  "{\"type\":\"transpose\",\"params\":{\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0," \
  "\"batches\":1,\"reps\":1,\"seed\":%d}}"

static void start(struct gpulabd *d, const char *db) {
  const char *args[] = {"--backend", "cpu", "--streams", "2", "--db", db, "--grace", "0", NULL};
  gpulabd_start(args, d);
}

static void remove_db(const char *db) { test_db_drop(db); }

/* One round: gpulabd starts (the limit set before, or the disk filled after), jobs
 * are posted until the store has refused some; kill -9; a start on the full disk is
 * tried (refused, or it must take its write); then room is made and gpulabd starts
 * again on the same database. Every accepted job must read back as itself (its
 * seed), the new job's id must be past every id given out, and the listing must
 * hold exactly the accepted jobs. */
struct round {
  const char *label, *db;
  void (*before_start)(void), (*after_start)(void), (*make_room)(void);
};

/* The jobs a gpulabd accepted (id and seed), and how many it refused. */
struct tally {
  long long ids[1000];
  int seeds[1000];
  int accepted, refused;
  long long max_id;
};

/* Posts jobs (seeds from *seed on) until the store has refused `refusals` of them
 * (507 or 503, with Retry-After); /health must say unhealthy at the first. */
static void post_until_refused(struct gpulabd *d, const char *label, struct tally *t, int *seed,
                               int refusals) {
  int stop = t->refused + refusals;
  for (int n = 0; n < 600 && t->refused < stop; n++, (*seed)++) {
    char body[256];
    struct http_reply r;
    snprintf(body, sizeof body, JOB, *seed);
    http_post_json(d, "/jobs?wait=0", body, &r);
    if (r.status == 202 || r.status == 200) {
      CHECK(t->accepted < 1000);
      t->ids[t->accepted] = JINT(r.json, "id");
      t->seeds[t->accepted] = *seed;
      if (t->ids[t->accepted] > t->max_id) t->max_id = t->ids[t->accepted];
      t->accepted++;
    } else if (r.status == 507 || r.status == 503) {
      CHECK_ERROR(&r, r.status, r.status == 507 ? "insufficient_storage" : "store_unavailable",
                  NULL);
      CHECK(r.retry_after != NULL);
      if (t->refused++ == stop - refusals) { /* at once: /health says so */
        struct http_reply h;
        http_get(d, "/health", &h);
        CHECK_INT_EQ(h.status, 503);
        CHECK_STR_EQ(JSTR(h.json, "status"), "unhealthy");
        CHECK_STR_EQ(JSTR(h.json, "store.status"), "failing");
        http_reply_free(&h);
      }
    } else {
      CHECK_FAIL_("%s: job (seed %d) answered %ld: %s", label, *seed, r.status, r.body);
    }
    http_reply_free(&r);
  }
  if (t->refused < stop)
    CHECK_FAIL_("%s: %d jobs accepted and the store never filled", label, t->accepted);
}

/* Every accepted job reads back as itself (its seed). Returns how many did not. */
static int count_lost(struct gpulabd *d, const char *label, const struct tally *t) {
  int lost = 0;
  for (int i = 0; i < t->accepted; i++) {
    char path[64];
    struct http_reply r;
    snprintf(path, sizeof path, "/jobs/%lld", t->ids[i]);
    http_get(d, path, &r);
    if (r.status != 200 || JINT(r.json, "params.seed") != t->seeds[i]) {
      fprintf(stderr, "%s: job %lld (seed %d) lost: %ld %s\n", label, t->ids[i], t->seeds[i],
              r.status, r.body);
      lost++;
    }
    http_reply_free(&r);
  }
  return lost;
}

static void full_disk_round(const struct round *rd) {
  static struct tally t;
  memset(&t, 0, sizeof t);
  int seed = 0;
  struct gpulabd d;
  rd->before_start();
  start(&d, rd->db);
  rd->after_start();
  post_until_refused(&d, rd->label, &t, &seed, 20);
  /* While it fails, sweeps and uploads are refused the same way, and create nothing. */
  struct http_reply r;
  http_post_json(&d, "/sweeps?wait=0",
                 "{\"type\":\"transpose\",\"params\":{\"n\":8,\"warmup\":0,"
                 "\"batches\":1,\"reps\":1},\"axes\":{\"m\":[4,8]}}",
                 &r);
  CHECK(r.status == 507 || r.status == 503);
  http_reply_free(&r);
  float data[4] = {0};
  http_request(&d, "POST", "/buffers?shape=4", "application/octet-stream", (const char *)data,
               sizeof data, &r);
  CHECK(r.status == 507 || r.status == 503);
  http_reply_free(&r);
  gpulabd_kill(&d);

  char log[16384];
  int status;
  const char *args[] = {"--backend", "cpu", "--db", rd->db, NULL};
  rd->before_start();
  bool started = gpulabd_try_start(args, &d, log, sizeof log, &status) == 0;
  rd->after_start();
  if (started) {
    gpulabd_stop(&d);
  } else {
    CHECK(strstr(log, "--db") != NULL);
  }
  printf("%s: on the full disk gpulabd %s\n", rd->label,
         started ? "started (its start-up write still fit)" : "refused to start");
  rd->make_room();

  start(&d, rd->db);
  int lost = count_lost(&d, rd->label, &t);
  json_t *sweeps = http_get_json(&d, "/sweeps");
  CHECK_INT_EQ(json_array_size(json_at(sweeps, "sweeps")), 0);
  json_decref(sweeps);
  char body[256];
  snprintf(body, sizeof body, JOB, 9999);
  http_post_json(&d, "/jobs?wait=0", body, &r);
  CHECK(r.status == 202 || r.status == 200); /* 200 when a worker was quicker */
  long long fresh = JINT(r.json, "id");
  http_reply_free(&r);
  json_t *list = http_get_json(&d, "/jobs?limit=1000");
  int listed = (int)json_array_size(json_at(list, "jobs"));
  json_decref(list);
  printf(
      "%s: accepted %d, refused %d, lost %d; after the restart the next id is %lld (highest "
      "accepted %lld), %d jobs listed\n",
      rd->label, t.accepted, t.refused, lost, fresh, t.max_id, listed);
  CHECK_INT_EQ(lost, 0);
  CHECK(fresh > t.max_id);
  CHECK_INT_EQ(listed, t.accepted + 1); /* nothing refused was created */
  gpulabd_stop(&d);
}

static void nothing(void) {}

/* RLIMIT_FSIZE: every file gpulabd writes stops at 512 KiB, its WAL first. */
#define FSIZE_LIMIT (512 * 1024)
static rlim_t saved_fsize;
static void fsize_on(void) {
  struct rlimit lim;
  CHECK_INT_EQ(getrlimit(RLIMIT_FSIZE, &lim), 0);
  saved_fsize = lim.rlim_cur;
  lim.rlim_cur = FSIZE_LIMIT;
  CHECK_INT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
}
static void fsize_off(void) { /* gpulabd keeps the limit it started with */
  struct rlimit lim;
  CHECK_INT_EQ(getrlimit(RLIMIT_FSIZE, &lim), 0);
  lim.rlim_cur = saved_fsize;
  CHECK_INT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
}

static void test_full_fsize(void) {
  char db[128];
  snprintf(db, sizeof db, "%s/fsize.db", dir);
  signal(SIGXFSZ, SIG_IGN); /* inherited: the limit makes writes fail with EFBIG */
  struct round rd = {"RLIMIT_FSIZE 512 KiB", db, fsize_on, fsize_off, nothing};
  full_disk_round(&rd);
  remove_db(db);
}

/* A 1 MiB tmpfs, filled up by a file beside the database once gpulabd has started
 * (leaving 128 KiB); room is made by deleting it. Each full start may leave up to that
 * much more in the database, its WAL (a checkpoint that found the disk full does not
 * shrink it) and the accept journal (rows accepted until a commit found the disk full:
 * 1-22 rows here), which 512 KiB did not always hold. Mounted in a mount namespace of
 * this test's own (it goes when the test ends); where that is not allowed, this case
 * says so and passes. */
static char tmpfs_dir[96], filler[128];

static void fill_tmpfs(void) {
  int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  static char block[4096];
  memset(block, 'x', sizeof block);
  while (write(fd, block, sizeof block) == (ssize_t)sizeof block) { /* until ENOSPC */
  }
  off_t size = lseek(fd, 0, SEEK_END);
  CHECK(ftruncate(fd, size > 128 * 1024 ? size - 128 * 1024 : 0) == 0);
  close(fd);
}

static void unfill_tmpfs(void) { unlink(filler); }

/* While it runs: a store that failed takes jobs again once there is room (here the
 * limit is lifted with prlimit), within a few seconds and without a restart; what it
 * accepted before and after is there after a clean restart. */
static void test_recovers_live(void) {
  char db[128];
  snprintf(db, sizeof db, "%s/live.db", dir);
  static struct tally t;
  memset(&t, 0, sizeof t);
  int seed = 0;
  struct gpulabd d;
  fsize_on();
  start(&d, db);
  fsize_off();
  post_until_refused(&d, "live", &t, &seed, 5);
  struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
  CHECK_INT_EQ(prlimit(d.pid, RLIMIT_FSIZE, &unlimited, NULL), 0);
  double waited = 0;
  struct http_reply h;
  for (;; waited += 0.1) {
    http_get(&d, "/health", &h);
    if (h.status == 200 || waited > 10) break;
    http_reply_free(&h);
    usleep(100 * 1000);
  }
  CHECK_STATUS(&h, 200);
  CHECK_STR_EQ(JSTR(h.json, "store.status"), "ok");
  CHECK(JINT(h.json, "store.write_errors") >= 1);
  http_reply_free(&h);
  for (int i = 0; i < 5; i++, seed++) {
    char body[256];
    struct http_reply r;
    snprintf(body, sizeof body, JOB, seed);
    http_post_json(&d, "/jobs?wait=0", body, &r);
    CHECK(r.status == 202 || r.status == 200);
    t.ids[t.accepted] = JINT(r.json, "id");
    t.seeds[t.accepted++] = seed;
    http_reply_free(&r);
  }
  gpulabd_stop(&d);
  start(&d, db);
  int lost = count_lost(&d, "live", &t);
  printf(
      "live: writes failed, then took jobs again %.1f s after the limit was lifted; accepted %d, "
      "refused %d, lost %d\n",
      waited, t.accepted, t.refused, lost);
  CHECK_INT_EQ(lost, 0);
  gpulabd_stop(&d);
  remove_db(db);
}

static void test_full_tmpfs(void) {
  snprintf(tmpfs_dir, sizeof tmpfs_dir, "%s/tmpfs", dir);
  CHECK_INT_EQ(mkdir(tmpfs_dir, 0755), 0);
  if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("tmpfs", tmpfs_dir, "tmpfs", 0, "size=1m") != 0) {
    printf(
        "tmpfs: not tested: this test may not mount one here (%s); RLIMIT_FSIZE stood in for "
        "a full disk\n",
        strerror(errno));
    return;
  }
  char db[160];
  snprintf(db, sizeof db, "%s/tmpfs.db", tmpfs_dir);
  snprintf(filler, sizeof filler, "%s/filler", tmpfs_dir);
  struct round rd = {"tmpfs 1 MiB", db, unfill_tmpfs, fill_tmpfs, unfill_tmpfs};
  full_disk_round(&rd);
  umount(tmpfs_dir);
}

/* A database with some finished jobs, closed cleanly (its WAL folded back in). */
static void make_db(const char *db, int jobs) {
  struct gpulabd d;
  start(&d, db);
  for (int i = 0; i < jobs; i++) {
    char body[256];
    struct http_reply r;
    snprintf(body, sizeof body, JOB, i);
    http_post_json(&d, "/jobs", body, &r);
    CHECK_STATUS(&r, 200);
    http_reply_free(&r);
  }
  gpulabd_stop(&d);
}

/* Expects gpulabd on db to refuse to start, its log naming --db and saying why. */
static void check_refused(const char *db, const char *why, const char *label) {
  const char *args[] = {"--backend", "cpu", "--db", db, NULL};
  char log[16384];
  int status;
  struct gpulabd d;
  if (gpulabd_try_start(args, &d, log, sizeof log, &status) == 0) {
    gpulabd_stop(&d);
    CHECK_FAIL_("%s: gpulabd started on %s", label, db);
  }
  const char *line = strstr(log, "--db");
  if (!line || !strstr(line, why))
    CHECK_FAIL_("%s: expected '--db ... %s' in:\n%s", label, why, log);
  printf("%s: refused to start (status %d): %.*s\n", label, status, (int)strcspn(line, "\n"), line);
  CHECK(status != 0);
}

/* A database this user cannot write: refused at start-up, not served read-only. As
 * root (whom file modes do not stop), gpulabd runs as nobody for this case. */
static void test_read_only(void) {
  char ro_dir[96], db[160];
  snprintf(ro_dir, sizeof ro_dir, "%s/ro", dir);
  CHECK_INT_EQ(mkdir(ro_dir, 0755), 0);
  snprintf(db, sizeof db, "%s/ro.db", ro_dir);
  make_db(db, 3);
  CHECK_INT_EQ(chmod(db, 0444), 0);
  struct passwd *nobody = getpwnam("nobody");
  bool as_nobody = geteuid() == 0;
  if (as_nobody) {
    CHECK(nobody != NULL);
    CHECK_INT_EQ(chmod(dir, 0755), 0); /* nobody may reach it, and read it, not write */
    gpulabd_spawn_as(nobody->pw_uid, nobody->pw_gid);
  }
  check_refused(db, "read-only",
                as_nobody ? "read-only database (as nobody)" : "read-only database");
  gpulabd_spawn_as((uid_t)-1, (gid_t)-1);
  CHECK_INT_EQ(chmod(db, 0644), 0);
  struct gpulabd d; /* still good once writable again */
  start(&d, db);
  json_t *list = http_get_json(&d, "/jobs");
  CHECK_INT_EQ(json_array_size(json_at(list, "jobs")), 3);
  json_decref(list);
  gpulabd_stop(&d);
}

/* Pages of a database overwritten with garbage: PRAGMA quick_check at start-up
 * finds it, and gpulabd refuses to start instead of answering from it. */
static void test_corrupted(void) {
  char db[128];
  snprintf(db, sizeof db, "%s/corrupt.db", dir);
  make_db(db, 40);
  int fd = open(db, O_RDWR);
  CHECK(fd >= 0);
  off_t size = lseek(fd, 0, SEEK_END);
  CHECK(size >= 6 * 4096);
  static char garbage[4096];
  for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (char)(i * 2654435761u >> 13);
  for (off_t page = 2; page * 4096 < size; page += 2) /* every other page but the schema's */
    CHECK(pwrite(fd, garbage + 512, 2048, page * 4096 + 512) == 2048);
  close(fd);
  check_refused(db, "corrupted", "corrupted database");
  remove_db(db);
}

/* --max-db-bytes 256 KiB and 300 finished jobs (about a megabyte of records): the
 * oldest are pruned, the store stays near its bound (in use and on disk), /metrics
 * says so (and counts the rows and commits), the newest jobs are all there. */
static void test_max_db_bytes(void) {
  char db[512];
  test_db_in("storage", dir, "bounded.db", db, sizeof db);
  const char *args[] = {"--backend",       "cpu", "--db", db, "--max-db-bytes", "262144",
                        "--max-jobs-kept", "50",  NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  long long first = 0, last = 0;
  for (int i = 0; i < 300; i++) {
    char body[256];
    struct http_reply r;
    snprintf(body, sizeof body, JOB, i);
    http_post_json(&d, "/jobs", body, &r);
    CHECK_STATUS(&r, 200);
    last = JINT(r.json, "id");
    if (!first) first = last;
    http_reply_free(&r);
  }
  /* A listing reads the store once every row queued before it is written (the last
   * answers' rows may still be waiting in the accept journal for their commit). */
  json_decref(http_get_json(&d, "/jobs?limit=1"));
  /* The store's writer prunes between its batches, after the answers: until it has
   * kept the bound and stopped (the pruned count still over two reads), 10 s at most. */
  long long used = 0, pruned = -1;
  for (int i = 0; i < 100; i++) {
    long long was = pruned;
    used = http_metric(&d, "gpulab_store_used_bytes");
    pruned = http_metric(&d, "gpulab_store_pruned_jobs_total");
    if (used <= 262144 * 11 / 10 && pruned == was) break;
    usleep(100 * 1000);
  }
  long long bytes = http_metric(&d, "gpulab_store_bytes");
  CHECK_INT_EQ(http_metric(&d, "gpulab_store_max_bytes"), 262144);
  /* Group commit's counters: every job queued a row or more; fewer were written, in
   * fewer transactions; answers waited for theirs (a commit, or the accept journal's
   * write, most of them). */
  long long queued = http_metric(&d, "gpulab_store_rows_queued_total");
  long long written = http_metric(&d, "gpulab_store_rows_written_total");
  long long commits = http_metric(&d, "gpulab_store_commits_total");
  CHECK(queued >= 300 && written >= 300 && written <= queued);
  CHECK(commits >= 1 && commits <= written);
  CHECK(http_metric(&d, "gpulab_store_waits_total") +
            http_metric(&d, "gpulab_store_rows_journaled_total") >=
        150);
  CHECK(http_metric(&d, "gpulab_store_queue_lock_waits_total") >=
        0); /* there (http_metric fails if not) */
  CHECK(http_metric(&d, "gpulab_engine_lock_waits_total") >= 0);
  CHECK(http_metric(&d, "gpulab_engine_row_waits_total") >= 0);
  /* gpulabd names its threads (top -H): the HTTP threads, the lanes, the store's. */
  char names[4096] = "", task_dir[96];
  DIR *tasks;
  snprintf(task_dir, sizeof task_dir, "/proc/%d/task", (int)d.pid);
  CHECK((tasks = opendir(task_dir)) != NULL);
  for (struct dirent *t; tasks && (t = readdir(tasks));) {
    char comm[400], name[32] = "";
    snprintf(comm, sizeof comm, "%s/%s/comm", task_dir, t->d_name);
    FILE *f = t->d_name[0] != '.' ? fopen(comm, "r") : NULL;
    if (f && fgets(name, sizeof name, f)) strncat(names, name, sizeof names - strlen(names) - 1);
    if (f) fclose(f);
  }
  if (tasks) closedir(tasks);
  if (!strstr(names, "gpulab-http\n") || !strstr(names, "gpulab-lane0.0\n") ||
      !strstr(names, "gpulab-store\n") || !strstr(names, "gpulab-timer\n") ||
      (!test_db_is_pg(db) && !strstr(names, "gpulab-ckpt\n"))) /* SQLite's checkpoints */
    CHECK_FAIL_("gpulabd's threads are named:\n%s", names);
  json_t *list = http_get_json(&d, "/jobs?limit=1000");
  int listed = (int)json_array_size(json_at(list, "jobs"));
  json_decref(list);
  printf(
      "--max-db-bytes 262144: 300 jobs, %lld pruned, %d listed; %lld bytes in use, %lld on disk\n",
      pruned, listed, used, bytes);
  CHECK(pruned > 0 && listed < 300 && listed + pruned == 300);
  CHECK(used <= 262144 * 11 / 10);
  /* On disk: SQLite gives freed pages back; PostgreSQL's tables keep their size until a
   * VACUUM, and --max-db-bytes bounds their live rows. */
  if (!test_db_is_pg(db)) CHECK(bytes <= 2 * 262144);
  char path[64];
  struct http_reply r;
  snprintf(path, sizeof path, "/jobs/%lld", first);
  http_get(&d, path, &r);
  CHECK_ERROR(&r, 404, "job_not_found", "id"); /* pruned, and forgotten in memory */
  http_reply_free(&r);
  for (long long id = last - 20; id <= last; id++) {
    snprintf(path, sizeof path, "/jobs/%lld", id);
    json_t *j = http_get_json(&d, path);
    CHECK_STR_EQ(JSTR(j, "state"), "done");
    json_decref(j);
  }
  gpulabd_stop(&d);
  remove_db(db);
}

/* When unfinished jobs alone pass --max-db-bytes, nothing can be pruned: new jobs
 * get 507 (and /health says failing) until some finish; canceled, they can be
 * pruned, and jobs are taken again. */
static void test_bound_by_unfinished(void) {
  char db[512];
  test_db_in("storage", dir, "unfinished.db", db, sizeof db);
  const char *args[] = {"--backend",      "cpu",   "--streams", "1", "--db", db,
                        "--max-db-bytes", "65536", NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  static long long ids[400];
  int n = 0;
  struct http_reply r;
  http_post_json(&d, "/stencil?wait=0",
                 "{\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,"
                 "\"batches\":100,\"reps\":1}",
                 &r); /* holds the one stream */
  CHECK_STATUS(&r, 202);
  ids[n++] = JINT(r.json, "id");
  http_reply_free(&r);
  bool refused = false;
  for (int i = 0; i < 300 && !refused; i++) {
    char body[256];
    snprintf(body, sizeof body, JOB, i);
    http_post_json(&d, "/jobs?wait=0", body, &r);
    if (r.status == 507) {
      CHECK_ERROR(&r, 507, "insufficient_storage", NULL);
      CHECK(strstr(JSTR(r.json, "detail"), "--max-db-bytes") != NULL);
      refused = true;
    } else {
      CHECK_STATUS(&r, 202);
      ids[n++] = JINT(r.json, "id");
    }
    http_reply_free(&r);
  }
  CHECK(refused);
  http_get(&d, "/health", &r);
  CHECK_INT_EQ(r.status, 503);
  CHECK_STR_EQ(JSTR(r.json, "store.status"), "failing");
  http_reply_free(&r);
  for (int i = 0; i < n; i++) {
    char path[64];
    snprintf(path, sizeof path, "/jobs/%lld", ids[i]);
    http_request(&d, "DELETE", path, NULL, NULL, 0, &r);
    http_reply_free(&r);
  }
  bool taken = false;
  for (int tries = 0; tries < 50 && !taken; tries++) {
    char body[256];
    snprintf(body, sizeof body, JOB, 1000 + tries);
    http_post_json(&d, "/jobs?wait=0", body, &r);
    taken = r.status == 202 || r.status == 200;
    http_reply_free(&r);
    if (!taken) usleep(100 * 1000);
  }
  printf(
      "--max-db-bytes 65536: %d unfinished jobs accepted, then 507; taken again once they were "
      "canceled: %s\n",
      n, taken ? "yes" : "no");
  CHECK(taken);
  gpulabd_stop(&d);
  remove_db(db);
}

static int make_dir(void) {
  dir = test_dir();
  return 0;
}

/* The faults of SQLite's file are SQLite's alone (above): on PostgreSQL
 * (test_storage_pg) these cases pass at once. */
#define SQLITE_ONLY(fn)           \
  static void fn##_sqlite(void) { \
    if (test_db_on_pg()) return;  \
    fn();                         \
  }
SQLITE_ONLY(test_full_fsize)
SQLITE_ONLY(test_recovers_live)
SQLITE_ONLY(test_read_only)
SQLITE_ONLY(test_corrupted)
SQLITE_ONLY(test_full_tmpfs)

static const struct test_case cases[] = {
    {"full_fsize", test_full_fsize_sqlite, NULL},
    {"recovers_live", test_recovers_live_sqlite, NULL},
    TEST(test_max_db_bytes),
    TEST(test_bound_by_unfinished),
    {"read_only", test_read_only_sqlite, NULL},
    {"corrupted", test_corrupted_sqlite, NULL},
    {"full_tmpfs", test_full_tmpfs_sqlite, NULL},
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = make_dir};
