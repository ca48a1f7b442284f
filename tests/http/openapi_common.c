/* The harness of test_openapi.c (openapi_common.h). */
#include "openapi_common.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "check.h"

json_t *DOC;
json_t *RECORDS;
struct gpulabd S;
struct gpulabd T;

/* ---- the document ---- */

json_t *doc_operation(const char *tmpl, const char *method) {
  char m[8];
  size_t n = strlen(method);
  for (size_t i = 0; i <= n && i < sizeof m; i++) m[i] = (char)(i < n ? method[i] - 'A' + 'a' : 0);
  return json_object_get(json_object_get(json_object_get(DOC, "paths"), tmpl), m);
}

/* The value a "#/a/b" reference (JSON pointer: ~1 is '/', ~0 is '~') names within
 * the document (borrowed), or NULL. */
json_t *doc_pointer(const char *ref) {
  if (!ref || ref[0] != '#') return NULL;
  json_t *v = DOC;
  const char *p = ref + 1;
  while (v && *p == '/') {
    char key[256];
    size_t n = 0;
    for (p++; *p && *p != '/' && n + 1 < sizeof key; p++)
      key[n++] = *p == '~' && p[1] == '1' ? (p++, '/') : *p == '~' && p[1] == '0' ? (p++, '~') : *p;
    key[n] = '\0';
    if (json_is_array(v)) {
      char *end;
      unsigned long i = strtoul(key, &end, 10);
      v = *end ? NULL : json_array_get(v, i);
    } else {
      v = json_object_get(v, key);
    }
  }
  return *p ? NULL : v;
}

/* o itself, or what its $ref (and theirs) names; borrowed. */
json_t *doc_deref(json_t *o) {
  for (int i = 0; i < 16 && json_is_string(json_object_get(o, "$ref")); i++)
    o = doc_pointer(json_string_value(json_object_get(o, "$ref")));
  return o;
}

void expect_schema(json_t *schema, json_t *v, bool valid, const char *mention, const char *fmt,
                   ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (!schema) CHECK_FAIL_("%s: no schema in the document", what);
  json_t *rec = json_pack("{s:s,s:O,s:o,s:b}", "what", what, "schema", schema, "value",
                          v ? json_deep_copy(v) : json_null(), "valid",
                          valid); /* v may change later */
  CHECK(rec != NULL);
  if (mention) json_object_set_new(rec, "mention", json_string(mention));
  json_array_append_new(RECORDS, rec);
}

json_t *schema_named(const char *name) {
  json_t *s = json_object_get(json_object_get(json_object_get(DOC, "components"), "schemas"), name);
  if (!s) CHECK_FAIL_("components/schemas/%s is missing", name);
  return s;
}

struct op_seen seen[128];
int n_seen;

void record(const char *tmpl, const char *method, long status) {
  char op[80], st[8];
  snprintf(op, sizeof op, "%s %s", method, tmpl);
  snprintf(st, sizeof st, "%ld,", status);
  int i = 0;
  while (i < n_seen && strcmp(seen[i].op, op) != 0) i++;
  if (i == n_seen) {
    CHECK(n_seen < (int)(sizeof seen / sizeof seen[0]));
    snprintf(seen[n_seen++].op, sizeof seen[0].op, "%s", op);
  }
  if (!strstr(seen[i].statuses, st) &&
      strlen(seen[i].statuses) + strlen(st) < sizeof seen[i].statuses)
    strcat(seen[i].statuses, st);
}

/* Recursively: every $ref in the document resolves. */
void check_refs(json_t *v, const char *at) {
  const char *key;
  size_t i;
  json_t *x;
  if (json_is_object(v)) {
    json_t *ref = json_object_get(v, "$ref");
    if (ref && !doc_pointer(json_string_value(ref)))
      CHECK_FAIL_("%s: $ref %s resolves to nothing", at, json_string_value(ref));
    json_object_foreach(v, key, x) check_refs(x, key);
  } else if (json_is_array(v)) {
    json_array_foreach(v, i, x) check_refs(x, at);
  }
}

