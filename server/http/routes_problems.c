/* Problems users define, over HTTP: POST /problems (a definition: its first version, or
 * the next of the caller's problem of that name), GET /problems (the ones the caller
 * may see and not deleted), GET and DELETE /problems/{name} (its newest version; a
 * delete hides it and refuses new versions' jobs, its versions stay readable), GET
 * /problems/{name}/versions and /versions/{version}, and POST /problems/{name}/jobs (a
 * job of its newest version). Who may see a version (and run it): its owner, or anyone
 * when it is public; who may delete: the owner. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/encode.h"
#include "server/http/kernel_doc.h"
#include "server/http/routes.h"
#include "server/http/submit.h"
#include "server/service/problem_jobs.h"
#include "server/service/problems.h"

static struct ukernels *service(struct request *r) { return r->srv->opts.service->ukernels; }

static enum MHD_Result no_problem(struct request *r, const char *name) {
  return respond_fail(r, 404, "problem_not_found", "name", "no problem '%.63s'", name);
}

static void href_of(struct request *r, const struct store_problem *p, bool version, char *buf,
                    size_t len) {
  if (version)
    snprintf(buf, len, "%s/problems/%s/versions/%d", r->api_prefix, p->name, p->version);
  else
    snprintf(buf, len, "%s/problems/%s", r->api_prefix, p->name);
}

/* A version's summary: who, when, where, what it takes (its params). definition not
 * NULL: the definition parsed on the way, handed over (the caller decrefs it). */
static json_t *summary_json(struct request *r, const struct store_problem *p, bool version,
                            json_t **definition) {
  char when[40], href[160];
  api_format_time(p->created, when, sizeof when);
  href_of(r, p, version, href, sizeof href);
  json_t *o = json_pack("{s:s,s:i,s:s,s:b,s:s,s:s}", "name", p->name, "version", p->version,
                        "owner", p->owner, "public", p->is_public, "created", when, "href", href);
  json_t *def = json_loads(p->definition, 0, NULL);
  if (o && def) {
    json_t *description = json_object_get(def, "description");
    if (description) json_object_set(o, "description", description);
    json_object_set(o, "params", json_object_get(def, "params"));
  }
  if (definition)
    *definition = def;
  else
    json_decref(def);
  if (o && p->deleted) json_object_set_new(o, "deleted", json_true());
  return o;
}

/* A version in full: the summary, the definition, the signature its kernels have, their
 * template, and the reference's compile report. */
static json_t *doc_json(struct request *r, const struct store_problem *p,
                        const struct problem_def *def, bool version, int versions) {
  json_t *definition = NULL, *o = summary_json(r, p, version, &definition);
  char sig[PROBLEM_SIGNATURE_MAX];
  char *template = problem_def_template(def);
  if (!o || !template || problems_signature(def, "kernel", sig, sizeof sig)) {
    free(template);
    json_decref(definition);
    json_decref(o);
    return NULL;
  }
  if (versions > 0) json_object_set_new(o, "versions", json_integer(versions));
  json_object_set_new(o, "definition", definition);
  json_object_set_new(o, "signature", json_string(sig));
  json_object_set_new(o, "prelude", json_string(problem_def_prelude(def)));
  json_object_set_new(o, "template", json_string(template));
  json_object_set_new(o, "compile", json_loads(p->report, 0, NULL));
  free(template);
  return o;
}

/* ---- POST /problems ---- */

