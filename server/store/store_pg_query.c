/* The PostgreSQL backend's reads (records, listings, the unfinished jobs, sweeps),
 * pruning and the size bound's questions, and the users' kernels' table. Rows are
 * copied out before the database lock is released, and callbacks run after it, as in
 * the SQLite backend. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/core/clock.h"
#include "server/log.h"
#include "server/store/store_pg.h"

/* A one-number query; -1 on error. The database lock is held. */
static int64_t query_int(struct store *s, const char *sql) {
  PGresult *res = pg_read(s, sql, 0, NULL);
  int64_t v = res && PQntuples(res) && !PQgetisnull(res, 0, 0)
                  ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                  : -1;
  PQclear(res);
  return v;
}

/* A measure for store_status: the last one while it is recent or the server is away
 * (/health and /metrics neither scan a large table each time nor wait to connect). */
static bool recent(struct store *s, double at) {
  return (at > 0 && clock_mono_s() - at < 5) || PQstatus(pg_of(s)->conn) != CONNECTION_OK;
}

/* The live rows' bytes, not the table's size on disk: a DELETE frees no relation size
 * until a VACUUM (and gives little back even then), so pruning by the table's size
 * would delete every finished job and still be over. A scan of the table every 5 s
 * at most, for the bound (fresh) as for store_status: the bound asks after every
 * max_bytes / 64 bytes written, and a scan per ask read the whole table on the store's
 * writer thread. Between scans the estimate: the rows written since (their bytes as
 * sent: an update that replaced a row counts whole, so the estimate errs high and a
 * prune deletes a little early) less those deleted (pg_delete_oldest_locked). Other
 * gpulabd of a fleet write too: the next scan counts theirs. */
uint64_t pg_used_bytes_locked(struct store *s, bool fresh) {
  (void)fresh;
  struct pg *p = pg_of(s);
  p->used_bytes += s->bytes_written - p->written_seen;
  p->written_seen = s->bytes_written;
  if (recent(s, p->used_at)) return p->used_bytes;
  int64_t v = query_int(s, "SELECT COALESCE(SUM(pg_column_size(j.*)), 0)::bigint FROM jobs j");
  if (v >= 0) p->used_bytes = (uint64_t)v, p->used_at = clock_mono_s();
  return p->used_bytes;
}

uint64_t pg_used_bytes_exact_locked(struct store *s) {
  pg_of(s)->used_at = 0; /* not recent: scanned now */
  return pg_used_bytes_locked(s, true);
}

/* The tables' size on disk (with their indexes and TOAST), on the server. */
uint64_t pg_file_bytes_locked(struct store *s) {
  struct pg *p = pg_of(s);
  if (recent(s, p->file_at)) return p->file_bytes;
  int64_t v = query_int(s,
                        "SELECT pg_total_relation_size('jobs') + pg_total_relation_size('sweeps')"
                        " + pg_total_relation_size('kernels') + pg_total_relation_size('meta')");
  if (v >= 0) p->file_bytes = (uint64_t)v, p->file_at = clock_mono_s();
  return p->file_bytes;
}

/* One SELECT: PostgreSQL's planner makes each of MAX(id) and MIN(id) an index seek
 * (LIMIT 1 along the primary key), where SQLite's reads the table (LITE_ID_SPAN_SQL). */
int64_t pg_id_span_locked(struct store *s) {
  return query_int(s, "SELECT COALESCE(MAX(id) - MIN(id) + 1, 0) FROM jobs");
}

