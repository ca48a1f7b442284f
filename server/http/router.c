/* The route table and the dispatch: a URL's route (a pattern of the table, or POST
 * /<name> for every experiment of the registry), the token it needs, its methods, its
 * body's media type and size, and the route's function once the body has arrived. */
#include "server/http/router.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/http/auth.h"
#include "server/http/routes.h"

enum route_flag {
  ROUTE_PUBLIC = 1u, /* answered without a token under --tokens */
  ROUTE_JSON = 2u,   /* POST takes a JSON body (--max-body) */
  ROUTE_UPLOAD = 4u, /* POST takes a .npy or raw float32 upload (--max-upload) */
  ROUTE_SOURCE = 8u, /* POST takes a kernel's source (route_kernels_media_type; --max-body) */
};

/* A route. pattern is the route's name in metrics and logs, and what it matches: a
 * path, a path with one or two "{...}" (each a non-empty segment of at most 71
 * characters: a problem's name is up to 63), or a prefix ending in '*'. */
struct route {
  const char *pattern;
  const char *allow; /* its methods, for 405's Allow */
  route_fn *serve;
  unsigned flags; /* enum route_flag */
};

/* Paths are matched first, then the patterns with "{id}" or '*' in this order. */
static const struct route routes[] = {
    {"/", "GET, HEAD", route_index, ROUTE_PUBLIC},
    {"/health", "GET, HEAD", route_health, ROUTE_PUBLIC},
    {"/device", "GET, HEAD", route_device, 0},
    {"/devices", "GET, HEAD", route_devices, 0},
    {"/jobs", "GET, HEAD, POST", route_jobs, ROUTE_JSON},
    {"/events", "GET", route_events, 0},
    {"/buffers", "GET, HEAD, POST", route_buffers, ROUTE_UPLOAD},
    {"/metrics", "GET, HEAD", route_metrics, 0},
    {"/openapi.json", "GET, HEAD", route_openapi, ROUTE_PUBLIC},
    {"/sweeps", "GET, HEAD, POST", route_sweeps, ROUTE_JSON},
    {"/me", "GET, HEAD", route_me, 0},
    {"/kernels", "GET, HEAD, POST", route_kernels, ROUTE_SOURCE},
    {"/kernels/signatures", "GET, HEAD", route_kernel_signatures, 0},
    {"/jobs/{id}/events", "GET", route_job_events, 0},
    {"/jobs/{id}", "GET, HEAD, DELETE", route_job, 0},
    {"/sweeps/{id}", "GET, HEAD, DELETE", route_sweep, 0},
    {"/buffers/{id}", "GET, HEAD, DELETE", route_buffer, 0},
    {"/kernels/{id}", "GET, HEAD, DELETE", route_kernel, 0},
    {"/kernels/{id}/versions", "GET, HEAD", route_kernel_versions, 0},
    {"/kernels/{id}/versions/{version}", "GET, HEAD, DELETE", route_kernel_version, 0},
    {"/kernels/{id}/diff", "GET, HEAD", route_kernel_diff, 0},
    {"/kernels/{id}/ptx", "GET, HEAD", route_kernel_ptx, 0},
    {"/kernels/{id}/sass", "GET, HEAD", route_kernel_sass, 0},
    {"/kernels/{id}/versions/{version}/ptx", "GET, HEAD", route_kernel_ptx, 0},
    {"/kernels/{id}/versions/{version}/sass", "GET, HEAD", route_kernel_sass, 0},
    {"/leaderboard/{experiment}", "GET, HEAD", route_leaderboard, 0},
    {"/problems", "GET, HEAD, POST", route_problems, ROUTE_JSON},
    {"/problems/{name}", "GET, HEAD, DELETE", route_problem, 0},
    {"/problems/{name}/versions", "GET, HEAD", route_problem_versions, 0},
    {"/problems/{name}/jobs", "POST", route_problem_jobs, ROUTE_JSON},
    {"/problems/{name}/versions/{version}", "GET, HEAD", route_problem_version, 0},
    {"/static/*", "GET, HEAD", route_static, ROUTE_PUBLIC}, /* the dashboard's files */
};

struct route_match {
  struct route route;
  char id[72];  /* the first "{...}" as written */
  char id2[72]; /* the second, "" without one */
  int type;     /* an experiment's route: its type; else -1 */
};

/* Whether url matches pattern (one with "{...}" segments or a '*' prefix), the first
 * segment's text into id, the second's into id2. */
