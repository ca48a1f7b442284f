/* gpulabd: reads the flags, opens the backend, starts the engine and the HTTP
 * server, and shuts them down in order on SIGINT or SIGTERM. */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/params.h"
#include "kernels/backends/backend.h"
#include "kernels/user/ukreg.h"
#include "server/config.h"
#include "server/engine/engine.h"
#include "server/engine/events.h"
#include "server/http/auth.h"
#include "server/http/http.h"
#include "server/http/metrics.h"
#include "server/http/static.h"
#include "server/log.h"
#include "server/service/durable.h"
#include "server/service/problem_jobs.h"
#include "server/service/service.h"
#include "server/service/ukernels.h"
#include "server/store/fleet.h"
#include "server/store/store.h"

/* Opens every device of --devices: the first decides the kind (auto: CUDA when a
 * device answers), the rest follow it. Returns how many were opened, 0 on error. */
static int open_devices(struct config *cfg, struct backend **devices, char *err, size_t err_len) {
  int ordinals[16], n = cfg->n_devices;
  memcpy(ordinals, cfg->devices, sizeof ordinals);
  if (n == 0) { /* all: every CUDA device, or one CPU device */
    int count = cfg->backend == BACKEND_CPU ? 0 : backend_cuda_device_count();
    n = count > 0 ? (count < 16 ? count : 16) : 1;
    for (int i = 0; i < n; i++) ordinals[i] = i;
  }
  if (cfg->streams == 0) cfg->streams = config_default_streams(n); /* from the machine */
  enum backend_kind kind = cfg->backend;
  for (int i = 0; i < n; i++) {
    char why[256];
    if (backend_open(kind, ordinals[i], cfg->streams, &devices[i], why, sizeof why)) {
      snprintf(err, err_len, "device %d: %s", ordinals[i], why);
      while (i-- > 0) backend_free(devices[i]);
      return 0;
    }
    log_info("device %d: %s", ordinals[i], why);
    kind = strcmp(backend_name(devices[i]), "cuda") == 0 ? BACKEND_CUDA : BACKEND_CPU;
    if (kind == BACKEND_CUDA) { /* whether "profile" jobs get counters here, and why not */
      if (backend_profiling(devices[i], why, sizeof why) == BACKEND_PROFILE_REPLAY)
        log_info("device %d: counters: CUPTI's range profiler (\"profile\" jobs)", ordinals[i]);
      else
        log_warn("device %d: %s: \"profile\" jobs are refused", ordinals[i], why);
    }
  }
  backend_connect(devices, n);
  for (int i = 0; i < n && kind == BACKEND_CUDA; i++) { /* before any job: the device alone */
    char why[512];
    if (cfg->no_ceilings) {
      log_info("device %d: ceilings not measured (--no-ceilings)", ordinals[i]);
      break;
    }
    if (backend_measure_ceilings(devices[i], why, sizeof why) == 0)
      log_info("device %d: ceilings: %s", ordinals[i], why);
    else
      log_warn("device %d: ceilings not measured: %s", ordinals[i], why);
  }
  return n;
}

/* The exit status that asks the supervisor for a restart after a lost device. */
#define EXIT_DEVICE_LOST 3

/* Jobs that end feed the metrics (called under the engine's lock: counters only). */
static void count_job(void *arg, const struct job_view *v) {
  double queue_s = v->started_at > 0 ? v->started_at - v->created_at : -1;
  double run_s = v->started_at > 0 ? v->finished_at - v->started_at : -1;
  metrics_job_ended(arg, exp_type_name(v->spec.type), job_state_name(v->state), v->device, queue_s,
                    run_s);
}

/* The access log's stream: stdout, none, or a file opened for appending. */
static FILE *open_access_log(const char *path) {
  if (strcmp(path, "off") == 0) return NULL;
  if (strcmp(path, "-") == 0) return stdout;
  FILE *f = fopen(path, "a");
  if (!f) log_warn("--access-log %s: %s; logging requests to stdout", path, strerror(errno));
  return f ? f : stdout;
}

