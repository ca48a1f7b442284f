/* How far inside the users' rule for sums and scans (kernels/core/sum_rule.h: rounding
 * as it happens on generated inputs) the built-in reduce and scan variants land, through
 * their CPU stand-ins, which add in the GPU kernels' order: for each variant, size and
 * seed, the largest |out - ref| / tolerance over the output (1 would fail). Also a plain
 * sequential float loop, the worst order in common use.
 *   cmake --build build --target sum_margin && ./build/sum_margin [max_log2_n [seeds]]
 * (not a test: bench/RESULTS.md keeps what it printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/experiment.h"
#include "kernels/core/reference.h"
#include "kernels/core/sum_rule.h"

/* The largest error over tolerance of out (1 float for reduce, n for scan) against x's
 * FP64 prefix sums. */
static double margin(const float *x, const float *out, size_t n, bool scan) {
  double sum = 0, max_prefix = 0, worst = 0;
  for (size_t i = 0; i < n; i++) {
    sum += x[i];
    if (fabs(sum) > max_prefix) max_prefix = fabs(sum);
  }
  sum = 0;
  if (scan) max_prefix = 0; /* y[i]: the largest prefix up to i */
  for (size_t i = 0; i < n; i++) {
    sum += x[i];
    if (scan && fabs(sum) > max_prefix) max_prefix = fabs(sum);
    if (!scan && i + 1 < n) continue;
    double got = scan ? out[i] : out[0];
    double r = fabs(got - sum) / sum_rule_random((double)(i + 1), max_prefix);
    if (!(r <= worst)) worst = r; /* NaN wins */
  }
  return worst;
}

int main(int argc, char **argv) {
  int max_log2 = argc > 1 ? atoi(argv[1]) : 24, seeds = argc > 2 ? atoi(argv[2]) : 3;
  printf("%-8s %-12s", "exp", "variant");
  for (int l = 16; l <= max_log2; l += 2) printf("  2^%-6d", l);
  printf("   (largest |err| / tolerance over %d seeds)\n", seeds);
  const char *names[] = {"reduce", "scan"};
  for (int e = 0; e < 2; e++) {
    enum exp_type type = (enum exp_type)exp_type_from_name(names[e]);
    const struct exp_desc *d = exp_desc(type);
    for (int v = -1; v < d->n_variants; v++) { /* -1: a sequential float loop */
      if (v >= 0 && !d->variants[v].cpu.fn) continue;
      printf("%-8s %-12s", names[e], v < 0 ? "float loop" : d->variants[v].name);
      for (int l = 16; l <= max_log2; l += 2) {
        double worst = 0;
        for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
          struct exp_spec spec;
          exp_spec_default(type, &spec);
          spec.p[0] = 1 << l;
          spec.inputs[0].value = seed;
          spec.n_variants = 1;
          spec.variants[0] = v < 0 ? 0 : v;
          struct reference *ref = NULL;
          if (reference_new(&spec, NULL, &ref)) return 1;
          size_t n = (size_t)spec.p[0], out_n = reference_output_len(ref);
          const float *x = reference_input(ref, 0);
          float *out = calloc(out_n, sizeof *out);
          size_t scratch_n = d->cpu_scratch_floats ? d->cpu_scratch_floats(&spec) : 0;
          float *scratch = scratch_n ? calloc(scratch_n, sizeof *scratch) : NULL;
          if (!out || (scratch_n && !scratch)) return 1;
          if (v < 0) {
            float s = 0;
            for (size_t i = 0; i < n; i++) {
              s += x[i];
              if (e == 1) out[i] = s;
            }
            if (e == 0) out[0] = s;
          } else {
            char err[128];
            const float *in[EXP_MAX_INPUTS] = {x, NULL};
            struct exp_cpu_call call = {&spec, in, out, scratch, v, NULL, err, sizeof err};
            if (d->variants[v].cpu.fn(&call)) return fprintf(stderr, "%s\n", err), 1;
          }
          double m = margin(x, out, n, e == 1);
          if (!(m <= worst)) worst = m;
          free(scratch);
          free(out);
          reference_free(ref);
        }
        printf("  %-8.3g", worst);
      }
      printf("\n");
    }
  }
  return 0;
}
