/* Who is who on a shared box: gpulabd --socket PATH listens on a Unix socket too,
 * and a client there is its Unix user, from the peer's credentials (SO_PEERCRED),
 * the way PostgreSQL's peer authentication works: it sees and cancels its own jobs
 * only (root and gpulabd's own user see all), /me and /metrics say who. As root
 * (CI) a second user, nobody, talks to it from a child process; as anyone else that
 * part says it did not run. Also: the socket's mode and group, a stale socket
 * replaced, a live one or a plain file refused, --no-tcp, a user's share of
 * connections, and the socket gone after a stop. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/http_client.h"
#include "tests/runner.h"

static const char *dir; /* test_dir() */
static char sock[100];

#define SLOW \
  "{\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":100,\"reps\":1}"
#define SMALL "{\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1}"

static void start(struct gpulabd *d, const char *const *more) {
  const char *args[16] = {"--backend", "cpu", "--streams", "1", "--socket", sock};
  int n = 6;
  for (; more && *more; more++) args[n++] = *more;
  args[n] = NULL;
  gpulabd_start(args, d);
}

static const char *my_name(void) {
  struct passwd *pw = getpwuid(geteuid());
  CHECK(pw != NULL);
  return pw->pw_name;
}

/* What nobody sees and does, from a child process running as nobody; its findings
 * come back as its exit status (0: all as expected). */
static int as_nobody(const char *root_job) {
  struct passwd *nobody = getpwnam("nobody");
  CHECK(nobody != NULL);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    if (setgroups(0, NULL) || setgid(nobody->pw_gid) || setuid(nobody->pw_uid)) _exit(10);
    struct http_client c;
    http_client_open_unix(&c, sock);
    struct http_reply r;
    http_client_request(&c, "GET", "/me", NULL, NULL, 0, 0, &r);
    if (r.status != 200 || strcmp(JSTR(r.json, "client"), "nobody") || JBOOL(r.json, "sees_all"))
      _exit(11);
    http_reply_free(&r);
    http_client_request(&c, "GET", "/jobs", NULL, NULL, 0, 0, &r); /* root's job is not nobody's */
    if (r.status != 200 || json_array_size(json_at(r.json, "jobs")) != 0) _exit(12);
    http_reply_free(&r);
    char path[64];
    snprintf(path, sizeof path, "/jobs/%s", root_job);
    http_client_request(&c, "DELETE", path, NULL, NULL, 0, 0, &r);
    if (r.status != 404) _exit(13); /* nor can it cancel it */
    http_reply_free(&r);
    http_client_request(&c, "POST", "/stencil?wait=0", "application/json", SLOW, strlen(SLOW), 0,
                        &r);
    if (r.status != 202 || strcmp(JSTR(r.json, "client"), "nobody")) _exit(14);
    http_reply_free(&r);
    http_client_close(&c);
    _exit(0);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_peer_users(void) {
  struct gpulabd d;
  start(&d, NULL);
  struct stat st;
  CHECK_INT_EQ(stat(sock, &st), 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK_INT_EQ(st.st_mode & 0777, 0666);
  struct http_client c;
  http_client_open_unix(&c, sock);
  struct http_reply r;
  http_client_request(&c, "GET", "/me", NULL, NULL, 0, 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "client"), my_name());
  CHECK_STR_EQ(JSTR(r.json, "by"), "unix_socket");
  http_reply_free(&r);
  http_get(&d, "/me", &r); /* on TCP, as before: the address */
  CHECK_STR_EQ(JSTR(r.json, "client"), "127.0.0.1");
  CHECK_STR_EQ(JSTR(r.json, "by"), "address");
  http_reply_free(&r);
  http_client_request(&c, "POST", "/transpose", "application/json", SMALL, strlen(SMALL), 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "client"), my_name());
  char root_job[24];
  snprintf(root_job, sizeof root_job, "%lld", JINT(r.json, "id"));
  http_reply_free(&r);
  if (geteuid() != 0) {
    printf("socket: a second user was not tried (that needs root, to run as nobody)\n");
  } else {
    int found = as_nobody(root_job);
    if (found) CHECK_FAIL_("as nobody on the socket: check %d failed (see as_nobody)", found);
    /* root sees nobody's job, and /metrics names nobody as a client. */
    http_client_request(&c, "GET", "/jobs", NULL, NULL, 0, 0, &r);
    CHECK_STATUS(&r, 200);
    json_t *jobs = json_at(r.json, "jobs");
    CHECK_INT_EQ(json_array_size(jobs), 2); /* newest first: nobody's, then root's */
    CHECK_STR_EQ(JSTR(json_array_get(jobs, 0), "client"), "nobody");
    char path[64];
    snprintf(path, sizeof path, "/jobs/%lld", JINT(json_array_get(jobs, 0), "id"));
    http_reply_free(&r);
    http_client_request(&c, "GET", "/metrics", NULL, NULL, 0, 0, &r);
    CHECK(strstr(r.body, "gpulab_client_jobs{client=\"nobody\",state=\"queued\"} 1") ||
          strstr(r.body, "gpulab_client_jobs{client=\"nobody\",state=\"running\"} 1"));
    http_reply_free(&r);
    http_client_request(&c, "DELETE", path, NULL, NULL, 0, 0, &r); /* root may cancel it */
    CHECK_STATUS(&r, 200);
    http_reply_free(&r);
    printf(
        "socket: root and nobody were told apart (nobody saw 0 of root's jobs; root saw nobody's)\n");
  }
  http_client_close(&c);
  gpulabd_stop(&d);
  CHECK(stat(sock, &st) != 0 && errno == ENOENT); /* removed at the stop */
}

