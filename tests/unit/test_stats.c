/* stats.h: summaries of timing samples on known data. */
#include <math.h>
#include "kernels/core/stats.h"
#include "tests/runner.h"

static void test_odd(void) {
  const double x[] = {5, 1, 4, 2, 3};
  struct stats_summary s;
  stats_summarize(x, 5, &s);
  CHECK_NEAR(s.median, 3, 0);
  CHECK_NEAR(s.min, 1, 0);
  CHECK_NEAR(s.max, 5, 0);
  CHECK_NEAR(s.mean, 3, 1e-12);
  CHECK_NEAR(s.stdev, sqrt(2.5), 1e-12); /* sum of squares 10 over n-1 = 4 */
  CHECK(x[0] == 5 && x[4] == 3);         /* input untouched */
}

static void test_even(void) {
  const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
  struct stats_summary s;
  stats_summarize(x, 8, &s);
  CHECK_NEAR(s.median, 4.5, 0);
  CHECK_NEAR(s.mean, 5, 1e-12);
  CHECK_NEAR(s.stdev, sqrt(32.0 / 7.0), 1e-12);
  CHECK_NEAR(s.min, 2, 0);
  CHECK_NEAR(s.max, 9, 0);
  const double y[] = {10, 1};
  stats_summarize(y, 2, &s);
  CHECK_NEAR(s.median, 5.5, 0);
}

static void test_small(void) {
  struct stats_summary s;
  stats_summarize(NULL, 0, &s);
  CHECK(s.median == 0 && s.min == 0 && s.max == 0 && s.mean == 0 && s.stdev == 0);
  const double one = 1.25;
  stats_summarize(&one, 1, &s);
  CHECK(s.median == 1.25 && s.min == 1.25 && s.max == 1.25 && s.mean == 1.25);
  CHECK(s.stdev == 0);
}

static void test_quantile(void) {
  const double x[] = {5, 1, 4, 2, 3, 6, 7, 8}; /* sorted: 1..8 */
  CHECK_NEAR(stats_quantile(x, 8, 0), 1, 0);
  CHECK_NEAR(stats_quantile(x, 8, 1), 8, 0);
  CHECK_NEAR(stats_quantile(x, 8, 0.25), 2.75, 1e-12); /* position 1.75 */
  CHECK_NEAR(stats_quantile(x, 8, 0.75), 6.25, 1e-12); /* position 5.25 */
  CHECK_NEAR(stats_quantile(x, 8, 0.5), 4.5, 1e-12);
  CHECK_NEAR(stats_quantile(x, 1, 0.75), 5, 0);
  CHECK(stats_quantile(NULL, 0, 0.5) == 0);
  CHECK(x[0] == 5); /* input untouched */
}

/* A sample apart from the others beyond their noise: one slow batch, one fast one, two
 * clusters; not noise of 15% spread evenly, nor a 5% step, nor fewer than 3 samples. */
static void test_apart(void) {
  double apart;
  const double one_slow[] = {1.00, 1.01, 0.99, 1.00, 2.00};
  CHECK_INT_EQ(stats_apart(one_slow, 5, &apart), 4);
  CHECK_NEAR(apart, 1.0, 1e-12);
  const double one_fast[] = {1.00, 0.30, 1.01, 0.99, 1.00};
  CHECK_INT_EQ(stats_apart(one_fast, 5, NULL), 1);
  const double clusters[] = {1.0, 1.0, 1.0, 2.0, 2.0};
  CHECK(stats_apart(clusters, 5, NULL) >= 3);
  const double noisy[] = {1.00, 1.15, 0.90, 1.10, 0.95};
  CHECK_INT_EQ(stats_apart(noisy, 5, &apart), -1);
  CHECK_NEAR(apart, 0.15, 1e-12);
  const double step[] = {1.00, 1.00, 1.00, 1.00, 1.05}; /* 8 sigmas of a flat run, but 5% */
  CHECK_INT_EQ(stats_apart(step, 5, NULL), -1);
  const double two[] = {1.0, 9.0};
  CHECK_INT_EQ(stats_apart(two, 2, NULL), -1);
  const double zeros[] = {0, 0, 5};
  CHECK_INT_EQ(stats_apart(zeros, 3, NULL), -1);
}

static const struct test_case cases[] = {
    TEST(test_apart), TEST(test_odd),      TEST(test_even),
    TEST(test_small), TEST(test_quantile), TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
