/* gpulabd's command line. */
#include "server/config.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/core/experiment.h"

/* --help: the first line names the registered experiments (print_usage), then this. */
static const char usage_flags[] =
    "  --host ADDR         numeric address to listen on (default 127.0.0.1)\n"
    "  --port N            TCP port; 0 picks a free one (default 8080)\n"
    "  --backend KIND      auto | cuda | cpu (default auto: CUDA when a device answers)\n"
    "  --devices LIST      devices to use: all, or ordinals like 0,1 (default all; the CPU\n"
    "                      backend makes one CPU device per ordinal, for tests)\n"
    "  --streams N         CUDA streams (CPU: worker threads) jobs run on per device, 1..64\n"
    "                      (default: from the machine, the cores / (2 x devices), 4..16)\n"
    "  --max-body BYTES    largest request body; larger gets 413 (default 1048576)\n"
    "  --max-upload BYTES  largest POST /buffers body (default 268435456)\n"
    "  --http-threads N    HTTP worker threads, 1..256 (default: the cores, 4..64)\n"
    "  --max-queued N      queued or waiting jobs per client; more get 429 (default 1024)\n"
    "  --max-jobs-kept N   finished jobs remembered, oldest forgotten first (default 10000)\n"
    "  --db PATH           job records in SQLite (default ./gpulab.db; :memory: keeps\n"
    "                      nothing): accepted jobs survive a crash or restart; none:\n"
    "                      no store at all (nothing durable, history only in memory);\n"
    "                      postgresql://user@host:port/dbname: a PostgreSQL server\n"
    "  --node NAME         this gpulabd's name on the jobs it stores in PostgreSQL\n"
    "                      (default the host name)\n"
    "  --advertise URL     PostgreSQL fleets: the URL other nodes give clients for this\n"
    "                      one (default http://HOST:PORT)\n"
    "  --lease-s N         PostgreSQL fleets: a node silent for N seconds is taken over:\n"
    "                      its queued jobs run elsewhere, its running ones fail\n"
    "                      interrupted (default 10)\n"
    "  --durability MODE   normal | full (default normal; full on PostgreSQL): normal\n"
    "                      commits survive gpulabd crashing (kill -9), a power loss\n"
    "                      may lose the last commits;\n"
    "                      full adds an fsync per commit, surviving a power loss too\n"
    "  --keep-days N       prune finished jobs older than N days (default 30; 0 keeps all)\n"
    "  --max-db-bytes N    keep the store within N bytes: past it the oldest finished\n"
    "                      jobs are pruned; when unfinished ones alone pass it, new jobs\n"
    "                      get 507 (default 1073741824; 0: no bound; at least 65536)\n"
    "  --grace SECONDS     on SIGTERM, how long running jobs may take to finish (default 30);\n"
    "                      those still running then end failed, \"interrupted\"\n"
    "  --allow-fault-injection  for recovery tests only: a job with \"fault\":\"device_lost\"\n"
    "                      makes the device fail as a lost CUDA context does\n"
    "  --tokens FILE       clients and their tokens (TOKEN NAME [max_queued=N]\n"
    "                      [max_buffer_bytes=N] [rate=JOBS_PER_S] [admin] per line); every\n"
    "                      route but /health and the dashboard's files then needs\n"
    "                      Authorization: Bearer TOKEN. Without it gpulabd listens on\n"
    "                      loopback addresses only\n"
    "  --insecure-no-auth  allow a non-loopback --host without --tokens (anyone can use it)\n"
    "  --socket PATH       listen on this Unix socket too: a client there is its Unix\n"
    "                      user (the peer's credentials, SO_PEERCRED), as with tokens:\n"
    "                      it sees and cancels its own jobs (root and gpulabd's own user\n"
    "                      see all); no token needed. curl --unix-socket PATH http://x/\n"
    "  --socket-mode MODE  its permissions, octal (default 0666; 0660 with --socket-group)\n"
    "  --socket-group NAME the group that owns the socket (those who may connect)\n"
    "  --no-tcp            listen on --socket only, not on --host/--port\n"
    "  --tls-cert PEM      serve HTTPS with this certificate (needs --tls-key)\n"
    "  --tls-key PEM       the certificate's private key\n"
    "  --max-connections N          connections at once (default 4096)\n"
    "  --max-connections-per-ip N   connections at once from one address (default 256;\n"
    "                      at most a quarter of --max-connections)\n"
    "  --timeout SECONDS   a whole request (head and body) must arrive within this long,\n"
    "                      and a connection idle this long is dropped (default 30;\n"
    "                      waiting requests and event streams have arrived and stay)\n"
    "  --min-upload-rate BYTES  each BYTES of a request's body received extend its\n"
    "                      deadline by a second, so that a large upload at this rate or\n"
    "                      faster finishes (default 1048576; 0: --timeout for any body)\n"
    "  --access-log PATH   one JSON line per request: - (stdout, the default), off, or a file\n"
    "  --wait SECONDS      how long a POST waits for its job without ?wait= (default 60)\n"
    "  --inline-max-bytes N  a job that is waited for, needs at most N bytes, times at\n"
    "                      most 256 launches and finds its device idle runs on the HTTP\n"
    "                      thread that waits, on a lent lane: two thread hand-offs less\n"
    "                      (not while more requests are in flight than HTTP threads;\n"
    "                      default 1048576; 0: always through the workers)\n"
    "  --web-root DIR      serve the dashboard's files from DIR (e.g. web/, while editing it)\n"
    "                      instead of the copies built into gpulabd\n"
    "  --chartjs PATH      Chart.js for the dashboard's charts (default\n"
    "                      /usr/share/javascript/chart.js/chart.min.js, from libjs-chart.js)\n"
    "  --codemirror DIR    CodeMirror 5 for the editors: DIR/codemirror.js,\n"
    "                      codemirror.css, mode/clike/clike.js,\n"
    "                      mode/javascript/javascript.js (default\n"
    "                      /usr/share/javascript/codemirror, from libjs-codemirror)\n"
    "  --no-ceilings       skip measuring each GPU's ceilings at start-up (copy, SGEMM, TF32\n"
    "                      and pinned copy rates, and the copy at each size; about a\n"
    "                      second per GPU): runs then carry no percent_of_ceiling or\n"
    "                      percent_of_limit\n"
    "  --nvrtc PATH        NVRTC for users' kernels (default: libnvrtc.so.13 or libnvrtc.so,\n"
    "                      also under $CUDA_HOME/lib64 and /usr/local/cuda/lib64); none: off\n"
    "                      (POST /kernels then answers 503 nvrtc_unavailable)\n"
    "  --max-kernels N     users' kernels stored per client (default 32); their versions\n"
    "                      do not count\n"
    "  --max-kernel-versions N\n"
    "                      versions kept of one kernel (default 64)\n"
    "  --compile-slots N   users' kernels compiled at once (default 2)\n"
    "  --compile-time S    a compile's time limit in seconds (default 10)\n"
    "  --max-scratch BYTES scratch a user's kernel may ask for (scratch_bytes: zeroed before\n"
    "                      every launch; default 268435456)\n"
    "  --runner PATH       gpulab-runner, the process users' kernels run in (default: the\n"
    "                      one beside gpulabd)\n"
    "  --kernel-deadline S a user's kernel's launch may take this long before its job fails\n"
    "                      with kernel_timeout and its runner is killed (default 5)\n"
    "  --cpu-runner-test   for tests only: the CPU backend runs users' transpose kernels in\n"
    "                      a CPU-mode gpulab-runner, whose test functions stand for them by\n"
    "                      entry (transpose, wrong, lazy, once, trap, oob, hang, die)\n"
    "  --help              this text\n"
    "  --version           the version\n";

