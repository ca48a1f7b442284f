/* The test assertions, for every C and CUDA test (tests/runner.h runs the cases), in
 * libuv's style: on failure print both values and the place, then exit 1 (the runner
 * names the case). CHECK_SOFT reports and goes on: the case fails at its end. A test
 * that cannot run here exits with CHECK_SKIP (77). */
#ifndef GPULAB_TEST_CHECK_H
#define GPULAB_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_SKIP 77

#define CHECK_FAIL_(fmt, ...)                                             \
  do {                                                                    \
    fprintf(stderr, "%s:%d: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__); \
    exit(1);                                                              \
  } while (0)

/* Failed CHECK_SOFTs so far (tests/runner.c reads it after each case). */
extern int check_soft_failures;

/* A check that found a bug but leaves the state sound: it prints the place and the
 * printf-style message, and the case goes on; the runner fails it at its end. */
#define CHECK_SOFT(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      check_soft_failures++;                                                   \
    }                                                                          \
  } while (0)

#define CHECK(cond)                                      \
  do {                                                   \
    if (!(cond)) CHECK_FAIL_("CHECK(%s) failed", #cond); \
  } while (0)

#define CHECK_INT_EQ(a, b)                                                      \
  do {                                                                          \
    long long a_ = (long long)(a), b_ = (long long)(b);                         \
    if (a_ != b_) CHECK_FAIL_("%s == %s failed: %lld != %lld", #a, #b, a_, b_); \
  } while (0)

#define CHECK_STR_EQ(a, b)                                                         \
  do {                                                                             \
    const char *a_ = (a), *b_ = (b);                                               \
    if (!a_ || !b_ || strcmp(a_, b_) != 0)                                         \
      CHECK_FAIL_("%s == %s failed: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", \
                  b_ ? b_ : "(null)");                                             \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                  \
  do {                                                                         \
    double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);             \
    if (!(a_ - b_ <= t_ && b_ - a_ <= t_))                                     \
      CHECK_FAIL_("|%s - %s| <= %g failed: %.9g vs %.9g", #a, #b, t_, a_, b_); \
  } while (0)

/* A CUDA runtime call (for the .cu tests and those that call the runtime): fails with
 * the call and the error's name and message unless it returned cudaSuccess. */
#define CHECK_CUDA(call)                                                               \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess)                                                             \
      CHECK_FAIL_("%s: %s (%s)", #call, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
  } while (0)

#endif
