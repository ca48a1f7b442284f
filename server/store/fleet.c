/* A fleet's leases, take-overs and claims (fleet.h), on a PostgreSQL connection of
 * its own, from one thread. */
#include "server/store/fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/core/clock.h"
#include "server/log.h"

#define CLAIM_BATCH_MAX 64                       /* jobs claimed by one statement */
#define FLEET_JOBS_CHANNEL "gpulab_jobs"         /* jobs were left unclaimed */
#define FLEET_CANCEL_CHANNEL "gpulab_cancel"     /* a cancel request (store_job_cancel) */
#define FLEET_EVENTS_CHANNEL "gpulab_job_events" /* a job's state changed (store_pg.c) */
#define BACKLOG_POLL_S 0.01 /* a claim that filled the room asks again this soon */
#define RELEASE_MAX 64      /* jobs handed back to the queue at once */
#define STR_(x) #x
#define STR(x) STR_(x) /* a number macro as SQL text */
/* The database's clock, in unix seconds, as the jobs' and nodes' times are kept. */
#define DB_NOW "extract(epoch from clock_timestamp())"

struct fleet {
  struct fleet_config cfg; /* its strings point into the copies below */
  char *uri, *node;
  pthread_mutex_t advertise_lock; /* fleet_advertise comes from another thread */
  char advertise[256];
  PGconn *conn;
  int64_t epoch;
  char lease[32];            /* cfg.lease_s as SQL text */
  _Atomic double renewed_at; /* CLOCK_MONOTONIC of the last successful renewal */
  atomic_bool stopping;
  atomic_bool draining; /* fleet_drain */
  int stop_pipe[2];     /* written by fleet_stop and fleet_wake: the wait ends */
  bool listening;       /* to FLEET_EVENTS_CHANNEL (sync_listen) */
  /* What the last lease tick read (fleet_queued and fleet_nodes copy it out): */
  pthread_mutex_t tick_lock;
  struct fleet_queued queued[FLEET_QUEUED_MAX];
  int n_queued;
  struct fleet_node nodes[FLEET_NODES_MAX];
  int n_nodes;
  /* Jobs taken out of the engine for the queue, until the database has them. */
  uint64_t released[RELEASE_MAX];
  int n_released;
  pthread_t thread;
};

/* The channels that wake the thread: jobs left unclaimed, cancel requests (a
 * session's LISTENs, made again on a new connection; the jobs' state changes are
 * listened to apart, while they are wanted: sync_listen). */
static bool listen_channels(PGconn *conn) {
  PGresult *res = PQexec(conn, "LISTEN " FLEET_JOBS_CHANNEL "; LISTEN " FLEET_CANCEL_CHANNEL);
  bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
  PQclear(res);
  return ok;
}

/* A statement on the fleet's connection, made again first if it was lost. Returns
 * the result (PQclear it), or NULL after logging what failed. */
static PGresult *run_sql(struct fleet *f, const char *sql, int n, const char *const *values) {
  if (PQstatus(f->conn) != CONNECTION_OK) {
    PQreset(f->conn);
    f->listening = false; /* a new session: sync_listen listens again */
    if (PQstatus(f->conn) != CONNECTION_OK || !listen_channels(f->conn))
      return NULL; /* the store says so already */
    log_info("fleet: connected to PostgreSQL again");
  }
  PGresult *res = PQexecParams(f->conn, sql, n, NULL, values, NULL, NULL, 0);
  ExecStatusType st = PQresultStatus(res);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return res;
  log_warn("fleet: %s", res ? PQresultErrorMessage(res) : PQerrorMessage(f->conn));
  PQclear(res);
  return NULL;
}

/* A statement whose result only matters as success. */
static bool ok_sql(struct fleet *f, const char *sql, int n, const char *const *values) {
  PGresult *res = run_sql(f, sql, n, values);
  PQclear(res);
  return res != NULL;
}

static void rollback(struct fleet *f) {
  if (PQstatus(f->conn) == CONNECTION_OK && PQtransactionStatus(f->conn) != PQTRANS_IDLE)
    PQclear(PQexec(f->conn, "ROLLBACK"));
}

