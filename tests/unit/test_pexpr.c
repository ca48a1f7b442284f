/* kernels/problem/pexpr.h: params' integer expressions parsed, refused at their
 * position, evaluated without overflow, bounded over ranges and written as C. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kernels/problem/pexpr.h"
#include "tests/runner.h"

static const char *const names[] = {"rows", "cols", "n", "k"};

/* text's value at values (rows, cols, n, k). */
static int64_t value_of(const char *text, const int64_t *values) {
  struct pexpr *e;
  struct pexpr_error err = {0};
  int rc = pexpr_parse(text, names, 4, &e, &err);
  if (rc) fprintf(stderr, "%s: %s\n", text, err.message);
  CHECK_INT_EQ(rc, 0);
  int64_t v = -12345;
  rc = pexpr_eval(e, values, &v, &err);
  if (rc) fprintf(stderr, "%s: %s\n", text, err.message);
  CHECK_INT_EQ(rc, 0);
  CHECK_STR_EQ(pexpr_text(e), text);
  pexpr_free(e);
  return v;
}

/* text is refused by the parser with exactly message at pos. */
static void expect_refused(const char *text, int pos, const char *message) {
  struct pexpr *e = (struct pexpr *)1;
  struct pexpr_error err = {0};
  CHECK_INT_EQ(pexpr_parse(text, names, 4, &e, &err), -EINVAL);
  CHECK(e == NULL);
  CHECK_INT_EQ(err.pos, pos);
  CHECK_STR_EQ(err.message, message);
}

static void test_values(void) {
  const int64_t v[] = {4096, 1024, 1000, 3};
  CHECK_INT_EQ(value_of("rows", v), 4096);
  CHECK_INT_EQ(value_of("42", v), 42);
  CHECK_INT_EQ(value_of("n / 2 + 1", v), 501);
  CHECK_INT_EQ(value_of("8 * rows * cols", v), 8LL * 4096 * 1024);
  CHECK_INT_EQ(value_of("(n + 255) / 256", v), 4);
  CHECK_INT_EQ(value_of("1 + 2 * 3", v), 7);    /* precedence */
  CHECK_INT_EQ(value_of("(1 + 2) * 3", v), 9);  /* parentheses */
  CHECK_INT_EQ(value_of("10 - 4 - 3", v), 3);   /* left associative */
  CHECK_INT_EQ(value_of("100 / 10 / 5", v), 2); /* left associative */
  CHECK_INT_EQ(value_of("n % 7", v), 1000 % 7); /* 6 */
  CHECK_INT_EQ(value_of("-k", v), -3);
  CHECK_INT_EQ(value_of("--k", v), 3);
  CHECK_INT_EQ(value_of("-7 / 2", v), -3); /* C truncates toward zero */
  CHECK_INT_EQ(value_of("-7 % 2", v), -1);
  CHECK_INT_EQ(value_of("2 - -k", v), 5);
  CHECK_INT_EQ(value_of("min(rows, cols)", v), 1024);
  CHECK_INT_EQ(value_of("max(rows, cols * 8)", v), 8192);
  CHECK_INT_EQ(value_of("cdiv(n, 256)", v), 4);
  CHECK_INT_EQ(value_of("cdiv(1024, 256)", v), 4);
  CHECK_INT_EQ(value_of("cdiv(0, 256)", v), 0);
  CHECK_INT_EQ(value_of("cdiv(-7, 2)", v), -3); /* ceil(-3.5) */
  CHECK_INT_EQ(value_of("cdiv(7, -2)", v), -3);
  CHECK_INT_EQ(value_of("cdiv(-7, -2)", v), 4);
  CHECK_INT_EQ(value_of("  rows\t*  2  ", v), 8192);
  CHECK_INT_EQ(value_of("9223372036854775807", v), INT64_MAX);
  CHECK_INT_EQ(value_of("((((((((k))))))))", v), 3);
}

