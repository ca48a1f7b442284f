/* The SQLite backend's table of problems users define (store.h), a row per version:
 * written at once under the database's lock, its failures noted as the jobs' are. A
 * name is its first owner's: an insert numbers the version and checks the owner in one
 * statement. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/log.h"
#include "server/store/store_sqlite.h"

#define COLUMNS "id, version, owner, name, public, deleted, created, definition, report"
#define N_HEAD 9

/* Columns 0..N_HEAD-1 of a row: COLUMNS. 0 or -ENOMEM. */
static int row_of(sqlite3_stmt *st, struct store_problem *p) {
  const unsigned char *t;
  memset(p, 0, sizeof *p);
  p->id = sqlite3_column_int64(st, 0);
  p->version = sqlite3_column_int(st, 1);
  snprintf(p->owner, sizeof p->owner, "%s",
           (t = sqlite3_column_text(st, 2)) ? (const char *)t : "");
  snprintf(p->name, sizeof p->name, "%s", (t = sqlite3_column_text(st, 3)) ? (const char *)t : "");
  p->is_public = sqlite3_column_int(st, 4) != 0;
  p->deleted = sqlite3_column_int(st, 5) != 0;
  p->created = sqlite3_column_double(st, 6);
  p->definition = strdup((t = sqlite3_column_text(st, 7)) ? (const char *)t : "{}");
  p->report = strdup((t = sqlite3_column_text(st, 8)) ? (const char *)t : "{}");
  return p->definition && p->report ? 0 : -ENOMEM;
}

/* One write, sql with p's (or name's) bindings, under the lock: 0 or the write's errno
 * (why says it); *changes: the rows it changed. */
static int write_locked(struct store *s, const char *sql, const struct store_problem *p,
                        const char *name, int *changes, char *why, size_t why_len) {
  sqlite3 *db = lite_of(s)->db;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK && p) {
    sqlite3_bind_text(st, 1, p->owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, p->name, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, p->is_public);
    sqlite3_bind_double(st, 4, p->created);
    sqlite3_bind_text(st, 5, p->definition ? p->definition : "{}", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, p->report ? p->report : "{}", -1, SQLITE_STATIC);
    if (p->image)
      sqlite3_bind_blob(st, 7, p->image, (int)p->image_bytes, SQLITE_STATIC);
    else
      sqlite3_bind_null(st, 7);
  } else if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  }
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  int err = rc == SQLITE_DONE ? 0 : lite_errno(db, rc);
  if (err) {
    snprintf(why, why_len, "%s", sqlite3_errmsg(db));
    log_warn("store: problems: %s", why);
  }
  *changes = err ? 0 : sqlite3_changes(db);
  sqlite3_finalize(st);
  return err;
}

int lite_problem_insert(struct store *s, const struct store_problem *p, int64_t *id, int *version) {
  int err = store_check(s);
  if (err) return err;
  if (p->image_bytes > (1u << 30)) return -EFBIG;
  char why[200] = "";
  int changes = 0;
  pthread_mutex_lock(&s->lock);
  /* The next version of the name, unless another owner holds it. */
  err = write_locked(s,
                     "INSERT INTO problems(owner, name, public, created, definition, report,"
                     " image, version) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7,"
                     " COALESCE(MAX(version), 0) + 1 FROM problems WHERE name=?2"
                     " HAVING COUNT(CASE WHEN owner<>?1 THEN 1 END)=0",
                     p, NULL, &changes, why, sizeof why);
  if (err == 0 && changes == 0) err = -EEXIST;
  if (err == 0) {
    *id = sqlite3_last_insert_rowid(lite_of(s)->db);
    sqlite3_stmt *st = NULL;
    *version = 0;
    if (sqlite3_prepare_v2(lite_of(s)->db, "SELECT version FROM problems WHERE id=?1", -1, &st,
                           NULL) == SQLITE_OK) {
      sqlite3_bind_int64(st, 1, *id);
      if (sqlite3_step(st) == SQLITE_ROW) *version = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  if (err != -EEXIST) store_note_write(s, err, why);
  return err;
}

int lite_problem_get(struct store *s, const char *name, int version, struct store_problem *p) {
  memset(p, 0, sizeof *p);
  sqlite3_stmt *st = NULL;
  int ret = -EIO;
  pthread_mutex_lock(&s->lock);
  if (sqlite3_prepare_v2(lite_of(s)->db,
                         "SELECT " COLUMNS ", image FROM problems WHERE name=?1 AND"
                         " (version=?2 OR (?2=0 AND version=(SELECT MAX(version) FROM problems"
                         " WHERE name=?1)))",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, version);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      ret = row_of(st, p);
      int n = sqlite3_column_bytes(st, N_HEAD);
      const void *blob = sqlite3_column_blob(st, N_HEAD);
      if (ret == 0 && blob && n > 0) {
        if ((p->image = malloc((size_t)n))) {
          memcpy(p->image, blob, (size_t)n);
          p->image_bytes = (size_t)n;
        } else {
          ret = -ENOMEM;
        }
      }
    } else if (rc == SQLITE_DONE) {
      ret = -ENOENT;
    }
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&s->lock);
  if (ret) store_problem_clear(p);
  return ret;
}

int lite_problem_each(struct store *s, const char *name,
                      void (*fn)(void *arg, const struct store_problem *p), void *arg) {
  sqlite3_stmt *st = NULL;
  struct store_problem *rows = NULL;
  int n = 0, cap = 0, ret = -EIO;
  pthread_mutex_lock(&s->lock);
  const char *sql = name ? "SELECT " COLUMNS " FROM problems WHERE name=?1 ORDER BY version"
                         : "SELECT " COLUMNS
                           " FROM problems p WHERE version=(SELECT"
                           " MAX(version) FROM problems q WHERE q.name=p.name) ORDER BY name";
  if (sqlite3_prepare_v2(lite_of(s)->db, sql, -1, &st, NULL) == SQLITE_OK) {
    if (name) sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    ret = 0;
    int step;
    while (ret == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
      if (n == cap) {
        struct store_problem *grown = realloc(rows,
                                              (size_t)(cap = cap ? 2 * cap : 16) * sizeof *rows);
        if (!grown) {
          ret = -ENOMEM;
          break;
        }
        rows = grown;
      }
      ret = row_of(st, &rows[n++]);
    }
    if (ret == 0 && step != SQLITE_DONE) ret = -EIO; /* a read that stopped: not all */
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&s->lock);
  for (int i = 0; i < n; i++) {
    if (ret == 0) fn(arg, &rows[i]);
    store_problem_clear(&rows[i]);
  }
  free(rows);
  return ret ? ret : n;
}

int lite_problem_delete(struct store *s, const char *name) {
  char why[200] = "";
  int changes = 0;
  pthread_mutex_lock(&s->lock);
  int err = write_locked(s, "UPDATE problems SET deleted=1 WHERE name=?1", NULL, name, &changes,
                         why, sizeof why);
  pthread_mutex_unlock(&s->lock);
  store_note_write(s, err, why);
  return err == 0 && changes == 0 ? -ENOENT : err;
}
