/* gpulabd's side of a runner (runner.h): its process, its socket, its stderr. */
#include "kernels/user/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/core/clock.h"

struct runner {
  struct runner_config cfg;
  char exe[512];
  pthread_mutex_t mu;    /* held by the job between acquire and release */
  pthread_mutex_t st_mu; /* guards stats */
  pid_t pid;             /* 0: no process */
  int sock;              /* -1: none */
  int err_fd;            /* the read end of its stderr pipe */
  pthread_t err_thread;
  bool err_thread_on;
  struct runner_hello_msg hello;
  struct runner_stats stats;
};

static void log_default(struct runner *r, const char *line) {
  if (r->cfg.log) {
    r->cfg.log(r->cfg.log_arg, line);
    return;
  }
  char buf[1200];
  int n = snprintf(buf, sizeof buf, "gpulab-runner[dev %d pid %d]: %s\n", r->cfg.device,
                   (int)r->pid, line);
  if (n > (int)sizeof buf - 1) n = (int)sizeof buf - 1, buf[n - 1] = '\n';
  fwrite(buf, 1, (size_t)n, stderr);
}

struct err_reader {
  struct runner *r;
  int fd;
};

/* Reads the runner's stderr into lines until EOF (the runner's end closed). */
static void *err_main(void *arg) {
  struct err_reader *er = arg;
  char line[1024];
  size_t n = 0;
  for (;;) {
    char c[256];
    ssize_t k = read(er->fd, c, sizeof c);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    for (ssize_t i = 0; i < k; i++) {
      if (c[i] == '\n' || n == sizeof line - 1) {
        line[n] = '\0';
        if (n) log_default(er->r, line);
        n = 0;
        if (c[i] == '\n') continue;
      }
      line[n++] = c[i];
    }
  }
  if (n) {
    line[n] = '\0';
    log_default(er->r, line);
  }
  close(er->fd);
  free(er);
  return NULL;
}

int runner_new(const struct runner_config *cfg, struct runner **out) {
  *out = NULL;
  if (!cfg->exe || strlen(cfg->exe) >= 512) return -EINVAL;
  struct runner *r = calloc(1, sizeof *r);
  if (!r) return -ENOMEM;
  r->cfg = *cfg;
  snprintf(r->exe, sizeof r->exe, "%s", cfg->exe);
  r->cfg.exe = r->exe;
  if (r->cfg.start_timeout_s <= 0) r->cfg.start_timeout_s = 30;
  if (r->cfg.deadline_margin_s <= 0) r->cfg.deadline_margin_s = 1;
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->st_mu, NULL);
  r->sock = -1;
  r->err_fd = -1;
  *out = r;
  return 0;
}

/* Reaps the process (killing it first when kill_it), closes the socket, joins the
 * stderr reader. Returns the wait status (or -1). */
static int reap(struct runner *r, bool kill_it) {
  int status = -1;
  if (r->pid > 0) {
    if (kill_it) kill(r->pid, SIGKILL);
    while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {}
  }
  if (r->sock >= 0) close(r->sock);
  if (r->err_thread_on) pthread_join(r->err_thread, NULL);
  r->err_thread_on = false;
  r->sock = -1;
  r->pid = 0;
  pthread_mutex_lock(&r->st_mu);
  r->stats.pid = 0;
  pthread_mutex_unlock(&r->st_mu);
  return status;
}

/* "signal 11 (SIGSEGV)" / "exit status 3" of a wait status. */
static void describe_status(int status, char *name, size_t name_len, char *msg, size_t msg_len) {
  if (status >= 0 && WIFSIGNALED(status)) {
    int s = WTERMSIG(status);
    const char *abbrev = sigabbrev_np(s);
    snprintf(name, name_len, "SIG%s", abbrev ? abbrev : "?");
    snprintf(msg, msg_len, "the runner was ended by signal %d (%s)", s, strsignal(s));
  } else if (status >= 0 && WIFEXITED(status)) {
    snprintf(name, name_len, "runner_exit");
    snprintf(msg, msg_len, "the runner exited with status %d", WEXITSTATUS(status));
  } else {
    snprintf(name, name_len, "runner_lost");
    snprintf(msg, msg_len, "the runner is gone");
  }
}

