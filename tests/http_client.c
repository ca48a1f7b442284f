/* The HTTP tests' harness (http_client.h): a gpulabd child process whose stderr is
 * forwarded to ours, and a libcurl client that captures what the tests check. What a
 * test reads back (job documents, event streams, metrics) is http_observe.c's. */
#include "http_client.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "kernels/core/clock.h"

#define START_TIMEOUT_S 30.0
#define STOP_TIMEOUT_S 10.0
#define REQUEST_TIMEOUT_S 300L
#define LISTENING "listening on http://127.0.0.1:"
#define LISTENING_TLS "listening on https://127.0.0.1:"

/* ---- children: killed if the test exits early ---- */

#define MAX_CHILDREN 16
static pid_t children[MAX_CHILDREN];
static pthread_mutex_t children_lock = PTHREAD_MUTEX_INITIALIZER;

static void kill_children(void) {
  pthread_mutex_lock(&children_lock);
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (children[i] > 0) kill(children[i], SIGKILL);
  pthread_mutex_unlock(&children_lock);
}

static void children_set(pid_t old, pid_t new_pid) {
  static bool registered;
  pthread_mutex_lock(&children_lock);
  if (!registered) registered = atexit(kill_children) == 0;
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (children[i] == old) {
      children[i] = new_pid;
      break;
    }
  pthread_mutex_unlock(&children_lock);
}

/* ---- start and stop ---- */

static void forward_log(const char *data, size_t len) {
  if (len) fwrite(data, 1, len, stderr);
}

