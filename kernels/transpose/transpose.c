/* The transpose experiment's descriptor: A (m x n) in, B = A^T out, checked exactly;
 * effective bandwidth 8mn / t against the device's copy. */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/core/gen.h"
#include "kernels/core/reference_impl.h"
#include "kernels/transpose/transpose.h"

static void input_shape(const struct exp_spec *s, int slot, struct exp_shape *shape) {
  *shape = (struct exp_shape){2, {s->p[TRANSPOSE_M], s->p[TRANSPOSE_N]}};
}

/* The output is the first run's: copy keeps A's shape. */
static void output_shape(const struct exp_spec *s, struct exp_shape *shape) {
  if (s->n_variants > 0 && s->variants[0] == TRANSPOSE_COPY)
    *shape = (struct exp_shape){2, {s->p[TRANSPOSE_M], s->p[TRANSPOSE_N]}};
  else
    *shape = (struct exp_shape){2, {s->p[TRANSPOSE_N], s->p[TRANSPOSE_M]}};
}

static int fit_input(struct exp_spec *s, int slot, const struct exp_shape *shape, char *msg,
                     size_t len) {
  static const int dims[] = {TRANSPOSE_M, TRANSPOSE_N};
  return exp_fit_dims(s, slot, shape, dims, 2, NULL, msg, len);
}

static void work(const struct exp_spec *s, struct exp_work *w) {
  w->bytes = 8.0 * s->p[TRANSPOSE_M] * (double)s->p[TRANSPOSE_N];
  w->counted = "bytes: each element read once and written once (4 + 4 bytes); no flops";
}

/* A^T made once per reference, for outputs up to this many elements: a reference is
 * kept and reused while identical inputs repeat (reference_cache.h), and against it a
 * check is one contiguous pass (reference_all_exact) instead of a strided walk per
 * job. Larger outputs are walked (the expected copy would double the reference). */
#define TRANSPOSE_EXPECTED_MAX ((size_t)1 << 22)

/* ref->state: B = A^T (n x m), or NULL past TRANSPOSE_EXPECTED_MAX or without the
 * memory (then ref_check walks A, as it always may). */
static int ref_init(struct reference *ref) {
  int m = ref->spec.p[TRANSPOSE_M], n = ref->spec.p[TRANSPOSE_N];
  const float *a = ref->in[0];
  float *b = ref->out_len <= TRANSPOSE_EXPECTED_MAX ? reference_alloc(ref->out_len, sizeof *b)
                                                    : NULL;
  ref->state = b;
  if (!b) return 0;
  for (int y0 = 0; y0 < m; y0 += 32) /* 32x32 blocks: neither side thrashes the cache */
    for (int x0 = 0; x0 < n; x0 += 32)
      for (int y = y0; y < m && y < y0 + 32; y++)
        for (int x = x0; x < n && x < x0 + 32; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
  return 0;
}

static void ref_check(const struct reference *ref, int variant, const float *out,
                      struct exp_check *c) {
  int m = ref->spec.p[TRANSPOSE_M], n = ref->spec.p[TRANSPOSE_N];
  const float *a = ref->in[0], *want = variant == TRANSPOSE_COPY ? a : ref->state;
  if (variant == TRANSPOSE_COPY) {
    snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "exact: out[i] == A[i]");
    snprintf(c->reference, sizeof c->reference, "input (copy)");
  } else {
    snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "exact: B[x*m+y] == A[y*n+x]");
    snprintf(c->reference, sizeof c->reference, "cpu exact transpose");
  }
  if (want && reference_all_exact(out, want, ref->out_len)) {
    c->compared += (int64_t)ref->out_len; /* every element right: no error to note */
    return;
  }
  /* Wrong somewhere (the count and the largest errors), or no expected copy. */
  if (want) {
    for (size_t i = 0; i < ref->out_len; i++) reference_compare(c, out[i], want[i], 0);
    return;
  }
  for (int y0 = 0; y0 < m; y0 += 32)
    for (int x0 = 0; x0 < n; x0 += 32)
      for (int y = y0; y < m && y < y0 + 32; y++)
        for (int x = x0; x < n && x < x0 + 32; x++)
          reference_compare(c, out[(size_t)x * m + y], a[(size_t)y * n + x], 0);
}