static enum MHD_Result define(struct request *r, struct ukernels *u) {
  enum MHD_Result ret;
  if (request_store_refuses(r, &ret)) return ret;
  json_error_t je;
  json_t *root = json_loadb(r->body ? r->body : "", r->body_len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return respond_fail(r, 400, "invalid_json", NULL, "malformed JSON at line %d, column %d: %s",
                        je.line, je.column, je.text);
  char owner[64];
  request_client(r, owner, sizeof owner);
  struct problems_defined out;
  struct api_error err;
  int rc = problems_define(u, owner, root, &out, &err);
  if (rc == PROBLEMS_COMPILE_FAILED) {
    ret = kernel_compile_failed(r, out.rep, ukernels_report_json(u, out.rep, out.cached),
                                "reference.source");
  } else if (rc && err.status == 0) {
    ret = respond_storage(r, rc);
  } else if (rc && err.status == 422) { /* at a line of the reference, as a kernel's */
    ret = kernel_unprocessable(r, err.code, err.field, out.line, NULL, err.message);
  } else if (rc) {
    if (err.status == 503) r->retry_after_s = 1;
    ret = respond_error(r, &err);
  } else {
    snprintf(r->location, sizeof r->location, "/problems/%s/versions/%d", out.row.name,
             out.row.version);
    ret = respond_json(r, 201, doc_json(r, &out.row, out.def, true, 0));
  }
  problems_defined_clear(&out);
  json_decref(root);
  return ret;
}

/* ---- GET /problems ---- */

struct listing {
  struct request *r;
  json_t *list;
};

static void list_one(void *arg, const struct store_problem *p) {
  struct listing *l = arg;
  if (!p->deleted && (p->is_public || request_may_see(l->r, p->owner)))
    json_array_append_new(l->list, summary_json(l->r, p, false, NULL));
}

static enum MHD_Result list(struct request *r, struct ukernels *u) {
  struct listing l = {r, json_array()};
  int rc = problems_each(u, NULL, list_one, &l);
  if (rc < 0) {
    json_decref(l.list);
    return respond_storage(r, rc);
  }
  return respond_json(r, 200, json_pack("{s:o}", "problems", l.list));
}

/* ---- one problem, its versions ---- */

/* Version n (0: the newest) of name, which r may see, into *p and *def; else answered. */
static bool version_get(struct request *r, struct ukernels *u, const char *name, int n,
                        struct store_problem *p, struct problem_def **def, enum MHD_Result *ret) {
  int rc = problems_get(u, name, n, p, def);
  if (rc == 0 && (p->is_public || request_may_see(r, p->owner))) return true;
  if (rc == 0) {
    problems_row_clear(p);
    problem_def_free(*def);
    *def = NULL;
  }
  if (rc && rc != -ENOENT)
    *ret = respond_storage(r, rc);
  else if (n)
    *ret = respond_fail(r, 404, "version_not_found", "version", "problem %.63s has no version %d",
                        name, n);
  else
    *ret = no_problem(r, name);
  return false;
}

struct counting {
  int versions;
};
static void count_one(void *arg, const struct store_problem *p) {
  (void)p;
  ((struct counting *)arg)->versions++;
}

static enum MHD_Result one(struct request *r, struct ukernels *u, const char *name) {
  struct store_problem p;
  struct problem_def *def = NULL;
  enum MHD_Result ret;
  if (!version_get(r, u, name, 0, &p, &def, &ret)) return ret;
  struct counting c = {0};
  problems_each(u, name, count_one, &c);
  if (p.deleted) {
    ret = no_problem(r, name); /* hidden; its versions stay readable */
  } else if (strcmp(r->method, "DELETE") != 0) {
    ret = respond_json(r, 200, doc_json(r, &p, def, false, c.versions));
  } else if (!request_may_see(r, p.owner)) {
    ret = respond_fail(r, 403, "not_owner", "name", "problem %s is %s's", name, p.owner);
  } else if (!request_store_refuses(r, &ret)) {
    int rc = problems_delete(u, name);
    ret = rc ? respond_storage(r, rc)
             : respond_json(
                   r, 200,
                   json_pack("{s:s,s:b,s:i}", "name", name, "deleted", 1, "versions", c.versions));
  }
  problems_row_clear(&p);
  problem_def_free(def);
  return ret;
}

struct versions {
  struct request *r;
  json_t *list;
};
static void version_one(void *arg, const struct store_problem *p) {
  struct versions *v = arg;
  if (p->is_public || request_may_see(v->r, p->owner))
    json_array_append_new(v->list, summary_json(v->r, p, true, NULL));
}

static enum MHD_Result versions(struct request *r, struct ukernels *u, const char *name) {
  struct versions v = {r, json_array()};
  int rc = problems_each(u, name, version_one, &v);
  if (rc < 0 || json_array_size(v.list) == 0) {
    json_decref(v.list);
    return rc < 0 ? respond_storage(r, rc) : no_problem(r, name);
  }
  return respond_json(r, 200, json_pack("{s:s,s:o}", "name", name, "versions", v.list));
}

static enum MHD_Result version(struct request *r, struct ukernels *u, const char *name,
                               const char *text) {
  uint64_t n;
  if (!parse_id(text, &n) || n < 1 || n > 0x7fffffff)
    return respond_fail(r, 400, "out_of_range", "version",
                        "version is a version number, 1, 2, ..., got '%.40s'", text);
  struct store_problem p;
  struct problem_def *def = NULL;
  enum MHD_Result ret;
  if (!version_get(r, u, name, (int)n, &p, &def, &ret)) return ret;
  ret = respond_json(r, 200, doc_json(r, &p, def, true, 0));
  problems_row_clear(&p);
  problem_def_free(def);
  return ret;
}

int route_problem_visible(struct request *r, const char *name, int version,
                          struct store_problem *row, struct problem_def **def) {
  struct ukernels *u = service(r);
  *def = NULL;
  int rc = u ? problems_get(u, name, version, row, def) : -ENOENT;
  if (rc == 0 &&
      ((!version && row->deleted) || !(row->is_public || request_may_see(r, row->owner)))) {
    problems_row_clear(row);
    problem_def_free(*def);
    *def = NULL;
    rc = -ENOENT;
  }
  return rc;
}

/* ---- a job of a problem ---- */

/* A problem's input given as a buffer that is not here: 410 for one of an earlier run, a
 * fleet's other node's answer for one it holds, else err (404). */
static enum MHD_Result missing_input(struct request *r, uint64_t id, const struct api_error *err) {
  enum MHD_Result sent;
  if (request_buffer_elsewhere(r, id, err->field, &sent)) return sent;
  if (id < engine_first_id(r->srv->engine, ENGINE_IDS_BUFFERS))
    return respond_buffer_gone(r, id, err->field);
  return respond_error(r, err);
}

/* POST /problems/{name}/jobs: a job of the problem's newest version (problem_jobs.h),
 * its inputs given as buffers checked against the problem's, submitted as any job is. */
static enum MHD_Result job(struct request *r, struct ukernels *u, const char *name) {
  struct store_problem p;
  struct problem_def *def = NULL;
  enum MHD_Result ret;
  if (!version_get(r, u, name, 0, &p, &def, &ret)) return ret;
  json_error_t je;
  json_t *body = r->body_len ? json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je)
                             : json_object();
  char kernels_of[80];
  snprintf(kernels_of, sizeof kernels_of, "problem:%s", p.name);
  r->kernels_of = kernels_of;
  struct api_kernel_resolver kr = submit_kernel_resolver(r);
  struct exp_spec spec;
  struct api_job_options opts;
  struct api_error err;
  uint64_t missing = 0;
  if (p.deleted)
    ret = no_problem(r, name); /* hidden, and taking no new jobs */
  else if (!body)
    ret = respond_fail(r, 400, "invalid_json", NULL, "malformed JSON at line %d, column %d: %s",
                       je.line, je.column, je.text);
  else if (problem_jobs_spec(&p, def, body, &kr, &spec, &opts, &err))
    ret = respond_error(r, &err);
  else if (problem_jobs_check_inputs(def, &spec, r->srv->engine,
                                     request_sees_all(r) ? NULL : r->client, &missing, &err))
    ret = missing ? missing_input(r, missing, &err) : respond_error(r, &err);
  else
    ret = submit_job(r, &spec, &opts, "");
  r->kernels_of = NULL;
  json_decref(body);
  problems_row_clear(&p);
  problem_def_free(def);
  return ret;
}

