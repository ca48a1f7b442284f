/* The event stream behind Server-Sent Events: a bounded ring of job events (state
 * changes and progress after each timed batch), and one-shot waiters that fire,
 * from the bus's own thread, when a matching newer event is published or their
 * deadline passes. Thread-safe; publishing never blocks on a listener. */
#ifndef GPULAB_EVENTS_H
#define GPULAB_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

enum event_kind { EVENT_STATE, EVENT_PROGRESS };

struct event {
  uint64_t seq; /* set by events_publish: 1, 2, ... */
  double time;  /* unix seconds, set by events_publish */
  uint64_t job_id;
  enum event_kind kind;
  char job_type[12];
  char state[12]; /* EVENT_STATE: the new state's name */
  char client[64];
  char error_code[32]; /* EVENT_STATE into failed/canceled */
  bool remote;         /* a job of a fleet's other node (durable_fleet), not this one's */
  char node[64];       /* remote: the node that holds it ("": none yet, queued for all) */
  int run, batch;      /* EVENT_PROGRESS: which run and batch finished */
  double sample_ms;    /* EVENT_PROGRESS: that batch's sample */
};

struct events;

/* Keeps the last `capacity` events. Returns 0 or -ENOMEM / -EAGAIN (thread). */
int events_new(int capacity, struct events **out);
/* Fires every waiter, then frees. NULL is a no-op. */
void events_free(struct events *bus);

/* Appends ev (its seq and time are set) and returns its seq. */
uint64_t events_publish(struct events *bus, struct event *ev);
uint64_t events_last_seq(struct events *bus);

/* Copies up to max events with seq > after (of job_id only, unless 0) into out and
 * returns how many. *next is where to continue. *lost is set when events after
 * `after` had already left the ring. */
int events_read(struct events *bus, uint64_t after, uint64_t job_id, struct event *out, int max,
                uint64_t *next, bool *lost);

/* Calls fn(arg) once, from the bus's thread (or the caller's, once closed): when an event with seq > after (of
 * job_id, unless 0) is published, when the monotonic clock passes deadline, or at
 * events_close. The caller owns w and keeps it alive until fn ran. */
struct events_waiter {
  struct events_waiter *next;
  uint64_t after, job_id;
  double deadline;
  bool due;
  void (*fn)(void *arg);
  void *arg;
};
void events_wait(struct events *bus, struct events_waiter *w, uint64_t after, uint64_t job_id,
                 double deadline, void (*fn)(void *arg), void *arg);
/* Listeners that want other nodes' events too (a fleet's: durable_fleet publishes
 * them only while there is one): every-job streams and streams of jobs held
 * elsewhere. on_change(arg) (NULL: none) is called when the count leaves or reaches
 * 0, under the bus's lock: it must be quick and never call the bus. */
void events_on_listeners(struct events *bus, void (*on_change)(void *arg), void *arg);
void events_listener_add(struct events *bus);
void events_listener_remove(struct events *bus);
int events_listeners(struct events *bus);
/* Fires every waiter now, and any added later at once (from the caller's thread).
 * Idempotent. */
void events_close(struct events *bus);
bool events_closed(struct events *bus);

#endif