static void test_refusals(void) {
  expect_refused("colz", 1, "unknown name 'colz' at 1");
  expect_refused("rows*colz", 6, "unknown name 'colz' at 6");
  expect_refused("(n + 1", 7, "syntax error at 7: expected ')'");
  expect_refused("(n + 1]", 7, "syntax error at 7: expected ')', not ']'");
  expect_refused("n / 0", 3, "division by zero at 3");
  expect_refused("n % (2 - 2)", 3, "division by zero at 3");
  expect_refused("cdiv(n, 0)", 1, "division by zero at 1");
  expect_refused("", 1, "syntax error at 1: empty expression");
  expect_refused("   ", 1, "syntax error at 1: empty expression");
  expect_refused("n +", 4, "syntax error at 4: expected a number, a name or '('");
  expect_refused("n n", 3, "syntax error at 3: unexpected 'n' after the expression");
  expect_refused("2 ** 3", 4, "syntax error at 4: expected a number, a name or '(', not '*'");
  expect_refused("1.5", 2, "syntax error at 2: unexpected '.' after the expression");
  expect_refused("+n", 1, "syntax error at 1: expected a number, a name or '(', not '+'");
  expect_refused("pow(n, 2)", 1, "unknown function 'pow' at 1; there are min, max, cdiv");
  expect_refused("min(n)", 6, "syntax error at 6: expected ',', not ')'");
  expect_refused("min(n, 1, 2)", 9, "syntax error at 9: expected ')', not ','");
  expect_refused("9223372036854775808", 1, "number too large at 1");
  char deep[80] = "";
  for (int i = 0; i < 33; i++) strcat(deep, "(");
  strcat(deep, "n");
  expect_refused(deep, 33, "nested too deeply at 33: at most 32 levels");
  char minus[40];
  memset(minus, '-', 33);
  strcpy(minus + 33, "n");
  expect_refused(minus, 33, "nested too deeply at 33: at most 32 levels");
  char longer[300];
  memset(longer, '1', 257);
  longer[257] = '\0';
  expect_refused(longer, 257, "expression too long: 257 characters, at most 256");
  memset(longer, ' ', 255);
  strcpy(longer + 255, "n"); /* 256 characters: still allowed */
  const int64_t v[] = {1, 2, 3, 4};
  CHECK_INT_EQ(value_of(longer, v), 3);
}

/* The run-time errors: overflow anywhere, and a divisor that became 0. */
static void test_eval_errors(void) {
  struct pexpr *e;
  struct pexpr_error err;
  int64_t out;
  CHECK_INT_EQ(pexpr_parse("rows * cols * 8", names, 4, &e, &err), 0);
  int64_t big[] = {INT64_C(1) << 31, INT64_C(1) << 31, 0, 0};
  CHECK_INT_EQ(pexpr_eval(e, big, &out, &err), -ERANGE);
  CHECK_INT_EQ(err.pos, 13);
  CHECK_STR_EQ(err.message, "overflow at 13: the value passes the int64 range");
  big[1] = 1 << 20; /* 2^31 * 2^20 * 8 = 2^54: fits */
  CHECK_INT_EQ(pexpr_eval(e, big, &out, &err), 0);
  CHECK_INT_EQ(out, INT64_C(1) << 54);
  pexpr_free(e);
  CHECK_INT_EQ(pexpr_parse("n / (k - 3)", names, 4, &e, &err), 0);
  const int64_t v[] = {0, 0, 10, 3};
  CHECK_INT_EQ(pexpr_eval(e, v, &out, &err), -EDOM);
  CHECK_STR_EQ(err.message, "division by zero at 3");
  pexpr_free(e);
  CHECK_INT_EQ(pexpr_parse("-n - 9223372036854775807 - 2", names, 4, &e, &err), 0);
  CHECK_INT_EQ(pexpr_eval(e, v, &out, &err), -ERANGE);
  CHECK_INT_EQ(err.pos, 4);
  pexpr_free(e);
}

static struct pexpr_range bound_of(const char *text, const struct pexpr_range *ranges) {
  struct pexpr *e;
  struct pexpr_error err;
  CHECK_INT_EQ(pexpr_parse(text, names, 4, &e, &err), 0);
  struct pexpr_range r = {-1, -1};
  int rc = pexpr_bound(e, ranges, &r, &err);
  if (rc) fprintf(stderr, "%s: %s\n", text, err.message);
  CHECK_INT_EQ(rc, 0);
  pexpr_free(e);
  return r;
}

static void expect_bound(const char *text, const struct pexpr_range *ranges, int64_t lo,
                         int64_t hi) {
  struct pexpr_range r = bound_of(text, ranges);
  if (r.lo != lo || r.hi != hi)
    fprintf(stderr, "%s: [%lld, %lld]\n", text, (long long)r.lo, (long long)r.hi);
  CHECK_INT_EQ(r.lo, lo);
  CHECK_INT_EQ(r.hi, hi);
}

static void expect_unbounded(const char *text, const struct pexpr_range *ranges, int rc,
                             const char *message) {
  struct pexpr *e;
  struct pexpr_error err;
  CHECK_INT_EQ(pexpr_parse(text, names, 4, &e, &err), 0);
  struct pexpr_range r;
  CHECK_INT_EQ(pexpr_bound(e, ranges, &r, &err), rc);
  CHECK_STR_EQ(err.message, message);
  pexpr_free(e);
}

