/* reduce, scan and histogram (the lecture in which many threads combine their values)
 * on one backend, every variant against the reference at their edges: n = 1 and the
 * tails of every tile and grid, best's grid cap, naive's and shared's third level;
 * integer-valued inputs, which every order sums exactly (the check's max_abs_err must
 * be 0, not only within the float bound); histogram bins = 1 to 65536 across best's
 * three u32 cases and its packed path, the sweeps of one value counted 2^24 + 5 times,
 * and values on and past the bins' edges (NaN, infinities, signed zeros, subnormals)
 * that the rule, the kernels and CUB must bin alike; outputs as uint32 counts; graph
 * and cold runs; bins outside 1..65536 make every run unavailable. argv[1]: "cpu" (the
 * default: ctest's test_combine) or "cuda" (test_gpu_combine, label gpu: exits 77 where
 * no CUDA device answers; there every variant, cub included, must be available). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backends/backend.h"
#include "kernels/core/gen.h"
#include "kernels/core/reference.h"
#include "kernels/histogram/histogram.h"
#include "kernels/reduce/reduce.h"
#include "kernels/scan/scan.h"
#include "tests/runner.h"
#include "tests/unit/mode_backend.h"

static struct backend *be;
static bool cuda;

/* ---- specs, inputs and runs ---- */

static struct exp_spec spec_of(enum exp_type type, int n, int bins) {
  struct exp_spec s;
  exp_spec_default(type, &s);
  s.p[0] = n; /* REDUCE_N, SCAN_N, HISTOGRAM_N */
  if (type == EXP_HISTOGRAM) s.p[HISTOGRAM_BINS] = bins;
  s.timing = (struct exp_timing_params){1, 2, 1};
  return s;
}

/* x as an uploaded buffer (the spec's input 0 then names it; host stays the caller's). */
static struct backend_buffer *upload(struct exp_spec *s, const float *host, size_t n) {
  struct backend_buffer *buf = NULL;
  char err[200];
  CHECK_INT_EQ(backend_buffer_upload(be, host, n, &buf, err, sizeof err), 0);
  s->inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  return buf;
}

static void size_text(const struct exp_spec *s, char *buf, size_t len) {
  if (s->type == EXP_HISTOGRAM)
    snprintf(buf, len, "n=%d bins=%d", s->p[HISTOGRAM_N], s->p[HISTOGRAM_BINS]);
  else
    snprintf(buf, len, "n=%d", s->p[0]);
}

/* Runs s (x given as `in` when not NULL) and checks every run: available (on the CPU
 * all but cub, which says why), checked and passed, exactly when `exact`. Histogram:
 * the job's output, downloaded, is the reference's counts bit for bit. what: for the
 * log. */
static void run_all(const struct exp_spec *s, struct backend_buffer *in, const float *h_in,
                    bool exact, const char *what) {
  static struct exp_result res;
  struct backend_job job = {.spec = s, .exclusive = true};
  job.input[0] = in;
  char err[256] = "", size[48];
  size_text(s, size, sizeof size);
  int rc = backend_run(be, 0, &job, NULL, &res, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "%s %s %s: rc %d: %s\n", exp_type_name(s->type), size, what, rc, err);
  CHECK_INT_EQ(rc, 0);
  CHECK_INT_EQ(res.n_runs, s->n_variants);
  int ran = 0;
  for (int i = 0; i < res.n_runs; i++) {
    const struct exp_run *run = &res.runs[i];
    const struct exp_check *c = &run->check;
    const bool cub = strcmp(run->label, "cub") == 0;
    ran += run->available;
    if (!run->available) {
      printf("  %-9s %-22s %-5s %-6s unavailable: %s\n", exp_type_name(s->type), size, what,
             run->label, run->reason);
      CHECK(!cuda && cub && run->reason[0]);
      continue;
    }
    if (!c->passed || (exact && c->max_abs_err != 0))
      fprintf(stderr, "%s %s %s %s: %lld of %lld wrong, max abs err %g (tol %g: %s)\n",
              exp_type_name(s->type), size, what, run->label, (long long)c->mismatches,
              (long long)c->compared, c->max_abs_err, c->tolerance, c->tolerance_rule);
    CHECK(c->done && c->passed && c->compared > 0);
    if (exact) CHECK(c->max_abs_err == 0);
    CHECK(run->timing.n_samples >= 1);
    if (cuda) CHECK(run->kernel.has_launch == !cub); /* a library's call has no launch shape */
  }
  printf("  %-9s %-22s %-5s %d runs passed%s\n", exp_type_name(s->type), size, what, ran,
         exact ? " (exact)" : "");
  CHECK(ran > 0);
  if (s->type == EXP_HISTOGRAM && job.output) {
    const int bins = s->p[HISTOGRAM_BINS];
    uint32_t *got = malloc((size_t)bins * sizeof *got), *want = malloc((size_t)bins * sizeof *want);
    float *x = NULL;
    CHECK(got && want);
    if (!h_in) { /* generated: the reference's numbers */
      x = malloc((size_t)s->p[HISTOGRAM_N] * sizeof *x + 1);
      CHECK(x != NULL);
      reference_fill(x, (size_t)s->p[HISTOGRAM_N], s->inputs[0].value, GEN_X);
    }
    CHECK(histogram_ref(h_in ? h_in : x, (size_t)s->p[HISTOGRAM_N], bins, want) >= 0);
    CHECK_INT_EQ(backend_buffer_download(be, job.output, job.done, (float *)got, err, sizeof err),
                 0);
    CHECK(memcmp(got, want, (size_t)bins * sizeof *got) == 0);
    free(x);
    free(got);
    free(want);
  }
  backend_buffer_free(be, job.output);
  backend_fence_free(be, job.done);
}

