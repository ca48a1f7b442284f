/* Private to the HTTP layer: the per-request state shared by http.c (plumbing)
 * and handlers.c (routes). */
#ifndef GPULAB_HTTP_PRIV_H
#define GPULAB_HTTP_PRIV_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "api/error.h"
#include "server/engine.h"
#include "server/http.h"

#define HTTP_MAX_RATES 256

struct rate_bucket {
  const struct auth_client *who;
  double tokens, at;
};

/* A TCP connection, for the request deadline (http.c): a whole request, head and
 * body, must arrive within --timeout seconds of the connection's start or of the
 * previous answer, however slowly its bytes trickle in. */
struct conn_watch {
  struct conn_watch *next, *prev;
  int fd;
  double since;  /* engine_now_mono() when its current request became due */
  bool heading;  /* waiting for a request (its head or its body) */
  /* On the Unix socket (--socket): the peer, from its credentials (SO_PEERCRED). */
  bool local;
  bool local_admin;  /* root, or gpulabd's own user: sees every client's jobs */
  unsigned uid;
  char user[64];     /* the Unix user name, or "uid:N" */
};

struct http_server {
  struct MHD_Daemon *daemon;       /* TCP (--host/--port); NULL with no_tcp */
  struct MHD_Daemon *unix_daemon;  /* the Unix socket (--socket), or NULL */
  struct engine *engine;
  struct http_options opts;
  double started_mono;
  atomic_int in_flight;        /* requests begun and not completed */
  pthread_mutex_t conns_lock;  /* guards conns */
  struct conn_watch *conns;
  pthread_t watchdog;
  atomic_bool stopping;
  pthread_mutex_t rates_lock; /* guards rates */
  struct rate_bucket rates[HTTP_MAX_RATES];
  int n_rates;
  struct sweeps *sweeps; /* POST /sweeps' table (server/sweeps.h) */
};

struct request {
  struct http_server *srv;
  struct MHD_Connection *conn;
  char method[8];
  const char *allow; /* methods of the matched route, for 405's Allow */
  int retry_after_s;  /* > 0: sent as Retry-After (429) */
  const char *www_authenticate; /* non-NULL: sent as WWW-Authenticate (401) */
  /* For the access log and the metrics: */
  const char *route;  /* the matched route's pattern, "other" when none */
  char path[128];     /* the URL path, cut to fit */
  double started;     /* engine_now_mono() at the first byte */
  unsigned status;    /* the answer's status, 0 before */
  uint64_t bytes;     /* the answer's body size, when known */
  uint64_t job_id;    /* the job the request made or named, 0 if none */
  /* Who asks: the token's client, or (without --tokens) the peer address. */
  const struct auth_client *who;
  bool local, local_admin; /* on the Unix socket: client is the peer's user name */
  char client[64];
  char location[48];  /* non-empty: sent as Location (201, 202) */
  char *body;
  size_t body_len, body_cap;
  size_t body_limit; /* --max-body, or --max-upload for POST /buffers */
  bool body_too_large;
  bool body_complete;
  bool body_plain_text; /* a JSON route's body came as text/plain: taken if it parses as JSON */
  /* A job the request waits for (POST with ?wait > 0): suspended until the watch fires. */
  struct job *job;
  struct engine_watch watch;
  bool suspended;
  uint64_t sweep_id; /* non-zero: the request waits for this sweep (handlers_sweeps.c) */
  uint64_t store_ticket; /* its job's first row in the store (store_ticket), 0 if none */
};

/* Responses. Each queues exactly one response and returns MHD's result. json is
 * consumed (decref'd). request_queue queues resp (and destroys the caller's
 * reference), noting status and body bytes for the access log and metrics; every
 * response goes through it. */
enum MHD_Result request_queue(struct request *r, unsigned status, struct MHD_Response *resp,
                              uint64_t bytes);
enum MHD_Result respond_json(struct request *r, unsigned status, json_t *json);
/* err as RFC 9457 problem details (application/problem+json), its instance r's path. */
enum MHD_Result respond_error(struct request *r, const struct api_error *err);
/* respond_error with extension members (RFC 9457): extra's (consumed; NULL: none)
 * beside the problem's own, which it cannot replace. */
