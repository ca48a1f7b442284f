/* The fuzz targets' assertion: on failure print the place and abort, which libFuzzer
 * reports as a crash with its input kept. */
#ifndef GPULAB_FUZZ_CHECK_H
#define GPULAB_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      abort();                                                                      \
    }                                                                               \
  } while (0)

#endif
