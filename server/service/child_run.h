/* Running a tool over a user's data in a child process (diff -u, nvdisasm): the data
 * goes in a private temporary file, the tool's output comes back through a pipe until a
 * deadline and a size cap, and a child that runs too long or writes too much is killed,
 * never waited on. Knows neither HTTP nor the tools' formats. */
#ifndef GPULAB_CHILD_RUN_H
#define GPULAB_CHILD_RUN_H

#include <stdbool.h>
#include <stddef.h>

/* What a run may take. */
struct child_run_limits {
  double time_s;    /* from the start to the child's output's end; then it is killed */
  size_t max_bytes; /* of its standard output */
  /* Past max_bytes: false, the run fails (-EFBIG); true, the output so far is kept
   * (cut at max_bytes), the child killed and child_run_result.truncated set. */
  bool truncate;
};

/* What a run gave. out is the caller's to free (NULL after a failure). */
struct child_run_result {
  char *out;        /* standard output, NUL-terminated (also when it holds NULs) */
  size_t out_bytes; /* without that NUL */
  bool truncated;   /* cut at max_bytes (limits.truncate) */
  int status;       /* waitpid's status: WIFEXITED, WEXITSTATUS; killed when truncated */
  char err[512];    /* the start of its standard error, NUL-terminated ("" when none) */
};

/* Runs argv[0]'s program (path: a file name with a '/', or a name looked up in $PATH)
 * with argv, no standard input, none of this process's other descriptors, within lim.
 * Returns 0 when the child ran to its end or was cut (res filled: its exit status is
 * the caller's to judge), else a negative errno with why filled and res->out NULL:
 * -ENOENT the program could not be started, -ETIMEDOUT past lim->time_s, -EFBIG past
 * lim->max_bytes (not truncating), -EIO or -ENOMEM. */
int child_run(const char *path, char *const argv[], const struct child_run_limits *lim,
              struct child_run_result *res, char *why, size_t why_len);

/* n bytes of data into a new file of mode 0600 under $TMPDIR (else /tmp) named
 * gpulab-<tag>-XXXXXX, its path into path; the caller unlinks it. 0 or -errno. */
int child_temp_file(const void *data, size_t n, const char *tag, char *path, size_t path_len);

#endif
