/* The harness of test_openapi.c: the document as gpulabd serves it, requests on
 * connections of their own, and every answer checked against the document (its
 * status, Content-Type, required headers, and a JSON body's schema, recorded for
 * validate.js); which operations were exercised, with which statuses. */
#ifndef GPULAB_TEST_OPENAPI_COMMON_H
#define GPULAB_TEST_OPENAPI_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "http_client.h"

#define FAST "\"warmup\":0,\"batches\":1,\"reps\":1"
#define MAX_BODY 4096    /* S's --max-body */
#define MAX_UPLOAD 65536 /* S's --max-upload */
#define MAX_QUEUED 3     /* S's --max-queued */
#define TOKEN_ALL "openapi-admin-token-0123456789"
#define TOKEN_SLOW "openapi-slow-token-0123456789"
extern json_t *DOC; /* the document, as served */
extern json_t
    *RECORDS; /* what validate.js checks: {"what", "schema", "value", "valid"[, "mention"]} */
extern struct gpulabd S; /* no tokens: every route */
extern struct gpulabd T; /* --tokens: 401, rate and quota limits */
json_t *doc_operation(const char *tmpl, const char *method);
/* The value a "#/a/b" reference (JSON pointer: ~1 is '/', ~0 is '~') names within
 * the document (borrowed), or NULL. */
json_t *doc_pointer(const char *ref);
/* o itself, or what its $ref (and theirs) names; borrowed. */
json_t *doc_deref(json_t *o);
/* Records that v (borrowed) must match schema (an object of the document) when valid,
 * or must not; mention: a word the refusal must name (NULL: any). validate.js checks. */
void expect_schema(json_t *schema, json_t *v, bool valid, const char *mention, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
json_t *schema_named(const char *name);
/* Every operation exercised, and with which statuses ("GET /jobs 200,400"). */
struct op_seen {
  char op[80];
  char statuses[64];
};

extern struct op_seen seen[128];
extern int n_seen;
void record(const char *tmpl, const char *method, long status);
/* Recursively: every $ref in the document resolves. */
void check_refs(json_t *v, const char *at);
struct reply {
  long status;
  char *content_type; /* NULL when absent */
  char *headers;      /* every header line, "\nName: value" each */
  char *body;         /* NUL-terminated */
  size_t body_len;
  json_t *json; /* the body as JSON (any value), or NULL */
};

void reply_free(struct reply *r);
void append(char **buf, size_t *len, const char *data, size_t n);
size_t on_body(char *data, size_t size, size_t n, void *arg);
size_t on_header(char *data, size_t size, size_t n, void *arg);
/* The value of header name in r (a static copy), or NULL. */
const char *header(const struct reply *r, const char *name);
/* One request to 127.0.0.1:port, on a connection of its own. headers: a
 * NULL-terminated list of "Name: value" lines, or NULL. */
void request(int port, const char *method, const char *path, const char *const *headers,
             const char *body, size_t body_len, struct reply *out);
/* The media type of a Content-Type value, without parameters, lower case. */
void media_type(const char *ct, char *out, size_t len);
/* An error's problem: its status is the HTTP status, and its type is the entry of
 * its code in components/x-problem-types, whose title and statuses it has. */
void check_problem(const char *method, const char *tmpl, const struct reply *r);
/* The contract: r's status is documented for tmpl and method, its Content-Type is
 * one the response lists, its required headers are there, and a JSON body
 * validates against the response's schema. */
void check_reply(const char *tmpl, const char *method, const struct reply *r);
/* Requests method path on d, checks the reply against tmpl, and expects status
 * (and, for an error, this error.code). The caller frees *out (NULL: freed here). */
void call_h(struct gpulabd *d, const char *tmpl, const char *method, const char *path,
            const char *const *headers, const char *body, size_t body_len, long status,
            const char *code, struct reply *out);
void call(const char *tmpl, const char *method, const char *path, long status, const char *code,
          struct reply *out);
/* GET path (call), then HEAD path: the same status without a body. */
void call_get_head(const char *tmpl, const char *path, long status, const char *code);
/* Checks body (JSON) against the operation's request schema: it must be accepted
 * (doc_ok) or refused, as gpulabd does. */
void check_request_body(const char *tmpl, const char *body, bool doc_ok);
/* POSTs a JSON body to path (tmpl in the document) and expects status and code.
 * doc_ok: whether the document's request schema must accept the body. Returns the
 * JSON answer (the caller decrefs). */
json_t *post(const char *tmpl, const char *path, const char *body, long status, const char *code,
             bool doc_ok);
#define ACCEPTED true
#define REFUSED false
json_t *job_wait(long long id);
/* openapi_problems.c: every operation of /problems. */
void check_problems(void);
/* openapi_kernels.c: every operation of /kernels and /leaderboard. */
void check_kernels(void);

#endif