/* A whole (small) file as a NUL-terminated string, or NULL with err. */
static char *read_file(const char *path, char *err, size_t err_len) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  long n = -1;
  if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (1 << 20) &&
      fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) &&
      fread(text, 1, (size_t)n, f) == (size_t)n) {
    text[n] = '\0';
  } else {
    snprintf(err, err_len, "%s: %s", path,
             f ? "cannot read it (or larger than 1 MiB)" : strerror(errno));
    free(text);
    text = NULL;
  }
  if (f) fclose(f);
  return text;
}

/* Without tokens anyone who reaches the port may run jobs: only loopback then. */
static bool loopback(const char *host) {
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
}

/* The start-up checks of who may connect: tokens, a non-loopback --host, TLS and
 * the socket's group. Returns 0, or 2 (the exit status) after saying why. */
static int load_access(const struct config *cfg, struct auth **auth, char **tls_cert,
                       char **tls_key, long *socket_gid) {
  char err[512];
  if (cfg->tokens && auth_load(cfg->tokens, auth, err, sizeof err)) {
    fprintf(stderr, "gpulabd: --tokens %s\n", err);
    return 2;
  }
  if (!*auth && !loopback(cfg->host) && !cfg->no_tcp) {
    if (!cfg->insecure_no_auth) {
      fprintf(stderr,
              "gpulabd: refusing to listen on %s without --tokens: anyone reaching it could "
              "run jobs on this GPU. Give --tokens FILE, or --insecure-no-auth if you mean it.\n",
              cfg->host);
      return 2;
    }
    log_warn(
        "INSECURE: listening on %s without tokens (--insecure-no-auth): anyone who reaches "
        "this port can run jobs",
        cfg->host);
  }
  if (!cfg->tls_cert != !cfg->tls_key) {
    fprintf(stderr, "gpulabd: --tls-cert and --tls-key go together\n");
    return 2;
  }
  if (cfg->tls_cert && (!(*tls_cert = read_file(cfg->tls_cert, err, sizeof err)) ||
                        !(*tls_key = read_file(cfg->tls_key, err, sizeof err)))) {
    fprintf(stderr, "gpulabd: %s\n", err);
    return 2;
  }
  if (*auth) log_info("tokens: %d client(s) from %s", auth_count(*auth), cfg->tokens);
  if (cfg->socket_group) {
    struct group *g = getgrnam(cfg->socket_group);
    if (!g) {
      fprintf(stderr, "gpulabd: --socket-group %s: no such group\n", cfg->socket_group);
      return 2;
    }
    *socket_gid = (long)g->gr_gid;
  }
  return 0;
}

/* Opens --db (none: no store), prunes it, bounds it, and says where ids start.
 * Returns 0 or -1 (logged). */
static int open_store(const struct config *cfg, struct store **store, uint64_t *first_id,
                      uint64_t *first_buffer_id) {
  char err[512];
  *first_id = *first_buffer_id = 1;
  if (strcmp(cfg->db, "none") == 0) return 0; /* nothing durable; listings from memory */
  if (store_open(cfg->db, store, err, sizeof err)) {
    log_warn("gpulabd: --db %s", err);
    return -1;
  }
  if (cfg->keep_days > 0) {
    int pruned = store_prune(*store, engine_now_unix() - cfg->keep_days * 86400.0);
    if (pruned) log_info("store: pruned %d job(s) older than %d days", pruned, cfg->keep_days);
  }
  /* Without --durability each backend keeps its default: SQLite normal, PostgreSQL full. */
  if (cfg->durability_given &&
      store_set_durability(*store, cfg->durability_full ? STORE_DURABILITY_FULL
                                                        : STORE_DURABILITY_NORMAL)) {
    log_warn("gpulabd: --durability %s: the store cannot be set to it",
             cfg->durability_full ? "full" : "normal");
    return -1;
  }
  struct store_status st;
  store_status(*store, &st);
  log_info("store (%s): durability %s (%s)", st.backend, st.durability,
           strcmp(st.durability, "full") == 0
               ? "an fsync per commit: commits survive a power loss"
               : "commits survive a crash; a power loss may lose the last ones");
  store_set_node(*store, cfg->node);
  store_buffers_forget(*store); /* a fleet's node: its buffers of before a crash are gone */
  store_limit(*store, (uint64_t)cfg->max_db_bytes);
  durable_first_ids(*store, first_id, first_buffer_id);
  return 0;
}

