/* Durable job records in SQLite: opening and checking the database, the writer
 * thread that commits queued rows in batches, and what a write failure means. */
#include "server/store/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "server/log.h"
#include "server/store/store_priv.h"

/* The ticket of the last row this thread queued, and in which store. */
static _Thread_local struct {
  const struct store *store;
  uint64_t ticket;
} last_put;

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS jobs ("
    "  id INTEGER PRIMARY KEY, client TEXT NOT NULL, type TEXT NOT NULL, state TEXT NOT NULL,"
    "  created REAL NOT NULL, finished REAL NOT NULL DEFAULT 0, request BLOB, record TEXT);"
    "CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);"
    "CREATE TABLE IF NOT EXISTS sweeps ("
    "  id INTEGER PRIMARY KEY, client TEXT NOT NULL, created REAL NOT NULL, record TEXT NOT NULL);"
    /* Users' kernels (store_kernels.c): ids never reused, even after a delete. */
    "CREATE TABLE IF NOT EXISTS kernels ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, name TEXT NOT NULL,"
    "  experiment TEXT NOT NULL, public INTEGER NOT NULL, created REAL NOT NULL,"
    "  source_sha TEXT NOT NULL, source TEXT NOT NULL, spec TEXT NOT NULL, report TEXT NOT NULL,"
    "  image BLOB);"
    "CREATE INDEX IF NOT EXISTS kernels_owner ON kernels(owner);"
    /* Id sequences handed out ahead ("jobs": ids up to value are used), and marks. */
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);";

static const char pragmas[] =
    /* New databases give freed pages back to the file system (store_limit); an
     * existing one keeps its mode (changing it takes a VACUUM). */
    "PRAGMA auto_vacuum=INCREMENTAL;"
    "PRAGMA journal_mode=WAL;"
    /* NORMAL (the default; --durability full makes it FULL: store_set_durability): a
     * commit survives gpulabd crashing (kill -9); one fsync per WAL checkpoint instead
     * of per commit. A power cut may lose the commits since the last checkpoint. */
    "PRAGMA synchronous=NORMAL;"
    "PRAGMA locking_mode=EXCLUSIVE;"; /* one gpulabd per database */

int store_errno(sqlite3 *db, int rc) {
  switch (rc & 0xff) {
  case SQLITE_FULL: return -ENOSPC;
  case SQLITE_READONLY: return -EROFS;
  case SQLITE_NOMEM: return -ENOMEM;
  case SQLITE_IOERR: {
    int e = sqlite3_system_errno(db); /* SQLite calls ENOSPC full */
    if (e == EFBIG || e == ENOSPC || e == EDQUOT || e == EROFS) return -e;
    /* A write cut short leaves no errno: under a file size limit, that is the limit. */
    struct rlimit fsize;
    if (e == 0 && (rc == SQLITE_IOERR_WRITE || rc == SQLITE_IOERR_TRUNCATE) &&
        getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY)
      return -EFBIG;
    return -EIO;
  }
  default: return -EIO;
  }
}

static void *writer_main(void *arg);

/* PRAGMA quick_check: 0 when it says "ok", else -EIO with its first finding in err. */
static int quick_check(sqlite3 *db, char *err, size_t err_len) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
  if (rc != SQLITE_OK) {
    snprintf(err, err_len, "PRAGMA quick_check failed: %s", sqlite3_errmsg(db));
    return store_errno(db, rc);
  }
  rc = sqlite3_step(st);
  const char *first = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
  int ret = first && strcmp(first, "ok") == 0 ? 0 : -EIO;
  if (ret) {
    int n = snprintf(err, err_len, "it is corrupted (PRAGMA quick_check: %.150s", first ? first : sqlite3_errmsg(db));
    for (char *p = err; *p; p++) /* its findings are lines: one line for the log */
      if (*p == '\n') *p = ' ';
    if (n > 0 && (size_t)n + 2 < err_len) strcat(err, ")");
  }
  sqlite3_finalize(st);
  return ret;
}

