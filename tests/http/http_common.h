/* What the HTTP tests of every route share (test_http.c: routes, experiments, the job
 * list; test_http_errors.c: every error the API promises; test_http_queue.c:
 * queueing, cancellation, 200 clients at once, shutdown): their two gpulabd and
 * checks of finished jobs. Sizes and timing are kept small for CI. */
#ifndef GPULAB_TEST_HTTP_COMMON_H
#define GPULAB_TEST_HTTP_COMMON_H

#include <stddef.h>

#include "http_client.h"

#define FAST "\"warmup\":1,\"batches\":2,\"reps\":1"
#define SMALL_TRANSPOSE "{\"m\":33,\"n\":47," FAST "}"
#define MAX_BODY 4096 /* A's --max-body */
#define N_CLIENTS 200
#define MAX_QUEUED 202 /* B's --max-queued */
#define MAX_QUEUED_ARG "202"
extern struct gpulabd A; /* --streams 2 --max-body 4096: most tests */
extern struct gpulabd B; /* --streams 1 --max-queued 202: queueing, cancel, concurrency */
extern const char *const transpose_all[];
extern const char *const gemm_all[];
extern const char *const stencil_all[];
#define N_TRANSPOSE 5 /* the lists above, "all" */
#define N_GEMM 6
#define N_STENCIL 3
long long health_int(struct gpulabd *d, const char *path);
size_t jobs_listed(struct gpulabd *d);
/* POSTs to /type on A and checks the finished job's runs; returns it (caller decrefs). */
json_t *run_ok(const char *type, const char *body, const char *const *labels, int n);

/* GET path: a list newest first, of summaries (no result). Caller decrefs. */
json_t *list(struct gpulabd *d, const char *path);

/* A request gpulabd must refuse: GET path (body NULL) or POST body to it. */
struct bad_request {
  const char *path, *body;
  int status;
  const char *code, *field; /* field NULL: null */
};

/* Start A or B (a suite's setup: 0). */
int http_start_a(void);
int http_start_b(void);

#endif