/* The CPU runs the sizes up to 2^22 (its stand-ins' arithmetic is the same at any
 * size; the GPU's grids and chains are what the larger ones test). */
#define CPU_MAX_N ((1 << 22) + 7)

static void run_sizes(enum exp_type type, const int *ns, int count, int bins) {
  for (int i = 0; i < count; i++) {
    if (!cuda && ns[i] > CPU_MAX_N) continue;
    struct exp_spec s = spec_of(type, ns[i], bins);
    run_all(&s, NULL, NULL, type == EXP_HISTOGRAM, "gen");
  }
}

/* ---- inputs ---- */

static float *gen_x(size_t n, uint64_t seed) {
  float *h = malloc(n * sizeof *h + 1);
  CHECK(h != NULL);
  for (size_t i = 0; i < n; i++) h[i] = gen_uniform(seed, GEN_X, i);
  return h;
}

/* trunc(8 x): -7..7 (and -8 for x = -1), mean 0. Up to 2^22 of them every partial sum
 * in any order stays below 2^24 (sum |x| < 3.6 n), so every float sum is exact. */
static float *int_x(size_t n) {
  float *h = gen_x(n, 2027);
  for (size_t i = 0; i < n; i++) h[i] = truncf(8.0f * h[i]);
  return h;
}

/* Values every binning must agree on (the lab's edge input): the ends of [-1, 1), just
 * outside it, NaN, infinities, signed zeros, subnormals, points on a 2^-16 grid (every
 * power-of-two bin edge), values past 1, and gen values between. */
static float edge_value(size_t i) {
  const float g = gen_uniform(2033, GEN_X, i);
  switch (i % 16) {
  case 0: return -1.0f;
  case 1: return 1.0f;
  case 2: return nextafterf(-1.0f, -2.0f);
  case 3: return 1.0f - 0x1p-23f;
  case 4: return NAN;
  case 5: return INFINITY;
  case 6: return -INFINITY;
  case 7: return floorf(g * 65536.0f) / 65536.0f;
  case 8: return -0.0f;
  case 9: return 0.0f;
  case 10: return 1e-45f;
  case 11: return -1e-45f;
  case 12: return 2.5f * g;
  default: return g;
  }
}

/* ---- the cases ---- */

/* reduce: n = 1..5 (best's head and tail only), a block's tail, best's partial last
 * batch, its grid cap (REDUCE_BEST_MAX_BLOCKS blocks of 4096) plus a tail, several
 * batches per thread. */
static void test_reduce(void) {
  static const int ns[] = {1,
                           2,
                           3,
                           4,
                           5,
                           255,
                           257,
                           1023,
                           4099,
                           1000003,
                           REDUCE_BEST_MAX_BLOCKS * 4096 + 5,
                           (1 << 22) + 1,
                           (1 << 24) + 7};
  run_sizes(EXP_REDUCE, ns, EXP_COUNT_OF(ns), 0);
}

/* scan: n = 1, the tails of naive's and shared's tiles of 1024 and best's of 4096, two
 * and three levels, 2049 tiles of best (on the GPU its staged form, the last float4
 * straddling n). */
static void test_scan(void) {
  static const int ns[] = {1,    2,    5,    1023,  1024,          1025,
                           4095, 4096, 4097, 20483, (1 << 20) + 1, (1 << 23) + 3};
  run_sizes(EXP_SCAN, ns, EXP_COUNT_OF(ns), 0);
}

