/* A unified diff of two texts (a kernel's versions), by diffutils' `diff -u`, run with
 * a time limit and a cap on its output: the texts are a user's, so the tool that reads
 * them runs as a child that can be stopped. */
#ifndef GPULAB_UDIFF_H
#define GPULAB_UDIFF_H

#include <stddef.h>

#define UDIFF_TIME_S 5            /* diff's time limit */
#define UDIFF_MAX_BYTES (1 << 20) /* its output's cap */

/* The unified diff from text a (labelled label_a) to text b into *out (malloc'd,
 * NUL-terminated; free it), "" when they are the same. Returns 0, or a negative errno
 * with why filled: -ENOENT no diff program, -ETIMEDOUT past UDIFF_TIME_S, -EFBIG over
 * UDIFF_MAX_BYTES, -EIO or -ENOMEM otherwise. */
int udiff(const char *a, const char *label_a, const char *b, const char *label_b, char **out,
          char *why, size_t why_len);

#endif
