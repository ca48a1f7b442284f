/* The PostgreSQL backend's table of problems users define (store.h; store_pg.c's
 * migration 6), a row per version of a name, as the SQLite backend's: two nodes
 * numbering the same version at once collide on the unique (name, version). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/log.h"
#include "server/store/store_pg.h"

#define COLUMNS "id, version, owner, name, public, deleted, created, definition, report"
#define N_HEAD 9

/* Columns 0..N_HEAD-1 of row r: COLUMNS. 0 or -ENOMEM. */
static int row_of(const PGresult *res, int r, struct store_problem *p) {
  memset(p, 0, sizeof *p);
  p->id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
  p->version = atoi(PQgetvalue(res, r, 1));
  snprintf(p->owner, sizeof p->owner, "%s", PQgetvalue(res, r, 2));
  snprintf(p->name, sizeof p->name, "%s", PQgetvalue(res, r, 3));
  p->is_public = PQgetvalue(res, r, 4)[0] == 't';
  p->deleted = PQgetvalue(res, r, 5)[0] == 't';
  p->created = strtod(PQgetvalue(res, r, 6), NULL);
  p->definition = pg_dup(res, r, 7);
  p->report = pg_dup(res, r, 8);
  return p->definition && p->report ? 0 : -ENOMEM;
}

int pg_problem_insert(struct store *s, const struct store_problem *p, int64_t *id, int *version) {
  int err = store_check(s);
  if (err) return err;
  if (p->image_bytes > (1u << 30)) return -EFBIG;
  char created[32], why[200] = "";
  snprintf(created, sizeof created, "%.17g", p->created);
  const char *v[] = {p->owner,
                     p->name,
                     p->is_public ? "true" : "false",
                     created,
                     p->definition ? p->definition : "{}",
                     p->report ? p->report : "{}",
                     p->image ? (const char *)p->image : NULL};
  int binary[7] = {0, 0, 0, 0, 0, 0, p->image ? (int)p->image_bytes : 0};
  pthread_mutex_lock(&s->lock);
  PGresult *res = NULL;
  for (int attempt = 0; attempt < 5; attempt++) { /* another node took the number */
    err = 0;
    res = pg_exec(s,
                  "INSERT INTO problems(owner, name, public, created, definition, report, image,"
                  " version) SELECT $1::text, $2::text, $3::boolean, $4::double precision,"
                  " $5::text, $6::text, $7::bytea, COALESCE(MAX(version), 0) + 1 FROM problems"
                  " WHERE name = $2::text HAVING COUNT(*) FILTER (WHERE owner <> $1::text) = 0"
                  " RETURNING id, version",
                  7, v, binary, &err, why, sizeof why);
    if (!err || !strstr(why, "problems_versions")) break;
  }
  bool taken = res && PQntuples(res) == 0;
  if (res && !taken && !err) {
    *id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    *version = atoi(PQgetvalue(res, 0, 1));
  }
  PQclear(res);
  pthread_mutex_unlock(&s->lock);
  if (err && strstr(why, "problems_versions")) { /* still taken: busy, the store is fine */
    log_warn("store: problems: %s", why);
    return -EBUSY;
  }
  if (err) log_warn("store: problems: %s", why);
  store_note_write(s, err, why);
  return taken ? -EEXIST : err;
}

int pg_problem_get(struct store *s, const char *name, int version, struct store_problem *p) {
  memset(p, 0, sizeof *p);
  char number[16];
  snprintf(number, sizeof number, "%d", version);
  const char *v[] = {name, number};
  pthread_mutex_lock(&s->lock);
  PGresult *res = pg_read(s,
                          "SELECT " COLUMNS
                          ", image FROM problems WHERE name = $1::text AND"
                          " version = CASE WHEN $2::integer = 0 THEN (SELECT MAX(version) FROM"
                          " problems WHERE name = $1::text) ELSE $2::integer END",
                          2, v);
  pthread_mutex_unlock(&s->lock);
  int ret = !res ? -EIO : PQntuples(res) == 0 ? -ENOENT : 0;
  if (ret == 0) ret = row_of(res, 0, p);
  if (ret == 0 && !PQgetisnull(res, 0, N_HEAD)) {
    p->image = pg_bytes(res, 0, N_HEAD, &p->image_bytes);
    if (!p->image && PQgetlength(res, 0, N_HEAD) > 2) ret = -ENOMEM;
  }
  PQclear(res);
  if (ret) store_problem_clear(p);
  return ret;
}

int pg_problem_each(struct store *s, const char *name,
                    void (*fn)(void *arg, const struct store_problem *p), void *arg) {
  const char *v[] = {name};
  pthread_mutex_lock(&s->lock);
  PGresult *res = name ? pg_read(s,
                                 "SELECT " COLUMNS
                                 " FROM problems WHERE name = $1::text ORDER BY version",
                                 1, v)
                       : pg_read(s,
                                 "SELECT " COLUMNS
                                 " FROM problems p WHERE version = (SELECT MAX(version)"
                                 " FROM problems q WHERE q.name = p.name) ORDER BY name",
                                 0, NULL);
  pthread_mutex_unlock(&s->lock);
  if (!res) return -EIO;
  int n = PQntuples(res), ret = 0;
  for (int i = 0; i < n; i++) {
    struct store_problem p;
    ret = row_of(res, i, &p);
    if (ret == 0) fn(arg, &p);
    store_problem_clear(&p);
    if (ret) break;
  }
  PQclear(res);
  return ret ? ret : n;
}

int pg_problem_delete(struct store *s, const char *name) {
  char why[200] = "";
  const char *v[] = {name};
  int err = 0;
  pthread_mutex_lock(&s->lock);
  PGresult *res = pg_exec(s, "UPDATE problems SET deleted = true WHERE name = $1::text", 1, v, NULL,
                          &err, why, sizeof why);
  bool none = res && atoi(PQcmdTuples(res)) == 0;
  PQclear(res);
  pthread_mutex_unlock(&s->lock);
  if (err) log_warn("store: problems: %s", why);
  store_note_write(s, err, why);
  return none ? -ENOENT : err;
}