static void *drain_main(void *arg) {
  struct gpulabd *d = arg;
  char buf[4096];
  ssize_t n;
  while ((n = read(d->log_fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    forward_log(buf, (size_t)n);
  }
  return NULL;
}

/* Builds argv: $GPULABD --host 127.0.0.1 --port 0 [--db :memory:] extra_args... NULL.
 * Tests run side by side: each gpulabd keeps its jobs in memory unless it names
 * its own --db. */
static char **build_argv(const char *exe, const char *const *extra) {
  size_t n_extra = 0;
  bool own_db = false;
  while (extra && extra[n_extra]) own_db |= strcmp(extra[n_extra++], "--db") == 0;
  char **argv = calloc(n_extra + 8, sizeof *argv);
  CHECK(argv != NULL);
  size_t i = 0;
  argv[i++] = (char *)exe;
  argv[i++] = "--host";
  argv[i++] = "127.0.0.1";
  argv[i++] = "--port";
  argv[i++] = "0";
  if (!own_db) {
    argv[i++] = "--db";
    argv[i++] = ":memory:";
  }
  for (size_t j = 0; j < n_extra; j++) argv[i++] = (char *)extra[j];
  argv[i] = NULL;
  return argv;
}

static uid_t spawn_uid = (uid_t)-1;
static gid_t spawn_gid = (gid_t)-1;

void gpulabd_spawn_as(uid_t uid, gid_t gid) {
  spawn_uid = uid;
  spawn_gid = gid;
}

static pid_t spawn(char **argv, int *log_fd) {
  int fds[2];
  CHECK(pipe2(fds, O_CLOEXEC) == 0);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) { /* only async-signal-safe calls until exec */
    dup2(fds[1], STDERR_FILENO);
    if (spawn_uid != (uid_t)-1 &&
        (setgroups(0, NULL) != 0 || setgid(spawn_gid) != 0 || setuid(spawn_uid) != 0)) {
      static const char msg[] = "test harness: cannot change to the asked user\n";
      (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
      _exit(126);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* after setuid, which clears it */
    execv(argv[0], argv);
    static const char msg[] = "test harness: cannot exec $GPULABD\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  close(fds[1]);
  *log_fd = fds[0];
  children_set(0, pid);
  return pid;
}

/* Finds the port in the "listening on" line of log (http or https), or returns -1. */
static int find_port(const char *log) {
  const char *prefix = LISTENING, *p = strstr(log, LISTENING);
  if (!p) p = strstr(log, prefix = LISTENING_TLS);
  if (!p || !strchr(p, '\n')) return -1; /* wait for the whole line */
  char *end;
  long port = strtol(p + strlen(prefix), &end, 10);
  return end != p + strlen(prefix) && port > 0 && port < 65536 ? (int)port : -1;
}

/* Ends a child that did not start: collects its status (killing it on a timeout). */
static int reap_failed(pid_t pid, bool timed_out) {
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  children_set(pid, 0);
  return !timed_out && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int gpulabd_try_start(const char *const *extra_args, struct gpulabd *out, char *log, size_t log_len,
                      int *exit_status) {
  const char *exe = getenv("GPULABD");
  if (!exe || !*exe) CHECK_FAIL_("%s", "GPULABD is not set (the path of the built gpulabd)");
  signal(SIGPIPE, SIG_IGN);
  memset(out, 0, sizeof *out);
  char **argv = build_argv(exe, extra_args);
  out->pid = spawn(argv, &out->log_fd);
  free(argv);

  size_t cap = 1 << 16, len = 0, forwarded = 0;
  char *buf = malloc(cap);
  CHECK(buf != NULL);
  buf[0] = '\0';
  double deadline = clock_mono_s() + START_TIMEOUT_S;
  int port = -1;
  bool eof = false, unix_only = false; /* --no-tcp: ready once it listens on its socket */
  for (const char *const *a = extra_args; a && *a; a++) unix_only |= strcmp(*a, "--no-tcp") == 0;
  while (port < 0 && !eof) {
    int left_ms = (int)((deadline - clock_mono_s()) * 1e3);
    if (left_ms <= 0) break;
    struct pollfd pfd = {.fd = out->log_fd, .events = POLLIN};
    int rc = poll(&pfd, 1, left_ms);
    if (rc < 0 && errno == EINTR) continue;
    CHECK(rc >= 0);
    if (rc == 0) continue;
    if (len + 4096 + 1 > cap) {
      cap *= 2;
      buf = realloc(buf, cap);
      CHECK(buf != NULL);
    }
    ssize_t n = read(out->log_fd, buf + len, cap - len - 1);
    if (n < 0 && errno == EINTR) continue;
    eof = n <= 0;
    if (n > 0) len += (size_t)n;
    buf[len] = '\0';
    /* Forward whole lines as they come, so a hung start-up still shows its log. */
    char *nl = strrchr(buf + forwarded, '\n');
    if (nl) {
      forward_log(buf + forwarded, (size_t)(nl + 1 - (buf + forwarded)));
      forwarded = (size_t)(nl + 1 - buf);
    }
    port = unix_only ? (strstr(buf, "listening on unix:") &&
                                strstr(strstr(buf, "listening on unix:"), "\n")
                            ? 0
                            : -1)
                     : find_port(buf);
  }
  if (port < 0) {
    forward_log(buf + forwarded, len - forwarded);
    *exit_status = reap_failed(out->pid, !eof);
    if (!eof)
      fprintf(stderr, "test harness: gpulabd did not listen within %.0f s\n", START_TIMEOUT_S);
    snprintf(log, log_len, "%s", buf);
    free(buf);
    close(out->log_fd);
    memset(out, 0, sizeof *out);
    return -1;
  }
  forward_log(buf + forwarded, len - forwarded);
  free(buf);
  out->port = port;
  CHECK(pthread_create(&out->drain, NULL, drain_main, out) == 0);
  http_client_open(&out->http, port);
  *exit_status = 0;
  if (log_len) log[0] = '\0';
  return 0;
}

void gpulabd_start(const char *const *extra_args, struct gpulabd *out) {
  static char log[1 << 16];
  int status;
  if (gpulabd_try_start(extra_args, out, log, sizeof log, &status))
    CHECK_FAIL_("gpulabd did not start (exit status %d); its log:\n%s", status, log);
}

void gpulabd_start_or_skip(const char *const *extra_args, struct gpulabd *out) {
  static char log[1 << 16];
  int status;
  if (gpulabd_try_start(extra_args, out, log, sizeof log, &status) == 0) return;
  const char *why = strstr(log, "cuda backend unavailable");
  if (!why) CHECK_FAIL_("gpulabd did not start (exit status %d); its log:\n%s", status, log);
  fprintf(stderr, "skip: %.*s\n", (int)strcspn(why, "\n"), why);
  exit(CHECK_SKIP);
}

void gpulabd_stop(struct gpulabd *d) { gpulabd_stop_within(d, STOP_TIMEOUT_S); }

void gpulabd_stop_within(struct gpulabd *d, double timeout_s) {
  if (!d->pid) return;
  http_client_close(&d->http);
  CHECK(kill(d->pid, SIGTERM) == 0);
  double deadline = clock_mono_s() + timeout_s;
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(d->pid, &status, WNOHANG)) == 0 && clock_mono_s() < deadline) usleep(10000);
  if (got == 0) {
    kill(d->pid, SIGKILL);
    waitpid(d->pid, &status, 0);
    children_set(d->pid, 0);
    CHECK_FAIL_("gpulabd (pid %d) did not exit within %.0f s of SIGTERM", (int)d->pid, timeout_s);
  }
  CHECK(got == d->pid);
  children_set(d->pid, 0);
  pthread_join(d->drain, NULL);
  close(d->log_fd);
  pid_t pid = d->pid;
  d->pid = 0;
  if (!WIFEXITED(status))
    CHECK_FAIL_("gpulabd (pid %d) died of signal %d after SIGTERM", (int)pid,
                WIFSIGNALED(status) ? WTERMSIG(status) : -1);
  CHECK_INT_EQ(WEXITSTATUS(status), 0);
}

int gpulabd_wait_exit(struct gpulabd *d, double timeout_s) {
  double deadline = clock_mono_s() + timeout_s;
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(d->pid, &status, WNOHANG)) == 0 && clock_mono_s() < deadline) usleep(10000);
  if (got != d->pid) return -1;
  http_client_close(&d->http);
  children_set(d->pid, 0);
  pthread_join(d->drain, NULL);
  close(d->log_fd);
  d->pid = 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void gpulabd_kill(struct gpulabd *d) {
  if (!d->pid) return;
  http_client_close(&d->http);
  CHECK(kill(d->pid, SIGKILL) == 0);
  int status = 0;
  CHECK(waitpid(d->pid, &status, 0) == d->pid);
  children_set(d->pid, 0);
  pthread_join(d->drain, NULL);
  close(d->log_fd);
  d->pid = 0;
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* ---- requests ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == 0); }
void http_curl_init(void) { pthread_once(&curl_once, curl_init); }

void http_client_open(struct http_client *c, int port) {
  http_curl_init();
  c->curl = curl_easy_init();
  CHECK(c->curl != NULL);
  snprintf(c->base_url, sizeof c->base_url, "http://127.0.0.1:%d", port);
  c->local_addr[0] = '\0';
  c->token[0] = '\0';
  c->unix_socket[0] = '\0';
}

void http_client_open_unix(struct http_client *c, const char *path) {
  http_client_open(c, 0);
  snprintf(c->base_url, sizeof c->base_url, "http://localhost");
  CHECK(strlen(path) < sizeof c->unix_socket);
  snprintf(c->unix_socket, sizeof c->unix_socket, "%s", path);
}

void http_client_open_from(struct http_client *c, int port, const char *local_addr) {
  http_client_open(c, port);
  CHECK(strlen(local_addr) < sizeof c->local_addr);
  snprintf(c->local_addr, sizeof c->local_addr, "%s", local_addr);
}

void http_client_close(struct http_client *c) {
  if (c->curl) curl_easy_cleanup(c->curl);
  c->curl = NULL;
}

void http_reply_free(struct http_reply *r) {
  free(r->content_type);
  free(r->location);
  free(r->allow);
  free(r->retry_after);
  free(r->body);
  json_decref(r->json);
  memset(r, 0, sizeof *r);
}

static size_t on_body(char *data, size_t size, size_t n, void *arg) {
  struct http_reply *r = arg;
  size_t add = size * n;
  char *body = realloc(r->body, r->body_len + add + 1);
  if (!body) return 0;
  memcpy(body + r->body_len, data, add);
  r->body = body;
  r->body_len += add;
  r->body[r->body_len] = '\0';
  return add;
}

static void set_header(char **slot, const char *value, size_t len) {
  free(*slot);
  *slot = strndup(value, len);
}

/* Keeps the headers the tests look at; a new status line (after 100 Continue)
 * starts over. */
static size_t on_header(char *data, size_t size, size_t n, void *arg) {
  struct http_reply *r = arg;
  size_t len = size * n;
  if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    char **slots[] = {&r->content_type, &r->location, &r->allow, &r->retry_after};
    for (size_t i = 0; i < 4; i++) {
      free(*slots[i]);
      *slots[i] = NULL;
    }
    return len;
  }
  const char *colon = memchr(data, ':', len);
  if (!colon) return len;
  size_t name_len = (size_t)(colon - data);
  const char *v = colon + 1, *end = data + len;
  while (v < end && (*v == ' ' || *v == '\t')) v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
  static const struct {
    const char *name;
    size_t offset;
  } wanted[] = {
      {"Content-Type", offsetof(struct http_reply, content_type)},
      {"Location", offsetof(struct http_reply, location)},
      {"Allow", offsetof(struct http_reply, allow)},
      {"Retry-After", offsetof(struct http_reply, retry_after)},
  };
  for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
    if (name_len == strlen(wanted[i].name) && strncasecmp(data, wanted[i].name, name_len) == 0)
      set_header((char **)((char *)r + wanted[i].offset), v, (size_t)(end - v));
  return len;
}

