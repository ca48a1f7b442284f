/* child_run.h: posix_spawn with the output on pipes, read by poll until a deadline and a
 * cap, then SIGKILL for a child past either. */
#include "server/service/child_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernels/core/clock.h"

extern char **environ;

int child_temp_file(const void *data, size_t n, const char *tag, char *path, size_t path_len) {
  const char *dir = getenv("TMPDIR");
  snprintf(path, path_len, "%s/gpulab-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
  int fd = mkstemp(path); /* 0600, a name of its own */
  if (fd < 0) {
    int err = -errno;
    path[0] = '\0';
    return err;
  }
  const char *p = data;
  size_t done = 0;
  int rc = 0;
  while (done < n && rc == 0) {
    ssize_t w = write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      rc = w < 0 ? -errno : -EIO;
    else
      done += (size_t)w;
  }
  if (close(fd) && rc == 0) rc = -EIO;
  if (rc) {
    unlink(path);
    path[0] = '\0';
  }
  return rc;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One read of the child's standard error: its first bytes kept in res->err. Returns
 * false at its end. */
static bool read_err(int fd, struct child_run_result *res) {
  char buf[1024];
  ssize_t r = read(fd, buf, sizeof buf);
  if (r < 0) return errno == EINTR || errno == EAGAIN;
  size_t have = strlen(res->err), room = sizeof res->err - 1 - have;
  size_t take = (size_t)r < room ? (size_t)r : room;
  memcpy(res->err + have, buf, take);
  res->err[have + take] = '\0';
  return r > 0;
}

/* Waits for pid until deadline (clock_mono_s), then kills it: a child that closed its
 * pipes and runs on is still not waited on without end. Returns whether it was killed. */
static bool reap(pid_t pid, int *status, double deadline) {
  for (;;) {
    pid_t got = waitpid(pid, status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) return false;
    if (clock_mono_s() > deadline) break;
    nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {}
  return true;
}

/* Reads the child's standard output (out_fd) and error (err_fd) to their ends, the
 * deadline or the cap. 0 (res->truncated when cut) or -ETIMEDOUT, -EFBIG, -EIO,
 * -ENOMEM. */
static int collect(int out_fd, int err_fd, const struct child_run_limits *lim,
                   struct child_run_result *res) {
  size_t cap = 4096;
  double until = now_s() + lim->time_s;
  if (!(res->out = malloc(cap))) return -ENOMEM;
  struct pollfd p[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
  while (p[0].fd >= 0 || p[1].fd >= 0) { /* a negative fd: poll skips it */
    int left_ms = (int)((until - now_s()) * 1000);
    if (left_ms <= 0) return -ETIMEDOUT;
    int n = poll(p, 2, left_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -EIO;
    if (n == 0) return -ETIMEDOUT;
    if (p[1].fd >= 0 && p[1].revents && !read_err(err_fd, res)) p[1].fd = -1;
    if (p[0].fd < 0 || !p[0].revents) continue;
    if (res->out_bytes + 4096 + 1 > cap) {
      char *grown = realloc(res->out, cap *= 2);
      if (!grown) return -ENOMEM;
      res->out = grown;
    }
    ssize_t r = read(out_fd, res->out + res->out_bytes, cap - res->out_bytes - 1);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return -EIO;
    if (r == 0) p[0].fd = -1;
    res->out_bytes += (size_t)r;
    if (res->out_bytes > lim->max_bytes) {
      if (!lim->truncate) return -EFBIG;
      res->out_bytes = lim->max_bytes;
      res->truncated = true;
      break;
    }
  }
  res->out[res->out_bytes] = '\0';
  return 0;
}

int child_run(const char *path, char *const argv[], const struct child_run_limits *lim,
              struct child_run_result *res, char *why, size_t why_len) {
  memset(res, 0, sizeof *res);
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, rc;
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
    rc = -errno;
    snprintf(why, why_len, "no pipe (%s)", strerror(errno));
    goto done;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], STDERR_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
  posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1); /* nothing of gpulabd's */
#endif
  pid_t pid = -1;
  int spawned = strchr(path, '/') ? posix_spawn(&pid, path, &fa, NULL, argv, environ)
                                  : posix_spawnp(&pid, path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  out_pipe[1] = err_pipe[1] = -1;
  if (spawned) {
    rc = -ENOENT;
    snprintf(why, why_len, "%s could not be run (%s)", path, strerror(spawned));
    goto done;
  }
  double deadline = clock_mono_s() + lim->time_s;
  rc = collect(out_pipe[0], err_pipe[0], lim, res);
  if (rc || res->truncated) kill(pid, SIGKILL);
  if (reap(pid, &res->status, deadline) && rc == 0) rc = -ETIMEDOUT;
  if (rc == -ETIMEDOUT)
    snprintf(why, why_len, "%s ran past %.3g s", argv[0], lim->time_s);
  else if (rc == -EFBIG)
    snprintf(why, why_len, "%s wrote over %zu bytes", argv[0], lim->max_bytes);
  else if (rc)
    snprintf(why, why_len, "%s's output could not be read (%s)", argv[0], strerror(-rc));
done:
  for (int i = 0; i < 2; i++) {
    if (out_pipe[i] >= 0) close(out_pipe[i]);
    if (err_pipe[i] >= 0) close(err_pipe[i]);
  }
  if (rc) {
    free(res->out);
    res->out = NULL;
    res->out_bytes = 0;
  }
  return rc;
}
