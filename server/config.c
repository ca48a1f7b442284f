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
    "  --no-ceilings       skip measuring each GPU's ceilings at start-up (copy, SGEMM, TF32\n"
    "                      and pinned copy rates; about half a second per GPU): runs then\n"
    "                      carry no percent_of_ceiling\n"
    "  --nvrtc PATH        NVRTC for users' kernels (default: libnvrtc.so.13 or libnvrtc.so,\n"
    "                      also under $CUDA_HOME/lib64 and /usr/local/cuda/lib64); none: off\n"
    "                      (POST /kernels then answers 503 nvrtc_unavailable)\n"
    "  --max-kernels N     users' kernels stored per client (default 32)\n"
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
  fprintf(out, "usage: gpulabd [flags]\nRuns the CUDA lecture's experiments (%s) as HTTP jobs.\n\n%s", types,
          usage_flags);
}

static int parse_long(const char *flag, const char *text, long lo, long hi, long *out, char *err,
                      size_t err_len) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (end == text || *end || errno || v < lo || v > hi) {
    snprintf(err, err_len, "%s must be an integer between %ld and %ld, got '%s'", flag, lo, hi, text);
    return -1;
  }
  *out = v;
  return 0;
}

/* --max-db-bytes: 0 (no bound) or at least 64 KiB. */
static int parse_db_bytes(const char *text, struct config *cfg, char *err, size_t err_len) {
  long v;
  if (parse_long("--max-db-bytes", text, 0, 1L << 50, &v, err, err_len)) return -1;
  if (v > 0 && v < 65536) {
    snprintf(err, err_len, "--max-db-bytes must be 0 (no bound) or at least 65536, got '%s'", text);
    return -1;
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
    return -1;
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
    if (end == p || errno || d < 0 || d > 63 || dup || cfg->n_devices == 16 || (*end && *end != ',')) {
      snprintf(err, err_len, "--devices must be all or up to 16 distinct ordinals 0..63 like 0,1; got '%s'", text);
      return -1;
    }
    cfg->devices[cfg->n_devices++] = (int)d;
    p = *end ? end + 1 : end;
  }
  if (cfg->n_devices == 0) {
    snprintf(err, err_len, "--devices is empty");
    return -1;
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

int config_parse(int argc, char **argv, struct config *cfg, FILE *out, char *err, size_t err_len) {
  *cfg = (struct config){.host = "127.0.0.1", .port = 8080, .backend = BACKEND_AUTO,
                         .n_devices = 0, .streams = 0, .max_body = 1 << 20, .max_upload = 256u << 20, .http_threads = 0,
                         .max_queued = 1024, .max_jobs_kept = 10000, .default_wait_s = 60, .inline_max_bytes = 1 << 20,
                         .access_log = "-", .max_connections = 4096, .max_connections_per_ip = 256, .timeout_s = 30,
                         .db = "gpulab.db", .keep_days = 30, .grace_s = 30, .max_db_bytes = 1LL << 30,
                         .socket_mode = -1, .max_kernels = 32, .compile_slots = 2, .compile_time_s = 10,
                         .kernel_deadline_s = 5, .lease_s = 10, .max_scratch = 256u << 20};
  enum { OPT_NVRTC = 256, OPT_MAX_KERNELS, OPT_COMPILE_SLOTS, OPT_COMPILE_TIME, OPT_RUNNER,
         OPT_KERNEL_DEADLINE, OPT_CPU_RUNNER_TEST, OPT_NODE, OPT_ADVERTISE, OPT_LEASE,
         OPT_MAX_SCRATCH };
  static const struct option options[] = {
      {"host", required_argument, 0, 'H'},      {"port", required_argument, 0, 'p'},
      {"backend", required_argument, 0, 'b'},   {"devices", required_argument, 0, 'd'},
      {"streams", required_argument, 0, 's'},   {"max-body", required_argument, 0, 'B'},
      {"http-threads", required_argument, 0, 't'}, {"max-queued", required_argument, 0, 'q'},
      {"max-jobs-kept", required_argument, 0, 'k'},
      {"max-upload", required_argument, 0, 'U'}, {"access-log", required_argument, 0, 'A'},
      {"tokens", required_argument, 0, 'T'}, {"allow-fault-injection", no_argument, 0, 'F'}, {"db", required_argument, 0, 'D'},
      {"keep-days", required_argument, 0, 'R'}, {"max-db-bytes", required_argument, 0, 'X'}, {"grace", required_argument, 0, 'G'}, {"insecure-no-auth", no_argument, 0, 'I'},
      {"tls-cert", required_argument, 0, 'c'}, {"tls-key", required_argument, 0, 'K'},
      {"max-connections", required_argument, 0, 'M'},
      {"max-connections-per-ip", required_argument, 0, 'P'}, {"timeout", required_argument, 0, 'o'}, {"wait", required_argument, 0, 'w'},
      {"web-root", required_argument, 0, 'W'}, {"chartjs", required_argument, 0, 'C'},
      {"no-ceilings", no_argument, 0, 'N'},   {"socket", required_argument, 0, 'S'},
      {"socket-mode", required_argument, 0, 'm'}, {"socket-group", required_argument, 0, 'g'},
      {"no-tcp", no_argument, 0, 'n'},   {"inline-max-bytes", required_argument, 0, 'i'},
      {"nvrtc", required_argument, 0, OPT_NVRTC}, {"max-kernels", required_argument, 0, OPT_MAX_KERNELS},
      {"compile-slots", required_argument, 0, OPT_COMPILE_SLOTS},
      {"compile-time", required_argument, 0, OPT_COMPILE_TIME},
      {"max-scratch", required_argument, 0, OPT_MAX_SCRATCH}, {"runner", required_argument, 0, OPT_RUNNER},
      {"kernel-deadline", required_argument, 0, OPT_KERNEL_DEADLINE},
      {"cpu-runner-test", no_argument, 0, OPT_CPU_RUNNER_TEST}, {"node", required_argument, 0, OPT_NODE},
      {"advertise", required_argument, 0, OPT_ADVERTISE}, {"lease-s", required_argument, 0, OPT_LEASE},
      {"durability", required_argument, 0, 'Y'},
      {"help", no_argument, 0, 'h'},            {"version", no_argument, 0, 'V'},
      {0, 0, 0, 0}};
  if (gethostname(cfg->node, sizeof cfg->node) != 0 || !cfg->node[0])
    snprintf(cfg->node, sizeof cfg->node, "localhost");
  cfg->node[sizeof cfg->node - 1] = '\0'; /* a name cut short is not terminated */
  optind = 1;
  opterr = 0;
  int c;
  long v = 0;
  while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
    int rc = 0;
    switch (c) {
    case 'H':
      if (strlen(optarg) >= sizeof cfg->host) {
        snprintf(err, err_len, "--host is too long");
        return -1;
      }
      strcpy(cfg->host, optarg);
      break;
    case 'p': rc = parse_long("--port", optarg, 0, 65535, &v, err, err_len); cfg->port = (int)v; break;
    case 'b':
      if (strcmp(optarg, "auto") == 0) cfg->backend = BACKEND_AUTO;
      else if (strcmp(optarg, "cuda") == 0) cfg->backend = BACKEND_CUDA;
      else if (strcmp(optarg, "cpu") == 0) cfg->backend = BACKEND_CPU;
      else {
        snprintf(err, err_len, "--backend must be auto, cuda or cpu, got '%s'", optarg);
        return -1;
      }
      break;
    case 'd': rc = parse_devices(optarg, cfg, err, err_len); break;
    case 's': rc = parse_long("--streams", optarg, 1, 64, &v, err, err_len); cfg->streams = (int)v; break;
    case 'B': rc = parse_long("--max-body", optarg, 64, 1L << 40, &v, err, err_len); cfg->max_body = (size_t)v; break;
    case 't': rc = parse_long("--http-threads", optarg, 1, 256, &v, err, err_len); cfg->http_threads = (int)v; break;
    case 'q': rc = parse_long("--max-queued", optarg, 1, 1000000, &v, err, err_len); cfg->max_queued = (int)v; break;
    case 'k': rc = parse_long("--max-jobs-kept", optarg, 1, 10000000, &v, err, err_len); cfg->max_jobs_kept = (int)v; break;
    case 'U': rc = parse_long("--max-upload", optarg, 64, 1L << 40, &v, err, err_len); cfg->max_upload = (size_t)v; break;
    case 'A':
      if (strlen(optarg) >= sizeof cfg->access_log) {
        snprintf(err, err_len, "--access-log is too long");
        return -1;
      }
      strcpy(cfg->access_log, optarg);
      break;
    case 'w': rc = parse_long("--wait", optarg, 0, 600, &v, err, err_len); cfg->default_wait_s = (double)v; break;
    case 'W': cfg->web_root = optarg; break;
    case 'T': cfg->tokens = optarg; break;
    case 'F': cfg->allow_fault_injection = true; break;
    case 'D':
      if (strlen(optarg) >= sizeof cfg->db) {
        snprintf(err, err_len, "--db is too long");
        return -1;
      }
      strcpy(cfg->db, optarg);
      break;
    case 'R': rc = parse_long("--keep-days", optarg, 0, 100000, &v, err, err_len); cfg->keep_days = (int)v; break;
    case 'X': rc = parse_db_bytes(optarg, cfg, err, err_len); break;
    case 'G': rc = parse_long("--grace", optarg, 0, 3600, &v, err, err_len); cfg->grace_s = (int)v; break;
    case 'I': cfg->insecure_no_auth = true; break;
    case 'c': cfg->tls_cert = optarg; break;
    case 'K': cfg->tls_key = optarg; break;
    case 'M': rc = parse_long("--max-connections", optarg, 1, 100000, &v, err, err_len); cfg->max_connections = (int)v; break;
    case 'P': rc = parse_long("--max-connections-per-ip", optarg, 1, 100000, &v, err, err_len); cfg->max_connections_per_ip = (int)v; break;
    case 'o': rc = parse_long("--timeout", optarg, 1, 3600, &v, err, err_len); cfg->timeout_s = (int)v; break;
    case 'C': cfg->chartjs = optarg; break;
    case 'i': rc = parse_long("--inline-max-bytes", optarg, 0, 1L << 40, &v, err, err_len); cfg->inline_max_bytes = v; break;
    case 'N': cfg->no_ceilings = true; break;
    case 'S':
      if (strlen(optarg) >= 108) { /* sockaddr_un's sun_path */
        snprintf(err, err_len, "--socket is too long (at most 107 bytes)");
        return -1;
      }
      cfg->socket_path = optarg;
      break;
    case 'm': rc = parse_mode(optarg, cfg, err, err_len); break;
    case 'g': cfg->socket_group = optarg; break;
    case 'n': cfg->no_tcp = true; break;
    case OPT_NVRTC: cfg->nvrtc = optarg; break;
    case OPT_MAX_KERNELS: rc = parse_long("--max-kernels", optarg, 1, 100000, &v, err, err_len); cfg->max_kernels = (int)v; break;
    case OPT_MAX_SCRATCH: rc = parse_long("--max-scratch", optarg, 0, 1L << 36, &v, err, err_len); cfg->max_scratch = (size_t)v; break;
    case OPT_COMPILE_SLOTS: rc = parse_long("--compile-slots", optarg, 1, 64, &v, err, err_len); cfg->compile_slots = (int)v; break;
    case OPT_COMPILE_TIME: rc = parse_long("--compile-time", optarg, 1, 600, &v, err, err_len); cfg->compile_time_s = (int)v; break;
    case OPT_RUNNER: cfg->runner = optarg; break;
    case OPT_KERNEL_DEADLINE:
      rc = parse_long("--kernel-deadline", optarg, 1, 600, &v, err, err_len);
      cfg->kernel_deadline_s = (int)v;
      break;
    case OPT_CPU_RUNNER_TEST: cfg->cpu_runner_test = true; break;
    case OPT_NODE:
      if (!optarg[0] || strlen(optarg) >= sizeof cfg->node) {
        snprintf(err, err_len, "--node must be 1 to %zu characters", sizeof cfg->node - 1);
        return -1;
      }
      snprintf(cfg->node, sizeof cfg->node, "%s", optarg);
      break;
    case OPT_ADVERTISE:
      if (strncmp(optarg, "http://", 7) != 0 && strncmp(optarg, "https://", 8) != 0) {
        snprintf(err, err_len, "--advertise must be an http:// or https:// URL");
        return -1;
      }
      cfg->advertise = optarg;
      break;
    case OPT_LEASE: rc = parse_long("--lease-s", optarg, 1, 3600, &v, err, err_len); cfg->lease_s = (int)v; break;
    case 'Y':
      cfg->durability_given = true;
      if (strcmp(optarg, "normal") == 0) cfg->durability_full = false;
      else if (strcmp(optarg, "full") == 0) cfg->durability_full = true;
      else {
        snprintf(err, err_len, "--durability must be normal or full, got '%s'", optarg);
        return -1;
      }
      break;
    case 'h': print_usage(out); return 1;
    case 'V': fprintf(out, "gpulabd %s\n", GPULAB_VERSION); return 1;
    default:
      snprintf(err, err_len, "unknown or incomplete flag '%s' (see --help)", argv[optind - 1]);
      return -1;
    }
    if (rc) return -1;
  }
  if (optind < argc) {
    snprintf(err, err_len, "unexpected argument '%s' (see --help)", argv[optind]);
    return -1;
  }
  if ((cfg->socket_group || cfg->socket_mode >= 0 || cfg->no_tcp) && !cfg->socket_path) {
    snprintf(err, err_len, "--socket-mode, --socket-group and --no-tcp need --socket PATH");
    return -1;
  }
  if (cfg->socket_mode < 0) cfg->socket_mode = cfg->socket_group ? 0660 : 0666;
  return 0;
}
