/* udiff.h: `diff -u` from diffutils (an Essential Debian package) in a child, fed two
 * temporary files, its output read through a pipe until a deadline and a size cap.
 * Chosen over a diff of our own: its hunks are what every reader and patch(1) expects,
 * and a child that runs too long or writes too much is killed, never waited on. */
#include "server/service/udiff.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* text into a new temporary file, its path into path (removed by the caller). */
static int write_temp(const char *text, char *path, size_t len) {
  const char *dir = getenv("TMPDIR");
  snprintf(path, len, "%s/gpulab-diff-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) return -errno;
  size_t n = strlen(text), done = 0;
  while (done < n) {
    ssize_t w = write(fd, text + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return -EIO;
    }
    done += (size_t)w;
  }
  return close(fd) ? -EIO : 0;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Reads fd until EOF, the deadline or the cap into *buf (*n bytes). 0 or -errno. */
static int read_all(int fd, char **buf, size_t *n) {
  size_t cap = 4096;
  double until = now_s() + UDIFF_TIME_S;
  if (!(*buf = malloc(cap))) return -ENOMEM;
  *n = 0;
  for (;;) {
    int left_ms = (int)((until - now_s()) * 1000);
    if (left_ms <= 0) return -ETIMEDOUT;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int rc = poll(&p, 1, left_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return -EIO;
    if (rc == 0) return -ETIMEDOUT;
    if (*n + 4096 + 1 > cap) {
      if (cap > UDIFF_MAX_BYTES) return -EFBIG;
      char *grown = realloc(*buf, cap *= 2);
      if (!grown) return -ENOMEM;
      *buf = grown;
    }
    ssize_t r = read(fd, *buf + *n, cap - *n - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -EIO;
    if (r == 0) break;
    *n += (size_t)r;
    if (*n > UDIFF_MAX_BYTES) return -EFBIG;
  }
  (*buf)[*n] = '\0';
  return 0;
}

int udiff(const char *a, const char *label_a, const char *b, const char *label_b, char **out,
          char *why, size_t why_len) {
  char path_a[256] = "", path_b[256] = "";
  int pipefd[2] = {-1, -1}, rc;
  pid_t pid = -1;
  size_t n = 0;
  *out = NULL;
  if ((rc = write_temp(a, path_a, sizeof path_a)) || (rc = write_temp(b, path_b, sizeof path_b))) {
    snprintf(why, why_len, "a temporary file could not be written (%s)", strerror(-rc));
    goto fail;
  }
  if (pipe2(pipefd, O_CLOEXEC)) {
    rc = -errno;
    snprintf(why, why_len, "no pipe (%s)", strerror(errno));
    goto fail;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
  posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1); /* nothing of gpulabd's */
#endif
  char *argv[] = {"diff", "-u",   "--label", (char *)label_a, "--label", (char *)label_b,
                  path_a, path_b, NULL};
  rc = posix_spawnp(&pid, "diff", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  pipefd[1] = -1;
  if (rc) {
    pid = -1;
    rc = -ENOENT;
    snprintf(why, why_len, "diff (diffutils) could not be run");
    goto fail;
  }
  rc = read_all(pipefd[0], out, &n);
  if (rc) {
    kill(pid, SIGKILL);
    if (rc == -ETIMEDOUT)
      snprintf(why, why_len, "diff ran past %d s", UDIFF_TIME_S);
    else if (rc == -EFBIG)
      snprintf(why, why_len, "the diff is over %d bytes", UDIFF_MAX_BYTES);
    else
      snprintf(why, why_len, "diff's output could not be read");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  pid = -1;
  /* diff exits 0 (the same), 1 (different), 2 (trouble). */
  if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) > 1)) {
    rc = -EIO;
    snprintf(why, why_len, "diff failed");
  }
fail:
  if (pipefd[0] >= 0) close(pipefd[0]);
  if (pipefd[1] >= 0) close(pipefd[1]);
  if (path_a[0]) unlink(path_a);
  if (path_b[0]) unlink(path_b);
  if (rc) {
    free(*out);
    *out = NULL;
  }
  return rc;
}