static bool match_pattern(const char *url, const char *pattern, char *id, char *id2, size_t len) {
  const char *brace = strchr(pattern, '{');
  if (!brace) {
    size_t n = strlen(pattern);
    return n > 0 && pattern[n - 1] == '*' && strncmp(url, pattern, n - 1) == 0;
  }
  for (char *out = id; brace; out = id2) {
    size_t p = (size_t)(brace - pattern);
    if (strncmp(url, pattern, p) != 0) return false;
    const char *start = url + p, *slash = strchr(start, '/');
    size_t n = slash ? (size_t)(slash - start) : strlen(start);
    if (n == 0 || n >= len) return false;
    memcpy(out, start, n);
    out[n] = '\0';
    url = start + n;
    pattern = strchr(brace, '}') + 1;
    brace = out == id ? strchr(pattern, '{') : NULL;
  }
  return strcmp(url, pattern) == 0;
}

/* The API's version prefix: every route is also under it ("/v1/jobs" is "/jobs"),
 * and the unversioned paths stay as its aliases. */
#define ROUTER_PREFIX "/v1"

/* url without ROUTER_PREFIX ("/v1" alone is "/"); *versioned says whether it had it. */
static const char *unversioned(const char *url, bool *versioned) {
  size_t n = sizeof ROUTER_PREFIX - 1;
  *versioned = strncmp(url, ROUTER_PREFIX, n) == 0 && (url[n] == '/' || url[n] == '\0');
  if (!*versioned) return url;
  return url[n] ? url + n : "/";
}

static bool match_route(const char *url, struct route_match *m) {
  memset(m, 0, sizeof *m);
  m->type = -1;
  size_t n = sizeof routes / sizeof routes[0];
  for (size_t i = 0; i < n; i++)
    if (!strpbrk(routes[i].pattern, "{*") && strcmp(url, routes[i].pattern) == 0) {
      m->route = routes[i];
      return true;
    }
  for (size_t i = 0; i < n; i++)
    if (strpbrk(routes[i].pattern, "{*") &&
        match_pattern(url, routes[i].pattern, m->id, m->id2, sizeof m->id)) {
      m->route = routes[i];
      return true;
    }
  for (int t = 0; t < EXP_TYPE_COUNT; t++) /* POST /transpose, ...: one per experiment */
    if (strcmp(url, exp_type_route((enum exp_type)t)) == 0) {
      m->route = (struct route){exp_type_route((enum exp_type)t), "POST", route_experiment,
                                ROUTE_JSON};
      m->type = t;
      return true;
    }
  return false;
}

static bool method_allowed(const char *method, const char *allow) {
  size_t n = strlen(method);
  for (const char *p = allow; (p = strstr(p, method)); p += n)
    if ((p == allow || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')) return true;
  return false;
}

/* The media type of a Content-Type (parameters and trailing blanks dropped) is one
 * of names (NULL-terminated), case-insensitively. */
static bool media_type_in(const char *ct, const char *const *names, size_t *type_len) {
  size_t len = strcspn(ct, ";");
  while (len && isspace((unsigned char)ct[len - 1])) len--;
  *type_len = len;
  for (; *names; names++)
    if (len == strlen(*names) && strncasecmp(ct, *names, len) == 0) return true;
  return false;
}

static bool npy_content_type(const char *ct) {
  static const char *const ok[] = {"application/x-npy", "application/octet-stream", NULL};
  size_t len;
  return ct && media_type_in(ct, ok, &len);
}

/* JSON, or curl -d's default form type (the README's examples send JSON that way). */
static bool json_content_type(const char *ct) {
  static const char *const ok[] = {"application/json", "application/x-www-form-urlencoded", NULL};
  size_t len;
  if (!ct || media_type_in(ct, ok, &len)) return true;
  return len > 5 && strncasecmp(ct + len - 5, "+json", 5) == 0;
}

/* text/plain: what a browser's fetch() sends with a string body and no Content-Type
 * ("text/plain;charset=UTF-8"). Such a body is taken when it parses as JSON. */
static bool plain_text_content_type(const char *ct) {
  static const char *const plain[] = {"text/plain", NULL};
  size_t len;
  return ct && media_type_in(ct, plain, &len);
}

/* With --tokens, every route but the public ones (/health, the dashboard's files and
 * the API's description, /openapi.json) needs a token: "Authorization: Bearer T", or
 * ?access_token=T for an EventSource (which cannot set headers). On the Unix socket
 * the peer's credentials stand for a token (a token sent there still counts, and a
 * wrong one is refused). Sets r->who and r->client. Returns false after answering 401. */
static bool authenticate(struct request *r, const struct route *route, enum MHD_Result *result) {
  const struct auth *auth = r->srv->opts.auth;
  if (!auth) return true;
  const char *header = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_AUTHORIZATION);
  const char *token = NULL;
  if (header && strncasecmp(header, "Bearer ", 7) == 0) token = header + 7;
  if (!token) token = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "access_token");
  r->who = token ? auth_check(auth, token) : NULL;
  if (r->who) snprintf(r->client, sizeof r->client, "%s", r->who->name);
  if (r->who || (route->flags & ROUTE_PUBLIC) || (r->local && !token)) return true;
  r->www_authenticate = token ? "Bearer realm=\"gpulab\", error=\"invalid_token\""
                              : "Bearer realm=\"gpulab\"";
  *result = respond_fail(r, 401, token ? "invalid_token" : "missing_token", NULL,
                         token ? "the token is not valid" : "send Authorization: Bearer <token>");
  return false;
}