static void print_usage(FILE *out) {
  char types[160];
  exp_type_list(types, sizeof types);
  fprintf(out,
          "usage: gpulabd [flags]\nRuns the CUDA lecture's experiments (%s) as HTTP jobs.\n\n%s",
          types, usage_flags);
}

static int parse_long(const char *flag, const char *text, long lo, long hi, long *out, char *err,
                      size_t err_len) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (end == text || *end || errno || v < lo || v > hi) {
    snprintf(err, err_len, "%s must be an integer between %ld and %ld, got '%s'", flag, lo, hi,
             text);
    return -EINVAL;
  }
  *out = v;
  return 0;
}

/* --max-db-bytes: 0 (no bound) or at least 64 KiB. */
static int parse_db_bytes(const char *text, struct config *cfg, char *err, size_t err_len) {
  long v;
  if (parse_long("--max-db-bytes", text, 0, 1L << 50, &v, err, err_len)) return -EINVAL;
  if (v > 0 && v < 65536) {
    snprintf(err, err_len, "--max-db-bytes must be 0 (no bound) or at least 65536, got '%s'", text);
    return -EINVAL;
  }
  cfg->max_db_bytes = v;
  return 0;
}

/* --socket-mode: octal permission bits. */
static int parse_mode(const char *text, struct config *cfg, char *err, size_t err_len) {
  char *end;
  errno = 0;
  long mode = strtol(text, &end, 8);
  if (end == text || *end || errno || mode < 0 || mode > 0777) {
    snprintf(err, err_len, "--socket-mode must be octal permissions like 0660, got '%s'", text);
    return -EINVAL;
  }
  cfg->socket_mode = (int)mode;
  return 0;
}

