/* reference.h: inputs (generated per slot, or given) and checks against independent
 * naive computations at odd sizes, and the checks' power to catch wrong outputs. Inputs
 * per slot and given as data are test_reference_given.c's. */
#include <errno.h>
#include <math.h>
#include "kernels/core/gen.h"
#include "kernels/core/reference.h"
#include "kernels/gemm/gemm.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/stencil/stencil_tile.h"
#include "kernels/transpose/transpose.h"
#include "reference_common.h"
#include "tests/runner.h"

static void check_transpose(int m, int n) {
  struct exp_spec spec;
  exp_spec_default(EXP_TRANSPOSE, &spec);
  spec.p[TRANSPOSE_M] = m;
  spec.p[TRANSPOSE_N] = n;
  struct reference *ref = make(&spec);
  size_t len = (size_t)m * n;
  CHECK_INT_EQ(reference_output_len(ref), len);
  const float *a = reference_input(ref, 0);
  CHECK(reference_input(ref, 1) == NULL); /* transpose has one input */
  for (size_t i = 0; i < len; i++) CHECK(a[i] == gen_uniform(spec.seed, GEN_A, i));
  float *b = alloc_f(len);
  for (int y = 0; y < m; y++)
    for (int x = 0; x < n; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
  struct exp_check c;
  reference_check(ref, TRANSPOSE_NAIVE, b, &c);
  CHECK(c.passed && c.tolerance == 0 && c.max_abs_err == 0);
  CHECK_STR_EQ(c.reference, "cpu exact transpose");
  expect_pass(ref, TRANSPOSE_PADDED33, b, (int64_t)len);
  if (m > 1 && n > 1) {                       /* else A and A^T share one layout */
    expect_fail(ref, TRANSPOSE_COPY, b, -1);  /* copy must equal A itself */
    expect_fail(ref, TRANSPOSE_NAIVE, a, -1); /* not transposed at all */
  }
  expect_pass(ref, TRANSPOSE_COPY, a, (int64_t)len);
  reference_check(ref, TRANSPOSE_COPY, a, &c);
  CHECK_STR_EQ(c.reference, "input (copy)");
  b[len / 2] = nextafterf(b[len / 2], 2.0f); /* one ulp off */
  expect_fail(ref, TRANSPOSE_SHARED32, b, 1);
  b[len / 2] = NAN;
  expect_fail(ref, TRANSPOSE_SHARED32, b, 1);
  b[len / 2] = INFINITY;
  expect_fail(ref, TRANSPOSE_SHARED32, b, 1);
  b[0] = -INFINITY; /* and the copy's check, the same rule: never finite, never right */
  expect_fail(ref, TRANSPOSE_COPY, b, m > 1 && n > 1 ? -1 : 2);
  free(b);
  reference_free(ref);
}

/* Full C = A B in double, i-k-j. */
static double *gemm_double(const float *a, const float *b, int m, int n, int k) {
  double *c = calloc((size_t)m * n, sizeof *c);
  CHECK(c != NULL);
  for (int i = 0; i < m; i++)
    for (int kk = 0; kk < k; kk++)
      for (int j = 0; j < n; j++)
        c[(size_t)i * n + j] += (double)a[(size_t)i * k + kk] * b[(size_t)kk * n + j];
  return c;
}

static void test_gemm_small(void) {
  const int m = 33, n = 47, k = 18;
  struct exp_spec spec;
  exp_spec_default(EXP_GEMM, &spec);
  spec.p[GEMM_M] = m, spec.p[GEMM_N] = n, spec.p[GEMM_K] = k;
  struct reference *ref = make(&spec);
  const float *a = reference_input(ref, 0), *b = reference_input(ref, 1);
  for (int i = 0; i < m * k; i++) CHECK(a[i] == gen_uniform(spec.seed, GEN_A, (uint64_t)i));
  for (int i = 0; i < k * n; i++) CHECK(b[i] == gen_uniform(spec.seed, GEN_B, (uint64_t)i));
  /* float fmaf dot products, as the kernels compute */
  float *c = alloc_f((size_t)m * n);
  double max_tol = 0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0;
      double abs_sum = 0;
      for (int kk = 0; kk < k; kk++) {
        acc = fmaf(a[i * k + kk], b[kk * n + j], acc);
        abs_sum += fabs((double)a[i * k + kk] * b[kk * n + j]);
      }
      c[i * n + j] = acc;
      max_tol = fmax(max_tol, k * abs_sum / 8388608.0);
    }
  struct exp_check chk;
  reference_check(ref, GEMM_TILED, c, &chk);
  CHECK(chk.passed && !chk.sampled);
  CHECK_INT_EQ(chk.rows_checked, m);
  CHECK_INT_EQ(chk.compared, m * n);
  CHECK_NEAR(chk.tolerance, max_tol, max_tol * 1e-12);
  CHECK(chk.max_abs_err > 0 || chk.max_rel_err == 0);
  expect_pass(ref, GEMM_CUBLAS, c, m * n);
  double *want = gemm_double(a, b, m, n, k);
  c[5 * n + 7] = (float)(want[5 * n + 7] + 1e-3); /* far beyond k * 2^-23 * sum|ab| */
  expect_fail(ref, GEMM_NAIVE, c, 1);
  c[5 * n + 7] = (float)want[5 * n + 7];
  c[m * n - 1] = INFINITY;
  expect_fail(ref, GEMM_NAIVE, c, 1);
  free(want);
  free(c);
  reference_free(ref);
}

