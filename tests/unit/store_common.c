/* The store tests' database and rows (store_common.h). */
#include "store_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_db.h"
#include "tests/check.h"

char db[512];

struct store *open_store(void) {
  struct store *s = NULL;
  char err[512];
  int rc = store_open(db, &s, err, sizeof err);
  if (rc) CHECK_FAIL_("store_open(%s): %d %s", db, rc, err);
  return s;
}

/* The record the store holds for id is want. */
void check_record(struct store *s, uint64_t id, const char *want) {
  char *r = store_record(s, id);
  CHECK_STR_EQ(r, want);
  free(r);
}

/* A store whose store_sync commits (durability FULL: no accept journal), for the cases
 * about what a commit takes; test_journal has the journal's. */
struct store *open_committing_store(void) {
  struct store *s = open_store();
  CHECK_INT_EQ(store_set_durability(s, STORE_DURABILITY_FULL), 0);
  return s;
}

/* Queues one job row, depending on the job parent (0: none), and returns its ticket. */
uint64_t put_job_after(struct store *s, uint64_t id, const char *state, double finished,
                       const char *record, bool create, uint64_t parent) {
  unsigned char request[40];
  for (size_t i = 0; i < sizeof request; i++)
    request[i] = (unsigned char)(i * 37 + id); /* 0s too */
  struct store_row row = {.table = STORE_JOBS,
                          .id = id,
                          .client = id % 2 ? "alice" : "bob",
                          .type = "gemm",
                          .state = state,
                          .created = 1000.0 + (double)id,
                          .finished = finished,
                          .request = request,
                          .request_len = sizeof request,
                          .record = record,
                          .create = create,
                          .parents = &parent,
                          .n_parents = parent != 0};
  CHECK_INT_EQ(store_put(s, &row), 0);
  return store_ticket(s);
}

/* Queues one job row and returns its ticket. */
uint64_t put_job(struct store *s, uint64_t id, const char *state, double finished,
                 const char *record, bool create) {
  return put_job_after(s, id, state, finished, record, create, 0);
}

int listed;
void count_listed(void *arg, uint64_t id, const char *record) {
  (void)arg, (void)id;
  CHECK(record && record[0] == '{');
  listed++;
}

int unfinished_n;
uint64_t unfinished_ids[16];
void on_unfinished(void *arg, uint64_t id, const char *state, const void *request, size_t len) {
  (void)arg;
  CHECK(strcmp(state, "queued") == 0 || strcmp(state, "running") == 0);
  CHECK_INT_EQ(len, 40);
  const unsigned char *b = request;
  for (size_t i = 0; i < len; i++) CHECK_INT_EQ(b[i], (unsigned char)(i * 37 + id));
  if (unfinished_n < 16) unfinished_ids[unfinished_n++] = id;
}

int sweeps_n;
void on_sweep(void *arg, uint64_t id, const char *client, double created, const char *record) {
  (void)arg;
  CHECK_STR_EQ(client, "carol");
  CHECK_NEAR(created, 2000.0 + (double)id, 1e-6);
  CHECK(strstr(record, "\"jobs\"") != NULL);
  sweeps_n++;
}

void *flush_main(void *arg) {
  struct flusher *f = arg;
  store_flush(f->s);
  atomic_store(&f->done, true);
  return NULL;
}

int store_db_setup(void) {
  if (test_db_on_pg() && (!getenv("GPULAB_PG_CLUSTER") || !getenv("GPULAB_PG_DIR")))
    CHECK_FAIL_("%s", "GPULAB_PG_CLUSTER and GPULAB_PG_DIR must name the cluster");
  test_db_make("store", db, sizeof db);
  printf("store at %s\n", db);
  return 0;
}

void store_db_teardown(void) { test_db_drop(db); }
