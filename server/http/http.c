/* The HTTP plumbing: libmicrohttpd's daemons (TCP and --socket), the connections
 * and their request deadlines, one `struct request` per request, body collection
 * under --max-body, resumption of suspended requests, and the access log. */
#include "server/http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api/encode.h"
#include "api/json_writer.h"
#include "api/utf8.h"
#include "server/http/metrics.h"
#include "server/http/request.h"
#include "server/http/router.h"
#include "server/log.h"

/* A TCP connection, for the request deadline: a whole request, head and body, must
 * arrive within --timeout seconds of the connection's start or of the previous
 * answer, however slowly its bytes trickle in, and one more second for each
 * --min-upload-rate bytes of its body received (Apache's mod_reqtimeout MinRate): a
 * large upload at that rate or faster finishes, a client dripping bytes does not. */
struct conn_watch {
  struct conn_watch *next, *prev;
  int fd;
  double since;              /* engine_now_mono() when its current request became due */
  bool heading;              /* waiting for a request (its head or its body) */
  _Atomic uint64_t received; /* its body's bytes so far (collect_body) */
  /* On the Unix socket (--socket): the peer, from its credentials (SO_PEERCRED). */
  bool local;
  bool local_admin; /* root, or gpulabd's own user: sees every client's jobs */
  unsigned uid;
  char user[64]; /* the Unix user name, or "uid:N" */
};

/* Appends upload data, remembering (not storing) what goes past max_body. */
static void collect_body(struct request *r, const char *data, size_t size) {
  if (r->body_too_large || r->body_len + size > r->body_limit) {
    r->body_too_large = true;
    return;
  }
  if (r->body_len + size + 1 > r->body_cap) {
    size_t cap = r->body_cap ? r->body_cap : 1024;
    while (cap < r->body_len + size + 1) cap *= 2;
    char *body = realloc(r->body, cap);
    if (!body) {
      r->body_too_large = true; /* reported as 413: we could not hold it */
      return;
    }
    r->body = body;
    r->body_cap = cap;
  }
  memcpy(r->body + r->body_len, data, size);
  r->body_len += size;
  r->body[r->body_len] = '\0';
}

/* Marks the connection's request as arrived whole (heading false: its body too, or
 * it was answered) or due again (true: a keep-alive connection's next request). */
static void conn_heading(struct http_server *srv, struct MHD_Connection *conn, bool heading) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(
      conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  struct conn_watch *w = info ? info->socket_context : NULL;
  if (!w) return;
  pthread_mutex_lock(&srv->conns_lock);
  w->heading = heading;
  w->since = engine_now_mono();
  atomic_store(&w->received, 0);
  pthread_mutex_unlock(&srv->conns_lock);
}

/* A connection on the Unix socket: who is at the other end (SO_PEERCRED), by name.
 * False when the kernel does not say. */
static bool peer_user(int fd, struct conn_watch *w) {
  struct sockaddr_storage local;
  socklen_t len = sizeof local;
  if (getsockname(fd, (struct sockaddr *)&local, &len) != 0 || local.ss_family != AF_UNIX)
    return true;
  struct ucred cred;
  len = sizeof cred;
  w->local = true;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  struct passwd pw, *found = NULL;
  char buf[2048];
  w->uid = (unsigned)cred.uid;
  if (getpwuid_r(cred.uid, &pw, buf, sizeof buf, &found) == 0 && found && utf8_valid(pw.pw_name) &&
      strlen(pw.pw_name) < sizeof w->user)
    snprintf(w->user, sizeof w->user, "%s", pw.pw_name);
  else
    snprintf(w->user, sizeof w->user, "uid:%u", w->uid);
  w->local_admin = cred.uid == 0 || cred.uid == geteuid();
  return true;
}

/* The Unix socket's share per user, as --max-connections-per-ip is per address:
 * true when w's user already holds that many. conns_lock held. */
