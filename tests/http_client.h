/* The HTTP tests' harness: starts a real gpulabd ($GPULABD) on 127.0.0.1 with a
 * free port, talks to it with libcurl, and checks replies. Failures print what
 * was seen and exit 1 (check.h's style); a started gpulabd is killed on exit. */
#ifndef GPULAB_TEST_HTTP_CLIENT_H
#define GPULAB_TEST_HTTP_CLIENT_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* One connection's worth of client: a CURL handle reused across requests
 * (keep-alive). Not thread-safe: a thread that talks to gpulabd opens its own. */
struct http_client {
  CURL *curl;
  char base_url[64];     /* "http://127.0.0.1:PORT" */
  char local_addr[48];   /* "" or the address requests leave from (http_client_open_from) */
  char token[160];       /* non-empty: sent as Authorization: Bearer <token> */
  char unix_socket[108]; /* non-empty: requests go over this Unix socket (--socket) */
};

/* A running gpulabd. It must stay at its address from start to stop (a thread
 * reads its log_fd). */
struct gpulabd {
  pid_t pid; /* 0 once stopped */
  int port;
  int log_fd;      /* read end of its stderr */
  pthread_t drain; /* forwards its stderr after start-up */
  struct http_client http;
};

/* Starts $GPULABD --host 127.0.0.1 --port 0 extra_args... (extra_args NULL-terminated,
 * or NULL) and waits (30 s at most) for its "listening on http://127.0.0.1:PORT" line
 * (with --no-tcp: its "listening on unix:" line; port is then 0).
 * Returns 0 with *out ready. If it exits (or times out) first, returns -1 with its
 * stderr in log (NUL-terminated, truncated to log_len) and *exit_status set to its
 * exit code (-1 for a signal or a timeout, then it is killed). */
int gpulabd_try_start(const char *const *extra_args, struct gpulabd *out, char *log, size_t log_len,
                      int *exit_status);
/* The gpulabd processes started after this call run as uid:gid (a test run as root
 * that needs a user whom file modes hold back); (uid_t)-1 runs them as the test. */
void gpulabd_spawn_as(uid_t uid, gid_t gid);
/* gpulabd_try_start that fails the test, printing the log, if gpulabd does not start. */
void gpulabd_start(const char *const *extra_args, struct gpulabd *out);
/* gpulabd_start for the GPU tests: where gpulabd says the CUDA backend is
 * unavailable (no driver, no device, built without CUDA), prints why and exits
 * CHECK_SKIP; any other failure to start fails the test. */
void gpulabd_start_or_skip(const char *const *extra_args, struct gpulabd *out);
/* SIGTERM, wait 10 s at most (then SIGKILL and fail), and check it exited with 0. */
void gpulabd_stop(struct gpulabd *d);
/* gpulabd_stop waiting timeout_s at most: for a gpulabd that lets a running job finish. */
void gpulabd_stop_within(struct gpulabd *d, double timeout_s);
/* kill -9: a crash, as far as gpulabd can tell. */
void gpulabd_kill(struct gpulabd *d);
/* Waits (timeout_s at most) for gpulabd to exit by itself; returns its exit status,
 * or -1 (still running, or killed by a signal). */
int gpulabd_wait_exit(struct gpulabd *d, double timeout_s);

/* A reply. Headers and body are copies owned by the reply; json is the body parsed
 * (NULL when the body is not JSON). Free with http_reply_free. */
struct http_reply {
  long status;
  char *content_type, *location, *allow, *retry_after; /* NULL when absent */
  char *body;                                          /* NUL-terminated, never NULL */
  size_t body_len;
  json_t *json;
  double total_s; /* time the request took */
};
void http_reply_free(struct http_reply *reply); /* zeroes it; safe to call twice */

/* libcurl's global initialization, once per process (every client does it first). */
void http_curl_init(void);
void http_client_open(struct http_client *c, int port);
/* A client whose requests go over the Unix socket at path (gpulabd --socket). */
void http_client_open_unix(struct http_client *c, const char *path);
/* http_client_open whose requests leave from local_addr (a numeric address such as
 * "127.0.0.2": Linux routes all of 127/8 to lo), so gpulabd sees another client. */
void http_client_open_from(struct http_client *c, int port, const char *local_addr);
void http_client_close(struct http_client *c);

/* Request flags. */
#define HTTP_CHUNKED 1u      /* send the body with Transfer-Encoding: chunked (no Content-Length) */
#define HTTP_TRANSPORT_OK 2u /* a transport error gives status 0 and curl's message as body */

