/* The shape pickers (kernels/gemm/gemm_pick.h, kernels/transpose/transpose_pick.h): at the
 * shapes the labs measured on the H200 (132 SMs) each picks the configuration the labs'
 * second run chose (its pick, or its best measured where the rules were fixed after
 * it); every pick is a valid configuration at odd, edge and huge sizes and any SM
 * count, and the one gemm_pick_tile, gemm_pick_gemv or tf32_pick_make build from its
 * tile and splits; the workspace limit holds; descriptions fit. */
#include <time.h>

#include "kernels/gemm/gemm_pick.h"
#include "kernels/transpose/transpose_pick.h"
#include "tests/runner.h"

#define SMS 132

static void expect_gemm(int m, int n, int k, const char *want) {
  struct gemm_pick p = gemm_pick_for(m, n, k, SMS, UINT64_MAX);
  if (strcmp(p.name, want) != 0) {
    fprintf(stderr, "gemm %dx%dx%d: picked %s, want %s\n", m, n, k, p.name, want);
    exit(1);
  }
}

static void expect_tf32(int m, int n, int k, const char *want) {
  struct tf32_pick p = tf32_pick_for(m, n, k, SMS, UINT64_MAX);
  if (strcmp(p.name, want) != 0) {
    fprintf(stderr, "tf32 %dx%dx%d: picked %s, want %s\n", m, n, k, p.name, want);
    exit(1);
  }
}

/* Run 2's picks (the labs' second H200 run); 3001x7x2049 is its best measured
 * (t256x16 at 22 splits: the lab named it by the 24 splits asked) since the rule that
 * gemv_n serves n == 1 only; 3000^3, 2500^3, 6144^3 and 8192^3 as the H100 lab
 * (bench/lab/gemm_forms.cu) moved them: t128x128's hybrid rate and the partials beyond
 * L2 (gemm_pick.c). */
static void test_gemm_run2(void) {
  expect_gemm(512, 512, 512, "t64x64w4_s4");
  expect_gemm(768, 768, 768, "t64x64w4_s6");
  expect_gemm(1024, 1024, 1024, "t128x128_s4");
  expect_gemm(1536, 1536, 1536, "t64x128_s3");
  expect_gemm(2048, 2048, 2048, "t128x128_s1");
  expect_gemm(3000, 3000, 3000, "t64x64w4h_s1");
  expect_gemm(4096, 4096, 4096, "t128x128_s1");
  expect_gemm(6144, 6144, 6144, "t128x128_s1");
  expect_gemm(8192, 8192, 8192, "t128x128_s1");
  expect_gemm(1000, 1500, 777, "t64x64w4h_s1");
  expect_gemm(2500, 2500, 2500, "t64x64w4h_s1");
  expect_gemm(256, 256, 256, "t64x64_s4");
  expect_gemm(256, 4096, 4096, "t128x128_s4");
  expect_gemm(4096, 256, 4096, "t128x128_s4");
  expect_gemm(8192, 128, 8192, "t128x128_s4");
  expect_gemm(128, 8192, 8192, "t128x128_s4");
  expect_gemm(1, 4096, 4096, "gemv_t1_s16");
  expect_gemm(4096, 1, 4096, "gemv_n1_s3");
  expect_gemm(16, 4096, 4096, "t16x256_s16");
  expect_gemm(4096, 16, 4096, "t256x16_s16");
  expect_gemm(5, 3001, 2049, "gemv_t8_s13");
  expect_gemm(3001, 7, 2049, "t256x16_s22");
}

/* Run 2's picks, with A and Bt at a 128-byte multiple pitch where k % 8 != 0 (its best
 * measured at 2500^3, 1000x1500x777 and 257x383x97; not at 3000^3). */
static void test_tf32_run2(void) {
  expect_tf32(2500, 2500, 2500, "wg224_s1_p32");
  expect_tf32(1000, 1500, 777, "wg128_s1_p32");
  expect_tf32(257, 383, 97, "wg64_s1_p32");
}

/* Where n % 8 == 0 and k % 8 == 0 the C^T form, at the widths and splits that
 * bench/lab/gemm_forms.cu measured fastest on an H100 (bench/RESULTS.md): 512 to 4096
 * its fastest; 6144 and 8192 within 1% of it (ct256, ct224). */
static void test_tf32_ct(void) {
  expect_tf32(512, 512, 512, "ct128_s1");
  expect_tf32(768, 768, 768, "ct128_s1");
  expect_tf32(1024, 1024, 1024, "ct128_s1");
  expect_tf32(4096, 1024, 4096, "ct256_s1");
  expect_tf32(1536, 1536, 1536, "ct192_s1");
  expect_tf32(2048, 2048, 2048, "ct256_s1");
  expect_tf32(3000, 3000, 3000, "ct192_s1");
  expect_tf32(4096, 4096, 4096, "ct256_s1");
  expect_tf32(6144, 6144, 6144, "ct192_s1");
  expect_tf32(8192, 8192, 8192, "ct192_s1");
  expect_tf32(3000, 3004, 3000, "wg192_s1"); /* n % 8 != 0 */
  CHECK(!tf32_ct_fits(8, 8, 4) && !tf32_ct_fits(8, 12, 8) && tf32_ct_fits(1, 8, 8));
}

