/* Durable job records in SQLite. */
#include "server/store.h"

#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/log.h"

/* A row waiting for the writer: one allocation, its strings and request after it. */
struct queued_row {
  struct queued_row *next;
  struct store_row row;
};

/* Rows are queued and written many to a transaction (group commit) by the writer
 * thread, or by a store_flush caller, so that the engine, which records under its
 * lock, never waits for SQLite. */
struct store {
  sqlite3 *db;
  pthread_mutex_t lock; /* the database: the writer's batches and every read */
  sqlite3_stmt *put, *get;

  pthread_mutex_t queue_lock; /* guards the fields below */
  pthread_cond_t queue_ready; /* rows queued, or closing: the writer */
  pthread_cond_t committed_cond; /* a batch committed: store_flush's waiters */
  struct queued_row *head, **tail;
  uint64_t queued, committed; /* rows ever queued, and committed (in order) */
  bool writing;               /* a batch is being written (by one thread at a time) */
  bool closing, writer_started;
  pthread_t writer;
};

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    /* NORMAL: a commit survives gpulabd crashing (kill -9); one fsync per WAL
     * checkpoint instead of per job. A power cut may lose the last jobs. */
    "PRAGMA synchronous=NORMAL;"
    "PRAGMA locking_mode=EXCLUSIVE;" /* one gpulabd per database */
    "CREATE TABLE IF NOT EXISTS jobs ("
    "  id INTEGER PRIMARY KEY, client TEXT NOT NULL, type TEXT NOT NULL, state TEXT NOT NULL,"
    "  created REAL NOT NULL, finished REAL NOT NULL DEFAULT 0, request BLOB, record TEXT);"
    "CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);";

static void *writer_main(void *arg);

int store_open(const char *path, struct store **out, char *err, size_t err_len) {
  struct store *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->queue_lock, NULL);
  pthread_cond_init(&s->queue_ready, NULL);
  pthread_cond_init(&s->committed_cond, NULL);
  s->tail = &s->head;
  char *msg = NULL;
  if (sqlite3_open(path, &s->db) != SQLITE_OK ||
      sqlite3_busy_timeout(s->db, 200) != SQLITE_OK ||
      sqlite3_exec(s->db, schema, NULL, NULL, &msg) != SQLITE_OK ||
      /* Takes the exclusive lock now, so a second gpulabd on this file fails here. */
      sqlite3_exec(s->db, "BEGIN IMMEDIATE; COMMIT;", NULL, NULL, &msg) != SQLITE_OK ||
      sqlite3_prepare_v2(s->db,
                         "INSERT INTO jobs(id, client, type, state, created, finished, request, record)"
                         " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(id) DO UPDATE SET"
                         " state=?4, finished=?6, record=COALESCE(?8, record)",
                         -1, &s->put, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(s->db, "SELECT record FROM jobs WHERE id=?1", -1, &s->get, NULL) != SQLITE_OK) {
    snprintf(err, err_len, "%s: %s", path, msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    store_close(s);
    return -1;
  }
  if (pthread_create(&s->writer, NULL, writer_main, s) != 0) {
    snprintf(err, err_len, "%s: cannot start the store's writer thread", path);
    store_close(s);
    return -1;
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
  sqlite3_finalize(s->get);
  sqlite3_close(s->db);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->queue_lock);
  pthread_cond_destroy(&s->queue_ready);
  pthread_cond_destroy(&s->committed_cond);
  free(s);
}

/* Writes one row; the database lock is held. */
static void write_row_locked(struct store *s, const struct store_row *r) {
  sqlite3_stmt *st = s->put;
  sqlite3_bind_int64(st, 1, (sqlite3_int64)r->id);
  sqlite3_bind_text(st, 2, r->client, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, r->type, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, r->state, -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 5, r->created);
  sqlite3_bind_double(st, 6, r->finished);
  if (r->request)
    sqlite3_bind_blob(st, 7, r->request, (int)r->request_len, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, 7);
  if (r->record)
    sqlite3_bind_text(st, 8, r->record, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, 8);
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) log_warn("store: job %llu: %s", (unsigned long long)r->id, sqlite3_errmsg(s->db));
}

