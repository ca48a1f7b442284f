/* The one monotonic clock of gpulab (CLOCK_MONOTONIC): timed windows, deadlines and
 * waits all read it. */
#ifndef GPULAB_CLOCK_H
#define GPULAB_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds since an arbitrary fixed point, never going back. Cannot fail. */
double clock_mono_s(void);

/* The same in milliseconds. */
static inline double clock_mono_ms(void) { return clock_mono_s() * 1e3; }

#ifdef __cplusplus
}
#endif
#endif