/* "all" or a comma-separated list of distinct ordinals 0..63. */
static int parse_devices(const char *text, struct config *cfg, char *err, size_t err_len) {
  cfg->n_devices = 0;
  if (strcmp(text, "all") == 0) return 0;
  const char *p = text;
  while (*p) {
    char *end;
    errno = 0;
    long d = strtol(p, &end, 10);
    bool dup = false;
    for (int i = 0; i < cfg->n_devices; i++) dup |= cfg->devices[i] == d;
    if (end == p || errno || d < 0 || d > 63 || dup || cfg->n_devices == 16 ||
        (*end && *end != ',')) {
      snprintf(err, err_len,
               "--devices must be all or up to 16 distinct ordinals 0..63 like 0,1; got '%s'",
               text);
      return -EINVAL;
    }
    cfg->devices[cfg->n_devices++] = (int)d;
    p = *end ? end + 1 : end;
  }
  if (cfg->n_devices == 0) {
    snprintf(err, err_len, "--devices is empty");
    return -EINVAL;
  }
  return 0;
}

/* The CPUs this process may run on (its affinity mask), at least 1. */
static int cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

int config_default_http_threads(void) { return clamp(cores(), 4, 64); }

int config_default_streams(int n_devices) {
  return clamp(cores() / (2 * (n_devices > 0 ? n_devices : 1)), 4, 16);
}

/* The flags that take more than a number or a text. */
static int parse_backend(const char *text, struct config *cfg, char *err, size_t err_len) {
  if (strcmp(text, "auto") == 0)
    cfg->backend = BACKEND_AUTO;
  else if (strcmp(text, "cuda") == 0)
    cfg->backend = BACKEND_CUDA;
  else if (strcmp(text, "cpu") == 0)
    cfg->backend = BACKEND_CPU;
  else {
    snprintf(err, err_len, "--backend must be auto, cuda or cpu, got '%s'", text);
    return -EINVAL;
  }
  return 0;
}

static int parse_socket(const char *text, struct config *cfg, char *err, size_t err_len) {
  if (strlen(text) >= 108) { /* sockaddr_un's sun_path */
    snprintf(err, err_len, "--socket is too long (at most 107 bytes)");
    return -EINVAL;
  }
  cfg->socket_path = text;
  return 0;
}

static int parse_node(const char *text, struct config *cfg, char *err, size_t err_len) {
  if (!text[0] || strlen(text) >= sizeof cfg->node) {
    snprintf(err, err_len, "--node must be 1 to %zu characters", sizeof cfg->node - 1);
    return -EINVAL;
  }
  snprintf(cfg->node, sizeof cfg->node, "%s", text);
  return 0;
}

static int parse_advertise(const char *text, struct config *cfg, char *err, size_t err_len) {
  if (strncmp(text, "http://", 7) != 0 && strncmp(text, "https://", 8) != 0) {
    snprintf(err, err_len, "--advertise must be an http:// or https:// URL");
    return -EINVAL;
  }
  cfg->advertise = text;
  return 0;
}

static int parse_durability(const char *text, struct config *cfg, char *err, size_t err_len) {
  cfg->durability_given = true;
  if (strcmp(text, "normal") == 0)
    cfg->durability_full = false;
  else if (strcmp(text, "full") == 0)
    cfg->durability_full = true;
  else {
    snprintf(err, err_len, "--durability must be normal or full, got '%s'", text);
    return -EINVAL;
  }
  return 0;
}

/* One row per flag: where its value goes in struct config and how it is read. */
enum flag_kind {
  FLAG_INT,    /* an int in [lo, hi] */
  FLAG_LONG,   /* a long in [lo, hi] */
  FLAG_SIZE,   /* a size_t in [lo, hi] */
  FLAG_DOUBLE, /* a whole number of seconds in [lo, hi], kept as a double */
  FLAG_TEXT,   /* a const char * into argv */
  FLAG_COPY,   /* copied into a char array of the field's size */
  FLAG_TRUE,   /* no argument: sets a bool */
  FLAG_PARSE,  /* its own parser */
  FLAG_HELP,
  FLAG_VERSION,
};

