/* A mutex taken with its waits counted, for /metrics: where threads queue up under
 * load (the engine's lock, the store's row queue). A trylock first, so that the clock
 * is read only when the mutex was found taken. */
#ifndef GPULAB_LOCK_WAIT_H
#define GPULAB_LOCK_WAIT_H

#include <pthread.h>
#include <stdint.h>

#include "kernels/core/clock.h"

struct lock_waits {
  uint64_t n;     /* times the mutex was found taken */
  double seconds; /* and the time waited for it */
};

/* Locks m, adding a wait for it to w (which m guards). */
static inline void lock_counting_waits(pthread_mutex_t *m, struct lock_waits *w) {
  if (pthread_mutex_trylock(m) == 0) return;
  double since = clock_mono_s();
  pthread_mutex_lock(m);
  w->n++;
  w->seconds += clock_mono_s() - since;
}

#endif