static void advertised(struct fleet *f, char *out) {
  pthread_mutex_lock(&f->advertise_lock);
  memcpy(out, f->advertise, sizeof f->advertise);
  pthread_mutex_unlock(&f->advertise_lock);
}

/* The node's row, with a new epoch (its previous run's writes fenced off). */
static int register_node(struct fleet *f) {
  char advertise[sizeof f->advertise];
  advertised(f, advertise);
  char *devices = f->cfg.devices(f->cfg.arg);
  const char *v[] = {f->node, advertise, f->lease, devices ? devices : "[]"};
  PGresult *res = run_sql(f,
                          "INSERT INTO nodes(name, advertise, started, lease_until, epoch, devices)"
                          " VALUES($1, $2, " DB_NOW ", " DB_NOW
                          " + $3::float8, 1, $4)"
                          " ON CONFLICT (name) DO UPDATE SET advertise = $2, started = " DB_NOW
                          ", lease_until = " DB_NOW
                          " + $3::float8, epoch = nodes.epoch + 1,"
                          " devices = $4 RETURNING epoch",
                          4, v);
  free(devices);
  if (!res) return -EIO;
  f->epoch = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  atomic_store(&f->renewed_at, clock_mono_s());
  return 0;
}

/* Moves the lease on. Taken over (the epoch moved): drops what runs here and
 * registers again. */
static void renew(struct fleet *f) {
  char epoch[24];
  snprintf(epoch, sizeof epoch, "%" PRId64, f->epoch);
  char room[16];
  int capacity = atomic_load(&f->draining) ? 0 : f->cfg.capacity(f->cfg.arg);
  snprintf(room, sizeof room, "%d", capacity > 0 ? capacity : 0);
  char advertise[sizeof f->advertise];
  advertised(f, advertise);
  char *devices = f->cfg.devices(f->cfg.arg);
  const char *v[] = {f->node, epoch, f->lease, room, advertise, devices};
  PGresult *res = run_sql(f,
                          "UPDATE nodes SET lease_until = " DB_NOW
                          " + $3::float8,"
                          " room = $4::integer, advertise = $5, devices = COALESCE($6, devices)"
                          " WHERE name = $1 AND epoch = $2::bigint",
                          6, v);
  free(devices);
  if (!res) return;
  bool ours = atoi(PQcmdTuples(res)) == 1;
  PQclear(res);
  if (ours) {
    atomic_store(&f->renewed_at, clock_mono_s());
    return;
  }
  log_warn(
      "fleet: node %s was taken over by another node (its lease ran out): its jobs are "
      "dropped here, and it joins again",
      f->node);
  f->cfg.taken_over(f->cfg.arg);
  register_node(f);
}

/* The running jobs of node dead failed `interrupted`, inside the take-over's
 * transaction. */
static bool interrupt_running(struct fleet *f, const char *dead) {
  const char *v[] = {dead};
  PGresult *res = run_sql(f, "SELECT id, record FROM jobs WHERE node = $1 AND state = 'running'", 1,
                          v);
  if (!res) return false;
  char why[160];
  snprintf(why, sizeof why,
           "node %s stopped answering (its lease ran out) while this job ran; "
           "it is not run again",
           dead);
  bool ok = true;
  for (int i = 0; i < PQntuples(res) && ok; i++) {
    uint64_t id = strtoull(PQgetvalue(res, i, 0), NULL, 10);
    char *record = f->cfg.interrupted_record(
        f->cfg.arg, id, PQgetisnull(res, i, 1) ? NULL : PQgetvalue(res, i, 1), why);
    const char *w[] = {PQgetvalue(res, i, 0), record};
    ok = ok_sql(f,
                "UPDATE jobs SET state = 'failed', finished = " DB_NOW
                ", record = COALESCE($2, record) WHERE id = $1::bigint",
                2, w);
    free(record);
  }
  PQclear(res);
  return ok;
}

