/* usass.h: the disassembler's search and its run over a temporary copy of the CUBIN. */
#include "server/service/usass.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/log.h"
#include "server/service/child_run.h"

static const char *const tools[] = {"nvdisasm", "cuobjdump"}; /* preferred first */

/* Whether dir/name is an executable file; its path into out. */
static bool executable(const char *dir, const char *name, char *out, size_t len) {
  struct stat st;
  int n = snprintf(out, len, "%s/%s", dir, name);
  return n > 0 && (size_t)n < len && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
         access(out, X_OK) == 0;
}

/* The toolkit's bin/ folder of include folder inc (nvrtc_lib.include_dirs[0]) into out:
 * <root>/include gives <root>/bin, <root>/targets/<triple>/include too. */
static void toolkit_bin(const char *inc, char *out, size_t len) {
  char root[PATH_MAX];
  snprintf(root, sizeof root, "%s", inc);
  char *slash = strrchr(root, '/');
  if (slash) *slash = '\0';
  slash = strrchr(root, '/');
  if (slash && slash > root) {
    *slash = '\0';
    char *up = strrchr(root, '/');
    if (!up || strcmp(up + 1, "targets") != 0)
      *slash = '/'; /* not targets/<triple>: kept */
    else
      *up = '\0';
  }
  snprintf(out, len, "%s/bin", root);
}

/* The toolkit folders to look in, real paths without repeats, into dirs (at most 3). */
static int toolkit_dirs(const struct nvrtc_lib *lib, char dirs[3][PATH_MAX]) {
  char cand[3][PATH_MAX], real[PATH_MAX];
  int n = 0, c = 0;
  if (lib && lib->n_include_dirs > 0) toolkit_bin(lib->include_dirs[0], cand[c++], PATH_MAX);
  const char *home = getenv("CUDA_HOME");
  if (home && *home) snprintf(cand[c++], PATH_MAX, "%.4000s/bin", home);
  snprintf(cand[c++], PATH_MAX, "/usr/local/cuda/bin");
  for (int i = 0; i < c; i++) {
    const char *d = realpath(cand[i], real) ? real : cand[i];
    bool seen = false;
    for (int j = 0; j < n; j++) seen |= strcmp(dirs[j], d) == 0;
    if (!seen) snprintf(dirs[n++], PATH_MAX, "%s", d);
  }
  return n;
}

/* name on $PATH (absolute entries only) into out. */
static bool on_path(const char *name, char *out, size_t len) {
  const char *path = getenv("PATH");
  for (const char *p = path; p && *p;) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char dir[PATH_MAX];
    if (n > 0 && n < sizeof dir && p[0] == '/') {
      memcpy(dir, p, n);
      dir[n] = '\0';
      if (executable(dir, name, out, len)) return true;
    }
    p = end ? end + 1 : p + n;
  }
  return false;
}

int usass_find(const struct nvrtc_lib *lib, char *tool, size_t tool_len, char *why,
               size_t why_len) {
  char dirs[3][PATH_MAX];
  int n = toolkit_dirs(lib, dirs);
  for (int d = 0; d < n; d++)
    for (size_t t = 0; t < 2; t++)
      if (executable(dirs[d], tools[t], tool, tool_len)) return 0;
  for (size_t t = 0; t < 2; t++)
    if (on_path(tools[t], tool, tool_len)) return 0;
  char looked[3 * PATH_MAX + 8] = "";
  for (int d = 0; d < n; d++)
    snprintf(looked + strlen(looked), sizeof looked - strlen(looked), "%s%s", d ? ", " : "",
             dirs[d]);
  char pkg[40] = "cuda-nvdisasm-<major>-<minor>";
  if (lib) snprintf(pkg, sizeof pkg, "cuda-nvdisasm-%d-%d", lib->major, lib->minor);
  /* Where it looked is the operator's (the log), not every client's: the server's
   * folders are no user's business. */
  log_info("sass: neither nvdisasm nor cuobjdump in %s or on $PATH", looked);
  snprintf(why, why_len,
           "neither nvdisasm nor cuobjdump is in the CUDA toolkit's bin folder or on gpulabd's "
           "$PATH: install the CUDA toolkit's nvdisasm (NVIDIA's package %s, or pip's "
           "nvidia-cuda-nvdisasm) there",
           pkg);
  return -ENOENT;
}

