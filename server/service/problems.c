/* problems.h: a definition checked, its reference compiled, the version stored. */
#include "server/service/problems.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/engine/engine.h" /* engine_now_unix */

void problems_defined_clear(struct problems_defined *d) {
  store_problem_clear(&d->row);
  problem_def_free(d->def);
  ucompile_report_free(d->rep);
  memset(d, 0, sizeof *d);
}

int problems_signature(const struct problem_def *def, const char *entry, char *buf, size_t len) {
  char decl[PROBLEM_SIGNATURE_MAX];
  if (problem_def_signature(def, decl, sizeof decl)) return -ENOSPC;
  const char *at = strstr(decl, "%s");
  if (!at) return -ENOSPC;
  int n = snprintf(buf, len, "%.*s%s%s", (int)(at - decl), decl, entry, at + 2);
  return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

struct owned {
  const char *owner, *name;
  int problems, versions;
};

/* The newest version of every name: owner's problems that are not deleted. */
static void count_owned(void *arg, const struct store_problem *p) {
  struct owned *o = arg;
  if (strcmp(p->owner, o->owner) == 0 && !p->deleted) o->problems++;
}

/* Every version of one name: those defined since its last delete (a delete marks the
 * versions before it, which stay readable by number but count no more). */
static void count_versions(void *arg, const struct store_problem *p) {
  struct owned *o = arg;
  if (!p->deleted) o->versions++;
}

/* Whether owner may store one more version of name: its first owner's, within the
 * kernels' limits (a problem counts as a kernel: --max-kernels, --max-kernel-versions). */
static int may_store(struct ukernels *u, const char *owner, const char *name,
                     struct api_error *err) {
  struct store_problem cur;
  int rc = store_problem_get(ukernels_store(u), name, 0, &cur);
  if (rc == 0) {
    bool theirs = strcmp(cur.owner, owner) != 0;
    char who[80]; /* a private problem's owner is not told */
    snprintf(who, sizeof who, "%s's", cur.is_public ? cur.owner : "another client");
    store_problem_clear(&cur);
    if (theirs)
      return api_error_set(err, 409, "problem_name_taken", "name",
                           "the name %s is %s: pick another name", name, who);
  } else if (rc != -ENOENT) {
    return api_error_set(err, 503, "store_unavailable", NULL, "the store cannot be read: %s",
                         strerror(-rc));
  }
  const struct ukernels_config *cfg = ukernels_config(u);
  struct owned o = {owner, name, 0, 0};
  if (store_problem_each(ukernels_store(u), NULL, count_owned, &o) < 0 ||
      store_problem_each(ukernels_store(u), name, count_versions, &o) < 0)
    return api_error_set(err, 503, "store_unavailable", NULL, "the store cannot be read");
  if (o.versions >= cfg->max_versions)
    return api_error_set(err, 409, "too_many_versions", "name",
                         "problem %s has %d versions, as many as this gpulabd keeps of one "
                         "(--max-kernel-versions): delete it or pick another name",
                         name, o.versions);
  if (o.versions == 0 && o.problems >= cfg->max_per_client)
    return api_error_set(err, 403, "problem_quota", "name",
                         "%s has %d problems, as many as this gpulabd keeps per client "
                         "(--max-kernels)",
                         owner, o.problems);
  return 0;
}

/* Compiles def's reference with its signature (the prelude's includes ahead). 0 with
 * out->rep (ok or not), or an api_error's errno. */
static int compile_reference(struct ukernels *u, struct problems_defined *out,
                             struct api_error *err) {
  const struct problem_def *d = out->def;
  const struct problem_reference *ref = &d->reference;
  const char *prelude = problem_def_prelude(d);
  char sig[PROBLEM_SIGNATURE_MAX], decl[PROBLEM_SIGNATURE_MAX + 128], file[80], msg[320];
  if (problem_def_signature(d, sig, sizeof sig))
    return api_error_set(err, 400, "invalid_problem", "inputs", "the signature is too long");
  snprintf(decl, sizeof decl, "%s%s", prelude, sig);
  snprintf(file, sizeof file, "%s.cu", d->name);
  const char *options[UCOMPILE_MAX_OPTIONS];
  for (int i = 0; i < ref->n_options; i++) options[i] = ref->options[i];
  struct ucompile_req req = {.source = ref->source,
                             .name = file,
                             .entry = ref->entry,
                             .declaration = decl,
                             .signature_of = "problem",
                             .options = options,
                             .n_options = ref->n_options};
  int rc = ukernels_compile(u, &req, &out->rep, &out->cached, msg, sizeof msg);
  int line = 0;
  char why[256];
  switch (rc) {
  case 0: return 0;
  case -ENODEV: return api_error_set(err, 503, "nvrtc_unavailable", NULL, "%s", msg);
  case -EBUSY: return api_error_set(err, 503, "compile_busy", NULL, "%s", msg);
  case -ENOMEM: return api_error_set(err, 500, "out_of_memory", NULL, "out of memory");
  case -EINVAL:
    if (ucompile_source_check(ref->source, ukernels_nvrtc(u, NULL), &line, why, sizeof why)) {
      out->line = line;
      return api_error_set(err, 422, "source_not_allowed", "reference.source", "%s", why);
    }
    return api_error_set(err, 400, strncmp(msg, "entry", 5) ? "option_not_allowed" : "out_of_range",
                         strncmp(msg, "entry", 5) ? "reference.options" : "reference.entry", "%s",
                         msg);
  default: return api_error_set(err, 500, "compile_error", NULL, "NVRTC failed: %s", msg);
  }
}

/* The report stored with the version: the compile's, and the occupancy of the
 * reference's launch at the params' defaults. */
static char *report_text(struct ukernels *u, const struct problems_defined *out) {
  json_t *report = ukernels_report_json(u, out->rep, out->cached);
  int64_t values[PROBLEM_MAX_PARAMS];
  struct problem_sizes at;
  struct api_error ignored;
  for (int i = 0; i < out->def->n_params; i++) values[i] = out->def->params[i].def;
  if (report && problem_def_sizes(out->def, values, &at, &ignored) == 0) {
    int block[3] = {(int)at.block[0], (int)at.block[1], (int)at.block[2]};
    json_t *occupancy = ukernels_occupancy_json(u, block, (int)at.shared_bytes, out->rep);
    if (occupancy) json_object_set_new(report, "occupancy_at_defaults", occupancy);
  }
  char *text = report ? json_dumps(report, JSON_COMPACT) : NULL;
  json_decref(report);
  return text;
}

int problems_define(struct ukernels *u, const char *owner, json_t *root,
                    struct problems_defined *out, struct api_error *err) {
  memset(out, 0, sizeof *out);
  int rc = problem_def_parse(root, ukernels_config(u)->max_source_bytes, &out->def, err);
  if (rc || (rc = may_store(u, owner, out->def->name, err)) ||
      (rc = compile_reference(u, out, err)))
    return rc;
  if (!out->rep->ok) return PROBLEMS_COMPILE_FAILED;
  struct store_problem *row = &out->row;
  snprintf(row->owner, sizeof row->owner, "%s", owner);
  snprintf(row->name, sizeof row->name, "%s", out->def->name);
  row->is_public = out->def->is_public;
  row->created = engine_now_unix();
  json_t *canonical = problem_def_to_json(out->def);
  row->definition = canonical ? json_dumps(canonical, JSON_COMPACT) : NULL;
  json_decref(canonical);
  row->report = report_text(u, out);
  if (!row->definition || !row->report)
    return api_error_set(err, 500, "out_of_memory", NULL, "out of memory");
  row->image = out->rep->image; /* borrowed until stored: the report keeps it */
  row->image_bytes = out->rep->image_bytes;
  rc = store_problem_insert(ukernels_store(u), row, &row->id, &row->version);
  row->image = NULL;
  row->image_bytes = 0;
  if (rc == -EEXIST) /* another owner took the name since may_store looked */
    return api_error_set(err, 409, "problem_name_taken", "name", "problem %s is another's",
                         row->name);
  if (rc) err->status = 0;
  return rc;
}

int problems_get(struct ukernels *u, const char *name, int version, struct store_problem *out,
                 struct problem_def **def) {
  int rc = store_problem_get(ukernels_store(u), name, version, out);
  if (rc || !def) return rc;
  json_t *root = json_loads(out->definition, 0, NULL);
  struct api_error err; /* read back as it was taken, whatever --max-source says today */
  rc = root ? problem_def_parse(root, SIZE_MAX, def, &err) : -EIO;
  json_decref(root);
  if (rc) store_problem_clear(out);
  return rc ? (rc == -ENOMEM ? -ENOMEM : -EIO) : 0;
}

void problems_row_clear(struct store_problem *p) { store_problem_clear(p); }

int problems_each(struct ukernels *u, const char *name,
                  void (*fn)(void *arg, const struct store_problem *p), void *arg) {
  return store_problem_each(ukernels_store(u), name, fn, arg);
}

int problems_delete(struct ukernels *u, const char *name) {
  return store_problem_delete(ukernels_store(u), name);
}
