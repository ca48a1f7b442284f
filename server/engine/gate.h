/* The gate that keeps timed windows exclusive on one device. A job holds it
 * shared while it has device work in flight, and exclusively for a timed window
 * ("isolation": "exclusive", the default). Requests are granted in the order they
 * came, a run of shared ones together: an exclusive request waits only for those
 * before it, and none waits behind later ones (two holders taking exclusive turns
 * back to back cannot keep a third request out). A window
 * opened under the gate learns at its close whether anyone else held the gate at
 * any moment of it: device work only runs under the gate, so "no one else" means
 * no other job's device work overlapped the window. Thread-safe. */
#ifndef GPULAB_GATE_H
#define GPULAB_GATE_H

#include <stdbool.h>
#include <stdint.h>

struct gate;

struct gate_window {
  uint64_t epoch; /* entries into the gate when the window opened */
  bool others;    /* someone else held the gate when it opened */
};

int gate_new(struct gate **out); /* 0 or -ENOMEM */
void gate_free(struct gate *g);  /* NULL is a no-op; nobody may hold it */

/* Blocks until granted (0), or until stop(arg) turns true (-ECANCELED; polled a
 * few times a second; stop may be NULL). */
int gate_enter(struct gate *g, bool exclusive, bool (*stop)(void *arg), void *arg);
void gate_leave(struct gate *g, bool exclusive);

/* The caller holds the gate. */
void gate_window_open(struct gate *g, struct gate_window *w);
bool gate_window_close(struct gate *g, const struct gate_window *w); /* true: contended */

#endif
