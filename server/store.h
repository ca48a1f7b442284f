/* Durable job records in SQLite (WAL): every accepted job, every change of state,
 * and a finished job's whole record (as GET /jobs/{id} shows it). The HTTP layer
 * calls store_flush before it answers about a job, so what a client was told is on
 * disk. After a crash or a restart gpulabd reads the jobs that
 * had not finished back from here. One gpulabd per database: the file is locked.
 * Calls are serialized inside; safe from any thread. */
#ifndef GPULAB_STORE_H
#define GPULAB_STORE_H

#include <stddef.h>
#include <stdint.h>

struct store;

/* One job's row. request is opaque bytes (what it takes to run the job again). */
struct store_row {
  uint64_t id;
  const char *client, *type, *state;
  double created, finished; /* unix seconds; 0 = not yet */
  const void *request;
  size_t request_len;
  const char *record; /* the job as JSON text, or NULL to keep the stored one */
};

/* Opens (creating) path; ":memory:" keeps nothing. Returns 0, or -1 with err. */
int store_open(const char *path, struct store **out, char *err, size_t err_len);
void store_close(struct store *s); /* NULL is a no-op */

/* Queues row (copied) to be inserted or updated by the store's writer thread, which
 * commits what is queued in one transaction. Never waits for SQLite. Returns 0 or -1
 * (out of memory; logged). Write errors are logged by the writer. */
int store_put(struct store *s, const struct store_row *row);

/* Waits until every row queued before this call is committed. Reads below do this
 * first, so they see every earlier store_put. */
void store_flush(struct store *s);

/* The stored record (JSON text, malloc'd: the caller frees it), or NULL. */
char *store_record(struct store *s, uint64_t id);

/* Records of jobs with ids below before_id (0: any), newest first, matching the
 * filters (NULL: any), at most limit: fn(arg, id, record) for each. Returns how many. */
int store_list(struct store *s, uint64_t before_id, const char *state, const char *type,
               const char *client, int limit, void (*fn)(void *arg, uint64_t id, const char *record),
               void *arg);

/* Every job not finished (queued, waiting, running), oldest first:
 * fn(arg, id, state, request, request_len). Returns how many, or -1. */
int store_unfinished(struct store *s,
                     void (*fn)(void *arg, uint64_t id, const char *state, const void *request,
                                size_t request_len),
                     void *arg);

uint64_t store_max_id(struct store *s); /* 0 when empty */

/* Deletes finished jobs that finished before unix time `before`. Returns how many. */
int store_prune(struct store *s, double before);

#endif