/* ---- the routes; without users' kernels (no NVRTC, or off), 503 ---- */

static enum MHD_Result unavailable(struct request *r) {
  return respond_fail(r, 503, "nvrtc_unavailable", NULL,
                      "problems need users' kernels, which are off in this gpulabd");
}

enum MHD_Result route_problems(struct request *r, const struct route_args *a) {
  (void)a;
  struct ukernels *u = service(r);
  if (!u) return unavailable(r);
  return strcmp(r->method, "POST") == 0 ? define(r, u) : list(r, u);
}

enum MHD_Result route_problem(struct request *r, const struct route_args *a) {
  struct ukernels *u = service(r);
  return u ? one(r, u, a->id) : unavailable(r);
}

enum MHD_Result route_problem_jobs(struct request *r, const struct route_args *a) {
  struct ukernels *u = service(r);
  return u ? job(r, u, a->id) : unavailable(r);
}

enum MHD_Result route_problem_versions(struct request *r, const struct route_args *a) {
  struct ukernels *u = service(r);
  return u ? versions(r, u, a->id) : unavailable(r);
}

enum MHD_Result route_problem_version(struct request *r, const struct route_args *a) {
  struct ukernels *u = service(r);
  return u ? version(r, u, a->id, a->id2) : unavailable(r);
}