struct upload {
  const char *data;
  size_t len, pos;
};

/* Hands the body out in small pieces, so a chunked upload has several chunks. */
static size_t on_read(char *buf, size_t size, size_t n, void *arg) {
  struct upload *u = arg;
  size_t want = size * n, left = u->len - u->pos;
  if (want > 1000) want = 1000;
  if (want > left) want = left;
  memcpy(buf, u->data + u->pos, want);
  u->pos += want;
  return want;
}

void http_client_request(struct http_client *c, const char *method, const char *path,
                         const char *content_type, const char *body, size_t body_len,
                         unsigned flags, struct http_reply *out) {
  memset(out, 0, sizeof *out);
  out->body = calloc(1, 1);
  CHECK(out->body != NULL);
  CURL *h = c->curl;
  curl_easy_reset(h); /* keeps the connection cache: keep-alive survives */
  char url[1024], errbuf[CURL_ERROR_SIZE] = "", ct[256];
  snprintf(url, sizeof url, "%s%s", c->base_url, path);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, REQUEST_TIMEOUT_S);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
  if (c->local_addr[0]) curl_easy_setopt(h, CURLOPT_INTERFACE, c->local_addr);
  if (c->unix_socket[0]) curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);

  struct curl_slist *headers = NULL;
  if (content_type)
    snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
  else
    snprintf(ct, sizeof ct, "Content-Type:"); /* drops curl's default form type */
  headers = curl_slist_append(headers, ct);
  headers = curl_slist_append(headers, "Expect:"); /* no 100-continue round trip */
  if (c->token[0]) {
    char auth[200];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->token);
    headers = curl_slist_append(headers, auth);
  }
  struct upload up = {body, body_len, 0};
  if (strcmp(method, "GET") == 0) {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (strcmp(method, "HEAD") == 0) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (body || strcmp(method, "POST") == 0) {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    if (flags & HTTP_CHUNKED) {
      headers = curl_slist_append(headers, "Transfer-Encoding: chunked");
      curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
      curl_easy_setopt(h, CURLOPT_READDATA, &up);
    } else {
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
    }
    if (strcmp(method, "POST") != 0) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  CURLcode rc = curl_easy_perform(h);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK && (flags & HTTP_TRANSPORT_OK)) {
    free(out->body);
    out->body = strdup(errbuf[0] ? errbuf : curl_easy_strerror(rc));
    out->body_len = strlen(out->body);
    out->status = 0;
    return;
  }
  if (rc != CURLE_OK)
    CHECK_FAIL_("%s %s: curl error %d: %s (%s)", method, path, (int)rc, curl_easy_strerror(rc),
                errbuf);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
  curl_easy_getinfo(h, CURLINFO_TOTAL_TIME, &out->total_s);
  if (out->body_len) out->json = json_loadb(out->body, out->body_len, 0, NULL);
}