static bool user_over_limit_locked(struct http_server *srv, const struct conn_watch *w) {
  int held = 0;
  for (const struct conn_watch *o = srv->conns; o; o = o->next)
    held += o->local && o->uid == w->uid;
  int max = srv->opts.max_connections > 0 ? srv->opts.max_connections : 4096;
  return held >= http_per_address_limit(max, srv->opts.max_connections_per_ip);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  struct http_server *srv = cls;
  struct conn_watch *w = *socket_context;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(
        conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    w = calloc(1, sizeof *w);
    if (w && info) {
      *w = (struct conn_watch){.fd = info->connect_fd, .since = engine_now_mono(), .heading = true};
      bool known = peer_user(w->fd, w); /* outside the lock: a name lookup may be slow */
      pthread_mutex_lock(&srv->conns_lock);
      if (!known || (w->local && user_over_limit_locked(srv, w))) { /* closed at once */
        shutdown(w->fd, SHUT_RDWR);
        w->fd = -1;
      }
      w->next = srv->conns;
      if (srv->conns) srv->conns->prev = w;
      srv->conns = w;
      *socket_context = w;
      pthread_mutex_unlock(&srv->conns_lock);
    } else {
      free(w);
    }
    return;
  }
  pthread_mutex_lock(&srv->conns_lock);
  if (w) { /* closed: MHD closes the socket after telling us */
    if (w->prev)
      w->prev->next = w->next;
    else
      srv->conns = w->next;
    if (w->next) w->next->prev = w->prev;
    free(w);
    *socket_context = NULL;
  }
  pthread_mutex_unlock(&srv->conns_lock);
}

/* Four times a second: a connection whose request (head and body) is overdue is
 * shut down; MHD then sees it closed and cleans up. (MHD's own timeout is per byte,
 * so it would keep a client that sends one byte a second.) */
static void *watchdog_main(void *arg) {
  struct http_server *srv = arg;
  double limit = srv->opts.timeout_s > 0 ? srv->opts.timeout_s : 30;
  double rate = (double)srv->opts.min_upload_rate; /* bytes a second; 0: none */
  while (!atomic_load(&srv->stopping)) {
    struct timespec second = {0, 250 * 1000 * 1000};
    nanosleep(&second, NULL);
    double now = engine_now_mono();
    pthread_mutex_lock(&srv->conns_lock);
    for (struct conn_watch *w = srv->conns; w; w = w->next) {
      double allowed = limit + (rate > 0 ? (double)atomic_load(&w->received) / rate : 0);
      if (w->heading && now - w->since > allowed && w->fd >= 0) {
        shutdown(w->fd, SHUT_RDWR);
        w->fd = -1; /* once */
      }
    }
    pthread_mutex_unlock(&srv->conns_lock);
  }
  return NULL;
}

