/* The store's PostgreSQL backend (libpq): one connection, made again (PQreset) by the
 * next call after it was lost; the schema created and migrated by gpulabd under an
 * advisory lock; a batch's rows in one transaction; ids reserved so that several
 * gpulabd sharing the database never hand out the same one. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/log.h"
#include "server/store/store_pg.h"

/* The schema, one step per version, in order: a database at version v gets steps v..
 * applied in one transaction. Never edit a step once released; add one. Records are
 * text, not jsonb: jsonb would reorder their keys, and GET /jobs/{id} answers the
 * stored text as it was written. Times are unix seconds (double precision), as in the
 * SQLite schema and store.h. */
static const char *const migrations[] = {
    /* 1: SQLite's tables, and phase 2's claim columns on jobs (unused yet). */
    "CREATE TABLE jobs (id bigint PRIMARY KEY, client text NOT NULL, type text NOT NULL,"
    "  state text NOT NULL, created double precision NOT NULL,"
    "  finished double precision NOT NULL DEFAULT 0, request bytea, record text,"
    "  node text, lease_until double precision, claimed_at double precision);"
    "CREATE INDEX jobs_state ON jobs(state);"
    "CREATE TABLE sweeps (id bigint PRIMARY KEY, client text NOT NULL,"
    "  created double precision NOT NULL, record text NOT NULL);"
    /* An identity's sequence: ids never reused, and never the same on two nodes. */
    "CREATE TABLE kernels (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    "  owner text NOT NULL, name text NOT NULL, experiment text NOT NULL,"
    "  public boolean NOT NULL, created double precision NOT NULL, source_sha text NOT NULL,"
    "  source text NOT NULL, spec text NOT NULL, report text NOT NULL, image bytea);"
    "CREATE INDEX kernels_owner ON kernels(owner);"
    "CREATE TABLE meta (name text PRIMARY KEY, value bigint NOT NULL);",
    /* 2: a fleet's nodes and their leases (fleet.h); lease_until NULL: taken over;
     * room: the jobs a node could start, as of its last renewal.
     * The claimers' scan: unclaimed queued jobs. Cancel requests for the node that
     * holds a job (store_job_cancel). */
    "CREATE TABLE nodes (name text PRIMARY KEY, advertise text NOT NULL,"
    "  started double precision NOT NULL, lease_until double precision,"
    "  epoch bigint NOT NULL, devices text NOT NULL, room integer NOT NULL DEFAULT 0);"
    "CREATE INDEX jobs_unclaimed ON jobs(id) WHERE state = 'queued' AND node IS NULL;"
    "ALTER TABLE jobs ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;",
    /* 3: a job's state changes, as the database records them, on channel
     * gpulab_job_events (fleet.h): every node's event streams show the fleet's jobs.
     * A trigger, not a NOTIFY from gpulabd: no statement more per row, and the fleet's
     * own writes (take-overs) are told too. The error's code only for a job that
     * failed or was canceled (its record is read as JSON then, never otherwise). */
    "CREATE FUNCTION gpulab_job_event() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  PERFORM pg_notify('gpulab_job_events', json_build_object('job', NEW.id,"
    "   'state', NEW.state, 'node', NEW.node, 'client', NEW.client, 'type', NEW.type,"
    "   'error', CASE WHEN NEW.state IN ('failed', 'canceled')"
    "    THEN NEW.record::json #>> '{error,code}' END)::text);"
    "  RETURN NULL;"
    " END $$;"
    "CREATE TRIGGER jobs_inserted AFTER INSERT ON jobs FOR EACH ROW"
    "  EXECUTE FUNCTION gpulab_job_event();"
    "CREATE TRIGGER jobs_changed AFTER UPDATE OF state ON jobs FOR EACH ROW"
    "  WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION gpulab_job_event();"
    /* A job's depends_on: claimed only where its unfinished parents run (fleet.c). */
    "ALTER TABLE jobs ADD COLUMN parents bigint[];",
    /* 4: buffers' homes (store_buffer_put): the node whose memory holds each, so that
     * another node can send a request for it there (store_buffer_elsewhere). */
    "CREATE TABLE buffers (id bigint PRIMARY KEY, node text NOT NULL, client text NOT NULL,"
    "  created double precision NOT NULL);"
    "CREATE INDEX buffers_node ON buffers(node);",
    /* 5: kernels' versions (store.h's store_kernel), a row each: kernel_of is the
     * kernel's id (its first version's), NULL on the first version itself, so that the
     * rows of earlier versions become version 1 of themselves. Two nodes numbering the
     * same version of a kernel at once: the second insert fails on the unique index. */
    "ALTER TABLE kernels ADD COLUMN kernel_of bigint;"
    "ALTER TABLE kernels ADD COLUMN version integer NOT NULL DEFAULT 1;"
    "CREATE UNIQUE INDEX kernels_versions ON kernels(kernel_of, version);",
    /* 6: problems users define (store.h's store_problem), a row per version of a name,
     * the name its first owner's; as SQLite's table. */
    "CREATE TABLE problems (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    "  name text NOT NULL, version integer NOT NULL, owner text NOT NULL,"
    "  public boolean NOT NULL, deleted boolean NOT NULL DEFAULT false,"
    "  created double precision NOT NULL, definition text NOT NULL, report text NOT NULL,"
    "  image bytea);"
    "CREATE UNIQUE INDEX problems_versions ON problems(name, version);",
    /* 7: a version's PTX, as NVRTC gave it with the CUBIN; NULL on the versions stored
     * before gpulab kept it. */
    "ALTER TABLE kernels ADD COLUMN ptx text;",
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))
#define SCHEMA_LOCK 0x67706c6273LL /* pg_advisory_xact_lock's key: "gplbs" */