void http_request(struct gpulabd *d, const char *method, const char *path, const char *content_type,
                  const char *body, size_t body_len, struct http_reply *out) {
  http_client_request(&d->http, method, path, content_type, body, body_len, 0, out);
}

void http_get(struct gpulabd *d, const char *path, struct http_reply *out) {
  http_request(d, "GET", path, NULL, NULL, 0, out);
}

json_t *http_get_json(struct gpulabd *d, const char *path) {
  struct http_reply r;
  http_get(d, path, &r);
  if (r.status != 200 || !r.json)
    CHECK_FAIL_("GET %s: HTTP %ld, body: %.4000s", path, r.status, r.body);
  json_t *json = json_incref(r.json);
  http_reply_free(&r);
  return json;
}

void http_post_json(struct gpulabd *d, const char *path, const char *json_text,
                    struct http_reply *out) {
  http_request(d, "POST", path, "application/json", json_text, strlen(json_text), out);
}

json_t *http_post_expect_(struct gpulabd *d, const char *path, const char *json_text, long status,
                          const char *file, int line) {
  struct http_reply r;
  http_post_json(d, path, json_text, &r);
  check_status_(&r, status, file, line);
  json_t *j = json_incref(r.json);
  http_reply_free(&r);
  return j;
}

long long http_post_id_(struct gpulabd *d, const char *path, const char *json_text, long status,
                        const char *file, int line) {
  json_t *j = http_post_expect_(d, path, json_text, status, file, line);
  long long id = json_int_at_(j, "id", file, line);
  json_decref(j);
  return id;
}