/* The first line of text into out. */
static void first_line(const char *text, char *out, size_t len) {
  while (*text == '\n' || *text == ' ') text++;
  size_t n = strcspn(text, "\n");
  snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), text);
}

/* Disassemblies running now: each is a child for up to USASS_TIME_S and up to
 * USASS_MAX_BYTES of output, so a burst of requests cannot start one each. */
static atomic_int running;

/* The tool's message with the temporary file's path (a server folder) as "<cubin>". */
static void without_path(char *line, size_t len, const char *file) {
  char *at = file[0] ? strstr(line, file) : NULL;
  if (!at) return;
  char rest[256];
  snprintf(rest, sizeof rest, "%s", at + strlen(file));
  snprintf(at, len - (size_t)(at - line), "<cubin>%s", rest);
}

static int disassemble(const struct nvrtc_lib *lib, const void *image, size_t bytes, char **out,
                       bool *truncated, char *why, size_t why_len);

int usass_disassemble(const struct nvrtc_lib *lib, const void *image, size_t bytes, char **out,
                      bool *truncated, char *why, size_t why_len) {
  *out = NULL;
  *truncated = false;
  if (atomic_fetch_add(&running, 1) >= USASS_SLOTS) {
    atomic_fetch_sub(&running, 1);
    snprintf(why, why_len, "%d disassemblies are running; try again shortly", USASS_SLOTS);
    return -EBUSY;
  }
  int rc = disassemble(lib, image, bytes, out, truncated, why, why_len);
  atomic_fetch_sub(&running, 1);
  return rc;
}

static int disassemble(const struct nvrtc_lib *lib, const void *image, size_t bytes, char **out,
                       bool *truncated, char *why, size_t why_len) {
  char tool[PATH_MAX], file[PATH_MAX] = "";
  int rc = usass_find(lib, tool, sizeof tool, why, why_len);
  if (rc) return rc;
  if ((rc = child_temp_file(image, bytes, "cubin", file, sizeof file))) {
    snprintf(why, why_len, "the CUBIN could not be written to a temporary file (%s)",
             strerror(-rc));
    return rc == -ENOMEM ? rc : -EIO;
  }
  const char *base = strrchr(tool, '/') ? strrchr(tool, '/') + 1 : tool;
  bool nvdisasm = strcmp(base, "nvdisasm") == 0;
  char *argv[] = {(char *)base, nvdisasm ? "--print-code" : "--dump-sass", file, NULL};
  const struct child_run_limits lim = {
      .time_s = USASS_TIME_S, .max_bytes = USASS_MAX_BYTES, .truncate = true};
  struct child_run_result res;
  rc = child_run(tool, argv, &lim, &res, why, why_len);
  unlink(file);
  if (rc) return rc == -ENOMEM || rc == -ETIMEDOUT ? rc : -EIO;
  if (!res.truncated && (!WIFEXITED(res.status) || WEXITSTATUS(res.status) != 0)) {
    char line[240];
    first_line(res.err, line, sizeof line);
    without_path(line, sizeof line, file);
    if (WIFEXITED(res.status))
      snprintf(why, why_len, "%s exited with %d: %s", base, WEXITSTATUS(res.status),
               line[0] ? line : "(no message)");
    else
      snprintf(why, why_len, "%s was killed by signal %d", base, WTERMSIG(res.status));
    free(res.out);
    return -EIO;
  }
  if (res.truncated) {
    char *grown = realloc(res.out, res.out_bytes + sizeof USASS_TRUNCATED_NOTE);
    if (!grown) {
      free(res.out);
      return -ENOMEM;
    }
    memcpy(grown + res.out_bytes, USASS_TRUNCATED_NOTE, sizeof USASS_TRUNCATED_NOTE);
    res.out = grown;
    *truncated = true;
  }
  *out = res.out;
  return 0;
}