/* Takes over node dead (its row locked by the caller's transaction). */
static bool take_over(struct fleet *f, const char *dead) {
  const char *v[] = {dead};
  PGresult *res = run_sql(f,
                          "UPDATE jobs SET node = NULL, claimed_at = NULL, state = 'queued'"
                          " WHERE node = $1 AND state IN ('queued', 'waiting')",
                          1, v);
  if (!res) return false;
  log_warn("fleet: node %s's lease ran out: its %s unstarted job(s) are queued for any node", dead,
           PQcmdTuples(res));
  PQclear(res);
  return interrupt_running(f, dead) &&
         ok_sql(f, "UPDATE nodes SET epoch = epoch + 1, lease_until = NULL WHERE name = $1", 1,
                v) &&
         ok_sql(f, "NOTIFY " FLEET_JOBS_CHANNEL, 0, NULL); /* sent at the commit */
}

/* Every node past its lease, taken over one by one, each in its own transaction (a
 * node another gpulabd is taking over now is skipped: SKIP LOCKED). */
static void expire_nodes(struct fleet *f) {
  for (;;) {
    if (!ok_sql(f, "BEGIN", 0, NULL)) return;
    const char *v[] = {f->node};
    PGresult *res = run_sql(f,
                            "SELECT name FROM nodes WHERE lease_until < " DB_NOW
                            " AND name <> $1 LIMIT 1 FOR UPDATE SKIP LOCKED",
                            1, v);
    bool found = res && PQntuples(res) == 1;
    bool done = found && take_over(f, PQgetvalue(res, 0, 0)) && ok_sql(f, "COMMIT", 0, NULL);
    PQclear(res);
    if (!done) {
      rollback(f);
      return;
    }
  }
}

/* Claims what capacity allows of the unclaimed queued jobs, fairly across clients:
 * each client's jobs ranked oldest first, and the ranks taken in turn. Returns
 * whether it claimed any (more may be claimable: children of those). */
static bool claim(struct fleet *f) {
  int room = fleet_fenced(f) || atomic_load(&f->draining) ? 0 : f->cfg.capacity(f->cfg.arg);
  if (room <= 0) return false;
  int limit = room < CLAIM_BATCH_MAX ? room : CLAIM_BATCH_MAX;
  char most[16];
  snprintf(most, sizeof most, "%d", limit);
  const char *v[] = {f->node, most};
  PGresult *res = run_sql(
      f,
      /* A job whose parents have not all ended waits for the node that runs them. */
      "WITH ranked AS (SELECT id, row_number() OVER (PARTITION BY client ORDER BY id) AS turn"
      "  FROM jobs c WHERE state = 'queued' AND node IS NULL AND NOT EXISTS (SELECT 1 FROM"
      "  jobs p WHERE p.id = ANY(c.parents) AND p.state IN ('queued', 'waiting', 'running')"
      "  AND p.node IS DISTINCT FROM $1)),"
      " picked AS (SELECT j.id FROM jobs j JOIN ranked r ON r.id = j.id"
      "  WHERE j.state = 'queued' AND j.node IS NULL ORDER BY r.turn, j.id LIMIT $2::integer"
      "  FOR UPDATE OF j SKIP LOCKED),"
      " claimed AS (UPDATE jobs SET node = $1, claimed_at = " DB_NOW
      "  FROM picked WHERE jobs.id = picked.id RETURNING jobs.id, jobs.request)"
      " SELECT id, request FROM claimed ORDER BY id", /* a parent before its children */
      2, v);
  int n = res ? PQntuples(res) : 0;
  for (int i = 0; i < n; i++) {
    size_t len = 0;
    unsigned char *request = PQgetisnull(res, i, 1)
                                 ? NULL
                                 : PQunescapeBytea((const unsigned char *)PQgetvalue(res, i, 1),
                                                   &len);
    f->cfg.run_claimed(f->cfg.arg, strtoull(PQgetvalue(res, i, 0), NULL, 10), request, len);
    PQfreemem(request);
  }
  PQclear(res);
  return n > 0; /* more may be waiting: the room, or children of the jobs just claimed */
}

