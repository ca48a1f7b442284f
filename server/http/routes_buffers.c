/* The buffer routes: upload a .npy (float32, float64 kept as float32, float16, int32,
 * uint32 or int8; C or Fortran order) or raw values (?shape=, ?dtype=; bfloat16 too),
 * list, download (.npy or raw, as Accept asks), delete. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/npy.h"
#include "server/http/auth.h"
#include "server/http/routes.h"

#define LIST_LIMIT_MAX 1000

_Static_assert((int)NPY_FLOAT32 == EXP_DTYPE_F32 && (int)NPY_UINT32 == EXP_DTYPE_U32 &&
                   (int)NPY_FLOAT16 == EXP_DTYPE_F16 && (int)NPY_BFLOAT16 == EXP_DTYPE_BF16 &&
                   (int)NPY_INT32 == EXP_DTYPE_I32 && (int)NPY_INT8 == EXP_DTYPE_I8 &&
                   NPY_DTYPE_COUNT == EXP_DTYPE_COUNT,
               "npy.h numbers its dtypes as experiment.h");

static json_t *buffer_json(const struct engine_buffer_view *v) {
  json_t *shape = json_array();
  for (int d = 0; d < v->shape.ndim; d++)
    json_array_append_new(shape, json_integer(v->shape.dims[d]));
  const struct engine_buffer_origin *o = &v->origin;
  json_t *from = o->converted
                     ? json_pack("{s:s,s:b,s:f}", "dtype", o->dtype, "fortran_order",
                                 o->fortran_order, "max_rounding_error", o->max_rounding_error)
                     : json_null();
  return json_pack("{s:I,s:o,s:s,s:I,s:s,s:o,s:o,s:i,s:i,s:o}", "id", (json_int_t)v->id, "shape",
                   shape, "dtype", exp_dtype_name(v->dtype), "bytes", (json_int_t)v->bytes,
                   "client", v->client, "created_at", time_json(v->created_at), "job",
                   v->producer_job ? json_integer((json_int_t)v->producer_job) : json_null(),
                   "in_use", v->in_use, "device", v->device, "converted_from", from);
}

/* Whether the request's Content-Type is application/x-npy (parameters aside). */
static bool says_npy(struct request *r) {
  const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_CONTENT_TYPE);
  static const char npy[] = "application/x-npy";
  return ct && strncasecmp(ct, npy, sizeof npy - 1) == 0 && strchr("; \t", ct[sizeof npy - 1]);
}

static enum MHD_Result buffers_post(struct request *r) {
  enum MHD_Result refused;
  if (request_store_refuses(r, &refused)) return refused; /* its id could not be recorded */
  struct npy_array arr;
  char why[320];
  int raw;
  const char *shape = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "shape"),
             *dtype = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "dtype");
  const char *body = r->body ? r->body : "";
  if (r->body_form_upload) { /* curl's default type: a .npy sent with curl -d, or without -H */
    int rc = npy_form_upload(body, r->body_len, why, sizeof why);
    if (rc == -EINVAL) return respond_fail(r, 400, "invalid_npy", NULL, "%s", why);
    return respond_fail(r, 415, "unsupported_media_type", NULL, "%s",
                        rc == 0 ? why
                                : "send a .npy file (Content-Type: application/x-npy) or raw "
                                  "float32 (application/octet-stream with ?shape=m,n), got "
                                  "'application/x-www-form-urlencoded'");
  }
  if (npy_upload(body, r->body_len, shape, dtype, says_npy(r), &arr, &raw, why, sizeof why)) {
    bool dtype_bad = dtype && npy_dtype_from_name(dtype) < 0;
    return respond_fail(r, 400, raw ? "invalid_raw" : "invalid_npy",
                        dtype_bad || (!raw && dtype) ? "dtype"
                        : raw                        ? "shape"
                                                     : NULL,
                        "%s", why);
  }
  struct exp_shape s = {arr.ndim, {arr.shape[0], arr.ndim == 2 ? arr.shape[1] : 0}};
  char client[64];
  struct engine_error err;
  struct api_error aerr;
  uint64_t id;
  long long device;
  if (query_int(r, "device", 0, engine_device_count(r->srv->engine) - 1, 0, &device, &aerr))
    return respond_error(r, &aerr);
  /* float64 or Fortran order: converted to C order (float64 to float32) first, and
   * recorded. */
  struct engine_buffer_origin origin = {0};
  void *converted = NULL;
  if (!arr.data) {
    struct npy_conversion conv;
    converted = malloc(arr.count * (size_t)npy_dtype_bytes(arr.dtype));
    if (!converted)
      return respond_fail(r, 503, "out_of_memory", NULL, "no memory to convert %" PRIu64 " values",
                          arr.count);
    if (npy_convert(&arr, converted, &conv, why, sizeof why)) {
      free(converted);
      return respond_fail(r, 400, "invalid_npy", NULL, "%s", why);
    }
    origin = (struct engine_buffer_origin){.converted = true,
                                           .fortran_order = conv.from_fortran_order,
                                           .max_rounding_error = conv.max_rounding_error};
    snprintf(origin.dtype, sizeof origin.dtype, "%s", conv.from_dtype);
    arr.data = converted;
  }
  int rc = engine_buffer_upload(r->srv->engine, arr.data, &s, (enum exp_dtype)arr.dtype, &origin,
                                request_client(r, client, sizeof client), (int)device,
                                r->who ? r->who->max_buffer_bytes : 0, &id, &err);
  free(converted);
  if (rc == -EFBIG) return respond_fail(r, 413, "buffer_too_large", NULL, "%s", err.message);
  if (rc == -EDQUOT) return respond_fail(r, 413, "quota_exceeded", NULL, "%s", err.message);
  if (rc && strcmp(err.field, "store") == 0)
    return respond_storage(r, rc); /* its id not recorded */
  if (rc)
    return respond_fail(r, 503, "upload_failed", NULL, "cannot store the buffer: %s", err.message);
  struct engine_buffer_view v;
  if (engine_buffer_get(r->srv->engine, id, &v)) /* deleted at once by someone else */
    return respond_fail(r, 404, "buffer_not_found", "id", "buffer %" PRIu64 " is gone", id);
  /* A fleet's node: where it lives is in the store before the answer (store.h). */
  int stored = service_sync(r->srv->opts.service, v.record_ticket);
  if (stored) {
    engine_buffer_delete(r->srv->engine, id);
    return respond_storage(r, stored);
  }
  snprintf(r->location, sizeof r->location, "/buffers/%" PRIu64, id);
  return respond_json(r, 201, buffer_json(&v));
}

