/* kernel_doc.h: a kernel's or a version's JSON document. */
#include "server/http/kernel_doc.h"

#include <stdio.h>
#include <string.h>

#include "api/encode.h"
#include "server/service/ukernels.h"

json_t *kernel_doc_json(const struct store_kernel *k, enum kernel_doc_kind kind, bool full,
                        int versions, const char *prefix) {
  char when[40], variant[40], href[80];
  long long id = (long long)k->kernel_id;
  api_format_time(k->created, when, sizeof when);
  if (kind == KERNEL_DOC_VERSION) {
    snprintf(variant, sizeof variant, "kernel:%lld@%d", id, k->version);
    snprintf(href, sizeof href, "%s/kernels/%lld/versions/%d", prefix ? prefix : "", id,
             k->version);
  } else {
    snprintf(variant, sizeof variant, "kernel:%lld", id);
    snprintf(href, sizeof href, "%s/kernels/%lld", prefix ? prefix : "", id);
  }
  json_t *o = json_pack("{s:I,s:i,s:s,s:s,s:s,s:s,s:b,s:s,s:s,s:s}", "id", (json_int_t)id,
                        "version", k->version, "variant", variant, "name", k->name, "experiment",
                        k->experiment, "owner", k->owner, "public", k->is_public, "created", when,
                        "source_sha256", k->source_sha, "href", href);
  if (!o) return NULL;
  if (versions > 0) json_object_set_new(o, "versions", json_integer(versions));
  json_t *spec = json_loads(k->spec ? k->spec : "{}", 0, NULL);
  json_t *report = json_loads(k->report ? k->report : "{}", 0, NULL);
  if (spec) json_object_update(o, spec);
  if (report && !full) json_object_del(report, "log");
  if (report) json_object_set(o, "compile", report);
  json_decref(spec);
  json_decref(report);
  if (full && k->source) json_object_set_new(o, "source", json_string(k->source));
  char why[256]; /* a version stored before today's rules may be refused now */
  if (ukernels_refused(k->id, why, sizeof why)) json_object_set_new(o, "refused", json_string(why));
  return o;
}

enum MHD_Result kernel_unprocessable(struct request *r, const char *code, const char *field,
                                     int line, json_t *report, const char *detail) {
  struct api_error err;
  api_error_set(&err, 422, code, field, "%s", detail);
  json_t *extra = json_pack("{s:o}", "line", line ? json_integer(line) : json_null());
  if (extra && report)
    json_object_set_new(extra, "compile", report);
  else
    json_decref(report);
  return respond_problem(r, &err, extra);
}

enum MHD_Result kernel_compile_failed(struct request *r, const struct ucompile_report *rep,
                                      json_t *report, const char *field) {
  if (rep->timed_out)
    return kernel_unprocessable(r, "compile_timeout", field, 0, report, rep->error);
  if (rep->stateful) /* compiled, but keeps state no runner can put back before a launch */
    return kernel_unprocessable(r, "stateful_kernel", field, rep->error_line, report, rep->error);
  char at[320];
  snprintf(at, sizeof at, "line %d: %s", rep->error_line, rep->error);
  bool said = strncmp(rep->error, "line ", 5) == 0; /* say_signature's names its line */
  return kernel_unprocessable(r, "compile_failed", field, rep->error_line, report,
                              rep->error_line && !said ? at : rep->error);
}