/* Users' kernels: where gpulab-runner is and its deadline (for the backends), then the
 * compile service on the store (or one in memory), for the first device's
 * architecture. Returns 0 or -1 (logged). */
static int open_ukernels(const struct config *cfg, struct backend *device, struct store *store,
                         struct ukernels **out) {
  if (cfg->runner) ukreg_set_runner_path(cfg->runner);
  exp_set_user_label(ukreg_label); /* runs of users' kernels read kernel:<id>@<version> */
  ukreg_set_deadline(cfg->kernel_deadline_s);
  ukreg_set_cpu_runner(cfg->cpu_runner_test);
  struct backend_device_info info;
  backend_device_info(device, &info);
  struct ukernels_config ucfg = {.nvrtc_path = cfg->nvrtc,
                                 .max_per_client = cfg->max_kernels,
                                 .max_versions = cfg->max_kernel_versions,
                                 .compile_slots = cfg->compile_slots,
                                 .compile_time_s = cfg->compile_time_s,
                                 .max_scratch_bytes = cfg->max_scratch,
                                 .store = store};
  if (strcmp(info.backend, "cuda") == 0 && info.cc_major > 0)
    ucfg.arch = info.cc_major * 10 + info.cc_minor;
  char err[512];
  if (ukernels_new(&ucfg, out, err, sizeof err)) {
    log_warn("gpulabd: users' kernels: %s", err);
    return -1;
  }
  problem_jobs_serve(*out); /* problems' jobs read back next may name them */
  return 0;
}

/* The lines that say gpulabd is ready: the dashboard's Chart.js and CodeMirror, and
 * where it listens. */
static void log_ready(const struct config *cfg, struct http_server *server, int n_devices,
                      bool tls) {
  const char *chartjs = cfg->chartjs ? cfg->chartjs : STATIC_CHARTJS_DEFAULT;
  struct stat st;
  if (access(chartjs, R_OK) == 0 && stat(chartjs, &st) == 0 && S_ISREG(st.st_mode))
    log_info("dashboard at / (Chart.js: %s)", chartjs);
  else
    log_warn(
        "dashboard at /: no Chart.js at %s (not a readable regular file; install libjs-chart.js "
        "or pass --chartjs): tables only",
        chartjs);
  const char *cm = cfg->codemirror ? cfg->codemirror : STATIC_CODEMIRROR_DEFAULT;
  char cm_js[4096];
  snprintf(cm_js, sizeof cm_js, "%s/codemirror.js", cm);
  if (access(cm_js, R_OK) == 0 && stat(cm_js, &st) == 0 && S_ISREG(st.st_mode))
    log_info("kernel editor: CodeMirror from %s", cm);
  else
    log_warn(
        "kernel editor: no CodeMirror at %s (install libjs-codemirror or pass "
        "--codemirror): a plain text area",
        cm);
  bool ipv6 = strchr(cfg->host, ':') != NULL; /* URLs bracket IPv6 addresses */
  if (cfg->socket_path)
    log_info("listening on unix:%s (mode %04o%s%s): clients are the Unix users who connect",
             cfg->socket_path, cfg->socket_mode, cfg->socket_group ? ", group " : "",
             cfg->socket_group ? cfg->socket_group : "");
  if (!cfg->no_tcp)
    log_info("listening on %s://%s%s%s:%d (%d device(s), %d streams each, %d http threads)",
             tls ? "https" : "http", ipv6 ? "[" : "", cfg->host, ipv6 ? "]" : "",
             http_server_port(server), n_devices, cfg->streams, cfg->http_threads);
}

/* The URL others reach this node at: --advertise, or http://HOST:PORT. */
static void advertised_url(const struct config *cfg, int port, char *out, size_t len) {
  if (cfg->advertise)
    snprintf(out, len, "%s", cfg->advertise);
  else
    snprintf(out, len, "http://%s:%d", cfg->host, port);
}