void http_expect_(struct gpulabd *d, const char *method, const char *path, long status,
                  const char *code, const char *field, const char *file, int line) {
  struct http_reply r;
  http_request(d, method, path, NULL, NULL, 0, &r);
  if (code)
    check_error_(&r, status, code, field, file, line);
  else
    check_status_(&r, status, file, line);
  http_reply_free(&r);
}

/* ---- JSON and checks ---- */

double json_clock_s(json_t *root, const char *path) {
  int y, mo, da, h, mi;
  double s;
  CHECK(sscanf(JSTR(root, path), "%d-%d-%dT%d:%d:%lfZ", &y, &mo, &da, &h, &mi, &s) == 6);
  return h * 3600.0 + mi * 60.0 + s;
}

json_t *json_at(json_t *root, const char *path) {
  json_t *v = root;
  const char *p = path;
  while (v && *p) {
    size_t key_len = strcspn(p, ".[");
    if (key_len) {
      char key[128];
      snprintf(key, sizeof key, "%.*s", (int)key_len, p);
      v = json_object_get(v, key);
      p += key_len;
    }
    while (v && *p == '[') {
      char *end;
      long i = strtol(p + 1, &end, 10);
      if (*end != ']') return NULL;
      v = json_array_get(v, (size_t)i);
      p = end + 1;
    }
    if (*p == '.') p++;
  }
  return v;
}

static json_t *json_at_checked(json_t *root, const char *path, json_type type, const char *want,
                               const char *file, int line) {
  json_t *v = json_at(root, path);
  bool ok = v && (json_typeof(v) == type || (type == JSON_REAL && json_is_number(v)) ||
                  (type == JSON_TRUE && json_is_boolean(v)));
  if (!ok) {
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    fprintf(stderr, "%s:%d: %s is not %s in %.4000s\n", file, line, path, want,
            text ? text : "(no JSON)");
    free(text);
    exit(1);
  }
  return v;
}

