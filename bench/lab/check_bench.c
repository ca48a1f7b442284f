/* What the transpose's check costs (issue 16): us per reference_check of a right
 * output, an m x n transpose against a cached reference, best of 5 rounds. Links
 * against a build's kernels library; not a test: it times.
 *   gcc -O2 -I. bench/lab/check_bench.c BUILD/libgpulab_kernels.a -lm -lpthread -o check_bench
 *   ./check_bench [M N]   (default 64 64) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/core/experiment.h"
#include "kernels/core/reference.h"
#include "kernels/transpose/transpose.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int m = argc > 2 ? atoi(argv[1]) : 64, n = argc > 2 ? atoi(argv[2]) : 64;
  struct exp_spec spec;
  exp_spec_default(EXP_TRANSPOSE, &spec);
  spec.p[TRANSPOSE_M] = m;
  spec.p[TRANSPOSE_N] = n;
  struct reference *ref;
  if (m < 1 || n < 1 || reference_new(&spec, NULL, &ref)) return fprintf(stderr, "bad shape\n"), 2;
  const float *a = reference_input(ref, 0);
  float *b = malloc(sizeof *b * (size_t)m * n);
  if (!b) return 1;
  for (int y = 0; y < m; y++)
    for (int x = 0; x < n; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
  struct exp_check c;
  int iters = (int)(8e7 / ((double)m * n)) + 1; /* ~80M elements a round */
  double best = 1e9;
  for (int round = 0; round < 5; round++) {
    double t0 = now_s();
    for (int i = 0; i < iters; i++) reference_check(ref, TRANSPOSE_NAIVE, b, &c);
    double t = (now_s() - t0) / iters;
    if (t < best) best = t;
  }
  printf("%dx%d: %.2f us per check (passed %d, %lld compared)\n", m, n, best * 1e6, c.passed,
         (long long)c.compared);
  free(b);
  reference_free(ref);
  return 0;
}