/* The negative errno for a failed statement (store.h's list): a full disk is -ENOSPC,
 * a lost connection or a server going down -EIO. */
static int pg_errno(const PGresult *res) {
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  if (!state) return -EIO;                         /* libpq's own: the connection */
  if (strcmp(state, "53100") == 0) return -ENOSPC; /* disk_full */
  if (strcmp(state, "53200") == 0) return -ENOMEM; /* out_of_memory */
  if (strcmp(state, "25006") == 0) return -EROFS;  /* read_only_sql_transaction */
  return -EIO;
}

/* text, on one line and without libpq's trailing newline, into why. */
static void say(char *why, size_t len, const char *text) {
  snprintf(why, len, "%s", text && *text ? text : "PostgreSQL failed");
  char *out = why; /* libpq's lines ("...\n\tThis probably means...") as one */
  for (const char *p = why; *p; p++)
    if (*p == '\n') {
      if (p[1]) *out++ = ' ';
    } else if (*p != '\t') {
      *out++ = *p;
    }
  *out = '\0';
}

/* Settings of this session, set again after a reconnect. */
static int session(struct pg *p) {
  PGresult *res = PQexec(p->conn, p->sync_off ? "SET synchronous_commit = off"
                                              : "SET synchronous_commit = on");
  int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
  PQclear(res);
  return ok ? 0 : -EIO;
}

/* The connection, made again if it was lost (the server restarted, the network). */
static int connected(struct store *s, char *why, size_t len) {
  struct pg *p = pg_of(s);
  if (PQstatus(p->conn) == CONNECTION_OK) return 0;
  PQreset(p->conn);
  if (PQstatus(p->conn) != CONNECTION_OK || session(p)) {
    char text[240];
    say(text, sizeof text, PQerrorMessage(p->conn));
    snprintf(why, len, "PostgreSQL: %s", text);
    return -EIO;
  }
  log_info("store: connected to PostgreSQL again");
  return 0;
}

