/* udiff.h: diff -u of two texts in a child: the same texts give "", different ones a
 * unified diff with the labels, one past UDIFF_MAX_BYTES -EFBIG (the child killed). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/service/udiff.h"
#include "tests/check.h"
#include "tests/runner.h"

static void test_same(void) {
  char *out, why[160];
  CHECK_INT_EQ(udiff("a\nb\n", "x", "a\nb\n", "y", &out, why, sizeof why), 0);
  CHECK_STR_EQ(out, "");
  free(out);
}

static void test_different(void) {
  char *out, why[160];
  CHECK_INT_EQ(
      udiff("a\nb\nc\n", "kernel:1@1/k.cu", "a\nB\nc\n", "kernel:1@2/k.cu", &out, why, sizeof why),
      0);
  CHECK(
      strstr(out, "--- kernel:1@1/k.cu\n+++ kernel:1@2/k.cu\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n") ==
      out);
  free(out);
  /* A text without a last newline, and an empty one. */
  CHECK_INT_EQ(udiff("", "a", "x", "b", &out, why, sizeof why), 0);
  CHECK(strstr(out, "+x\n\\ No newline at end of file") != NULL);
  free(out);
}

/* Two texts of 600,000 one-character lines each, all different: a diff of 2.4 MB. */
static void test_too_large(void) {
  size_t n = 600000;
  char *a = malloc(2 * n + 1), *b = malloc(2 * n + 1), *out = NULL, why[160];
  CHECK(a && b);
  for (size_t i = 0; i < n; i++) a[2 * i] = 'a', b[2 * i] = 'b', a[2 * i + 1] = b[2 * i + 1] = '\n';
  a[2 * n] = b[2 * n] = '\0';
  CHECK_INT_EQ(udiff(a, "a", b, "b", &out, why, sizeof why), -EFBIG);
  CHECK(out == NULL);
  CHECK(strstr(why, "over") != NULL);
  free(a);
  free(b);
}

static const struct test_case cases[] = {TEST(test_same), TEST(test_different),
                                         TEST(test_too_large), TEST_END};
const struct test_suite test_suite = {.cases = cases};