/* The queued jobs per node (none: unclaimed), for /metrics. */
static void count_queued(struct fleet *f) {
  PGresult *res = run_sql(f,
                          "SELECT COALESCE(node, ''), COUNT(*) FROM jobs WHERE state = 'queued'"
                          " GROUP BY node ORDER BY 1 LIMIT " STR(FLEET_QUEUED_MAX),
                          0, NULL);
  if (!res) return;
  pthread_mutex_lock(&f->tick_lock);
  f->n_queued = PQntuples(res);
  for (int i = 0; i < f->n_queued; i++) {
    snprintf(f->queued[i].node, sizeof f->queued[i].node, "%s", PQgetvalue(res, i, 0));
    f->queued[i].jobs = strtoll(PQgetvalue(res, i, 1), NULL, 10);
  }
  pthread_mutex_unlock(&f->tick_lock);
  PQclear(res);
}

/* The live nodes and their devices, for fleet_nodes. */
static void read_nodes(struct fleet *f) {
  PGresult *res = run_sql(f,
                          "SELECT name, advertise, devices FROM nodes WHERE lease_until > " DB_NOW
                          " ORDER BY name LIMIT " STR(FLEET_NODES_MAX),
                          0, NULL);
  if (!res) return;
  pthread_mutex_lock(&f->tick_lock);
  for (int i = 0; i < f->n_nodes; i++) free(f->nodes[i].devices);
  f->n_nodes = 0;
  for (int i = 0; i < PQntuples(res); i++) {
    struct fleet_node *n = &f->nodes[f->n_nodes];
    snprintf(n->name, sizeof n->name, "%s", PQgetvalue(res, i, 0));
    snprintf(n->advertise, sizeof n->advertise, "%s", PQgetvalue(res, i, 1));
    if ((n->devices = strdup(PQgetvalue(res, i, 2)))) f->n_nodes++;
  }
  pthread_mutex_unlock(&f->tick_lock);
  PQclear(res);
}

/* Cancel requests for jobs this node holds (store_job_cancel), taken and applied. */
static void apply_cancels(struct fleet *f) {
  const char *v[] = {f->node};
  PGresult *res = run_sql(f,
                          "UPDATE jobs SET cancel_requested = false WHERE node = $1 AND"
                          " cancel_requested AND state IN ('queued', 'waiting', 'running')"
                          " RETURNING id",
                          1, v);
  for (int i = 0; res && i < PQntuples(res); i++)
    f->cfg.cancel(f->cfg.arg, strtoull(PQgetvalue(res, i, 0), NULL, 10));
  PQclear(res);
}

/* The room live nodes other than this one said they had, less the jobs already
 * waiting unclaimed: how many more the queue may take (a client's flood stays bounded
 * by its node's --max-queued, not moved into the database without end). */
static int others_room(struct fleet *f) {
  const char *v[] = {f->node};
  PGresult *res = run_sql(f,
                          "SELECT (SELECT COALESCE(SUM(room), 0) FROM nodes WHERE name <> $1 AND"
                          " lease_until > " DB_NOW
                          ") - (SELECT COUNT(*) FROM jobs WHERE"
                          " state = 'queued' AND node IS NULL)",
                          1, v);
  int room = res ? atoi(PQgetvalue(res, 0, 0)) : 0;
  PQclear(res);
  return room;
}

/* Hands jobs queued here past the node's lanes back to the queue: out of the engine
 * first (no job is ever in two places to run), then unclaimed in the database, which
 * is retried until it succeeds (a job whose row changed meanwhile is left as it is). */
