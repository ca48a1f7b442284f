/* The SQLite backend's table of users' kernels (store.h), a row per version: written at
 * once under the database's lock, its failures noted as the jobs' are, so that a kernel
 * the store cannot keep is refused like a job. A version's kernel is kernel_of, or its
 * own id when kernel_of is NULL (its first version): OF_KERNEL selects a kernel's rows by
 * the primary key and the kernel_of index. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/log.h"
#include "server/store/store_sqlite.h"

#define COLUMNS \
  "id, owner, name, experiment, public, created, source_sha, COALESCE(kernel_of, id), version"
/* The rows of kernel ?N (a bound parameter's number). */
#define OF_KERNEL(n) "((id=?" n " AND kernel_of IS NULL) OR kernel_of=?" n ")"
/* No later version of the row's kernel: the row is its kernel's newest. */
#define NEWEST                                                                        \
  "NOT EXISTS (SELECT 1 FROM kernels n WHERE n.kernel_of=COALESCE(k.kernel_of, k.id)" \
  " AND n.id>k.id)"
#define N_HEAD 9

int lite_kernels_upgrade(sqlite3 *db, char **msg) {
  sqlite3_stmt *st = NULL;
  bool has = sqlite3_prepare_v2(db, "SELECT kernel_of, version FROM kernels", -1, &st, NULL) ==
             SQLITE_OK;
  sqlite3_finalize(st);
  if (!has) {
    int rc = sqlite3_exec(db,
                          "ALTER TABLE kernels ADD COLUMN kernel_of INTEGER;"
                          "ALTER TABLE kernels ADD COLUMN version INTEGER NOT NULL DEFAULT 1;",
                          NULL, NULL, msg);
    if (rc != SQLITE_OK) return rc;
    log_info("store: the kernels' table now keeps versions; its kernels are version 1");
  }
  has = sqlite3_prepare_v2(db, "SELECT ptx FROM kernels", -1, &st, NULL) == SQLITE_OK;
  sqlite3_finalize(st);
  if (!has) {
    int rc = sqlite3_exec(db, "ALTER TABLE kernels ADD COLUMN ptx TEXT;", NULL, NULL, msg);
    if (rc != SQLITE_OK) return rc;
    log_info("store: the kernels' table now keeps PTX; the versions stored before have none");
  }
  return sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS kernels_kernel_of ON kernels(kernel_of);",
                      NULL, NULL, msg);
}

/* Columns 0-8 of a row: COLUMNS. */
static void head_of(sqlite3_stmt *st, struct store_kernel *k) {
  const unsigned char *t;
  k->id = sqlite3_column_int64(st, 0);
  k->kernel_id = sqlite3_column_int64(st, 7);
  k->version = sqlite3_column_int(st, 8);
  snprintf(k->owner, sizeof k->owner, "%s",
           (t = sqlite3_column_text(st, 1)) ? (const char *)t : "");
  snprintf(k->name, sizeof k->name, "%s", (t = sqlite3_column_text(st, 2)) ? (const char *)t : "");
  snprintf(k->experiment, sizeof k->experiment, "%s",
           (t = sqlite3_column_text(st, 3)) ? (const char *)t : "");
  k->is_public = sqlite3_column_int(st, 4) != 0;
  k->created = sqlite3_column_double(st, 5);
  snprintf(k->source_sha, sizeof k->source_sha, "%s",
           (t = sqlite3_column_text(st, 6)) ? (const char *)t : "");
}

static char *dup_col(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return strdup(t ? (const char *)t : "");
}

/* One write of its own: sql with its bindings (bind), stepped once. Returns 0 or the
 * negative errno of the failure, SQLite's words in why (the caller notes it once the
 * database is released). The database lock is held. */
static int write_locked(struct store *s, const char *sql,
                        void (*bind)(sqlite3_stmt *, const void *), const void *arg, char *why,
                        size_t why_len) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(lite_of(s)->db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) {
    bind(st, arg);
    rc = sqlite3_step(st);
  }
  int err = rc == SQLITE_DONE ? 0 : lite_errno(lite_of(s)->db, rc);
  if (err) {
    snprintf(why, why_len, "%s", sqlite3_errmsg(lite_of(s)->db));
    log_warn("store: kernels: %s", why);
  }
  sqlite3_finalize(st);
  return err;
}