static struct request *request_new(struct http_server *srv, struct MHD_Connection *conn) {
  struct request *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->srv = srv;
  r->conn = conn;
  r->body_limit = srv->opts.max_body;
  r->route = "other";
  r->started = engine_now_mono();
  /* On the Unix socket the client is the peer's user (a token may still name another). */
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(
      conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  const struct conn_watch *w = info ? info->socket_context : NULL;
  pthread_mutex_lock(&srv->conns_lock);
  if (w && w->local) {
    r->local = true;
    r->local_admin = w->local_admin;
    snprintf(r->client, sizeof r->client, "%s", w->user);
  }
  pthread_mutex_unlock(&srv->conns_lock);
  atomic_fetch_add(&srv->in_flight, 1);
  return r;
}

/* libmicrohttpd's URI logger: a request line has arrived. The request begins here,
 * so that one that libmicrohttpd refuses itself (a Content-Length it cannot parse,
 * headers too large) still gets its access-log line and its count. The path is
 * logged as sent (percent-encoded), without the query, which may hold a token. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
  struct request *r = request_new(cls, conn);
  size_t path_len = strcspn(uri, "?");
  if (r) {
    snprintf(r->path, sizeof r->path, "%.*s", (int)path_len, uri);
    snprintf(r->query, sizeof r->query, "%s", uri + path_len);
  }
  return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
  struct http_server *srv = cls;
  struct request *r = *req_cls;
  static _Thread_local bool named; /* libmicrohttpd's threads, as top -H shows them */
  if (!named) {
    pthread_setname_np(pthread_self(), "gpulab-http");
    named = true;
  }
  if (!r || !r->method[0]) { /* the head has arrived; it stays on its deadline until its body has */
    if (!r && !(r = *req_cls = on_uri(srv, url, conn))) return MHD_NO;
    snprintf(r->method, sizeof r->method, "%s", method[0] ? method : "?");
    enum MHD_Result early;
    if (!router_precheck(r, url, &early)) return MHD_YES;
    conn_heading(srv, conn, false); /* answered: off the request deadline */
    return early;
  }
  if (r->suspended) { /* resumed: the job ended or the wait ran out */
    r->suspended = false;
    return r->resume(r);
  }
  if (*upload_data_size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(
        conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn_watch *w = info ? info->socket_context : NULL;
    if (w) atomic_fetch_add(&w->received, *upload_data_size); /* its deadline moves on */
    collect_body(r, upload_data, *upload_data_size);
    *upload_data_size = 0;
    return MHD_YES;
  }
  conn_heading(srv, conn, false); /* the whole request is here */
  if (r->body_too_large)
    return respond_fail(r, 413, "body_too_large", NULL,
                        "the request body is larger than the limit (%zu bytes; see --max-body "
                        "and --max-upload)",
                        r->body_limit);
  return router_dispatch(r, url);
}

/* One JSON line per request: time, client, method, route, path, status, bytes,
 * duration and job, written straight to text (api/json_writer.h) in a buffer on the
 * stack. A single fwrite keeps lines of different threads apart. */
static void access_log(struct request *r, FILE *out, double seconds, const char *ended) {
  char client[64], when[40], method[32], path[sizeof r->path * 3], line[1024];
  api_format_time(engine_now_unix(), when, sizeof when);
  request_client(r, client, sizeof client);
  utf8_scrub_in_place(client, sizeof client);
  utf8_scrub(method, sizeof method, r->method);
  utf8_scrub(path, sizeof path, r->path);
  struct jw w;
  jw_text_begin(&w, line, sizeof line - 1); /* a byte for the newline */
  jw_object_begin_whole(&w, NULL);          /* no line when a member is refused */
  jw_string(&w, "time", when);
  jw_string(&w, "client", client);
  jw_string(&w, "method", method);
  jw_string(&w, "route", r->route);
  jw_string(&w, "path", path);
  jw_integer(&w, "status", (int)r->status);
  jw_integer(&w, "bytes", (long long)r->bytes);
  jw_real(&w, "duration_ms", seconds * 1e3);
  if (r->job_id)
    jw_integer(&w, "job", (long long)r->job_id);
  else
    jw_null(&w, "job");
  if (ended) jw_string(&w, "ended", ended); /* a word of ended_how's */
  jw_object_end(&w);
  size_t len = 0;
  char *text = jw_text_end(&w, &len); /* line, or malloc'd when longer */
  if (!text) return;
  text[len] = '\n';
  fwrite(text, 1, len + 1, out);
  fflush(out);
  if (text != line) free(text);
}

/* Why a request ended without its answer, for the access log; NULL when answered. */
static const char *ended_how(struct http_server *srv, struct MHD_Connection *conn,
                             enum MHD_RequestTerminationCode toe) {
  if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) return NULL;
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(
      conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  const struct conn_watch *w = info ? info->socket_context : NULL;
  bool cut = false;
  pthread_mutex_lock(&srv->conns_lock);
  cut = w && w->fd < 0; /* the watchdog shut it: its request was overdue */
  pthread_mutex_unlock(&srv->conns_lock);
  if (cut || toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED) return "timeout";
  if (toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN) return "shutdown";
  if (toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT) return "client_closed";
  return "error";
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
  struct http_server *srv = cls;
  struct request *r = *req_cls;
  if (!r) return;
  atomic_fetch_sub(&srv->in_flight, 1);
  const char *ended = ended_how(srv, conn, toe);
  conn_heading(srv, conn, true); /* a keep-alive connection's next request is due */
  if (r->status == 0) { /* answered by libmicrohttpd itself (a malformed head), if at all */
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn,
                                                                   MHD_CONNECTION_INFO_HTTP_STATUS);
    if (info) r->status = info->http_status;
  }
  double seconds = engine_now_mono() - r->started;
  if (srv->opts.metrics)
    metrics_http_request(srv->opts.metrics, r->route, r->method, (int)r->status, seconds);
  if (srv->opts.access_log) access_log(r, srv->opts.access_log, seconds, ended);
  job_unref(r->job);
  free(r->body);
  free(r);
  *req_cls = NULL;
}

