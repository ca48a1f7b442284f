/* Frames over the runner's socketpair (runner_proto.h). */
#include "kernels/user/runner_proto.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernels/core/clock.h"

#define MAX_FDS RUNNER_MAX_BUFFERS

static int write_all(int sock, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = send(sock, c, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno == EPIPE || errno == ECONNRESET ? -EPIPE : -errno;
    }
    c += w, n -= (size_t)w;
  }
  return 0;
}

int runner_send(int sock, uint32_t type, const void *payload, size_t len, const void *extra,
                size_t extra_len, const int *fds, int n_fds) {
  if (n_fds < 0 || n_fds > MAX_FDS || len + extra_len > RUNNER_MAX_IMAGE_BYTES + 4096)
    return -EINVAL;
  struct runner_hdr hdr = {RUNNER_PROTO_MAGIC, type, (uint32_t)(len + extra_len), (uint32_t)n_fds};
  struct iovec iov = {&hdr, sizeof hdr};
  union {
    char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
    struct cmsghdr align;
  } ctl;
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (n_fds > 0) {
    memset(&ctl, 0, sizeof ctl);
    m.msg_control = ctl.buf;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n_fds);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n_fds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n_fds);
  }
  ssize_t w;
  do w = sendmsg(sock, &m, MSG_NOSIGNAL);
  while (w < 0 && errno == EINTR);
  if (w < 0) return errno == EPIPE || errno == ECONNRESET ? -EPIPE : -errno;
  int rc = 0;
  if ((size_t)w < sizeof hdr) rc = write_all(sock, (char *)&hdr + w, sizeof hdr - (size_t)w);
  if (!rc && len) rc = write_all(sock, payload, len);
  if (!rc && extra_len) rc = write_all(sock, extra, extra_len);
  return rc;
}

/* Waits until sock is readable or the deadline (ms on clock_mono_ms's clock; < 0: none). */
static int wait_readable(int sock, double deadline) {
  for (;;) {
    int t = -1;
    if (deadline >= 0) {
      double left = deadline - clock_mono_ms();
      if (left <= 0) return -ETIMEDOUT;
      t = (int)left + 1;
    }
    struct pollfd p = {sock, POLLIN, 0};
    int r = poll(&p, 1, t);
    if (r > 0) return 0;
    if (r == 0) continue; /* the loop checks the deadline */
    if (errno != EINTR) return -errno;
  }
}

/* Reads n bytes (the first recvmsg also takes the fds). */
static int read_all(int sock, void *p, size_t n, double deadline, int *fds, int max_fds,
                    int *n_fds) {
  char *c = p;
  while (n > 0) {
    int rc = wait_readable(sock, deadline);
    if (rc) return rc;
    struct iovec iov = {c, n};
    union {
      char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
      struct cmsghdr align;
    } ctl;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fds) {
      m.msg_control = ctl.buf;
      m.msg_controllen = sizeof ctl.buf;
    }
    ssize_t r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno == ECONNRESET ? -EPIPE : -errno;
    }
    if (r == 0) return -EPIPE;
    if (fds) {
      for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
        int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int got[MAX_FDS];
        memcpy(got, CMSG_DATA(cm), sizeof(int) * (size_t)(k > MAX_FDS ? MAX_FDS : k));
        for (int i = 0; i < k && i < MAX_FDS; i++) {
          if (*n_fds < max_fds)
            fds[(*n_fds)++] = got[i];
          else
            close(got[i]);
        }
      }
    }
    c += r, n -= (size_t)r;
  }
  return 0;
}

int runner_recv(int sock, struct runner_hdr *hdr, void **payload, int *fds, int max_fds, int *n_fds,
                int timeout_ms) {
  *payload = NULL;
  int got_fds = 0;
  double deadline = timeout_ms < 0 ? -1 : clock_mono_ms() + timeout_ms;
  int rc = read_all(sock, hdr, sizeof *hdr, deadline, fds, fds ? max_fds : 0, &got_fds);
  if (n_fds) *n_fds = got_fds;
  if (rc) goto fail;
  rc = -EPROTO;
  if (hdr->magic != RUNNER_PROTO_MAGIC || hdr->len > RUNNER_MAX_IMAGE_BYTES + 4096) goto fail;
  if (hdr->len) {
    rc = -ENOMEM;
    if (!(*payload = malloc(hdr->len))) goto fail;
    if ((rc = read_all(sock, *payload, hdr->len, deadline, NULL, 0, NULL))) goto fail;
  }
  return 0;
fail:
  free(*payload);
  *payload = NULL;
  for (int i = 0; i < got_fds; i++) close(fds[i]);
  if (n_fds) *n_fds = 0;
  return rc;
}