/* Takes everything queued, writes it in one transaction and marks it committed.
 * One writer at a time (s->writing): the writer thread, or a store_flush caller,
 * which commits for itself rather than wait for a thread to wake. Called and
 * returns with queue_lock held. */
static void write_queued_locked(struct store *s) {
  struct queued_row *batch = s->head;
  uint64_t upto = s->queued;
  s->head = NULL;
  s->tail = &s->head;
  s->writing = true;
  pthread_mutex_unlock(&s->queue_lock);

  pthread_mutex_lock(&s->lock);
  char *msg = NULL;
  if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, &msg) != SQLITE_OK) {
    log_warn("store: BEGIN: %s", msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    msg = NULL;
  }
  for (struct queued_row *q = batch; q; q = q->next) write_row_locked(s, &q->row);
  if (sqlite3_get_autocommit(s->db) == 0 &&
      sqlite3_exec(s->db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
    log_warn("store: COMMIT: %s", msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  }
  pthread_mutex_unlock(&s->lock);
  while (batch) {
    struct queued_row *next = batch->next;
    free(batch);
    batch = next;
  }

  pthread_mutex_lock(&s->queue_lock);
  s->committed = upto;
  s->writing = false;
  pthread_cond_broadcast(&s->committed_cond);
  if (s->head) pthread_cond_signal(&s->queue_ready); /* queued meanwhile */
}

/* Writes what nobody flushed: rows queued for a millisecond (a batch gathers, and a
 * store_flush caller usually takes it first, without waking this thread again);
 * until closing and all written. */
static void *writer_main(void *arg) {
  struct store *s = arg;
  pthread_mutex_lock(&s->queue_lock);
  for (;;) {
    while (!s->head && !s->closing) pthread_cond_wait(&s->queue_ready, &s->queue_lock);
    if (!s->closing) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's clock */
      until.tv_nsec += 1000 * 1000;
      if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&s->queue_ready, &s->queue_lock, &until);
    }
    if (s->writing) { /* a flush writes: it signals when done */
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

int store_put(struct store *s, const struct store_row *r) {
  size_t client = strlen(r->client) + 1, type = strlen(r->type) + 1, state = strlen(r->state) + 1;
  size_t record = r->record ? strlen(r->record) + 1 : 0, request = r->request ? r->request_len : 0;
  struct queued_row *q = malloc(sizeof *q + client + type + state + record + request);
  if (!q) {
    log_warn("store: job %llu: out of memory", (unsigned long long)r->id);
    return -1;
  }
  char *at = (char *)(q + 1);
  q->next = NULL;
  q->row = *r;
  q->row.client = put_bytes(&at, r->client, client);
  q->row.type = put_bytes(&at, r->type, type);
  q->row.state = put_bytes(&at, r->state, state);
  q->row.record = r->record ? put_bytes(&at, r->record, record) : NULL;
  q->row.request = r->request ? put_bytes(&at, r->request, request) : NULL;
  pthread_mutex_lock(&s->queue_lock);
  if (!s->head) pthread_cond_signal(&s->queue_ready); /* the writer wakes once per batch */
  *s->tail = q;
  s->tail = &q->next;
  s->queued++;
  pthread_mutex_unlock(&s->queue_lock);
  return 0;
}

void store_flush(struct store *s) {
  pthread_mutex_lock(&s->queue_lock);
  uint64_t target = s->queued;
  while (s->committed < target) {
    if (!s->writing && s->head)
      write_queued_locked(s); /* ours, and whatever else is queued: one commit */
    else
      pthread_cond_wait(&s->committed_cond, &s->queue_lock);
  }
  pthread_mutex_unlock(&s->queue_lock);
}

/* Takes the database for a read that sees every row queued before it. */
static void lock_for_read(struct store *s) {
  store_flush(s);
  pthread_mutex_lock(&s->lock);
}

char *store_record(struct store *s, uint64_t id) {
  char *out = NULL;
  lock_for_read(s);
  sqlite3_bind_int64(s->get, 1, (sqlite3_int64)id);
  if (sqlite3_step(s->get) == SQLITE_ROW && sqlite3_column_text(s->get, 0))
    out = strdup((const char *)sqlite3_column_text(s->get, 0));
  sqlite3_reset(s->get);
  pthread_mutex_unlock(&s->lock);
  return out;
}

int store_list(struct store *s, uint64_t before_id, const char *state, const char *type,
               const char *client, int limit, void (*fn)(void *arg, uint64_t id, const char *record),
               void *arg) {
  sqlite3_stmt *st;
  int n = 0;
  lock_for_read(s);
  if (sqlite3_prepare_v2(s->db,
                         "SELECT id, record FROM jobs WHERE record IS NOT NULL AND (?1 = 0 OR id < ?1)"
                         " AND (?2 IS NULL OR state = ?2) AND (?3 IS NULL OR type = ?3)"
                         " AND (?4 IS NULL OR client = ?4) ORDER BY id DESC LIMIT ?5",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, (sqlite3_int64)before_id);
    sqlite3_bind_text(st, 2, state, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, type, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, client, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 5, limit);
    while (sqlite3_step(st) == SQLITE_ROW) {
      fn(arg, (uint64_t)sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
      n++;
    }
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}

int store_unfinished(struct store *s,
                     void (*fn)(void *arg, uint64_t id, const char *state, const void *request,
                                size_t request_len),
                     void *arg) {
  sqlite3_stmt *st;
  int n = 0;
  lock_for_read(s);
  if (sqlite3_prepare_v2(s->db,
                         "SELECT id, state, request FROM jobs WHERE state IN"
                         " ('queued', 'waiting', 'running') ORDER BY id",
                         -1, &st, NULL) != SQLITE_OK) {
    pthread_mutex_unlock(&s->lock);
    return -1;
  }
  /* Rows are collected first: fn reads the store (mark_interrupted), which would
   * deadlock here. */
  struct pending {
    uint64_t id;
    char state[16];
    void *request;
    size_t len;
  } *rows = NULL;
  int cap = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      void *grown = realloc(rows, (size_t)cap * sizeof *rows);
      if (!grown) break;
      rows = grown;
    }
    struct pending *p = &rows[n++];
    p->id = (uint64_t)sqlite3_column_int64(st, 0);
    snprintf(p->state, sizeof p->state, "%s", (const char *)sqlite3_column_text(st, 1));
    p->len = (size_t)sqlite3_column_bytes(st, 2);
    p->request = p->len ? malloc(p->len) : NULL;
    if (p->request) memcpy(p->request, sqlite3_column_blob(st, 2), p->len);
    else p->len = 0;
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&s->lock);
  for (int i = 0; i < n; i++) {
    fn(arg, rows[i].id, rows[i].state, rows[i].request, rows[i].len);
    free(rows[i].request);
  }
  free(rows);
  return n;
}

uint64_t store_max_id(struct store *s) {
  sqlite3_stmt *st;
  uint64_t id = 0;
  lock_for_read(s);
  if (sqlite3_prepare_v2(s->db, "SELECT MAX(id) FROM jobs", -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW) id = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  return id;
}

int store_prune(struct store *s, double before) {
  sqlite3_stmt *st;
  int n = 0;
  lock_for_read(s);
  if (sqlite3_prepare_v2(s->db, "DELETE FROM jobs WHERE finished > 0 AND finished < ?1", -1, &st,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_double(st, 1, before);
    if (sqlite3_step(st) == SQLITE_DONE) n = sqlite3_changes(s->db);
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}
