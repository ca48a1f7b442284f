/* The service: what the HTTP layer asks of the store and the fleet, with the answers a
 * route needs when there is neither (--db none, or one box). The routes call these,
 * never store.h or fleet.h themselves, so that what it takes for a job to be durable
 * (tickets, syncs, holds) is decided here and in durable.h, not in fifteen routes.
 *
 * The types named here (store_status, store_buffer_home, fleet_node, fleet_queued) are
 * the store's and the fleet's, handed on as they are. Every function is safe from any
 * thread; a NULL store or fleet answers as documented. Errors are negative errnos. */
#ifndef GPULAB_SERVICE_H
#define GPULAB_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/service/sweeps.h"
#include "server/store/fleet.h"
#include "server/store/store.h"

struct engine;
struct job_view;
struct sweeps;
struct ukernels;

/* What main made, borrowed by the HTTP layer for as long as it serves. */
struct service {
  struct engine *engine;
  struct store *store;       /* finished jobs beyond memory, and durability; NULL: --db none */
  struct fleet *fleet;       /* a PostgreSQL fleet's node; NULL: one box */
  struct sweeps *sweeps;     /* POST /sweeps' table (sweeps.h) */
  struct ukernels *ukernels; /* users' kernels (ukernels.h); NULL: none */
};

/* ---- durability: what an answer waits for ---- */

/* 0 while the store takes writes (or there is none); else its last write's errno:
 * ask before accepting anything. */
int service_writable(const struct service *s);
/* The store's status (store_status); false, and *out zeroed, without a store. */
bool service_store_status(const struct service *s, struct store_status *out);
/* The ticket of the last row this thread queued (store_ticket); 0 without a store. */
uint64_t service_ticket(const struct service *s);
/* Waits until ticket's row is durable (store_sync): 0, also without a store or for
 * ticket 0, or the failed write's errno. */
int service_sync(const struct service *s, uint64_t ticket);
/* ticket's job has a client waiting for its end (store_await); nothing without a store. */
void service_await(const struct service *s, uint64_t ticket);
/* Every row queued so far is written (store_flush), so that a read sees it. */
void service_flush(const struct service *s);
/* Rows queued between hold and release are written in one transaction (store_hold). */
void service_hold(const struct service *s);
void service_release(const struct service *s);

/* A job just accepted and not final, as its answer, its document built once for the
 * answer and its first row (durable_accepted_text). */
char *service_accepted_text(const struct service *s, const struct job_view *v, uint64_t ticket);

/* ---- what the store remembers beyond memory ---- */

/* The stored record of job id (JSON text, malloc'd), or NULL (none, or no store). */
char *service_job_record(const struct service *s, uint64_t id);
/* Stored jobs, newest first (store_list's arguments and fn). Returns how many, or
 * -ENOENT without a store: the caller lists what memory holds. */
int service_jobs_page(const struct service *s, uint64_t before_id, const char *state,
                      const char *type, const char *client, int limit,
                      void (*fn)(void *arg, uint64_t id, const char *record), void *arg);
/* DELETE of a job no engine here holds: durable_cancel's answers, -ENOENT without a store. */
int service_cancel_stored(const struct service *s, uint64_t id, const char *record,
                          json_t **canceled);
/* True when several gpulabd share the store (a fleet's PostgreSQL). */
bool service_shared(const struct service *s);
/* Where another live node of a fleet holds job id (its advertised URL): 0, or -ENOENT. */
int service_job_elsewhere(const struct service *s, uint64_t id, char *url, size_t url_len);
/* Which node made buffer id (store_buffer_elsewhere): 0, -EHOSTDOWN (its node died),
 * or -ENOENT (not a fleet's, or no node made it). */
int service_buffer_home(const struct service *s, uint64_t id, struct store_buffer_home *home);
/* A fleet's sweeps from every node, whichever made them (store_sweeps_page): up to
 * limit with ids below before_id (0: no bound), of client (NULL: everyone's), newest
 * first, into out (sweep_copy_free each). Returns how many, -ENOTSUP on one box (its
 * sweeps are all in its table), or -EIO. */
int service_sweeps_page(const struct service *s, uint64_t before_id, const char *client, int limit,
                        struct sweep_copy *out);
/* A sweep's row: its description and its jobs' ids, queued like a job's row (hold
 * it with them). 0 (also without a store), or -ENOMEM. */
int service_sweep_put(const struct service *s, uint64_t id, const char *client, double created,
                      json_t *desc, const uint64_t *job_ids, int n_jobs);

/* ---- a fleet's node ---- */

/* What a fleet's node says of itself and the fleet (fleet.h), for /health, /devices
 * and /metrics; false, and *out zeroed, on one box. */
struct service_fleet {
  const char *node; /* this node's name */
  bool fenced;      /* its lease is late: it starts no job */
  double lease_age_s;
  int n_queued; /* the fleet's queued jobs per node, as of the last lease tick */
  struct fleet_queued queued[FLEET_QUEUED_MAX];
};
bool service_fleet_status(const struct service *s, struct service_fleet *out);
/* The fleet's live nodes (fleet_nodes: free each devices); 0 on one box. */
int service_fleet_nodes(const struct service *s, struct fleet_node *out, int max);

#endif