PGresult *pg_exec(struct store *s, const char *sql, int n, const char *const *values,
                  const int *binary, int *err, char *why, size_t why_len) {
  struct pg *p = pg_of(s);
  int lengths[16] = {0}, formats[16] = {0};
  if ((*err = connected(s, why, why_len))) return NULL;
  for (int i = 0; binary && i < n && i < 16; i++)
    if (binary[i] > 0) lengths[i] = binary[i], formats[i] = 1;
  /* Without parameters, the simple protocol: it takes several statements (the schema). */
  PGresult *res = n ? PQexecParams(p->conn, sql, n, NULL, values, lengths, formats, 0)
                    : PQexec(p->conn, sql);
  ExecStatusType st = PQresultStatus(res);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return res;
  *err = pg_errno(res);
  say(why, why_len, res ? PQresultErrorMessage(res) : PQerrorMessage(p->conn));
  if (!*why || strcmp(why, "PostgreSQL failed") == 0) say(why, why_len, PQerrorMessage(p->conn));
  PQclear(res);
  return NULL;
}

PGresult *pg_read(struct store *s, const char *sql, int n, const char *const *values) {
  char why[240];
  int err;
  PGresult *res = pg_exec(s, sql, n, values, NULL, &err, why, sizeof why);
  if (!res) log_warn("store: a read failed (%s: %s)", strerror(-err), why);
  return res;
}

char *pg_dup(const PGresult *res, int r, int c) { return strdup(PQgetvalue(res, r, c)); }

void *pg_bytes(const PGresult *res, int r, int c, size_t *len) {
  *len = 0;
  if (PQgetisnull(res, r, c)) return NULL;
  unsigned char *raw = PQunescapeBytea((const unsigned char *)PQgetvalue(res, r, c), len);
  void *out = raw && *len ? malloc(*len) : NULL;
  if (out) memcpy(out, raw, *len);
  if (!out) *len = 0;
  PQfreemem(raw);
  return out;
}

/* One statement of the schema's transaction. */
static int step(struct store *s, const char *sql, char *why, size_t len) {
  int err;
  PGresult *res = pg_exec(s, sql, 0, NULL, NULL, &err, why, len);
  PQclear(res);
  return res ? 0 : err;
}

/* Brings the schema to SCHEMA_VERSION in one transaction, under an advisory lock:
 * two gpulabd starting at once apply each step once. */
static int migrate(struct store *s, char *why, size_t len) {
  struct pg *p = pg_of(s);
  char sql[64];
  int err = 0, version = 0;
  if ((err = step(s, "BEGIN", why, len)) ||
      (snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%lld)", SCHEMA_LOCK),
       err = step(s, sql, why, len)) ||
      (err = step(s, "CREATE TABLE IF NOT EXISTS gpulab_schema (version integer NOT NULL)", why,
                  len)))
    goto fail;
  PGresult *res = pg_exec(s, "SELECT COALESCE(MAX(version), 0) FROM gpulab_schema", 0, NULL, NULL,
                          &err, why, len);
  if (!res) goto fail;
  version = atoi(PQgetvalue(res, 0, 0));
  PQclear(res);
  if (version > SCHEMA_VERSION) {
    snprintf(why, len, "its schema (version %d) is a newer gpulabd's (this one knows %d)", version,
             SCHEMA_VERSION);
    err = -EPROTO;
    goto fail;
  }
  for (int v = version; v < SCHEMA_VERSION; v++)
    if ((err = step(s, migrations[v], why, len))) goto fail;
  snprintf(sql, sizeof sql, "INSERT INTO gpulab_schema VALUES(%d)", SCHEMA_VERSION);
  if (version < SCHEMA_VERSION &&
      ((err = step(s, "DELETE FROM gpulab_schema", why, len)) || (err = step(s, sql, why, len))))
    goto fail;
  if ((err = step(s, "COMMIT", why, len))) goto fail;
  if (version < SCHEMA_VERSION)
    log_info("store: PostgreSQL schema version %d (was %d)", SCHEMA_VERSION, version);
  return 0;
