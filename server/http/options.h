/* What the HTTP layer is configured with (main fills it from the flags): where it
 * listens, its limits, and the modules its routes use, all borrowed. */
#ifndef GPULAB_HTTP_OPTIONS_H
#define GPULAB_HTTP_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct http_options {
  const char *host;                       /* numeric IPv4 or IPv6 address to bind */
  int port;                               /* 0 picks a free port */
  int threads;                            /* libmicrohttpd's thread pool */
  size_t max_body;                        /* larger request bodies get 413 */
  size_t max_upload;                      /* the same for POST /buffers */
  double default_wait_s;                  /* how long POSTs wait for their job without ?wait= */
  long inline_max_bytes;                  /* --inline-max-bytes (submit.c: job_may_run_inline) */
  struct metrics *metrics;                /* borrowed; counts every request */
  FILE *access_log;                       /* borrowed; one JSON line per request, or NULL */
  const struct auth *auth;                /* borrowed; NULL: no tokens, clients are addresses */
  const char *tls_cert_pem, *tls_key_pem; /* PEM text (borrowed), or NULL for HTTP */
  int max_connections, max_connections_per_ip, timeout_s;
  size_t min_upload_rate;  /* each this many body bytes extend the deadline by 1 s; 0: fixed */
  int max_queued;          /* --max-queued: a sweep checks it before submitting any job */
  const char *socket_path; /* non-NULL: also listen on this Unix socket (clients: Unix users) */
  int socket_mode;         /* its permission bits */
  long socket_gid;         /* its group, or -1 */
  bool no_tcp;             /* only the socket */
  const struct service *service; /* borrowed; the store, the fleet, sweeps, users' kernels */
  const char *web_root;          /* NULL: the dashboard's embedded files; else read from here */
  const char *chartjs_path;      /* NULL: STATIC_CHARTJS_DEFAULT (server/http/static.h) */
  const char *codemirror_dir;    /* NULL: STATIC_CODEMIRROR_DEFAULT (server/http/static.h) */
};

struct metrics;
struct auth;
struct service;

#endif