/* A PostgreSQL store is a fleet's (one node or more); SQLite's one box is none. */
static bool fleet_store(struct store *store) {
  struct store_status st;
  return store && (store_status(store, &st), strcmp(st.backend, "postgresql") == 0);
}

/* A PostgreSQL store's node joins its fleet (fleet.h) before it listens: whatever it
 * accepts is under its lease. SQLite: no fleet, *out NULL. Returns 0 or -1 (logged). */
static int join_fleet(const struct config *cfg, struct store *store, struct durable_fleet *df,
                      struct fleet **out) {
  *out = NULL;
  if (!fleet_store(store)) return 0;
  char advertise[160], err[512];
  advertised_url(cfg, cfg->port, advertise, sizeof advertise);
  struct fleet_config fcfg = {
      .uri = cfg->db, .node = cfg->node, .advertise = advertise, .lease_s = cfg->lease_s};
  durable_fleet_bind(df, &fcfg);
  if (fleet_start(&fcfg, out, err, sizeof err)) {
    log_warn("gpulabd: %s", err);
    return -1;
  }
  return 0;
}

static void wake_fleet(void *fleet) { fleet_wake(fleet); }

/* A fleet's node that could not renew its lease in time starts no job until it does
 * (fleet.h): another node may be about to take its jobs over. */
static void fence(struct fleet *fleet, struct engine *engine, bool *fenced) {
  bool now = fleet && fleet_fenced(fleet);
  if (now == *fenced) return;
  *fenced = now;
  engine_pause(engine, now);
  if (now)
    log_warn("fleet: the lease was last renewed %.1f s ago: no job starts until it is renewed",
             fleet_lease_age(fleet));
  else
    log_info("fleet: the lease is renewed: jobs start again");
}

/* Waits for a stop signal; meanwhile prunes the store once an hour, fences a fleet's
 * node whose lease is late, and watches the devices: a lost one (a sticky CUDA error)
 * cannot come back in this process, so after a moment of /health saying 503, gpulabd
 * exits for its supervisor (systemd, Kubernetes) to start it again; the store keeps
 * the queue. Returns the exit status. */
static int wait_for_stop(const struct config *cfg, struct engine *engine, struct store *store,
                         struct fleet *fleet, const sigset_t *stop_signals) {
  double next_prune = engine_now_mono() + 3600, lost_since = 0;
  bool fenced = false;
  for (;;) {
    struct timespec tick = {0, 250 * 1000 * 1000};
    int sig = sigtimedwait(stop_signals, NULL, &tick);
    if (sig >= 0) {
      log_info("signal %d: stopping", sig);
      return 0;
    }
    fence(fleet, engine, &fenced);
    if (engine_now_mono() >= next_prune && cfg->keep_days > 0) {
      if (store) store_prune(store, engine_now_unix() - cfg->keep_days * 86400.0);
      next_prune = engine_now_mono() + 3600;
    }
    if (!engine_healthy(engine) && lost_since == 0) {
      lost_since = engine_now_mono();
      log_warn(
          "a device was lost (its CUDA context failed): /health says 503; exiting in 2 s "
          "with status %d for the supervisor to restart gpulabd, queue intact",
          EXIT_DEVICE_LOST);
    }
    if (lost_since > 0 && engine_now_mono() - lost_since >= 2) return EXIT_DEVICE_LOST;
  }
}

/* Everything gpulabd runs, started in this order by start() and stopped in reverse by
 * stop(); each NULL (or 0) until it is started. */
struct gpulabd {
  struct backend *devices[16];
  int n_devices;
  struct auth *auth;
  char *tls_cert, *tls_key;
  long socket_gid;
  FILE *access_log;
  struct metrics *metrics;
  struct store *store;
  struct ukernels *ukernels;
  struct engine *engine;
  struct sweeps *sweeps;
  struct durable_fleet fleet_node;
  struct fleet *fleet;
  struct service service;
  struct http_server *server;
};

