/* gpulab-runner: runs users' kernels for gpulabd, in a process of its own so that a
 * kernel that traps, strays or never ends takes down only this process (and, on a GPU,
 * only its CUDA context). Started by gpulabd (runner.h) with fork + exec, its end of a
 * socketpair as fd 3; answers the requests of runner_proto.h until told to exit or
 * the socket closes. Everything it prints goes to gpulabd's log.
 *   gpulab-runner --mode cpu|cuda [--device N] [--parent PID] */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "kernels/core/clock.h"
#include "kernels/user/runner_impl.h"

static int send_error(int sock, int code, const char *msg) {
  struct runner_error_msg e = {.code = code};
  snprintf(e.msg, sizeof e.msg, "%s", msg);
  return runner_send(sock, RUNNER_MSG_ERROR, &e, sizeof e, NULL, 0, NULL, 0);
}

/* A launch faulted (what: "kernel", "the problem's reference"): said on stderr and to
 * gpulabd. The runner exits next: its context is lost, gpulabd starts another. */
static void send_fault(int sock, const struct runner_fault_msg *fault, const char *what) {
  fprintf(stderr, "gpulab-runner: %s fault: %s: %s; exiting\n", what, fault->name, fault->msg);
  runner_send(sock, RUNNER_MSG_FAULT, fault, sizeof *fault, NULL, 0, NULL, 0);
}

static void close_fds(int *fds, int n) {
  for (int i = 0; i < n; i++) close(fds[i]);
}

/* Serves requests until EXIT or EOF. Returns the process's exit status. */
static int serve(int sock, const struct runner_ops *ops) {
  for (;;) {
    struct runner_hdr h;
    void *p = NULL;
    int fds[RUNNER_MAX_BUFFERS], n_fds = 0;
    int rc = runner_recv(sock, &h, &p, fds, RUNNER_MAX_BUFFERS, &n_fds, -1);
    if (rc == -EPIPE) return 0; /* gpulabd went away */
    if (rc) {
      fprintf(stderr, "gpulab-runner: bad frame (%s)\n", strerror(-rc));
      return 2;
    }
    char msg[256] = "";
    switch (h.type) {
    case RUNNER_MSG_PING: rc = runner_send(sock, RUNNER_MSG_OK, NULL, 0, NULL, 0, NULL, 0); break;
    case RUNNER_MSG_EXIT:
      runner_send(sock, RUNNER_MSG_OK, NULL, 0, NULL, 0, NULL, 0);
      free(p);
      return 0;
    case RUNNER_MSG_ATTACH:
      if (h.len != sizeof(struct runner_attach_msg)) goto bad;
      ops->detach();
      rc = ops->attach(p, fds, n_fds, msg, sizeof msg);
      n_fds = 0; /* the mode owns them now */
      rc = rc ? send_error(sock, rc, msg)
              : runner_send(sock, RUNNER_MSG_OK, NULL, 0, NULL, 0, NULL, 0);
      break;
    case RUNNER_MSG_DETACH:
      ops->detach();
      rc = runner_send(sock, RUNNER_MSG_OK, NULL, 0, NULL, 0, NULL, 0);
      break;
    case RUNNER_MSG_LOAD: {
      const struct runner_load_msg *m = p;
      if (h.len < sizeof *m || h.len - sizeof *m != m->image_bytes) goto bad;
      struct runner_loaded_msg out = {0};
      rc = ops->load(m, (const char *)p + sizeof *m, &out, msg, sizeof msg);
      rc = rc ? send_error(sock, rc, msg)
              : runner_send(sock, RUNNER_MSG_LOADED, &out, sizeof out, NULL, 0, NULL, 0);
      break;
    }
    case RUNNER_MSG_RUN: {
      if (h.len != sizeof(struct runner_run_msg)) goto bad;
      struct runner_done_msg done = {0};
      struct runner_fault_msg fault;
      memset(&fault, 0, sizeof fault);
      double t0 = clock_mono_ms();
      rc = ops->run(p, &done, &fault, msg, sizeof msg);
      done.wall_ms = clock_mono_ms() - t0;
      if (rc == 1) {
        send_fault(sock, &fault, "kernel");
        free(p);
        return 3;
      }
      rc = rc < 0 ? send_error(sock, rc, msg)
                  : runner_send(sock, RUNNER_MSG_DONE, &done, sizeof done, NULL, 0, NULL, 0);
      break;
    }
    case RUNNER_MSG_PROBLEM: {
      if (h.len != sizeof(struct runner_problem_msg)) goto bad;
      struct runner_problem_ready_msg ready = {0};
      struct runner_fault_msg fault;
      memset(&fault, 0, sizeof fault);
      rc = ops->problem(p, &ready, &fault, msg, sizeof msg);
      if (rc == 1) {
        send_fault(sock, &fault, "the problem's reference");
        free(p);
        return 3;
      }
      rc = rc < 0 ? send_error(sock, rc, msg)
                  : runner_send(sock, RUNNER_MSG_PROBLEM_READY, &ready, sizeof ready, NULL, 0, NULL,
                                0);
      break;
    }
    default:
    bad:
      close_fds(fds, n_fds);
      n_fds = 0;
      snprintf(msg, sizeof msg, "bad request (type %u, %u bytes)", h.type, h.len);
      rc = send_error(sock, -EPROTO, msg);
      break;
    }
    close_fds(fds, n_fds);
    free(p);
    if (rc) return rc == -EPIPE ? 0 : 2;
  }
}

int main(int argc, char **argv) {
  const char *mode = "cpu";
  int device = 0;
  pid_t parent = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mode") && i + 1 < argc)
      mode = argv[++i];
    else if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--parent") && i + 1 < argc)
      parent = (pid_t)atol(argv[++i]);
    else {
      fprintf(
          stderr,
          "usage: gpulab-runner --mode cpu|cuda [--device N] [--parent PID] (fd 3: gpulabd's socket)\n");
      return 2;
    }
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* again after exec: never outlive gpulabd */
  /* gpulabd ended before the death signal was armed. (It may be PID 1 itself, in a
   * container: so its pid, not 1, is what tells.) */
  if (parent > 0 && getppid() != parent) return 0;
  const struct runner_ops *ops = NULL;
  struct runner_hello_msg hello = {
      .version = RUNNER_PROTO_VERSION, .pid = getpid(), .device = device};
  if (!strcmp(mode, "cpu")) {
    ops = &runner_cpu_ops;
    hello.mode = RUNNER_MODE_CPU;
  }
#ifdef GPULAB_RUNNER_CUDA
  else if (!strcmp(mode, "cuda")) {
    ops = &runner_cuda_ops;
    hello.mode = RUNNER_MODE_CUDA;
  }
#endif
  int sock = RUNNER_FD;
  if (!ops) {
    char m[128];
    snprintf(m, sizeof m, "gpulab-runner was built without mode %s", mode);
    send_error(sock, -ENOTSUP, m);
    return 2;
  }
  char msg[256] = "";
  int rc = ops->init(device, &hello, msg, sizeof msg);
  if (rc) {
    fprintf(stderr, "gpulab-runner: %s\n", msg);
    send_error(sock, rc, msg);
    return 2;
  }
  if (runner_send(sock, RUNNER_MSG_HELLO, &hello, sizeof hello, NULL, 0, NULL, 0)) return 0;
  return serve(sock, ops);
}
