/* Private to the store. store.c is the part both backends share: the row queue, the
 * writer thread and its group commit, tickets, holds, failed ranges, store_check's
 * retry and the size bound's pruning loop. What speaks SQL is a backend behind
 * struct store_ops: store_sqlite*.c (SQLite) and store_pg*.c (PostgreSQL, libpq). */
#ifndef GPULAB_STORE_PRIV_H
#define GPULAB_STORE_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/lock_wait.h"
#include "server/store/store.h"

/* A row waiting for the writer: one allocation, its strings and request after it. */
struct queued_row {
  struct queued_row *next, *prev; /* in the queue (prev: there only), or in a batch */
  struct queued_row *ticket_next; /* in its by_ticket bucket, queued or in a batch */
  struct queued_row *job_next;    /* in its by_job bucket, while queued */
  struct store_row row;
  uint64_t ticket;                /* its number in queue order (store_ticket) */
  bool wanted;                    /* written by the next batch: store_sync waits for it */
  bool awaited;                   /* its job's client waits for its end (store_await) */
  double queued_at;               /* when it was queued, CLOCK_MONOTONIC seconds */
  struct queued_row *absorbed;    /* the earlier row of its job it replaced (its row points
                                   into it): not written, freed with it */
  struct queued_row *replaced_by; /* for a replaced row: the row that took its place */
  bool in_batch;                  /* taken for writing: left the queue */
  char *made;                     /* row.make_record's text, once made (freed with the row) */
  bool held;                      /* queued inside store_hold: never journaled alone */
  int8_t journal_gen;             /* in the accept journal's file 0 or 1 (journal.h); else
                                     JOURNAL_NONE, or JOURNAL_WRITING while a syncer writes it */
};

#define JOURNAL_NONE (-1)
#define JOURNAL_WRITING (-2)

/* Tickets (rows, numbered in queue order) of a transaction that failed. */
struct failed_range {
  uint64_t from, to;
  int error;
};
#define FAILED_RANGES 256

/* Buckets of the queue's two indexes (struct store): a lookup by ticket or job id is
 * a short chain, not a walk of the queue, which other threads' rows wait behind. */
#define INDEX_BUCKETS 4096

/* A backend. "Locked" entries are called with the database lock (s->lock) held; the
 * others take it themselves (the reads through store_lock_for_read, so that they see
 * every row queued before them). Errors are store.h's negative errnos, with the
 * database's words in why where there is one. */
struct store_ops {
  const char *name; /* "sqlite", "postgresql": /health and /metrics show it */
  bool shared;      /* several gpulabd may read and write it (store_shared) */
  /* Opens where (a path, or a URI) into s->backend and makes one write; nothing is
   * started. On failure close is still called. */
  int (*open)(struct store *s, const char *where, char *why, size_t why_len);
  void (*close)(struct store *s); /* frees s->backend; NULL backend is a no-op */
  /* Writes batch in one transaction, all or nothing. Locked. */
  int (*write_batch_locked)(struct store *s, const struct queued_row *batch, char *why,
                            size_t why_len);
  /* A failing store's small write of its own. Locked. */
  int (*probe_locked)(struct store *s, char *why, size_t why_len);
  /* The size bound (store_limit): bytes the jobs hold (fresh: measured now, for the
   * bound; else a recent measure will do, for store_status), the span of the jobs' ids
   * (largest - smallest + 1: their count or a little more, read from the index where a
   * COUNT(*) would read the table), and a delete of the n oldest finished (how many
   * went, or a negative errno). Locked. */
  uint64_t (*used_bytes_locked)(struct store *s, bool fresh);
  /* The bytes measured now, never estimated: what refusing new jobs rests on (NULL:
   * used_bytes_locked never estimates). Locked. */
  uint64_t (*used_bytes_exact_locked)(struct store *s);
  int64_t (*id_span_locked)(struct store *s);
  int (*delete_oldest_locked)(struct store *s, uint64_t n);
  /* After pruning (SQLite: freed pages back to the file system); may be NULL. Locked. */
  void (*after_prune_locked)(struct store *s);
  /* store_limit's bound given to the backend (SQLite: the WAL's size); may be NULL.
   * Locked. */
  void (*limit_locked)(struct store *s, uint64_t max_bytes);
  uint64_t (*file_bytes_locked)(struct store *s); /* on disk: the file and WAL, or the tables */
  const char *(*durability_locked)(struct store *s);
  int (*set_durability_locked)(struct store *s, enum store_durability d);
  /* The database's file, whose accept journal (journal.h) stands beside it, and the
   * journal's entries applied to it at open (journal_read's rows: a job's first row
   * only where it has none, a later one only where the job has not finished), in one
   * transaction. NULL journal_base (PostgreSQL: other nodes read its rows at once,
   * so a row must be in the database before an answer), or one that returns NULL
   * (":memory:"): no journal. Locked. */
  const char *(*journal_base_locked)(struct store *s);
  int (*replay_locked)(struct store *s, const char *base, char *why, size_t why_len);
  /* store_ids_take's write (from NULL: store_ids_reserve's, the block never moved),
   * and store_ids_floor's read. Locked. */
  int (*ids_reserve_locked)(struct store *s, const char *name, uint64_t *from, uint64_t upto,
                            char *why, size_t why_len);
  uint64_t (*ids_floor_locked)(struct store *s, const char *name);

