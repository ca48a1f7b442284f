/* The gemm experiment's descriptor: A (m x k) and B (k x n) in, C = A B out, checked
 * against an FP64 product (whole, or 64 sampled rows when large) within a bound that
 * scales with each element's sum |a*b|; GFLOP/s = 2mnk / t against cuBLAS SGEMM (tf32 and
 * cublas_tf32: cuBLAS TF32). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/gen.h"
#include "kernels/core/reference_impl.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_pick.h"

static void input_shape(const struct exp_spec *s, int slot, struct exp_shape *shape) {
  if (slot == 0)
    *shape = (struct exp_shape){2, {s->p[GEMM_M], s->p[GEMM_K]}};
  else
    *shape = (struct exp_shape){2, {s->p[GEMM_K], s->p[GEMM_N]}};
}

static void output_shape(const struct exp_spec *s, struct exp_shape *shape) {
  *shape = (struct exp_shape){2, {s->p[GEMM_M], s->p[GEMM_N]}};
}

/* a sets m and k, b sets k and n; k fixed (by the request or the other input) and
 * different is named as such. */
static int fit_input(struct exp_spec *s, int slot, const struct exp_shape *shape, char *msg,
                     size_t len) {
  static const int a_dims[] = {GEMM_M, GEMM_K}, b_dims[] = {GEMM_K, GEMM_N};
  int64_t rows = shape->ndim == 2 ? shape->dims[0] : 1;
  int64_t cols = shape->ndim == 2 ? shape->dims[1] : shape->dims[0];
  int64_t k_of_input = slot == 0 ? cols : rows;
  bool k_fixed = (s->dims_given & (1u << GEMM_K)) != 0;
  const char *why = k_fixed && k_of_input != s->p[GEMM_K]
                        ? "the inner dimensions (k) of a and b must agree"
                        : NULL;
  return exp_fit_dims(s, slot, shape, slot == 0 ? a_dims : b_dims, 2, why, msg, len);
}

static void work(const struct exp_spec *s, struct exp_work *w) {
  double m = s->p[GEMM_M], n = s->p[GEMM_N], k = s->p[GEMM_K];
  w->flops = 2.0 * m * n * k;
  w->bytes = 4.0 * (m * k + k * n + m * n);
  w->counted =
      "flops: one multiply and one add per term (2mnk); bytes: the minimum, A, B "
      "and C once each";
}

/* Scratch a launch allocates around itself (one at a time: a job's launches share one
 * stream): best's split-K workspace where its pick splits k, tf32's Hopper kernel a
 * transposed B in its Bt form (and A's copy), and its workspace; both as picked at
 * GEMM_PICK_COUNT_SMS (gemm_pick.h). */
static uint64_t scratch_floats(const struct exp_spec *s, int variant) {
  const int m = s->p[GEMM_M], n = s->p[GEMM_N], k = s->p[GEMM_K];
  if (variant == GEMM_BEST) return gemm_best_scratch_floats(m, n, k);
  return variant == GEMM_TF32 ? gemm_tf32_scratch_floats(m, n, k) : 0;
}

/* ---- the reference ---- */

/* Expected rows (FP64) and each element's sum_k |a*b|, which the variant's rule
 * scales into its tolerance. */
struct gemm_ref {
  int n_rows;         /* rows compared */
  int *rows;          /* n_rows row indices, ascending */
  double *want, *mag; /* n_rows * n each */
  bool sampled;
};

/* Expected rows of C = A B in FP64, looping i-k-j so B and the accumulators are
 * read by rows, and per element sum_k |a*b|. */