/* ---- requests ---- */

void reply_free(struct reply *r) {
  free(r->content_type);
  free(r->headers);
  free(r->body);
  json_decref(r->json);
  memset(r, 0, sizeof *r);
}

void append(char **buf, size_t *len, const char *data, size_t n) {
  char *grown = realloc(*buf, *len + n + 1);
  CHECK(grown != NULL);
  memcpy(grown + *len, data, n);
  *len += n;
  grown[*len] = '\0';
  *buf = grown;
}

size_t on_body(char *data, size_t size, size_t n, void *arg) {
  struct reply *r = arg;
  append(&r->body, &r->body_len, data, size * n);
  return size * n;
}

size_t on_header(char *data, size_t size, size_t n, void *arg) {
  struct reply *r = arg;
  size_t len = size * n, hlen = strlen(r->headers);
  if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response (after 100 Continue) */
    r->headers[0] = '\0';
    return len;
  }
  while (len && (data[len - 1] == '\r' || data[len - 1] == '\n')) len--;
  if (len == 0) return size * n;
  append(&r->headers, &hlen, "\n", 1);
  append(&r->headers, &hlen, data, len);
  if (len > 13 && strncasecmp(data, "Content-Type:", 13) == 0) {
    free(r->content_type);
    const char *v = data + 13;
    while (*v == ' ') v++;
    r->content_type = strndup(v, len - (size_t)(v - data));
  }
  return size * n;
}

/* The value of header name in r (a static copy), or NULL. */
const char *header(const struct reply *r, const char *name) {
  static char value[512];
  size_t n = strlen(name);
  for (const char *p = r->headers; (p = strchr(p, '\n')); p++)
    if (strncasecmp(p + 1, name, n) == 0 && p[1 + n] == ':') {
      const char *v = p + 2 + n, *end = strchr(v, '\n');
      while (*v == ' ') v++;
      snprintf(value, sizeof value, "%.*s", (int)(end ? end - v : (long)strlen(v)), v);
      return value;
    }
  return NULL;
}

/* One request to 127.0.0.1:port, on a connection of its own. headers: a
 * NULL-terminated list of "Name: value" lines, or NULL. */
void request(int port, const char *method, const char *path, const char *const *headers,
             const char *body, size_t body_len, struct reply *out) {
  memset(out, 0, sizeof *out);
  out->body = calloc(1, 1);
  out->headers = calloc(1, 1);
  CHECK(out->body && out->headers);
  CURL *h = curl_easy_init();
  CHECK(h != NULL);
  char url[1024];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
  struct curl_slist *list = curl_slist_append(NULL, "Expect:");
  for (int i = 0; headers && headers[i]; i++) list = curl_slist_append(list, headers[i]);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
  if (!strcmp(method, "HEAD")) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    if (strcmp(method, "POST") != 0) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  } else if (strcmp(method, "GET") != 0) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  }
  CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) CHECK_FAIL_("%s %s: curl error %s", method, path, curl_easy_strerror(rc));
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
  curl_slist_free_all(list);
  curl_easy_cleanup(h);
  if (out->body_len) out->json = json_loadb(out->body, out->body_len, JSON_DECODE_ANY, NULL);
}

/* The media type of a Content-Type value, without parameters, lower case. */
void media_type(const char *ct, char *out, size_t len) {
  size_t n = ct ? strcspn(ct, ";") : 0;
  while (n && ct[n - 1] == ' ') n--;
  if (n >= len) n = len - 1;
  for (size_t i = 0; i < n; i++)
    out[i] = (char)(ct[i] >= 'A' && ct[i] <= 'Z' ? ct[i] - 'A' + 'a' : ct[i]);
  out[n] = '\0';
}

/* An error's problem: its status is the HTTP status, and its type is the entry of
 * its code in components/x-problem-types, whose title and statuses it has. */
