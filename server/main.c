/* gpulabd: reads the flags, opens the backend, starts the engine and the HTTP
 * server, and shuts them down in order on SIGINT or SIGTERM. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/params.h"
#include "kernels/backends/backend.h"
#include "server/config.h"
#include "server/durable.h"
#include "server/engine.h"
#include "server/http.h"
#include "server/auth.h"
#include "server/log.h"
#include "server/store.h"
#include "server/metrics.h"
#include "server/static.h"

/* Opens every device of --devices: the first decides the kind (auto: CUDA when a
 * device answers), the rest follow it. Returns how many were opened, 0 on error. */
static int open_devices(const struct config *cfg, struct backend **devices, char *err,
                        size_t err_len) {
  int ordinals[16], n = cfg->n_devices;
  memcpy(ordinals, cfg->devices, sizeof ordinals);
  if (n == 0) { /* all: every CUDA device, or one CPU device */
    int count = cfg->backend == BACKEND_CPU ? 0 : backend_cuda_device_count();
    n = count > 0 ? (count < 16 ? count : 16) : 1;
    for (int i = 0; i < n; i++) ordinals[i] = i;
  }
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
  metrics_job_ended(arg, exp_type_name(v->spec.type), job_state_name(v->state), queue_s, run_s);
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
  if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (1 << 20) && fseek(f, 0, SEEK_SET) == 0 &&
      (text = malloc((size_t)n + 1)) && fread(text, 1, (size_t)n, f) == (size_t)n) {
    text[n] = '\0';
  } else {
    snprintf(err, err_len, "%s: %s", path, f ? "cannot read it (or larger than 1 MiB)" : strerror(errno));
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

int main(int argc, char **argv) {
  struct config cfg;
  char err[512];
  int rc = config_parse(argc, argv, &cfg, stdout, err, sizeof err);
  if (rc == 1) return 0;
  if (rc < 0) {
    fprintf(stderr, "gpulabd: %s\n", err);
    return 2;
  }
  /* Block the stop signals in every thread; main waits for them with sigwait. */
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
  signal(SIGPIPE, SIG_IGN);

  struct backend *devices[16];
  int n_devices = 0;
  struct auth *auth = NULL;
  char *tls_cert = NULL, *tls_key = NULL;
  api_params_allow_faults(cfg.allow_fault_injection);
  if (cfg.allow_fault_injection) log_warn("fault injection is allowed (--allow-fault-injection): for tests only");
  if (cfg.tokens && auth_load(cfg.tokens, &auth, err, sizeof err)) {
    fprintf(stderr, "gpulabd: --tokens %s\n", err);
    return 2;
  }
  if (!auth && !loopback(cfg.host)) {
    if (!cfg.insecure_no_auth) {
      fprintf(stderr, "gpulabd: refusing to listen on %s without --tokens: anyone reaching it could "
                      "run jobs on this GPU. Give --tokens FILE, or --insecure-no-auth if you mean it.\n",
              cfg.host);
      return 2;
    }
    log_warn("INSECURE: listening on %s without tokens (--insecure-no-auth): anyone who reaches "
             "this port can run jobs", cfg.host);
  }
  if (!cfg.tls_cert != !cfg.tls_key) {
    fprintf(stderr, "gpulabd: --tls-cert and --tls-key go together\n");
    return 2;
  }
  if (cfg.tls_cert && (!(tls_cert = read_file(cfg.tls_cert, err, sizeof err)) ||
                       !(tls_key = read_file(cfg.tls_key, err, sizeof err)))) {
    fprintf(stderr, "gpulabd: %s\n", err);
    return 2;
  }
  if (auth) log_info("tokens: %d client(s) from %s", auth_count(auth), cfg.tokens);

  struct engine *engine = NULL;
  struct http_server *server = NULL;
  struct metrics *metrics = NULL;
  struct store *store = NULL;
  FILE *access_log = open_access_log(cfg.access_log);
  int status = 1;
  if (metrics_new(&metrics)) {
    log_warn("gpulabd: out of memory");
    goto fail;
  }
  n_devices = open_devices(&cfg, devices, err, sizeof err);
  if (n_devices == 0) {
    log_warn("gpulabd: %s", err);
    goto fail;
  }
  /* --db none: no store at all (nothing durable; listings come from memory). */
  const bool durable = strcmp(cfg.db, "none") != 0;
  if (durable && store_open(cfg.db, &store, err, sizeof err)) {
    log_warn("gpulabd: --db %s", err);
    goto fail;
  }
  if (durable && cfg.keep_days > 0) {
    int pruned = store_prune(store, engine_now_unix() - cfg.keep_days * 86400.0);
    if (pruned) log_info("store: pruned %d job(s) older than %d days", pruned, cfg.keep_days);
  }
  struct engine_config ecfg = {.max_jobs_kept = cfg.max_jobs_kept, .max_queued = cfg.max_queued,
                               .on_job_end = count_job, .on_job_end_arg = metrics,
                               .on_job_change = durable ? durable_record : NULL,
                               .on_job_change_arg = store,
                               .first_id = durable ? store_max_id(store) + 1 : 1};
  if (engine_new(devices, n_devices, &ecfg, &engine)) {
    log_warn("gpulabd: cannot start the engine");
    goto fail;
  }
  struct durable_recovery recovered;
  if (durable && durable_recover(engine, store, &recovered) > 0)
    log_info("store %s: %d job(s) queued again, %d marked interrupted", cfg.db, recovered.rerun,
             recovered.interrupted);
  struct http_options hopts = {.host = cfg.host, .port = cfg.port, .threads = cfg.http_threads,
                               .max_body = cfg.max_body, .max_upload = cfg.max_upload, .default_wait_s = cfg.default_wait_s,
                               .inline_max_bytes = cfg.inline_max_bytes,
                               .web_root = cfg.web_root, .chartjs_path = cfg.chartjs,
                               .metrics = metrics, .access_log = access_log, .auth = auth,
                               .tls_cert_pem = tls_cert, .tls_key_pem = tls_key,
                               .max_connections = cfg.max_connections,
                               .max_connections_per_ip = cfg.max_connections_per_ip,
                               .timeout_s = cfg.timeout_s, .store = store,
                               .max_queued = cfg.max_queued};
  if (http_server_start(&hopts, engine, &server, err, sizeof err)) {
    log_warn("gpulabd: %s", err);
    goto fail;
  }
  const char *chartjs = cfg.chartjs ? cfg.chartjs : STATIC_CHARTJS_DEFAULT;
  if (access(chartjs, R_OK) == 0)
    log_info("dashboard at / (Chart.js: %s)", chartjs);
  else
    log_warn("dashboard at /: no Chart.js at %s (install libjs-chart.js or pass --chartjs): tables only",
             chartjs);
  bool ipv6 = strchr(cfg.host, ':') != NULL; /* URLs bracket IPv6 addresses */
  log_info("listening on %s://%s%s%s:%d (%d device(s), %d streams each, %d http threads)",
           tls_cert ? "https" : "http", ipv6 ? "[" : "", cfg.host, ipv6 ? "]" : "", http_server_port(server), n_devices,
           cfg.streams, cfg.http_threads);

  /* Wait for a stop signal; meanwhile prune the store once an hour, and watch the
   * devices: a lost one (a sticky CUDA error) cannot come back in this process, so
   * after a moment of /health saying 503, gpulabd exits for its supervisor
   * (systemd, Kubernetes) to start it again; the store keeps the queue. */
  int sig = -1;
  double next_prune = engine_now_mono() + 3600, lost_since = 0;
  while (sig < 0) {
    struct timespec tick = {0, 250 * 1000 * 1000};
    sig = sigtimedwait(&stop_signals, NULL, &tick);
    if (sig >= 0) break;
    if (engine_now_mono() >= next_prune && cfg.keep_days > 0) {
      if (store) store_prune(store, engine_now_unix() - cfg.keep_days * 86400.0);
      next_prune = engine_now_mono() + 3600;
    }
    if (!engine_healthy(engine) && lost_since == 0) {
      lost_since = engine_now_mono();
      log_warn("a device was lost (its CUDA context failed): /health says 503; exiting in 2 s "
               "with status %d for the supervisor to restart gpulabd, queue intact", EXIT_DEVICE_LOST);
    }
    if (lost_since > 0 && engine_now_mono() - lost_since >= 2) break;
  }
  if (sig >= 0) {
    log_info("signal %d: stopping", sig);
    status = 0;
  } else {
    status = EXIT_DEVICE_LOST;
  }
fail:
  http_server_quiesce(server);
  /* Running jobs may finish; queued ones stay in the store for the next start.
   * Every waiting request is answered. */
  if (engine) engine_shutdown(engine, status == 0 ? cfg.grace_s : 0);
  if (status == EXIT_DEVICE_LOST) status = EXIT_DEVICE_LOST;
  http_server_drain(server, 2);
  http_server_stop(server);
  engine_free(engine);
  for (int i = 0; i < n_devices; i++) backend_free(devices[i]);
  metrics_free(metrics);
  store_close(store);
  auth_free(auth);
  free(tls_cert);
  free(tls_key);
  if (access_log && access_log != stdout) fclose(access_log);
  if (status == 0) log_info("stopped");
  return status;
}