enum MHD_Result respond_problem(struct request *r, const struct api_error *err, json_t *extra);
/* respond_error for a new error, built from the arguments. */
enum MHD_Result respond_fail(struct request *r, int status, const char *code, const char *field,
                             const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Route handlers (handlers.c). Called once the whole body has arrived. */
enum MHD_Result handle_request(struct request *r, const char *url);
/* Called again for a request that was suspended waiting for its job. */
enum MHD_Result handle_resumed(struct request *r);
/* Early refusals before the body is read (413 by Content-Length, 415, 404, 405).
 * Returns MHD_YES with nothing queued when the request may go on. */
bool handle_precheck(struct request *r, const char *url, enum MHD_Result *result);

/* Suspends r until job ends or wait_s passes (handlers.c uses it). */
void request_wait_for_job(struct request *r, struct job *job, double wait_s);

/* Shared by the route files. */
const char *request_client(struct request *r, char *buf, size_t len); /* the queue identity */
/* True when r may see what client owns (its own, or r is an admin, or there are
 * no tokens); request_sees_all: everyone's. */
bool request_may_see(const struct request *r, const char *owner);
bool request_sees_all(const struct request *r);
#include "server/job_json.h" /* time_json */
bool parse_id(const char *text, uint64_t *id); /* decimal, no sign, no leading zeros */
int query_int(struct request *r, const char *name, long long lo, long long hi, long long def,
              long long *out, struct api_error *err);

/* handlers.c, for the sweeps: takes n submissions from who's rate bucket (0) or
 * says how many seconds until it may; the API error of an engine refusal. */
double rate_take_n(struct http_server *srv, const struct auth_client *who, int n);
enum MHD_Result respond_refusal(struct request *r, const struct exp_spec *spec,
                                const struct engine_error *e, const char *params_prefix);
/* The store (--db) could not take a write (err: a negative errno, store.h): 507
 * insufficient_storage for a full disk or a size limit, else 503 store_unavailable;
 * Retry-After either way. Nothing was accepted. */
enum MHD_Result respond_storage(struct request *r, int err);
/* 0 when the request may make something durable now (no store, or one that takes
 * writes); else it has answered with respond_storage (*result). */
bool request_store_refuses(struct request *r, enum MHD_Result *result);

/* handlers_sweeps.c: POST and GET /sweeps, GET and DELETE /sweeps/{id}, and the
 * answer of a POST that waited for its sweep. */
enum MHD_Result sweeps_post(struct request *r);
enum MHD_Result sweeps_index(struct request *r);
enum MHD_Result sweep_route(struct request *r, const char *id_text);
enum MHD_Result sweep_resumed(struct request *r);
/* The sweeps' table (srv->sweeps), with the sweeps the store kept and ids past every
 * earlier one: 0 or a negative errno. Closing puts the store's id mark back to the
 * last one handed out, and frees the table. */
int sweep_routes_open(struct http_server *srv);
void sweep_routes_close(struct http_server *srv);

/* handlers_kernels.c: POST and GET /kernels, GET and DELETE /kernels/{id} (id_text;
 * "signatures": GET /kernels/signatures); whether POST /kernels takes a Content-Type. */
enum MHD_Result kernels_route(struct request *r, const char *id_text);
bool kernels_content_type_ok(const char *ct);
/* A job's users' kernels (variants kernel:<id>): each must exist, be r's or public and
 * be of the job's experiment, else 400 unknown_variant (field) in err and -1; each is
 * then in the backends' table (kernels/user/ukreg.h). 0 when all are. */
int kernels_resolve(struct request *r, const struct exp_spec *spec, const char *field, struct api_error *err);
/* handlers_leaderboard.c: GET /leaderboard/{experiment}. */
enum MHD_Result leaderboard_route(struct request *r, const char *experiment);
/* handlers.c: submits spec as a job with the default options, answering as POST /jobs
 * does (?wait honoured). */
enum MHD_Result handle_submit_spec(struct request *r, const struct exp_spec *spec);

/* handlers_buffers.c; respond_buffer_gone: 410 gone for a buffer id of a previous
 * run (buffers live in memory), field naming where it was given. */
enum MHD_Result respond_buffer_gone(struct request *r, uint64_t id, const char *field);
enum MHD_Result buffers_post(struct request *r);
enum MHD_Result buffers_list(struct request *r);
enum MHD_Result buffer_route(struct request *r, const char *id_text);

/* sse.c: answers with a Server-Sent Events stream of one job (job != NULL; the
 * stream ends with the job) or of every job. Streams end when the engine stops
 * (it closes the event bus before the daemon stops). */
enum MHD_Result sse_respond(struct request *r, struct job *job);

#endif