static void bind_insert(sqlite3_stmt *st, const void *arg) {
  const struct store_kernel *k = arg;
  sqlite3_bind_text(st, 1, k->owner, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, k->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, k->experiment, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 4, k->is_public);
  sqlite3_bind_double(st, 5, k->created);
  sqlite3_bind_text(st, 6, k->source_sha, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, k->source ? k->source : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 8, k->spec ? k->spec : "{}", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 9, k->report ? k->report : "{}", -1, SQLITE_STATIC);
  if (k->image)
    sqlite3_bind_blob(st, 10, k->image, (int)k->image_bytes, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, 10);
  if (k->kernel_id > 0) sqlite3_bind_int64(st, 11, k->kernel_id);
  if (k->ptx)
    sqlite3_bind_text(st, 12, k->ptx, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, 12);
}

int lite_kernel_insert(struct store *s, const struct store_kernel *k, int64_t *id, int *version) {
  int err = store_check(s);
  if (err) return err;
  if (k->image_bytes > (1u << 30)) return -EFBIG;
  char why[200] = "";
  pthread_mutex_lock(&s->lock);
  sqlite3 *db = lite_of(s)->db;
  if (k->kernel_id <= 0) {
    err = write_locked(
        s,
        "INSERT INTO kernels(owner, name, experiment, public, created, source_sha, source,"
        " spec, report, image, ptx) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?12)",
        bind_insert, k, why, sizeof why);
    *version = 1;
  } else { /* numbered after the kernel's newest, in the one statement */
    err = write_locked(s,
                       "INSERT INTO kernels(owner, name, experiment, public, created, source_sha,"
                       " source, spec, report, image, ptx, kernel_of, version) SELECT ?1, ?2,"
                       " ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?12, ?11, MAX(version) + 1 FROM kernels"
                       " WHERE " OF_KERNEL("11") " HAVING COUNT(*) > 0",
                       bind_insert, k, why, sizeof why);
    if (err == 0 && sqlite3_changes(db) == 0) err = -ENOENT;
  }
  if (err == 0) *id = sqlite3_last_insert_rowid(db);
  if (err == 0 && k->kernel_id > 0) {
    sqlite3_stmt *st = NULL;
    *version = 0;
    if (sqlite3_prepare_v2(db, "SELECT version FROM kernels WHERE id=?1", -1, &st, NULL) ==
        SQLITE_OK) {
      sqlite3_bind_int64(st, 1, *id);
      if (sqlite3_step(st) == SQLITE_ROW) *version = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->lock);
  if (err != -ENOENT) store_note_write(s, err, why);
  return err;
}

int lite_kernel_get(struct store *s, int64_t id, struct store_kernel *k) {
  memset(k, 0, sizeof *k);
  sqlite3_stmt *st = NULL;
  int ret = -EIO;
  pthread_mutex_lock(&s->lock);
  if (sqlite3_prepare_v2(lite_of(s)->db,
                         "SELECT " COLUMNS
                         ", source, spec, report, image, ptx FROM kernels WHERE id=?1",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      head_of(st, k);
      k->source = dup_col(st, N_HEAD);
      k->spec = dup_col(st, N_HEAD + 1);
      k->report = dup_col(st, N_HEAD + 2);
      int n = sqlite3_column_bytes(st, N_HEAD + 3);
      const void *blob = sqlite3_column_blob(st, N_HEAD + 3);
      if (blob && n > 0 && (k->image = malloc((size_t)n))) {
        memcpy(k->image, blob, (size_t)n);
        k->image_bytes = (size_t)n;
      }
      const unsigned char *ptx = sqlite3_column_text(st, N_HEAD + 4); /* NULL: none kept */
      if (ptx) k->ptx = strdup((const char *)ptx);
      ret = k->source && k->spec && k->report && (!blob || n <= 0 || k->image) && (!ptx || k->ptx)
                ? 0
                : -ENOMEM;
    } else if (rc == SQLITE_DONE) {
      ret = -ENOENT;
    }
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&s->lock);
  if (ret) store_kernel_clear(k);
  return ret;
}

static void bind_id(sqlite3_stmt *st, const void *arg) {
  sqlite3_bind_int64(st, 1, *(const int64_t *)arg);
}

int lite_kernel_delete(struct store *s, int64_t id) {
  char why[200] = "";
  pthread_mutex_lock(&s->lock);
  int err = write_locked(s, "DELETE FROM kernels WHERE id=?1", bind_id, &id, why, sizeof why);
  bool none = err == 0 && sqlite3_changes(lite_of(s)->db) == 0;
  pthread_mutex_unlock(&s->lock);
  store_note_write(s, err, why);
  return none ? -ENOENT : err;
}

int lite_kernel_drop(struct store *s, int64_t kernel_id) {
  char why[200] = "";
  pthread_mutex_lock(&s->lock);
  int err = write_locked(s, "DELETE FROM kernels WHERE " OF_KERNEL("1"), bind_id, &kernel_id, why,
                         sizeof why);
  bool none = err == 0 && sqlite3_changes(lite_of(s)->db) == 0;
  pthread_mutex_unlock(&s->lock);
  store_note_write(s, err, why);
  return none ? -ENOENT : err;
}

/* Steps st (prepared, bound; the lock held) into *out (*n of them): heads with spec and
 * report, and the version count in column N_HEAD + 2 when with_count. 0 or -ENOMEM. */
static int read_heads(sqlite3_stmt *st, bool with_count, struct store_kernel **out, int *n_out) {
  struct store_kernel *rows = NULL;
  int n = 0, cap = 0, ret = 0;
  while (ret == 0 && sqlite3_step(st) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? 2 * cap : 32;
      struct store_kernel *grown = realloc(rows, (size_t)cap * sizeof *rows);
      if (!grown) {
        ret = -ENOMEM;
        break;
      }
      rows = grown;
    }
    struct store_kernel *k = &rows[n++];
    memset(k, 0, sizeof *k);
    head_of(st, k);
    k->spec = dup_col(st, N_HEAD);
    k->report = dup_col(st, N_HEAD + 1);
    if (with_count) k->versions = sqlite3_column_int(st, N_HEAD + 2);
    if (!k->spec || !k->report) ret = -ENOMEM;
  }
  *out = rows;
  *n_out = n;
  return ret;
}