static void test_gemm_sampled(void) {
  const int m = 300, n = 700, k = 700; /* 147M multiply-adds: above the threshold */
  CHECK((uint64_t)m * n * k > GEMM_REF_FULL_MAX_FMAS);
  struct exp_spec spec;
  exp_spec_default(EXP_GEMM, &spec);
  spec.p[GEMM_M] = m, spec.p[GEMM_N] = n, spec.p[GEMM_K] = k;
  struct reference *ref = make(&spec);
  double *want = gemm_double(reference_input(ref, 0), reference_input(ref, 1), m, n, k);
  float *c = alloc_f((size_t)m * n);
  for (size_t i = 0; i < (size_t)m * n; i++) c[i] = (float)want[i];
  struct exp_check chk;
  reference_check(ref, GEMM_NAIVE, c, &chk);
  CHECK(chk.passed && chk.sampled);
  CHECK_INT_EQ(chk.rows_checked, GEMM_REF_SAMPLE_ROWS);
  CHECK_INT_EQ(chk.compared, (int64_t)GEMM_REF_SAMPLE_ROWS * n);
  /* The sample is secret, drawn anew for each reference: a row is compared by some
   * references and not by others (each samples 64 of 300 rows: a row is in 21% of the
   * samples), so a kernel cannot compute only the rows it expects to be compared. */
  int caught = 0;
  const int tries = 60;
  c[(size_t)1 * n] = NAN; /* row 1: never compared when rows were evenly spaced */
  for (int t = 0; t < tries; t++) {
    struct reference *other = make(&spec);
    reference_check(other, GEMM_NAIVE, c, &chk);
    caught += !chk.passed;
    reference_free(other);
  }
  printf("gemm sampled: row 1 compared by %d of %d references\n", caught, tries);
  CHECK(caught > 0 && caught < tries); /* each side has a chance below 1e-5 */
  c[(size_t)1 * n] = (float)want[n];
  /* A kernel that computes only the rows the old evenly spaced sample compared. */
  float *partial = alloc_f((size_t)m * n);
  for (size_t i = 0; i < (size_t)m * n; i++) partial[i] = NAN;
  for (int r = 0; r < GEMM_REF_SAMPLE_ROWS; r++) {
    size_t row = (size_t)r * (m - 1) / (GEMM_REF_SAMPLE_ROWS - 1);
    memcpy(partial + row * n, c + row * n, (size_t)n * sizeof *c);
  }
  expect_fail(ref, GEMM_NAIVE, partial, -1);
  free(partial);
  free(c);
  free(want);
  reference_free(ref);
}

/* Operand rounding a cheaper arithmetic does: to 10 mantissa bits (TF32), by truncation
 * (TF32 as Hopper's tensor cores may), to FP16 and to BF16 (7 bits), round to nearest
 * even. mode 0 keeps FP32. */
