/* The backend of a unit test that runs on either: the CPU's, or the CUDA backend's when
 * the test program was given "cuda" (its test_gpu_* twin in ctest), which skips where
 * no CUDA device answers. */
#ifndef GPULAB_TESTS_MODE_BACKEND_H
#define GPULAB_TESTS_MODE_BACKEND_H

#include <stdbool.h>

#include "kernels/backends/backend.h"

/* Opens it into *be (*cuda: whether it is CUDA's), printing what opened. Returns 0;
 * CHECK_SKIP in cuda mode without a device; 1 when the CPU backend did not open. A
 * suite's setup returns it. */
int mode_backend_open(struct backend **be, bool *cuda);
/* Checks it is still healthy and frees it (a suite's teardown). */
void mode_backend_close(struct backend *be);

#endif
