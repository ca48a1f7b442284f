/* The HTTP layer's shared part: the server a request arrived at, one `struct request`
 * per request (http.c makes and frees it), and the helpers every route uses to answer
 * it (respond_*), read its ids and queries and tell who asks. request.c includes of
 * server/http/ only the headers of the types it builds on (options.h, auth.h): the
 * routes, the router and http.c build on it, never the other way. */
#ifndef GPULAB_HTTP_REQUEST_H
#define GPULAB_HTTP_REQUEST_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "api/error.h"
#include "server/engine/engine.h"
#include "server/http/options.h"
#include "server/service/job_json.h" /* job_json, time_json: what most routes answer with */
#include "server/service/service.h"

#define HTTP_MAX_RATES 256

/* A client's token bucket (rate_take_n). */
struct rate_bucket {
  const struct auth_client *who;
  double tokens, at;
};

struct conn_watch; /* http.c: a connection on its request deadline */

struct http_server {
  struct MHD_Daemon *daemon;      /* TCP (--host/--port); NULL with no_tcp */
  struct MHD_Daemon *unix_daemon; /* the Unix socket (--socket), or NULL */
  struct engine *engine;
  struct http_options opts;
  double started_mono;
  atomic_int in_flight;       /* requests begun and not completed */
  pthread_mutex_t conns_lock; /* guards conns */
  struct conn_watch *conns;
  pthread_t watchdog;
  atomic_bool stopping;
  pthread_mutex_t rates_lock; /* guards rates */
  struct rate_bucket rates[HTTP_MAX_RATES];
  int n_rates;
};

struct request;
/* What answers a request that was suspended (request_wait_for_job, a sweep's wait)
 * once it is resumed. */
typedef enum MHD_Result (*request_resume_fn)(struct request *r);

struct request {
  struct http_server *srv;
  struct MHD_Connection *conn;
  char method[8];
  const char *allow;            /* methods of the matched route, for 405's Allow */
  int retry_after_s;            /* > 0: sent as Retry-After (429) */
  const char *www_authenticate; /* non-NULL: sent as WWW-Authenticate (401) */
  /* For the access log and the metrics: */
  const char *route; /* the matched route's pattern, "other" when none */
  char path[128];    /* the URL path, cut to fit */
  double started;    /* engine_now_mono() at the first byte */
  unsigned status;   /* the answer's status, 0 before */
  uint64_t bytes;    /* the answer's body size, when known */
  uint64_t job_id;   /* the job the request made or named, 0 if none */
  /* Who asks: the token's client, or (without --tokens) the peer address. */
  const struct auth_client *who;
  bool local, local_admin; /* on the Unix socket: client is the peer's user name */
  char client[64];
  char location[96];      /* non-empty: sent as Location (201, 202), after api_prefix */
  char query[256];        /* "?..." as sent (cut to fit), or "": respond_elsewhere's */
  char redirect[512];     /* non-empty: sent as Location as it is (respond_elsewhere) */
  const char *api_prefix; /* "/v1" when the path came under it (router.c), else "" */
  /* A problem's job: whose kernels its variants may name ("problem:<name>"); NULL: the
   * job's experiment's (submit_kernel_resolver). */
  const char *kernels_of;
  char *body;
  size_t body_len, body_cap;
  size_t body_limit; /* --max-body, or --max-upload for POST /buffers */
  bool body_too_large;
  bool body_complete;
  bool body_plain_text;  /* a JSON route's body came as text/plain: taken if it parses as JSON */
  bool body_form_upload; /* an upload came as curl's form type: routes_buffers.c tells why */
  /* A job the request waits for (POST with ?wait > 0): suspended until the watch fires. */
  struct job *job;
  struct engine_watch watch;
  bool suspended;
  request_resume_fn resume; /* set with suspended: answers it when it is resumed */
  uint64_t sweep_id;        /* non-zero: the request waits for this sweep (routes_sweeps.c) */
  uint64_t store_ticket;    /* its job's first row in the store (store_ticket), 0 if none */
};