fail:
  if (PQtransactionStatus(p->conn) != PQTRANS_IDLE) PQclear(PQexec(p->conn, "ROLLBACK"));
  return err;
}

static void quiet(void *arg, const char *message) { (void)arg, (void)message; }

/* A mark in meta: the write that open and the probe make. */
static int mark(struct store *s, const char *name, char *why, size_t len) {
  char now[24];
  snprintf(now, sizeof now, "%lld", (long long)time(NULL));
  const char *v[] = {name, now};
  int err;
  PGresult *res = pg_exec(s,
                          "INSERT INTO meta(name, value) VALUES($1, $2) ON CONFLICT (name)"
                          " DO UPDATE SET value = EXCLUDED.value",
                          2, v, NULL, &err, why, len);
  PQclear(res);
  return res ? 0 : err;
}

static int pg_open(struct store *s, const char *uri, char *why, size_t len) {
  struct pg *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(why, len, "out of memory");
    return -ENOMEM;
  }
  s->backend = p;
  /* Defaults the URI may override (later entries win): a server that does not answer
   * fails a connect in 5 s, and unacknowledged writes in 10 s, rather than hold the
   * store (and /health) for the kernel's minutes. */
  const char *const keys[] = {"connect_timeout", "tcp_user_timeout", "dbname", NULL};
  const char *const values[] = {"5", "10000", uri, NULL};
  p->conn = PQconnectdbParams(keys, values, 1);
  if (!p->conn) {
    snprintf(why, len, "out of memory");
    return -ENOMEM;
  }
  if (PQstatus(p->conn) != CONNECTION_OK) {
    char text[200];
    say(text, sizeof text, PQerrorMessage(p->conn));
    snprintf(why, len, "cannot connect to PostgreSQL: %s", text);
    return -EIO;
  }
  PQsetNoticeProcessor(p->conn, quiet, NULL); /* CREATE ... IF NOT EXISTS's notices */
  int err = session(p);
  if (err) {
    say(why, len, PQerrorMessage(p->conn));
    return err;
  }
  if ((err = migrate(s, why, len))) return err;
  /* A write now: a store that cannot take one is refused before any job is. */
  char text[200];
  if ((err = mark(s, "opened", text, sizeof text)))
    snprintf(why, len, "it cannot be written: %s", text);
  return err;
}

static void pg_close(struct store *s) {
  struct pg *p = pg_of(s);
  if (!p) return;
  PQfinish(p->conn);
  free(p);
  s->backend = NULL;
}

/* One row of a batch, inside its transaction. A job whose first row failed (it was
 * refused) is never created by a later one: those are updates. Both are fenced
 * (fleet.h): a row changes only while it is this node's and unfinished, so a node that
 * was taken over writes nothing over what another node now owns. */
#define UNFINISHED "jobs.state IN ('queued', 'waiting', 'running')"

/* r's parents as an array literal, "{7,9}": malloc'd, NULL when it has none (or out
 * of memory: then the fleet claims the job as if it had none). */
static char *parents_text(const struct store_row *r) {
  size_t len = (size_t)r->n_parents * 21 + 3, at = 0;
  char *text = r->n_parents > 0 ? malloc(len) : NULL;
  for (int i = 0; text && i < r->n_parents; i++)
    at += (size_t)snprintf(text + at, len - at, "%c%" PRIu64, i ? ',' : '{', r->parents[i]);
  if (text) snprintf(text + at, len - at, "}");
  return text;
}
/* Sends sql with n values (binary[i] > 0: value i is that many bytes) into the
 * connection's pipeline. False when the connection failed. */
static bool send(struct pg *p, const char *sql, int n, const char *const *values,
                 const int *binary) {
  int lengths[16] = {0}, formats[16] = {0};
  for (int i = 0; binary && i < n && i < 16; i++)
    if (binary[i] > 0) lengths[i] = binary[i], formats[i] = 1;
  return PQsendQueryParams(p->conn, sql, n, NULL, values, lengths, formats, 0) == 1;
}