/* The body's media type and announced size (415, 413) for a route that takes one
 * (flags: its enum route_flag); marks a text/plain body of a JSON route for
 * router_dispatch to parse. */
static bool precheck_body(struct request *r, unsigned flags, enum MHD_Result *result) {
  bool upload = (flags & ROUTE_UPLOAD) != 0;
  const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_CONTENT_TYPE);
  if (flags & ROUTE_SOURCE) { /* its media types are its own: text/plain is a source too */
    if (!route_kernels_media_type(ct)) {
      *result = respond_fail(r, 415, "unsupported_media_type", NULL,
                             "send the kernel as JSON, as text/x-cuda (its fields as query "
                             "parameters) or as multipart/form-data, got '%.100s'",
                             ct);
      return true;
    }
  } else if (upload) {
    static const char *const form[] = {"application/x-www-form-urlencoded", NULL};
    size_t len;
    if (ct && media_type_in(ct, form, &len)) {
      r->body_form_upload = true; /* curl -d @a.npy: the body says what it is */
    } else if (!npy_content_type(ct)) {
      *result = respond_fail(r, 415, "unsupported_media_type", NULL,
                             "send a .npy file (Content-Type: application/x-npy) or raw float32 "
                             "(application/octet-stream with ?shape=m,n), got '%.100s'",
                             ct ? ct : "");
      return true;
    }
  } else if (plain_text_content_type(ct)) {
    r->body_plain_text = true; /* router_dispatch looks at it once it has arrived */
  } else if (!json_content_type(ct)) {
    *result = respond_fail(r, 415, "unsupported_media_type", NULL,
                           "the body must be JSON (Content-Type: application/json), got '%.100s'",
                           ct);
    return true;
  }
  if (upload) r->body_limit = r->srv->opts.max_upload;
  const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_CONTENT_LENGTH);
  unsigned long long length = cl ? strtoull(cl, NULL, 10) : 0;
  if (length > r->body_limit) {
    *result = respond_fail(r, 413, "body_too_large", NULL,
                           "the request body has %llu bytes; %s allows %zu", length,
                           upload ? "--max-upload" : "--max-body", r->body_limit);
    return true;
  }
  return false;
}

bool router_precheck(struct request *r, const char *url, enum MHD_Result *result) {
  struct route_match m;
  bool versioned;
  const char *path = unversioned(url, &versioned);
  r->api_prefix = versioned ? ROUTER_PREFIX : "";
  if (!match_route(path, &m)) {
    *result = respond_fail(r, 404, "not_found", NULL, "no route %.8s %.200s", r->method, url);
    return true;
  }
  if (!authenticate(r, &m.route, result)) return true;
  r->allow = m.route.allow;
  r->route = m.route.pattern;
  const char *method = strcmp(r->method, "HEAD") == 0 ? "GET" : r->method;
  if (!method_allowed(method, m.route.allow)) {
    *result = respond_fail(r, 405, "method_not_allowed", NULL,
                           "%.8s is not allowed on %.200s; allowed: %s", r->method, url,
                           m.route.allow);
    return true;
  }
  if (strcmp(method, "POST") != 0 || !(m.route.flags & (ROUTE_JSON | ROUTE_UPLOAD | ROUTE_SOURCE)))
    return false;
  return precheck_body(r, m.route.flags, result);
}

enum MHD_Result router_dispatch(struct request *r, const char *url) {
  struct route_match m;
  bool versioned;
  url = unversioned(url, &versioned);
  if (!match_route(url, &m)) /* router_precheck refused it already */
    return respond_fail(r, 404, "not_found", NULL, "no route %.8s %.200s", r->method, url);
  if (r->body_plain_text && r->body_len) {
    json_t *parsed = json_loadb(r->body, r->body_len, JSON_DECODE_ANY, NULL);
    if (!parsed)
      return respond_fail(r, 415, "unsupported_media_type", NULL,
                          "the body is text/plain and not JSON; send JSON (Content-Type: "
                          "application/json)");
    json_decref(parsed);
  }
  struct route_args args = {.url = url, .id = m.id, .id2 = m.id2, .type = m.type};
  return m.route.serve(r, &args);
}
