/* A user's kernel's versions over HTTP: GET /kernels/{id}/versions (each with its
 * source hash, compile summary and best figure: its row of the leaderboard at ?size=),
 * GET and DELETE /kernels/{id}/versions/{version} (deleting the last one deletes the
 * kernel), GET /kernels/{id}/diff?from=&to=, a unified diff of two versions' sources,
 * and the compiler's view of a version, its PTX and its SASS (GET /kernels/{id}/ptx,
 * /sass: the newest; /kernels/{id}/versions/{version}/ptx, /sass), all as text/plain.
 * Who may see a version: its owner, or anyone when that version is public; who may
 * delete one: its owner. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/kernel_doc.h"
#include "server/http/routes.h"
#include "server/service/udiff.h"
#include "server/service/ukernels.h"
#include "server/service/usass.h"

static enum MHD_Result no_kernel(struct request *r, const char *id_text) {
  return respond_fail(r, 404, "kernel_not_found", "id", "no kernel '%.40s'", id_text);
}

/* The kernel id of id_text, and whether r may see the kernel (its newest version):
 * false when it answered 404 into *ret. */
static bool kernel_of(struct request *r, struct ukernels *u, const char *id_text, int64_t *id,
                      enum MHD_Result *ret) {
  uint64_t v;
  struct store_kernel k;
  if (!parse_id(id_text, &v) || v > INT64_MAX || ukernels_version(u, (int64_t)v, 0, &k, NULL)) {
    *ret = no_kernel(r, id_text);
    return false;
  }
  bool seen = k.is_public || request_may_see(r, k.owner);
  ukernels_clear(&k);
  if (!seen) *ret = no_kernel(r, id_text);
  *id = (int64_t)v;
  return seen;
}

/* A version number as text (field: where it was given): 1..INT_MAX, or 0 with a 400
 * answered into *ret. */
static int version_of(struct request *r, const char *text, const char *field,
                      enum MHD_Result *ret) {
  uint64_t n;
  if (text && parse_id(text, &n) && n >= 1 && n <= 0x7fffffff) return (int)n;
  *ret = respond_fail(r, 400, text ? "out_of_range" : "missing_field", field,
                      "%s is a version number, 1, 2, ...%s%.40s%s", field, text ? ", got '" : "",
                      text ? text : "", text ? "'" : "");
  return 0;
}

/* Version n of kernel id into *k, r allowed to see it: else 404 into *ret. */
static bool version_get(struct request *r, struct ukernels *u, int64_t id, int n,
                        struct store_kernel *k, int *versions, enum MHD_Result *ret) {
  int rc = ukernels_version(u, id, n, k, versions);
  if (rc == 0 && (k->is_public || request_may_see(r, k->owner))) return true;
  if (rc == 0) ukernels_clear(k);
  *ret = rc && rc != -ENOENT ? respond_storage(r, rc)
                             : respond_fail(r, 404, "version_not_found", "version",
                                            "kernel %lld has no version %d", (long long)id, n);
  return false;
}

struct listing {
  struct request *r;
  json_t *list;
  json_t *board; /* the leaderboard of the kernel's experiment, or NULL */
};

/* Version k's row of the leaderboard (its variant kernel:<id>@<n>), or null. */
static json_t *best_of(json_t *board, const struct store_kernel *k) {
  char label[40];
  snprintf(label, sizeof label, "kernel:%lld@%d", (long long)k->kernel_id, k->version);
  size_t i;
  json_t *row;
  json_array_foreach(json_object_get(board, "rows"), i, row) {
    if (!strcmp(json_string_value(json_object_get(row, "variant")), label)) return json_incref(row);
  }
  return json_null();
}

static void list_version(void *arg, const struct store_kernel *k) {
  struct listing *l = arg;
  if (!k->is_public && !request_may_see(l->r, k->owner)) return;
  json_t *v = kernel_doc_json(k, KERNEL_DOC_VERSION, false, 0, l->r->api_prefix);
  if (v) json_object_set_new(v, "best", best_of(l->board, k));
  json_array_append_new(l->list, v);
}