static void gemm_expect(const struct reference *ref, struct gemm_ref *g) {
  int n = ref->spec.p[GEMM_N], k = ref->spec.p[GEMM_K];
  for (int r = 0; r < g->n_rows; r++) {
    const float *a_row = ref->in[0] + (size_t)g->rows[r] * k;
    double *want = g->want + (size_t)r * n, *mag = g->mag + (size_t)r * n;
    memset(want, 0, (size_t)n * sizeof *want);
    memset(mag, 0, (size_t)n * sizeof *mag);
    for (int kk = 0; kk < k; kk++) {
      double a_ik = a_row[kk];
      const float *b_row = ref->in[1] + (size_t)kk * n;
      for (int j = 0; j < n; j++) {
        double p = a_ik * b_row[j];
        want[j] += p;
        mag[j] += fabs(p);
      }
    }
  }
}

static void ref_fini(struct reference *ref) {
  struct gemm_ref *g = ref->state;
  if (!g) return;
  free(g->rows);
  free(g->want);
  free(g->mag);
  free(g);
  ref->state = NULL;
}

static int ref_init(struct reference *ref) {
  int m = ref->spec.p[GEMM_M], n = ref->spec.p[GEMM_N], k = ref->spec.p[GEMM_K];
  struct gemm_ref *g = calloc(1, sizeof *g);
  if (!g) return -ENOMEM;
  ref->state = g;
  bool big = (uint64_t)m * n * k > GEMM_REF_FULL_MAX_FMAS;
  g->n_rows = big && m > GEMM_REF_SAMPLE_ROWS ? GEMM_REF_SAMPLE_ROWS : m;
  g->sampled = g->n_rows < m;
  g->rows = reference_alloc((size_t)g->n_rows, sizeof *g->rows);
  g->want = reference_alloc((size_t)g->n_rows * n, sizeof *g->want);
  g->mag = reference_alloc((size_t)g->n_rows * n, sizeof *g->mag);
  if (!g->rows || !g->want || !g->mag) return -ENOMEM; /* ref_fini frees */
  /* A secret sample, drawn from the system's CSPRNG for each reference (Knuth's
   * selection sampling: every set of n_rows rows alike likely, in ascending order), so
   * that a kernel cannot compute only the rows it expects to be compared. */
  for (int i = 0, need = g->n_rows; i < m && need > 0; i++)
    if (arc4random_uniform((uint32_t)(m - i)) < (uint32_t)need) g->rows[g->n_rows - need--] = i;
  gemm_expect(ref, g);
  return 0;
}

/* Precision as claimed: over the elements compared, rms(c - ref) / rms(ref) stays
 * under 2^-14 for FP32 arithmetic in any summation order at every k up to GEMM_MAX_DIM
 * (about 2^-24 sqrt(k): 2^-19 at k = 8192 summed in k order with separate roundings,
 * 2^-15.7 at k = 2^20), while rounding the operands to 10 mantissa bits (TF32, FP16)
 * gives about 2^-11.9 at every k (truncating them, 2^-10.5) and to 7 (BF16) 2^-8.9:
 * measured on gpulab's generated inputs (uniform on [-1, 1), random signs, full
 * mantissas; test_reference prints the figures). The limit holds for those inputs
 * only (all positive or cancelling ones scale differently), so it is enforced when
 * every input was generated by gpulab, and reported otherwise. */
#define GEMM_PRECISION_LIMIT 0x1p-14

/* FP32 variants: an FP32 dot product of k terms is within k * 2^-23 * sum |a*b| (twice
 * the textbook bound, so any summation order and FMA passes). TF32 (gemm tf32) keeps
 * 10 mantissa bits per operand: the mma.sync kernel rounds them (each off by at most
 * 2^-11 relative), the Hopper wgmma kernel lets the tensor cores truncate them (less
 * than 2^-10, always towards zero), so a product may be off by almost 2^-9 relative.
 * Inputs a client uploads can reach that: all 0x3f801fff (1 + 2^-10 - 2^-23) give
 * err = 1.997 * 2^-10 * sum |a*b|, and all-positive uniform ones 0.92 * 2^-10 at
 * k = 32; random signs cancel most of it (0.43 * 2^-10 at 256x384x96). Truncation only
 * shrinks products, so the FP32 term still holds, doubled because the tensor cores may
 * truncate inside an mma's sum of 8 products and the accumulator:
 * (2^-9 + k * 2^-22) * sum |a*b|. A lost k8 slice or a misplaced fragment is off by
 * whole products, far more at the tested sizes (sqrt(8)/3 against 2^-9 * k/4 typical). */