struct flag {
  const char *name; /* without the leading -- */
  enum flag_kind kind;
  size_t offset, size; /* the field's, in struct config */
  long lo, hi;
  int (*parse)(const char *text, struct config *cfg, char *err, size_t err_len);
};

#define FIELD(f) offsetof(struct config, f), sizeof(((struct config *)0)->f)
#define NUMBER(kind, name, f, lo, hi) \
  { name, kind, FIELD(f), lo, hi, NULL }
#define TEXT(name, f) \
  { name, FLAG_TEXT, FIELD(f), 0, 0, NULL }
#define COPY(name, f) \
  { name, FLAG_COPY, FIELD(f), 0, 0, NULL }
#define SWITCH(name, f) \
  { name, FLAG_TRUE, FIELD(f), 0, 0, NULL }
#define PARSE(name, fn) \
  { name, FLAG_PARSE, 0, 0, 0, 0, fn }

static const struct flag flags[] = {
    COPY("host", host),
    NUMBER(FLAG_INT, "port", port, 0, 65535),
    PARSE("backend", parse_backend),
    PARSE("devices", parse_devices),
    NUMBER(FLAG_INT, "streams", streams, 1, 64),
    NUMBER(FLAG_SIZE, "max-body", max_body, 64, 1L << 40),
    NUMBER(FLAG_INT, "http-threads", http_threads, 1, 256),
    NUMBER(FLAG_INT, "max-queued", max_queued, 1, 1000000),
    NUMBER(FLAG_INT, "max-jobs-kept", max_jobs_kept, 1, 10000000),
    NUMBER(FLAG_SIZE, "max-upload", max_upload, 64, 1L << 40),
    COPY("access-log", access_log),
    TEXT("tokens", tokens),
    SWITCH("allow-fault-injection", allow_fault_injection),
    COPY("db", db),
    NUMBER(FLAG_INT, "keep-days", keep_days, 0, 100000),
    PARSE("max-db-bytes", parse_db_bytes),
    NUMBER(FLAG_INT, "grace", grace_s, 0, 3600),
    SWITCH("insecure-no-auth", insecure_no_auth),
    TEXT("tls-cert", tls_cert),
    TEXT("tls-key", tls_key),
    NUMBER(FLAG_INT, "max-connections", max_connections, 1, 100000),
    NUMBER(FLAG_INT, "max-connections-per-ip", max_connections_per_ip, 1, 100000),
    NUMBER(FLAG_INT, "timeout", timeout_s, 1, 3600),
    NUMBER(FLAG_SIZE, "min-upload-rate", min_upload_rate, 0, 1L << 40),
    NUMBER(FLAG_DOUBLE, "wait", default_wait_s, 0, 600),
    TEXT("web-root", web_root),
    TEXT("chartjs", chartjs),
    TEXT("codemirror", codemirror),
    SWITCH("no-ceilings", no_ceilings),
    PARSE("socket", parse_socket),
    PARSE("socket-mode", parse_mode),
    TEXT("socket-group", socket_group),
    SWITCH("no-tcp", no_tcp),
    NUMBER(FLAG_LONG, "inline-max-bytes", inline_max_bytes, 0, 1L << 40),
    TEXT("nvrtc", nvrtc),
    NUMBER(FLAG_INT, "max-kernels", max_kernels, 1, 100000),
    NUMBER(FLAG_INT, "max-kernel-versions", max_kernel_versions, 1, 100000),
    NUMBER(FLAG_INT, "compile-slots", compile_slots, 1, 64),
    NUMBER(FLAG_INT, "compile-time", compile_time_s, 1, 600),
    NUMBER(FLAG_SIZE, "max-scratch", max_scratch, 0, 1L << 36),
    TEXT("runner", runner),
    NUMBER(FLAG_INT, "kernel-deadline", kernel_deadline_s, 1, 600),
    SWITCH("cpu-runner-test", cpu_runner_test),
    PARSE("node", parse_node),
    PARSE("advertise", parse_advertise),
    NUMBER(FLAG_INT, "lease-s", lease_s, 1, 3600),
    PARSE("durability", parse_durability),
    {"help", FLAG_HELP, 0, 0, 0, 0, NULL},
    {"version", FLAG_VERSION, 0, 0, 0, 0, NULL},
};
#define N_FLAGS (sizeof flags / sizeof flags[0])