enum MHD_Result route_kernel_versions(struct request *r, const struct route_args *a) {
  struct ukernels *u = r->srv->opts.service->ukernels;
  enum MHD_Result ret;
  int64_t id;
  if (!u) return respond_fail(r, 503, "nvrtc_unavailable", NULL, "users' kernels are off");
  if (!kernel_of(r, u, a->id, &id, &ret)) return ret;
  /* Each version's best figure: its row of the leaderboard at ?size= (its default). */
  struct store_kernel newest;
  struct api_error err;
  if (ukernels_version(u, id, 0, &newest, NULL)) return no_kernel(r, a->id);
  int type = exp_type_from_name(newest.experiment);
  ukernels_clear(&newest);
  const char *size = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "size");
  json_t *board = type >= 0 ? route_leaderboard_board(r, type, size, &err) : NULL;
  if (!board && size) return respond_error(r, &err);
  struct listing l = {r, json_array(), board};
  int rc = ukernels_versions(u, id, list_version, &l);
  json_t *at = json_incref(json_object_get(board, "size"));
  json_decref(board);
  if (rc < 0) {
    json_decref(l.list);
    json_decref(at);
    return rc == -ENOMEM ? respond_json(r, 500, NULL) : respond_storage(r, rc);
  }
  return respond_json(r, 200,
                      json_pack("{s:I,s:o,s:o}", "id", (json_int_t)id, "size",
                                at ? at : json_null(), "versions", l.list));
}

/* DELETE of version k (r may see it): its owner only; the kernel's last version takes
 * the kernel with it. */
static enum MHD_Result delete_version(struct request *r, struct ukernels *u,
                                      const struct store_kernel *k, int versions) {
  if (!request_may_see(r, k->owner))
    return respond_fail(r, 403, "not_owner", "id", "kernel %lld is %s's", (long long)k->kernel_id,
                        k->owner);
  bool last = versions <= 1;
  int rc = last ? ukernels_drop(u, k->kernel_id) : ukernels_delete(u, k->id);
  if (rc == -ENOENT)
    return respond_fail(r, 404, "version_not_found", "version", "kernel %lld has no version %d",
                        (long long)k->kernel_id, k->version);
  if (rc) return respond_storage(r, rc);
  return respond_json(r, 200,
                      json_pack("{s:I,s:i,s:b,s:b}", "id", (json_int_t)k->kernel_id, "version",
                                k->version, "deleted", 1, "kernel_deleted", last));
}

enum MHD_Result route_kernel_version(struct request *r, const struct route_args *a) {
  struct ukernels *u = r->srv->opts.service->ukernels;
  enum MHD_Result ret;
  int64_t id;
  int n, versions = 0;
  struct store_kernel k;
  if (!u) return respond_fail(r, 503, "nvrtc_unavailable", NULL, "users' kernels are off");
  if (!kernel_of(r, u, a->id, &id, &ret) || !(n = version_of(r, a->id2, "version", &ret)) ||
      !version_get(r, u, id, n, &k, &versions, &ret))
    return ret;
  if (!strcmp(r->method, "DELETE"))
    ret = delete_version(r, u, &k, versions);
  else
    ret = respond_json(r, 200, kernel_doc_json(&k, KERNEL_DOC_VERSION, true, 0, r->api_prefix));
  ukernels_clear(&k);
  return ret;
}

/* A text/plain answer: the diff, the PTX, the SASS (text taken over). */
static enum MHD_Result respond_text(struct request *r, char *text) {
  size_t len = strlen(text);
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
  return request_queue(r, 200, resp, len);
}

