/* What the job engine's HTTP tests share (test_jobs_http.c: buffers and inputs;
 * test_jobs_deps.c: dependencies; test_jobs_queue.c: the fair queue, isolation, graph;
 * test_jobs_sse.c: Server-Sent Events): their two gpulabd, submitting and canceling
 * jobs, a job that blocks a stream, .npy files and buffers. Sizes and timing are kept
 * small for CI. */
#ifndef GPULAB_TEST_JOBS_COMMON_H
#define GPULAB_TEST_JOBS_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "http_client.h"

#define FAST "\"warmup\":0,\"batches\":1,\"reps\":1"
#define FAST2 "\"warmup\":1,\"batches\":2,\"reps\":1"
#define ROWS 33
#define COLS 47
#define MAX_UPLOAD 65536 /* ONE's --max-upload */
#define MAX_QUEUED 5     /* ONE's --max-queued */
#define N_LISTENERS 20

extern struct gpulabd ONE;   /* --streams 1: queueing, cancellation, fairness, SSE */
extern struct gpulabd THREE; /* --streams 3: dependencies in parallel, isolation */

/* Starts ONE and THREE (a suite's setup: 0); stops them (its teardown). */
int jobs_servers_start(void);
void jobs_servers_stop(void);

/* ---- jobs ---- */

/* GET /jobs/{id} (the caller decrefs). */
json_t *job_get(struct gpulabd *d, long long id);
bool final_state(const char *state);
/* POSTs body to /jobs?wait=0 through c: 202 with Location while the job is pending,
 * 200 when it ended at once. Checks the state when want_state is not NULL. Returns
 * the job (the caller decrefs). */
json_t *submit_on(struct http_client *c, const char *want_state, const char *body);
/* submit_on d's client with a printf-style body; returns the job's id. */
long long submit(struct gpulabd *d, const char *want_state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* POSTs a JSON body (printf-style) to path on d and expects this error. */
void post_error(struct gpulabd *d, const char *path, long status, const char *code,
                const char *field, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The error reply's message, its problem detail (borrowed from r). */
const char *error_message(const struct http_reply *r);
void check_contains(const char *text, const char *part);
/* DELETE /jobs/{id}: 200; returns the job as answered (the caller decrefs). */
json_t *cancel(struct gpulabd *d, long long id);

/* A job that keeps a stream of d busy until canceled (the CPU backend cuts a batch
 * to ~100 ms: 2 variants x 100 batches last ~20 s), submitted through c. Waits
 * until it runs when `running`. blocker_start: on ONE, through its client. */
#define BLOCKER                                                               \
  "{\"type\":\"stencil\",\"params\":{\"n\":100000,\"radius\":2,\"warmup\":0," \
  "\"batches\":100,\"reps\":10000}}"
#define BLOCKER_SHARED                                                        \
  "{\"type\":\"stencil\",\"params\":{\"n\":100000,\"radius\":2,\"warmup\":0," \
  "\"batches\":100,\"reps\":10000},\"isolation\":\"shared\"}"
long long blocker_submit(struct gpulabd *d, struct http_client *c, bool running);
long long blocker_start_on(struct http_client *c);
long long blocker_start(void);
/* Checks job id's state on d. */
void check_state(struct gpulabd *d, long long id, const char *state);
/* /health's count of jobs in this state. */
long long health_jobs(struct gpulabd *d, const char *state);
/* Cancels a running job: 200 at once (still running, cancel_requested), canceled
 * at its next batch. */
void cancel_running(struct gpulabd *d, long long id);

/* ---- .npy files and buffers ---- */

/* A version 1.0 .npy file: the header dict as given, padded with spaces to a
 * multiple of 64 bytes with its newline, then data_bytes of data (the caller frees). */
char *npy_file(const char *dict, const void *data, size_t data_bytes, size_t *len);
char *npy_2d(int rows, int cols, const float *data, size_t *len);
/* Known values with exact float bit patterns: fractions, signs, -0, a subnormal. */
float *matrix(int rows, int cols, int salt);
/* POSTs a file to /buffers[query] as content_type; expects 201 and checks the
 * reply. Returns the buffer's id. */
long long upload(struct gpulabd *d, const char *query, const char *content_type, const void *body,
                 size_t len, int ndim, long long rows, long long cols);
long long upload_matrix(struct gpulabd *d, int rows, int cols, const float *data);
/* GET /buffers/{id}: a .npy of float32 in C order with this shape (cols 0: 1-D).
 * Returns its data (the caller frees). */
float *download(struct gpulabd *d, long long id, long long rows, long long cols);
/* The buffer's entry in GET /buffers, or NULL (the caller decrefs). */
json_t *buffer_listed(struct gpulabd *d, long long id);
void check_transposed(const float *t, const float *m, int rows, int cols);

#endif