static void test_bounds(void) {
  /* rows, cols in [1, 65536]; n in [0, 1000]; k in [-5, 7] */
  const struct pexpr_range r[] = {{1, 65536}, {1, 65536}, {0, 1000}, {-5, 7}};
  expect_bound("rows", r, 1, 65536);
  expect_bound("rows * cols", r, 1, INT64_C(1) << 32);
  expect_bound("8 * rows * cols", r, 8, INT64_C(8) << 32);
  expect_bound("n / 2 + 1", r, 1, 501);
  expect_bound("(n + 255) / 256", r, 0, 4);
  expect_bound("cdiv(rows, 256)", r, 1, 256);
  expect_bound("rows - cols", r, -65535, 65535);
  expect_bound("-k", r, -7, 5);
  expect_bound("k * k", r, -35, 49); /* interval arithmetic: k twice is not known equal */
  expect_bound("min(rows, 100)", r, 1, 100);
  expect_bound("max(k, 0)", r, 0, 7);
  expect_bound("n % 16", r, 0, 15);
  expect_bound("n % 2000", r, 0, 1000); /* n % 2000 == n here */
  expect_bound("k % 3", r, -2, 2);
  expect_bound("k % rows", r, -5, 7);
  expect_bound("rows / (0 - 2)", r, -32768, 0);
  expect_bound("1000 / rows", r, 0, 1000);
  expect_unbounded("rows / n", r, -EDOM,
                   "division by zero at 6: the divisor can be 0 (it ranges over [0, 1000])");
  expect_unbounded("rows / (k + 1)", r, -EDOM,
                   "division by zero at 6: the divisor can be 0 (it ranges over [-4, 8])");
  expect_unbounded("cdiv(n, k)", r, -EDOM,
                   "division by zero at 1: the divisor can be 0 (it ranges over [-5, 7])");
  expect_unbounded("rows * cols * rows * cols * rows", r, -ERANGE,
                   "overflow at 20: the value can pass the int64 range");
  /* once bounded, evaluation over the whole box cannot fail */
  struct pexpr *e;
  struct pexpr_error err;
  CHECK_INT_EQ(pexpr_parse("cdiv(rows * cols, n + 1) - k % 3", names, 4, &e, &err), 0);
  struct pexpr_range b;
  CHECK_INT_EQ(pexpr_bound(e, r, &b, &err), 0);
  const int64_t corners[][4] = {{1, 1, 0, -5}, {65536, 65536, 0, 7}, {65536, 1, 1000, -4}};
  for (int i = 0; i < 3; i++) {
    int64_t out;
    CHECK_INT_EQ(pexpr_eval(e, corners[i], &out, &err), 0);
    CHECK(out >= b.lo && out <= b.hi);
  }
  CHECK(pexpr_uses(e, 0) && pexpr_uses(e, 1) && pexpr_uses(e, 2) && pexpr_uses(e, 3));
  pexpr_free(e);
  CHECK_INT_EQ(pexpr_parse("rows + 1", names, 4, &e, &err), 0);
  CHECK(pexpr_uses(e, 0) && !pexpr_uses(e, 1));
  pexpr_free(e);
  pexpr_free(NULL);
}

static void expect_c(const char *text, const char *c) {
  struct pexpr *e;
  struct pexpr_error err;
  CHECK_INT_EQ(pexpr_parse(text, names, 4, &e, &err), 0);
  char buf[256];
  CHECK_INT_EQ(pexpr_format_c(e, names, buf, sizeof buf), 0);
  CHECK_STR_EQ(buf, c);
  CHECK_INT_EQ(pexpr_format_c(e, names, buf, 4), strlen(c) < 4 ? 0 : -ENOSPC);
  pexpr_free(e);
}

static void test_format_c(void) {
  expect_c("rows", "(long long)rows");
  expect_c("7", "7LL");
  expect_c("rows * cols", "((long long)rows * (long long)cols)");
  expect_c("n / 2 + 1", "(((long long)n / 2LL) + 1LL)");
  expect_c("-k % 3", "((-(long long)k) % 3LL)");
  expect_c("min(rows, 8)", "((long long)rows < 8LL ? (long long)rows : 8LL)");
  expect_c("cdiv(n, 256)", "(((long long)n + 256LL - 1) / 256LL)");
}

static const struct test_case cases[] = {
    TEST(test_values), TEST(test_refusals), TEST(test_eval_errors),
    TEST(test_bounds), TEST(test_format_c), TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
