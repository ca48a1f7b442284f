/* The buffer routes: upload a .npy (or raw float32), list, download, delete. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/npy.h"
#include "server/auth.h"
#include "server/http_priv.h"

#define LIST_LIMIT_MAX 1000

static const char *dtype_name(enum exp_dtype d) { return d == EXP_DTYPE_U32 ? "uint32" : "float32"; }

static json_t *buffer_json(const struct engine_buffer_view *v) {
  json_t *shape = json_array();
  for (int d = 0; d < v->shape.ndim; d++) json_array_append_new(shape, json_integer(v->shape.dims[d]));
  return json_pack("{s:I,s:o,s:s,s:I,s:s,s:o,s:o,s:i,s:i}", "id", (json_int_t)v->id, "shape", shape,
                   "dtype", dtype_name(v->dtype), "bytes", (json_int_t)v->bytes, "client", v->client,
                   "created_at", time_json(v->created_at), "job",
                   v->producer_job ? json_integer((json_int_t)v->producer_job) : json_null(),
                   "in_use", v->in_use, "device", v->device);
}

enum MHD_Result buffers_post(struct request *r) {
  struct npy_array arr;
  char why[200];
  const char *shape = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "shape");
  const char *body = r->body ? r->body : "";
  if (shape ? npy_raw(body, r->body_len, shape, &arr, why, sizeof why)
            : npy_parse(body, r->body_len, &arr, why, sizeof why))
    return respond_fail(r, 400, shape ? "invalid_raw" : "invalid_npy", shape ? "shape" : NULL, "%s", why);
  struct exp_shape s = {arr.ndim, {arr.shape[0], arr.ndim == 2 ? arr.shape[1] : 0}};
  char client[64];
  struct engine_error err;
  struct api_error aerr;
  uint64_t id;
  long long device;
  if (query_int(r, "device", 0, engine_device_count(r->srv->engine) - 1, 0, &device, &aerr))
    return respond_error(r, &aerr);
  int rc = engine_buffer_upload(r->srv->engine, arr.data, &s, request_client(r, client, sizeof client),
                                (int)device, r->who ? r->who->max_buffer_bytes : 0, &id, &err);
  if (rc == -EFBIG) return respond_fail(r, 413, "buffer_too_large", NULL, "%s", err.message);
  if (rc == -EDQUOT) return respond_fail(r, 413, "quota_exceeded", NULL, "%s", err.message);
  if (rc) return respond_fail(r, 503, "upload_failed", NULL, "cannot store the buffer: %s", err.message);
  struct engine_buffer_view v;
  if (engine_buffer_get(r->srv->engine, id, &v)) /* deleted at once by someone else */
    return respond_fail(r, 404, "buffer_not_found", "id", "buffer %" PRIu64 " is gone", id);
  snprintf(r->location, sizeof r->location, "/buffers/%" PRIu64, id);
  return respond_json(r, 201, buffer_json(&v));
}

enum MHD_Result buffers_list(struct request *r) {
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

/* GET: the buffer as a .npy file that numpy.load reads: float32, or uint32 for counts
 * (a histogram's kept output), bit for bit as the job wrote them. */
static enum MHD_Result download(struct request *r, const struct engine_buffer_view *v) {
  int64_t dims[2] = {v->shape.dims[0], v->shape.dims[1]};
  size_t header = npy_header_size(v->shape.ndim, dims);
  char *file = malloc(header + v->bytes);
  if (!file) return respond_fail(r, 503, "out_of_memory", NULL, "no memory for %" PRIu64 " bytes", v->bytes);
  npy_write_header(file, header, v->shape.ndim, dims,
                   v->dtype == EXP_DTYPE_U32 ? NPY_UINT32 : NPY_FLOAT32);
  struct engine_error err;
  /* A job's output is copied once its producer's fence has passed on the device. */
  int rc = engine_buffer_read(r->srv->engine, v->id, (float *)(file + header), &err);
  if (rc) {
    free(file);
    return rc == -ENOENT ? respond_fail(r, 404, "buffer_not_found", "id", "buffer %" PRIu64 " is gone", v->id)
                         : respond_fail(r, 503, "download_failed", NULL, "%s", err.message);
  }
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(header + v->bytes, file, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(file);
    return MHD_NO;
  }
  char disposition[64];
  snprintf(disposition, sizeof disposition, "attachment; filename=\"buffer-%" PRIu64 ".npy\"", v->id);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-npy");
  MHD_add_response_header(resp, "Content-Disposition", disposition);
  return request_queue(r, 200, resp, header + v->bytes);
}

enum MHD_Result buffer_route(struct request *r, const char *id_text) {
  uint64_t id = 0;
  struct engine_buffer_view v;
  if (!parse_id(id_text, &id) || engine_buffer_get(r->srv->engine, id, &v) ||
      !request_may_see(r, v.client)) /* others' buffers are not found: ids do not leak */
    return respond_fail(r, 404, "buffer_not_found", "id", "no buffer '%.40s'", id_text);
  if (strcmp(r->method, "DELETE") != 0) return download(r, &v);
  int rc = engine_buffer_delete(r->srv->engine, id);
  if (rc == -EBUSY)
    return respond_fail(r, 409, "buffer_in_use", "id",
                        "buffer %" PRIu64 " is read by %d queued, waiting or running job(s)", id, v.in_use);
  if (rc) return respond_fail(r, 404, "buffer_not_found", "id", "no buffer '%.40s'", id_text);
  return respond_json(r, 200, json_pack("{s:I,s:b}", "id", (json_int_t)id, "deleted", 1));
}