/* ---- answers: each queues exactly one response and returns MHD's result ---- */

/* Queues resp (and destroys the caller's reference), noting status and body bytes
 * for the access log and metrics; every response goes through it. */
enum MHD_Result request_queue(struct request *r, unsigned status, struct MHD_Response *resp,
                              uint64_t bytes);
/* json (consumed) as the body; NULL answers 500 out_of_memory. */
enum MHD_Result respond_json(struct request *r, unsigned status, json_t *json);
/* The same for a document already written as JSON text (borrowed: copied). */
enum MHD_Result respond_json_text(struct request *r, unsigned status, const char *text);
/* err as RFC 9457 problem details (application/problem+json), its instance r's path. */
enum MHD_Result respond_error(struct request *r, const struct api_error *err);
/* respond_error with extension members (RFC 9457): extra's (consumed; NULL: none)
 * beside the problem's own, which it cannot replace. */
enum MHD_Result respond_problem(struct request *r, const struct api_error *err, json_t *extra);
/* respond_error for a new error, built from the arguments. */
enum MHD_Result respond_fail(struct request *r, int status, const char *code, const char *field,
                             const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The store (--db) could not take a write (err: a negative errno, store.h): 507
 * insufficient_storage for a full disk or a size limit, else 503 store_unavailable;
 * Retry-After either way. Nothing was accepted. */
enum MHD_Result respond_storage(struct request *r, int err);
/* 410 gone for a buffer id of a previous run (buffers live in memory), field naming
 * where it was given. */
enum MHD_Result respond_buffer_gone(struct request *r, uint64_t id, const char *field);
/* 307 <what>_elsewhere (what: "job" or "buffer"): the same request (path and query as
 * sent) to another gpulabd of a fleet, at base (its advertised URL), which holds job
 * or buffer id; the client repeats its method and body there. */
enum MHD_Result respond_elsewhere(struct request *r, const char *base, const char *what,
                                  uint64_t id);
/* Buffer id is not in this node's table: when another node of a fleet made it (and
 * r's client may see it), answers into *ret and returns true: 307 buffer_elsewhere to
 * that node while it is live, 410 buffer_lost (field naming where the id was given)
 * once it is dead. False: nothing answered (not a fleet's, or no node made it). */
bool request_buffer_elsewhere(struct request *r, uint64_t id, const char *field,
                              enum MHD_Result *ret);
/* The API error of an engine refusal of spec's job (engine_submit): input fields are
 * params, named params_prefix + "<input>" ("params." under /jobs). */
enum MHD_Result respond_refusal(struct request *r, const struct exp_spec *spec,
                                const struct engine_error *e, const char *params_prefix);

/* ---- the request ---- */

/* Suspends r until job ends or wait_s passes; then resume answers it. */
void request_wait_for_job(struct request *r, struct job *job, double wait_s,
                          request_resume_fn resume);
/* 0 when the request may make something durable now (no store, or one that takes
 * writes); else it has answered with respond_storage (*result). */
bool request_store_refuses(struct request *r, enum MHD_Result *result);
const char *request_client(struct request *r, char *buf, size_t len); /* the queue identity */
/* True when r may see what client owns (its own, or r is an admin, or there are
 * no tokens); request_sees_all: everyone's. */
bool request_may_see(const struct request *r, const char *owner);
bool request_sees_all(const struct request *r);
/* Takes n submissions from who's token bucket (rate jobs per second, bursts of 2 s
 * worth): 0 when they may go now, else the seconds until they may (nothing taken). */
double rate_take_n(struct http_server *srv, const struct auth_client *who, int n);

/* ---- parsing ---- */

bool parse_id(const char *text, uint64_t *id); /* decimal, no sign, no leading zeros */
/* The query parameter name as an integer in [lo, hi], def when absent: 0, or -EINVAL
 * with a 400 in err. */
int query_int(struct request *r, const char *name, long long lo, long long hi, long long def,
              long long *out, struct api_error *err);

#endif
