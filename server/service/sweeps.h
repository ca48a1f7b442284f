/* Sweeps: a table of groups of jobs submitted together (POST /sweeps), each a
 * list of job ids and a description the HTTP layer wrote (its type, params and
 * axes, as JSON text this module never reads). The engine knows nothing of them:
 * a sweep's jobs are ordinary jobs. Ids are never handed out twice: they go on from
 * a first id (above a previous run's) and are reserved ahead through a callback
 * (the store keeps the mark). Thread-safe: one lock guards the table. */
#ifndef GPULAB_SWEEPS_H
#define GPULAB_SWEEPS_H

#include <stdint.h>

#define SWEEPS_KEPT_DEFAULT 1000
#define SWEEPS_IDS_BLOCK 64 /* ids reserved at a time */

struct sweeps;

/* A copy of one sweep, owned by the caller: free with sweep_copy_free. */
struct sweep_copy {
  uint64_t id;
  char client[64];
  double created_at; /* unix seconds */
  int n_jobs;
  uint64_t *jobs; /* ids, in the order of the sweep's points */
  char *desc;     /* the description, as given */
};

/* A table that keeps the newest max_kept sweeps (older ones are forgotten; their
 * jobs live on), with ids from first_id (0 means 1). reserve (may be NULL) is
 * called, under the table's lock, before an id past the last reserved is handed
 * out: ids from *next up to upto must be recorded as used (the block may be moved
 * forward, its length kept: engine_config.reserve_ids); it returns 0 or a negative
 * errno.
 * Returns 0 or -ENOMEM / -EINVAL. */
int sweeps_new(int max_kept, uint64_t first_id,
               int (*reserve)(void *arg, uint64_t *next, uint64_t upto), void *arg,
               struct sweeps **out);
void sweeps_free(struct sweeps *s); /* NULL is a no-op */

/* Adds a sweep of client over jobs[0..n_jobs) (n_jobs >= 1) described by desc
 * (copied, like jobs). Returns 0 and its id, or -ENOMEM / -EINVAL, or the reserve
 * callback's error (nothing added). */
int sweeps_add(struct sweeps *s, const char *client, const uint64_t *jobs, int n_jobs,
               const char *desc, double created_at, uint64_t *id);
/* Puts back a sweep of a previous run (c->id below first_id; c copied), in id
 * order, oldest first. Returns 0, -ENOMEM or -EINVAL (out of order). */
int sweeps_restore(struct sweeps *s, const struct sweep_copy *c);
/* Forgets sweep id (one whose record could not be written). 0 or -ENOENT. */
int sweeps_remove(struct sweeps *s, uint64_t id);
/* Copies sweep id into *out. Returns 0, -ENOENT (unknown or forgotten) or -ENOMEM. */
int sweeps_get(struct sweeps *s, uint64_t id, struct sweep_copy *out);
/* Newest first: up to max sweeps with ids below before_id (0: no bound) of client
 * (NULL: everyone's), copied into out. Returns how many, or -ENOMEM. */
int sweeps_list(struct sweeps *s, const char *client, uint64_t before_id, struct sweep_copy *out,
                int max);
uint64_t sweeps_next_id(struct sweeps *s);  /* the id the next sweep will get */
void sweep_copy_free(struct sweep_copy *c); /* zeroes it; safe twice */

#endif
