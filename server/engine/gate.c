/* The exclusivity gate: a first-come, first-served shared/exclusive lock that also
 * counts entries, so windows can tell whether they were alone. */
#include "server/engine/gate.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* A request waiting its turn; it lives on its caller's stack. */
struct waiter {
  bool exclusive;
  struct waiter *next;
};

struct gate {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int shared;           /* holders in shared mode */
  bool exclusive;       /* one holder in exclusive mode */
  struct waiter *queue; /* waiting requests, oldest first */
  struct waiter **tail; /* where the next request is linked */
  uint64_t epoch;       /* entries so far */
};

int gate_new(struct gate **out) {
  struct gate *g = calloc(1, sizeof *g);
  if (!g) return -ENOMEM;
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->changed, NULL);
  g->tail = &g->queue;
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

/* Unlinks w, granted or given up, from the queue. */
static void unlink_waiter(struct gate *g, struct waiter *w) {
  struct waiter **p = &g->queue;
  while (*p != w) p = &(*p)->next;
  *p = w->next;
  if (g->tail == &w->next) g->tail = p;
}

/* w's turn: the oldest request, and what it asks for is free. A shared request
 * joins other shared holders. */
static bool turn(const struct gate *g, const struct waiter *w) {
  if (g->queue != w || g->exclusive) return false;
  return !w->exclusive || g->shared == 0;
}

int gate_enter(struct gate *g, bool exclusive, bool (*stop)(void *arg), void *arg) {
  int rc = 0;
  struct waiter me = {.exclusive = exclusive};
  pthread_mutex_lock(&g->lock);
  *g->tail = &me;
  g->tail = &me.next;
  while (!turn(g, &me)) {
    if (stop && stop(arg)) {
      rc = -ECANCELED;
      break;
    }
    if (stop)
      wait_a_while(g);
    else
      pthread_cond_wait(&g->changed, &g->lock);
  }
  unlink_waiter(g, &me);
  if (rc == 0) {
    if (exclusive)
      g->exclusive = true;
    else
      g->shared++;
    g->epoch++;
  }
  pthread_cond_broadcast(&g->changed); /* the next in line may go now */
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