static void ref_check(const struct reference *ref, int variant, const float *out,
                      struct exp_check *c) {
  const struct gemm_ref *g = ref->state;
  int n = ref->spec.p[GEMM_N], k = ref->spec.p[GEMM_K];
  const struct exp_variant *v = exp_variant_of(&ref->spec, variant);
  bool tf32 = v && (v->flags & EXP_VARIANT_TF32);
  double scale = tf32 ? 0x1p-9 + (double)k * 0x1p-22 : (double)k * REFERENCE_GRID;
  double err2 = 0, want2 = 0; /* the precision statistic's sums, finite outputs only */
  for (int r = 0; r < g->n_rows; r++) {
    const float *got = out + (size_t)g->rows[r] * n;
    const double *want = g->want + (size_t)r * n, *mag = g->mag + (size_t)r * n;
    for (int j = 0; j < n; j++) {
      double tol = scale * mag[j];
      reference_compare(c, got[j], want[j], tol);
      if (tol > c->tolerance) c->tolerance = tol;
      if (isfinite(got[j])) {
        double e = (double)got[j] - want[j];
        err2 += e * e;
        want2 += want[j] * want[j];
      }
    }
  }
  bool generated = true;
  for (int slot = 0; slot < 2; slot++) generated &= ref->spec.inputs[slot].kind == EXP_INPUT_SEED;
  c->has_precision = true;
  c->precision_rms = want2 > 0 ? sqrt(err2 / want2) : err2 > 0 ? INFINITY : 0;
  c->precision_limit = generated && !tf32 ? GEMM_PRECISION_LIMIT : 0;
  c->precision_failed = c->precision_limit > 0 && !(c->precision_rms <= c->precision_limit);
  c->sampled = g->sampled;
  c->rows_checked = g->n_rows;
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "%s",
           tf32 ? "per element |c - ref| <= (2^-9 + k * 2^-22) * sum_k |a*b| (TF32 operands)"
                : "per element |c - ref| <= k * 2^-23 * sum_k |a*b|");
  snprintf(c->reference, sizeof c->reference, "cpu fp64");
}

/* ---- the descriptor ---- */

static const struct exp_param params[] = {
    [GEMM_M] = {"m", 1, GEMM_MAX_DIM, 1024, EXP_PARAM_DIM, 130,
                "rows of A and C"}, /* tiles: 16, 128 */
    [GEMM_N] = {"n", 1, GEMM_MAX_DIM, 1024, EXP_PARAM_DIM, 135, "columns of B and C"},
    [GEMM_K] = {"k", 1, GEMM_MAX_DIM, 1024, EXP_PARAM_DIM, 77,
                "inner dimension"}, /* steps: 16, 32 */
};