static float operand(float x, int mode) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if (mode == 1) u = (u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu;
  if (mode == 2) u &= ~0x1fffu;
  if (mode == 4) u = (u + 0x7fffu + ((u >> 16) & 1)) & 0xffff0000u;
  memcpy(&x, &u, 4);
  if (mode == 3) x = (float)(_Float16)x;
  return x;
}

/* C = A B with operands rounded by mode, accumulated in FP32 in one of three orders:
 * fmaf in k order (0), separate multiply and add in k order (1: the largest FP32 error
 * of the usual orders), fmaf in k order from both ends, then added (2: split-K). */
static void gemm_as(const float *a, const float *b, float *c, int m, int n, int k, int mode,
                    int order) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0, acc2 = 0;
      for (int kk = 0; kk < k; kk++) {
        float x = operand(a[(size_t)i * k + kk], mode), y = operand(b[(size_t)kk * n + j], mode);
        if (order == 1) {
          volatile float p = x * y; /* rounded on its own */
          acc = acc + p;
        } else if (order == 2 && kk >= k / 2) {
          acc2 = fmaf(x, y, acc2);
        } else {
          acc = fmaf(x, y, acc);
        }
      }
      c[(size_t)i * n + j] = acc + acc2;
    }
}

/* Precision as claimed: FP32 in any of the usual orders passes the statistic at every
 * k; operands rounded to TF32, FP16 or BF16 fail it, also where every element is
 * within the FP32 worst-case bound (at large k: no mismatch). On inputs not generated by gpulab it is
 * reported, not enforced. Prints the statistic (log2) for the record. */
static void check_gemm_precision(int m, int n, int k) {
  struct exp_spec spec;
  exp_spec_default(EXP_GEMM, &spec);
  spec.p[GEMM_M] = m, spec.p[GEMM_N] = n, spec.p[GEMM_K] = k;
  struct reference *ref = make(&spec);
  const float *a = reference_input(ref, 0), *b = reference_input(ref, 1);
  float *c = alloc_f((size_t)m * n);
  static const char *const modes[] = {"fp32", "tf32", "tf32-trunc", "fp16", "bf16"};
  printf("gemm precision %dx%dx%d, log2 rms(c - ref)/rms(ref):", m, n, k);
  for (int mode = 0; mode < 5; mode++)
    for (int order = 0; order < (mode ? 1 : 3); order++) {
      gemm_as(a, b, c, m, n, k, mode, order);
      struct exp_check chk;
      reference_check(ref, GEMM_NAIVE, c, &chk);
      CHECK(chk.has_precision);
      CHECK(chk.precision_limit > 0);
      printf(" %s/%d %.2f (%lld over the bound)", modes[mode], order, log2(chk.precision_rms),
             (long long)chk.mismatches);
      if (mode == 0) {
        if (!chk.passed) CHECK_FAIL_("fp32 order %d failed: rms %g", order, chk.precision_rms);
        CHECK(chk.precision_rms < chk.precision_limit / 8); /* a clear margin */
      } else {
        if (chk.passed) CHECK_FAIL_("%s passed as FP32: rms %g", modes[mode], chk.precision_rms);
        CHECK(chk.precision_failed);
        CHECK(chk.precision_rms > chk.precision_limit * 2);
      }
    }
  printf("\n");
  /* The TF32 variants keep their own rule: reported, not enforced. */
  gemm_as(a, b, c, m, n, k, 1, 0);
  struct exp_check chk;
  reference_check(ref, GEMM_TF32, c, &chk);
  CHECK(chk.passed && chk.has_precision && chk.precision_limit == 0);
  /* The same inputs uploaded (copied before the reference that owns them goes):
   * reported, not enforced. */
  float *ga = alloc_f((size_t)m * k), *gb = alloc_f((size_t)k * n);
  memcpy(ga, a, (size_t)m * k * sizeof *ga);
  memcpy(gb, b, (size_t)k * n * sizeof *gb);
  reference_free(ref);
  spec.inputs[0].kind = spec.inputs[1].kind = EXP_INPUT_BUFFER;
  const float *given[EXP_MAX_INPUTS] = {ga, gb};
  ref = make_given(&spec, given);
  reference_check(ref, GEMM_NAIVE, c, &chk);
  CHECK(chk.has_precision && chk.precision_limit == 0 && !chk.precision_failed);
  CHECK(chk.precision_rms > 0x1p-13); /* TF32's error, reported */
  reference_free(ref);
  free(ga), free(gb), free(c);
}

