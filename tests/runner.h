/* One runner for every C and CUDA test program (libuv's test/test-list.h and runner.c are
 * the model). A program lists its cases once, in the order they run, and defines
 * test_suite; tests/runner.c holds main:
 *
 *   static void test_odd(void) { CHECK(...); }
 *   static const struct test_case cases[] = {TEST(test_odd), TEST(test_even), TEST_END};
 *   const struct test_suite test_suite = {.cases = cases};
 *
 *   prog              every case, in the listed order
 *   prog --list       the cases' names, one a line
 *   prog odd even     those cases only (a name not listed: exit 2); "test_odd" is "odd" too
 *   prog cuda [odd]   a mode the suite accepts (test_suite.modes), then names
 *
 * A case fails at its first CHECK (tests/check.h exits 1 and the runner names the case),
 * or at its end after CHECK_SOFT reported (the other cases still run; the program exits
 * 1). A case or the setup that cannot run here exits CHECK_SKIP (77): ctest's
 * SKIP_RETURN_CODE. Each case prints "ok <name> (<seconds> s)" when it passed.
 *
 * Cases share what the setup made (one gpulabd for the whole file, say). A case that needs
 * what an earlier case left says so with TEST_AFTER (or TEST_AFTER_ALL): run by name, the
 * runner runs that case first (and what it needs in turn), so that any case runs alone. */
#ifndef GPULAB_TEST_RUNNER_H
#define GPULAB_TEST_RUNNER_H

#include "tests/check.h"

#ifdef __cplusplus
extern "C" {
#endif

struct test_case {
  const char *name;  /* the function's name; its "test_" prefix is dropped */
  void (*run)(void); /* fails through CHECK (exit 1) or skips through exit(CHECK_SKIP) */
  const char *after; /* the case whose state this one starts from, "*" for every case
                        * listed before it, or NULL */
};

#define TEST(fn) \
  { #fn, fn, NULL }
#define TEST_AFTER(fn, before) \
  { #fn, fn, #before }
/* A case that reads what every case before it left (a listing of their jobs, say). */
#define TEST_AFTER_ALL(fn) \
  { #fn, fn, "*" }
#define TEST_END \
  { NULL, NULL, NULL }

struct test_suite {
  const struct test_case *cases; /* ends with TEST_END */
  /* Words the program takes as its first argument ("cuda"), NULL-terminated, or NULL;
   * the word given is test_mode, else NULL. */
  const char *const *modes;
  /* Before the first case that runs (not for --list): 0, or the program's exit status
   * (CHECK_SKIP where what it needs is not here, with a "skip: why" line). May be NULL. */
  int (*setup)(void);
  void (*before_each)(void); /* before every case that runs (a clean database); may be NULL */
  void (*teardown)(void);    /* after the last case that ran; may be NULL */
};

/* Each test program defines it. */
extern const struct test_suite test_suite;

/* The mode given on the command line (one of test_suite.modes), or NULL. */
extern const char *test_mode;

/* The running case's name, or NULL outside cases (in setup and teardown). */
const char *test_case_name(void);

/* A directory of the program's own for its files (tokens, databases, sockets):
 * /tmp/gpulab-<program>-XXXXXX, made at the first call (mode 0700), and removed with
 * what it holds after the teardown when every case passed (a failure leaves it to look
 * at). */
const char *test_dir(void);

#ifdef __cplusplus
}
#endif

#endif
