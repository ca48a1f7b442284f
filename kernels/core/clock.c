/* The monotonic clock (clock.h). */
#include "kernels/core/clock.h"

#include <time.h>

double clock_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