/* Integer-valued x: every order's sum is exact, so every variant's must be too. */
static void test_exact_sums(void) {
  static const int ns[] = {4097, 1000003, 1 << 22};
  for (int t = 0; t < 2; t++) {
    for (int i = 0; i < EXP_COUNT_OF(ns); i++) {
      struct exp_spec s = spec_of(t ? EXP_SCAN : EXP_REDUCE, ns[i], 0);
      float *h = int_x((size_t)ns[i]);
      struct backend_buffer *buf = upload(&s, h, (size_t)ns[i]);
      run_all(&s, buf, h, true, "int");
      backend_buffer_free(be, buf);
      free(h);
    }
  }
}

/* histogram: n = 1 at both ends of bins; best's u32 copies: 32 and more (bins <= 32,
 * summed by warps), 2..16 (33..512, by segmented shuffles), one (513..16384), then
 * packed (16385 up); shared's passes of 12288 (12289: two); a large n. */
static void test_histogram_bins(void) {
  static const int bins[] = {1,   2,    3,     8,     9,     31,    33,    256,   512,
                             513, 4096, 12288, 12289, 16384, 16385, 40000, 65535, 65536};
  for (int i = 0; i < EXP_COUNT_OF(bins); i++) {
    struct exp_spec s = spec_of(EXP_HISTOGRAM, 100003, bins[i]);
    run_all(&s, NULL, NULL, true, "gen");
  }
  static const int ends[][2] = {{1, 1},   {1, 65536},           {5, 3},
                                {4, 256}, {(1 << 22) + 3, 256}, {(1 << 22) + 3, 65536}};
  for (int i = 0; i < EXP_COUNT_OF(ends); i++) {
    struct exp_spec s = spec_of(EXP_HISTOGRAM, ends[i][0], ends[i][1]);
    run_all(&s, NULL, NULL, true, "gen");
  }
}

/* The edge values at the lab's bin counts, and one value 2^24 + 5 times (on the CPU
 * 2^20 + 5): every block's counter for it crosses 0x8000 again and again (packed best's
 * sweeps), a count past a float's exact integers. */
static void test_histogram_edges(void) {
  const size_t n_edge = 1000003, n_same = cuda ? ((size_t)1 << 24) + 5 : ((size_t)1 << 20) + 5;
  float *edge = malloc(n_edge * sizeof *edge), *same = malloc(n_same * sizeof *same);
  CHECK(edge && same);
  for (size_t i = 0; i < n_edge; i++) edge[i] = edge_value(i);
  for (size_t i = 0; i < n_same; i++) same[i] = 0.3f;
  static const int edge_bins[] = {1, 2, 3, 256, 4096, 16385, 65536};
  for (int i = 0; i < EXP_COUNT_OF(edge_bins); i++) {
    struct exp_spec s = spec_of(EXP_HISTOGRAM, (int)n_edge, edge_bins[i]);
    struct backend_buffer *buf = upload(&s, edge, n_edge);
    run_all(&s, buf, edge, true, "edge");
    backend_buffer_free(be, buf);
  }
  static const int same_bins[] = {1, 256, 4096, 40000, 65536};
  for (int i = 0; i < EXP_COUNT_OF(same_bins); i++) {
    struct exp_spec s = spec_of(EXP_HISTOGRAM, (int)n_same, same_bins[i]);
    struct backend_buffer *buf = upload(&s, same, n_same);
    run_all(&s, buf, same, true, "same");
    backend_buffer_free(be, buf);
  }
  free(edge);
  free(same);
}

/* Every variant as captured CUDA Graphs (the zeroing kernel, the PDL launch, CUB and
 * the pool's temp inside a capture; not applicable on the CPU, which says so), cold,
 * and sequential. */
static void test_graph_cold(void) {
  struct exp_spec specs[] = {spec_of(EXP_REDUCE, 1000003, 0), spec_of(EXP_SCAN, 1050627, 0),
                             spec_of(EXP_HISTOGRAM, 100003, 257),
                             spec_of(EXP_HISTOGRAM, 100003, 65536)};
  for (int i = 0; i < EXP_COUNT_OF(specs); i++) {
    struct exp_spec s = specs[i];
    s.graph = true;
    s.timing = (struct exp_timing_params){2, 3, 4};
    run_all(&s, NULL, NULL, s.type == EXP_HISTOGRAM, "graph");
    s = specs[i];
    s.cold = true;
    run_all(&s, NULL, NULL, s.type == EXP_HISTOGRAM, "cold");
    s = specs[i];
    s.order = EXP_ORDER_SEQUENTIAL;
    run_all(&s, NULL, NULL, s.type == EXP_HISTOGRAM, "seq");
  }
}

