/* Serving the dashboard (static.h): web/'s files from the copies embedded at build
 * time (or from --web-root, name for name), Chart.js from --chartjs, CodeMirror's
 * three files from --codemirror, and
 * experiments.json (every experiment's descriptor: api/describe.h); regular files
 * only; each with its Content-Type, an ETag honoured by If-None-Match, and a
 * Content-Security-Policy that allows only the page's own origin. */
#include "server/http/static.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/describe.h"
#include "server/http/request.h"

/* Only this origin: no inline script or style (the page keeps both in files), no
 * other host, no plugins, no framing. */
static const char csp[] =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'";

static const char *content_type(const char *name) {
  static const struct {
    const char *ext, *type;
  } types[] = {
      {".html", "text/html; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".json", "application/json"},
  };
  const char *dot = strrchr(name, '.');
  for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
    if (strcmp(dot, types[i].ext) == 0) return types[i].type;
  return "application/octet-stream";
}

static const struct static_asset *find_asset(const char *name) {
  for (size_t i = 0; i < static_asset_count; i++)
    if (strcmp(static_assets[i].name, name) == 0) return &static_assets[i];
  return NULL;
}

bool static_wants_html(const char *accept) {
  if (!accept) return false;
  for (const char *p = accept; *p; p++)
    if (strncasecmp(p, "text/html", 9) == 0) return true;
  return false;
}

/* If-None-Match: "*" or a comma-separated list of (possibly weak) entity tags. */
static bool etag_matches(struct request *r, const char *etag) {
  const char *inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_IF_NONE_MATCH);
  if (!inm) return false;
  size_t len = strlen(etag);
  for (const char *p = inm; *p;) {
    p += strspn(p, " \t,");
    if (*p == '*') return true;
    if (strncmp(p, "W/", 2) == 0) p += 2;
    if (strncmp(p, etag, len) == 0 && strchr(" \t,", p[len])) return true;
    p += strcspn(p, ",");
  }
  return false;
}

/* Queues resp (200, or 304 when resp is NULL) with the headers every asset carries. */
static enum MHD_Result queue(struct request *r, struct MHD_Response *resp, const char *type,
                             const char *etag, bool page) {
  unsigned status = MHD_HTTP_OK;
  if (!resp) {
    status = MHD_HTTP_NOT_MODIFIED;
    resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
  } else {
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
  /* Cached, but asked again every time: a rebuilt gpulabd serves its new page at once. */
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  MHD_add_response_header(resp, "Content-Security-Policy", csp);
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(resp, "Referrer-Policy", "same-origin");
  if (page) MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept");
  enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result serve_embedded(struct request *r, const struct static_asset *a, bool page) {
  if (etag_matches(r, a->etag)) return queue(r, NULL, NULL, a->etag, page);
  struct MHD_Response *resp = MHD_create_response_from_buffer(a->size, (void *)a->data,
                                                              MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  return queue(r, resp, content_type(a->name), a->etag, page);
}

/* A regular file on disk; its ETag comes from its inode, size and modification time,
 * so a 304 needs no read. Returns 1 (nothing queued) when it cannot be opened or is
 * not a regular file. Opened without blocking: a FIFO (or a device) in its place
 * would otherwise hold this HTTP thread until a writer came. */
static int serve_file(struct request *r, const char *path, const char *name, bool page,
                      enum MHD_Result *ret) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  struct stat st;
  if (fd < 0) return 1;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, 0) != 0) {
    close(fd);
    return 1;
  }
  char etag[80];
  snprintf(etag, sizeof etag, "\"f%" PRIx64 "-%" PRIx64 "-%" PRIx64 "\"", (uint64_t)st.st_ino,
           (uint64_t)st.st_size,
           (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec);
  if (etag_matches(r, etag)) {
    close(fd);
    *ret = queue(r, NULL, NULL, etag, page);
    return 0;
  }
  struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd); /* owns fd */
  if (!resp) {
    close(fd);
    *ret = MHD_NO;
    return 0;
  }
  *ret = queue(r, resp, content_type(name), etag, page);
  return 0;
}