static int parse_bind_address(const char *host, int port, struct sockaddr_storage *ss,
                              unsigned *flags) {
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    return 0;
  }
  if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    *flags |= MHD_USE_IPv6;
    return 0;
  }
  return -EINVAL;
}

int http_per_address_limit(int max_connections, int max_connections_per_ip) {
  int quarter = max_connections / 4 > 0 ? max_connections / 4 : 1;
  return max_connections_per_ip < quarter ? max_connections_per_ip : quarter;
}

/* The options both daemons take: callbacks and limits. Returns how many it set. */
static int common_options(struct http_server *s, struct MHD_OptionItem *o) {
  const struct http_options *opts = &s->opts;
  int n = 0, max_connections = opts->max_connections > 0 ? opts->max_connections : 4096;
  o[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, opts->threads, NULL};
  o[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s};
  o[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s};
  o[n++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, s};
  o[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, max_connections, NULL};
  o[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                   opts->timeout_s > 0 ? opts->timeout_s : 30, NULL};
  return n;
}

/* poll, not epoll: with libmicrohttpd 0.9.75's epoll mode a connection resumed from
 * another thread was sometimes not processed again (a test with 20 event streams
 * lost some of them under load); poll looks at every connection each turn. */
#define DAEMON_FLAGS                                                                         \
  (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | \
   MHD_USE_ERROR_LOG)

/* The TCP daemon on --host/--port. Limits: connections in all and per address (at
 * most a quarter of all, so that one or two addresses cannot take every slot); an
 * idle connection is dropped (suspended ones, waiting for a job or an event, are
 * not idle). Returns 0 or a negative errno with err. */
static int start_tcp(struct http_server *s, char *err, size_t err_len) {
  const struct http_options *opts = &s->opts;
  unsigned flags = DAEMON_FLAGS;
  struct sockaddr_storage addr;
  if (parse_bind_address(opts->host, opts->port, &addr, &flags)) {
    snprintf(err, err_len, "--host %s is not a numeric IPv4 or IPv6 address", opts->host);
    return -EINVAL;
  }
  int max_connections = opts->max_connections > 0 ? opts->max_connections : 4096;
  int per_address = http_per_address_limit(max_connections, opts->max_connections_per_ip);
  if (per_address < opts->max_connections_per_ip)
    log_info(
        "connections per address: %d (a quarter of --max-connections %d, below "
        "--max-connections-per-ip %d)",
        per_address, max_connections, opts->max_connections_per_ip);
  struct MHD_OptionItem options[16];
  int n = common_options(s, options);
  options[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &addr};
  options[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address, NULL};
  if (opts->tls_cert_pem && opts->tls_key_pem) {
    flags |= MHD_USE_TLS;
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
                                           (void *)opts->tls_cert_pem};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)opts->tls_key_pem};
  }
  options[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  s->daemon = MHD_start_daemon(flags, (uint16_t)opts->port, NULL, NULL, on_request, s,
                               MHD_OPTION_ARRAY, options, MHD_OPTION_END);
  if (!s->daemon) {
    snprintf(err, err_len, "cannot listen on %s:%d (in use, not an address of this machine%s)",
             opts->host, opts->port,
             flags & MHD_USE_TLS ? ", or a certificate or key it cannot use" : "");
    return -EADDRINUSE;
  }
  return 0;
}

/* A listening Unix socket at path with mode and group (gid -1: the default). A
 * stale socket of an earlier run is replaced; one that answers (a gpulabd on it) or
 * a file that is no socket is left alone and refused. Returns the fd, or -1 with err. */