/* In the child between fork and exec: only async-signal-safe calls. */
static void child(const struct runner *r, int sock, int errw, char *const argv[]) {
  sigset_t none; /* gpulabd blocks its stop signals in every thread; the runner not */
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  dup2(errw, 1);
  dup2(errw, 2);
  dup2(sock, RUNNER_FD);
#ifdef SYS_close_range
  syscall(SYS_close_range, RUNNER_FD + 1, ~0U, 0);
#else
  for (int fd = RUNNER_FD + 1; fd < 1024; fd++) close(fd);
#endif
  execv(r->exe, argv);
  static const char m[] = "exec of gpulab-runner failed\n";
  ssize_t ignored = write(2, m, sizeof m - 1);
  (void)ignored;
  _exit(127);
}

static int start(struct runner *r, char *err, size_t err_len) {
  if (access(r->exe, X_OK) != 0) {
    snprintf(err, err_len, "gpulab-runner not found at %s: %s", r->exe, strerror(errno));
    return -ENOENT;
  }
  int sv[2] = {-1, -1}, ep[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) || pipe2(ep, O_CLOEXEC)) {
    int e = errno;
    snprintf(err, err_len, "socketpair/pipe: %s", strerror(e));
    if (sv[0] >= 0) close(sv[0]), close(sv[1]);
    return -e;
  }
  char dev[16], parent[24];
  snprintf(dev, sizeof dev, "%d", r->cfg.device);
  snprintf(parent, sizeof parent, "%ld", (long)getpid());
  char *const argv[] = {r->exe,     "--mode", r->cfg.mode == RUNNER_MODE_CUDA ? "cuda" : "cpu",
                        "--device", dev,      "--parent",
                        parent,     NULL};
  double t0 = clock_mono_ms();
  pid_t pid = fork();
  if (pid == 0) child(r, sv[1], ep[1], argv);
  close(sv[1]);
  close(ep[1]);
  if (pid < 0) {
    int e = errno;
    close(sv[0]);
    close(ep[0]);
    snprintf(err, err_len, "fork: %s", strerror(e));
    return -e;
  }
  r->pid = pid;
  r->sock = sv[0];
  struct err_reader *er = malloc(sizeof *er);
  if (er) {
    er->r = r, er->fd = ep[0];
    r->err_thread_on = pthread_create(&r->err_thread, NULL, err_main, er) == 0;
  }
  if (!r->err_thread_on) {
    close(ep[0]);
    free(er);
  }
  struct runner_hdr h;
  void *p = NULL;
  int rc = runner_recv(r->sock, &h, &p, NULL, 0, NULL, (int)(r->cfg.start_timeout_s * 1e3));
  if (rc == 0 && h.type == RUNNER_MSG_HELLO && h.len == sizeof r->hello) {
    memcpy(&r->hello, p, sizeof r->hello);
    if (r->hello.version != RUNNER_PROTO_VERSION) {
      snprintf(err, err_len, "gpulab-runner speaks protocol %u, gpulabd %d", r->hello.version,
               RUNNER_PROTO_VERSION);
      rc = -EPROTO;
    }
  } else if (rc == 0 && h.type == RUNNER_MSG_ERROR && h.len == sizeof(struct runner_error_msg)) {
    const struct runner_error_msg *e = p;
    snprintf(err, err_len, "gpulab-runner did not start: %s", e->msg);
    rc = -ENODEV;
  } else if (rc == -ETIMEDOUT) {
    snprintf(err, err_len, "gpulab-runner sent no HELLO within %.3g s", r->cfg.start_timeout_s);
  } else {
    snprintf(err, err_len, "gpulab-runner ended before its HELLO");
    rc = rc ? rc : -EPROTO;
  }
  free(p);
  if (rc) {
    reap(r, true);
    return rc;
  }
  pthread_mutex_lock(&r->st_mu);
  r->stats.starts++;
  r->stats.last_start_ms = clock_mono_ms() - t0;
  r->stats.pid = pid;
  pthread_mutex_unlock(&r->st_mu);
  return 0;
}

/* True while the process lives (reaps it otherwise). */
static bool alive(struct runner *r) {
  if (r->pid <= 0) return false;
  int status;
  if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
    r->pid = 0; /* already reaped */
    reap(r, false);
    return false;
  }
  return true;
}

int runner_acquire(struct runner *r, char *err, size_t err_len) {
  pthread_mutex_lock(&r->mu);
  if (alive(r)) return 0;
  int rc = start(r, err, err_len);
  if (rc) pthread_mutex_unlock(&r->mu);
  return rc;
}

void runner_release(struct runner *r) {
  if (!alive(r)) {
    char err[256];
    if (start(r, err, sizeof err)) log_default(r, err);
  }
  pthread_mutex_unlock(&r->mu);
}

const struct runner_hello_msg *runner_hello(const struct runner *r) { return &r->hello; }