static void release_backlog(struct fleet *f) {
  if (f->n_released == 0 && !atomic_load(&f->draining)) {
    int room = f->cfg.capacity(f->cfg.arg) > 0 ? 0 : others_room(f);
    if (room > RELEASE_MAX) room = RELEASE_MAX;
    if (room > 0) f->n_released = f->cfg.release(f->cfg.arg, f->released, room);
  }
  if (f->n_released == 0) return;
  char ids[RELEASE_MAX * 21 + 2];
  size_t at = 0;
  for (int i = 0; i < f->n_released; i++)
    at += (size_t)snprintf(ids + at, sizeof ids - at, "%c%" PRIu64, i ? ',' : '{', f->released[i]);
  snprintf(ids + at, sizeof ids - at, "}");
  const char *v[] = {f->node, ids};
  if (ok_sql(f,
             "UPDATE jobs SET node = NULL, claimed_at = NULL WHERE id = ANY($2::bigint[]) AND"
             " node = $1 AND state = 'queued'",
             2, v) &&
      ok_sql(f, "NOTIFY " FLEET_JOBS_CHANNEL, 0, NULL))
    f->n_released = 0;
}

/* The notifications that came: job events to job_event (another node's jobs: this
 * node's engine told its own already); whether any other asks for a pass (jobs left
 * unclaimed, a cancel request; this session's own NOTIFYs do not). */
static bool take_notifications(struct fleet *f) {
  bool news = false;
  PGnotify *n;
  while ((n = PQnotifies(f->conn))) {
    if (strcmp(n->relname, FLEET_EVENTS_CHANNEL) == 0) {
      if (f->listening) f->cfg.job_event(f->cfg.arg, n->extra); /* else: one left over */
    } else if (n->be_pid != PQbackendPID(f->conn)) {
      news = true;
    }
    PQfreemem(n);
  }
  return news;
}

/* Sleeps up to seconds, or until a notification asks for a pass, or fleet_stop. Job
 * events are handed on as they come, without a pass (there are many). */
static void wait_for_news(struct fleet *f, double seconds) {
  double until = clock_mono_s() + seconds;
  for (;;) {
    /* Those that came during the pass's statements are read already. */
    if (take_notifications(f) || atomic_load(&f->stopping)) return;
    double left = until - clock_mono_s();
    int sock = PQsocket(f->conn);
    if (left <= 0 || sock < 0) return;
    struct pollfd fds[2] = {{.fd = f->stop_pipe[0], .events = POLLIN},
                            {.fd = sock, .events = POLLIN}};
    if (poll(fds, 2, (int)(left * 1e3) + 1) <= 0) return;
    if (fds[0].revents) { /* fleet_wake's bytes (fleet_stop's are for the flag) */
      char bytes[64];
      if (read(f->stop_pipe[0], bytes, sizeof bytes) < 0) log_warn("fleet: cannot read its pipe");
      return;
    }
    if (!PQconsumeInput(f->conn)) return; /* the next statement connects again */
  }
}

/* Listens to the jobs' state changes while they are wanted (wants_events), not
 * otherwise: every node would read every node's changes for nobody. */
static void sync_listen(struct fleet *f) {
  bool want = f->cfg.wants_events && f->cfg.wants_events(f->cfg.arg);
  if (want != f->listening &&
      ok_sql(f, want ? "LISTEN " FLEET_EVENTS_CHANNEL : "UNLISTEN " FLEET_EVENTS_CHANNEL, 0, NULL))
    f->listening = want;
}

/* Leases every L/3; cancels and claims then too, and whenever a notification says
 * there may be some, and while the queue's jobs fill the room it has (as its jobs end,
 * room comes: it asks again soon). */
static void *fleet_thread(void *arg) {
  struct fleet *f = arg;
  double period = f->cfg.lease_s / 3, next_renewal = 0;
  while (!atomic_load(&f->stopping)) {
    if (clock_mono_s() >= next_renewal) {
      next_renewal = clock_mono_s() + period;
      renew(f);
      expire_nodes(f);
      count_queued(f);
      read_nodes(f);
    }
    sync_listen(f);
    apply_cancels(f);
    release_backlog(f);
    double wait = claim(f) ? BACKLOG_POLL_S : next_renewal - clock_mono_s();
    wait_for_news(f, wait);
  }
  return NULL;
}

static void free_fleet(struct fleet *f) {
  if (!f) return;
  PQfinish(f->conn);
  free(f->uri);
  free(f->node);
  pthread_mutex_destroy(&f->advertise_lock);
  pthread_mutex_destroy(&f->tick_lock);
  for (int i = 0; i < f->n_nodes; i++) free(f->nodes[i].devices);
  for (int i = 0; i < 2; i++)
    if (f->stop_pipe[i] >= 0) close(f->stop_pipe[i]);
  free(f);
}

