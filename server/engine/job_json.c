/* A job, and a device, as the API shows them. */
#include "server/engine/job_json.h"

#include "api/encode.h"
#include "api/json_scratch.h"
#include "api/json_text.h"

json_t *device_json(struct engine *e, int index) {
  struct backend *b = engine_device(e, index);
  struct backend_device_info info;
  backend_device_info(b, &info);
  json_t *o = api_device_to_json(&info);
  json_object_set_new(o, "ordinal", json_integer(info.index));
  json_object_set_new(o, "index", json_integer(index));
  json_object_set_new(o, "streams", json_integer(backend_lanes(b)));
  json_object_set_new(o, "job_memory_limit_bytes",
                      json_integer((json_int_t)backend_memory_limit(b)));
  json_object_set_new(o, "healthy", json_boolean(backend_healthy(b)));
  return o;
}

json_t *devices_json(struct engine *e) {
  json_t *list = json_array();
  for (int d = 0; d < engine_device_count(e); d++) json_array_append_new(list, device_json(e, d));
  return list;
}

json_t *time_json(double unix_s) {
  if (unix_s <= 0) return json_null();
  char buf[40];
  api_format_time(unix_s, buf, sizeof buf);
  return json_string(buf);
}

json_t *job_json_ended(uint64_t id, const char *record, enum job_state state, const char *code,
                       const char *message) {
  json_t *j = record ? json_loads(record, 0, NULL) : NULL;
  if (!j) j = json_pack("{s:I}", "id", (json_int_t)id);
  json_object_set_new(j, "state", json_string(job_state_name(state)));
  json_object_set_new(j, "finished_at", time_json(engine_now_unix()));
  json_object_set_new(j, "error", json_pack("{s:s,s:s}", "code", code, "message", message));
  return j;
}

static json_t *ms_between(double from, double to) {
  return from > 0 && to > 0 ? json_real((to - from) * 1e3) : json_null();
}

json_t *job_json(const struct job_view *v, bool with_result) {
  json_t *o = json_object();
  json_object_set_new(o, "id", json_integer((json_int_t)v->id));
  json_object_set_new(o, "type", json_string(exp_type_name(v->spec.type)));
  json_object_set_new(o, "state", json_string(job_state_name(v->state)));
  json_object_set_new(o, "client", json_string(v->client));
  json_object_set_new(o, "params", api_spec_to_json(&v->spec));
  json_object_set_new(o, "priority", json_integer(v->priority));
  json_object_set_new(o, "isolation", json_string(v->exclusive ? "exclusive" : "shared"));
  json_object_set_new(o, "dependency", json_string(v->host_sync ? "host" : "event"));
  json_object_set_new(o, "keep_output", json_boolean(v->keep_output));
  if (v->node) json_object_set_new(o, "node", json_string(v->node));
  json_t *parents = json_array();
  for (int i = 0; i < v->n_parents; i++) json_array_append_new(parents, json_integer((json_int_t)v->parents[i]));
  json_object_set_new(o, "depends_on", parents);
  json_object_set_new(o, "created_at", time_json(v->created_at));
  json_object_set_new(o, "started_at", time_json(v->started_at));
  json_object_set_new(o, "issued_at", time_json(v->issued_at));
  json_object_set_new(o, "finished_at", time_json(v->finished_at));
  double queue_end = v->started_at > 0 ? v->started_at : v->finished_at;
  json_object_set_new(o, "queue_ms", ms_between(v->created_at, queue_end));
  json_object_set_new(o, "run_ms", ms_between(v->started_at, v->finished_at));
  json_object_set_new(o, "device", v->device >= 0 ? json_integer(v->device) : json_null());
  json_object_set_new(o, "stream", v->lane >= 0 ? json_integer(v->lane) : json_null());
  if (v->cancel_requested && !job_state_final(v->state))
    json_object_set_new(o, "cancel_requested", json_true());
  struct exp_shape shape;
  exp_output_shape(&v->spec, &shape);
  json_t *dims = json_array();
  for (int d = 0; d < shape.ndim; d++) json_array_append_new(dims, json_integer(shape.dims[d]));
  const struct exp_desc *d = exp_desc(v->spec.type);
  const char *dtype = d && d->out_dtype == EXP_DTYPE_U32 ? "uint32" : "float32";
  json_object_set_new(o, "output", json_pack("{s:o,s:s,s:o}", "shape", dims, "dtype", dtype, "buffer",
                                             v->output_buffer ? json_integer((json_int_t)v->output_buffer)
                                                              : json_null()));
  if (with_result)
    json_object_set_new(o, "result", v->result ? api_result_to_json(&v->spec, v->result) : json_null());
  else if (v->result)
    json_object_set_new(o, "passed", json_boolean(exp_result_passed(v->result)));
  json_object_set_new(o, "error", v->error_code[0] ? json_pack("{s:s,s:s}", "code", v->error_code,
                                                               "message", v->error_message)
                                                   : json_null());
  return o;
}

char *job_text(const struct job_view *v, bool with_result, size_t *len) {
  json_scratch_begin();
  json_t *j = job_json(v, with_result);
  char *text = json_text(j, len); /* NULL j: NULL */
  json_scratch_end(j);
  return text;
}
