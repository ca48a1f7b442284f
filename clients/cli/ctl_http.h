/* gpulabctl's side of HTTP (libcurl, jansson): one request and its answer, a problem
 * (RFC 9457) as one line for people, and a job's Server-Sent Events followed until the
 * caller has seen enough or the user pressed Ctrl-C. Knows gpulab's API only by paths. */
#ifndef GPULAB_CTL_HTTP_H
#define GPULAB_CTL_HTTP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Where gpulabd is and who asks. Strings borrowed. */
struct ctl {
  const char *server; /* "http://127.0.0.1:8080" (no trailing slash needed) */
  const char *token;  /* NULL: none (Authorization: Bearer when set) */
  const char *socket; /* NULL, or a Unix socket path: server then names only the host */
};

struct ctl_reply {
  long status; /* 0: no answer came (err says why) */
  char *body;  /* NUL-terminated; owned */
  size_t len;
  json_t *json; /* the body parsed when it is JSON, else NULL; owned */
  char location[256];
};

/* Set from a SIGINT handler: a request or an event stream in progress stops. */
extern volatile sig_atomic_t ctl_interrupted;

/* method path (under /v1: "/transpose?wait=60") with body (NULL: none) of media type ct.
 * Returns 0 with *out filled (any status), or -1 when no answer came (err: curl's
 * reason, or "interrupted"); ctl_reply_free(out) in both cases. */
int ctl_request(const struct ctl *c, const char *method, const char *path, const char *ct,
                const void *body, size_t len, struct ctl_reply *out, char *err, size_t err_len);
void ctl_reply_free(struct ctl_reply *r);

/* A problem answer as one line: "400 out_of_range (m): m must be between 1 and ...".
 * Any other answer: its status and the start of its body. */
void ctl_problem_line(const struct ctl_reply *r, char *out, size_t len);

/* Follows GET path (an SSE stream), calling on_event(event name, data parsed, arg) for
 * each event; stops when it returns true, the stream ends or ctl_interrupted. Returns
 * 0 (stopped by on_event), 1 (the stream ended), 2 (interrupted), or -1 with err. */
int ctl_events(const struct ctl *c, const char *path,
               bool (*on_event)(const char *event, json_t *data, void *arg), void *arg, char *err,
               size_t err_len);

#endif
