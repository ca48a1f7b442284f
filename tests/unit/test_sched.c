/* The engine's parts that need no backend: fair queueing, the exclusivity gate,
 * and the event ring with its waiters. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "server/engine/engine.h"
#include "server/engine/events.h"
#include "server/engine/gate.h"
#include "server/engine/sched.h"
#include "tests/runner.h"

static struct sched_item items[16];

static void push(struct sched *s, const char *client, int i, int priority) {
  items[i] = (struct sched_item){.priority = priority, .seq = (uint64_t)i};
  sched_push(s, 0, sched_client(s, client), &items[i]);
}

static int pop(struct sched *s) {
  struct sched_item *it = sched_pop(s, 0);
  return it ? (int)(it - items) : -1;
}

static void test_round_robin(void) {
  struct sched *s;
  CHECK_INT_EQ(sched_new(1, &s), 0);
  /* flood: 6 jobs; quiet: 2 jobs submitted after the flood. */
  for (int i = 0; i < 6; i++) push(s, "flood", i, 0);
  push(s, "quiet", 6, 0);
  push(s, "quiet", 7, 0);
  int order[8];
  for (int i = 0; i < 8; i++) order[i] = pop(s);
  CHECK_INT_EQ(order[0], 0);
  CHECK_INT_EQ(order[1], 6); /* quiet gets its turn before flood's second job */
  CHECK_INT_EQ(order[2], 1);
  CHECK_INT_EQ(order[3], 7);
  CHECK_INT_EQ(order[4], 2);
  CHECK_INT_EQ(order[5], 3);
  CHECK_INT_EQ(order[7], 5);
  CHECK_INT_EQ(pop(s), -1); /* all 8 served */
  sched_free(s);
}

static void test_priority_and_remove(void) {
  struct sched *s;
  CHECK_INT_EQ(sched_new(1, &s), 0);
  push(s, "a", 0, 0);
  push(s, "a", 1, 5);
  push(s, "a", 2, 5);
  push(s, "a", 3, -1);
  sched_remove(s, &items[2]);
  CHECK_INT_EQ(pop(s), 1); /* higher priority first, then first come */
  CHECK_INT_EQ(pop(s), 0);
  CHECK_INT_EQ(pop(s), 3);
  CHECK_INT_EQ(pop(s), -1);
  struct sched_client *c = sched_client(s, "a");
  sched_pending_add(c, 3);
  CHECK_INT_EQ(sched_pending(c), 3);
  CHECK(sched_client(s, "a") == c);
  sched_free(s);
}

struct holder {
  struct gate *g;
  atomic_int entered;
};

static void *exclusive_holder(void *arg) {
  struct holder *h = arg;
  gate_enter(h->g, true, NULL, NULL);
  atomic_store(&h->entered, 1);
  gate_leave(h->g, true);
  return NULL;
}

static void test_queues(void) {
  struct sched *s;
  CHECK_INT_EQ(sched_new(2, &s), 0);
  struct sched_client *a = sched_client(s, "a");
  items[0] = (struct sched_item){.seq = 0};
  items[1] = (struct sched_item){.seq = 1};
  sched_push(s, 1, a, &items[0]);
  sched_push(s, 0, a, &items[1]);
  CHECK_INT_EQ(sched_queued(s, 0), 1);
  CHECK_INT_EQ(sched_queued(s, 1), 1);
  CHECK(sched_pop(s, 1) == &items[0]); /* each device serves its own queue */
  CHECK(sched_pop(s, 1) == NULL);
  sched_remove(s, &items[1]);
  CHECK(sched_pop(s, 0) == NULL);
  CHECK_INT_EQ(sched_queued(s, 0), 0);
  CHECK_INT_EQ(sched_new(0, &s), -EINVAL);
  CHECK_INT_EQ(sched_new(SCHED_MAX_QUEUES + 1, &s), -EINVAL);
  sched_free(s);
}

static bool always_stop(void *arg) { return true; }

static void test_gate(void) {
  struct gate *g;
  CHECK_INT_EQ(gate_new(&g), 0);
  /* Alone: not contended. */
  struct gate_window w;
  gate_enter(g, false, NULL, NULL);
  gate_window_open(g, &w);
  CHECK(!gate_window_close(g, &w));
  /* Someone else enters during the window: contended. */
  gate_window_open(g, &w);
  gate_enter(g, false, NULL, NULL);
  gate_leave(g, false);
  CHECK(gate_window_close(g, &w));
  /* Someone else already inside when it opens: contended. */
  gate_enter(g, false, NULL, NULL);
  gate_window_open(g, &w);
  gate_leave(g, false);
  CHECK(gate_window_close(g, &w));
  /* An exclusive request waits for the shared holder to leave. */
  struct holder h = {.g = g};
  pthread_t t;
  pthread_create(&t, NULL, exclusive_holder, &h);
  usleep(50 * 1000);
  CHECK_INT_EQ(atomic_load(&h.entered), 0);
  gate_leave(g, false);
  pthread_join(t, NULL);
  CHECK_INT_EQ(atomic_load(&h.entered), 1);
  /* A request told to stop gives up instead of waiting for the holder. */
  gate_enter(g, true, NULL, NULL);
  CHECK_INT_EQ(gate_enter(g, false, always_stop, NULL), -ECANCELED);
  CHECK_INT_EQ(gate_enter(g, true, always_stop, NULL), -ECANCELED);
  gate_leave(g, true);
  CHECK_INT_EQ(gate_enter(g, false, always_stop, NULL), 0); /* free: granted */
  gate_leave(g, false);
  gate_free(g);
}

/* Two holders taking exclusive turns back to back, TURNS each of 1 ms unless told they
 * are done: harder than the engine's jobs, which pass through a shared hold between
 * their timed windows. */