/* A row's statement, into the pipeline. */
static bool send_row(struct store *s, const struct store_row *r) {
  struct pg *p = pg_of(s);
  char id[24], created[32], finished[32];
  snprintf(id, sizeof id, "%" PRIu64, r->id);
  snprintf(created, sizeof created, "%.17g", r->created);
  snprintf(finished, sizeof finished, "%.17g", r->finished);
  if (r->table == STORE_BUFFERS) { /* a node deletes its own buffers' rows only */
    const char *v[] = {id, s->node, r->client, created};
    return r->create
               ? send(p,
                      "INSERT INTO buffers(id, node, client, created) VALUES($1, $2, $3,"
                      " $4) ON CONFLICT (id) DO UPDATE SET node = $2, client = $3,"
                      " created = $4",
                      4, v, NULL)
               : send(p, "DELETE FROM buffers WHERE id = $1::bigint AND node = $2", 2, v, NULL);
  }
  if (r->table == STORE_SWEEPS) {
    const char *v[] = {id, r->client, created, r->record ? r->record : "{}"};
    return send(p,
                "INSERT INTO sweeps(id, client, created, record) VALUES($1, $2, $3, $4)"
                " ON CONFLICT (id) DO UPDATE SET client = EXCLUDED.client,"
                " created = EXCLUDED.created, record = EXCLUDED.record",
                4, v, NULL);
  }
  if (!r->create) {
    const char *v[] = {id, r->state, finished, r->record, s->node[0] ? s->node : NULL};
    return send(p,
                "UPDATE jobs SET state = $2, finished = $3, record = COALESCE($4::text, record)"
                " WHERE id = $1 AND node IS NOT DISTINCT FROM $5 AND " UNFINISHED,
                5, v, NULL);
  }
  char *parents = parents_text(r);
  const char *v[] = {id,
                     r->client,
                     r->type,
                     r->state,
                     created,
                     finished,
                     (const char *)r->request,
                     r->record,
                     s->node[0] ? s->node : NULL,
                     parents};
  int binary[10] = {0, 0, 0, 0, 0, 0, r->request ? (int)r->request_len : 0, 0, 0, 0};
  if (r->request && r->request_len == 0) v[6] = "";
  bool sent = send(p,
                   "INSERT INTO jobs(id, client, type, state, created, finished, request, record,"
                   " node, parents) VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::bigint[])"
                   " ON CONFLICT (id) DO UPDATE"
                   " SET state = $4, finished = $6, record = COALESCE($8, jobs.record), node = $9"
                   " WHERE jobs.node IS NOT DISTINCT FROM $9 AND " UNFINISHED,
                   10, v, binary);
  free(parents); /* libpq copied it into its buffer */
  return sent;
}

/* The results of sent statements, then of their Sync: 0, or the first error. */
static int read_pipeline(struct pg *p, int sent, char *why, size_t len) {
  int err = 0;
  for (int i = 0; i < sent; i++) {
    PGresult *res = PQgetResult(p->conn);
    if (!res) break; /* the connection is gone */
    ExecStatusType st = PQresultStatus(res);
    /* After an error the rest are PGRES_PIPELINE_ABORTED: the first error says why. */
    if (!err && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      err = pg_errno(res);
      say(why, len, PQresultErrorMessage(res));
    }
    PQclear(res);
    PQclear(PQgetResult(p->conn)); /* the NULL that ends each statement's results */
  }
  PGresult *res = PQgetResult(p->conn);
  if (!err && PQresultStatus(res) != PGRES_PIPELINE_SYNC) {
    err = pg_errno(res);
    say(why, len, PQerrorMessage(p->conn));
  }
  PQclear(res);
  return err;
}

