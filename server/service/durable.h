/* The engine's jobs kept in the store (store.h): every accepted job and change of
 * state is written, and at start-up what had not finished runs again; and the sweeps'
 * table (sweeps.h) with the sweeps the store kept. The glue between engine.h, sweeps.h
 * and store.h, so that none knows another. */
#ifndef GPULAB_DURABLE_H
#define GPULAB_DURABLE_H

#include <jansson.h>

#include "server/engine/engine.h"
#include "server/service/sweeps.h"
#include "server/store/fleet.h"
#include "server/store/store.h"

/* engine_config.on_job_change with the store as its arg: queues the job's row (its
 * request, state and record as GET /jobs/{id} shows it): created by its first
 * change, updated (never created) by the later ones. out gets the row's ticket and,
 * for a final state, the record's text (malloc'd: the engine's from then on). */
void durable_record(void *store, const struct job_view *view, const struct engine_job_request *req,
                    bool first, struct engine_recorded *out);

/* engine_config.on_buffer_change with the store as its arg: where the buffer lives,
 * for a fleet's other nodes (store_buffer_put; SQLite: nothing, ticket 0). */
uint64_t durable_buffer(void *store, uint64_t id, const char *client, double created_at,
                        bool listed);

/* A job just accepted and not final, as its answer (job_json(v, true): JSON text,
 * malloc'd, the caller's; NULL when out of memory), v its view as accepted, ticket its
 * first row's (store_ticket). The same text less "result": null is the record that row
 * would make when written (job_json(v, false)): given to it (store_give_record) while
 * it waits in store s's queue, so the document is built once for both. s NULL: the
 * answer alone. */
char *durable_accepted_text(struct store *s, const struct job_view *v, uint64_t ticket);

/* DELETE of a job no engine here holds (a fleet's other node's, or no node's yet):
 * store_job_cancel with the canceled record made from record (its stored one, JSON
 * text), and its answer: 0 canceled in the store (*canceled, when not NULL: that
 * record, a new reference), 1 left to the node that holds it, -EALREADY (finished),
 * -ENOENT, or a write's negative errno. */
int durable_cancel(struct store *s, uint64_t id, const char *record, json_t **canceled);

/* engine_config.reserve_ids with the store as its arg: records the mark in the
 * store's "jobs" or "buffers" sequence (store_ids_take: on PostgreSQL the block moves
 * past ids another gpulabd took). A full disk or a file size limit is -ENOSPC (the
 * engine's -EFBIG means a job too large for a device). */
int durable_reserve_ids(void *store, enum engine_ids kind, uint64_t *next, uint64_t upto);
/* Where this run's ids start: above every stored job and every id a previous run
 * reserved (it may have handed them out before a crash). */
void durable_first_ids(struct store *s, uint64_t *job, uint64_t *buffer);
/* At a clean stop: the marks go back to the last ids handed out, so that the next
 * run goes on from there without a gap (after a crash it starts past the marks). */
void durable_release_ids(struct engine *e, struct store *s);

struct durable_recovery {
  int rerun;       /* queued or waiting jobs submitted again under their ids */
  int interrupted; /* running ones, or ones whose inputs lived in memory: failed */
};
/* After a restart: queued and waiting jobs run again under their ids, with their
 * inputs if those were generated (buffers and other jobs' outputs did not survive:
 * those fail `interrupted`, with the reason); running ones fail `interrupted` (not
 * run again: they may be what stopped gpulabd). Call before serving. Returns how
 * many unfinished jobs the store held, or -1. */
int durable_recover(struct engine *e, struct store *s, struct durable_recovery *out);

/* A fleet's node (fleet.h) running what it claims on engine: durable_fleet_bind sets
 * cfg's callbacks and arg to df, which must outlive the fleet. A claimed job runs as
 * a recovered one (durable_recover); a backlog goes back to the queue
 * (engine_jobs_release); when the node is taken over, every job of the engine is
 * canceled. Other nodes' jobs' state changes are published on the engine's event
 * bus, with their node (this node's own the engine published already). */
struct durable_fleet {
  struct engine *engine;
  struct store *store;
  int lanes; /* jobs the node runs at once: it claims while fewer than twice as many are
                queued or running, and hands back to the queue what is queued past it */
  struct durable_recovery claimed; /* claimed jobs run, and failed at once */
  char node[64];                   /* this node's name (set by durable_fleet_bind) */
};
void durable_fleet_bind(struct durable_fleet *df, struct fleet_config *cfg);

/* The sweeps' table, with the sweeps store kept (NULL: none) and ids past every
 * earlier one, into *out: 0 or a negative errno. durable_sweeps_close puts the store's
 * id mark back to the last id handed out and frees the table (NULL: a no-op). */
int durable_sweeps_open(struct store *store, struct sweeps **out);
void durable_sweeps_close(struct store *store, struct sweeps *sweeps);
/* A sweep as the store keeps it (store_sweeps' or store_sweeps_page's fields) into
 * *out (sweep_copy_free it): 0, or -ENOMEM (out zeroed). */
int durable_sweep_read(uint64_t id, const char *client, double created, const char *record,
                       struct sweep_copy *out);

#endif