  /* store.h's reads and the kernels' table, as there. */
  char *(*record)(struct store *s, uint64_t id);
  int (*list)(struct store *s, uint64_t before_id, const char *state, const char *type,
              const char *client, int limit, void (*fn)(void *arg, uint64_t id, const char *record),
              void *arg);
  int (*unfinished)(struct store *s,
                    void (*fn)(void *arg, uint64_t id, const char *state, const void *request,
                               size_t request_len),
                    void *arg);
  /* store_job_cancel, store_job_held, store_job_elsewhere; NULL (SQLite): every
   * unfinished job is in memory, and its own. */
  int (*cancel)(struct store *s, uint64_t id, const char *canceled_record);
  bool (*held)(struct store *s, uint64_t id);
  int (*elsewhere)(struct store *s, uint64_t id, char *url, size_t url_len);
  /* store_buffer_elsewhere and store_buffers_forget. NULL (SQLite): one box has no
   * fleet, so no node asks where a buffer is; store_buffer_put then queues nothing,
   * and the backend's batches hold no STORE_BUFFERS rows. */
  int (*buffer_elsewhere)(struct store *s, uint64_t id, struct store_buffer_home *home);
  int (*buffers_forget)(struct store *s);
  uint64_t (*max_id)(struct store *s, const char *table); /* "jobs" or "sweeps" */
  int (*sweeps)(struct store *s, int limit,
                void (*fn)(void *arg, uint64_t id, const char *client, double created,
                           const char *record),
                void *arg);
  /* NULL on SQLite (store_sweeps_page). */
  int (*sweeps_page)(struct store *s, uint64_t before_id, const char *client, int limit,
                     void (*fn)(void *arg, uint64_t id, const char *client, double created,
                                const char *record),
                     void *arg);
  int (*prune)(struct store *s, double before);
  int (*kernel_insert)(struct store *s, const struct store_kernel *k, int64_t *id, int *version);
  int (*kernel_get)(struct store *s, int64_t id, struct store_kernel *out);
  int (*kernel_delete)(struct store *s, int64_t id);
  int (*kernel_drop)(struct store *s, int64_t kernel_id);
  int (*kernel_list)(struct store *s, const char *owner, const char *experiment,
                     void (*fn)(void *arg, const struct store_kernel *k), void *arg);
  int (*kernel_versions)(struct store *s, int64_t kernel_id,
                         void (*fn)(void *arg, const struct store_kernel *k), void *arg);
  int (*kernel_named)(struct store *s, const char *owner, const char *experiment, const char *name,
                      int64_t *ids, int max);
  int (*kernel_count)(struct store *s, const char *owner, int *n, size_t *source_bytes);
  int (*problem_insert)(struct store *s, const struct store_problem *p, int64_t *id, int *version);
  int (*problem_get)(struct store *s, const char *name, int version, struct store_problem *out);
  int (*problem_each)(struct store *s, const char *name,
                      void (*fn)(void *arg, const struct store_problem *p), void *arg);
  int (*problem_delete)(struct store *s, const char *name);
};

extern const struct store_ops store_sqlite_ops; /* store_sqlite.c */
extern const struct store_ops store_pg_ops;     /* store_pg.c */

/* Rows are queued and written many to a transaction (group commit), so that the
 * engine, which records under its lock, never waits for the database: by a store_sync
 * caller (the rows waited for, wanted, and those that have gathered gather_ms), by a
 * store_flush caller (all), or by the writer thread (those that have gathered). A
 * row nobody waits for is not written before it has gathered, and a short job's rows
 * meet in the queue meanwhile: one write. */
struct store {
  const struct store_ops *ops;
  void *backend;        /* the backend's own (its connection, statements) */
  char node[64];        /* store_set_node: written on the jobs rows created; "" none */
  pthread_mutex_t lock; /* the database: the writer's batches and every read */

