/* udiff.h: `diff -u` from diffutils (an Essential Debian package) in a child
 * (child_run.h), fed two temporary files. Chosen over a diff of our own: its hunks are
 * what every reader and patch(1) expects. */
#include "server/service/udiff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/service/child_run.h"

int udiff(const char *a, const char *label_a, const char *b, const char *label_b, char **out,
          char *why, size_t why_len) {
  char path_a[256] = "", path_b[256] = "";
  *out = NULL;
  int rc;
  if ((rc = child_temp_file(a, strlen(a), "diff", path_a, sizeof path_a)) ||
      (rc = child_temp_file(b, strlen(b), "diff", path_b, sizeof path_b))) {
    snprintf(why, why_len, "a temporary file could not be written (%s)", strerror(-rc));
    goto done;
  }
  char *argv[] = {"diff", "-u",   "--label", (char *)label_a, "--label", (char *)label_b,
                  path_a, path_b, NULL};
  const struct child_run_limits lim = {.time_s = UDIFF_TIME_S, .max_bytes = UDIFF_MAX_BYTES};
  struct child_run_result res;
  rc = child_run("diff", argv, &lim, &res, why, why_len);
  if (rc == -ENOENT) {
    snprintf(why, why_len, "diff (diffutils) could not be run");
  } else if (rc == -ETIMEDOUT) {
    snprintf(why, why_len, "diff ran past %d s", UDIFF_TIME_S);
  } else if (rc == -EFBIG) {
    snprintf(why, why_len, "the diff is over %d bytes", UDIFF_MAX_BYTES);
  } else if (rc == 0 && (!WIFEXITED(res.status) || WEXITSTATUS(res.status) > 1)) {
    rc = -EIO; /* diff exits 0 (the same), 1 (different), 2 (trouble) */
    snprintf(why, why_len, "diff failed");
    free(res.out);
  } else if (rc == 0) {
    *out = res.out;
  }
done:
  if (path_a[0]) unlink(path_a);
  if (path_b[0]) unlink(path_b);
  return rc;
}