/* A batch in one round trip: its rows' statements pipelined up to one Sync, which
 * runs them as one implicit transaction (all written, or none). A Sync whose answer
 * never came (the connection lost) is counted failed: the batch may be in the
 * database all the same, which store.h allows (written, or failed). */
static int pg_write_batch_locked(struct store *s, const struct queued_row *batch, char *why,
                                 size_t len) {
  struct pg *p = pg_of(s);
  int err = connected(s, why, len), sent = 0;
  if (err) return err;
  if (!PQenterPipelineMode(p->conn)) {
    say(why, len, PQerrorMessage(p->conn));
    return -EIO;
  }
  const struct queued_row *q = batch;
  for (; q && send_row(s, &q->row); q = q->next) sent++;
  bool synced = !q && PQpipelineSync(p->conn) == 1;
  if (synced) {
    err = read_pipeline(p, sent, why, len);
  } else { /* not all sent: the connection failed */
    err = -EIO;
    say(why, len, PQerrorMessage(p->conn));
  }
  /* It fails only with results still pending (a send failed): made anew, the
   * connection leaves pipeline mode. */
  if (!PQexitPipelineMode(p->conn)) PQreset(p->conn);
  return err;
}

static int pg_probe_locked(struct store *s, char *why, size_t len) {
  return mark(s, "probe", why, len);
}

static const char *pg_durability_locked(struct store *s) {
  return pg_of(s)->sync_off ? "normal" : "full";
}

/* NORMAL: synchronous_commit=off: a commit is answered before its WAL is flushed, so
 * it survives gpulabd crashing (the server has it) but a crash of the server or the
 * machine may lose the last few hundred milliseconds of commits (3 x
 * wal_writer_delay), never corrupting anything. FULL (PostgreSQL's default): an fsync
 * of the WAL per commit, before it is answered. */
static int pg_set_durability_locked(struct store *s, enum store_durability d) {
  struct pg *p = pg_of(s);
  char why[200];
  int err = connected(s, why, sizeof why);
  if (err) return err;
  p->sync_off = d == STORE_DURABILITY_NORMAL;
  return session(p);
}

/* This gpulabd's mark of sequence name, made on first use; NULL if the table is full. */
static struct pg_ids *id_mark(struct pg *p, const char *name) {
  for (int i = 0; i < PG_ID_SEQUENCES; i++) {
    if (strcmp(p->ids[i].name, name) == 0) return &p->ids[i];
    if (!p->ids[i].name[0]) {
      snprintf(p->ids[i].name, sizeof p->ids[i].name, "%s", name);
      return &p->ids[i];
    }
  }
  return NULL;
}

/* The stored mark; the first read of a sequence is this gpulabd's mark too (the
 * engine starts above it). A later read changes nothing here: the engine's next id
 * stays where it was, and a mark moved to the stored value could take ids below it. */
static uint64_t pg_ids_floor_locked(struct store *s, const char *name) {
  const char *v[] = {name};
  PGresult *res = pg_read(s, "SELECT value FROM meta WHERE name = $1", 1, v);
  uint64_t value = res && PQntuples(res) ? strtoull(PQgetvalue(res, 0, 0), NULL, 10) : 0;
  PQclear(res);
  struct pg_ids *mine = id_mark(pg_of(s), name);
  if (mine && res && !mine->set) mine->mark = value, mine->set = true;
  return value;
}

/* The stored mark moves to upto only where no other gpulabd can hold ids in the way
 * (a conditional update): it is still this gpulabd's own last mark, or it is below
 * *from (every id handed out by anyone is at or below the stored mark). Otherwise,
 * with from, a block of the same length is taken past every id taken (an atomic add)
 * and *from says where it starts; without from (store_ids_reserve: a mark put back
 * at a clean stop, say) it fails with -EBUSY and nothing moves. */