/* A pick is a configuration the kernels have: splits cover k in chunks of the step,
 * narrow tiles only at narrow shapes, the hybrid only where it exists and applies,
 * gemv only where it applies, whole only when the sizes tile. */
static void check_gemm_valid(int m, int n, int k, int sms, uint64_t max_ws) {
  struct gemm_pick p = gemm_pick_for(m, n, k, sms, max_ws);
  CHECK(p.splits >= 1 && p.kchunk >= 1);
  CHECK((int64_t)p.splits * p.kchunk >= k && (int64_t)(p.splits - 1) * p.kchunk < k);
  CHECK(gemm_pick_ws_floats(&p, m, n) <= max_ws);
  if (p.kind == GEMM_KIND_TILE) {
    CHECK(p.tile >= 0 && p.tile < GEMM_N_TILES);
    const struct gemm_tile_cfg *t = &gemm_tile_cfgs[p.tile];
    CHECK(p.kchunk % t->bk == 0);
    if (t->narrow == 1) CHECK(n <= 16);
    if (t->narrow == 2) CHECK(m <= 16);
    CHECK(p.whole == (m % t->bm == 0 && n % t->bn == 0 && k % t->bk == 0));
    if (p.hybrid) CHECK(t->hybrid && !p.whole && n % 4 == 0);
    /* the tests' and labs' forced configuration of the same tile and splits is this one */
    const struct gemm_pick f = gemm_pick_tile(p.tile, p.hybrid, p.splits, k);
    CHECK(f.kind == p.kind && f.kchunk == p.kchunk && f.splits == p.splits);
    CHECK(strcmp(f.name, p.name) == 0);
  } else {
    if (p.kind == GEMM_KIND_GEMV_T)
      CHECK(m <= 8 && p.rows == (m == 1 ? 1 : 8) && p.kchunk % 32 == 0);
    else
      CHECK(p.kind == GEMM_KIND_GEMV_N && n == 1 && p.rows == 1 && p.kchunk % 128 == 0);
    const struct gemm_pick f = gemm_pick_gemv(p.kind, p.rows, p.splits, k);
    CHECK(f.tile == -1 && f.kchunk == p.kchunk && f.splits == p.splits);
    CHECK(strcmp(f.name, p.name) == 0);
  }
  char d[192];
  gemm_pick_describe(&p, m, n, k, sms, d, sizeof d);
  CHECK(strncmp(d, p.name, strlen(p.name)) == 0 && strlen(d) < sizeof d - 1);
}

static void check_tf32_valid(int m, int n, int k, int sms, uint64_t max_ws) {
  struct tf32_pick p = tf32_pick_for(m, n, k, sms, max_ws);
  CHECK(p.tile >= 0 && p.tile < TF32_N_TILES && p.splits >= 1 && p.kchunk % 32 == 0);
  CHECK((int64_t)p.splits * p.kchunk >= k && (int64_t)(p.splits - 1) * p.kchunk < k);
  CHECK(tf32_pick_ws_floats(&p, m, n) <= max_ws);
  CHECK(p.copy_a == (k % 8 != 0) && p.kp % 4 == 0 && p.kp >= k);
  if (p.copy_a) CHECK(p.kp % 32 == 0);
  if (p.ct) CHECK(tf32_tile_cfgs[p.tile].ct && n % 8 == 0 && k % 8 == 0 && !p.copy_a);
  const struct tf32_pick f = tf32_pick_make(p.tile, p.ct, p.splits, k);
  CHECK(f.kchunk == p.kchunk && f.splits == p.splits && f.kp == p.kp && f.copy_a == p.copy_a);
  CHECK(strcmp(f.name, p.name) == 0);
  CHECK(tf32_pick_scratch_floats(&p, m, n) >= (p.ct ? 0 : (uint64_t)n * p.kp) +
                                                  (p.copy_a ? (uint64_t)m * p.kp : 0) +
                                                  tf32_pick_ws_floats(&p, m, n));
  char d[192];
  tf32_pick_describe(&p, m, n, k, sms, d, sizeof d);
  CHECK(strncmp(d, p.name, strlen(p.name)) == 0 && strlen(d) < sizeof d - 1);
}