/* Bins outside 1..65536 (the API refuses them; a backend's own callers may not): no
 * run is available, and the job still ends well. */
static void test_bins_out_of_range(void) {
  static const int bins[] = {0, HISTOGRAM_MAX_BINS + 1};
  for (int i = 0; i < 2; i++) {
    struct exp_spec s = spec_of(EXP_HISTOGRAM, 1000, bins[i]);
    static struct exp_result res;
    struct backend_job job = {.spec = &s};
    char err[256] = "";
    CHECK_INT_EQ(backend_run(be, 0, &job, NULL, &res, err, sizeof err), 0);
    for (int r = 0; r < res.n_runs; r++)
      CHECK(!res.runs[r].available && strstr(res.runs[r].reason, "bins") != NULL);
    CHECK(job.output == NULL && !exp_result_passed(&res));
    backend_fence_free(be, job.done);
  }
}

/* What the runs report on the GPU: reduce's persistent grid, scan's form by n, the
 * histogram's kernel by bins. */
static void test_plans(void) {
  if (!cuda) return;
  static struct exp_result res;
  struct exp_spec s = spec_of(EXP_REDUCE, 1 << 24, 0);
  struct backend_job job = {.spec = &s};
  char err[256];
  s.n_variants = 1;
  s.variants[0] = REDUCE_BEST;
  CHECK_INT_EQ(backend_run(be, 0, &job, NULL, &res, err, sizeof err), 0);
  CHECK_STR_EQ(res.runs[0].kernel.name, "reduce_best_kernel<256,4>");
  CHECK_INT_EQ(res.runs[0].kernel.grid[0], REDUCE_BEST_MAX_BLOCKS);
  backend_buffer_free(be, job.output);
  backend_fence_free(be, job.done);
  /* scan: the register form while one wave holds every tile, staged above */
  static const struct {
    int n;
    const char *kernel;
  } scans[] = {{1 << 20, "scan_best_kernel<128,vec>"}, {1 << 26, "scan_staged_kernel<128,cs>"}};
  for (int i = 0; i < EXP_COUNT_OF(scans); i++) {
    s = spec_of(EXP_SCAN, scans[i].n, 0);
    s.n_variants = 1;
    s.variants[0] = SCAN_BEST;
    job = (struct backend_job){.spec = &s};
    CHECK_INT_EQ(backend_run(be, 0, &job, NULL, &res, err, sizeof err), 0);
    CHECK(res.runs[0].check.passed);
    CHECK_STR_EQ(res.runs[0].kernel.name, scans[i].kernel);
    backend_buffer_free(be, job.output);
    backend_fence_free(be, job.done);
  }
  static const struct {
    int bins;
    const char *kernel;
  } best[] = {{256, "histogram_best_kernel<u32,kept>"}, {1024, "histogram_best_kernel<u32,kept>"},
              {1025, "histogram_best_kernel<u32>"},     {16384, "histogram_best_kernel<u32>"},
              {16385, "histogram_best_kernel<packed>"}, {65536, "histogram_best_kernel<packed>"}};
  for (int i = 0; i < EXP_COUNT_OF(best); i++) {
    s = spec_of(EXP_HISTOGRAM, 1 << 20, best[i].bins);
    s.n_variants = 1;
    s.variants[0] = HISTOGRAM_BEST;
    job = (struct backend_job){.spec = &s};
    CHECK_INT_EQ(backend_run(be, 0, &job, NULL, &res, err, sizeof err), 0);
    CHECK(res.runs[0].check.passed);
    CHECK_STR_EQ(res.runs[0].kernel.name, best[i].kernel);
    CHECK(res.runs[0].kernel.dynamic_shared_bytes > 0 && res.runs[0].kernel.blocks_per_sm >= 1);
    backend_buffer_free(be, job.output);
    backend_fence_free(be, job.done);
  }
}

/* The CPU's backend, or CUDA's with test_mode "cuda" (test_gpu_combine). */
static int open_backend(void) { return mode_backend_open(&be, &cuda); }
static void close_backend(void) { mode_backend_close(be); }

static const char *const modes[] = {"cuda", NULL};
static const struct test_case cases[] = {
    TEST(test_reduce),
    TEST(test_scan),
    TEST(test_exact_sums),
    TEST(test_histogram_bins),
    TEST(test_histogram_edges),
    TEST(test_graph_cold),
    TEST(test_bins_out_of_range),
    TEST(test_plans),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .modes = modes, .setup = open_backend, .teardown = close_backend};
