/* The HTTP layer: libmicrohttpd in internal polling mode with a thread pool, on TCP
 * and a Unix socket, each request on its deadline, routed (router.h) to the routes of
 * its resource (routes.h). Waiting clients are suspended, never holding a thread.
 * Knows libmicrohttpd and the engine; not CUDA. */
#ifndef GPULAB_HTTP_H
#define GPULAB_HTTP_H

#include <stddef.h>

#include "server/engine/engine.h"
#include "server/http/options.h"

struct http_server;

/* Starts serving. engine and opts' strings are borrowed and must outlive the server. Returns 0, or
 * a negative errno with a message in err. */
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
