/* The exclusivity gate: a writer-preferring shared/exclusive lock that also counts
 * entries, so windows can tell whether they were alone. */
#include "server/engine/gate.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

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

/* Waits on the condition for at most 50 ms, so a stop request is seen soon. */
static void wait_a_while(struct gate *g) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 50 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&g->changed, &g->lock, &ts);
}

int gate_enter(struct gate *g, bool exclusive, bool (*stop)(void *arg), void *arg) {
  int rc = 0;
  pthread_mutex_lock(&g->lock);
  if (exclusive) g->exclusive_waiting++;
  for (;;) {
    bool free = exclusive ? !g->exclusive && g->shared == 0
                          : !g->exclusive && g->exclusive_waiting == 0;
    if (free) break;
    if (stop && stop(arg)) {
      rc = -ECANCELED;
      break;
    }
    if (stop)
      wait_a_while(g);
    else
      pthread_cond_wait(&g->changed, &g->lock);
  }
  if (exclusive) g->exclusive_waiting--;
  if (rc == 0) {
    if (exclusive)
      g->exclusive = true;
    else
      g->shared++;
    g->epoch++;
  } else {
    pthread_cond_broadcast(&g->changed); /* shared waiters may go now */
  }
  pthread_mutex_unlock(&g->lock);
  return rc;
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