/* fn over the n rows unless err (a negative errno), then frees them. Returns err or n. */
static int hand_out(struct store_kernel *rows, int n, int err,
                    void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  for (int i = 0; i < n; i++) {
    if (err == 0) fn(arg, &rows[i]);
    store_kernel_clear(&rows[i]);
  }
  free(rows);
  return err ? err : n;
}

int lite_kernel_versions(struct store *s, int64_t kernel_id,
                         void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  sqlite3_stmt *st = NULL;
  struct store_kernel *rows = NULL;
  int n = 0, err = -EIO;
  pthread_mutex_lock(&s->lock);
  if (sqlite3_prepare_v2(lite_of(s)->db,
                         "SELECT " COLUMNS
                         ", spec, report FROM kernels WHERE " OF_KERNEL("1") " ORDER BY version",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, kernel_id);
    err = read_heads(st, false, &rows, &n);
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&s->lock);
  return hand_out(rows, n, err, fn, arg);
}

int lite_kernel_named(struct store *s, const char *owner, const char *experiment, const char *name,
                      int64_t *ids, int max) {
  sqlite3_stmt *st = NULL;
  int n = -EIO;
  pthread_mutex_lock(&s->lock);
  if (sqlite3_prepare_v2(lite_of(s)->db,
                         "SELECT COALESCE(kernel_of, id) FROM kernels k WHERE owner=?1 AND"
                         " experiment=?2 AND name=?3 AND " NEWEST " ORDER BY 1 DESC",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, experiment, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    for (n = 0; sqlite3_step(st) == SQLITE_ROW; n++)
      if (n < max) ids[n] = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&s->lock);
  return n;
}

int lite_kernel_list(struct store *s, const char *owner, const char *experiment,
                     void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  sqlite3_stmt *st = NULL;
  struct store_kernel *rows = NULL;
  int n = 0, err = -EIO;
  pthread_mutex_lock(&s->lock);
  if (sqlite3_prepare_v2(lite_of(s)->db,
                         "SELECT " COLUMNS ", spec, report, (SELECT COUNT(*) FROM kernels v"
                         " WHERE v.kernel_of=COALESCE(k.kernel_of, k.id)) + (SELECT COUNT(*)"
                         " FROM kernels v WHERE v.id=COALESCE(k.kernel_of, k.id) AND"
                         " v.kernel_of IS NULL) FROM kernels k WHERE (?1 IS NULL OR owner=?1 OR"
                         " public=1) AND (?2 IS NULL OR experiment=?2) AND " NEWEST
                         " ORDER BY COALESCE(kernel_of, id) DESC",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, experiment, -1, SQLITE_STATIC);
    err = read_heads(st, true, &rows, &n);
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&s->lock);
  return hand_out(rows, n, err, fn, arg);
}

int lite_kernel_count(struct store *s, const char *owner, int *n, size_t *source_bytes) {
  sqlite3_stmt *st = NULL;
  int ret = -EIO;
  *n = 0;
  *source_bytes = 0;
  pthread_mutex_lock(&s->lock);
  if (sqlite3_prepare_v2(
          lite_of(s)->db,
          "SELECT COUNT(*), COALESCE(SUM(LENGTH(source)), 0) FROM kernels k WHERE owner=?1 AND " NEWEST,
          -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, owner, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
      *n = sqlite3_column_int(st, 0);
      *source_bytes = (size_t)sqlite3_column_int64(st, 1);
      ret = 0;
    }
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&s->lock);
  return ret;
}