static enum MHD_Result buffers_list(struct request *r) {
  struct api_error err;
  long long limit, cursor;
  if (query_int(r, "limit", 1, LIST_LIMIT_MAX, 50, &limit, &err) ||
      query_int(r, "cursor", 1, INT64_MAX, 0, &cursor, &err))
    return respond_error(r, &err);
  struct engine_buffer_view *views = malloc(((size_t)limit + 1) * sizeof *views);
  if (!views) return respond_json(r, 500, NULL);
  int n = engine_buffers_list(r->srv->engine, (uint64_t)cursor,
                              request_sees_all(r) ? NULL : r->client, views, (int)limit + 1);
  json_t *list = json_array();
  for (int i = 0; i < n && i < limit; i++) json_array_append_new(list, buffer_json(&views[i]));
  json_t *next = n > limit ? json_integer((json_int_t)views[limit - 1].id) : json_null();
  free(views);
  return respond_json(r, 200, json_pack("{s:o,s:o}", "buffers", list, "next_cursor", next));
}

/* A qvalue of Accept ("0.5", "1", "0.125"; RFC 9110 12.4.2) in thousandths;
 * anything else counts as 1. */
static int qvalue(const char *p, size_t n) {
  if (n == 0 || n > 5 || (p[0] != '0' && p[0] != '1') || (n > 1 && p[1] != '.')) return 1000;
  int q = (p[0] - '0') * 1000, scale = 100;
  for (size_t i = 2; i < n; i++, scale /= 10) {
    if (p[i] < '0' || p[i] > '9') return 1000;
    q += (p[i] - '0') * scale;
  }
  return q > 1000 ? 1000 : q;
}

/* How much the Accept header value wants media type ("application/x-npy"), in
 * thousandths: the q of its most specific matching range (type/subtype, then
 * type slash star, then star slash star); 0 when none matches; 1000 without Accept. */