static void test_valid_everywhere(void) {
  static const int dims[] = {1,  2,  3,   5,   7,   8,   15,   16,   17,   31,  33,
                             64, 77, 100, 129, 255, 257, 1000, 1025, 4096, 4099};
  static const int sms[] = {1, 8, 108, 132, 1000};
  const int nd = (int)(sizeof dims / sizeof dims[0]);
  for (int a = 0; a < nd; a++)
    for (int b = 0; b < nd; b++)
      for (int c = 0; c < nd; c += 3)
        for (int s = 0; s < 5; s++) {
          check_gemm_valid(dims[a], dims[b], dims[c], sms[s], UINT64_MAX);
          check_tf32_valid(dims[a], dims[b], dims[c], sms[s], UINT64_MAX);
        }
  /* the workspace limit: none at all, or the H200's count on a bigger device */
  for (int a = 0; a < nd; a += 2)
    for (int c = 0; c < nd; c += 2) {
      check_gemm_valid(dims[a], dims[a], dims[c], 1000, 0);
      check_tf32_valid(dims[a], dims[a], dims[c], 1000, 0);
      const uint64_t counted = gemm_best_scratch_floats(dims[a], dims[a], dims[c]);
      check_gemm_valid(dims[a], dims[a], dims[c], 1000, counted);
    }
}

/* The job's count is the pick's at the H200's SM count. */
static void test_scratch(void) {
  CHECK_INT_EQ(gemm_best_scratch_floats(1024, 1024, 1024), 4ull * 1024 * 1024); /* s4 */
  CHECK_INT_EQ(gemm_best_scratch_floats(4096, 4096, 4096), 0);                  /* s1 */
  CHECK_INT_EQ(gemm_tf32_scratch_floats(4096, 4096, 4096), 0);                  /* C^T */
  CHECK_INT_EQ(gemm_tf32_scratch_floats(4096, 4092, 4096), 4092ull * 4096);     /* Bt */
  /* 2500: Bt and A at pitch 2528 */
  CHECK_INT_EQ(gemm_tf32_scratch_floats(2500, 2500, 2500), 2ull * 2500 * 2528);
  CHECK_INT_EQ(gemm_best_scratch_floats(0, 5, 5), 0);
}

/* exp_spec_bytes runs the pickers on every request: the largest sizes the API takes
 * must cost microseconds, not seconds. */
static void test_fast_at_the_limits(void) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < 10; i++) {
    (void)gemm_best_scratch_floats(1 << 20, 1 << 20, 1 << 20);
    (void)gemm_tf32_scratch_floats(1 << 20, 1 << 20, 1 << 20);
    (void)gemm_pick_for(1 << 20, 1 << 20, 1, 1, UINT64_MAX);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  CHECK(s < 0.5);
}

static void expect_transpose(int64_t m, int64_t n, enum transpose_kind want) {
  struct transpose_pick p = transpose_pick_for(m, n, true);
  if (p.kind != want) {
    fprintf(stderr, "transpose %lldx%lld: picked %d (%s), want %d\n", (long long)m, (long long)n,
            (int)p.kind, p.why, (int)want);
    exit(1);
  }
}

/* Run 2: the tile kernel at aligned shapes, sec at odd ones (32x128 then, 32x64 since run 3; its best measured
 * at 4097x3001, 3001x4097, 8191x8193 and 2049^2; run 2 picked 64x64), 16x256 at few
 * columns, gather at few rows, the copy for vectors. */
static void test_transpose_run2(void) {
  expect_transpose(2048, 2048, TRANSPOSE_KIND_TILE);
  expect_transpose(8192, 8192, TRANSPOSE_KIND_TILE);
  expect_transpose(3000, 5000, TRANSPOSE_KIND_TILE);
  expect_transpose(4097, 3001, TRANSPOSE_KIND_SEC);
  expect_transpose(3001, 4097, TRANSPOSE_KIND_SEC);
  expect_transpose(8191, 8193, TRANSPOSE_KIND_SEC);
  expect_transpose(2049, 2049, TRANSPOSE_KIND_SEC);
  expect_transpose(1, 1 << 22, TRANSPOSE_KIND_COPY);
  expect_transpose(1 << 22, 1, TRANSPOSE_KIND_COPY);
  expect_transpose(16, 1 << 18, TRANSPOSE_KIND_GATHER);
  expect_transpose(6, 699051, TRANSPOSE_KIND_GATHER);
  expect_transpose(1 << 18, 16, TRANSPOSE_KIND_SEC_NARROW);
  CHECK_INT_EQ(transpose_pick_for(4097, 3001, false).kind, TRANSPOSE_KIND_TILE);
  CHECK_INT_EQ(transpose_pick_for(1, 100, false).kind, TRANSPOSE_KIND_TILE);
}

static const struct test_case cases[] = {
    TEST(test_gemm_run2),      TEST(test_tf32_run2),
    TEST(test_tf32_ct),        TEST(test_valid_everywhere),
    TEST(test_scratch),        TEST(test_fast_at_the_limits),
    TEST(test_transpose_run2), TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
