/* The event ring and its waiters. Waiters fire from one thread of the bus, so a
 * publisher (the engine, under its own lock) never runs listener code. */
#include "server/engine/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/core/clock.h"

struct events {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t thread;
  bool closed, stop;
  struct event *ring;
  int capacity;
  uint64_t last_seq; /* ring holds seqs (last_seq - capacity, last_seq] */
  struct events_waiter *waiters;
  int listeners; /* events_listener_add's */
  void (*on_listeners)(void *arg);
  void *on_listeners_arg;
};

void events_on_listeners(struct events *bus, void (*on_change)(void *arg), void *arg) {
  pthread_mutex_lock(&bus->lock);
  bus->on_listeners = on_change;
  bus->on_listeners_arg = arg;
  pthread_mutex_unlock(&bus->lock);
}

/* Adds delta to the listeners; tells on_listeners when none became some or back
 * (under the lock, so that once events_on_listeners took it away it is never called
 * again: it must be quick). */
static void listeners_add(struct events *bus, int delta) {
  pthread_mutex_lock(&bus->lock);
  int before = bus->listeners;
  bus->listeners += delta;
  if ((before == 0) != (bus->listeners == 0) && bus->on_listeners)
    bus->on_listeners(bus->on_listeners_arg);
  pthread_mutex_unlock(&bus->lock);
}

void events_listener_add(struct events *bus) { listeners_add(bus, 1); }
void events_listener_remove(struct events *bus) { listeners_add(bus, -1); }

int events_listeners(struct events *bus) {
  pthread_mutex_lock(&bus->lock);
  int n = bus->listeners;
  pthread_mutex_unlock(&bus->lock);
  return n;
}