int pg_delete_oldest_locked(struct store *s, uint64_t n) {
  char limit[24];
  snprintf(limit, sizeof limit, "%" PRIu64, n);
  const char *v[] = {limit};
  /* Their bytes come back, for the estimate between scans (pg_used_bytes_locked). */
  PGresult *res = pg_read(s,
                          "WITH gone AS (DELETE FROM jobs WHERE id IN (SELECT id FROM jobs"
                          " WHERE finished > 0 ORDER BY id LIMIT $1::bigint)"
                          " RETURNING pg_column_size(jobs.*) AS bytes)"
                          " SELECT COUNT(*), COALESCE(SUM(bytes), 0)::bigint FROM gone",
                          1, v);
  int deleted = -EIO;
  if (res && PQntuples(res) == 1) {
    struct pg *p = pg_of(s);
    uint64_t bytes = strtoull(PQgetvalue(res, 0, 1), NULL, 10);
    deleted = atoi(PQgetvalue(res, 0, 0));
    p->used_bytes = p->used_bytes > bytes ? p->used_bytes - bytes : 0;
  }
  PQclear(res);
  return deleted;
}

char *pg_record(struct store *s, uint64_t id) {
  char key[24];
  snprintf(key, sizeof key, "%" PRIu64, id);
  const char *v[] = {key};
  store_lock_for_read(s);
  PGresult *res = pg_read(s, "SELECT record FROM jobs WHERE id = $1::bigint", 1, v);
  char *out = res && PQntuples(res) && !PQgetisnull(res, 0, 0) ? pg_dup(res, 0, 0) : NULL;
  PQclear(res);
  pthread_mutex_unlock(&s->lock);
  return out;
}

int pg_list(struct store *s, uint64_t before_id, const char *state, const char *type,
            const char *client, int limit, void (*fn)(void *arg, uint64_t id, const char *record),
            void *arg) {
  if (limit <= 0) return 0;
  char before[24], most[16];
  snprintf(before, sizeof before, "%" PRIu64, before_id);
  snprintf(most, sizeof most, "%d", limit);
  const char *v[] = {before, state, type, client, most};
  store_lock_for_read(s);
  PGresult *res = pg_read(
      s,
      "SELECT id, record FROM jobs WHERE record IS NOT NULL AND ($1::bigint = 0 OR id < $1::bigint)"
      " AND ($2::text IS NULL OR state = $2::text) AND ($3::text IS NULL OR type = $3::text)"
      " AND ($4::text IS NULL OR client = $4::text) ORDER BY id DESC LIMIT $5::integer",
      5, v);
  pthread_mutex_unlock(&s->lock);
  /* fn looks jobs up in the engine, whose lock is held while ids are reserved here:
   * the result is ours, and the database's lock is released. */
  int n = res ? PQntuples(res) : 0;
  for (int i = 0; i < n; i++)
    fn(arg, strtoull(PQgetvalue(res, i, 0), NULL, 10), PQgetvalue(res, i, 1));
  PQclear(res);
  return n;
}

int pg_unfinished(struct store *s,
                  void (*fn)(void *arg, uint64_t id, const char *state, const void *request,
                             size_t request_len),
                  void *arg) {
  /* This gpulabd's jobs only: another node's are its own to run or recover (a node
   * that died leaves them until it starts again; leases come in phase 2). */
  const char *v[] = {s->node[0] ? s->node : NULL};
  store_lock_for_read(s);
  PGresult *res = pg_read(s,
                          "SELECT id, state, request FROM jobs WHERE state IN"
                          " ('queued', 'waiting', 'running') AND node IS NOT DISTINCT FROM $1::text"
                          " ORDER BY id",
                          1, v);
  pthread_mutex_unlock(&s->lock); /* fn reads the store (mark_interrupted) */
  if (!res) return -1;
  int n = PQntuples(res);
  for (int i = 0; i < n; i++) {
    size_t len;
    void *request = pg_bytes(res, i, 2, &len);
    fn(arg, strtoull(PQgetvalue(res, i, 0), NULL, 10), PQgetvalue(res, i, 1), request, len);
    free(request);
  }
  PQclear(res);
  return n;
}

/* The first statement that matches the job wins: canceled while unclaimed, a request
 * left for its node (and the nodes woken), or found finished. The database lock held. */