/* Blocks the stop signals in every thread (main waits for them with sigwait). */
static void block_signals(sigset_t *stop_signals) {
  sigemptyset(stop_signals);
  sigaddset(stop_signals, SIGINT);
  sigaddset(stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, stop_signals, NULL);
  signal(SIGPIPE, SIG_IGN);
  /* A file size limit (RLIMIT_FSIZE) makes writes fail with EFBIG, as a full disk
   * would, instead of killing gpulabd: the store refuses jobs and says so. */
  signal(SIGXFSZ, SIG_IGN);
}

/* The engine over the devices, writing to the store (when there is one), with the jobs
 * and sweeps the store kept read back. 0 or -1 (logged). */
static int start_engine(const struct config *cfg, struct gpulabd *d, uint64_t first_id,
                        uint64_t first_buffer_id) {
  struct store *store = d->store;
  struct engine_config ecfg = {
      .max_jobs_kept = cfg->max_jobs_kept,
      .max_queued = cfg->max_queued,
      .on_job_end = count_job,
      .on_job_end_arg = d->metrics,
      .on_job_change = store ? durable_record : NULL,
      .on_job_change_arg = store,
      .reserve_ids = store ? durable_reserve_ids : NULL,
      .reserve_ids_arg = store,
      /* One box's store: a block rarely (the call waits for a commit of a few hundred
         rows); a fleet's: ids close together. */
      .ids_block = store && !store_shared(store) ? 65536 : 0,
      .on_buffer_change = store ? durable_buffer : NULL,
      .on_buffer_change_arg = store,
      .first_id = first_id,
      .first_buffer_id = first_buffer_id,
      .node = fleet_store(store) ? cfg->node : NULL};
  if (engine_new(d->devices, d->n_devices, &ecfg, &d->engine)) {
    log_warn("gpulabd: cannot start the engine");
    return -1;
  }
  struct durable_recovery recovered;
  if (store && durable_recover(d->engine, store, &recovered) > 0)
    log_info("store: %d job(s) queued again, %d marked interrupted", recovered.rerun,
             recovered.interrupted);
  if (durable_sweeps_open(store, &d->sweeps)) {
    log_warn("gpulabd: out of memory");
    return -1;
  }
  return 0;
}

/* The HTTP server over the service. 0 or -1 (logged). */
static int start_http(const struct config *cfg, struct gpulabd *d) {
  d->service = (struct service){.engine = d->engine,
                                .store = d->store,
                                .fleet = d->fleet,
                                .sweeps = d->sweeps,
                                .ukernels = d->ukernels};
  struct http_options hopts = {.host = cfg->host,
                               .port = cfg->port,
                               .threads = cfg->http_threads,
                               .max_body = cfg->max_body,
                               .max_upload = cfg->max_upload,
                               .default_wait_s = cfg->default_wait_s,
                               .inline_max_bytes = cfg->inline_max_bytes,
                               .web_root = cfg->web_root,
                               .chartjs_path = cfg->chartjs,
                               .codemirror_dir = cfg->codemirror,
                               .metrics = d->metrics,
                               .access_log = d->access_log,
                               .auth = d->auth,
                               .tls_cert_pem = d->tls_cert,
                               .tls_key_pem = d->tls_key,
                               .max_connections = cfg->max_connections,
                               .max_connections_per_ip = cfg->max_connections_per_ip,
                               .timeout_s = cfg->timeout_s,
                               .min_upload_rate = cfg->min_upload_rate,
                               .service = &d->service,
                               .max_queued = cfg->max_queued,
                               .socket_path = cfg->socket_path,
                               .socket_mode = cfg->socket_mode,
                               .socket_gid = d->socket_gid,
                               .no_tcp = cfg->no_tcp};
  char err[512];
  if (http_server_start(&hopts, d->engine, &d->server, err, sizeof err)) {
    log_warn("gpulabd: %s", err);
    return -1;
  }
  log_ready(cfg, d->server, d->n_devices, d->tls_cert != NULL);
  if (d->fleet && cfg->port == 0) { /* the port is known now */
    char url[160];
    advertised_url(cfg, http_server_port(d->server), url, sizeof url);
    fleet_advertise(d->fleet, url);
  }
  return 0;
}