static int accept_q(const char *accept, const char *type) {
  if (!accept || !*accept) return 1000;
  size_t top = (size_t)(strchr(type, '/') - type), type_len = strlen(type);
  int best = 0, q_best = 0;
  for (const char *p = accept; *p;) {
    while (*p == ' ' || *p == '\t' || *p == ',') p++;
    size_t n = strcspn(p, ",;"), len = n;
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
    int rank = len == 3 && strncmp(p, "*/*", 3) == 0                                       ? 1
               : len == top + 2 && strncasecmp(p, type, top + 1) == 0 && p[top + 1] == '*' ? 2
               : len == type_len && strncasecmp(p, type, len) == 0                         ? 3
                                                                                           : 0;
    int q = 1000;
    for (p += n; *p == ';';) {
      p++;
      while (*p == ' ' || *p == '\t') p++;
      size_t m = strcspn(p, ",;"), v = m;
      while (v && (p[v - 1] == ' ' || p[v - 1] == '\t')) v--;
      if (v >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') q = qvalue(p + 2, v - 2);
      p += m;
    }
    if (rank > best) {
      best = rank;
      q_best = q;
    }
  }
  return best ? q_best : 0;
}

/* GET: the buffer as a .npy file that numpy.load reads, or as raw little-endian
 * values when Accept prefers application/octet-stream (a tie goes to .npy); the
 * shape is in Gpulab-Shape and the dtype in Gpulab-Dtype either way. The values are
 * the buffer's dtype (a histogram's kept counts: '<u4' in the .npy), bit for bit as
 * uploaded or as the job wrote them. bfloat16 has no .npy descr: raw only. 406 for an
 * Accept that takes neither. */
static enum MHD_Result download(struct request *r, const struct engine_buffer_view *v) {
  const char *accept = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_ACCEPT);
  int q_npy = accept_q(accept, "application/x-npy"),
      q_raw = accept_q(accept, "application/octet-stream");
  if (q_npy == 0 && q_raw == 0)
    return respond_fail(
        r, 406, "not_acceptable", NULL,
        "a buffer is sent as application/x-npy (a .npy file) or application/octet-stream "
        "(raw little-endian values, its shape in Gpulab-Shape); Accept: '%.100s' takes neither",
        accept);
  bool raw = q_raw > q_npy;
  if (!raw && v->dtype == EXP_DTYPE_BF16) {
    if (q_raw == 0)
      return respond_fail(r, 406, "not_acceptable", NULL,
                          "buffer %" PRIu64
                          " is bfloat16, which a .npy cannot say: it is sent "
                          "as application/octet-stream (raw little-endian) only",
                          v->id);
    raw = true;
  }
  int64_t dims[2] = {v->shape.dims[0], v->shape.dims[1]};
  size_t header = raw ? 0 : npy_header_size(v->shape.ndim, dims);
  char *file = malloc(header + v->bytes);
  if (!file)
    return respond_fail(r, 503, "out_of_memory", NULL, "no memory for %" PRIu64 " bytes", v->bytes);
  if (!raw) npy_write_header(file, header, v->shape.ndim, dims, (enum npy_dtype)v->dtype);
  struct engine_error err;
  /* A job's output is copied once its producer's fence has passed on the device. */
  int rc = engine_buffer_read(r->srv->engine, v->id, file + header, &err);
  if (rc) {
    free(file);
    return rc == -ENOENT
               ? respond_fail(r, 404, "buffer_not_found", "id", "buffer %" PRIu64 " is gone", v->id)
               : respond_fail(r, 503, "download_failed", NULL, "%s", err.message);
  }
  struct MHD_Response *resp = MHD_create_response_from_buffer(header + v->bytes, file,
                                                              MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(file);
    return MHD_NO;
  }
  char disposition[64], shape[48];
  snprintf(disposition, sizeof disposition, "attachment; filename=\"buffer-%" PRIu64 ".%s\"", v->id,
           !raw                        ? "npy"
           : v->dtype == EXP_DTYPE_F32 ? "f32"
                                       : "bin");
  if (v->shape.ndim == 2)
    snprintf(shape, sizeof shape, "%" PRId64 ",%" PRId64, dims[0], dims[1]);
  else
    snprintf(shape, sizeof shape, "%" PRId64, dims[0]);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          raw ? "application/octet-stream" : "application/x-npy");
  MHD_add_response_header(resp, "Content-Disposition", disposition);
  MHD_add_response_header(resp, "Gpulab-Shape", shape);
  MHD_add_response_header(resp, "Gpulab-Dtype", exp_dtype_name(v->dtype));
  MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept");
  return request_queue(r, 200, resp, header + v->bytes);
}

enum MHD_Result route_buffers(struct request *r, const struct route_args *a) {
  return strcmp(r->method, "POST") == 0 ? buffers_post(r) : buffers_list(r);
}

enum MHD_Result route_buffer(struct request *r, const struct route_args *a) {
  const char *id_text = a->id;
  uint64_t id = 0;
  struct engine_buffer_view v;
  bool parsed = parse_id(id_text, &id),
       here = parsed && engine_buffer_get(r->srv->engine, id, &v) == 0;
  enum MHD_Result sent;
  /* Another node of a fleet made it: the request goes there (or it was lost with it). */
  if (parsed && !here && request_buffer_elsewhere(r, id, "id", &sent)) return sent;
  /* Every id of a previous run answers the same, whoever asks: nothing leaks. */
  if (parsed && !here && id < engine_first_id(r->srv->engine, ENGINE_IDS_BUFFERS))
    return respond_buffer_gone(r, id, "id");
  if (!here || !request_may_see(r, v.client)) /* others' buffers are not found: ids do not leak */
    return respond_fail(r, 404, "buffer_not_found", "id", "no buffer '%.40s'", id_text);
  if (strcmp(r->method, "DELETE") != 0) return download(r, &v);
  int rc = engine_buffer_delete(r->srv->engine, id);
  if (rc == -EBUSY)
    return respond_fail(r, 409, "buffer_in_use", "id",
                        "buffer %" PRIu64 " is read by %d queued, waiting or running job(s)", id,
                        v.in_use);
  if (rc) return respond_fail(r, 404, "buffer_not_found", "id", "no buffer '%.40s'", id_text);
  return respond_json(r, 200, json_pack("{s:I,s:b}", "id", (json_int_t)id, "deleted", 1));
}