static double now_unix(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Takes the waiters that are due out of the list. Lock held. */
static struct events_waiter *take_due(struct events *bus, double now) {
  struct events_waiter *fired = NULL, **link = &bus->waiters;
  while (*link) {
    struct events_waiter *w = *link;
    if (w->due || bus->closed || w->deadline <= now) {
      *link = w->next;
      w->next = fired;
      fired = w;
    } else {
      link = &w->next;
    }
  }
  return fired;
}

static void fire(struct events_waiter *fired) {
  while (fired) {
    struct events_waiter *next = fired->next;
    fired->fn(fired->arg); /* may free fired */
    fired = next;
  }
}

static void *bus_main(void *arg) {
  struct events *bus = arg;
  pthread_mutex_lock(&bus->lock);
  while (!bus->stop) {
    double earliest = clock_mono_s() + 3600;
    for (struct events_waiter *w = bus->waiters; w; w = w->next)
      if (w->deadline < earliest) earliest = w->deadline;
    double until = now_unix() + (earliest - clock_mono_s());
    struct timespec ts = {(time_t)until, (long)((until - (double)(time_t)until) * 1e9)};
    pthread_cond_timedwait(&bus->wake, &bus->lock, &ts);
    struct events_waiter *fired = take_due(bus, clock_mono_s());
    if (fired) {
      pthread_mutex_unlock(&bus->lock);
      fire(fired);
      pthread_mutex_lock(&bus->lock);
    }
  }
  pthread_mutex_unlock(&bus->lock);
  return NULL;
}

int events_new(int capacity, struct events **out) {
  struct events *bus = calloc(1, sizeof *bus);
  if (!bus) return -ENOMEM;
  bus->ring = calloc((size_t)capacity, sizeof *bus->ring);
  if (!bus->ring) {
    free(bus);
    return -ENOMEM;
  }
  bus->capacity = capacity;
  pthread_mutex_init(&bus->lock, NULL);
  pthread_cond_init(&bus->wake, NULL);
  if (pthread_create(&bus->thread, NULL, bus_main, bus)) {
    free(bus->ring);
    free(bus);
    return -EAGAIN;
  }
  pthread_setname_np(bus->thread, "gpulab-events");
  *out = bus;
  return 0;
}

void events_close(struct events *bus) {
  pthread_mutex_lock(&bus->lock);
  bus->closed = true;
  struct events_waiter *fired = take_due(bus, clock_mono_s());
  pthread_mutex_unlock(&bus->lock);
  fire(fired);
}

void events_free(struct events *bus) {
  if (!bus) return;
  events_close(bus);
  pthread_mutex_lock(&bus->lock);
  bus->stop = true;
  pthread_cond_signal(&bus->wake);
  pthread_mutex_unlock(&bus->lock);
  pthread_join(bus->thread, NULL);
  pthread_cond_destroy(&bus->wake);
  pthread_mutex_destroy(&bus->lock);
  free(bus->ring);
  free(bus);
}

uint64_t events_publish(struct events *bus, struct event *ev) {
  pthread_mutex_lock(&bus->lock);
  ev->seq = ++bus->last_seq;
  ev->time = now_unix();
  bus->ring[ev->seq % (uint64_t)bus->capacity] = *ev;
  bool any = false;
  for (struct events_waiter *w = bus->waiters; w; w = w->next)
    if (!w->due && (w->job_id == 0 || w->job_id == ev->job_id)) any = w->due = true;
  if (any) pthread_cond_signal(&bus->wake);
  pthread_mutex_unlock(&bus->lock);
  return ev->seq;
}

bool events_closed(struct events *bus) {
  pthread_mutex_lock(&bus->lock);
  bool closed = bus->closed;
  pthread_mutex_unlock(&bus->lock);
  return closed;
}

uint64_t events_last_seq(struct events *bus) {
  pthread_mutex_lock(&bus->lock);
  uint64_t seq = bus->last_seq;
  pthread_mutex_unlock(&bus->lock);
  return seq;
}

int events_read(struct events *bus, uint64_t after, uint64_t job_id, struct event *out, int max,
                uint64_t *next, bool *lost) {
  int n = 0;
  pthread_mutex_lock(&bus->lock);
  uint64_t oldest = bus->last_seq > (uint64_t)bus->capacity
                        ? bus->last_seq - (uint64_t)bus->capacity + 1
                        : 1;
  *lost = after + 1 < oldest;
  uint64_t seq = after + 1 < oldest ? oldest : after + 1;
  for (; seq <= bus->last_seq && n < max; seq++) {
    const struct event *ev = &bus->ring[seq % (uint64_t)bus->capacity];
    if (job_id == 0 || ev->job_id == job_id) out[n++] = *ev;
  }
  *next = seq - 1;
  pthread_mutex_unlock(&bus->lock);
  return n;
}

void events_wait(struct events *bus, struct events_waiter *w, uint64_t after, uint64_t job_id,
                 double deadline, void (*fn)(void *arg), void *arg) {
  *w = (struct events_waiter){
      .after = after, .job_id = job_id, .deadline = deadline, .fn = fn, .arg = arg};
  pthread_mutex_lock(&bus->lock);
  if (bus->closed) { /* fire here, so nothing is pending once the bus is closed */
    pthread_mutex_unlock(&bus->lock);
    fn(arg);
    return;
  }
  /* Already something newer for it? Then it is due at once. */
  uint64_t oldest = bus->last_seq > (uint64_t)bus->capacity
                        ? bus->last_seq - (uint64_t)bus->capacity + 1
                        : 1;
  for (uint64_t seq = after + 1 < oldest ? oldest : after + 1; seq <= bus->last_seq && !w->due;
       seq++)
    if (job_id == 0 || bus->ring[seq % (uint64_t)bus->capacity].job_id == job_id) w->due = true;
  if (after + 1 < oldest) w->due = true; /* lost events: let the reader find out */
  w->next = bus->waiters;
  bus->waiters = w;
  pthread_cond_signal(&bus->wake);
  pthread_mutex_unlock(&bus->lock);
}