void check_problem(const char *method, const char *tmpl, const struct reply *r) {
  const char *code = JSTR(r->json, "code"), *type = JSTR(r->json, "type");
  if (JINT(r->json, "status") != r->status)
    CHECK_FAIL_("%s %s: status %lld differs from HTTP %ld", method, tmpl, JINT(r->json, "status"),
                r->status);
  const char *prefix = "/openapi.json";
  json_t *entry = strncmp(type, prefix, strlen(prefix)) == 0 ? doc_pointer(type + strlen(prefix))
                                                             : NULL;
  if (!entry)
    CHECK_FAIL_("%s %s -> %ld: type %s names nothing in the document", method, tmpl, r->status,
                type);
  char want[128];
  snprintf(want, sizeof want, "/openapi.json#/components/x-problem-types/%s", code);
  if (strcmp(type, want) != 0)
    CHECK_FAIL_("%s %s: type %s is not code %s's", method, tmpl, type, code);
  if (!json_equal(json_object_get(entry, "title"), json_object_get(r->json, "title")))
    CHECK_FAIL_("%s %s: title \"%s\" is not the document's for %s", method, tmpl,
                JSTR(r->json, "title"), code);
  size_t i;
  json_t *st;
  bool listed = false;
  json_array_foreach(json_object_get(entry, "status"), i, st)
      listed |= json_integer_value(st) == r->status;
  if (!listed)
    CHECK_FAIL_("%s %s: %s answered with %ld, which its entry does not list", method, tmpl, code,
                r->status);
  if (strcmp(JSTR(r->json, "instance"), tmpl) != 0 && strchr(tmpl, '{') == NULL)
    CHECK_FAIL_("%s %s: instance %s is not the request's path", method, tmpl,
                JSTR(r->json, "instance"));
}

/* The contract: r's status is documented for tmpl and method, its Content-Type is
 * one the response lists, its required headers are there, and a JSON body
 * validates against the response's schema. */
void check_reply(const char *tmpl, const char *method, const struct reply *r) {
  json_t *op = doc_operation(tmpl, method);
  if (!op) CHECK_FAIL_("%s %s is not documented (HTTP %ld)", method, tmpl, r->status);
  char status[8];
  snprintf(status, sizeof status, "%ld", r->status);
  json_t *resp = doc_deref(json_object_get(json_object_get(op, "responses"), status));
  if (!resp)
    CHECK_FAIL_("%s %s answered HTTP %ld, which the document does not list; body: %.2000s", method,
                tmpl, r->status, r->body);
  record(tmpl, method, r->status);
  const char *name;
  json_t *h;
  json_object_foreach(json_object_get(resp, "headers"), name,
                      h) if (json_is_true(json_object_get(doc_deref(h), "required")) &&
                             !header(r, name))
      CHECK_FAIL_("%s %s -> %ld: the documented header %s is missing", method, tmpl, r->status,
                  name);
  json_t *content = json_object_get(resp, "content");
  if (!strcmp(method, "HEAD")) return;
  if (!content) {
    if (r->body_len)
      CHECK_FAIL_("%s %s -> %ld: a body, but none is documented: %.500s", method, tmpl, r->status,
                  r->body);
    return;
  }
  char media[128];
  media_type(r->content_type, media, sizeof media);
  json_t *mt = json_object_get(content, media);
  if (!mt)
    CHECK_FAIL_("%s %s -> %ld: Content-Type '%s' is not documented", method, tmpl, r->status,
                r->content_type);
  if (strcmp(media, "application/json") != 0 && strcmp(media, "application/problem+json") != 0)
    return;
  if (!r->json)
    CHECK_FAIL_("%s %s -> %ld: the body is not JSON: %.500s", method, tmpl, r->status, r->body);
  /* /health's 503 is its report (Health: a device or the store failing), not a problem. */
  bool problem = strcmp(media, "application/problem+json") == 0;
  bool report = r->status == 503 && strcmp(tmpl, "/health") == 0;
  if ((r->status >= 400 && !report) != problem)
    CHECK_FAIL_(
        "%s %s -> %ld: Content-Type %s (errors are application/problem+json, nothing else is; "
        "/health's 503 is its report)",
        method, tmpl, r->status, media);
  expect_schema(json_object_get(mt, "schema"), r->json, true, NULL, "%s %s -> %ld", method, tmpl,
                r->status);
  if (problem) check_problem(method, tmpl, r);
}