/* Flag f's value text into cfg: 0, -1 with err, or 1 when it answered (--help). */
static int take_flag(const struct flag *f, const char *text, struct config *cfg, FILE *out,
                     char *err, size_t err_len) {
  char *field = (char *)cfg + f->offset, name[40];
  snprintf(name, sizeof name, "--%s", f->name);
  long v;
  switch (f->kind) {
  case FLAG_INT:
  case FLAG_LONG:
  case FLAG_SIZE:
  case FLAG_DOUBLE:
    if (parse_long(name, text, f->lo, f->hi, &v, err, err_len)) return -EINVAL;
    if (f->kind == FLAG_INT)
      *(int *)field = (int)v;
    else if (f->kind == FLAG_LONG)
      *(long *)field = v;
    else if (f->kind == FLAG_SIZE)
      *(size_t *)field = (size_t)v;
    else
      *(double *)field = (double)v;
    return 0;
  case FLAG_TEXT: *(const char **)field = text; return 0;
  case FLAG_COPY:
    if (strlen(text) >= f->size) {
      snprintf(err, err_len, "%s is too long", name);
      return -EINVAL;
    }
    memcpy(field, text, strlen(text) + 1);
    return 0;
  case FLAG_TRUE: *(bool *)field = true; return 0;
  case FLAG_PARSE: return f->parse(text, cfg, err, err_len) ? -1 : 0;
  case FLAG_HELP: print_usage(out); return 1;
  case FLAG_VERSION: fprintf(out, "gpulabd %s\n", GPULAB_VERSION); return 1;
  }
  return -EINVAL;
}

static void set_defaults(struct config *cfg) {
  *cfg = (struct config){.host = "127.0.0.1",
                         .port = 8080,
                         .backend = BACKEND_AUTO,
                         .max_body = 1 << 20,
                         .max_upload = 256u << 20,
                         .max_queued = 1024,
                         .max_jobs_kept = 10000,
                         .default_wait_s = 60,
                         .inline_max_bytes = 1 << 20,
                         .access_log = "-",
                         .max_connections = 4096,
                         .max_connections_per_ip = 256,
                         .timeout_s = 30,
                         .min_upload_rate = 1 << 20,
                         .db = "gpulab.db",
                         .keep_days = 30,
                         .grace_s = 30,
                         .max_db_bytes = 1LL << 30,
                         .socket_mode = -1,
                         .max_kernels = 32,
                         .max_kernel_versions = 64,
                         .compile_slots = 2,
                         .compile_time_s = 10,
                         .kernel_deadline_s = 5,
                         .lease_s = 10,
                         .max_scratch = 256u << 20};
  if (gethostname(cfg->node, sizeof cfg->node) != 0 || !cfg->node[0])
    snprintf(cfg->node, sizeof cfg->node, "localhost");
  cfg->node[sizeof cfg->node - 1] = '\0'; /* a name cut short is not terminated */
}

int config_parse(int argc, char **argv, struct config *cfg, FILE *out, char *err, size_t err_len) {
  set_defaults(cfg);
  struct option options[N_FLAGS + 1];
  for (size_t i = 0; i < N_FLAGS; i++) {
    bool bare = flags[i].kind == FLAG_TRUE || flags[i].kind == FLAG_HELP ||
                flags[i].kind == FLAG_VERSION;
    options[i] = (struct option){flags[i].name, bare ? no_argument : required_argument, NULL,
                                 256 + (int)i};
  }
  options[N_FLAGS] = (struct option){0, 0, 0, 0};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
    if (c < 256 || c >= 256 + (int)N_FLAGS) {
      snprintf(err, err_len, "unknown or incomplete flag '%s' (see --help)", argv[optind - 1]);
      return -EINVAL;
    }
    int rc = take_flag(&flags[c - 256], optarg, cfg, out, err, err_len);
    if (rc) return rc;
  }
  if (optind < argc) {
    snprintf(err, err_len, "unexpected argument '%s' (see --help)", argv[optind]);
    return -EINVAL;
  }
  if ((cfg->socket_group || cfg->socket_mode >= 0 || cfg->no_tcp) && !cfg->socket_path) {
    snprintf(err, err_len, "--socket-mode, --socket-group and --no-tcp need --socket PATH");
    return -EINVAL;
  }
  if (cfg->socket_mode < 0) cfg->socket_mode = cfg->socket_group ? 0660 : 0666;
  return 0;
}