enum MHD_Result route_kernel_diff(struct request *r, const struct route_args *a) {
  struct ukernels *u = r->srv->opts.service->ukernels;
  enum MHD_Result ret;
  int64_t id;
  int from, to;
  struct store_kernel ka, kb;
  if (!u) return respond_fail(r, 503, "nvrtc_unavailable", NULL, "users' kernels are off");
  if (!kernel_of(r, u, a->id, &id, &ret) ||
      !(from = version_of(r, MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "from"),
                          "from", &ret)) ||
      !(to = version_of(r, MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "to"), "to",
                        &ret)) ||
      !version_get(r, u, id, from, &ka, NULL, &ret))
    return ret;
  if (!version_get(r, u, id, to, &kb, NULL, &ret)) {
    ukernels_clear(&ka);
    return ret;
  }
  char label_a[96], label_b[96], why[160], *text = NULL;
  snprintf(label_a, sizeof label_a, "kernel:%lld@%d/%s.cu", (long long)id, from, ka.name);
  snprintf(label_b, sizeof label_b, "kernel:%lld@%d/%s.cu", (long long)id, to, kb.name);
  int rc = udiff(ka.source ? ka.source : "", label_a, kb.source ? kb.source : "", label_b, &text,
                 why, sizeof why);
  ukernels_clear(&ka);
  ukernels_clear(&kb);
  if (rc == -ENOMEM) return respond_json(r, 500, NULL);
  if (rc == -EFBIG) return respond_fail(r, 413, "diff_too_large", NULL, "%s", why);
  if (rc) return respond_fail(r, 503, "diff_unavailable", NULL, "%s", why);
  return respond_text(r, text);
}

/* ---- the compiler's view: PTX and SASS ---- */

/* The version a route of the compiler's view names (its {version}, else the kernel's
 * newest) into *k, r allowed to see it: else the 404 or 400 answered into *ret. */
static bool code_version(struct request *r, struct ukernels *u, const struct route_args *a,
                         struct store_kernel *k, enum MHD_Result *ret) {
  int64_t id;
  int n = 0;
  return kernel_of(r, u, a->id, &id, ret) &&
         (!a->id2[0] || (n = version_of(r, a->id2, "version", ret))) &&
         version_get(r, u, id, n, k, NULL, ret);
}

enum MHD_Result route_kernel_ptx(struct request *r, const struct route_args *a) {
  struct ukernels *u = r->srv->opts.service->ukernels;
  enum MHD_Result ret;
  struct store_kernel k;
  if (!u) return respond_fail(r, 503, "nvrtc_unavailable", NULL, "users' kernels are off");
  if (!code_version(r, u, a, &k, &ret)) return ret;
  if (k.ptx) {
    ret = respond_text(r, k.ptx); /* taken over */
    k.ptx = NULL;
  } else {
    ret = respond_fail(r, 404, "ptx_not_kept", "version",
                       "version %d of kernel %lld was stored before gpulab kept PTX: post its "
                       "source again (a new version) to see its PTX",
                       k.version, (long long)k.kernel_id);
  }
  ukernels_clear(&k);
  return ret;
}

enum MHD_Result route_kernel_sass(struct request *r, const struct route_args *a) {
  struct ukernels *u = r->srv->opts.service->ukernels;
  enum MHD_Result ret;
  struct store_kernel k;
  if (!u) return respond_fail(r, 503, "nvrtc_unavailable", NULL, "users' kernels are off");
  if (!code_version(r, u, a, &k, &ret)) return ret;
  if (!k.image) {
    ret = respond_fail(r, 404, "cubin_not_kept", "version",
                       "version %d of kernel %lld has no stored CUBIN: post its source again "
                       "(a new version) to see its SASS",
                       k.version, (long long)k.kernel_id);
    ukernels_clear(&k);
    return ret;
  }
  char why[600], *text = NULL;
  bool truncated;
  int rc = usass_disassemble(ukernels_nvrtc(u, NULL), k.image, k.image_bytes, &text, &truncated,
                             why, sizeof why);
  ukernels_clear(&k);
  if (rc == -ENOMEM) return respond_json(r, 500, NULL);
  if (rc == -EBUSY) {
    r->retry_after_s = 1; /* a listing takes a second or so */
    return respond_fail(r, 503, "sass_busy", NULL, "%s", why);
  }
  if (rc) return respond_fail(r, 503, "sass_unavailable", NULL, "%s", why);
  return respond_text(r, text);
}
