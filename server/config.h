/* gpulabd's command line: every flag, its default, and --help. */
#ifndef GPULAB_CONFIG_H
#define GPULAB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "kernels/backends/backend.h"

#define GPULAB_VERSION "0.1.0" /* --version, gpulab_build_info */

struct config {
  char host[64];
  int port;
  enum backend_kind backend;
  int devices[16]; /* ordinals, in order */
  int n_devices;    /* 0: all (CUDA), one (CPU) */
  int streams;
  size_t max_body;
  size_t max_upload;
  int http_threads;
  int max_queued;
  int max_jobs_kept;
  double default_wait_s;
  long inline_max_bytes; /* waited-for jobs this small may run on the HTTP thread; 0: never */
  char access_log[256]; /* "-": stdout; "off": none; else a file appended to */
  const char *web_root; /* NULL: the embedded dashboard; borrowed from argv */
  const char *tokens;   /* --tokens FILE, or NULL (then loopback only) */
  bool insecure_no_auth;
  const char *tls_cert, *tls_key; /* PEM files, or NULL for plain HTTP */
  int max_connections, max_connections_per_ip, timeout_s;
  char db[256];     /* job records: a SQLite file, or ":memory:" to keep nothing */
  int keep_days;    /* finished jobs older than this are pruned; 0 keeps all */
  long long max_db_bytes; /* the store's pages in use are kept within this; 0: no bound */
  int grace_s;      /* SIGTERM: how long running jobs may take to finish */
  bool allow_fault_injection;
  const char *chartjs;  /* NULL: the default path (server/http/static.h); borrowed from argv */
  const char *socket_path;  /* --socket: also listen on this Unix socket; NULL: none */
  int socket_mode;          /* its permission bits (default 0666, 0660 with a group) */
  const char *socket_group; /* NULL, or the group that owns it */
  bool no_tcp;              /* --no-tcp: the socket only */
  bool no_ceilings;     /* --no-ceilings: skip measuring the devices' ceilings at start-up */
};

/* Fills cfg from argv over the defaults. Returns 0 to run, 1 when --help or
 * --version was printed to out, -1 with a message in err for a bad flag. */
int config_parse(int argc, char **argv, struct config *cfg, FILE *out, char *err, size_t err_len);

#endif
