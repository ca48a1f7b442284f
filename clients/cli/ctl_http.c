/* gpulabctl's HTTP (ctl_http.h). */
#include "clients/cli/ctl_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

volatile sig_atomic_t ctl_interrupted;

struct buf {
  char *p;
  size_t len, cap;
};

static bool buf_add(struct buf *b, const char *data, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = '\0';
  return true;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg) {
  return buf_add(arg, data, size * n) ? size * n : 0;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg) {
  struct ctl_reply *r = arg;
  size_t len = size * n;
  if (len > 9 && !strncasecmp(data, "Location:", 9)) {
    const char *v = data + 9;
    while (*v == ' ') v++;
    size_t vl = (size_t)(data + len - v);
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n')) vl--;
    snprintf(r->location, sizeof r->location, "%.*s", (int)vl, v);
  }
  return len;
}

/* Progress callback: a non-zero answer aborts the transfer (Ctrl-C). */
static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
  (void)arg, (void)a, (void)b, (void)c, (void)d;
  return ctl_interrupted ? 1 : 0;
}

/* A handle for path on c's server, with its headers in *hdrs (the caller frees both). */
static CURL *handle(const struct ctl *c, const char *path, const char *ct,
                    struct curl_slist **hdrs) {
  CURL *h = curl_easy_init();
  if (!h) return NULL;
  char url[2048];
  snprintf(url, sizeof url, "%s/v1%s", c->server, path);
  curl_easy_setopt(h, CURLOPT_URL, url);
  if (c->socket) curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket);
  *hdrs = NULL;
  if (c->token) {
    char auth[512];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->token);
    *hdrs = curl_slist_append(*hdrs, auth);
  }
  if (ct) {
    char type[128];
    snprintf(type, sizeof type, "Content-Type: %s", ct);
    *hdrs = curl_slist_append(*hdrs, type);
  }
  *hdrs = curl_slist_append(*hdrs, "Expect:"); /* no 100-continue round trip */
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
  return h;
}

int ctl_request(const struct ctl *c, const char *method, const char *path, const char *ct,
                const void *body, size_t len, struct ctl_reply *out, char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  struct curl_slist *hdrs = NULL;
  CURL *h = handle(c, path, body ? ct : NULL, &hdrs);
  if (!h) {
    snprintf(err, err_len, "libcurl could not start a request");
    return -1;
  }
  struct buf b = {0};
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  if (body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  } else if (!strcmp(method, "GET")) {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
  CURLcode rc = curl_easy_perform(h);
  int ret = 0;
  if (rc != CURLE_OK) {
    snprintf(err, err_len, "%s: %s", c->server,
             rc == CURLE_ABORTED_BY_CALLBACK ? "interrupted" : curl_easy_strerror(rc));
    ret = -1;
  } else {
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
    out->body = b.p ? b.p : strdup("");
    out->len = b.len;
    b.p = NULL;
    out->json = json_loadb(out->body, out->len, 0, NULL);
  }
  free(b.p);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  return ret;
}

void ctl_reply_free(struct ctl_reply *r) {
  free(r->body);
  json_decref(r->json);
  memset(r, 0, sizeof *r);
}

void ctl_problem_line(const struct ctl_reply *r, char *out, size_t len) {
  const char *code = json_string_value(json_object_get(r->json, "code"));
  const char *detail = json_string_value(json_object_get(r->json, "detail"));
  const char *field = json_string_value(json_object_get(r->json, "field"));
  if (code && detail)
    snprintf(out, len, "%ld %s%s%s%s: %s", r->status, code, field ? " (" : "", field ? field : "",
             field ? ")" : "", detail);
  else
    snprintf(out, len, "%ld: %.200s", r->status, r->body ? r->body : "");
}

/* ---- Server-Sent Events ---- */

struct sse {
  struct buf line; /* the line being read */
  char event[64];  /* the event's name ("message" unless named) */
  struct buf data; /* its data lines, joined by \n */
  bool (*on_event)(const char *event, json_t *data, void *arg);
  void *arg;
  bool stop;
};

/* One complete line of the stream: a field, or the blank line that ends an event. */
static void sse_line(struct sse *s, const char *line) {
  if (!*line) {
    if (s->data.len) {
      json_t *data = json_loadb(s->data.p, s->data.len, 0, NULL);
      s->stop = s->on_event(s->event[0] ? s->event : "message", data, s->arg);
      json_decref(data);
    }
    s->event[0] = '\0';
    s->data.len = 0;
    return;
  }
  if (!strncmp(line, "event:", 6)) {
    snprintf(s->event, sizeof s->event, "%s", line + 6 + (line[6] == ' '));
  } else if (!strncmp(line, "data:", 5)) {
    const char *v = line + 5 + (line[5] == ' ');
    if (s->data.len) buf_add(&s->data, "\n", 1);
    buf_add(&s->data, v, strlen(v));
  }
}

static size_t on_stream(char *data, size_t size, size_t n, void *arg) {
  struct sse *s = arg;
  for (size_t i = 0; i < size * n && !s->stop; i++) {
    if (data[i] == '\n') {
      if (s->line.len && s->line.p[s->line.len - 1] == '\r') s->line.p[--s->line.len] = '\0';
      sse_line(s, s->line.len ? s->line.p : "");
      s->line.len = 0;
    } else if (!buf_add(&s->line, data + i, 1)) {
      return 0;
    }
  }
  return s->stop ? 0 : size * n; /* 0 ends the transfer: the caller has seen enough */
}

int ctl_events(const struct ctl *c, const char *path,
               bool (*on_event)(const char *event, json_t *data, void *arg), void *arg, char *err,
               size_t err_len) {
  struct curl_slist *hdrs = NULL;
  CURL *h = handle(c, path, NULL, &hdrs);
  if (!h) {
    snprintf(err, err_len, "libcurl could not start a request");
    return -1;
  }
  struct sse s = {.on_event = on_event, .arg = arg};
  curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
  CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  int ret;
  if (s.stop) {
    ret = 0;
  } else if (ctl_interrupted) {
    ret = 2;
  } else if (rc == CURLE_OK && status == 200) {
    ret = 1;
  } else {
    snprintf(err, err_len, "%s: %s", path,
             rc != CURLE_OK ? curl_easy_strerror(rc) : "the event stream was refused");
    ret = -1;
  }
  free(s.line.p);
  free(s.data.p);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  return ret;
}