static void check_stencil(int n, int r) {
  struct exp_spec spec;
  exp_spec_default(EXP_STENCIL, &spec);
  spec.p[STENCIL_N] = n;
  spec.p[STENCIL_RADIUS] = r;
  struct reference *ref = make(&spec);
  CHECK_INT_EQ(reference_output_len(ref), n);
  const float *x = reference_input(ref, 0);
  float *y = alloc_f((size_t)n);
  double max_tol = 0;
  for (int i = 0; i < n; i++) {
    CHECK(x[i] == gen_uniform(spec.seed, GEN_X, (uint64_t)i));
    double sum = 0, abs_sum = 0;
    for (int j = i - r; j <= i + r; j++)
      if (j >= 0 && j < n) sum += x[j], abs_sum += fabs(x[j]);
    y[i] = (float)(sum / (2 * r + 1));
    max_tol = fmax(max_tol, (2 * r + 2) / 8388608.0 * abs_sum / (2 * r + 1) + 1e-30);
  }
  struct exp_check c;
  reference_check(ref, STENCIL_SHARED, y, &c);
  CHECK(c.passed);
  CHECK_INT_EQ(c.compared, n);
  CHECK_NEAR(c.tolerance, max_tol, max_tol * 1e-12);
  /* a float result is within half an ulp of the exact mean */
  CHECK(c.max_abs_err <= 0.5 / 8388608.0 + 1e-300);
  y[n - 1] += 1e-3f;
  expect_fail(ref, STENCIL_NAIVE, y, 1);
  y[0] = NAN;
  expect_fail(ref, STENCIL_NAIVE, y, 2);
  free(y);
  reference_free(ref);
}