static int cancel_locked(struct store *s, const char *const *v, char *why, size_t len) {
  static const char *const steps[] = {
      "UPDATE jobs SET state = 'canceled', finished = extract(epoch from clock_timestamp()),"
      " record = $2 WHERE id = $1::bigint AND state = 'queued' AND node IS NULL RETURNING id",
      "WITH asked AS (UPDATE jobs SET cancel_requested = true WHERE id = $1::bigint AND"
      " node IS NOT NULL AND state IN ('queued', 'waiting', 'running') RETURNING id)"
      " SELECT pg_notify('gpulab_cancel', id::text) FROM asked",
      "SELECT id FROM jobs WHERE id = $1::bigint"};
  static const int found[] = {0, 1, -EALREADY};
  for (int i = 0; i < 3; i++) {
    int err;
    PGresult *res = pg_exec(s, steps[i], i == 0 ? 2 : 1, v, NULL, &err, why, len);
    if (!res) return err;
    int rows = PQntuples(res);
    PQclear(res);
    if (rows) return found[i];
  }
  return -ENOENT;
}

int pg_cancel(struct store *s, uint64_t id, const char *canceled_record) {
  char key[24], why[200] = "";
  snprintf(key, sizeof key, "%" PRIu64, id);
  const char *v[] = {key, canceled_record};
  store_lock_for_read(s); /* after the job's own rows queued before */
  int rc = cancel_locked(s, v, why, sizeof why);
  pthread_mutex_unlock(&s->lock);
  if (rc < 0 && rc != -EALREADY && rc != -ENOENT) {
    log_warn("store: a cancel failed: %s", why);
    store_note_write(s, rc, why);
  }
  return rc;
}

/* sql about job id ($1) and this node ($2, store_set_node's name), read under the
 * database lock (after every row queued before). */
static PGresult *read_for_job(struct store *s, const char *sql, uint64_t id) {
  char key[24];
  snprintf(key, sizeof key, "%" PRIu64, id);
  const char *v[] = {key, s->node};
  store_lock_for_read(s);
  PGresult *res = pg_read(s, sql, 2, v);
  pthread_mutex_unlock(&s->lock);
  return res;
}

bool pg_held(struct store *s, uint64_t id) {
  PGresult *res = read_for_job(s,
                               "SELECT 1 FROM jobs WHERE id = $1::bigint AND node = $2 AND"
                               " state IN ('queued', 'waiting', 'running')",
                               id);
  bool held = res && PQntuples(res) == 1;
  PQclear(res);
  return held;
}