enum { TURNS = 1000 };
struct turns {
  struct gate *g;
  atomic_int entries; /* exclusive entries so far */
  atomic_bool done;
};

static void *taking_turns(void *arg) {
  struct turns *t = arg;
  for (int i = 0; i < TURNS && !atomic_load(&t->done); i++) {
    gate_enter(t->g, true, NULL, NULL);
    atomic_fetch_add(&t->entries, 1);
    usleep(1000);
    gate_leave(t->g, true);
  }
  return NULL;
}

/* An exclusive request that waits until told to quit. */
struct quitter {
  struct gate *g;
  atomic_bool quit;
  int rc;
};

static bool told_to_quit(void *arg) { return atomic_load(&((struct quitter *)arg)->quit); }

static void *quitting(void *arg) {
  struct quitter *q = arg;
  q->rc = gate_enter(q->g, true, told_to_quit, q);
  return NULL;
}

/* Requests are served in the order they came: a shared request (a small job's setup)
 * behind two exclusive holders taking turns waits for the few already queued (a
 * handful of turns, more only if this thread is not scheduled), not until they stop
 * asking; nor does a third exclusive request. */
static void test_gate_turns(void) {
  struct turns t = {0};
  CHECK_INT_EQ(gate_new(&t.g), 0);
  pthread_t a, b;
  pthread_create(&a, NULL, taking_turns, &t);
  pthread_create(&b, NULL, taking_turns, &t);
  while (atomic_load(&t.entries) < 10) usleep(1000);
  for (int i = 0; i < 2; i++) {
    bool exclusive = i == 1;
    gate_enter(t.g, exclusive, NULL, NULL);
    CHECK(atomic_load(&t.entries) < TURNS); /* neither has stopped asking */
    gate_leave(t.g, exclusive);
  }
  atomic_store(&t.done, true);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  /* A request that gives up leaves the line: the one queued behind it gets in. */
  struct quitter q = {.g = t.g};
  struct holder h = {.g = t.g};
  pthread_t tq, th;
  gate_enter(t.g, true, NULL, NULL);
  pthread_create(&tq, NULL, quitting, &q);
  usleep(20 * 1000);
  pthread_create(&th, NULL, exclusive_holder, &h);
  usleep(20 * 1000);
  atomic_store(&q.quit, true);
  pthread_join(tq, NULL);
  CHECK_INT_EQ(q.rc, -ECANCELED);
  gate_leave(t.g, true);
  pthread_join(th, NULL);
  CHECK_INT_EQ(atomic_load(&h.entered), 1);
  /* Shared requests in a row hold it together. */
  CHECK_INT_EQ(gate_enter(t.g, false, always_stop, NULL), 0);
  CHECK_INT_EQ(gate_enter(t.g, false, always_stop, NULL), 0);
  gate_leave(t.g, false);
  gate_leave(t.g, false);
  gate_free(t.g);
}

static atomic_int fired;
static void on_event(void *arg) { atomic_fetch_add(&fired, 1); }

static void test_events(void) {
  struct events *bus;
  CHECK_INT_EQ(events_new(4, &bus), 0);
  struct event ev = {.job_id = 7, .kind = EVENT_STATE};
  CHECK_INT_EQ(events_publish(bus, &ev), 1);
  ev.job_id = 8;
  CHECK_INT_EQ(events_publish(bus, &ev), 2);
  struct event out[8];
  uint64_t next;
  bool lost;
  CHECK_INT_EQ(events_read(bus, 0, 0, out, 8, &next, &lost), 2);
  CHECK(!lost);
  CHECK_INT_EQ(next, 2);
  CHECK_INT_EQ(events_read(bus, 0, 8, out, 8, &next, &lost), 1);
  CHECK_INT_EQ(out[0].job_id, 8);
  /* A waiter for job 9 ignores job 8's events and fires on job 9's. */
  struct events_waiter w;
  events_wait(bus, &w, 2, 9, engine_now_mono() + 60, on_event, NULL);
  ev.job_id = 8;
  events_publish(bus, &ev);
  usleep(20 * 1000);
  CHECK_INT_EQ(atomic_load(&fired), 0);
  ev.job_id = 9;
  events_publish(bus, &ev);
  for (int i = 0; i < 200 && !atomic_load(&fired); i++) usleep(1000);
  CHECK_INT_EQ(atomic_load(&fired), 1);
  /* A deadline fires a waiter with nothing new. */
  events_wait(bus, &w, events_last_seq(bus), 0, engine_now_mono() + 0.02, on_event, NULL);
  for (int i = 0; i < 500 && atomic_load(&fired) < 2; i++) usleep(1000);
  CHECK_INT_EQ(atomic_load(&fired), 2);
  /* The ring keeps 4: older events are reported lost. */
  for (int i = 0; i < 6; i++) events_publish(bus, &ev);
  CHECK_INT_EQ(events_read(bus, 0, 0, out, 8, &next, &lost), 4);
  CHECK(lost);
  /* Closing fires pending waiters, and later ones at once. */
  events_wait(bus, &w, events_last_seq(bus), 0, engine_now_mono() + 600, on_event, NULL);
  events_close(bus);
  CHECK_INT_EQ(atomic_load(&fired), 3);
  events_wait(bus, &w, events_last_seq(bus), 0, engine_now_mono() + 600, on_event, NULL);
  CHECK_INT_EQ(atomic_load(&fired), 4);
  events_free(bus);
}

static const struct test_case cases[] = {
    TEST(test_round_robin),
    TEST(test_priority_and_remove),
    TEST(test_queues),
    TEST(test_gate),
    TEST(test_gate_turns),
    TEST(test_events),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