/* f rounded to TF32 as cvt.rna does: 10 mantissa bits, to nearest, ties away. */
static float tf32_round(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  bits = (bits + 0x1000u) & ~0x1fffu;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* f truncated to TF32, as the tensor cores read raw FP32 bits (the wgmma kernel). */
static float tf32_trunc(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  bits &= ~0x1fffu;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* gemm tf32: a product of TF32-rounded or -truncated operands with FP32 accumulation
 * passes the TF32 rule, which is (2^-9 + k 2^-22) sum|ab|; the FP32 rule rejects it;
 * an element pushed past the TF32 tolerance fails. */
static void check_gemm_tf32(int m, int n, int k, bool fp32_rejects) {
  struct exp_spec spec;
  exp_spec_default(EXP_GEMM, &spec);
  spec.p[GEMM_M] = m, spec.p[GEMM_N] = n, spec.p[GEMM_K] = k;
  struct reference *ref = make(&spec);
  const float *a = reference_input(ref, 0), *b = reference_input(ref, 1);
  float *c = alloc_f((size_t)m * n), *ct = alloc_f((size_t)m * n);
  double max_tol = 0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0, acc_t = 0;
      double mag = 0;
      for (int kk = 0; kk < k; kk++) {
        float x = a[(size_t)i * k + kk], y = b[(size_t)kk * n + j];
        acc = fmaf(tf32_round(x), tf32_round(y), acc);
        acc_t = fmaf(tf32_trunc(x), tf32_trunc(y), acc_t);
        mag += fabs((double)x * y);
      }
      c[(size_t)i * n + j] = acc;
      ct[(size_t)i * n + j] = acc_t;
      max_tol = fmax(max_tol, (0x1p-9 + k * 0x1p-22) * mag);
    }
  struct exp_check chk;
  reference_check(ref, GEMM_TF32, ct, &chk); /* truncation's bias: passes too */
  CHECK(chk.passed && chk.max_abs_err > 0);
  free(ct);
  reference_check(ref, GEMM_TF32, c, &chk);
  if (!chk.passed)
    fprintf(stderr, "tf32 %dx%dx%d: %" PRId64 " mismatches\n", m, n, k, chk.mismatches);
  CHECK(chk.passed && chk.max_abs_err > 0);
  CHECK(strstr(chk.tolerance_rule, "2^-9") && strstr(chk.tolerance_rule, "TF32"));
  if (!chk.sampled) CHECK_NEAR(chk.tolerance, max_tol, max_tol * 1e-12);
  CHECK(chk.tolerance <= max_tol * (1 + 1e-12));
  struct exp_check fp32;
  reference_check(ref, GEMM_BEST, c, &fp32);
  CHECK(fp32.tolerance < chk.tolerance);
  if (fp32_rejects) CHECK(fp32.mismatches > 0); /* the worst-case bound alone catches it here */
  CHECK(!fp32.passed && fp32.precision_failed); /* the precision statistic everywhere */
  for (int r = 0; r < m; r++)
    push_out(ref, GEMM_TF32, c, (size_t)r * n); /* whichever rows are compared */
  expect_fail(ref, GEMM_TF32, c, chk.rows_checked);
  free(c);
  reference_free(ref);
}

/* ---- stencil best: double prefix sums restarted per tile (stencil_tile.h) ---- */

/* The best kernel's arithmetic, sequentially: per tile a double prefix over its span
 * x[base - lead, base + T + r), y = (P[i+r] - P[i-r-1]) / (2r+1) rounded to float. */
static void stencil_prefix(const float *x, float *y, int n, int r) {
  int tile = stencil_best_tile(r), lead = stencil_best_lead(r);
  double *p = malloc((size_t)(tile + stencil_best_halo(r)) * sizeof *p);
  CHECK(p != NULL);
  for (int base = 0; base < n; base += tile) {
    double sum = 0;
    for (int q = 0; q < tile + stencil_best_halo(r); q++) {
      long g = (long)base - lead + q;
      p[q] = sum += g >= 0 && g < n ? x[g] : 0.0f;
    }
    for (int i = base; i < n && i < base + tile; i++) {
      int j = i - base;
      y[i] = (float)((p[j + lead + r] - p[j + lead - r - 1]) * (1.0 / (2 * r + 1)));
    }
  }
  free(p);
}

/* sum |x| over [lo, hi) clipped to [0, n), in double */
static double span_abs(const float *x, int n, long lo, long hi) {
  double s = 0;
  for (long j = lo < 0 ? 0 : lo; j < hi && j < n; j++) s += fabs((double)x[j]);
  return s;
}

static void check_stencil_best(int n, int r) {
  struct exp_spec spec;
  exp_spec_default(EXP_STENCIL, &spec);
  spec.p[STENCIL_N] = n, spec.p[STENCIL_RADIUS] = r;
  struct reference *ref = make(&spec);
  const float *x = reference_input(ref, 0);
  float *y = alloc_f((size_t)n), *exact = alloc_f((size_t)n);
  stencil_prefix(x, y, n, r);
  int tile = stencil_best_tile(r), lead = stencil_best_lead(r);
  double max_tol = 0;
  for (int i = 0; i < n; i++) {
    double abs_s;
    double want = window_mean(x, n, r, i, &abs_s);
    exact[i] = (float)want;
    long base = (long)(i / tile) * tile;
    double tol = 0x1p-23 * fabs(want) +
                 0x1p-38 * span_abs(x, n, base - lead, base + tile + r) / (2 * r + 1) + 1e-30;
    max_tol = fmax(max_tol, tol);
  }
  struct exp_check c;
  reference_check(ref, STENCIL_BEST, y, &c);
  if (!c.passed)
    fprintf(stderr, "best n=%d r=%d: %" PRId64 " mismatches, max err %g\n", n, r, c.mismatches,
            c.max_abs_err);
  CHECK(c.passed);
  CHECK_INT_EQ(c.compared, n);
  CHECK_NEAR(c.tolerance, max_tol, max_tol * 1e-9);
  CHECK(strstr(c.tolerance_rule, "2^-38") != NULL);
  expect_pass(ref, STENCIL_BEST, exact, n);
  /* the prefix differences stay far inside the bound on these inputs */
  CHECK(c.max_abs_err <= 0.6 / 8388608.0);
  y[n / 2] += (float)(4 * max_tol) + 1e-6f;
  expect_fail(ref, STENCIL_BEST, y, 1);
  y[0] = NAN;
  expect_fail(ref, STENCIL_BEST, y, 2);
  free(y);
  free(exact);
  reference_free(ref);
}

/* The tiles every party restarts at: multiples of 4 that fill their span but for the
 * rounding, with a lead that keeps the span 16-byte aligned; r = 32's tile of 4028 is
 * the one the kernel was measured with. */
static void test_stencil_best_geometry(void) {
  for (int r = 0; r <= STENCIL_BEST_MAX_RADIUS; r++) {
    int tile = stencil_best_tile(r), lead = stencil_best_lead(r), halo = stencil_best_halo(r);
    int span = stencil_best_span(r), slack = span - halo - tile;
    CHECK(tile % 4 == 0 && lead % 4 == 0 && lead > r && lead <= r + 4);
    CHECK(tile >= 2048 && slack >= 0 && slack < 4);
    CHECK(span == (halo <= STENCIL_BEST_SPAN / 2 ? 1 : 2) * STENCIL_BEST_SPAN);
  }
  CHECK_INT_EQ(stencil_best_tile(0), 4092);
  CHECK_INT_EQ(stencil_best_tile(32), 4028);
  CHECK_INT_EQ(stencil_best_tile(1023), 2048);
  CHECK_INT_EQ(stencil_best_tile(1024), 6140);
  CHECK_INT_EQ(stencil_best_tile(STENCIL_BEST_MAX_RADIUS), 4096);
  CHECK_INT_EQ(stencil_best_tile(-1), 0);
  CHECK_INT_EQ(stencil_best_tile(STENCIL_BEST_MAX_RADIUS + 1), 0);
}

/* The restart bounds the damage of a huge value to its own tile: there best's
 * tolerance is as wide as 2^-38 * 1e30 (naive's is not), in the next tile it is back
 * to float rounding. A non-finite input fails its whole tile. */
static void test_stencil_best_tiles(void) {
  enum { R = 3 };
  const int tile = stencil_best_tile(R), n = 3 * tile;
  struct exp_spec spec;
  exp_spec_default(EXP_STENCIL, &spec);
  spec.p[STENCIL_N] = n, spec.p[STENCIL_RADIUS] = R;
  float *x = alloc_f((size_t)n), *y = alloc_f((size_t)n);
  for (int i = 0; i < n; i++) x[i] = gen_uniform(6, GEN_X, (uint64_t)i);
  x[tile / 2] = 1e30f; /* in tile 0, far from tile 1's span */
  const float *given[EXP_MAX_INPUTS] = {x, NULL};
  struct reference *ref = make_given(&spec, given);
  stencil_prefix(x, y, n, R);
  expect_pass(ref, STENCIL_BEST, y, n); /* tile 0's outputs are mostly noise, allowed */
  double abs_s;
  for (int i = 0; i < n; i++) y[i] = (float)window_mean(x, n, R, i, &abs_s);
  expect_pass(ref, STENCIL_NAIVE, y, n);
  y[10] += 1.0f; /* tile 0, away from the huge value: best allows it, naive not */
  expect_pass(ref, STENCIL_BEST, y, n);
  expect_fail(ref, STENCIL_NAIVE, y, 1);
  y[10] -= 1.0f;
  y[tile + 10] += 1e-5f; /* tile 1: float rounding only */
  expect_fail(ref, STENCIL_BEST, y, 1);
  reference_free(ref);
  x[tile / 2] = 0.5f;
  x[2 * tile + 100] = INFINITY; /* tile 2: its windows with infinity expect NaN */
  ref = make_given(&spec, given);
  for (int i = 0; i < n; i++) y[i] = (float)window_mean(x, n, R, i, &abs_s);
  struct exp_check c;
  reference_check(ref, STENCIL_BEST, y, &c);
  CHECK_INT_EQ(c.mismatches, 2 * R + 1);
  stencil_prefix(x, y, n, R); /* the prefix makes every later output of tile 2 NaN */
  reference_check(ref, STENCIL_BEST, y, &c);
  CHECK(!c.passed && c.mismatches >= tile - 100 - R);
  for (int i = 0; i < 2 * tile; i++) CHECK(isfinite(y[i]));
  reference_free(ref);
  free(x), free(y);
}

static void test_pipeline(void) {
  const int chunk = 333, chunks = 3, terms = 64, len = chunk * chunks;
  struct exp_spec spec;
  exp_spec_default(EXP_PIPELINE, &spec);
  spec.p[PIPELINE_CHUNK] = chunk;
  spec.p[PIPELINE_CHUNKS] = chunks;
  spec.p[PIPELINE_TERMS] = terms;
  struct reference *ref = make(&spec);
  CHECK_INT_EQ(reference_output_len(ref), len);
  const float *x = reference_input(ref, 0);
  float *phases = alloc_f((size_t)len), *y = alloc_f((size_t)len);
  reference_fill_scaled(phases, (size_t)len, spec.seed, GEN_X, PIPELINE_PHASE_SCALE);
  for (int i = 0; i < len; i++) {
    CHECK(x[i] == phases[i]);
    CHECK(x[i] == gen_uniform(spec.seed, GEN_X, (uint64_t)i) * 3.14159265f);
    CHECK(x[i] >= -3.1415927f && x[i] < 3.1415927f);
    float sum = 0;
    for (int k = 1; k <= terms; k++) sum += sinf((float)k * x[i]) / (float)k;
    y[i] = sum;
  }
  struct exp_check c;
  reference_check(ref, 3, y, &c);
  CHECK(c.passed);
  CHECK_INT_EQ(c.compared, len);
  CHECK_NEAR(c.tolerance, 2e-6 * terms + 1e-6, 1e-15);
  CHECK(c.max_abs_err < 2e-5);
  y[100] += 1e-3f;
  expect_fail(ref, 1, y, 1);
  y[200] = -INFINITY;
  expect_fail(ref, 1, y, 2);
  free(phases);
  free(y);
  reference_free(ref);
}

static void test_invalid(void) {
  struct exp_spec spec;
  struct reference *ref = (struct reference *)&spec;
  exp_spec_default(EXP_STENCIL, &spec);
  spec.p[STENCIL_N] = -1;
  CHECK_INT_EQ(reference_new(&spec, NULL, &ref), -EINVAL);
  CHECK(ref == NULL);
  reference_free(NULL);
}

static void test_transpose(void) {
  check_transpose(33, 47);
  check_transpose(40, 40);
  check_transpose(1, 7);
  check_transpose(3, (1 << 22) / 3 + 1); /* past the expected copy's bound: checked by walking A */
}

static void test_gemm_precision(void) {
  check_gemm_precision(64, 64, 256);
  check_gemm_precision(48, 40, 4096);
  check_gemm_precision(200, 150, 120);
  check_gemm_precision(3, 5, 1);
}

static void test_stencil(void) {
  static const int radii[] = {0, 2, 32};
  for (int i = 0; i < 3; i++) check_stencil(1000, radii[i]); /* n not a multiple of 256 */
  check_stencil(300, 400);                                   /* radius wider than the array */
}

static void test_gemm_tf32(void) {
  check_gemm_tf32(33, 47, 18, true);
  check_gemm_tf32(130, 70, 300, false);
  check_gemm_tf32(300, 700, 700, false); /* sampled rows */
}

static void test_stencil_best(void) {
  static const int best_radii[] = {0, 2, 32, 64, 1024, STENCIL_BEST_MAX_RADIUS};
  for (int i = 0; i < 6; i++) check_stencil_best(1000, best_radii[i]);
  check_stencil_best(20011, 5);   /* several tiles, a partial last one */
  check_stencil_best(9001, 1023); /* the 4096-float span's smallest tile (2048) */
  check_stencil_best(9001, 1024); /* the 8192-float span's first */
}

static const struct test_case cases[] = {
    TEST(test_transpose),
    TEST(test_gemm_small),
    TEST(test_gemm_sampled),
    TEST(test_gemm_precision),
    TEST(test_stencil),
    TEST(test_gemm_tf32),
    TEST(test_stencil_best),
    TEST(test_stencil_best_tiles),
    TEST(test_stencil_best_geometry),
    TEST(test_pipeline),
    TEST(test_invalid),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