/* Requests method path on d, checks the reply against tmpl, and expects status
 * (and, for an error, this error.code). The caller frees *out (NULL: freed here). */
void call_h(struct gpulabd *d, const char *tmpl, const char *method, const char *path,
            const char *const *headers, const char *body, size_t body_len, long status,
            const char *code, struct reply *out) {
  struct reply r;
  request(d->port, method, path, headers, body, body_len, &r);
  if (r.status != status)
    CHECK_FAIL_("%s %s: HTTP %ld, expected %ld; body: %.2000s", method, path, r.status, status,
                r.body);
  check_reply(tmpl, method, &r);
  if (code && strcmp(JSTR(r.json, "code"), code) != 0)
    CHECK_FAIL_("%s %s: code %s, expected %s", method, path, JSTR(r.json, "code"), code);
  if (out)
    *out = r;
  else
    reply_free(&r);
}

void call(const char *tmpl, const char *method, const char *path, long status, const char *code,
          struct reply *out) {
  call_h(&S, tmpl, method, path, NULL, NULL, 0, status, code, out);
}

void call_get_head(const char *tmpl, const char *path, long status, const char *code) {
  call(tmpl, "GET", path, status, code, NULL);
  call(tmpl, "HEAD", path, status, NULL, NULL);
}

/* Checks body (JSON) against the operation's request schema: it must be accepted
 * (doc_ok) or refused, as gpulabd does. */
void check_request_body(const char *tmpl, const char *body, bool doc_ok) {
  json_t *rb = doc_deref(json_object_get(doc_operation(tmpl, "POST"), "requestBody"));
  json_t *schema = json_object_get(
      json_object_get(json_object_get(rb, "content"), "application/json"), "schema");
  if (!schema) CHECK_FAIL_("POST %s documents no application/json body", tmpl);
  json_t *v = json_loads(body, JSON_DECODE_ANY, NULL);
  if (!v) return; /* malformed on purpose */
  expect_schema(schema, v, doc_ok, NULL, "POST %s %s: gpulabd %s this body", tmpl, body,
                doc_ok ? "accepts" : "refuses");
  json_decref(v);
}

/* POSTs a JSON body to path (tmpl in the document) and expects status and code.
 * doc_ok: whether the document's request schema must accept the body. Returns the
 * JSON answer (the caller decrefs). */
json_t *post(const char *tmpl, const char *path, const char *body, long status, const char *code,
             bool doc_ok) {
  static const char *const json_ct[] = {"Content-Type: application/json", NULL};
  check_request_body(tmpl, body, doc_ok);
  struct reply r;
  call_h(&S, tmpl, "POST", path, json_ct, body, strlen(body), status, code, &r);
  json_t *j = json_incref(r.json);
  reply_free(&r);
  return j;
}

json_t *job_wait(long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  for (int i = 0; i < 2400; i++) { /* 2 minutes: a default stencil under ASan on a busy machine */
    struct reply r;
    call("/jobs/{id}", "GET", path, 200, NULL, &r);
    const char *state = JSTR(r.json, "state");
    if (!strcmp(state, "done") || !strcmp(state, "failed") || !strcmp(state, "canceled")) {
      json_t *j = json_incref(r.json);
      reply_free(&r);
      return j;
    }
    reply_free(&r);
    usleep(50000);
  }
  CHECK_FAIL_("job %lld did not finish", id);
}
