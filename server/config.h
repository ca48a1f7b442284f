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
  int n_devices;   /* 0: all (CUDA), one (CPU) */
  int streams;     /* lanes per device; 0: config_default_streams once devices are known */
  size_t max_body;
  size_t max_upload;
  int http_threads; /* 0: config_default_http_threads */
  int max_queued;
  int max_jobs_kept;
  double default_wait_s;
  long inline_max_bytes; /* waited-for jobs this small may run on the HTTP thread; 0: never */
  char access_log[256];  /* "-": stdout; "off": none; else a file appended to */
  const char *web_root;  /* NULL: the embedded dashboard; borrowed from argv */
  const char *tokens;    /* --tokens FILE, or NULL (then loopback only) */
  bool insecure_no_auth;
  const char *tls_cert, *tls_key; /* PEM files, or NULL for plain HTTP */
  int max_connections, max_connections_per_ip, timeout_s;
  size_t min_upload_rate; /* body bytes a second that extend a request's deadline; 0: none */
  char db[256];           /* job records: a SQLite file, or ":memory:" to keep nothing */
  bool durability_full;   /* --durability full: an fsync per commit (store_set_durability) */
  bool durability_given;  /* --durability was given (else the store's own default) */
  char node[64];         /* --node: recorded on the jobs a PostgreSQL store keeps (the host name) */
  const char *advertise; /* --advertise URL (fleet.h); NULL: http://host:port; from argv */
  int lease_s;           /* --lease-s: a fleet node's lease */
  int keep_days;         /* finished jobs older than this are pruned; 0 keeps all */
  long long max_db_bytes; /* the store's pages in use are kept within this; 0: no bound */
  int grace_s;            /* SIGTERM: how long running jobs may take to finish */
  bool allow_fault_injection;
  const char *chartjs; /* NULL: the default path (server/http/static.h); borrowed from argv */
  const char
      *codemirror; /* NULL: the default directory (server/http/static.h); borrowed from argv */
  const char *socket_path;  /* --socket: also listen on this Unix socket; NULL: none */
  int socket_mode;          /* its permission bits (default 0666, 0660 with a group) */
  const char *socket_group; /* NULL, or the group that owns it */
  bool no_tcp;              /* --no-tcp: the socket only */
  bool no_ceilings;         /* --no-ceilings: skip measuring the devices' ceilings at start-up */
  /* Users' kernels (server/service/ukernels.h): NVRTC's path (NULL: search; "none": off),
   * kernels per client, versions per kernel, compiles at once, a compile's time limit. */
  const char *nvrtc;
  int max_kernels, max_kernel_versions, compile_slots, compile_time_s;
  const char *runner;    /* gpulab-runner's path; NULL: the one beside gpulabd */
  int kernel_deadline_s; /* a user's kernel's launch deadline */
  size_t max_scratch;    /* scratch_bytes a user's kernel may ask for */
  bool cpu_runner_test;  /* tests: the CPU backend runs users' kernels in a CPU runner */
};

/* Fills cfg from argv over the defaults. Returns 0 to run, 1 when --help or
 * --version was printed to out, -EINVAL with a message in err for a bad flag. */
int config_parse(int argc, char **argv, struct config *cfg, FILE *out, char *err, size_t err_len);

/* The defaults sized from the machine (the CPUs this process may use): HTTP threads
 * one per core, 4..64; lanes per device half a core each, cores / (2 x n_devices),
 * 4..16 (the H200 box's 16 cores: 16 threads, 8 lanes). Flags override both. */
int config_default_http_threads(void);
int config_default_streams(int n_devices);

#endif
