/* reference_cache.h: a repeated job gets the reference an identical one built; a
 * different seed, different params or an input given as data do not; the least
 * recently used goes first, a held one outlives its eviction; and a kept reference
 * still fails a wrong output. */
#include <stdlib.h>

#include "kernels/core/gen.h"
#include "kernels/core/reference_cache.h"
#include "kernels/transpose/transpose.h"
#include "tests/runner.h"

static struct exp_spec transpose(int m, int n, uint64_t seed) {
  struct exp_spec s;
  exp_spec_default(EXP_TRANSPOSE, &s);
  s.p[TRANSPOSE_M] = m;
  s.p[TRANSPOSE_N] = n;
  s.seed = seed;
  s.inputs[0].value = seed;
  return s;
}

static struct reference *get(struct reference_cache *c, const struct exp_spec *s,
                             bool want_reused) {
  struct reference *ref = NULL;
  bool reused = !want_reused;
  CHECK_INT_EQ(reference_cache_get(c, s, NULL, &ref, &reused), 0);
  CHECK(ref != NULL);
  CHECK_INT_EQ(reused, want_reused);
  return ref;
}

/* B = A^T of the reference's own input, and whether the check passes it; with
 * wrong, one element is off. */
static bool check_transposed(const struct reference *ref, int m, int n, bool wrong) {
  const float *a = reference_input(ref, 0);
  float *b = malloc((size_t)m * n * sizeof *b);
  CHECK(b != NULL);
  for (int y = 0; y < m; y++)
    for (int x = 0; x < n; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
  if (wrong) b[(size_t)m * n / 2] += 1.0f;
  struct exp_check c;
  reference_check(ref, TRANSPOSE_NAIVE, b, &c);
  free(b);
  CHECK(c.done);
  CHECK_INT_EQ(c.mismatches, wrong ? 1 : 0);
  return c.passed;
}

static void test_repeat_reuses(void) {
  struct reference_cache *c;
  CHECK_INT_EQ(reference_cache_new(4, 1 << 20, &c), 0);
  struct exp_spec s = transpose(33, 47, 7);
  struct reference *first = get(c, &s, false);
  reference_cache_put(c, first);
  struct exp_spec again = s; /* timing and the stop rule are not the key */
  again.timing.warmup = 3;
  again.timing.batches = 5;
  again.stop.max_noise = 0.1;
  again.graph = true;
  struct reference *second = get(c, &again, true);
  CHECK(second == first);
  /* The kept reference checks as a new one does: it passes the right output and
   * fails a wrong one. */
  CHECK(check_transposed(second, 33, 47, false));
  CHECK(!check_transposed(second, 33, 47, true));
  reference_cache_put(c, second);
  struct reference_cache_stats st;
  reference_cache_stats(c, &st);
  CHECK_INT_EQ(st.hits, 1);
  CHECK_INT_EQ(st.misses, 1);
  CHECK_INT_EQ(st.entries, 1);
  CHECK_INT_EQ(st.bytes, (size_t)33 * 47 * (sizeof(float) + sizeof(double)));
  reference_cache_free(c);
}

static void test_different_misses(void) {
  struct reference_cache *c;
  CHECK_INT_EQ(reference_cache_new(4, 1 << 20, &c), 0);
  struct exp_spec s = transpose(33, 47, 7), seed = transpose(33, 47, 8),
                  size = transpose(47, 33, 7);
  struct reference *a = get(c, &s, false), *b = get(c, &seed, false), *d = get(c, &size, false);
  CHECK(a != b && a != d && b != d);
  /* Another seed: other numbers, checked against its own. */
  CHECK(reference_input(b, 0)[0] == gen_uniform(8, GEN_A, 0));
  CHECK(reference_input(a, 0)[0] != reference_input(b, 0)[0]);
  CHECK(check_transposed(b, 33, 47, false));
  /* An output right for one seed is wrong for the other. */
  struct exp_check ck;
  float *out = malloc((size_t)33 * 47 * sizeof *out);
  CHECK(out != NULL);
  for (int y = 0; y < 33; y++)
    for (int x = 0; x < 47; x++)
      out[(size_t)x * 33 + y] = reference_input(a, 0)[(size_t)y * 47 + x];
  reference_check(b, TRANSPOSE_NAIVE, out, &ck);
  CHECK(!ck.passed);
  free(out);
  reference_cache_put(c, a);
  reference_cache_put(c, b);
  reference_cache_put(c, d);
  /* An input given as data (a buffer) is never kept, nor matched: the reference
   * borrows it. */
  struct exp_spec given = s;
  given.inputs[0].kind = EXP_INPUT_BUFFER;
  float *data = calloc((size_t)33 * 47, sizeof *data);
  CHECK(data != NULL);
  const float *slots[EXP_MAX_INPUTS] = {data};
  struct reference *g = NULL;
  bool reused = true;
  for (int k = 0; k < 2; k++) {
    CHECK_INT_EQ(reference_cache_get(c, &given, slots, &g, &reused), 0);
    CHECK(!reused && g != a);
    CHECK(reference_input(g, 0) == data);
    reference_cache_put(c, g);
  }
  struct reference_cache_stats st;
  reference_cache_stats(c, &st);
  CHECK_INT_EQ(st.entries, 3);
  CHECK_INT_EQ(st.hits, 0);
  /* A seed's input the caller generated itself (the CPU backend's): the kept one,
   * which has its own copy. */
  float *own = malloc((size_t)33 * 47 * sizeof *own);
  CHECK(own != NULL);
  for (size_t i = 0; i < (size_t)33 * 47; i++) own[i] = gen_uniform(7, GEN_A, i);
  slots[0] = own;
  CHECK_INT_EQ(reference_cache_get(c, &s, slots, &g, &reused), 0);
  CHECK(reused && g == a && reference_input(g, 0) != own);
  reference_cache_put(c, g);
  free(own);
  free(data);
  reference_cache_free(c);
}

static void test_eviction(void) {
  struct reference_cache *c;
  CHECK_INT_EQ(reference_cache_new(2, 1 << 20, &c), 0);
  struct exp_spec a = transpose(16, 16, 1), b = transpose(16, 16, 2), d = transpose(16, 16, 3);
  struct reference *held = get(c, &a, false);
  reference_cache_put(c, get(c, &b, false));
  reference_cache_put(c, get(c, &a, true)); /* a used last: b goes first */
  reference_cache_put(c, get(c, &d, false));
  reference_cache_put(c, get(c, &a, true));
  reference_cache_put(c, get(c, &b, false));    /* pushed out d, then a is the oldest */
  reference_cache_put(c, get(c, &d, false));    /* pushes out a while it is held */
  CHECK(check_transposed(held, 16, 16, false)); /* still valid */
  reference_cache_put(c, held);                 /* and freed now */
  reference_cache_put(c, get(c, &a, false));
  /* Larger than the bound: built, never kept. */
  struct exp_spec big = transpose(512, 512, 1);
  reference_cache_put(c, get(c, &big, false));
  reference_cache_put(c, get(c, &big, false));
  reference_cache_free(c);
  /* No entries: every get builds. */
  CHECK_INT_EQ(reference_cache_new(0, 1 << 20, &c), 0);
  reference_cache_put(c, get(c, &a, false));
  reference_cache_put(c, get(c, &a, false));
  reference_cache_free(c);
}

static const struct test_case cases[] = {
    TEST(test_repeat_reuses),
    TEST(test_different_misses),
    TEST(test_eviction),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