void runner_free(struct runner *r) {
  if (!r) return;
  pthread_mutex_lock(&r->mu);
  if (r->pid > 0) {
    runner_send(r->sock, RUNNER_MSG_EXIT, NULL, 0, NULL, 0, NULL, 0);
    struct runner_hdr h;
    void *p = NULL;
    if (runner_recv(r->sock, &h, &p, NULL, 0, NULL, 1000) == 0) {
      free(p);
      int status;
      for (int i = 0; i < 100; i++) {
        if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
          r->pid = 0; /* exited as asked: reap below only closes */
          break;
        }
        usleep(10000);
      }
    }
    reap(r, true);
  }
  pthread_mutex_unlock(&r->mu);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->st_mu);
  free(r);
}

/* One request and its answer. The answer's payload into *reply (caller frees).
 * -ECHILD with fault filled when the runner is gone (status read); -ETIMEDOUT after
 * killing it. */
static int call(struct runner *r, uint32_t type, const void *payload, size_t len, const void *extra,
                size_t extra_len, const int *fds, int n_fds, int timeout_ms, struct runner_hdr *h,
                void **reply, struct runner_fault *fault) {
  *reply = NULL;
  struct runner_fault scratch;
  if (!fault) fault = &scratch;
  if (r->pid <= 0) {
    snprintf(fault->name, sizeof fault->name, "runner_lost");
    snprintf(fault->msg, sizeof fault->msg, "no runner is alive");
    return -ECHILD;
  }
  int rc = runner_send(r->sock, type, payload, len, extra, extra_len, fds, n_fds);
  if (rc == 0) rc = runner_recv(r->sock, h, reply, NULL, 0, NULL, timeout_ms);
  if (rc == 0) return 0;
  if (rc == -ETIMEDOUT) {
    reap(r, true);
    snprintf(fault->name, sizeof fault->name, "kernel_timeout");
    return -ETIMEDOUT;
  }
  /* The socket broke: the runner died (or is dying); its status says how. */
  int status = reap(r, rc != -EPIPE);
  describe_status(status, fault->name, sizeof fault->name, fault->msg, sizeof fault->msg);
  return -ECHILD;
}

/* Turns an answer that should be `want` into 0, the runner's error, or -EPROTO. */
static int expect(const struct runner_hdr *h, const void *p, uint32_t want, size_t want_len,
                  char *err, size_t err_len) {
  if (h->type == want && h->len == want_len) return 0;
  if (h->type == RUNNER_MSG_ERROR && h->len == sizeof(struct runner_error_msg)) {
    const struct runner_error_msg *e = p;
    snprintf(err, err_len, "%s", e->msg);
    return e->code < 0 ? e->code : -EIO;
  }
  snprintf(err, err_len, "gpulab-runner answered type %u (%u bytes) where %u was due", h->type,
           h->len, want);
  return -EPROTO;
}

static int simple(struct runner *r, uint32_t type, const void *payload, size_t len,
                  const void *extra, size_t extra_len, const int *fds, int n_fds, uint32_t want,
                  void *out, size_t out_len, char *err, size_t err_len) {
  struct runner_hdr h;
  void *p;
  struct runner_fault f;
  int rc = call(r, type, payload, len, extra, extra_len, fds, n_fds, 30000, &h, &p, &f);
  if (rc) {
    snprintf(err, err_len, "%s", rc == -ETIMEDOUT ? "the runner did not answer in 30 s" : f.msg);
    return rc == -ETIMEDOUT ? -ECHILD : rc;
  }
  rc = expect(&h, p, want, out_len, err, err_len);
  if (!rc && out_len) memcpy(out, p, out_len);
  free(p);
  return rc;
}

int runner_attach(struct runner *r, const struct runner_buffer_desc *bufs, const int *fds, int n,
                  char *err, size_t err_len) {
  if (n < 0 || n > RUNNER_MAX_BUFFERS) return -EINVAL;
  struct runner_attach_msg m;
  memset(&m, 0, sizeof m);
  m.n = (uint32_t)n;
  memcpy(m.buf, bufs, sizeof *bufs * (size_t)n);
  return simple(r, RUNNER_MSG_ATTACH, &m, sizeof m, NULL, 0, fds, fds ? n : 0, RUNNER_MSG_OK, NULL,
                0, err, err_len);
}

int runner_detach(struct runner *r) {
  char err[256];
  return simple(r, RUNNER_MSG_DETACH, NULL, 0, NULL, 0, NULL, 0, RUNNER_MSG_OK, NULL, 0, err,
                sizeof err);
}

