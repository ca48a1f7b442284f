/* problem_jobs.h: a problem's job from a request, and the plans of such jobs. */
#include "server/service/problem_jobs.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/problem/pexpr.h"
#include "kernels/problem/problem_plan.h"
#include "kernels/user/image_cache.h"
#include "kernels/user/ukreg.h"
#include "server/log.h"
#include "server/service/problems.h"

/* ---- the versions jobs name, parsed ---- */

#define CACHED_VERSIONS 32

struct cached {
  char name[64];
  int version;
  long long id; /* the version's own; 0: a free entry */
  struct problem_def *def;
  char sig_sha[65]; /* of its kernels' declaration (prelude + signature) */
  unsigned long long used;
};

static struct {
  pthread_mutex_t mu;
  struct ukernels *u;
  struct cached c[CACHED_VERSIONS];
  unsigned long long clock;
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Forgets c. Its reference stays in ukreg: a job planned before may still load it, and
 * a version's image never changes. */
static void drop(struct cached *c) {
  problem_def_free(c->def);
  memset(c, 0, sizeof *c);
}

int problem_jobs_declaration(const struct problem_def *def, char *decl, size_t len,
                             char sha_hex[65]) {
  char sig[PROBLEM_SIGNATURE_MAX];
  uint8_t sha[IMAGE_KEY_BYTES];
  if (problem_def_signature(def, sig, sizeof sig)) return -ENOSPC;
  int n = snprintf(decl, len, "%s%s", problem_def_prelude(def), sig);
  if (n < 0 || (size_t)n >= len) return -ENOSPC;
  if (image_sha256(decl, (size_t)n, sha)) return -ENOMEM;
  image_key_hex(sha, sha_hex);
  return 0;
}

/* Version row's reference into the backends' table, under -(its id). */
static int register_reference(const struct store_problem *row, const struct problem_def *d,
                              const char *sig_sha) {
  struct ukreg_kernel k;
  uint8_t sha[IMAGE_KEY_BYTES];
  memset(&k, 0, sizeof k);
  k.id = k.kernel_id = -row->id;
  k.version = row->version;
  snprintf(k.experiment, sizeof k.experiment, "problem:%s", row->name);
  snprintf(k.name, sizeof k.name, "reference");
  snprintf(k.owner, sizeof k.owner, "%s", row->owner);
  snprintf(k.entry, sizeof k.entry, "%s", d->reference.entry);
  snprintf(k.problem_sig, sizeof k.problem_sig, "%s", sig_sha);
  if (image_sha256(d->reference.source, d->reference.source_bytes, sha)) return -ENOMEM;
  image_key_hex(sha, k.source_sha);
  k.image = row->image;
  k.image_bytes = row->image_bytes;
  if (row->image && image_sha256(row->image, row->image_bytes, k.key)) return -ENOMEM;
  return ukreg_put(&k);
}

/* The entry of version `version` of name, loaded from the store when it is not cached
 * (evicting the least recently used). Under cache.mu. NULL with why. */
static struct cached *lookup(const char *name, int version, char *why, size_t why_len) {
  struct cached *free_one = &cache.c[0];
  for (int i = 0; i < CACHED_VERSIONS; i++) {
    struct cached *c = &cache.c[i];
    if (c->id && c->version == version && strcmp(c->name, name) == 0) {
      c->used = ++cache.clock;
      return c;
    }
    if (c->used < free_one->used) free_one = c;
  }
  if (!cache.u) {
    snprintf(why, why_len, "this gpulabd keeps no problems");
    return NULL;
  }
  struct store_problem row;
  struct problem_def *def = NULL;
  int rc = problems_get(cache.u, name, version, &row, &def);
  if (rc) {
    snprintf(why, why_len, "problem %.63s version %d %s", name, version,
             rc == -ENOENT ? "is not stored" : "cannot be read from the store");
    return NULL;
  }
  drop(free_one);
  struct cached *c = free_one;
  char decl[PROBLEM_SIGNATURE_MAX + 128];
  if ((rc = problem_jobs_declaration(def, decl, sizeof decl, c->sig_sha)) == 0)
    rc = register_reference(&row, def, c->sig_sha);
  if (rc) {
    snprintf(why, why_len, "problem %.63s: out of memory", name);
    problem_def_free(def);
    store_problem_clear(&row);
    return NULL;
  }
  snprintf(c->name, sizeof c->name, "%s", name);
  c->version = version;
  c->id = row.id;
  c->def = def;
  c->used = ++cache.clock;
  store_problem_clear(&row);
  return c;
}

/* ---- plans ---- */

static void plan_buffer(const struct problem_buffer *b, const struct problem_extent *x,
                        struct problem_plan_buffer *out) {
  snprintf(out->name, sizeof out->name, "%s", b->name);
  out->dtype = (int)b->dtype;
  out->elems = x->elems;
  out->bytes = x->bytes;
  out->init = (int)b->init.kind;
  out->a = b->init.a;
  out->b = b->init.b;
  out->exact = b->tolerance.exact;
  out->abs = b->tolerance.abs;
  out->rel = b->tolerance.rel;
}

static void unavailable(struct problem_plan_launch *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void unavailable(struct problem_plan_launch *l, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  l->available = false;
  vsnprintf(l->why, sizeof l->why, fmt, ap);
  va_end(ap);
}

/* A launch's sizes into l, unavailable when one is past an int. */
static void launch_sizes(struct problem_plan_launch *l, const int64_t grid[3],
                         const int64_t block[3], int64_t shared) {
  l->available = true;
  for (int i = 0; i < 3; i++) {
    if (grid[i] > INT_MAX || block[i] > INT_MAX)
      return unavailable(l, "its launch at these params is past CUDA's limits");
    l->grid[i] = (int)grid[i];
    l->block[i] = (int)block[i];
  }
  l->shared_bytes = shared > INT_MAX ? INT_MAX : (int)shared;
}

/* User run variant's launch: a kernel of this problem, compiled with this version's
 * signature, its grid's expressions at the job's values. */
static void kernel_launch(const struct cached *c, const int64_t *values, int variant,
                          struct problem_plan_launch *l) {
  struct ukreg_kernel k;
  char experiment[80];
  l->id = exp_user_kernel_id(variant);
  snprintf(experiment, sizeof experiment, "problem:%s", c->name);
  if (ukreg_identity(l->id, &k)) return unavailable(l, "kernel %lld is not loaded here", l->id);
  if (strcmp(k.experiment, experiment) != 0)
    return unavailable(l, "kernel %lld is a kernel of %.40s, not of %.40s", l->id, k.experiment,
                       experiment);
  if (strcmp(k.problem_sig, c->sig_sha) != 0)
    return unavailable(l,
                       "kernel %lld was compiled for another signature of %.40s; send it again "
                       "for version %d",
                       l->id, c->name, c->version);
  const struct problem_def *d = c->def;
  const char *names[PROBLEM_MAX_PARAMS];
  for (int i = 0; i < d->n_params; i++) names[i] = d->params[i].name;
  int64_t grid[3], block[3] = {k.block[0], k.block[1], k.block[2]};
  for (int i = 0; i < 3; i++) {
    struct pexpr *e = NULL;
    struct pexpr_error perr;
    int rc = pexpr_parse(k.grid_expr[i][0] ? k.grid_expr[i] : "1", names, d->n_params, &e, &perr);
    if (rc == 0) rc = pexpr_eval(e, values, &grid[i], &perr);
    pexpr_free(e);
    if (rc) return unavailable(l, "its grid[%d] at these params: %.80s", i, perr.message);
    if (grid[i] < 1)
      return unavailable(l, "its grid[%d] is %lld at these params", i, (long long)grid[i]);
  }
  launch_sizes(l, grid, block, k.shared_bytes);
  l->cooperative = k.cooperative;
}

static int plan_of(const struct cached *c, const struct exp_spec *s, struct problem_plan *p,
                   char *why, size_t why_len) {
  const struct problem_def *d = c->def;
  int64_t values[PROBLEM_MAX_PARAMS];
  struct problem_sizes z;
  struct api_error err;
  for (int i = 0; i < d->n_params; i++) values[i] = s->problem.values[i];
  if (problem_def_sizes(d, values, &z, &err)) {
    snprintf(why, why_len, "%s", err.message);
    return -EINVAL;
  }
  p->version_id = c->id;
  snprintf(p->name, sizeof p->name, "%s", c->name);
  p->version = c->version;
  p->n_params = d->n_params;
  for (int i = 0; i < d->n_params; i++)
    snprintf(p->param_names[i], sizeof p->param_names[i], "%s", d->params[i].name);
  p->n_inputs = d->n_inputs;
  p->n_outputs = d->n_outputs;
  for (int i = 0; i < d->n_inputs; i++) {
    plan_buffer(&d->inputs[i], &z.inputs[i], &p->inputs[i]);
    p->in_bytes += z.inputs[i].bytes;
  }
  for (int i = 0; i < d->n_outputs; i++) {
    plan_buffer(&d->outputs[i], &z.outputs[i], &p->outputs[i]);
    p->out_bytes += z.outputs[i].bytes;
  }
  p->scratch_bytes = z.scratch_bytes;
  p->nondeterministic = d->nondeterministic;
  p->has_bytes = z.has_bytes;
  p->has_flops = z.has_flops;
  p->bytes = z.bytes;
  p->flops = z.flops;
  p->reference.id = -c->id;
  launch_sizes(&p->reference, z.grid, z.block, z.shared_bytes);
  for (int r = 0; r < s->n_variants && r < EXP_MAX_VARIANTS; r++) {
    if (exp_variant_is_user(s->variants[r]))
      kernel_launch(c, values, s->variants[r], &p->runs[r]);
    else
      p->runs[r] = p->reference;
  }
  return 0;
}

static int resolve(const struct exp_spec *s, struct problem_plan *out, char *why, size_t why_len) {
  pthread_mutex_lock(&cache.mu);
  struct cached *c = lookup(s->problem.name, s->problem.version, why, why_len);
  int rc = c ? plan_of(c, s, out, why, why_len) : -ENOENT;
  pthread_mutex_unlock(&cache.mu);
  return rc;
}

void problem_jobs_serve(struct ukernels *u) {
  pthread_mutex_lock(&cache.mu);
  cache.u = u;
  if (!u)
    for (int i = 0; i < CACHED_VERSIONS; i++) drop(&cache.c[i]);
  pthread_mutex_unlock(&cache.mu);
  problem_plan_set_resolver(u ? resolve : NULL);
}

/* ---- a job from a request ---- */

/* "inputs": {"x": {"buffer": 3}, ...} into spec->problem.input_buffer, by def's input
 * names. */
static int inputs_parse(const struct problem_def *def, json_t *inputs, struct exp_spec *spec,
                        struct api_error *err) {
  memset(spec->problem.input_buffer, 0, sizeof spec->problem.input_buffer);
  if (!inputs) return 0;
  if (!json_is_object(inputs))
    return api_error_set(err, 400, "wrong_type", "inputs",
                         "inputs must be an object of the problem's inputs by name, each "
                         "{\"buffer\": id} (an upload of its dtype and shape)");
  const char *key;
  json_t *v;
  json_object_foreach(inputs, key, v) {
    char field[80], names[PROBLEM_MAX_BUFFERS * (PROBLEM_IDENT_MAX + 2) + 1] = "";
    snprintf(field, sizeof field, "inputs.%.60s", key);
    int k = 0;
    while (k < def->n_inputs && strcmp(def->inputs[k].name, key) != 0) k++;
    if (k == def->n_inputs) {
      for (int i = 0; i < def->n_inputs; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 def->inputs[i].name);
      return api_error_set(err, 400, "unknown_field", field,
                           "problem %s has no input '%.60s'; its inputs: %s", def->name, key,
                           names);
    }
    json_t *id = json_object_get(v, "buffer");
    if (!json_is_object(v) || json_object_size(v) != 1 || !id)
      return api_error_set(err, 400, "wrong_type", field,
                           "input %s must be {\"buffer\": id}: an upload (POST /buffers) of its "
                           "dtype (%s) and shape",
                           key, problem_dtype_name(def->inputs[k].dtype));
    if (!json_is_integer(id) || json_integer_value(id) < 1)
      return api_error_set(err, 400, "wrong_type", field,
                           "input %s's buffer must be a buffer's id, a positive integer", key);
    spec->problem.input_buffer[k] = (uint64_t)json_integer_value(id);
  }
  return 0;
}

static const enum exp_dtype dtype_of[PROBLEM_DTYPE_COUNT] = {
    [PROBLEM_DTYPE_FLOAT32] = EXP_DTYPE_F32,   [PROBLEM_DTYPE_FLOAT16] = EXP_DTYPE_F16,
    [PROBLEM_DTYPE_BFLOAT16] = EXP_DTYPE_BF16, [PROBLEM_DTYPE_INT32] = EXP_DTYPE_I32,
    [PROBLEM_DTYPE_UINT32] = EXP_DTYPE_U32,    [PROBLEM_DTYPE_INT8] = EXP_DTYPE_I8,
};

/* Whether a buffer of shape s can be input x: the same dims, a flat view of them, or
 * with more than 2 dims, rows of x's last dim. */
static bool shape_fits(const struct exp_shape *s, const struct problem_extent *x) {
  int64_t count = s->ndim == 2 ? s->dims[0] * s->dims[1] : s->dims[0];
  if (count != x->elems) return false;
  if (s->ndim == 1) return true;
  return x->n_dims >= 2 && s->dims[1] == x->dims[x->n_dims - 1];
}

static void shape_text(char *buf, size_t len, const int64_t *dims, int n) {
  size_t o = 0;
  buf[0] = '\0';
  for (int d = 0; d < n && o < len; d++)
    o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? ", " : "(", (long long)dims[d]);
  if (o < len) snprintf(buf + o, len - o, "%s)", n == 1 ? "," : "");
}

int problem_jobs_check_inputs(const struct problem_def *def, const struct exp_spec *spec,
                              struct engine *e, const char *client, uint64_t *missing,
                              struct api_error *err) {
  int64_t values[PROBLEM_MAX_PARAMS];
  struct problem_sizes z;
  *missing = 0;
  for (int i = 0; i < def->n_params; i++) values[i] = spec->problem.values[i];
  int rc = problem_def_sizes(def, values, &z, err);
  for (int k = 0; rc == 0 && k < def->n_inputs; k++) {
    uint64_t id = spec->problem.input_buffer[k];
    if (!id) continue;
    const struct problem_buffer *in = &def->inputs[k];
    char field[48], want[96], got[64];
    snprintf(field, sizeof field, "inputs.%s", in->name);
    struct engine_buffer_view v;
    if (engine_buffer_get(e, id, &v) || (client && strcmp(v.client, client) != 0)) {
      *missing = id;
      return api_error_set(err, 404, "buffer_not_found", field, "no buffer %llu",
                           (unsigned long long)id);
    }
    enum exp_dtype dtype = dtype_of[in->dtype];
    if (v.dtype != dtype)
      return api_error_set(err, 400, "dtype_mismatch", field,
                           "input %s is %s; buffer %llu holds %s (inputs are never converted: "
                           "upload a.astype(...) of its dtype)",
                           in->name, exp_dtype_name(dtype), (unsigned long long)id,
                           exp_dtype_name(v.dtype));
    int64_t dims[2] = {v.shape.dims[0], v.shape.dims[1]};
    shape_text(want, sizeof want, z.inputs[k].dims, z.inputs[k].n_dims);
    shape_text(got, sizeof got, dims, v.shape.ndim);
    if (!shape_fits(&v.shape, &z.inputs[k]))
      return api_error_set(err, 400, "shape_mismatch", field,
                           "input %s at these params is %s; buffer %llu is %s", in->name, want,
                           (unsigned long long)id, got);
  }
  return rc;
}

int problem_jobs_spec(const struct store_problem *row, const struct problem_def *def, json_t *body,
                      const struct api_kernel_resolver *kr, struct exp_spec *spec,
                      struct api_job_options *opts, struct api_error *err) {
  if (!json_is_object(body))
    return api_error_set(err, 400, "wrong_type", "", "the body must be a JSON object");
  json_t *rest = json_copy(body); /* the fields every job takes, without the params */
  if (!rest) return api_error_set(err, 500, "out_of_memory", NULL, "out of memory");
  json_t *params = json_object_get(body, "params"), *inputs = json_object_get(body, "inputs");
  json_object_del(rest, "params");
  json_object_del(rest, "inputs");
  int64_t values[PROBLEM_MAX_PARAMS];
  int rc = api_params_parse_json(EXP_PROBLEM, rest, spec, opts, kr, err);
  json_decref(rest);
  if (rc) return rc;
  if (params && !json_is_object(params))
    return api_error_set(err, 400, "wrong_type", "params",
                         "params must be an object of the problem's params by name");
  if ((rc = problem_def_values_parse(def, params, values, err))) return rc;
  snprintf(spec->problem.name, sizeof spec->problem.name, "%s", row->name);
  spec->problem.version = row->version;
  for (int i = 0; i < def->n_params; i++) spec->problem.values[i] = (int32_t)values[i];
  if ((rc = inputs_parse(def, inputs, spec, err))) return rc;
  if (opts->keep_output)
    return api_error_set(err, 400, "out_of_range", "keep_output",
                         "a problem's job keeps no output: its outputs are checked where they "
                         "are made");
  if (spec->graph)
    return api_error_set(err, 400, "out_of_range", "graph",
                         "a problem's kernels run in gpulab-runner, another process with its own "
                         "CUDA context: they cannot join a CUDA Graph");
  return problem_jobs_plan(spec, err);
}

int problem_jobs_plan(struct exp_spec *spec, struct api_error *err) {
  struct problem_plan plan;
  char why[160];
  int rc = problem_plan_of(spec, &plan, why, sizeof why);
  if (rc)
    return api_error_set(err, rc == -ENOENT ? 404 : 503,
                         rc == -ENOENT ? "problem_not_found" : "store_unavailable", "name", "%s",
                         why);
  for (int r = 0; r < spec->n_variants; r++)
    if (!plan.runs[r].available)
      return api_error_set(err, 400, "unknown_variant", "variant", "%s", plan.runs[r].why);
  problem_plan_facts(&plan, spec);
  return 0;
}
