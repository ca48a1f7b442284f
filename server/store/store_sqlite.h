/* Private to the SQLite backend (store_sqlite.c: opening, writes, ids;
 * store_sqlite_query.c: reads and pruning; store_sqlite_kernels.c: the kernels' table; store_sqlite_problems.c: the problems';
 * store_sqlite_ckpt.c: the checkpoint thread): its connections and statements, behind
 * struct store's backend. */
#ifndef GPULAB_STORE_SQLITE_H
#define GPULAB_STORE_SQLITE_H

#include <sqlite3.h>

#include "server/store/store_priv.h"

/* WAL checkpoints (copying the WAL's pages into the database file, with an fsync of
 * each) run on a thread of the backend's own, with a connection of its own, so that
 * commits do not pay for them (but for one in a while: ckpt_main): a commit is made by
 * whichever thread needs it on disk, often an HTTP thread about to answer. The writing
 * connection's wal hook (which replaces SQLite's auto-checkpoint) counts the WAL's
 * frames and wakes the thread. lite_open starts it (a file database only: ":memory:"
 * has no WAL); lite_close stops it and closes its connection before the writing one,
 * whose close makes the last checkpoint. */
/* Both connections' VFS: SQLite's unix one, but the process takes an exclusive lock on
 * the database at its first read and keeps it, and the WAL's index lives in the heap
 * (no -shm file): a commit takes no file lock (six fcntl calls a commit in the default
 * unix VFS, as measured with strace), while the checkpoint thread's connection, in
 * the same process, still works beside the writing one. Another process cannot read
 * the database meanwhile (lock_file's message says who has it). */
#define LITE_VFS "unix-excl"

struct lite_ckpt {
  sqlite3 *db; /* the thread's: checkpoints only, never a read or a write */
  pthread_t thread;
  bool started;
  pthread_mutex_t lock; /* guards what follows; the wal hook takes it under s->lock */
  pthread_cond_t wake;
  bool stopping;
  int frames;            /* in the WAL after the last commit */
  int threshold, limit;  /* frames that wake the thread; its hard limit (lite_limit_locked) */
  int next, hard;        /* the frames that wake it next, that make it take s->lock (ckpt_main) */
  bool unlocked_running; /* the thread's checkpoint without s->lock is under way */
  pthread_cond_t unlocked_done;
};

struct lite {
  sqlite3 *db; /* the writing connection: every read and write, under s->lock */
  sqlite3_stmt *put, *update, *put_sweep, *get, *set_meta, *get_meta;
  sqlite3_stmt *begin, *commit; /* prepared once: sqlite3_exec compiles them per batch */
  int lock_fd; /* <db>-lock, flock()ed while open: one gpulabd per database; -1 none */
  /* During a prune, the jobs the accept journal may hold an entry of (sorted): SQL's
   * journal_holds(id), lite_journal_holds. */
  const uint64_t *held;
  size_t n_held;
  struct lite_ckpt ckpt;
};

static inline struct lite *lite_of(struct store *s) { return (struct lite *)s->backend; }

/* store_sqlite_errno.c: the negative errno for a failed SQLite call rc (store.h's list). */
int lite_errno(sqlite3 *db, int rc);

/* store_sqlite_query.c: */
/* A one-number PRAGMA or query; the database lock is held. -1 on error. */
int64_t lite_query_int(sqlite3 *db, const char *sql);
uint64_t lite_used_bytes_locked(struct store *s, bool fresh);
/* The span of the jobs' ids that a prune plans from (lite_id_span_locked): the largest
 * and the smallest id, each a seek down the table's b-tree. Two subqueries, not
 * MAX(id) - MIN(id) over one SELECT: SQLite seeks for a min() or a max() only when it
 * is the query's one aggregate, and read every row of the table for both (every page
 * of the store, at every plan of a prune). */
#define LITE_ID_SPAN_SQL \
  "SELECT COALESCE((SELECT MAX(id) FROM jobs) - (SELECT MIN(id) FROM jobs) + 1, 0)"
int64_t lite_id_span_locked(struct store *s);
int lite_delete_oldest_locked(struct store *s, uint64_t n);
void lite_after_prune_locked(struct store *s);
void lite_limit_locked(struct store *s, uint64_t max_bytes);
uint64_t lite_ids_floor_locked(struct store *s, const char *name);
char *lite_record(struct store *s, uint64_t id);
int lite_list(struct store *s, uint64_t before_id, const char *state, const char *type,
              const char *client, int limit, void (*fn)(void *arg, uint64_t id, const char *record),
              void *arg);
int lite_unfinished(struct store *s,
                    void (*fn)(void *arg, uint64_t id, const char *state, const void *request,
                               size_t request_len),
                    void *arg);
uint64_t lite_max_id(struct store *s, const char *table);
int lite_sweeps(struct store *s, int limit,
                void (*fn)(void *arg, uint64_t id, const char *client, double created,
                           const char *record),
                void *arg);
int lite_prune(struct store *s, double before);
/* SQL's journal_holds(id): whether id is among lite.held (the connection's user data). */
void lite_journal_holds(sqlite3_context *ctx, int argc, sqlite3_value **argv);

/* store_sqlite_ckpt.c: */
/* Opens the thread's connection to path (the writing one's file), hooks the writing
 * connection and starts the thread. 0, or a negative errno with why. */
int lite_ckpt_start(struct store *s, const char *path, char *why, size_t why_len);
/* Stops the thread and closes its connection; a no-op if it never started. */
void lite_ckpt_stop(struct lite *l);
/* The WAL's frames that wake the thread, and those past which commits wait for it. */
void lite_ckpt_threshold(struct lite *l, int frames, int limit);

/* store_sqlite_kernels.c: */
int lite_kernel_insert(struct store *s, const struct store_kernel *k, int64_t *id, int *version);
int lite_kernel_get(struct store *s, int64_t id, struct store_kernel *out);
int lite_kernel_delete(struct store *s, int64_t id);
int lite_kernel_drop(struct store *s, int64_t kernel_id);
int lite_kernel_list(struct store *s, const char *owner, const char *experiment,
                     void (*fn)(void *arg, const struct store_kernel *k), void *arg);
int lite_kernel_versions(struct store *s, int64_t kernel_id,
                         void (*fn)(void *arg, const struct store_kernel *k), void *arg);
int lite_kernel_named(struct store *s, const char *owner, const char *experiment, const char *name,
                      int64_t *ids, int max);
/* Brings an older database's kernels' table to versions (kernel_of, version); its rows
 * become version 1 of themselves. 0 or SQLite's error code (*msg: sqlite3_free it). */
int lite_kernels_upgrade(sqlite3 *db, char **msg);
int lite_kernel_count(struct store *s, const char *owner, int *n, size_t *source_bytes);

/* store_sqlite_problems.c: */
int lite_problem_insert(struct store *s, const struct store_problem *p, int64_t *id, int *version);
int lite_problem_get(struct store *s, const char *name, int version, struct store_problem *out);
int lite_problem_each(struct store *s, const char *name,
                      void (*fn)(void *arg, const struct store_problem *p), void *arg);
int lite_problem_delete(struct store *s, const char *name);

#endif
