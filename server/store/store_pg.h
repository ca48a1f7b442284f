/* Private to the PostgreSQL backend (store_pg.c: connecting, the schema, writes, ids;
 * store_pg_query.c: reads, pruning and the kernels' table): its connection, behind
 * struct store's backend. Every call on the connection holds the database lock. */
#ifndef GPULAB_STORE_PG_H
#define GPULAB_STORE_PG_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "server/store/store_priv.h"

#define PG_ID_SEQUENCES 4 /* "jobs", "buffers", "sweeps", and one spare */

struct pg {
  PGconn *conn;
  bool sync_off; /* --durability normal: synchronous_commit=off, set again on reconnect */
  /* The last measures (a scan of jobs, and the tables' sizes): not taken again more
   * than every few seconds, nor while the server is away. used_bytes is an estimate
   * between scans: the rows this node wrote since are added (store.c's bytes_written,
   * of which written_seen were), those it deleted taken away (pg_used_bytes_locked). */
  uint64_t used_bytes, file_bytes, written_seen;
  double used_at, file_at; /* CLOCK_MONOTONIC seconds; 0: never */
  /* The id marks this gpulabd first read (store_ids_floor, at start-up) or last set
   * (store_ids_reserve, store_ids_take): a reserve moves the stored mark only from
   * there, so that two gpulabd on one database never take the same ids. */
  struct pg_ids {
    char name[16];
    bool set; /* mark holds a value */
    uint64_t mark;
  } ids[PG_ID_SEQUENCES];
};

static inline struct pg *pg_of(struct store *s) { return (struct pg *)s->backend; }

/* store_pg.c: */
/* A statement with text parameters (values[i] NULL for SQL NULL; binary[i] > 0: bytes
 * of a bytea given as they are), on a connection made again first if it was lost.
 * Returns the result (PQclear it) when its status is a success, else NULL with *err
 * (a negative errno: pg_errno) and why. The database lock is held. */
PGresult *pg_exec(struct store *s, const char *sql, int n, const char *const *values,
                  const int *binary, int *err, char *why, size_t why_len);
/* The same for a read whose failure is only logged: NULL on failure. */
PGresult *pg_read(struct store *s, const char *sql, int n, const char *const *values);
/* Column c of row r as a malloc'd string, or as the bytes of a bytea. */
char *pg_dup(const PGresult *res, int r, int c);
void *pg_bytes(const PGresult *res, int r, int c, size_t *len);

/* store_pg_query.c: */
uint64_t pg_used_bytes_locked(struct store *s, bool fresh);
uint64_t pg_used_bytes_exact_locked(struct store *s); /* a scan now, whatever the estimate */
uint64_t pg_file_bytes_locked(struct store *s);
int64_t pg_id_span_locked(struct store *s);
int pg_delete_oldest_locked(struct store *s, uint64_t n);
char *pg_record(struct store *s, uint64_t id);
int pg_list(struct store *s, uint64_t before_id, const char *state, const char *type,
            const char *client, int limit, void (*fn)(void *arg, uint64_t id, const char *record),
            void *arg);
int pg_unfinished(struct store *s,
                  void (*fn)(void *arg, uint64_t id, const char *state, const void *request,
                             size_t request_len),
                  void *arg);
int pg_cancel(struct store *s, uint64_t id, const char *canceled_record);
bool pg_held(struct store *s, uint64_t id);
int pg_elsewhere(struct store *s, uint64_t id, char *url, size_t url_len);
int pg_buffer_elsewhere(struct store *s, uint64_t id, struct store_buffer_home *home);
int pg_buffers_forget(struct store *s);
uint64_t pg_max_id(struct store *s, const char *table);
int pg_sweeps(struct store *s, int limit,
              void (*fn)(void *arg, uint64_t id, const char *client, double created,
                         const char *record),
              void *arg);
int pg_sweeps_page(struct store *s, uint64_t before_id, const char *client, int limit,
                   void (*fn)(void *arg, uint64_t id, const char *client, double created,
                              const char *record),
                   void *arg);
int pg_prune(struct store *s, double before);
int pg_kernel_insert(struct store *s, const struct store_kernel *k, int64_t *id, int *version);
int pg_kernel_get(struct store *s, int64_t id, struct store_kernel *out);
int pg_kernel_delete(struct store *s, int64_t id);
int pg_kernel_drop(struct store *s, int64_t kernel_id);
int pg_kernel_list(struct store *s, const char *owner, const char *experiment,
                   void (*fn)(void *arg, const struct store_kernel *k), void *arg);
int pg_kernel_versions(struct store *s, int64_t kernel_id,
                       void (*fn)(void *arg, const struct store_kernel *k), void *arg);
int pg_kernel_named(struct store *s, const char *owner, const char *experiment, const char *name,
                    int64_t *ids, int max);
int pg_kernel_count(struct store *s, const char *owner, int *n, size_t *source_bytes);
/* store_pg_problems.c: */
int pg_problem_insert(struct store *s, const struct store_problem *p, int64_t *id, int *version);
int pg_problem_get(struct store *s, const char *name, int version, struct store_problem *out);
int pg_problem_each(struct store *s, const char *name,
                    void (*fn)(void *arg, const struct store_problem *p), void *arg);
int pg_problem_delete(struct store *s, const char *name);

#endif
