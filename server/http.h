/* The HTTP layer: libmicrohttpd in internal polling mode with a thread pool,
 * routing, and JSON responses. Waiting clients are suspended, never holding a
 * thread. Knows libmicrohttpd and the engine; not CUDA. */
#ifndef GPULAB_HTTP_H
#define GPULAB_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "server/engine.h"

struct http_options {
  const char *host;      /* numeric IPv4 or IPv6 address to bind */
  int port;              /* 0 picks a free port */
  int threads;           /* libmicrohttpd's thread pool */
  size_t max_body;       /* larger request bodies get 413 */
  size_t max_upload;     /* the same for POST /buffers */
  double default_wait_s; /* how long POSTs wait for their job without ?wait= */
  long inline_max_bytes;  /* --inline-max-bytes (handlers.c: job_may_run_inline) */
  struct metrics *metrics; /* borrowed; counts every request */
  FILE *access_log;        /* borrowed; one JSON line per request, or NULL */
  const struct auth *auth; /* borrowed; NULL: no tokens, clients are addresses */
  const char *tls_cert_pem, *tls_key_pem; /* PEM text (borrowed), or NULL for HTTP */
  int max_connections, max_connections_per_ip, timeout_s;
  int max_queued;           /* --max-queued: a sweep checks it before submitting any job */
  const char *socket_path;  /* non-NULL: also listen on this Unix socket (clients: Unix users) */
  int socket_mode;          /* its permission bits */
  long socket_gid;          /* its group, or -1 */
  bool no_tcp;              /* only the socket */
  struct store *store; /* borrowed; finished jobs older than memory are read here */
  struct ukernels *ukernels; /* borrowed; users' kernels (server/ukernels.h), or NULL */
  const char *web_root;     /* NULL: the dashboard's embedded files; else read from here */
  const char *chartjs_path; /* NULL: STATIC_CHARTJS_DEFAULT (server/static.h) */
};

struct metrics;
struct auth;
struct store;
struct ukernels;

struct http_server;

/* Starts serving. engine and opts' strings are borrowed and must outlive the server. Returns 0, or
 * -1 with a message in err. */
int http_server_start(const struct http_options *opts, struct engine *engine,
                      struct http_server **out, char *err, size_t err_len);
int http_server_port(const struct http_server *s); /* the bound port; 0 with no_tcp */
/* Connections one address may hold: --max-connections-per-ip, but at most a quarter
 * of --max-connections (at least 1), so that others always find room. */
int http_per_address_limit(int max_connections, int max_connections_per_ip);
/* Stops accepting new connections; requests in flight go on. */
void http_server_quiesce(struct http_server *s);
/* Waits (timeout_s at most) until every request begun has been answered, so that
 * answers given at shutdown reach their clients. NULL is a no-op. */
void http_server_drain(struct http_server *s, double timeout_s);
/* Closes every connection and frees the server. NULL is a no-op. */
void http_server_stop(struct http_server *s);

#endif