/* Opens path, checks it and prepares the statements; the writer is not started. */
static int open_db(struct store *s, const char *path, char *why, size_t why_len) {
  int rc = sqlite3_open(path, &s->db);
  char *msg = NULL;
  if (rc != SQLITE_OK) {
    snprintf(why, why_len, "%s", s->db ? sqlite3_errmsg(s->db) : "out of memory");
    return s->db ? store_errno(s->db, rc) : -ENOMEM;
  }
  sqlite3_busy_timeout(s->db, 200);
  sqlite3_extended_result_codes(s->db, 1); /* SQLITE_IOERR_WRITE: see store_errno */
  if (sqlite3_db_readonly(s->db, "main") == 1) {
    snprintf(why, why_len, "it is read-only for this user: jobs could not be kept");
    return -EROFS;
  }
  if ((rc = sqlite3_exec(s->db, pragmas, NULL, NULL, &msg)) != SQLITE_OK) goto fail;
  int checked = quick_check(s->db, why, why_len);
  if (checked) return checked;
  if ((rc = sqlite3_exec(s->db, schema, NULL, NULL, &msg)) != SQLITE_OK ||
      /* Takes the exclusive lock now, so a second gpulabd on this file fails here. */
      (rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE; COMMIT;", NULL, NULL, &msg)) != SQLITE_OK)
    goto fail;
  if ((rc = sqlite3_prepare_v2(s->db,
                               "INSERT INTO jobs(id, client, type, state, created, finished, request, record)"
                               " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(id) DO UPDATE SET"
                               " state=?4, finished=?6, record=COALESCE(?8, record)",
                               -1, &s->put, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(s->db,
                               "UPDATE jobs SET state=?4, finished=?6, record=COALESCE(?8, record) WHERE id=?1",
                               -1, &s->update, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(s->db, "SELECT record FROM jobs WHERE id=?1", -1, &s->get, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO sweeps(id, client, created, record) VALUES(?1, ?2, ?3, ?4)",
                               -1, &s->put_sweep, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(s->db,
                               "INSERT INTO meta(name, value) VALUES(?1, ?2)"
                               " ON CONFLICT(name) DO UPDATE SET value=?2",
                               -1, &s->set_meta, NULL)) != SQLITE_OK ||
      (rc = sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE name=?1", -1, &s->get_meta, NULL)) != SQLITE_OK)
    goto fail;
  /* A write now: a store that cannot take one is refused before any job is. */
  sqlite3_bind_text(s->set_meta, 1, "opened", -1, SQLITE_STATIC);
  sqlite3_bind_int64(s->set_meta, 2, (sqlite3_int64)time(NULL));
  rc = sqlite3_step(s->set_meta);
  sqlite3_reset(s->set_meta);
  if (rc != SQLITE_DONE) {
    snprintf(why, why_len, "it cannot be written: %s", sqlite3_errmsg(s->db));
    return store_errno(s->db, rc);
  }
  return 0;
fail:
  snprintf(why, why_len, "%s", msg ? msg : sqlite3_errmsg(s->db));
  sqlite3_free(msg);
  return store_errno(s->db, rc);
}

int store_open(const char *path, struct store **out, char *err, size_t err_len) {
  struct store *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return -ENOMEM;
  }
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->queue_lock, NULL);
  pthread_cond_init(&s->queue_ready, NULL);
  pthread_cond_init(&s->committed_cond, NULL);
  s->tail = &s->head;
  s->writable = true;
  char why[256];
  int rc = open_db(s, path, why, sizeof why);
  if (rc == 0 && pthread_create(&s->writer, NULL, writer_main, s) != 0) {
    snprintf(why, sizeof why, "cannot start the store's writer thread");
    rc = -EAGAIN;
  }
  if (rc) {
    snprintf(err, err_len, "%s: %s", path, why);
    store_close(s);
    return rc;
  }
  s->writer_started = true;
  *out = s;
  return 0;
}

void store_close(struct store *s) {
  if (!s) return;
  if (s->writer_started) { /* it writes what is queued, then ends */
    pthread_mutex_lock(&s->queue_lock);
    s->closing = true;
    pthread_cond_signal(&s->queue_ready);
    pthread_mutex_unlock(&s->queue_lock);
    pthread_join(s->writer, NULL);
  }
  sqlite3_finalize(s->put);
  sqlite3_finalize(s->update);
  sqlite3_finalize(s->put_sweep);
  sqlite3_finalize(s->get);
  sqlite3_finalize(s->set_meta);
  sqlite3_finalize(s->get_meta);
  sqlite3_close(s->db);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->queue_lock);
  pthread_cond_destroy(&s->queue_ready);
  pthread_cond_destroy(&s->committed_cond);
  free(s);
}

/* Writes one row; the database lock is held. Returns SQLite's result. A job whose
 * first row failed (it was refused) is never created by a later one. */
static int write_row_locked(struct store *s, const struct store_row *r) {
  if (r->table == STORE_SWEEPS) {
    sqlite3_stmt *st = s->put_sweep;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)r->id);
    sqlite3_bind_text(st, 2, r->client, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, r->created);
    sqlite3_bind_text(st, 4, r->record ? r->record : "{}", -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  sqlite3_stmt *st = r->create ? s->put : s->update;
  sqlite3_bind_int64(st, 1, (sqlite3_int64)r->id);
  sqlite3_bind_text(st, 4, r->state, -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 6, r->finished);
  if (r->create) {
    sqlite3_bind_text(st, 2, r->client, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->type, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, r->created);
    if (r->request)
      sqlite3_bind_blob(st, 7, r->request, (int)r->request_len, SQLITE_STATIC);
    else
      sqlite3_bind_null(st, 7);
  }
  if (r->record)
    sqlite3_bind_text(st, 8, r->record, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, 8);
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Writes batch in one transaction, all or nothing. The database lock is held.
 * Returns 0, or a negative errno with SQLite's message in why. */
static int write_batch_locked(struct store *s, const struct queued_row *batch, char *why, size_t len) {
  int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
  for (const struct queued_row *q = batch; q && rc == SQLITE_OK; q = q->next)
    if (!q->replaced) rc = write_row_locked(s, &q->row);
  if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
  if (rc == SQLITE_OK) return 0;
  int err = store_errno(s->db, rc);
  snprintf(why, len, "%s", sqlite3_errmsg(s->db));
  if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  return err;
}

static double now_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Notes the outcome of a write of tickets from..to (none for a probe, from > to).
 * A failure makes the store refuse new work for a second at least: a write that
 * fits just after one that did not (a smaller batch at the edge of a full disk)
 * does not make it take work again at once. queue_lock held. */
void store_note_write_locked(struct store *s, uint64_t from, uint64_t to, int err, const char *why) {
  if (err == 0) {
    if (!s->writable && now_mono() >= s->retry_at) {
      log_info("store: writes succeed again; jobs are accepted");
      s->writable = true;
    }
    return;
  }
  s->retry_at = now_mono() + 1;
  if (from <= to) {
    struct failed_range *last = s->n_failed ? &s->failed[(s->n_failed - 1) % FAILED_RANGES] : NULL;
    if (last && last->to + 1 == from && last->error == err)
      last->to = to;
    else
      s->failed[s->n_failed++ % FAILED_RANGES] = (struct failed_range){from, to, err};
  }
  if (s->writable || s->error != err)
    log_warn("store: a write failed (%s: %s); new jobs are refused until one succeeds", strerror(-err), why);
  s->writable = false;
  s->error = err;
  snprintf(s->message, sizeof s->message, "%s", why);
  s->write_errors++;
}

/* Takes everything queued, writes it in one transaction and marks it done (written
 * or failed). One writer at a time (s->writing): the writer thread, or a
 * store_flush caller, which writes for itself rather than wait for a thread to
 * wake. Called and returns with queue_lock held. */
static void write_queued_locked(struct store *s) {
  struct queued_row *batch = s->head;
  uint64_t from = s->committed + 1, upto = s->queued;
  s->head = NULL;
  s->tail = &s->head;
  s->writing = true;
  pthread_mutex_unlock(&s->queue_lock);

  char why[200] = "";
  uint64_t bytes = 0;
  for (struct queued_row *q = batch; q; q = q->next) {
    if (q->replaced) continue;
    if (!q->row.record && q->row.make_record) /* outside the database's lock */
      q->row.record = q->made = q->row.make_record(q->row.record_arg);
    bytes += 64 + q->row.request_len + (q->row.record ? strlen(q->row.record) : 0);
  }
  pthread_mutex_lock(&s->lock);
  int err = write_batch_locked(s, batch, why, sizeof why);
  s->written_since_check += bytes;
  bool check = err == 0 && s->max_bytes && s->written_since_check > s->max_bytes / 64 + 4096;
  pthread_mutex_unlock(&s->lock);
  while (batch) {
    struct queued_row *next = batch->next;
    free(batch->made);
    free(batch);
    batch = next;
  }

  pthread_mutex_lock(&s->queue_lock);
  store_note_write_locked(s, from, upto, err, why);
  s->committed = upto;
  /* The batch's waiters go now; the size bound's check (which may prune) comes after,
   * so that no answer waits for it. The next batch does, as it would for a batch. */
  pthread_cond_broadcast(&s->committed_cond);
  if (check) {
    pthread_mutex_unlock(&s->queue_lock);
    pthread_mutex_lock(&s->lock);
    store_keep_within_locked(s);
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&s->queue_lock);
  }
  s->writing = false;
  pthread_cond_broadcast(&s->committed_cond);
  if (s->head) pthread_cond_signal(&s->queue_ready); /* queued meanwhile */
}

/* A failing store's small write of its own: a checkpoint first (a WAL that reached
 * a file size limit can start over), then a mark in meta. queue_lock held. */
static void probe_locked(struct store *s) {
  s->writing = true;
  pthread_mutex_unlock(&s->queue_lock);
  char why[200] = "";
  pthread_mutex_lock(&s->lock);
  sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
  sqlite3_bind_text(s->set_meta, 1, "probe", -1, SQLITE_STATIC);
  sqlite3_bind_int64(s->set_meta, 2, (sqlite3_int64)time(NULL));
  int rc = sqlite3_step(s->set_meta), err = rc == SQLITE_DONE ? 0 : store_errno(s->db, rc);
  if (err) snprintf(why, sizeof why, "%s", sqlite3_errmsg(s->db));
  sqlite3_reset(s->set_meta);
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_lock(&s->queue_lock);
  if (err == 0 || s->writable) store_note_write_locked(s, 1, 0, err, why);
  s->writing = false;
  pthread_cond_broadcast(&s->committed_cond);
}

/* Until a deadline `ms` from now on the condition variable's clock. */
static struct timespec in_ms(long ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (ms % 1000) * 1000 * 1000;
  if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
  return until;
}

/* Writes what nobody flushed: rows queued for a millisecond (a batch gathers, and a
 * store_flush caller usually takes it first);
 * until closing and all written. While writes fail, it probes once a second. */
static void *writer_main(void *arg) {
  struct store *s = arg;
  pthread_mutex_lock(&s->queue_lock);
  for (;;) {
    while (!s->head && !s->closing) {
      if (s->writable) {
        s->writer_idle = true;
        pthread_cond_wait(&s->queue_ready, &s->queue_lock);
        s->writer_idle = false;
        continue;
      }
      struct timespec second = in_ms(1000);
      if (pthread_cond_timedwait(&s->queue_ready, &s->queue_lock, &second) == ETIMEDOUT &&
          !s->head && !s->writable && !s->writing)
        probe_locked(s);
    }
    /* The whole millisecond: a put into a queue a flush emptied meanwhile signals
     * again, and must not cut the gathering short (a tiny job's first row would be
     * written alone, before its final row could replace it). */
    struct timespec ms = in_ms(1);
    while (!s->closing && pthread_cond_timedwait(&s->queue_ready, &s->queue_lock, &ms) != ETIMEDOUT) {}
    if (s->writing || s->holds) { /* a flush writes, or rows are held: a signal comes */
      pthread_cond_wait(&s->committed_cond, &s->queue_lock);
      continue;
    }
    if (s->head)
      write_queued_locked(s);
    else if (s->closing)
      break; /* all written */
  }
  pthread_mutex_unlock(&s->queue_lock);
  return NULL;
}

/* Appends src (n bytes) at *at and returns where it went. */
static void *put_bytes(char **at, const void *src, size_t n) {
  void *where = *at;
  memcpy(where, src, n);
  *at += n;
  return where;
}

/* q takes the place of the queued row of its job, if one is still in the queue:
 * that one is left unwritten, and q keeps what it lacks of it (its first row's
 * insert and request; its record). Only job rows; queue_lock held. Pointers into
 * the replaced row stay valid: it is freed with q's batch. */
static void replace_queued_locked(struct store *s, struct queued_row *q) {
  if (q->row.table != STORE_JOBS) return;
  struct queued_row *prev = NULL;
  for (struct queued_row *o = s->head; o; o = o->next)
    if (!o->replaced && o->row.table == STORE_JOBS && o->row.id == q->row.id) prev = o;
  if (!prev) return;
  prev->replaced = true;
  struct store_row *r = &q->row;
  const struct store_row *p = &prev->row;
  r->create = r->create || p->create;
  if (!r->request) r->request = p->request, r->request_len = p->request_len;
  if (!r->record && !r->make_record)
    r->record = p->record, r->make_record = p->make_record, r->record_arg = p->record_arg;
}

int store_put(struct store *s, const struct store_row *r) {
  const char *type_s = r->type ? r->type : "", *state_s = r->state ? r->state : "";
  size_t client = strlen(r->client) + 1, type = strlen(type_s) + 1, state = strlen(state_s) + 1;
  size_t record = r->record ? strlen(r->record) + 1 : 0, request = r->request ? r->request_len : 0;
  size_t arg = !r->record && r->make_record ? r->record_arg_len : 0;
  struct queued_row *q = malloc(sizeof *q + client + type + state + record + request + arg);
  if (!q) {
    log_warn("store: job %llu: out of memory", (unsigned long long)r->id);
    return -ENOMEM;
  }
  char *at = (char *)(q + 1); /* aligned as malloc's, for record_arg first */
  q->row = *r;
  q->row.record_arg = arg ? put_bytes(&at, r->record_arg, arg) : NULL;
  if (!arg) q->row.make_record = NULL;
  q->next = NULL;
  q->replaced = false;
  q->made = NULL;
  q->row.client = put_bytes(&at, r->client, client);
  q->row.type = put_bytes(&at, type_s, type);
  q->row.state = put_bytes(&at, state_s, state);
  q->row.record = r->record ? put_bytes(&at, r->record, record) : NULL;
  q->row.request = r->request ? put_bytes(&at, r->request, request) : NULL;
  pthread_mutex_lock(&s->queue_lock);
  replace_queued_locked(s, q);
  /* The writer wakes once per batch: not while it gathers one, nor while it probes. */
  if (!s->head && s->writer_idle) pthread_cond_signal(&s->queue_ready);
  *s->tail = q;
  s->tail = &q->next;
  last_put.store = s;
  last_put.ticket = ++s->queued;
  pthread_mutex_unlock(&s->queue_lock);
  return 0;
}

uint64_t store_ticket(struct store *s) { return last_put.store == s ? last_put.ticket : 0; }

/* Waits (queue_lock held) until rows up to target are done, writing them itself
 * when no one else is. */
static void wait_done_locked(struct store *s, uint64_t target) {
  while (s->committed < target) {
    if (!s->writing && !s->holds && s->head)
      write_queued_locked(s); /* ours, and whatever else is queued: one commit */
    else
      pthread_cond_wait(&s->committed_cond, &s->queue_lock);
  }
}

int store_sync(struct store *s, uint64_t ticket) {
  int err = 0;
  pthread_mutex_lock(&s->queue_lock);
  wait_done_locked(s, ticket);
  uint64_t kept = s->n_failed < FAILED_RANGES ? s->n_failed : FAILED_RANGES;
  for (uint64_t i = 0; i < kept && ticket && !err; i++) {
    const struct failed_range *f = &s->failed[(s->n_failed - 1 - i) % FAILED_RANGES];
    if (ticket >= f->from && ticket <= f->to) err = f->error;
  }
  pthread_mutex_unlock(&s->queue_lock);
  return err;
}

void store_flush(struct store *s) {
  pthread_mutex_lock(&s->queue_lock);
  wait_done_locked(s, s->queued);
  pthread_mutex_unlock(&s->queue_lock);
}

void store_hold(struct store *s) {
  pthread_mutex_lock(&s->queue_lock);
  s->holds++;
  pthread_mutex_unlock(&s->queue_lock);
}

void store_release(struct store *s) {
  pthread_mutex_lock(&s->queue_lock);
  if (--s->holds == 0) {
    pthread_cond_broadcast(&s->committed_cond); /* flushers and the writer may go on */
    if (s->head) pthread_cond_signal(&s->queue_ready);
  }
  pthread_mutex_unlock(&s->queue_lock);
}

int store_check(struct store *s) {
  pthread_mutex_lock(&s->queue_lock);
  int err = s->writable ? 0 : s->error;
  pthread_mutex_unlock(&s->queue_lock);
  return err ? err : atomic_load(&s->over_limit) ? -ENOSPC : 0;
}

/* Bytes of the file at path, 0 if none. */
static uint64_t file_bytes(const char *path, const char *suffix) {
  char name[4096];
  struct stat st;
  snprintf(name, sizeof name, "%s%s", path, suffix);
  return path[0] && stat(name, &st) == 0 ? (uint64_t)st.st_size : 0;
}

void store_status(struct store *s, struct store_status *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&s->queue_lock);
  out->writable = s->writable;
  out->error = s->error;
  snprintf(out->message, sizeof out->message, "%s", s->message);
  out->write_errors = s->write_errors;
  pthread_mutex_unlock(&s->queue_lock);
  const char *path = sqlite3_db_filename(s->db, "main"); /* "" for :memory: */
  if (path) out->file_bytes = file_bytes(path, "") + file_bytes(path, "-wal");
  pthread_mutex_lock(&s->lock);
  out->used_bytes = store_used_bytes_locked(s);
  out->max_bytes = s->max_bytes;
  out->pruned_jobs = s->pruned_jobs;
  int64_t sync = store_query_int(s->db, "PRAGMA synchronous"); /* 1 NORMAL, 2 FULL */
  pthread_mutex_unlock(&s->lock);
  out->durability = sync == 2   ? "full"
                    : sync == 1 ? "normal"
                    : sync == 3 ? "extra"
                    : sync == 0 ? "off"
                                : "unknown";
  if (out->writable && atomic_load(&s->over_limit)) { /* writes work; the bound refuses */
    out->writable = false;
    out->error = -ENOSPC;
    snprintf(out->message, sizeof out->message, "unfinished jobs alone hold more than --max-db-bytes (%llu bytes)",
             (unsigned long long)s->max_bytes);
  }
}

int store_set_durability(struct store *s, enum store_durability d) {
  const char *sql = d == STORE_DURABILITY_FULL ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
  store_flush(s); /* rows queued before are committed under the old setting */
  pthread_mutex_lock(&s->lock);
  int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
  pthread_mutex_unlock(&s->lock);
  return rc == SQLITE_OK ? 0 : -EIO;
}

int store_ids_reserve(struct store *s, const char *name, uint64_t upto) {
  char why[200] = "";
  pthread_mutex_lock(&s->lock);
  sqlite3_bind_text(s->set_meta, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s->set_meta, 2, (sqlite3_int64)upto);
  int rc = sqlite3_step(s->set_meta), err = rc == SQLITE_DONE ? 0 : store_errno(s->db, rc);
  if (err) snprintf(why, sizeof why, "%s", sqlite3_errmsg(s->db));
  sqlite3_reset(s->set_meta);
  pthread_mutex_unlock(&s->lock);
  if (err) store_note_write(s, err, why);
  return err;
}

void store_note_write(struct store *s, int err, const char *why) {
  pthread_mutex_lock(&s->queue_lock);
  store_note_write_locked(s, 1, 0, err, why);
  pthread_mutex_unlock(&s->queue_lock);
}