static const struct exp_variant variants[] = {
    [GEMM_NAIVE] = {"naive", "one thread per C element, the whole dot product from global memory",
                    .cpu = EXP_CPU(cpu_gemm_naive,
                                   "i-j-k loop: one float fmaf dot product per output")},
    [GEMM_TILED] = {"tiled", "the lecture's 16x16 shared tiles (T = TK = 16)",
                    .cpu = EXP_CPU(
                        cpu_gemm_tiled,
                        "16x16 output tiles over 16-wide K steps, float fmaf accumulators")},
    [GEMM_CUBLAS] = {"cublas", "cuBLAS SGEMM, FP32: the reference", EXP_VARIANT_CUBLAS,
                     EXP_CEILING_DEFAULT, EXP_CPU_NONE("cuBLAS needs the CUDA backend")},
    [GEMM_BEST] = {"best",
                   "FP32, register-tiled, cp.async: tile shape, split-K or GEMV picked by shape",
                   .cpu = EXP_CPU_MAPPED(
                       cpu_gemm_tiled,
                       "16x16 output tiles, float fmaf (CPU stand-in for the register-tiled GPU "
                       "kernel)")},
    [GEMM_TF32] = {"tf32",
                   "tensor cores in TF32 (wgmma + TMA on Hopper at every size; form, tile "
                   "width and split-K picked by shape; else mma.sync)",
                   EXP_VARIANT_TF32, EXP_CEILING_TF32,
                   EXP_CPU_MAPPED(
                       cpu_gemm_tiled,
                       "16x16 output tiles in FP32: the CPU has no TF32, so it passes TF32's "
                       "tolerance")},
    [GEMM_CUBLAS_TF32] = {"cublas_tf32",
                          "cuBLAS SGEMM with CUBLAS_TF32_TENSOR_OP_MATH: tf32's reference",
                          EXP_VARIANT_CUBLAS | EXP_VARIANT_TF32, EXP_CEILING_TF32,
                          EXP_CPU_NONE("cuBLAS needs the CUDA backend")},
};
_Static_assert(EXP_COUNT_OF(variants) == GEMM_CUBLAS_TF32 + 1, "one entry per variant");

static const struct exp_input_desc inputs[] = {{"a", GEN_A, 1.0f}, {"b", GEN_B, 1.0f}};

/* A user's SGEMM: (A, B, C, m, n, k), blocks over C's columns in x and rows in y;
 * checked with the FP32 rule (any summation order of k terms). */
static const struct exp_user user = {
    .declaration =
        "extern \"C\" __global__ void %s(const float *A, const float *B, float *C, int m, "
        "int n, int k);",
    .signature =
        "extern \"C\" __global__ void kernel(const float* A, const float* B, float* C, int m, "
        "int n, int k)",
    .meaning = "A is m x k, B is k x n, both row-major; write C = A B (m x n, row-major), FP32",
    EXP_USER_ARGS({EXP_USER_ARG_INPUT, 0}, {EXP_USER_ARG_INPUT, 1}, {EXP_USER_ARG_OUTPUT, 0},
                  {EXP_USER_ARG_PARAM, GEMM_M}, {EXP_USER_ARG_PARAM, GEMM_N},
                  {EXP_USER_ARG_PARAM, GEMM_K}),
    .grid_x = GEMM_N,
    .grid_y = GEMM_M,
    .grid_rule =
        "grid = (ceil(n / tile[0]), ceil(m / tile[1])): x over C's columns, y over its rows",
    EXP_USER_BLOCK(16, 16),
    .template_source =
        "// C = A B. A is m x k, B is k x n, row-major. One thread per element of C.\n"
        "extern \"C\" __global__ void kernel(const float* A, const float* B, float* C, int m, int n, "
        "int k) {\n"
        "  int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
        "  if (row >= m || col >= n) return;\n"
        "  float acc = 0.0f;\n"
        "  for (int i = 0; i < k; ++i) acc = fmaf(A[(size_t)row * k + i], B[(size_t)i * n + col], acc);\n"
        "  C[(size_t)row * n + col] = acc;\n"
        "}\n",
    .check_variant = GEMM_NAIVE,
    .fresh_check = EXP_USER_CHECK_GEMM,
};

const struct exp_desc exp_gemm = {
    .name = "gemm",
    .title = "GEMM",
    .doc = "C[m,n] = A[m,k] · B[k,n] in FP32. Figure: GFLOP/s = 2mnk / t.",
    EXP_TABLES(params, variants, inputs),
    .input_shape = input_shape,
    .output_shape = output_shape,
    .fit_input = fit_input,
    .timing = EXP_TIMING_LECTURE,
    .work = work,
    .figure = EXP_FIGURE_GFLOPS,
    .ceiling = EXP_CEILING_SGEMM,
    .scratch_floats = scratch_floats,
    .ref_init = ref_init,
    .ref_check = ref_check,
    .ref_fini = ref_fini,
    .user = &user,
};