int pg_elsewhere(struct store *s, uint64_t id, char *url, size_t url_len) {
  PGresult *res = read_for_job(s,
                               "SELECT n.advertise FROM jobs j JOIN nodes n ON n.name = j.node"
                               " WHERE j.id = $1::bigint AND j.node <> $2 AND"
                               " n.lease_until > extract(epoch from clock_timestamp())",
                               id);
  int rc = res && PQntuples(res) == 1 ? 0 : -ENOENT;
  if (rc == 0) snprintf(url, url_len, "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  return rc;
}

/* The buffer's row, if another node made it: that node live (its lease not run out)
 * or not. A read that fails is logged, and reads as no row. */
int pg_buffer_elsewhere(struct store *s, uint64_t id, struct store_buffer_home *home) {
  PGresult *res = read_for_job(s,
                               "SELECT b.node, COALESCE(n.advertise, ''), b.client,"
                               " COALESCE(n.lease_until > extract(epoch from clock_timestamp()),"
                               " false) FROM buffers b LEFT JOIN nodes n ON n.name = b.node"
                               " WHERE b.id = $1::bigint AND b.node <> $2",
                               id);
  int rc = res && PQntuples(res) == 1 ? 0 : -ENOENT;
  if (rc == 0) {
    snprintf(home->node, sizeof home->node, "%s", PQgetvalue(res, 0, 0));
    snprintf(home->url, sizeof home->url, "%s", PQgetvalue(res, 0, 1));
    snprintf(home->client, sizeof home->client, "%s", PQgetvalue(res, 0, 2));
    if (PQgetvalue(res, 0, 3)[0] != 't') rc = -EHOSTDOWN;
  }
  PQclear(res);
  return rc;
}

int pg_buffers_forget(struct store *s) {
  const char *v[] = {s->node};
  char why[200] = "";
  int err = 0;
  store_lock_for_read(s); /* after this node's rows queued before */
  PGresult *res = pg_exec(s, "DELETE FROM buffers WHERE node = $1", 1, v, NULL, &err, why,
                          sizeof why);
  int n = res ? atoi(PQcmdTuples(res)) : 0;
  PQclear(res);
  pthread_mutex_unlock(&s->lock);
  if (n) log_info("store: %d buffer(s) of this node's previous run forgotten", n);
  if (err) log_warn("store: buffers: %s", why);
  store_note_write(s, err, why);
  return err;
}

uint64_t pg_max_id(struct store *s, const char *table) {
  char sql[64];
  snprintf(sql, sizeof sql, "SELECT COALESCE(MAX(id), 0) FROM %s", table);
  store_lock_for_read(s);
  int64_t id = query_int(s, sql);
  pthread_mutex_unlock(&s->lock);
  return id > 0 ? (uint64_t)id : 0;
}

/* Each row of res (id, client, created, record) to fn; frees res. Returns how many
 * rows, or -EIO without res (the read failed). */
static int each_sweep(PGresult *res,
                      void (*fn)(void *arg, uint64_t id, const char *client, double created,
                                 const char *record),
                      void *arg) {
  if (!res) return -EIO;
  int n = PQntuples(res);
  for (int i = 0; i < n; i++)
    fn(arg, strtoull(PQgetvalue(res, i, 0), NULL, 10), PQgetvalue(res, i, 1),
       strtod(PQgetvalue(res, i, 2), NULL), PQgetvalue(res, i, 3));
  PQclear(res);
  return n;
}

int pg_sweeps(struct store *s, int limit,
              void (*fn)(void *arg, uint64_t id, const char *client, double created,
                         const char *record),
              void *arg) {
  char most[16];
  snprintf(most, sizeof most, "%d", limit);
  const char *v[] = {most};
  store_lock_for_read(s);
  PGresult *res = pg_read(s,
                          "SELECT id, client, created, record FROM (SELECT * FROM sweeps ORDER BY"
                          " id DESC LIMIT $1::integer) AS newest ORDER BY id",
                          1, v);
  pthread_mutex_unlock(&s->lock);
  int n = each_sweep(res, fn, arg);
  return n < 0 ? 0 : n; /* store.h: how many (none when the read failed, logged) */
}

int pg_sweeps_page(struct store *s, uint64_t before_id, const char *client, int limit,
                   void (*fn)(void *arg, uint64_t id, const char *client, double created,
                              const char *record),
                   void *arg) {
  char before[24], most[16];
  snprintf(before, sizeof before, "%" PRIu64, before_id ? before_id : (uint64_t)INT64_MAX);
  snprintf(most, sizeof most, "%d", limit);
  const char *v[] = {before, client, most};
  store_lock_for_read(s);
  PGresult *res = pg_read(s,
                          "SELECT id, client, created, record FROM sweeps WHERE id < $1::bigint"
                          " AND ($2::text IS NULL OR client = $2) ORDER BY id DESC"
                          " LIMIT $3::integer",
                          3, v);
  pthread_mutex_unlock(&s->lock);
  return each_sweep(res, fn, arg);
}

int pg_prune(struct store *s, double before) {
  char t[32];
  snprintf(t, sizeof t, "%.17g", before);
  const char *v[] = {t};
  store_lock_for_read(s);
  PGresult *res = pg_read(
      s, "DELETE FROM jobs WHERE finished > 0 AND finished < $1::double precision", 1, v);
  int n = res ? atoi(PQcmdTuples(res)) : 0;
  PQclear(res);
  PQclear(pg_read(s,
                  "DELETE FROM sweeps WHERE created < $1::double precision OR id NOT IN"
                  " (SELECT id FROM sweeps ORDER BY id DESC LIMIT 1000)",
                  1, v));
  /* A dead node's buffers are kept until then: another node says they were lost. */
  PQclear(pg_read(s,
                  "DELETE FROM buffers b WHERE created < $1::double precision AND NOT EXISTS"
                  " (SELECT 1 FROM nodes n WHERE n.name = b.node AND"
                  " n.lease_until > extract(epoch from clock_timestamp()))",
                  1, v));
  pthread_mutex_unlock(&s->lock);
  return n;
}

/* ---- users' kernels ---- */

/* A row per version (store_pg.c's migration 5); as the SQLite backend's. */
#define COLUMNS \
  "id, owner, name, experiment, public, created, source_sha, COALESCE(kernel_of, id), version"
#define N_HEAD 9
/* The rows of kernel $N. */
#define OF_KERNEL(n) "((id = $" n "::bigint AND kernel_of IS NULL) OR kernel_of = $" n "::bigint)"
/* No later version of the row's kernel: the row is its kernel's newest. */
#define NEWEST                                                                          \
  "NOT EXISTS (SELECT 1 FROM kernels n WHERE n.kernel_of = COALESCE(k.kernel_of, k.id)" \
  " AND n.id > k.id)"

/* Columns 0-8 of row r: COLUMNS. */
static void head_of(const PGresult *res, int r, struct store_kernel *k) {
  k->id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
  snprintf(k->owner, sizeof k->owner, "%s", PQgetvalue(res, r, 1));
  snprintf(k->name, sizeof k->name, "%s", PQgetvalue(res, r, 2));
  snprintf(k->experiment, sizeof k->experiment, "%s", PQgetvalue(res, r, 3));
  k->is_public = PQgetvalue(res, r, 4)[0] == 't';
  k->created = strtod(PQgetvalue(res, r, 5), NULL);
  snprintf(k->source_sha, sizeof k->source_sha, "%s", PQgetvalue(res, r, 6));
  k->kernel_id = strtoll(PQgetvalue(res, r, 7), NULL, 10);
  k->version = atoi(PQgetvalue(res, r, 8));
}

int pg_kernel_insert(struct store *s, const struct store_kernel *k, int64_t *id, int *version) {
  int err = store_check(s);
  if (err) return err;
  if (k->image_bytes > (1u << 30)) return -EFBIG;
  char created[32], kernel[24], why[200] = "";
  snprintf(created, sizeof created, "%.17g", k->created);
  snprintf(kernel, sizeof kernel, "%" PRId64, k->kernel_id);
  const char *v[] = {k->owner,
                     k->name,
                     k->experiment,
                     k->is_public ? "true" : "false",
                     created,
                     k->source_sha,
                     k->source ? k->source : "",
                     k->spec ? k->spec : "{}",
                     k->report ? k->report : "{}",
                     (const char *)k->image,
                     k->ptx,  /* NULL: SQL's NULL */
                     kernel}; /* last: a new kernel's insert takes the 11 before */
  int binary[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, k->image ? (int)k->image_bytes : 0, 0, 0};
  if (k->image && k->image_bytes == 0) v[9] = "";
  pthread_mutex_lock(&s->lock);
  PGresult *res = NULL;
  /* Another node numbering the same version at once: its insert won on the unique
   * index, this one numbers after it. */
  for (int attempt = 0; attempt < 5; attempt++) {
    err = 0;
    res = k->kernel_id <= 0
            ? pg_exec(s,
                      "INSERT INTO kernels(owner, name, experiment, public, created,"
                      " source_sha, source, spec, report, image, ptx) VALUES($1, $2, $3, $4,"
                      " $5, $6, $7, $8, $9, $10, $11) RETURNING id, version",
                      11, v, binary, &err, why, sizeof why)
            : pg_exec(s, /* numbered after the kernel's newest, in the one statement */
                      "INSERT INTO kernels(owner, name, experiment, public, created, source_sha,"
                      " source, spec, report, image, ptx, kernel_of, version) SELECT $1::text,"
                      " $2::text, $3::text, $4::boolean, $5::double precision, $6::text,"
                      " $7::text, $8::text, $9::text, $10::bytea, $11::text, $12::bigint,"
                      " MAX(version) + 1 FROM kernels WHERE " OF_KERNEL("12") " HAVING COUNT(*) > 0"
                      " RETURNING id, version",
                      12, v, binary, &err, why, sizeof why);
    if (!err || !strstr(why, "kernels_versions")) break;
  }
  if (err && strstr(why, "kernels_versions")) { /* still taken: busy, the store is fine */
    pthread_mutex_unlock(&s->lock);
    log_warn("store: kernels: %s", why);
    return -EBUSY;
  }
  bool none = res && PQntuples(res) == 0;
  if (res && !none) {
    *id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    *version = atoi(PQgetvalue(res, 0, 1));
  }
  PQclear(res);
  pthread_mutex_unlock(&s->lock);
  if (err) log_warn("store: kernels: %s", why);
  store_note_write(s, err, why);
  return none ? -ENOENT : err;
}

int pg_kernel_get(struct store *s, int64_t id, struct store_kernel *k) {
  memset(k, 0, sizeof *k);
  char key[24];
  snprintf(key, sizeof key, "%" PRId64, id);
  const char *v[] = {key};
  pthread_mutex_lock(&s->lock);
  PGresult *res = pg_read(
      s, "SELECT " COLUMNS ", source, spec, report, image, ptx FROM kernels WHERE id = $1::bigint",
      1, v);
  pthread_mutex_unlock(&s->lock);
  int ret = !res ? -EIO : PQntuples(res) == 0 ? -ENOENT : 0;
  if (ret == 0) {
    head_of(res, 0, k);
    k->source = pg_dup(res, 0, N_HEAD);
    k->spec = pg_dup(res, 0, N_HEAD + 1);
    k->report = pg_dup(res, 0, N_HEAD + 2);
    k->image = pg_bytes(res, 0, N_HEAD + 3, &k->image_bytes);
    bool image = !PQgetisnull(res, 0, N_HEAD + 3) && PQgetlength(res, 0, N_HEAD + 3) > 2;
    bool ptx = !PQgetisnull(res, 0, N_HEAD + 4); /* NULL: none kept */
    if (ptx) k->ptx = pg_dup(res, 0, N_HEAD + 4);
    ret = k->source && k->spec && k->report && (!image || k->image) && (!ptx || k->ptx) ? 0
                                                                                        : -ENOMEM;
  }
  PQclear(res);
  if (ret) store_kernel_clear(k);
  return ret;
}

/* A delete of sql's rows ($1: key). 0, -ENOENT when none, or a write's errno. */
static int kernel_delete(struct store *s, const char *sql, int64_t key_value) {
  char key[24], why[200] = "";
  snprintf(key, sizeof key, "%" PRId64, key_value);
  const char *v[] = {key};
  int err = 0;
  pthread_mutex_lock(&s->lock);
  PGresult *res = pg_exec(s, sql, 1, v, NULL, &err, why, sizeof why);
  bool none = res && atoi(PQcmdTuples(res)) == 0;
  PQclear(res);
  pthread_mutex_unlock(&s->lock);
  if (err) log_warn("store: kernels: %s", why);
  store_note_write(s, err, why);
  return none ? -ENOENT : err;
}

int pg_kernel_delete(struct store *s, int64_t id) {
  return kernel_delete(s, "DELETE FROM kernels WHERE id = $1::bigint", id);
}

int pg_kernel_drop(struct store *s, int64_t kernel_id) {
  return kernel_delete(s, "DELETE FROM kernels WHERE " OF_KERNEL("1"), kernel_id);
}

/* fn over the rows of res (heads, spec, report, and with_count the version count). */
static int hand_out(PGresult *res, bool with_count,
                    void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  if (!res) return -EIO;
  int n = PQntuples(res);
  for (int i = 0; i < n; i++) {
    struct store_kernel k = {0};
    head_of(res, i, &k);
    k.spec = PQgetvalue(res, i, N_HEAD); /* borrowed from the result for the call */
    k.report = PQgetvalue(res, i, N_HEAD + 1);
    if (with_count) k.versions = atoi(PQgetvalue(res, i, N_HEAD + 2));
    fn(arg, &k);
  }
  PQclear(res);
  return n;
}

int pg_kernel_list(struct store *s, const char *owner, const char *experiment,
                   void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  const char *v[] = {owner, experiment};
  pthread_mutex_lock(&s->lock);
  PGresult *res = pg_read(s,
                          "SELECT " COLUMNS
                          ", spec, report, (SELECT COUNT(*) FROM kernels v"
                          " WHERE (v.id = COALESCE(k.kernel_of, k.id) AND v.kernel_of IS NULL)"
                          " OR v.kernel_of = COALESCE(k.kernel_of, k.id)) FROM kernels k"
                          " WHERE ($1::text IS NULL OR owner = $1::text OR public)"
                          " AND ($2::text IS NULL OR experiment = $2::text) AND " NEWEST
                          " ORDER BY COALESCE(kernel_of, id) DESC",
                          2, v);
  pthread_mutex_unlock(&s->lock);
  return hand_out(res, true, fn, arg);
}

int pg_kernel_versions(struct store *s, int64_t kernel_id,
                       void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  char key[24];
  snprintf(key, sizeof key, "%" PRId64, kernel_id);
  const char *v[] = {key};
  pthread_mutex_lock(&s->lock);
  PGresult *res = pg_read(
      s, "SELECT " COLUMNS ", spec, report FROM kernels WHERE " OF_KERNEL("1") " ORDER BY version",
      1, v);
  pthread_mutex_unlock(&s->lock);
  return hand_out(res, false, fn, arg);
}

int pg_kernel_named(struct store *s, const char *owner, const char *experiment, const char *name,
                    int64_t *ids, int max) {
  const char *v[] = {owner, experiment, name};
  pthread_mutex_lock(&s->lock);
  PGresult *res = pg_read(s,
                          "SELECT COALESCE(kernel_of, id) FROM kernels k WHERE owner = $1::text"
                          " AND experiment = $2::text AND name = $3::text AND " NEWEST
                          " ORDER BY 1 DESC",
                          3, v);
  pthread_mutex_unlock(&s->lock);
  if (!res) return -EIO;
  int n = PQntuples(res);
  for (int i = 0; i < n && i < max; i++) ids[i] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
  PQclear(res);
  return n;
}

int pg_kernel_count(struct store *s, const char *owner, int *n, size_t *source_bytes) {
  const char *v[] = {owner};
  *n = 0;
  *source_bytes = 0;
  pthread_mutex_lock(&s->lock);
  PGresult *res = pg_read(s,
                          "SELECT COUNT(*), COALESCE(SUM(octet_length(source)), 0) FROM kernels k"
                          " WHERE owner = $1::text AND " NEWEST,
                          1, v);
  pthread_mutex_unlock(&s->lock);
  if (!res) return -EIO;
  *n = atoi(PQgetvalue(res, 0, 0));
  *source_bytes = (size_t)strtoull(PQgetvalue(res, 0, 1), NULL, 10);
  PQclear(res);
  return 0;
}