int fleet_start(const struct fleet_config *cfg, struct fleet **out, char *err, size_t err_len) {
  struct fleet *f = calloc(1, sizeof *f);
  if (!f) goto no_memory;
  f->cfg = *cfg;
  pthread_mutex_init(&f->advertise_lock, NULL);
  pthread_mutex_init(&f->tick_lock, NULL);
  f->stop_pipe[0] = f->stop_pipe[1] = -1;
  if (pipe(f->stop_pipe)) {
    int why = errno;
    snprintf(err, err_len, "the fleet cannot make a pipe: %s", strerror(why));
    free_fleet(f);
    return -why;
  }
  f->uri = strdup(cfg->uri);
  f->node = strdup(cfg->node);
  snprintf(f->advertise, sizeof f->advertise, "%s", cfg->advertise);
  if (!f->uri || !f->node) goto no_memory;
  snprintf(f->lease, sizeof f->lease, "%.3f", cfg->lease_s);
  const char *const keys[] = {"connect_timeout", "tcp_user_timeout", "dbname", NULL};
  const char *const values[] = {"5", "10000", f->uri, NULL};
  f->conn = PQconnectdbParams(keys, values, 1);
  if (!f->conn) goto no_memory;
  if (PQstatus(f->conn) != CONNECTION_OK || !listen_channels(f->conn) || register_node(f)) {
    snprintf(err, err_len, "the fleet cannot register node %s: %s", f->node,
             PQerrorMessage(f->conn));
    free_fleet(f);
    return -EIO;
  }
  if (pthread_create(&f->thread, NULL, fleet_thread, f)) goto no_memory;
  pthread_setname_np(f->thread, "gpulab-fleet");
  log_info("fleet: node %s joined, epoch %" PRId64 ", lease %.1f s", f->node, f->epoch,
           cfg->lease_s);
  *out = f;
  return 0;
no_memory:
  snprintf(err, err_len, "out of memory");
  free_fleet(f);
  return -ENOMEM;
}

void fleet_advertise(struct fleet *f, const char *url) {
  pthread_mutex_lock(&f->advertise_lock);
  snprintf(f->advertise, sizeof f->advertise, "%s", url);
  pthread_mutex_unlock(&f->advertise_lock);
}

void fleet_drain(struct fleet *f) { atomic_store(&f->draining, true); }

void fleet_wake(struct fleet *f) {
  if (write(f->stop_pipe[1], "", 1) != 1) log_warn("fleet: cannot wake its thread");
}

void fleet_stop(struct fleet *f) {
  if (!f) return;
  atomic_store(&f->stopping, true);
  if (write(f->stop_pipe[1], "", 1) != 1) log_warn("fleet: cannot wake its thread to stop");
  pthread_join(f->thread, NULL);
  free_fleet(f);
}

const char *fleet_node(const struct fleet *f) { return f->node; }

int fleet_queued(struct fleet *f, struct fleet_queued *out, int max) {
  pthread_mutex_lock(&f->tick_lock);
  int n = f->n_queued < max ? f->n_queued : max;
  memcpy(out, f->queued, (size_t)n * sizeof *out);
  pthread_mutex_unlock(&f->tick_lock);
  return n;
}

int fleet_nodes(struct fleet *f, struct fleet_node *out, int max) {
  pthread_mutex_lock(&f->tick_lock);
  int n = 0;
  for (int i = 0; i < f->n_nodes && n < max; i++) {
    out[n] = f->nodes[i];
    if ((out[n].devices = strdup(f->nodes[i].devices))) n++;
  }
  pthread_mutex_unlock(&f->tick_lock);
  return n;
}

double fleet_lease_age(struct fleet *f) { return clock_mono_s() - atomic_load(&f->renewed_at); }

bool fleet_fenced(struct fleet *f) { return fleet_lease_age(f) > f->cfg.lease_s / 2; }
