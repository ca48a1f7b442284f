/* Private to the store (store.c: opening, the writer, writes; store_query.c: reads,
 * pruning and the size bound): its structure. */
#ifndef GPULAB_STORE_PRIV_H
#define GPULAB_STORE_PRIV_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/store/store.h"

/* A row waiting for the writer: one allocation, its strings and request after it. */
struct queued_row {
  struct queued_row *next;
  struct store_row row;
  bool replaced; /* a later row of the same job took its place: not written */
  char *made;    /* row.make_record's text, once made (freed with the row) */
};

/* Tickets (rows, numbered in queue order) of a transaction that failed. */
struct failed_range {
  uint64_t from, to;
  int error;
};
#define FAILED_RANGES 32

/* Rows are queued and written many to a transaction (group commit) by the writer
 * thread, or by a store_flush caller, so that the engine, which records under its
 * lock, never waits for SQLite. */
struct store {
  sqlite3 *db;
  pthread_mutex_t lock; /* the database: the writer's batches and every read */
  sqlite3_stmt *put, *update, *put_sweep, *get, *set_meta, *get_meta;

  pthread_mutex_t queue_lock;    /* guards the fields below */
  pthread_cond_t queue_ready;    /* rows queued, or closing: the writer */
  pthread_cond_t committed_cond; /* a batch written or failed: store_flush's waiters */
  struct queued_row *head, **tail;
  uint64_t queued, committed; /* rows ever queued, and written or failed (in order) */
  bool writing;               /* a batch is being written (by one thread at a time) */
  bool writer_idle;           /* the writer sleeps until a row is queued (queue_ready) */
  int holds;                  /* store_hold: no batch is taken while > 0 */
  bool closing, writer_started;
  pthread_t writer;
  /* What failed, for store_sync and store_status: */
  struct failed_range failed[FAILED_RANGES]; /* a ring; failed[n_failed % N] is next */
  uint64_t n_failed;
  bool writable;
  double retry_at; /* a failing store takes writes again after a success past this */
  int error;
  char message[200];
  uint64_t write_errors;
  /* --max-db-bytes (store_limit), under the database lock: */
  uint64_t max_bytes, written_since_check, pruned_jobs;
  atomic_bool over_limit; /* pruned all it could and is still over */
};

/* store.c: */
/* The negative errno for a failed SQLite call rc (store.h's list). */
int store_errno(sqlite3 *db, int rc);
/* Notes the outcome of a write of tickets from..to (none for a write of its own, from >
 * to): a failure makes the store refuse new work (store_check) until a write succeeds
 * again, a second later at the earliest. queue_lock held. */
void store_note_write_locked(struct store *s, uint64_t from, uint64_t to, int err, const char *why);
/* The same for a write made outside the batches (store_ids_reserve, the kernels
 * table), taking queue_lock. */
void store_note_write(struct store *s, int err, const char *why);

/* store_query.c: */
/* Takes the database (s->lock) for a read that sees every row queued before it. */
void store_lock_for_read(struct store *s);
/* A one-number PRAGMA or query; the database lock is held. -1 on error. */
int64_t store_query_int(sqlite3 *db, const char *sql);
/* The bytes of the database's pages in use; the database lock is held. */
uint64_t store_used_bytes_locked(struct store *s);
/* Past max_bytes: prunes the oldest finished jobs (store_limit). The database lock
 * is held, outside a transaction. */
void store_keep_within_locked(struct store *s);

#endif