/* Starts everything after the access files (load_access; open_devices sets
 * cfg->streams when it was 0): 0, or -1 (logged) with what
 * was started left for stop(). */
static int start(struct config *cfg, struct gpulabd *d) {
  char err[512];
  uint64_t first_id, first_buffer_id;
  d->access_log = open_access_log(cfg->access_log);
  if (metrics_new(GPULAB_VERSION, &d->metrics)) {
    log_warn("gpulabd: out of memory");
    return -1;
  }
  d->n_devices = open_devices(cfg, d->devices, err, sizeof err);
  if (d->n_devices == 0) {
    log_warn("gpulabd: %s", err);
    return -1;
  }
  if (open_store(cfg, &d->store, &first_id, &first_buffer_id)) return -1;
  /* Users' kernels before jobs are read back: those jobs may name them. */
  if (open_ukernels(cfg, d->devices[0], d->store, &d->ukernels)) return -1;
  if (start_engine(cfg, d, first_id, first_buffer_id)) return -1;
  d->fleet_node = (struct durable_fleet){
      .engine = d->engine, .store = d->store, .lanes = d->n_devices * cfg->streams};
  if (join_fleet(cfg, d->store, &d->fleet_node, &d->fleet)) return -1;
  /* The fleet listens to other nodes' job events while someone here streams them. */
  if (d->fleet) events_on_listeners(engine_events(d->engine), wake_fleet, d->fleet);
  return start_http(cfg, d);
}

/* Stops what start() started, in reverse: status 0 (a clean stop) lets running jobs
 * finish within --grace. */
static void stop(const struct config *cfg, struct gpulabd *d, int status) {
  if (d->fleet) fleet_drain(d->fleet); /* claims nothing more; its lease held while jobs finish */
  http_server_quiesce(d->server);
  /* Running jobs may finish; queued ones stay in the store for the next start (a
   * fleet's other nodes take them once this one's lease has run out). Every waiting
   * request is answered. */
  if (d->engine) engine_shutdown(d->engine, status == 0 ? cfg->grace_s : 0);
  if (d->fleet)
    events_on_listeners(engine_events(d->engine), NULL, NULL); /* streams may close later */
  fleet_stop(d->fleet);
  http_server_drain(d->server, 2);
  http_server_stop(d->server);
  durable_sweeps_close(d->store, d->sweeps);
  if (d->engine && d->store) durable_release_ids(d->engine, d->store);
  engine_free(d->engine);
  for (int i = 0; i < d->n_devices; i++) backend_free(d->devices[i]);
  metrics_free(d->metrics);
  problem_jobs_serve(NULL);
  ukernels_free(d->ukernels);
  store_close(d->store);
  auth_free(d->auth);
  free(d->tls_cert);
  free(d->tls_key);
  if (d->access_log && d->access_log != stdout) fclose(d->access_log);
}

int main(int argc, char **argv) {
  struct config cfg;
  char err[512];
  int rc = config_parse(argc, argv, &cfg, stdout, err, sizeof err);
  if (rc == 1) return 0;
  if (rc < 0) {
    fprintf(stderr, "gpulabd: %s\n", err);
    return 2;
  }
  sigset_t stop_signals;
  block_signals(&stop_signals);
  if (cfg.http_threads == 0)
    cfg.http_threads = config_default_http_threads(); /* from the machine */
  api_params_allow_faults(cfg.allow_fault_injection);
  if (cfg.allow_fault_injection)
    log_warn("fault injection is allowed (--allow-fault-injection): for tests only");
  struct gpulabd d = {.socket_gid = -1};
  if (load_access(&cfg, &d.auth, &d.tls_cert, &d.tls_key, &d.socket_gid)) {
    auth_free(d.auth);
    free(d.tls_cert);
    return 2;
  }
  int status = 1;
  if (start(&cfg, &d) == 0) status = wait_for_stop(&cfg, d.engine, d.store, d.fleet, &stop_signals);
  stop(&cfg, &d, status);
  if (status == 0) log_info("stopped");
  return status;
}