static const struct exp_param params[] = {
    [TRANSPOSE_M] = {"m", 1, TRANSPOSE_MAX_DIM, 4096, EXP_PARAM_DIM, 131,
                     "rows of A"}, /* tiles: 32, 64 */
    [TRANSPOSE_N] = {"n", 1, TRANSPOSE_MAX_DIM, 4096, EXP_PARAM_DIM, 197, "columns of A"},
};

static const struct exp_variant variants[] = {
    [TRANSPOSE_NAIVE] = {"naive", "one thread per element: coalesced reads, strided writes",
                         .cpu = EXP_CPU(cpu_transpose_naive,
                                        "straight loop: reads rows of A, writes columns of B")},
    [TRANSPOSE_SHARED32] =
        {"shared32", "32x32 shared tile: coalesced both ways, 32-way bank conflicts",
         .cpu = EXP_CPU_MAPPED(
             cpu_transpose_blocked,
             "32x32 cache-blocked loop (CPU stand-in for the shared-memory tile)")},
    [TRANSPOSE_PADDED33] = {"padded33", "the same tile padded to 33 columns: no bank conflict",
                            .cpu = EXP_CPU_MAPPED(
                                cpu_transpose_blocked,
                                "32x32 cache-blocked loop (a CPU has no banks to pad for)")},
    [TRANSPOSE_COPY] = {"copy", "the bandwidth reference beside them: B = A, not a transpose",
                        EXP_VARIANT_BASELINE, EXP_CEILING_DEFAULT,
                        EXP_CPU(cpu_copy, "memcpy of A: the bandwidth reference")},
    [TRANSPOSE_BEST] = {"best",
                        "picked by shape: 64x64 float4 tiles, whole-sector stores at odd "
                        "shapes, a gather or a copy at thin ones",
                        .cpu = EXP_CPU_MAPPED(
                            cpu_transpose_blocked,
                            "32x32 cache-blocked loop (CPU stand-in for the GPU's float4 tiles)")},
};

static const struct exp_input_desc inputs[] = {{"a", GEN_A, 1.0f}};

/* A user's transpose: (a, b, m, n), blocks over A's columns in x and its rows in y;
 * checked exactly, like every transpose. */
static const struct exp_user user = {
    .declaration = "extern \"C\" __global__ void %s(const float *a, float *b, int m, int n);",
    .signature = "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n)",
    .meaning = "A is m x n, row-major; write B = A^T (n x m, row-major)",
    EXP_USER_ARGS({EXP_USER_ARG_INPUT, 0}, {EXP_USER_ARG_OUTPUT, 0},
                  {EXP_USER_ARG_PARAM, TRANSPOSE_M}, {EXP_USER_ARG_PARAM, TRANSPOSE_N}),
    .grid_x = TRANSPOSE_N,
    .grid_y = TRANSPOSE_M,
    .grid_rule =
        "grid = (ceil(n / tile[0]), ceil(m / tile[1])): x over A's columns, y over its rows",
    EXP_USER_BLOCK(32, 32),
    .template_source =
        "// B = A^T. A is m x n, row-major. One thread per element.\n"
        "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
        "  int x = blockIdx.x * blockDim.x + threadIdx.x; // column of A\n"
        "  int y = blockIdx.y * blockDim.y + threadIdx.y; // row of A\n"
        "  if (x < n && y < m) b[(size_t)x * m + y] = a[(size_t)y * n + x];\n"
        "}\n",
    .check_variant = TRANSPOSE_PADDED33,
    .fresh_check = EXP_USER_CHECK_TRANSPOSE,
};

const struct exp_desc exp_transpose = {
    .name = "transpose",
    .title = "Transpose",
    .doc = "B = Aᵀ for an m × n matrix A. Figure: GB/s = 8mn / t.",
    EXP_TABLES(params, variants, inputs),
    .input_shape = input_shape,
    .output_shape = output_shape,
    .fit_input = fit_input,
    .timing = EXP_TIMING_LECTURE,
    .work = work,
    .figure = EXP_FIGURE_GBPS,
    .ceiling = EXP_CEILING_COPY,
    .ref_init = ref_init,
    .ref_check = ref_check,
    .user = &user,
};
_Static_assert(EXP_COUNT_OF(variants) == TRANSPOSE_BEST + 1, "one entry per variant");