/* The CodeMirror files the kernel editor loads: the name under /static/, and where
 * libjs-codemirror keeps it under its directory. Nothing else of it is served. */
static const struct {
  const char *name, *path;
} codemirror_files[] = {
    {"codemirror/codemirror.js", "codemirror.js"},
    {"codemirror/codemirror.css", "codemirror.css"},
    {"codemirror/clike.js", "mode/clike/clike.js"}, /* C, C++ and CUDA's highlighting */
    {"codemirror/javascript.js", "mode/javascript/javascript.js"}, /* JSON: the problem editor */
};

/* One of codemirror_files from dir (--codemirror, else the default); 1 when name is
 * not one of them. */
static int serve_codemirror(struct request *r, const char *name, enum MHD_Result *ret) {
  const char *dir = r->srv->opts.codemirror_dir ? r->srv->opts.codemirror_dir
                                                : STATIC_CODEMIRROR_DEFAULT;
  for (size_t i = 0; i < sizeof codemirror_files / sizeof codemirror_files[0]; i++) {
    if (strcmp(name, codemirror_files[i].name) != 0) continue;
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", dir, codemirror_files[i].path);
    if (n > 0 && (size_t)n < sizeof path && serve_file(r, path, name, false, ret) == 0) return 0;
    *ret = respond_fail(r, 404, "not_found", NULL,
                        "CodeMirror is not at %.200s: install libjs-codemirror or point "
                        "--codemirror at its directory (the kernel editor is a plain text area "
                        "without it)",
                        n > 0 && (size_t)n < sizeof path ? path : dir);
    return 0;
  }
  return 1;
}

static enum MHD_Result serve_experiments(struct request *r) {
  json_t *o = api_experiments_json(); /* each descriptor: the forms follow the server */
  char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(o);
  if (!text) return respond_json(r, 500, NULL);
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (const char *p = text; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
  char etag[24];
  snprintf(etag, sizeof etag, "\"x%016" PRIx64 "\"", h);
  if (etag_matches(r, etag)) {
    free(text);
    return queue(r, NULL, NULL, etag, false);
  }
  struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), text,
                                                              MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  return queue(r, resp, "application/json", etag, false);
}

enum MHD_Result static_respond(struct request *r, const char *url) {
  const struct http_options *o = &r->srv->opts;
  bool page = strcmp(url, "/") == 0;
  const char *name = page ? "index.html" : strncmp(url, "/static/", 8) == 0 ? url + 8 : "";
  enum MHD_Result ret;
  if (strcmp(name, STATIC_CHARTJS_NAME) == 0) {
    const char *path = o->chartjs_path ? o->chartjs_path : STATIC_CHARTJS_DEFAULT;
    if (serve_file(r, path, name, false, &ret) == 0) return ret;
    return respond_fail(r, 404, "not_found", NULL,
                        "Chart.js is not at %.200s: install libjs-chart.js or point --chartjs at "
                        "chart.min.js (the dashboard shows tables without it)",
                        path);
  }
  if (serve_codemirror(r, name, &ret) == 0) return ret;
  if (strcmp(name, "experiments.json") == 0) return serve_experiments(r);
  const struct static_asset *a = find_asset(name);
  if (!a) return respond_fail(r, 404, "not_found", NULL, "no route %.8s %.200s", r->method, url);
  if (o->web_root) {
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", o->web_root, a->name);
    if (n > 0 && (size_t)n < sizeof path && serve_file(r, path, a->name, page, &ret) == 0)
      return ret;
    return respond_fail(r, 404, "not_found", NULL, "%.200s is missing from --web-root %.200s",
                        a->name, o->web_root);
  }
  return serve_embedded(r, a, page);
}
