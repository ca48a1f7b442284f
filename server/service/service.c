/* The service's answers without a store or a fleet, and the calls into them. */
#include "server/service/service.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/service/durable.h"

int service_writable(const struct service *s) { return s->store ? store_check(s->store) : 0; }

bool service_store_status(const struct service *s, struct store_status *out) {
  memset(out, 0, sizeof *out);
  if (!s->store) return false;
  store_status(s->store, out);
  return true;
}

uint64_t service_ticket(const struct service *s) { return s->store ? store_ticket(s->store) : 0; }

int service_sync(const struct service *s, uint64_t ticket) {
  return s->store && ticket ? store_sync(s->store, ticket) : 0;
}

void service_await(const struct service *s, uint64_t ticket) {
  if (s->store) store_await(s->store, ticket);
}

void service_flush(const struct service *s) {
  if (s->store) store_flush(s->store);
}

void service_hold(const struct service *s) {
  if (s->store) store_hold(s->store);
}

void service_release(const struct service *s) {
  if (s->store) store_release(s->store);
}

char *service_job_record(const struct service *s, uint64_t id) {
  return s->store ? store_record(s->store, id) : NULL;
}

int service_jobs_page(const struct service *s, uint64_t before_id, const char *state,
                      const char *type, const char *client, int limit,
                      void (*fn)(void *arg, uint64_t id, const char *record), void *arg) {
  if (!s->store) return -ENOENT;
  return store_list(s->store, before_id, state, type, client, limit, fn, arg);
}

int service_cancel_stored(const struct service *s, uint64_t id, const char *record,
                          json_t **canceled) {
  return s->store ? durable_cancel(s->store, id, record, canceled) : -ENOENT;
}

char *service_accepted_text(const struct service *s, const struct job_view *v, uint64_t ticket) {
  return durable_accepted_text(s->store, v, ticket);
}

bool service_shared(const struct service *s) { return s->store && store_shared(s->store); }

int service_job_elsewhere(const struct service *s, uint64_t id, char *url, size_t url_len) {
  return s->store ? store_job_elsewhere(s->store, id, url, url_len) : -ENOENT;
}

int service_buffer_home(const struct service *s, uint64_t id, struct store_buffer_home *home) {
  return s->store ? store_buffer_elsewhere(s->store, id, home) : -ENOENT;
}

struct sweeps_read {
  struct sweep_copy *out;
  int n;
};

static void add_sweep(void *arg, uint64_t id, const char *client, double created,
                      const char *record) {
  struct sweeps_read *p = arg;
  if (durable_sweep_read(id, client, created, record, &p->out[p->n]) == 0) p->n++;
}

int service_sweeps_page(const struct service *s, uint64_t before_id, const char *client, int limit,
                        struct sweep_copy *out) {
  if (!service_shared(s)) return -ENOTSUP;
  struct sweeps_read page = {out, 0};
  int rc = store_sweeps_page(s->store, before_id, client, limit, add_sweep, &page);
  return rc < 0 ? rc : page.n;
}

int service_sweep_put(const struct service *s, uint64_t id, const char *client, double created,
                      json_t *desc, const uint64_t *job_ids, int n_jobs) {
  if (!s->store) return 0;
  json_t *jobs = json_array();
  for (int i = 0; i < n_jobs; i++)
    json_array_append_new(jobs, json_integer((json_int_t)job_ids[i]));
  json_t *o = json_pack("{s:O,s:o}", "desc", desc, "jobs", jobs);
  char *record = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  struct store_row row = {
      .table = STORE_SWEEPS, .id = id, .client = client, .created = created, .record = record};
  int rc = record ? store_put(s->store, &row) : -ENOMEM;
  free(record);
  return rc;
}

bool service_fleet_status(const struct service *s, struct service_fleet *out) {
  memset(out, 0, sizeof *out);
  if (!s->fleet) return false;
  out->node = fleet_node(s->fleet);
  out->fenced = fleet_fenced(s->fleet);
  out->lease_age_s = fleet_lease_age(s->fleet);
  out->n_queued = fleet_queued(s->fleet, out->queued, FLEET_QUEUED_MAX);
  return true;
}

int service_fleet_nodes(const struct service *s, struct fleet_node *out, int max) {
  return s->fleet ? fleet_nodes(s->fleet, out, max) : 0;
}
