/* The service's routes: GET /device and /devices (what each device is and holds),
 * /health (200 or 503, with the jobs per state and the store), /metrics (Prometheus)
 * and /me (who gpulabd takes the requester for). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/encode.h"
#include "server/http/metrics.h"
#include "server/http/routes.h"
#include "server/service/job_json.h"

/* The first device, and how many there are. */
enum MHD_Result route_device(struct request *r, const struct route_args *a) {
  json_t *o = device_json(r->srv->engine, 0);
  json_object_set_new(o, "device_count", json_integer(engine_device_count(r->srv->engine)));
  return respond_json(r, 200, o);
}

/* Each of list's devices said to be node's, at advertise; appended to out. */
static void add_node_devices(json_t *out, json_t *list, const char *node, const char *advertise) {
  size_t i;
  json_t *d;
  json_array_foreach(list, i, d) {
    json_object_set_new(d, "node", json_string(node));
    json_object_set_new(d, "advertise", json_string(advertise));
    json_array_append(out, d);
  }
}

/* A fleet's devices: this node's as they are now, then each other live node's as it
 * said at its last renewal (fleet_nodes). */
static json_t *devices_of_fleet(const struct service *svc, const char *self_name, json_t *local) {
  json_t *all = json_array();
  struct fleet_node nodes[FLEET_NODES_MAX];
  int n = service_fleet_nodes(svc, nodes, FLEET_NODES_MAX);
  for (int i = 0; i < n; i++) {
    bool self = strcmp(nodes[i].name, self_name) == 0;
    json_t *list = self ? json_incref(local) : json_loads(nodes[i].devices, 0, NULL);
    if (json_is_array(list)) add_node_devices(all, list, nodes[i].name, nodes[i].advertise);
    json_decref(list);
    free(nodes[i].devices);
  }
  return all;
}

enum MHD_Result route_devices(struct request *r, const struct route_args *a) {
  json_t *list = devices_json(r->srv->engine);
  json_t *o = json_pack("{s:o}", "devices", list);
  struct service_fleet f;
  if (service_fleet_status(r->srv->opts.service, &f))
    json_object_set_new(o, "fleet", devices_of_fleet(r->srv->opts.service, f.node, list));
  return respond_json(r, 200, o);
}

/* Prometheus' text format, version 0.0.4. */
enum MHD_Result route_metrics(struct request *r, const struct route_args *a) {
  size_t len = 0;
  char *text = r->srv->opts.metrics ? metrics_render(r->srv->opts.metrics, r->srv->engine,
                                                     r->srv->opts.service, &len)
                                    : NULL;
  if (!text) return respond_fail(r, 503, "unavailable", NULL, "metrics are not available");
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          "text/plain; version=0.0.4; charset=utf-8");
  return request_queue(r, 200, resp, len);
}

/* The store's part of /health: null without one; a failing store makes it unhealthy. */
static json_t *health_of_store(const struct service *svc, bool *ok) {
  struct store_status st;
  if (!service_store_status(svc, &st)) return json_null();
  bool space = st.error == -ENOSPC || st.error == -EFBIG || st.error == -EDQUOT;
  json_t *error = st.writable ? json_null()
                              : json_pack("{s:s,s:s,s:s}", "code",
                                          space ? "insufficient_storage" : "store_unavailable",
                                          "errno", strerror(-st.error), "message", st.message);
  *ok = *ok && st.writable;
  return json_pack(
      "{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:o}", "status", st.writable ? "ok" : "failing", "backend",
      st.backend, "durability", st.durability, "bytes", (json_int_t)st.file_bytes, "used_bytes",
      (json_int_t)st.used_bytes, "max_bytes", (json_int_t)st.max_bytes, "pruned_jobs",
      (json_int_t)st.pruned_jobs, "write_errors", (json_int_t)st.write_errors, "error", error);
}

/* A fleet's node's part of /health: a fenced one (its lease late) is unhealthy. */
static json_t *health_of_fleet(const struct service *svc, bool *ok) {
  struct service_fleet f;
  if (!service_fleet_status(svc, &f)) return NULL;
  *ok = *ok && !f.fenced;
  return json_pack("{s:s,s:s,s:f}", "node", f.node, "status", f.fenced ? "fenced" : "ok",
                   "lease_age_s", f.lease_age_s);
}

enum MHD_Result route_health(struct request *r, const struct route_args *a) {
  struct engine *e = r->srv->engine;
  struct engine_counts c;
  engine_counts(e, &c);
  bool ok = engine_healthy(e);
  json_t *jobs = json_object(), *store = health_of_store(r->srv->opts.service, &ok);
  for (int s = 0; s < JOB_STATE_COUNT; s++)
    json_object_set_new(jobs, job_state_name((enum job_state)s), json_integer(c.by_state[s]));
  json_t *fleet = health_of_fleet(r->srv->opts.service, &ok);
  json_t *health = json_pack("{s:s,s:s,s:f,s:I,s:o,s:o}", "status", ok ? "ok" : "unhealthy",
                             "backend", backend_name(engine_device(e, 0)), "uptime_s",
                             engine_now_mono() - r->srv->started_mono, "jobs_submitted",
                             (json_int_t)c.submitted, "jobs", jobs, "store", store);
  if (fleet) json_object_set_new(health, "fleet", fleet);
  return respond_json(r, ok ? 200 : 503, health);
}

/* Who gpulabd takes the requester for, and by what. */
enum MHD_Result route_me(struct request *r, const struct route_args *a) {
  char client[64];
  request_client(r, client, sizeof client);
  const char *by = r->who ? "token" : r->local ? "unix_socket" : "address";
  return respond_json(
      r, 200,
      json_pack("{s:s,s:s,s:b}", "client", client, "by", by, "sees_all", request_sees_all(r)));
}
