/* The exclusivity gate: a writer-preferring shared/exclusive lock that also counts
 * entries, so windows can tell whether they were alone. */
#include "server/gate.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct gate {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int shared;            /* holders in shared mode */
  bool exclusive;        /* one holder in exclusive mode */
  int exclusive_waiting; /* they go before new shared holders */
  uint64_t epoch;        /* entries so far */
};

int gate_new(struct gate **out) {
  struct gate *g = calloc(1, sizeof *g);
  if (!g) return -ENOMEM;
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->changed, NULL);
  *out = g;
  return 0;
}

void gate_free(struct gate *g) {
  if (!g) return;
  pthread_cond_destroy(&g->changed);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

void gate_enter(struct gate *g, bool exclusive) {
  pthread_mutex_lock(&g->lock);
  if (exclusive) {
    g->exclusive_waiting++;
    while (g->exclusive || g->shared > 0) pthread_cond_wait(&g->changed, &g->lock);
    g->exclusive_waiting--;
    g->exclusive = true;
  } else {
    while (g->exclusive || g->exclusive_waiting > 0) pthread_cond_wait(&g->changed, &g->lock);
    g->shared++;
  }
  g->epoch++;
  pthread_mutex_unlock(&g->lock);
}

void gate_leave(struct gate *g, bool exclusive) {
  pthread_mutex_lock(&g->lock);
  if (exclusive)
    g->exclusive = false;
  else
    g->shared--;
  pthread_cond_broadcast(&g->changed);
  pthread_mutex_unlock(&g->lock);
}

void gate_window_open(struct gate *g, struct gate_window *w) {
  pthread_mutex_lock(&g->lock);
  w->epoch = g->epoch;
  w->others = g->shared + (g->exclusive ? 1 : 0) > 1;
  pthread_mutex_unlock(&g->lock);
}

bool gate_window_close(struct gate *g, const struct gate_window *w) {
  pthread_mutex_lock(&g->lock);
  bool contended = w->others || g->epoch != w->epoch;
  pthread_mutex_unlock(&g->lock);
  return contended;
}
