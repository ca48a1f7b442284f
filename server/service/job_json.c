/* A job, and a device, as the API shows them. */
#include "server/service/job_json.h"

#include "api/encode.h"
#include "api/json_writer.h"

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
  /* "profile" in a job: replayed here, marked unavailable per run, or refused. */
  char why[192];
  static const char *const how[] = {"replay", "marked_unavailable", "refused"};
  enum backend_profiling p = backend_profiling(b, why, sizeof why);
  json_object_set_new(o, "profiling",
                      json_pack("{s:b,s:s,s:s}", "available", p == BACKEND_PROFILE_REPLAY, "jobs",
                                how[p], "reason", p == BACKEND_PROFILE_REPLAY ? "" : why));
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

static void time_write(struct jw *w, const char *key, double unix_s) {
  if (unix_s <= 0) {
    jw_null(w, key);
    return;
  }
  char buf[40];
  api_format_time(unix_s, buf, sizeof buf);
  jw_string(w, key, buf);
}

static void ms_between(struct jw *w, const char *key, double from, double to) {
  if (from > 0 && to > 0)
    jw_real(w, key, (to - from) * 1e3);
  else
    jw_null(w, key);
}

static void output_write(struct jw *w, const struct job_view *v) {
  if (v->spec.type == EXP_PROBLEM) { /* its runs' outputs are checked where they are made */
    jw_null(w, "output");
    return;
  }
  struct exp_shape shape;
  exp_output_shape(&v->spec, &shape);
  const struct exp_desc *d = exp_desc(v->spec.type);
  jw_object_begin_whole(w, "output");
  jw_array_begin(w, "shape");
  for (int i = 0; i < shape.ndim; i++) jw_integer(w, NULL, shape.dims[i]);
  jw_array_end(w);
  jw_string(w, "dtype", d && d->out_dtype == EXP_DTYPE_U32 ? "uint32" : "float32");
  if (v->output_buffer)
    jw_integer(w, "buffer", (long long)v->output_buffer);
  else
    jw_null(w, "buffer");
  jw_object_end(w);
}

/* The job as job_json shows it, written to w (api/json_writer.h). */
static void job_write(struct jw *w, const struct job_view *v, bool with_result) {
  jw_object_begin(w, NULL);
  jw_integer(w, "id", (long long)v->id);
  jw_string(w, "type", exp_type_name(v->spec.type));
  jw_string(w, "state", job_state_name(v->state));
  jw_string(w, "client", v->client);
  api_spec_write(w, "params", &v->spec);
  jw_integer(w, "priority", v->priority);
  jw_string(w, "isolation", v->exclusive ? "exclusive" : "shared");
  jw_string(w, "dependency", v->host_sync ? "host" : "event");
  jw_bool(w, "keep_output", v->keep_output);
  if (v->node) jw_string(w, "node", v->node);
  jw_array_begin(w, "depends_on");
  for (int i = 0; i < v->n_parents; i++) jw_integer(w, NULL, (long long)v->parents[i]);
  jw_array_end(w);
  time_write(w, "created_at", v->created_at);
  time_write(w, "started_at", v->started_at);
  time_write(w, "issued_at", v->issued_at);
  time_write(w, "finished_at", v->finished_at);
  ms_between(w, "queue_ms", v->created_at, v->started_at > 0 ? v->started_at : v->finished_at);
  ms_between(w, "run_ms", v->started_at, v->finished_at);
  if (v->device >= 0)
    jw_integer(w, "device", v->device);
  else
    jw_null(w, "device");
  if (v->lane >= 0)
    jw_integer(w, "stream", v->lane);
  else
    jw_null(w, "stream");
  if (v->cancel_requested && !job_state_final(v->state)) jw_bool(w, "cancel_requested", true);
  output_write(w, v);
  if (with_result && v->result)
    api_result_write(w, "result", &v->spec, v->result);
  else if (with_result)
    jw_null(w, "result");
  else if (v->result)
    jw_bool(w, "passed", exp_result_passed(v->result));
  if (v->error_code[0]) {
    jw_object_begin_whole(w, "error");
    jw_string(w, "code", v->error_code);
    jw_string(w, "message", v->error_message);
    jw_object_end(w);
  } else {
    jw_null(w, "error");
  }
  jw_object_end(w);
}

json_t *job_json(const struct job_view *v, bool with_result) {
  struct jw w;
  jw_tree_begin(&w);
  job_write(&w, v, with_result);
  return jw_tree_end(&w);
}

/* A tiny job's document is ~1.9 KB; a larger one's buffer grows by doubling. */
#define JOB_TEXT_FIRST_BYTES 4096

char *job_text(const struct job_view *v, bool with_result, size_t *len) {
  struct jw w;
  jw_text_begin(&w, NULL, JOB_TEXT_FIRST_BYTES);
  job_write(&w, v, with_result);
  return jw_text_end(&w, len);
}
