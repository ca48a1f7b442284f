/* mode_backend.h: a unit test's backend, the CPU's or CUDA's (test_mode "cuda"). */
#include "tests/unit/mode_backend.h"

#include <stdio.h>
#include <string.h>

#include "tests/check.h"
#include "tests/runner.h"

int mode_backend_open(struct backend **be, bool *cuda) {
  *cuda = test_mode && strcmp(test_mode, "cuda") == 0;
  char why[256];
  if (backend_open(*cuda ? BACKEND_CUDA : BACKEND_CPU, 0, 1, be, why, sizeof why) != 0) {
    printf("skip: %s\n", why);
    return *cuda ? CHECK_SKIP : 1;
  }
  printf("%s\n", why);
  return 0;
}

void mode_backend_close(struct backend *be) {
  CHECK(backend_healthy(be));
  backend_free(be);
}