/* A user's share of the socket's connections, as an address's on TCP: a quarter of
 * --max-connections 8 is 2; the third is closed at once. */
static void test_user_share(void) {
  const char *more[] = {"--max-connections", "8", NULL};
  struct gpulabd d;
  start(&d, more);
  int fds[3], closed = 0;
  bool cut[3] = {false, false, false};
  for (int i = 0; i < 3; i++) {
    fds[i] = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock);
    CHECK_INT_EQ(connect(fds[i], (struct sockaddr *)&addr, sizeof addr), 0);
    usleep(50 * 1000); /* gpulabd has taken it (and shut the one over the limit) */
    /* a head, unfinished: a connection within the share stays */
    cut[i] = send(fds[i], "GET /hea", 8, MSG_NOSIGNAL) != 8;
  }
  usleep(300 * 1000);
  for (int i = 0; i < 3; i++) {
    struct timeval tv = {0, 100 * 1000};
    setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[16];
    ssize_t n = cut[i] ? 0 : read(fds[i], buf, sizeof buf);
    closed += n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK); /* closed or reset */
    close(fds[i]);
  }
  CHECK_INT_EQ(closed, 1);
  gpulabd_stop(&d);
}

/* The socket's place: a stale socket (nobody listens) is replaced; a live one, or a
 * plain file, is refused; --socket-group sets its group and mode 0660; --no-tcp
 * listens on it alone. */
static void test_socket_files(void) {
  int stale = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock);
  CHECK_INT_EQ(bind(stale, (struct sockaddr *)&addr, sizeof addr), 0);
  close(stale); /* bound, never listened: an earlier run's leftover */
  struct group *g = getgrgid(getegid());
  CHECK(g != NULL);
  const char *more[] = {"--socket-group", g->gr_name, NULL};
  struct gpulabd d, other;
  start(&d, more);
  struct stat st;
  CHECK_INT_EQ(stat(sock, &st), 0);
  CHECK_INT_EQ(st.st_mode & 0777, 0660);
  CHECK_INT_EQ(st.st_gid, g->gr_gid);
  char log[8192];
  int status;
  const char *args[] = {"--backend", "cpu", "--socket", sock, NULL};
  CHECK_INT_EQ(gpulabd_try_start(args, &other, log, sizeof log, &status), -1);
  CHECK(strstr(log, "another gpulabd listens there") != NULL);
  gpulabd_stop(&d);
  char file[160];
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE *f = fopen(file, "w");
  CHECK(f != NULL);
  fclose(f);
  const char *on_file[] = {"--backend", "cpu", "--socket", file, NULL};
  CHECK_INT_EQ(gpulabd_try_start(on_file, &other, log, sizeof log, &status), -1);
  CHECK(strstr(log, "no socket") != NULL);
  CHECK_INT_EQ(stat(file, &st), 0); /* left alone */
  const char *unix_only[] = {"--backend", "cpu", "--socket", sock, "--no-tcp", NULL};
  gpulabd_start(unix_only, &d);
  CHECK_INT_EQ(d.port, 0);
  struct http_client c;
  http_client_open_unix(&c, sock);
  struct http_reply r;
  http_client_request(&c, "GET", "/health", NULL, NULL, 0, 0, &r);
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
  http_client_close(&c);
  gpulabd_stop(&d);
}

static int make_dir(void) {
  dir = test_dir();
  CHECK_INT_EQ(chmod(dir, 0755), 0); /* nobody may reach the socket */
  snprintf(sock, sizeof sock, "%s/gpulab.sock", dir);
  return 0;
}

static const struct test_case cases[] = {
    TEST(test_peer_users),
    TEST(test_user_share),
    TEST(test_socket_files),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = make_dir};
