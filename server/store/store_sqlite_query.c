/* The SQLite backend's reads (records, listings, the unfinished jobs, sweeps, id
 * marks) and its upkeep: pruning by age, and what the size bound (--max-db-bytes,
 * store.c) asks of it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/log.h"
#include "server/store/store_sqlite.h"

int64_t lite_query_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

uint64_t lite_used_bytes_locked(struct store *s, bool fresh) {
  (void)fresh; /* PRAGMAs: cheap */
  sqlite3 *db = lite_of(s)->db;
  int64_t page = lite_query_int(db, "PRAGMA page_size"),
          count = lite_query_int(db, "PRAGMA page_count");
  int64_t unused = lite_query_int(db, "PRAGMA freelist_count");
  return page > 0 && count >= unused && unused >= 0 ? (uint64_t)(page * (count - unused)) : 0;
}

int64_t lite_id_span_locked(struct store *s) {
  return lite_query_int(lite_of(s)->db, LITE_ID_SPAN_SQL);
}

void lite_journal_holds(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  const struct lite *l = sqlite3_user_data(ctx);
  uint64_t id = (uint64_t)sqlite3_value_int64(argv[0]);
  size_t lo = 0, hi = l->n_held;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (l->held[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  sqlite3_result_int(ctx, lo < l->n_held && l->held[lo] == id);
}

static void bind_time(sqlite3_stmt *st, const void *arg) {
  sqlite3_bind_double(st, 1, *(const double *)arg);
}

static void bind_id(sqlite3_stmt *st, const void *arg) {
  sqlite3_bind_int64(st, 1, *(const sqlite3_int64 *)arg);
}

/* Notes in pruned_in_journal the jobs that match (its ?1 bound by bind(st, arg)) and
 * that the accept journal may hold an entry of (l->held, sorted). A few held: a look-up
 * of each by id; many: one scan of the matching jobs, asking journal_holds of each. */
static int note_held(struct lite *l, const char *match,
                     void (*bind)(sqlite3_stmt *st, const void *arg), const void *arg) {
  char sql[400];
  bool each = l->n_held <= 256;
  snprintf(sql, sizeof sql,
           each ? "INSERT OR IGNORE INTO pruned_in_journal(id) SELECT id FROM jobs WHERE id = ?2"
                  " AND (%s)"
                : "INSERT OR IGNORE INTO pruned_in_journal(id) SELECT id FROM jobs WHERE (%s)"
                  " AND journal_holds(id)",
           match);
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(l->db, sql, -1, &st, NULL);
  for (size_t i = 0; rc == SQLITE_OK && i < (each ? l->n_held : 1); i++) {
    bind(st, arg);
    if (each) sqlite3_bind_int64(st, 2, (sqlite3_int64)l->held[i]);
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(l->db);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return rc;
}

/* Deletes the jobs that match ("finished > 0 AND ...", its ?1 bound by bind(st, arg))
 * in one transaction. A job the accept journal may still hold an entry of is noted in
 * pruned_in_journal, which the next start's replay skips (the entry would bring the
 * finished job back, queued to run again); the notes of jobs the journal no longer
 * holds go. Returns the jobs deleted, or a negative errno (none). */
static int delete_jobs(struct store *s, const char *match,
                       void (*bind)(sqlite3_stmt *st, const void *arg), const void *arg) {
  struct lite *l = lite_of(s);
  uint64_t *held;
  size_t n_held;
  int err = store_journal_held_locked(s, &held, &n_held);
  if (err) return err;
  char del[400];
  snprintf(del, sizeof del, "DELETE FROM jobs WHERE %s", match);
  l->held = held;
  l->n_held = n_held;
  int deleted = 0, rc = sqlite3_exec(l->db, "BEGIN", NULL, NULL, NULL);
  if (rc == SQLITE_OK && n_held) rc = note_held(l, match, bind, arg);
  sqlite3_stmt *st = NULL;
  if (rc == SQLITE_OK && (rc = sqlite3_prepare_v2(l->db, del, -1, &st, NULL)) == SQLITE_OK) {
    bind(st, arg);
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(l->db);
    deleted = sqlite3_changes(l->db);
  }
  sqlite3_finalize(st);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(l->db, "DELETE FROM pruned_in_journal WHERE NOT journal_holds(id); COMMIT",
                      NULL, NULL, NULL);
  l->held = NULL;
  l->n_held = 0;
  free(held);
  if (rc == SQLITE_OK) return deleted;
  err = lite_errno(l->db, rc);
  if (!sqlite3_get_autocommit(l->db)) sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
  return err;
}

/* The n oldest finished jobs are those up to the n-th one's id: found in one read
 * along the ids, then deleted as a range (where "id IN (SELECT ...)" sought each). */
int lite_delete_oldest_locked(struct store *s, uint64_t n) {
  sqlite3_stmt *st;
  sqlite3_int64 last = 0;
  if (sqlite3_prepare_v2(lite_of(s)->db,
                         "SELECT MAX(id) FROM (SELECT id FROM jobs WHERE finished > 0 ORDER BY id"
                         " LIMIT ?1)",
                         -1, &st, NULL) != SQLITE_OK)
    return lite_errno(lite_of(s)->db, sqlite3_errcode(lite_of(s)->db));
  sqlite3_bind_int64(st, 1, n > INT64_MAX ? INT64_MAX : (sqlite3_int64)n);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) last = sqlite3_column_int64(st, 0); /* NULL (none): 0 */
  int err = rc == SQLITE_ROW ? 0 : lite_errno(lite_of(s)->db, rc);
  sqlite3_finalize(st);
  if (err || last <= 0) return err;
  return delete_jobs(s, "finished > 0 AND id <= ?1", bind_id, &last);
}

void lite_after_prune_locked(struct store *s) {
  sqlite3 *db = lite_of(s)->db;
  int64_t page = lite_query_int(db, "PRAGMA page_size"),
          spare = lite_query_int(db, "PRAGMA freelist_count");
  int64_t keep = page > 0 ? (int64_t)(s->max_bytes / 8) / page : 0;
  if (spare <= keep) return;
  char vacuum[64];
  snprintf(vacuum, sizeof vacuum, "PRAGMA incremental_vacuum(%lld)", (long long)(spare - keep));
  sqlite3_exec(db, vacuum, NULL, NULL, NULL);
}

/* The WAL is kept to a sixteenth of the bound: the checkpoint thread's threshold
 * (frames of a page each; 16 to 1,000) and, once a checkpoint has emptied it, the
 * file's size. Commits wait for a checkpoint past 4 times the threshold, or a quarter
 * of the bound when that is less: a bound under a megabyte keeps the WAL to its size.
 * Past twice that a commit checkpoints itself (the thread fell behind: store_sqlite_ckpt.c). */
void lite_limit_locked(struct store *s, uint64_t max_bytes) {
  char sql[160];
  int64_t page = lite_query_int(lite_of(s)->db, "PRAGMA page_size");
  int64_t wal = (int64_t)(max_bytes / 16), pages = page > 0 ? wal / page : 1000;
  snprintf(sql, sizeof sql, "PRAGMA journal_size_limit=%lld;", (long long)wal);
  sqlite3_exec(lite_of(s)->db, sql, NULL, NULL, NULL);
  int64_t threshold = pages < 16 ? 16 : pages > 1000 ? 1000 : pages;
  int64_t limit = 4 * (pages < threshold ? pages : threshold);
  lite_ckpt_threshold(lite_of(s), (int)threshold, (int)(limit < threshold ? threshold : limit));
}

char *lite_record(struct store *s, uint64_t id) {
  char *out = NULL;
  store_lock_for_read(s);
  sqlite3_bind_int64(lite_of(s)->get, 1, (sqlite3_int64)id);
  if (sqlite3_step(lite_of(s)->get) == SQLITE_ROW && sqlite3_column_text(lite_of(s)->get, 0))
    out = strdup((const char *)sqlite3_column_text(lite_of(s)->get, 0));
  sqlite3_reset(lite_of(s)->get);
  pthread_mutex_unlock(&s->lock);
  return out;
}

int lite_list(struct store *s, uint64_t before_id, const char *state, const char *type,
              const char *client, int limit, void (*fn)(void *arg, uint64_t id, const char *record),
              void *arg) {
  sqlite3_stmt *st;
  struct listed {
    uint64_t id;
    char *record;
  } *rows = limit > 0 ? calloc((size_t)limit, sizeof *rows) : NULL;
  int n = 0;
  if (!rows) return 0;
  store_lock_for_read(s);
  if (sqlite3_prepare_v2(
          lite_of(s)->db,
          "SELECT id, record FROM jobs WHERE record IS NOT NULL AND (?1 = 0 OR id < ?1)"
          " AND (?2 IS NULL OR state = ?2) AND (?3 IS NULL OR type = ?3)"
          " AND (?4 IS NULL OR client = ?4) ORDER BY id DESC LIMIT ?5",
          -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, (sqlite3_int64)before_id);
    sqlite3_bind_text(st, 2, state, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, type, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, client, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 5, limit);
    while (n < limit && sqlite3_step(st) == SQLITE_ROW) {
      rows[n].id = (uint64_t)sqlite3_column_int64(st, 0);
      if ((rows[n].record = strdup((const char *)sqlite3_column_text(st, 1)))) n++;
    }
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  /* Outside the database's lock: fn looks jobs up in the engine, whose lock is
   * held while ids are reserved here (store_ids_reserve). */
  for (int i = 0; i < n; i++) {
    fn(arg, rows[i].id, rows[i].record);
    free(rows[i].record);
  }
  free(rows);
  return n;
}

int lite_unfinished(struct store *s,
                    void (*fn)(void *arg, uint64_t id, const char *state, const void *request,
                               size_t request_len),
                    void *arg) {
  sqlite3_stmt *st;
  int n = 0;
  store_lock_for_read(s);
  /* The condition of index jobs_unfinished (store_sqlite.c), word for word. */
  if (sqlite3_prepare_v2(lite_of(s)->db,
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
    if (p->request)
      memcpy(p->request, sqlite3_column_blob(st, 2), p->len);
    else
      p->len = 0;
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

uint64_t lite_max_id(struct store *s, const char *table) {
  sqlite3_stmt *st;
  uint64_t id = 0;
  char sql[64];
  snprintf(sql, sizeof sql, "SELECT MAX(id) FROM %s", table);
  store_lock_for_read(s);
  if (sqlite3_prepare_v2(lite_of(s)->db, sql, -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW) id = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  return id;
}

int lite_sweeps(struct store *s, int limit,
                void (*fn)(void *arg, uint64_t id, const char *client, double created,
                           const char *record),
                void *arg) {
  sqlite3_stmt *st;
  int n = 0;
  store_lock_for_read(s); /* fn only copies: it may run under the lock */
  if (sqlite3_prepare_v2(
          lite_of(s)->db,
          "SELECT id, client, created, record FROM (SELECT * FROM sweeps ORDER BY id DESC"
          " LIMIT ?1) ORDER BY id",
          -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_int(st, 1, limit);
    for (; sqlite3_step(st) == SQLITE_ROW; n++)
      fn(arg, (uint64_t)sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
         sqlite3_column_double(st, 2), (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}

uint64_t lite_ids_floor_locked(struct store *s, const char *name) {
  struct lite *l = lite_of(s);
  uint64_t value = 0;
  sqlite3_bind_text(l->get_meta, 1, name, -1, SQLITE_STATIC);
  if (sqlite3_step(l->get_meta) == SQLITE_ROW)
    value = (uint64_t)sqlite3_column_int64(l->get_meta, 0);
  sqlite3_reset(l->get_meta);
  return value;
}

int lite_prune(struct store *s, double before) {
  sqlite3_stmt *st;
  int n = 0;
  store_lock_for_read(s);
  int deleted = delete_jobs(s, "finished > 0 AND finished < ?1", bind_time, &before);
  if (deleted > 0) n = deleted;
  if (sqlite3_prepare_v2(lite_of(s)->db,
                         "DELETE FROM sweeps WHERE created < ?1 OR id NOT IN"
                         " (SELECT id FROM sweeps ORDER BY id DESC LIMIT 1000)",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_double(st, 1, before);
    sqlite3_step(st);
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}
