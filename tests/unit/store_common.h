/* What the store's tests share (test_store.c: the API on both backends and PostgreSQL's
 * own cases; test_store_sqlite.c: SQLite's file alone): the database and its rows. */
#ifndef GPULAB_TEST_STORE_COMMON_H
#define GPULAB_TEST_STORE_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store/store.h"

/* The database: an SQLite file, or with $GPULAB_TEST_DB a PostgreSQL database. */
extern char db[512];

/* A suite's setup and teardown: a new database (test_db_make), dropped after. */
int store_db_setup(void);
void store_db_teardown(void);

struct store *open_store(void);
/* The record the store holds for id is want. */
void check_record(struct store *s, uint64_t id, const char *want);
/* A store whose store_sync commits (durability FULL: no accept journal), for the cases
 * about what a commit takes; test_journal has the journal's. */
struct store *open_committing_store(void);
/* Queues one job row, depending on the job parent (0: none), and returns its ticket. */
uint64_t put_job_after(struct store *s, uint64_t id, const char *state, double finished,
                       const char *record, bool create, uint64_t parent);
/* Queues one job row and returns its ticket. */
uint64_t put_job(struct store *s, uint64_t id, const char *state, double finished,
                 const char *record, bool create);

/* Callbacks of the store's listings, counting into these. */
extern int listed;
void count_listed(void *arg, uint64_t id, const char *record);
extern int unfinished_n;
extern uint64_t unfinished_ids[16];
void on_unfinished(void *arg, uint64_t id, const char *state, const void *request, size_t len);
extern int sweeps_n;
void on_sweep(void *arg, uint64_t id, const char *client, double created, const char *record);

/* A thread's store_flush (pthread_create's start): done once it returned. */
struct flusher {
  struct store *s;
  atomic_bool done;
};
void *flush_main(void *arg);

#endif