/* Sends one request and fills *out (free it with http_reply_free). content_type NULL
 * sends no Content-Type header. body may be NULL (no body) even for POST. A transport
 * error (no connection, timeout) fails the test unless flags has HTTP_TRANSPORT_OK. */
void http_client_request(struct http_client *c, const char *method, const char *path,
                         const char *content_type, const char *body, size_t body_len,
                         unsigned flags, struct http_reply *out);
/* The same on d's own client. */
void http_request(struct gpulabd *d, const char *method, const char *path, const char *content_type,
                  const char *body, size_t body_len, struct http_reply *out);
/* GET path. */
void http_get(struct gpulabd *d, const char *path, struct http_reply *out);
/* GET path, expecting 200 with JSON; returns the JSON (the caller decrefs it). */
json_t *http_get_json(struct gpulabd *d, const char *path);
/* POST path with a JSON body (a C string) as application/json. */
void http_post_json(struct gpulabd *d, const char *path, const char *json_text,
                    struct http_reply *out);

/* The value at a dotted path with [i] indices ("result.runs[0].check.passed"), or
 * NULL. Borrowed from root. */
json_t *json_at(json_t *root, const char *path);
/* The time of day in seconds of the RFC 3339 UTC time at path ("...T12:34:56.789Z"),
 * to compare two times of one run; fails the test when it is absent or malformed. */
double json_clock_s(json_t *root, const char *path);

/* Checks that reply is an RFC 9457 problem (application/problem+json) with this
 * status, code and field (NULL: field must be null), and that the body is exactly
 * {"type", "title", "status", "detail", "instance", "code", "field"}: type the
 * code's URI, status the HTTP status, a non-empty title and detail, instance a
 * path. Prints the body and exits 1 otherwise. */
void check_error_(const struct http_reply *reply, long status, const char *code, const char *field,
                  const char *file, int line);
#define CHECK_ERROR(reply, status, code, field) \
  check_error_((reply), (status), (code), (field), __FILE__, __LINE__)

/* Checks a 2xx/4xx status, printing the body on failure; a body must be JSON
 * (application/problem+json from 400 on). */
void check_status_(const struct http_reply *reply, long status, const char *file, int line);
#define CHECK_STATUS(reply, status) check_status_((reply), (status), __FILE__, __LINE__)

/* POST path with a JSON body (a C string) and check its status: the answer's JSON, a
 * new reference (the caller decrefs it; NULL for a body that is not JSON). */
json_t *http_post_expect_(struct gpulabd *d, const char *path, const char *json_text, long status,
                          const char *file, int line);
#define HTTP_POST_EXPECT(d, path, json_text, status) \
  http_post_expect_((d), (path), (json_text), (status), __FILE__, __LINE__)
/* The same, returning the answer's "id" (a job's, a sweep's). */
long long http_post_id_(struct gpulabd *d, const char *path, const char *json_text, long status,
                        const char *file, int line);
#define HTTP_POST_ID(d, path, json_text, status) \
  http_post_id_((d), (path), (json_text), (status), __FILE__, __LINE__)
/* method path without a body, and check the answer: status, and for code not NULL the
 * problem with that code and field (CHECK_ERROR). */
void http_expect_(struct gpulabd *d, const char *method, const char *path, long status,
                  const char *code, const char *field, const char *file, int line);
#define HTTP_EXPECT(d, method, path, status, code, field) \
  http_expect_((d), (method), (path), (status), (code), (field), __FILE__, __LINE__)

/* Typed reads of json_at(root, path) that fail the test when absent or mistyped. */
long long json_int_at_(json_t *root, const char *path, const char *file, int line);
double json_num_at_(json_t *root, const char *path, const char *file, int line);
const char *json_str_at_(json_t *root, const char *path, const char *file, int line);
bool json_bool_at_(json_t *root, const char *path, const char *file, int line);
#define JINT(root, path) json_int_at_((root), (path), __FILE__, __LINE__)
#define JNUM(root, path) json_num_at_((root), (path), __FILE__, __LINE__)
#define JSTR(root, path) json_str_at_((root), (path), __FILE__, __LINE__)
#define JBOOL(root, path) json_bool_at_((root), (path), __FILE__, __LINE__)

/* Shared checks of experiment replies (both HTTP tests use them). */