static int unix_listen(const char *path, int mode, long gid, char *err, size_t err_len) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
  struct stat st;
  if (lstat(path, &st) == 0) {
    int probe = S_ISSOCK(st.st_mode) ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
    bool answers = probe >= 0 && connect(probe, (struct sockaddr *)&addr, sizeof addr) == 0;
    if (probe >= 0) close(probe);
    if (!S_ISSOCK(st.st_mode) || answers) {
      snprintf(err, err_len, "--socket %s: %s", path,
               answers ? "another gpulabd listens there" : "a file that is no socket is there");
      return -EADDRINUSE;
    }
    unlink(path); /* a socket nobody listens on: an earlier run's */
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      (gid >= 0 && chown(path, (uid_t)-1, (gid_t)gid) != 0) || chmod(path, (mode_t)mode) != 0 ||
      listen(fd, 128) != 0) {
    int e = errno ? errno : EIO;
    snprintf(err, err_len, "--socket %s: %s", path, strerror(e));
    if (fd >= 0) close(fd);
    return -e;
  }
  return fd;
}

/* The daemon on the Unix socket (--socket): the same routes; its clients are Unix
 * users (on_connection), each held to the per-address share. Returns 0 or -1. */
static int start_unix(struct http_server *s, char *err, size_t err_len) {
  int fd = unix_listen(s->opts.socket_path, s->opts.socket_mode, s->opts.socket_gid, err, err_len);
  if (fd < 0) return fd;
  struct MHD_OptionItem options[16];
  int n = common_options(s, options);
  options[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, fd, NULL};
  options[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  s->unix_daemon = MHD_start_daemon(DAEMON_FLAGS, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY,
                                    options, MHD_OPTION_END);
  if (!s->unix_daemon) {
    snprintf(err, err_len, "--socket %s: libmicrohttpd cannot serve it", s->opts.socket_path);
    close(fd);
    unlink(s->opts.socket_path);
    return -EIO;
  }
  return 0;
}

static void stop_daemons(struct http_server *s) {
  if (s->daemon) MHD_stop_daemon(s->daemon);
  if (s->unix_daemon) {
    MHD_stop_daemon(s->unix_daemon);
    unlink(s->opts.socket_path);
  }
  s->daemon = s->unix_daemon = NULL;
}

int http_server_start(const struct http_options *opts, struct engine *engine,
                      struct http_server **out, char *err, size_t err_len) {
  struct http_server *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return -ENOMEM;
  }
  s->engine = engine;
  s->opts = *opts;
  pthread_mutex_init(&s->rates_lock, NULL);
  pthread_mutex_init(&s->conns_lock, NULL);
  s->started_mono = engine_now_mono();
  int rc = 0;
  if ((!opts->no_tcp && (rc = start_tcp(s, err, err_len))) ||
      (opts->socket_path && (rc = start_unix(s, err, err_len))))
    goto fail;
  if (pthread_create(&s->watchdog, NULL, watchdog_main, s)) {
    snprintf(err, err_len, "cannot start the connection watchdog");
    rc = -EAGAIN;
    goto fail;
  }
  pthread_setname_np(s->watchdog, "gpulab-watchdog");
  *out = s;
  return 0;
fail:
  stop_daemons(s);
  pthread_mutex_destroy(&s->rates_lock);
  pthread_mutex_destroy(&s->conns_lock);
  free(s);
  return rc;
}

int http_server_port(const struct http_server *s) {
  if (!s->daemon) return 0;
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  return info ? info->port : -1;
}

void http_server_quiesce(struct http_server *s) {
  if (s && s->daemon) MHD_quiesce_daemon(s->daemon);
  if (s && s->unix_daemon) MHD_quiesce_daemon(s->unix_daemon);
}

void http_server_drain(struct http_server *s, double timeout_s) {
  double end = engine_now_mono() + timeout_s;
  while (s && atomic_load(&s->in_flight) > 0 && engine_now_mono() < end) {
    struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

void http_server_stop(struct http_server *s) {
  if (!s) return;
  atomic_store(&s->stopping, true);
  pthread_join(s->watchdog, NULL);
  stop_daemons(s);
  pthread_mutex_destroy(&s->rates_lock);
  pthread_mutex_destroy(&s->conns_lock);
  free(s);
}
