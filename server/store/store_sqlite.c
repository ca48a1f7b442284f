/* The store's SQLite backend (WAL): opening and checking the database, a batch's
 * transaction, the probe of a failing store, durability and the id marks. One
 * gpulabd per database: a lock file says who has it. */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/log.h"
#include "server/store/journal.h"
#include "server/store/store_sqlite.h"

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS jobs ("
    "  id INTEGER PRIMARY KEY, client TEXT NOT NULL, type TEXT NOT NULL, state TEXT NOT NULL,"
    "  created REAL NOT NULL, finished REAL NOT NULL DEFAULT 0, request BLOB, record TEXT);"
    /* The unfinished jobs alone, what a restart reads (lite_unfinished, whose WHERE is
     * this one's, so that SQLite picks it): a finished job's row, most of them, touches
     * no index page, and a tiny job's one insert writes 4 pages to the WAL instead of 5
     * (counted on this schema: 4.05 WAL frames per insert instead of 5.11). Listings read
     * by id. The whole-state index of earlier versions goes. */
    "DROP INDEX IF EXISTS jobs_state;"
    "CREATE INDEX IF NOT EXISTS jobs_unfinished ON jobs(state)"
    "  WHERE state IN ('queued', 'waiting', 'running');"
    "CREATE TABLE IF NOT EXISTS sweeps ("
    "  id INTEGER PRIMARY KEY, client TEXT NOT NULL, created REAL NOT NULL,"
    "  record TEXT NOT NULL);"
    /* Users' kernels (store_sqlite_kernels.c), a row per version: ids never reused,
     * even after a delete. kernel_of: the kernel's id (its first version's), NULL on
     * the first version itself; ptx: NVRTC's PTX, NULL on a version stored before
     * gpulab kept it. An older database gets kernel_of, version and ptx from
     * lite_kernels_upgrade, its rows version 1 of themselves. */
    "CREATE TABLE IF NOT EXISTS kernels ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, name TEXT NOT NULL,"
    "  experiment TEXT NOT NULL, public INTEGER NOT NULL, created REAL NOT NULL,"
    "  source_sha TEXT NOT NULL, source TEXT NOT NULL, spec TEXT NOT NULL,"
    "  report TEXT NOT NULL, image BLOB, kernel_of INTEGER,"
    "  version INTEGER NOT NULL DEFAULT 1, ptx TEXT);"
    "CREATE INDEX IF NOT EXISTS kernels_owner ON kernels(owner);"
    /* Problems users define (store_sqlite_problems.c), a row per version of a name. */
    "CREATE TABLE IF NOT EXISTS problems ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, version INTEGER NOT NULL,"
    "  owner TEXT NOT NULL, public INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,"
    "  created REAL NOT NULL, definition TEXT NOT NULL, report TEXT NOT NULL, image BLOB,"
    "  UNIQUE(name, version));"
    /* Id sequences handed out ahead ("jobs": ids up to value are used), and marks. */
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    /* Jobs pruned while the accept journal held an entry of theirs, which its replay
     * skips (store_sqlite_query.c's delete_jobs); emptied by each start's replay. */
    "CREATE TABLE IF NOT EXISTS pruned_in_journal (id INTEGER PRIMARY KEY);";

static const char pragmas[] =
    /* New databases give freed pages back to the file system (store_limit); an
     * existing one keeps its mode (changing it takes a VACUUM). */
    "PRAGMA auto_vacuum=INCREMENTAL;"
    "PRAGMA journal_mode=WAL;"
    /* NORMAL (the default; --durability full makes it FULL: store_set_durability): a
     * commit survives gpulabd crashing (kill -9); one fsync per WAL checkpoint instead
     * of per commit. A power cut may lose the commits since the last checkpoint. */
    "PRAGMA synchronous=NORMAL;"
    /* 16 MiB of pages (SQLite's default: 2 MiB): a prune's chunk of jobs, read to find
     * its last id and then deleted, is read from the file once. */
    "PRAGMA cache_size=-16384;"
    /* FAST: a deleted row's bytes are zeroed on the pages a delete writes anyway, and
     * a page a delete empties goes to the free list unwritten. Debian builds SQLite with
     * SECURE_DELETE on, which writes every emptied page, zeroed, to the WAL, and the
     * checkpoint copies it again: a prune of the oldest jobs (store_prune_step_locked)
     * wrote a page for every page it freed, as many as the inserts it made room for.
     * SQLite's own default (OFF) zeroes nothing. A freed page keeps its old bytes until
     * a row reuses it or the incremental vacuum gives it back (lite_after_prune_locked). */
    "PRAGMA secure_delete=FAST;";

/* A job's request (what it takes to run it again) is kept while it has not finished,
 * the only time it is read (lite_unfinished: recovery after a restart). A finished
 * job's row drops it: a tiny job's final row is then ~1.9 KB, two to a 4 KiB page
 * where with it (~2.3 KB) each took a page of its own, and its commit writes fewer
 * pages (a waited job's insert 2.5 WAL frames instead of 4.05). ?6 is the row's finished
 * time. */
#define KEPT_REQUEST "request=CASE WHEN ?6 > 0 THEN NULL ELSE request END"

/* A job's row written (bind_job_row's parameters): its first row, inserted or (a
 * restored job's) replacing the stored one, and a later row's update (WHERE to add).
 * The accept journal's replay adds its own conditions to both. */
#define JOB_SET "state=?4, finished=?6, record=COALESCE(?8, record), " KEPT_REQUEST
#define JOB_UPSERT                                                                \
  "INSERT INTO jobs(id, client, type, state, created, finished, request, record)" \
  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(id) DO UPDATE SET " JOB_SET
#define JOB_UPDATE "UPDATE jobs SET " JOB_SET

/* PRAGMA quick_check: 0 when it says "ok", else -EIO with its first finding in err. */
static int quick_check(sqlite3 *db, char *err, size_t err_len) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
  if (rc != SQLITE_OK) {
    snprintf(err, err_len, "PRAGMA quick_check failed: %s", sqlite3_errmsg(db));
    return lite_errno(db, rc);
  }
  rc = sqlite3_step(st);
  const char *first = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
  int ret = first && strcmp(first, "ok") == 0 ? 0 : -EIO;
  if (ret) {
    int n = snprintf(err, err_len, "it is corrupted (PRAGMA quick_check: %.150s",
                     first ? first : sqlite3_errmsg(db));
    for (char *p = err; *p; p++) /* its findings are lines: one line for the log */
      if (*p == '\n') *p = ' ';
    if (n > 0 && (size_t)n + 2 < err_len) strcat(err, ")");
  }
  sqlite3_finalize(st);
  return ret;
}