static int pg_ids_reserve_locked(struct store *s, const char *name, uint64_t *from, uint64_t upto,
                                 char *why, size_t len) {
  struct pg_ids *mine = id_mark(pg_of(s), name);
  if (!mine) {
    snprintf(why, len, "too many id sequences");
    return -EINVAL;
  }
  if (!mine->set) pg_ids_floor_locked(s, name);
  char to[24], was[24], start[24], length[24];
  snprintf(to, sizeof to, "%" PRIu64, upto);
  snprintf(was, sizeof was, "%" PRIu64, mine->mark);
  if (from) snprintf(start, sizeof start, "%" PRIu64, *from);
  const char *v[] = {name, to, mine->set ? was : NULL, from ? start : NULL};
  int err;
  PGresult *res = pg_exec(s,
                          "INSERT INTO meta(name, value) VALUES($1, $2::bigint) ON CONFLICT (name)"
                          " DO UPDATE SET value = EXCLUDED.value WHERE meta.value = $3::bigint"
                          " OR meta.value < $4::bigint RETURNING value",
                          4, v, NULL, &err, why, len);
  if (!res) return err;
  int rows = PQntuples(res);
  PQclear(res);
  if (rows == 1) {
    mine->mark = upto;
    mine->set = true;
    return 0;
  }
  if (!from || *from > upto) {
    snprintf(why, len, "another gpulabd on this database reserved %s ids past %s", name, was);
    return -EBUSY;
  }
  uint64_t n = upto - *from + 1;
  snprintf(length, sizeof length, "%" PRIu64, n);
  const char *add[] = {name, length};
  res = pg_exec(s, "UPDATE meta SET value = value + $2::bigint WHERE name = $1 RETURNING value", 2,
                add, NULL, &err, why, len);
  if (!res) return err;
  uint64_t end = PQntuples(res) ? strtoull(PQgetvalue(res, 0, 0), NULL, 10) : 0;
  PQclear(res);
  if (end < n) {
    snprintf(why, len, "the %s ids' mark is gone from table meta", name);
    return -EIO;
  }
  log_info("store: %s ids %" PRIu64 "..%" PRIu64 ", past those another gpulabd took", name,
           end - n + 1, end);
  mine->mark = end;
  *from = end - n + 1;
  return 0;
}

const struct store_ops store_pg_ops = {
    .name = "postgresql",
    .shared = true,
    .open = pg_open,
    .close = pg_close,
    .write_batch_locked = pg_write_batch_locked,
    .probe_locked = pg_probe_locked,
    .used_bytes_locked = pg_used_bytes_locked,
    .used_bytes_exact_locked = pg_used_bytes_exact_locked,
    .id_span_locked = pg_id_span_locked,
    .delete_oldest_locked = pg_delete_oldest_locked,
    .file_bytes_locked = pg_file_bytes_locked,
    .durability_locked = pg_durability_locked,
    .set_durability_locked = pg_set_durability_locked,
    .ids_reserve_locked = pg_ids_reserve_locked,
    .ids_floor_locked = pg_ids_floor_locked,
    .record = pg_record,
    .list = pg_list,
    .unfinished = pg_unfinished,
    .cancel = pg_cancel,
    .held = pg_held,
    .elsewhere = pg_elsewhere,
    .buffer_elsewhere = pg_buffer_elsewhere,
    .buffers_forget = pg_buffers_forget,
    .max_id = pg_max_id,
    .sweeps = pg_sweeps,
    .sweeps_page = pg_sweeps_page,
    .prune = pg_prune,
    .problem_insert = pg_problem_insert,
    .problem_get = pg_problem_get,
    .problem_each = pg_problem_each,
    .problem_delete = pg_problem_delete,
    .kernel_insert = pg_kernel_insert,
    .kernel_get = pg_kernel_get,
    .kernel_delete = pg_kernel_delete,
    .kernel_drop = pg_kernel_drop,
    .kernel_list = pg_kernel_list,
    .kernel_versions = pg_kernel_versions,
    .kernel_named = pg_kernel_named,
    .kernel_count = pg_kernel_count,
};