long long json_int_at_(json_t *root, const char *path, const char *file, int line) {
  return json_integer_value(json_at_checked(root, path, JSON_INTEGER, "an integer", file, line));
}

double json_num_at_(json_t *root, const char *path, const char *file, int line) {
  return json_number_value(json_at_checked(root, path, JSON_REAL, "a number", file, line));
}

const char *json_str_at_(json_t *root, const char *path, const char *file, int line) {
  return json_string_value(json_at_checked(root, path, JSON_STRING, "a string", file, line));
}

bool json_bool_at_(json_t *root, const char *path, const char *file, int line) {
  return json_is_true(json_at_checked(root, path, JSON_TRUE, "a boolean", file, line));
}

void check_status_(const struct http_reply *r, long status, const char *file, int line) {
  if (r->status != status) {
    fprintf(stderr, "%s:%d: HTTP status %ld, expected %ld; body: %.4000s\n", file, line, r->status,
            status, r->body);
    exit(1);
  }
  const char *json_type = status >= 400 ? "application/problem+json" : "application/json";
  if (r->body_len && (!r->content_type ||
                      strncmp(r->content_type, json_type, strlen(json_type)) != 0 || !r->json)) {
    fprintf(stderr, "%s:%d: body is not JSON (Content-Type %s): %.4000s\n", file, line,
            r->content_type ? r->content_type : "(none)", r->body);
    exit(1);
  }
}

static void error_fail(const struct http_reply *r, const char *file, int line, const char *fmt,
                       ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "; HTTP %ld, body: %.4000s\n", r->status, r->body);
  va_end(ap);
  exit(1);
}

void check_error_(const struct http_reply *r, long status, const char *code, const char *field,
                  const char *file, int line) {
  if (r->status != status) error_fail(r, file, line, "expected HTTP status %ld", status);
  if (!r->content_type || strncmp(r->content_type, "application/problem+json", 24) != 0)
    error_fail(r, file, line, "Content-Type is %s, not application/problem+json",
               r->content_type ? r->content_type : "(none)");
  if (!json_is_object(r->json) || json_object_size(r->json) != 7)
    error_fail(r, file, line, "the body is not an object of exactly 7 members");
  json_t *t = json_object_get(r->json, "type"), *ti = json_object_get(r->json, "title"),
         *s = json_object_get(r->json, "status"), *d = json_object_get(r->json, "detail"),
         *in = json_object_get(r->json, "instance"), *c = json_object_get(r->json, "code"),
         *f = json_object_get(r->json, "field");
  char type[128];
  snprintf(type, sizeof type, "/openapi.json#/components/x-problem-types/%s", code);
  if (!json_is_string(t) || strcmp(json_string_value(t), type) != 0)
    error_fail(r, file, line, "type is not \"%s\"", type);
  if (!json_is_string(ti) || !*json_string_value(ti))
    error_fail(r, file, line, "title is not a non-empty string");
  if (!json_is_integer(s) || json_integer_value(s) != r->status)
    error_fail(r, file, line, "status is not the HTTP status");
  if (!json_is_string(d) || !*json_string_value(d))
    error_fail(r, file, line, "detail is not a non-empty string");
  if (!json_is_string(in) || json_string_value(in)[0] != '/')
    error_fail(r, file, line, "instance is not the request's path");
  if (!json_is_string(c) || strcmp(json_string_value(c), code) != 0)
    error_fail(r, file, line, "code is not \"%s\"", code);
  if (!f) error_fail(r, file, line, "field is missing");
  if (field ? !json_is_string(f) || strcmp(json_string_value(f), field) != 0 : !json_is_null(f))
    error_fail(r, file, line, "field is not %s%s%s", field ? "\"" : "", field ? field : "null",
               field ? "\"" : "");
}