/* True for "YYYY-MM-DDTHH:MM:SS[.fff]Z". */
bool is_rfc3339_utc(const char *text);
/* A finished job of this type on this backend ("cpu", "cuda"): id, type, state done,
 * params, ordered RFC 3339 times, queue_ms, run_ms, no error, result.passed true,
 * and every available run checked with check_run. */
void check_job_done_(json_t *job, const char *type, const char *backend, const char *file,
                     int line);
#define CHECK_JOB_DONE(job, type, backend) \
  check_job_done_((job), (type), (backend), __FILE__, __LINE__)
/* POSTs body (JSON) to path with the default wait and expects 200 with a finished,
 * passed job of this type and backend (CHECK_JOB_DONE). Returns the job; the caller
 * decrefs it. */
json_t *job_post_done(struct gpulabd *d, const char *backend, const char *path, const char *type,
                      const char *body);
/* GETs /jobs/{id} until the job is done, failed or canceled (timeout_s at most, then
 * the test fails). Returns the job; the caller decrefs it. */
json_t *job_wait_final(struct gpulabd *d, long long id, double timeout_s);
/* GETs /jobs/{id} until its state is `state` (timeout_s at most). */
void job_wait_state(struct gpulabd *d, long long id, const char *state, double timeout_s);
/* Checks a 202 from a POST with ?wait: Location /jobs/{id}, the type, a job neither
 * finished nor with a result. Returns its id. */
long long job_check_accepted(const struct http_reply *reply, const char *type);

/* The value of a gauge or counter without labels in d's /metrics; fails the test when
 * it is not there. */
long long http_metric(struct gpulabd *d, const char *name);
/* /metrics' text (written to path, which it overwrites) through `promtool check
 * metrics`, which must be installed. promtool's one complaint taken is camelCase
 * label names where they are the DCGM exporter's (modelName, Hostname: gpulab's device
 * series carry them to join with DCGM's); the test fails on any other, and on a label
 * name with capitals other than DCGM's. */
void check_promtool_metrics(const char *text, const char *path);
/* Checks that the job's runs are labelled labels[0..n) in this order ("padded33",
 * "streams=3"), and that params.variant, where the type has one, lists the same. */
void check_run_labels(json_t *job, const char *const *labels, int n);
/* One available run: check passed, timing summary consistent with its samples,
 * figure > 0, the unit, speedup (1 for the first run), kernel.name; with
 * want_launch, kernel grid/block/registers too. */
void check_run_(json_t *run, const char *unit, bool first, bool want_launch, const char *file,
                int line);
#define CHECK_RUN(run, unit, first, want_launch) \
  check_run_((run), (unit), (first), (want_launch), __FILE__, __LINE__)

/* ---- Server-Sent Events ---- */

/* One SSE message. */
struct sse_event {
  long long id;   /* its "id:" field; -1 when it had none */
  char event[32]; /* its "event:" field; "message" when it had none */
  char *data;     /* its "data:" lines joined by '\n', NUL-terminated, never NULL */
  json_t *json;   /* data parsed as JSON, or NULL */
};
void sse_event_free(struct sse_event *ev); /* zeroes it; safe to call twice */

/* A text/event-stream read as it arrives, on its own connection, without a thread:
 * libcurl's multi interface moves it on inside sse_next. */
struct sse_stream {
  CURLM *multi;
  CURL *curl;
  struct curl_slist *headers;
  long status;        /* the response's, once sse_open returned */
  char *content_type; /* NULL when absent */
  char *buf;          /* received and not yet returned (CRs dropped), NUL-terminated */
  size_t len, cap;
  int comments; /* comment lines seen so far (": keep-alive") */
  bool headers_done, ended;
  CURLcode result; /* once ended */
};

/* GETs path on 127.0.0.1:port as an event stream, with a Last-Event-ID header when
 * last_event_id is not NULL, and waits (timeout_s at most) for the response's
 * headers. A transport error or the timeout fails the test. Close with sse_close. */
void sse_open(struct sse_stream *s, int port, const char *path, const char *last_event_id,
              double timeout_s);
/* The next message, waiting timeout_s at most; comments are counted, not returned.
 * Returns 1 with *ev filled (free it with sse_event_free), 0 once the server ended
 * the stream and no message is left, or -1 on the timeout. */
int sse_next(struct sse_stream *s, double timeout_s, struct sse_event *ev);
void sse_close(struct sse_stream *s); /* zeroes it; safe to call twice */

#endif
