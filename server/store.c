/* Durable job records in SQLite. */
#include "server/store.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/log.h"

struct store {
  sqlite3 *db;
  pthread_mutex_t lock;
  sqlite3_stmt *put, *get;
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

int store_open(const char *path, struct store **out, char *err, size_t err_len) {
  struct store *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  pthread_mutex_init(&s->lock, NULL);
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
  *out = s;
  return 0;
}

void store_close(struct store *s) {
  if (!s) return;
  sqlite3_finalize(s->put);
  sqlite3_finalize(s->get);
  sqlite3_close(s->db);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

int store_put(struct store *s, const struct store_row *r) {
  pthread_mutex_lock(&s->lock);
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
  pthread_mutex_unlock(&s->lock);
  return rc == SQLITE_DONE ? 0 : -1;
}

char *store_record(struct store *s, uint64_t id) {
  char *out = NULL;
  pthread_mutex_lock(&s->lock);
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
  pthread_mutex_lock(&s->lock);
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
  pthread_mutex_lock(&s->lock);
  if (sqlite3_prepare_v2(s->db,
                         "SELECT id, state, request FROM jobs WHERE state IN"
                         " ('queued', 'waiting', 'running') ORDER BY id",
                         -1, &st, NULL) != SQLITE_OK) {
    pthread_mutex_unlock(&s->lock);
    return -1;
  }
  /* Rows are collected first: fn writes to the store, which would deadlock here. */
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
  pthread_mutex_lock(&s->lock);
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
  pthread_mutex_lock(&s->lock);
  if (sqlite3_prepare_v2(s->db, "DELETE FROM jobs WHERE finished > 0 AND finished < ?1", -1, &st,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_double(st, 1, before);
    if (sqlite3_step(st) == SQLITE_DONE) n = sqlite3_changes(s->db);
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}