  /* Guards the fields below. Taken alone, or under the database lock (never the other
   * way round): a prune reads the journal's held ids (store_journal_held_locked). */
  pthread_mutex_t queue_lock;
  pthread_cond_t queue_ready;     /* rows queued, or closing: the writer */
  pthread_cond_t committed_cond;  /* a batch written or failed: store_flush's waiters */
  struct queued_row *head, *last; /* in ticket order */
  struct queued_row *inflight;    /* the batch being written, NULL if none */
  /* Every ticket queued or in the batch being written (replaced rows' too), and the
   * queued row of each job: chains through ticket_next and job_next. */
  struct queued_row *by_ticket[INDEX_BUCKETS], *by_job[INDEX_BUCKETS];
  uint64_t queued;  /* rows ever queued: the last ticket */
  bool writing;     /* a batch is being written (by one thread at a time) */
  int gather_ms;    /* store_set_gather_ms */
  int awaited_ms;   /* store_set_gather_ms */
  bool writer_idle; /* the writer sleeps until a row is queued (queue_ready) */
  int holds;        /* store_hold: no batch is taken while > 0 */
  bool closing, writer_started;
  pthread_t writer;
  /* What failed, for store_sync and store_status: */
  struct failed_range failed[FAILED_RANGES]; /* a ring; failed[n_failed % N] is next */
  uint64_t n_failed;
  uint64_t failed_forgotten; /* the last ticket of a range the ring dropped (0: none) */
  bool writable;
  double retry_at; /* a failing store takes writes again after a success past this */
  int error;
  char message[200];
  uint64_t write_errors;
  /* For store_status: rows in committed transactions, those transactions, and the
   * store_sync calls that found their row unwritten and how long they waited. */
  uint64_t rows_written, commits, syncs_waited, rows_journaled;
  double sync_wait_s, commit_s;       /* commit_s: writing batches, their records made */
  struct lock_waits queue_lock_waits; /* queue_lock's (store.c's queue_lock) */
  /* The accept journal (journal.h; queue_lock): NULL without one (PostgreSQL, a
   * memory database, durability FULL); off (no more entries, what it has kept) after
   * a batch holding journaled rows failed: they are applied at the next start. */
  struct journal *journal;
  bool journal_off;
  int journal_users; /* threads writing to it outside queue_lock: it stays open meanwhile */
  /* --max-db-bytes (store_limit), under the database lock: */
  uint64_t max_bytes, written_since_check, pruned_jobs;
  uint64_t bytes_written; /* committed rows' bytes as sent, since start (PostgreSQL's estimate) */
  /* A prune under way (store_prune_step_locked): jobs still to delete, pruned_jobs
   * when it began, and its passes (a plan, its deletes, a measure). */
  uint64_t prune_left, prune_first;
  int prune_passes;
  atomic_bool over_limit; /* pruned all it could and is still over */
  /* queue_lock: the writer thread owes the prune a turn (a commit passed the check, or
   * a prune is under way), of at most prune_owed jobs; prune_turn: it comes before the
   * next batch, which store_sync callers leave to the writer thread until then. */
  bool prune_due, prune_turn;
  uint64_t prune_owed;
};

/* store.c and store_queue.c: */
/* Takes queue_lock, counting the waits for it (store_status). */
void store_queue_lock(struct store *s);
/* The writer thread (store_open starts it): commits gathered rows until store_close. */
void *store_writer_main(void *arg);
/* Notes the outcome of a write (a batch's, or one of its own): a failure makes the
 * store refuse new work (store_check) until a write succeeds again, a second later at
 * the earliest, and wakes the writer thread to probe meanwhile. queue_lock held. */
void store_note_write_locked(struct store *s, int err, const char *why);
/* The same for a write made outside the batches (store_ids_reserve, the kernels
 * table), taking queue_lock. */
void store_note_write(struct store *s, int err, const char *why);
/* Takes the database (s->lock) for a read that sees every row queued before it. */
void store_lock_for_read(struct store *s);
/* One step of keeping within max_bytes: past it (or while a prune is under way),
 * deletes at most chunk of the oldest finished jobs, in one transaction, towards 90%
 * of it. Returns whether the prune goes on (another step is owed). The database lock
 * is held, outside a transaction. */
bool store_prune_step_locked(struct store *s, uint64_t chunk);
/* For a prune, under the database lock: the jobs the accept journal may hold an entry
 * of (journal_held_ids; none without a journal). 0, or -ENOMEM: prune nothing. */
int store_journal_held_locked(struct store *s, uint64_t **ids, size_t *n);

#endif