/* One gpulabd per database: an flock on <file>-lock, held until the store closes, and
 * released by the kernel if gpulabd dies, so that a second gpulabd is told why (the
 * VFS's own exclusive lock, LITE_VFS, would only make its reads busy). A file of its
 * own, not the database: SQLite takes POSIX (fcntl) locks on the database, and closing
 * any descriptor of that file would drop them all; flock and fcntl locks are apart on
 * Linux. (SQLite's locking_mode=EXCLUSIVE did this before, and allowed no second
 * connection: the checkpoint thread's.) */
static int lock_file(struct lite *l, const char *file, char *why, size_t why_len) {
  char name[4096];
  snprintf(name, sizeof name, "%s-lock", file);
  l->lock_fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (l->lock_fd >= 0 && flock(l->lock_fd, LOCK_EX | LOCK_NB) == 0) return 0;
  int e = errno;
  if (e == EWOULDBLOCK)
    snprintf(why, why_len, "another gpulabd has it open (%s is locked): one gpulabd per database",
             name);
  else
    snprintf(why, why_len, "cannot lock %s: %s", name, strerror(e));
  return e == EWOULDBLOCK ? -EBUSY : -e;
}

/* Opens path, checks it and prepares the statements. */
static int lite_open(struct store *s, const char *path, char *why, size_t why_len) {
  struct lite *l = calloc(1, sizeof *l);
  if (!l) {
    snprintf(why, why_len, "out of memory");
    return -ENOMEM;
  }
  s->backend = l;
  l->lock_fd = -1;
  pthread_mutex_init(&l->ckpt.lock, NULL);
  pthread_cond_init(&l->ckpt.wake, NULL);
  pthread_cond_init(&l->ckpt.unlocked_done, NULL);
  l->ckpt.threshold = 1000; /* SQLite's auto-checkpoint's, until store_limit */
  l->ckpt.next = l->ckpt.threshold;
  l->ckpt.hard = l->ckpt.limit = 4000;
  int rc = sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, LITE_VFS);
  char *msg = NULL;
  if (rc != SQLITE_OK) {
    snprintf(why, why_len, "%s", l->db ? sqlite3_errmsg(l->db) : "out of memory");
    return l->db ? lite_errno(l->db, rc) : -ENOMEM;
  }
  sqlite3_busy_timeout(l->db, 200);
  sqlite3_extended_result_codes(l->db, 1); /* SQLITE_IOERR_WRITE: see lite_errno */
  if (sqlite3_db_readonly(l->db, "main") == 1) {
    snprintf(why, why_len, "it is read-only for this user: jobs could not be kept");
    return -EROFS;
  }
  const char *file = sqlite3_db_filename(l->db, "main"); /* absolute; "" for :memory: */
  int locked = file && file[0] ? lock_file(l, file, why, why_len) : 0;
  if (locked) return locked; /* before anything reads the WAL */
  if ((rc = sqlite3_exec(l->db, pragmas, NULL, NULL, &msg)) != SQLITE_OK) goto fail;
  int checked = quick_check(l->db, why, why_len);
  if (checked) return checked;
  if ((rc = sqlite3_exec(l->db, schema, NULL, NULL, &msg)) != SQLITE_OK) goto fail;
  if ((rc = lite_kernels_upgrade(l->db, &msg)) != SQLITE_OK) goto fail;
  if ((rc = sqlite3_prepare_v2(l->db, JOB_UPSERT, -1, &l->put, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(l->db, JOB_UPDATE " WHERE id=?1", -1, &l->update, NULL)) !=
          SQLITE_OK ||
      (rc = sqlite3_prepare_v2(l->db, "SELECT record FROM jobs WHERE id=?1", -1, &l->get, NULL)) !=
          SQLITE_OK ||
      (rc = sqlite3_prepare_v2(
           l->db,
           "INSERT OR REPLACE INTO sweeps(id, client, created, record) VALUES(?1, ?2, ?3, ?4)", -1,
           &l->put_sweep, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(l->db,
                               "INSERT INTO meta(name, value) VALUES(?1, ?2)"
                               " ON CONFLICT(name) DO UPDATE SET value=?2",
                               -1, &l->set_meta, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(l->db, "SELECT value FROM meta WHERE name=?1", -1, &l->get_meta,
                               NULL)) != SQLITE_OK ||
      (rc = sqlite3_create_function(l->db, "journal_holds", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, l,
                                    lite_journal_holds, NULL, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(l->db, "BEGIN", -1, &l->begin, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(l->db, "COMMIT", -1, &l->commit, NULL)) != SQLITE_OK)
    goto fail;
  /* A write now: a store that cannot take one is refused before any job is. */
  sqlite3_bind_text(l->set_meta, 1, "opened", -1, SQLITE_STATIC);
  sqlite3_bind_int64(l->set_meta, 2, (sqlite3_int64)time(NULL));
  rc = sqlite3_step(l->set_meta);
  sqlite3_reset(l->set_meta);
  if (rc != SQLITE_DONE) {
    snprintf(why, why_len, "it cannot be written: %s", sqlite3_errmsg(l->db));
    return lite_errno(l->db, rc);
  }
  return file && file[0] ? lite_ckpt_start(s, file, why, why_len) : 0;
fail:
  snprintf(why, why_len, "%s", msg ? msg : sqlite3_errmsg(l->db));
  sqlite3_free(msg);
  return lite_errno(l->db, rc);
}

/* The checkpoint thread and its connection go first: the writing connection's close,
 * the last one's, then checkpoints the WAL and removes it. The lock goes last. */
static void lite_close(struct store *s) {
  struct lite *l = lite_of(s);
  if (!l) return;
  lite_ckpt_stop(l);
  sqlite3_finalize(l->put);
  sqlite3_finalize(l->update);
  sqlite3_finalize(l->put_sweep);
  sqlite3_finalize(l->get);
  sqlite3_finalize(l->set_meta);
  sqlite3_finalize(l->get_meta);
  sqlite3_finalize(l->begin);
  sqlite3_finalize(l->commit);
  sqlite3_close(l->db);
  if (l->lock_fd >= 0) close(l->lock_fd);
  pthread_mutex_destroy(&l->ckpt.lock);
  pthread_cond_destroy(&l->ckpt.wake);
  pthread_cond_destroy(&l->ckpt.unlocked_done);
  free(l);
  s->backend = NULL;
}

/* A job's row into st, a statement of put's or update's parameters (?1 id, ?2 client,
 * ?3 type, ?4 state, ?5 created, ?6 finished, ?7 request, ?8 record; update: ?1, ?4,
 * ?6 and ?8 only). A NULL record keeps the stored one. */
static void bind_job_row(sqlite3_stmt *st, const struct store_row *r) {
  sqlite3_bind_int64(st, 1, (sqlite3_int64)r->id);
  sqlite3_bind_text(st, 4, r->state, -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 6, r->finished);
  sqlite3_bind_text(st, 8, r->record, -1, SQLITE_STATIC); /* NULL binds NULL */
  if (r->create) {
    sqlite3_bind_text(st, 2, r->client, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->type, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, r->created);
    if (r->request && r->finished == 0) /* KEPT_REQUEST */
      sqlite3_bind_blob(st, 7, r->request, (int)r->request_len, SQLITE_STATIC);
    else
      sqlite3_bind_null(st, 7);
  }
}

/* Writes one row; the database lock is held. Returns SQLite's result. A job whose
 * first row failed (it was refused) is never created by a later one. */
static int write_row_locked(struct lite *l, const struct store_row *r) {
  if (r->table == STORE_SWEEPS) {
    sqlite3_stmt *st = l->put_sweep;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)r->id);
    sqlite3_bind_text(st, 2, r->client, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, r->created);
    sqlite3_bind_text(st, 4, r->record ? r->record : "{}", -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  sqlite3_stmt *st = r->create ? l->put : l->update;
  bind_job_row(st, r);
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Runs a prepared statement that returns no rows: SQLITE_OK or the error. */
static int step_once(sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int lite_write_batch_locked(struct store *s, const struct queued_row *batch, char *why,
                                   size_t len) {
  struct lite *l = lite_of(s);
  int rc = step_once(l->begin);
  for (const struct queued_row *q = batch; q && rc == SQLITE_OK; q = q->next)
    rc = write_row_locked(l, &q->row);
  if (rc == SQLITE_OK) rc = step_once(l->commit);
  if (rc == SQLITE_OK) return 0;
  int err = lite_errno(l->db, rc);
  snprintf(why, len, "%s", sqlite3_errmsg(l->db));
  if (!sqlite3_get_autocommit(l->db)) sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
  return err;
}

static const char *lite_journal_base_locked(struct store *s) {
  const char *file = sqlite3_db_filename(lite_of(s)->db, "main"); /* "" for :memory: */
  return file && file[0] ? file : NULL;
}

/* The accept journal's rows that a crash kept from the database (journal.h). A first
 * row creates its job where there is none; a later one (the job's final row, or a
 * first row a final row replaced) updates it where it has not finished, and a first
 * row never goes back over its job's later state. A job pruned meanwhile
 * (pruned_in_journal) is not brought back. */
struct replay {
  sqlite3_stmt *create, *update, *pruned;
  int applied;
  bool failed; /* a statement failed: the error is SQLite's */
};

static int replay_row(void *arg, const struct journal_entry *e) {
  struct replay *rp = arg;
  struct store_row r = {.table = STORE_JOBS,
                        .id = e->id,
                        .client = e->client,
                        .type = e->type,
                        .state = e->state,
                        .created = e->created,
                        .finished = e->finished,
                        .request = e->request,
                        .request_len = e->request_len,
                        .record = e->record,
                        .create = e->create};
  sqlite3_bind_int64(rp->pruned, 1, (sqlite3_int64)e->id);
  int rc = sqlite3_step(rp->pruned);
  sqlite3_reset(rp->pruned);
  if (rc == SQLITE_ROW) return 0;
  sqlite3_stmt *st = r.create ? rp->create : rp->update;
  bind_job_row(st, &r);
  sqlite3 *db = sqlite3_db_handle(st);
  rc = rc == SQLITE_DONE ? sqlite3_step(st) : rc;
  rp->applied += rc == SQLITE_DONE && sqlite3_changes(db) > 0;
  rp->failed = rc != SQLITE_DONE;
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc == SQLITE_DONE ? 0 : lite_errno(db, rc);
}

static int lite_replay_locked(struct store *s, const char *base, char *why, size_t len) {
  sqlite3 *db = lite_of(s)->db;
  struct replay rp = {0};
  int rc = sqlite3_prepare_v2(db, JOB_UPSERT " WHERE ?6 > 0 AND jobs.finished = 0", -1, &rp.create,
                              NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db, JOB_UPDATE " WHERE id=?1 AND finished = 0", -1, &rp.update, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db, "SELECT 1 FROM pruned_in_journal WHERE id=?1", -1, &rp.pruned,
                            NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
  int read = rc == SQLITE_OK ? journal_read(base, replay_row, &rp) : 0;
  /* The journal opens empty: no entry left for a note to stop. */
  if (rc == SQLITE_OK && read >= 0)
    rc = sqlite3_exec(db, "DELETE FROM pruned_in_journal; COMMIT", NULL, NULL, NULL);
  int err = rc != SQLITE_OK ? lite_errno(db, rc) : read < 0 ? read : 0;
  if (rc != SQLITE_OK || rp.failed)
    snprintf(why, len, "cannot apply its accept journal: %s", sqlite3_errmsg(db));
  else if (err)
    snprintf(why, len, "cannot read its accept journal (%s-accepted.*): %s", base, strerror(-err));
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_finalize(rp.create);
  sqlite3_finalize(rp.update);
  sqlite3_finalize(rp.pruned);
  if (!err && rp.applied > 0)
    log_info("store: %d row(s) of the accept journal applied to %s", rp.applied, base);
  return err;
}

/* A checkpoint first (a WAL that reached a file size limit can start over), then a
 * mark in meta. */
static int lite_probe_locked(struct store *s, char *why, size_t len) {
  struct lite *l = lite_of(s);
  sqlite3_wal_checkpoint_v2(l->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
  sqlite3_bind_text(l->set_meta, 1, "probe", -1, SQLITE_STATIC);
  sqlite3_bind_int64(l->set_meta, 2, (sqlite3_int64)time(NULL));
  int rc = sqlite3_step(l->set_meta), err = rc == SQLITE_DONE ? 0 : lite_errno(l->db, rc);
  if (err) snprintf(why, len, "%s", sqlite3_errmsg(l->db));
  sqlite3_reset(l->set_meta);
  return err;
}

/* Bytes of the file at path, 0 if none. */
static uint64_t file_size(const char *path, const char *suffix) {
  char name[4096];
  struct stat st;
  snprintf(name, sizeof name, "%s%s", path, suffix);
  return path[0] && stat(name, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static uint64_t lite_file_bytes_locked(struct store *s) {
  const char *path = sqlite3_db_filename(lite_of(s)->db, "main"); /* "" for :memory: */
  return path ? file_size(path, "") + file_size(path, "-wal") : 0;
}

static const char *lite_durability_locked(struct store *s) {
  int64_t sync = lite_query_int(lite_of(s)->db, "PRAGMA synchronous"); /* 1 NORMAL, 2 FULL */
  return sync == 2   ? "full"
         : sync == 1 ? "normal"
         : sync == 3 ? "extra"
         : sync == 0 ? "off"
                     : "unknown";
}

static int lite_set_durability_locked(struct store *s, enum store_durability d) {
  const char *sql = d == STORE_DURABILITY_FULL ? "PRAGMA synchronous=FULL"
                                               : "PRAGMA synchronous=NORMAL";
  return sqlite3_exec(lite_of(s)->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

/* One gpulabd per file: nobody else takes ids, the block never moves (from unused). */
static int lite_ids_reserve_locked(struct store *s, const char *name, uint64_t *from, uint64_t upto,
                                   char *why, size_t len) {
  (void)from;
  struct lite *l = lite_of(s);
  sqlite3_bind_text(l->set_meta, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(l->set_meta, 2, (sqlite3_int64)upto);
  int rc = sqlite3_step(l->set_meta), err = rc == SQLITE_DONE ? 0 : lite_errno(l->db, rc);
  if (err) snprintf(why, len, "%s", sqlite3_errmsg(l->db));
  sqlite3_reset(l->set_meta);
  return err;
}

const struct store_ops store_sqlite_ops = {
    .name = "sqlite",
    .open = lite_open,
    .close = lite_close,
    .write_batch_locked = lite_write_batch_locked,
    .probe_locked = lite_probe_locked,
    .used_bytes_locked = lite_used_bytes_locked,
    .id_span_locked = lite_id_span_locked,
    .delete_oldest_locked = lite_delete_oldest_locked,
    .after_prune_locked = lite_after_prune_locked,
    .limit_locked = lite_limit_locked,
    .file_bytes_locked = lite_file_bytes_locked,
    .durability_locked = lite_durability_locked,
    .set_durability_locked = lite_set_durability_locked,
    .journal_base_locked = lite_journal_base_locked,
    .replay_locked = lite_replay_locked,
    .ids_reserve_locked = lite_ids_reserve_locked,
    .ids_floor_locked = lite_ids_floor_locked,
    .record = lite_record,
    .list = lite_list,
    .unfinished = lite_unfinished,
    .max_id = lite_max_id,
    .sweeps = lite_sweeps,
    .prune = lite_prune,
    .problem_insert = lite_problem_insert,
    .problem_get = lite_problem_get,
    .problem_each = lite_problem_each,
    .problem_delete = lite_problem_delete,
    .kernel_insert = lite_kernel_insert,
    .kernel_get = lite_kernel_get,
    .kernel_delete = lite_kernel_delete,
    .kernel_drop = lite_kernel_drop,
    .kernel_list = lite_kernel_list,
    .kernel_versions = lite_kernel_versions,
    .kernel_named = lite_kernel_named,
    .kernel_count = lite_kernel_count,
};