int runner_load(struct runner *r, const uint8_t key[32], const char *entry, const void *image,
                size_t image_bytes, struct runner_loaded_msg *loaded, char *err, size_t err_len) {
  if (image_bytes > RUNNER_MAX_IMAGE_BYTES) return -E2BIG;
  struct runner_load_msg m;
  memset(&m, 0, sizeof m);
  memcpy(m.key, key, sizeof m.key);
  snprintf(m.entry, sizeof m.entry, "%s", entry);
  m.image_bytes = image_bytes;
  return simple(r, RUNNER_MSG_LOAD, &m, sizeof m, image, image_bytes, NULL, 0, RUNNER_MSG_LOADED,
                loaded, sizeof *loaded, err, err_len);
}

/* A request that launches kernels (RUN, PROBLEM): n_launches of deadline_s each and
 * the margin to answer `want` (out_len bytes into out). A fault ends the runner
 * (-EFAULT), as does a launch past its deadline (-ETIMEDOUT, the runner killed). */
static int launching(struct runner *r, uint32_t type, const void *m, size_t len,
                     uint32_t n_launches, double deadline_s, uint32_t want, void *out,
                     size_t out_len, struct runner_fault *fault, char *err, size_t err_len) {
  memset(fault, 0, sizeof *fault);
  double total_ms = (n_launches ? n_launches : 1) * deadline_s * 1e3 +
                    r->cfg.deadline_margin_s * 1e3;
  if (total_ms > 2e9) total_ms = 2e9;
  struct runner_hdr h;
  void *p;
  int rc = call(r, type, m, len, NULL, 0, NULL, 0, (int)total_ms, &h, &p, fault);
  if (rc == -ETIMEDOUT) {
    snprintf(fault->msg, sizeof fault->msg,
             "a launch ran past its deadline of %.3g s; the runner was killed", deadline_s);
    pthread_mutex_lock(&r->st_mu);
    r->stats.timeouts++;
    pthread_mutex_unlock(&r->st_mu);
    snprintf(err, err_len, "%s", fault->msg);
    return -ETIMEDOUT;
  }
  if (rc == -ECHILD || (rc == 0 && h.type == RUNNER_MSG_FAULT)) {
    if (rc == 0) {
      if (h.len == sizeof *fault) memcpy(fault, p, sizeof *fault);
      free(p);
      reap(r, false); /* it exits after a FAULT */
    }
    pthread_mutex_lock(&r->st_mu);
    r->stats.faults++;
    pthread_mutex_unlock(&r->st_mu);
    snprintf(err, err_len, "%s: %s", fault->name, fault->msg);
    return -EFAULT;
  }
  if (rc) return rc;
  rc = expect(&h, p, want, out_len, err, err_len);
  if (!rc) memcpy(out, p, out_len);
  free(p);
  return rc;
}

int runner_run(struct runner *r, struct runner_run_msg *m, double deadline_s,
               struct runner_done_msg *done, struct runner_fault *fault, char *err,
               size_t err_len) {
  m->deadline_ms = deadline_s * 1e3;
  return launching(r, RUNNER_MSG_RUN, m, sizeof *m, m->n_launches, deadline_s, RUNNER_MSG_DONE,
                   done, sizeof *done, fault, err, err_len);
}

int runner_problem(struct runner *r, const struct runner_problem_msg *m, double deadline_s,
                   struct runner_problem_ready_msg *ready, struct runner_fault *fault, char *err,
                   size_t err_len) {
  /* The reference's two launches; generating and comparing take less than one. */
  return launching(r, RUNNER_MSG_PROBLEM, m, sizeof *m, 3, deadline_s, RUNNER_MSG_PROBLEM_READY,
                   ready, sizeof *ready, fault, err, err_len);
}

void runner_stats(struct runner *r, struct runner_stats *s) {
  pthread_mutex_lock(&r->st_mu);
  *s = r->stats;
  pthread_mutex_unlock(&r->st_mu);
}

int runner_memfd_new(size_t bytes, int *fd, void **ptr) {
  *fd = -1;
  *ptr = NULL;
  int f = memfd_create("gpulab-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (f < 0) return -errno;
  if (ftruncate(f, (off_t)bytes) != 0) {
    int e = errno;
    close(f);
    return -e;
  }
  fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  void *p = NULL;
  if (bytes) {
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      close(f);
      return -e;
    }
  }
  *fd = f;
  *ptr = p;
  return 0;
}

void runner_memfd_free(int fd, void *ptr, size_t bytes) {
  if (ptr && bytes) munmap(ptr, bytes);
  if (fd >= 0) close(fd);
}
