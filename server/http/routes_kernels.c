/* Users' kernels over HTTP: POST /kernels (JSON, text/x-cuda with the fields as query
 * parameters, or multipart/form-data; the same owner, name and experiment again make a
 * new version), GET /kernels, GET and DELETE /kernels/{id},
 * GET /kernels/signatures, and the check of the kernels a job names. Compiling,
 * caching and the limits are server/service/ukernels.h's; what a kernel of each experiment is,
 * its descriptor's user block (exp_desc.user). Errors are problems (RFC 9457); a
 * compile error's 422 adds the first error's line and the compile report. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/encode.h"
#include "server/http/kernel_doc.h"
#include "server/http/routes.h"
#include "server/http/submit.h"
#include "server/service/problem_jobs.h"
#include "server/service/problems.h"
#include "server/service/ukernels.h"

/* One kernel as sent, before it is compiled; strings point into the request. */
struct submit {
  const char *experiment, *name, *source, *entry;
  /* A kernel of a problem instead of an experiment's: its name, its grid as given
   * (JSON, borrowed; or as text), and what problem_kernel() found: the problem's
   * newest version, the kind the kernel is stored as ("problem:<name>"), the
   * declaration it compiles with, its grid's expressions. */
  const char *problem, *grid_raw;
  json_t *grid_json;
  struct problem_def *def;
  int problem_version;
  char kind[80], declaration[PROBLEM_SIGNATURE_MAX + 128], problem_sig[65];
  char grid_expr[3][PROBLEM_GRID_TEXT];
  size_t source_len;
  int block[3], tile[2], grid[3];
  bool has_tile, has_grid;
  int shared_bytes;
  long long scratch_bytes; /* 0: none; else one more last argument, void *scratch */
  bool cooperative;        /* launched with cuLaunchCooperativeKernel (a grid-wide sync) */
  bool is_public;
  int n_options;
  const char *options[UCOMPILE_MAX_OPTIONS];
  char option_buf[UCOMPILE_MAX_OPTIONS][UCOMPILE_MAX_OPTION_LEN];
};

/* The fields of a multipart/form-data body. */
#define FORM_FIELDS 12
struct form {
  char *field[FORM_FIELDS];
  char *value[FORM_FIELDS];
  size_t len[FORM_FIELDS];
  int n;
};

static const char *form_get(const struct form *f, const char *name, size_t *len) {
  for (int i = 0; i < f->n; i++)
    if (!strcmp(f->field[i], name)) {
      if (len) *len = f->len[i];
      return f->value[i];
    }
  return NULL;
}

static void form_free(struct form *f) {
  for (int i = 0; i < f->n; i++) free(f->field[i]), free(f->value[i]);
  f->n = 0;
}

static enum MHD_Result form_part(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size) {
  struct form *f = cls;
  int i = 0;
  while (i < f->n && strcmp(f->field[i], key)) i++;
  if (i == f->n) {
    if (f->n == FORM_FIELDS) return MHD_YES; /* more fields than any kernel has: ignored */
    f->field[i] = strdup(key);
    f->value[i] = calloc(1, 1);
    f->len[i] = 0;
    f->n++;
    if (!f->field[i] || !f->value[i]) return MHD_NO;
  }
  char *v = realloc(f->value[i], f->len[i] + size + 1);
  if (!v) return MHD_NO;
  memcpy(v + f->len[i], data, size);
  f->len[i] += size;
  v[f->len[i]] = '\0';
  f->value[i] = v;
  return MHD_YES;
}

/* Parses "32,8" (or "32") into up to max ints, each in [lo, hi]; returns the count or -1. */
static int int_list(const char *s, int *out, int max, long lo, long hi) {
  int n = 0;
  while (s && *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < lo || v > hi || n == max) return -1;
    out[n++] = (int)v;
    if (*end && *end != ',') return -1;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

static int json_int_list(json_t *a, int *out, int max, long lo, long hi) {
  if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > (size_t)max) return -1;
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *v = json_array_get(a, i);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) return -1;
    out[i] = (int)json_integer_value(v);
  }
  return (int)json_array_size(a);
}

static bool name_ok(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > 63) return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.') return false;
  return true;
}

static int add_option(struct submit *s, const char *o, size_t len, struct api_error *err) {
  if (s->n_options == UCOMPILE_MAX_OPTIONS)
    return api_error_set(err, 400, "out_of_range", "options", "at most %d options",
                         UCOMPILE_MAX_OPTIONS);
  if (len >= UCOMPILE_MAX_OPTION_LEN)
    return api_error_set(err, 400, "out_of_range", "options",
                         "an option of %zu characters; at most %d", len,
                         UCOMPILE_MAX_OPTION_LEN - 1);
  memcpy(s->option_buf[s->n_options], o, len);
  s->option_buf[s->n_options][len] = '\0';
  s->options[s->n_options] = s->option_buf[s->n_options];
  s->n_options++;
  return 0;
}

#define BLOCK_RULE "block is 1 to 3 positive integers, e.g. [32, 8] (32,8 as a query parameter)"
#define TILE_RULE "tile is 1 or 2 positive integers, e.g. [32, 32]"
#define GRID_RULE "grid is 1 to 3 positive integers"

/* The fields as text (query parameters, form fields); the source comes apart. */
static int submit_from_text(struct submit *s, const char *(*get)(void *, const char *), void *ctx,
                            struct api_error *err) {
  s->experiment = get(ctx, "experiment");
  s->problem = get(ctx, "problem");
  s->name = get(ctx, "name");
  const char *v;
  if ((v = get(ctx, "entry"))) s->entry = v;
  if ((v = get(ctx, "block")) && int_list(v, s->block, 3, 1, 1024) < 1)
    return api_error_set(err, 400, "out_of_range", "block", BLOCK_RULE);
  if ((v = get(ctx, "tile"))) {
    if (int_list(v, s->tile, 2, 1, 1 << 20) < 1)
      return api_error_set(err, 400, "out_of_range", "tile", TILE_RULE);
    s->has_tile = true;
  }
  if ((v = get(ctx, "grid"))) {
    s->grid_raw = v; /* a problem's kernel: expressions, read by problem_kernel() */
    if (int_list(v, s->grid, 3, 1, 0x7fffffff) >= 1)
      s->has_grid = true;
    else if (!s->problem)
      return api_error_set(err, 400, "out_of_range", "grid", GRID_RULE);
  }
  if ((v = get(ctx, "shared_bytes"))) {
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < 0 || n > 1 << 30)
      return api_error_set(err, 400, "out_of_range", "shared_bytes",
                           "shared_bytes is a byte count");
    s->shared_bytes = (int)n;
  }
  if ((v = get(ctx, "scratch_bytes"))) {
    char *end;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end || n < 0)
      return api_error_set(err, 400, "out_of_range", "scratch_bytes",
                           "scratch_bytes is a byte count");
    s->scratch_bytes = n;
  }
  if ((v = get(ctx, "public"))) s->is_public = !strcmp(v, "1") || !strcasecmp(v, "true");
  if ((v = get(ctx, "cooperative"))) {
    if (strcmp(v, "1") && strcasecmp(v, "true") && strcmp(v, "0") && strcasecmp(v, "false"))
      return api_error_set(err, 400, "out_of_range", "cooperative",
                           "cooperative is true or false (1 or 0)");
    s->cooperative = !strcmp(v, "1") || !strcasecmp(v, "true");
  }
  if ((v = get(ctx, "options"))) {
    while (*v) {
      size_t n = strcspn(v, ",");
      if (n && add_option(s, v, n, err)) return -1;
      v += n + (v[n] == ',');
    }
  }
  return 0;
}

static const char *query_get(void *ctx, const char *name) {
  return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}
static const char *form_get_text(void *ctx, const char *name) { return form_get(ctx, name, NULL); }

/* Whether a is a list of 1 to 3 strings or integers (a problem's kernel's grid). */
static bool expressions(json_t *a) {
  if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > 3) return false;
  for (size_t i = 0; i < json_array_size(a); i++)
    if (!json_is_string(json_array_get(a, i)) && !json_is_integer(json_array_get(a, i)))
      return false;
  return true;
}

/* One member of the JSON form. */
static int submit_member(struct submit *s, const char *key, json_t *v, struct api_error *err) {
  if (!strcmp(key, "experiment") || !strcmp(key, "name") || !strcmp(key, "source") ||
      !strcmp(key, "entry") || !strcmp(key, "problem")) {
    if (!json_is_string(v))
      return api_error_set(err, 400, "wrong_type", key, "%s must be a string", key);
    if (!strcmp(key, "experiment"))
      s->experiment = json_string_value(v);
    else if (!strcmp(key, "problem"))
      s->problem = json_string_value(v);
    else if (!strcmp(key, "name"))
      s->name = json_string_value(v);
    else if (!strcmp(key, "entry"))
      s->entry = json_string_value(v);
    else
      s->source = json_string_value(v), s->source_len = json_string_length(v);
  } else if (!strcmp(key, "block")) {
    if (json_int_list(v, s->block, 3, 1, 1024) < 1)
      return api_error_set(err, 400, "out_of_range", key, BLOCK_RULE);
  } else if (!strcmp(key, "tile")) {
    if (json_int_list(v, s->tile, 2, 1, 1 << 20) < 1)
      return api_error_set(err, 400, "out_of_range", key, TILE_RULE);
    s->has_tile = true;
  } else if (!strcmp(key, "grid")) {
    s->grid_json = v; /* a problem's kernel: expressions, read by problem_kernel() */
    if (json_int_list(v, s->grid, 3, 1, 0x7fffffff) >= 1)
      s->has_grid = true;
    else if (!expressions(v))
      return api_error_set(err, 400, "out_of_range", key, GRID_RULE);
  } else if (!strcmp(key, "shared_bytes")) {
    if (!json_is_integer(v))
      return api_error_set(err, 400, "wrong_type", key, "shared_bytes is an integer");
    if (json_integer_value(v) < 0 || json_integer_value(v) > 1 << 30)
      return api_error_set(err, 400, "out_of_range", key, "shared_bytes is a byte count");
    s->shared_bytes = (int)json_integer_value(v);
  } else if (!strcmp(key, "scratch_bytes")) {
    if (!json_is_integer(v))
      return api_error_set(err, 400, "wrong_type", key, "scratch_bytes is an integer");
    if (json_integer_value(v) < 0)
      return api_error_set(err, 400, "out_of_range", key, "scratch_bytes is a byte count");
    s->scratch_bytes = (long long)json_integer_value(v);
  } else if (!strcmp(key, "cooperative")) {
    if (!json_is_boolean(v))
      return api_error_set(err, 400, "wrong_type", key, "cooperative is true or false");
    s->cooperative = json_is_true(v);
  } else if (!strcmp(key, "public")) {
    if (!json_is_boolean(v))
      return api_error_set(err, 400, "wrong_type", key, "public is true or false");
    s->is_public = json_is_true(v);
  } else if (!strcmp(key, "options")) {
    if (!json_is_array(v))
      return api_error_set(err, 400, "wrong_type", key, "options is a list of strings");
    size_t i;
    json_t *o;
    json_array_foreach(v, i, o) {
      if (!json_is_string(o))
        return api_error_set(err, 400, "wrong_type", key, "options is a list of strings");
      if (add_option(s, json_string_value(o), json_string_length(o), err)) return -1;
    }
  } else {
    return api_error_set(
        err, 400, "unknown_field", key,
        "unknown field '%.40s'; a kernel has experiment (or problem), name, source, entry, "
        "block, tile, grid, shared_bytes, scratch_bytes, cooperative, options, public",
        key);
  }
  return 0;
}

static int submit_from_json(struct submit *s, json_t *root, struct api_error *err) {
  if (!json_is_object(root))
    return api_error_set(err, 400, "wrong_type", NULL, "the body must be a JSON object");
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) if (submit_member(s, key, v, err)) return -1;
  return 0;
}

/* "transpose, gemm, stencil": the experiments that take users' kernels. */
static void user_experiments(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int t = 0; t < EXP_TYPE_COUNT; t++)
    if (exp_user_of((enum exp_type)t) && used < len)
      used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                               exp_type_name((enum exp_type)t));
}

/* The experiment's user block, or NULL when it takes no users' kernels. */
static const struct exp_user *user_of(const char *experiment) {
  int t = experiment ? exp_type_from_name(experiment) : -1;
  return t >= 0 ? exp_user_of((enum exp_type)t) : NULL;
}

/* A kernel of problem s->problem: the problem's newest version, which r may see; the
 * block and grid its reference has where s gives none (the block at the params'
 * defaults), the grid's expressions bounded; the declaration it compiles with; then
 * s->experiment names its kind, "problem:<name>". 0 or -EINVAL with err. */
static int problem_kernel(struct request *r, struct submit *s, struct api_error *err) {
  if (s->experiment)
    return api_error_set(err, 400, "out_of_range", "problem",
                         "a kernel is of an experiment or of a problem: give one, not both");
  struct store_problem row;
  int rc = route_problem_visible(r, s->problem, 0, &row, &s->def);
  if (rc)
    return rc == -ENOENT
               ? api_error_set(err, 404, "problem_not_found", "problem",
                               "no problem '%.63s' (GET /problems lists them)", s->problem)
               : api_error_set(err, 503, "store_unavailable", "problem",
                               "the store cannot be read");
  s->problem_version = row.version;
  problems_row_clear(&row);
  const struct problem_def *d = s->def;
  if (s->has_tile)
    return api_error_set(err, 400, "out_of_range", "tile",
                         "a problem's kernel gives its grid as expressions over the problem's "
                         "params, not a tile");
  if (s->scratch_bytes)
    return api_error_set(err, 400, "out_of_range", "scratch_bytes",
                         "a problem's kernels take the scratch its definition asks for, none of "
                         "their own");
  int64_t values[PROBLEM_MAX_PARAMS];
  struct problem_sizes at;
  for (int i = 0; i < d->n_params; i++) values[i] = d->params[i].def;
  if (!s->block[0] && problem_def_sizes(d, values, &at, err) == 0)
    for (int i = 0; i < 3; i++) s->block[i] = (int)at.block[i];
  for (int i = 0; i < 3; i++)
    if (!s->block[i]) s->block[i] = 1;
  json_t *grid = s->grid_json ? json_incref(s->grid_json) : json_array();
  if (!s->grid_json && s->grid_raw) /* "rows,1,1", "cdiv(n, 256),1": commas outside calls */
    for (const char *g = s->grid_raw; *g;) {
      size_t n = 0;
      for (int depth = 0; g[n] && (g[n] != ',' || depth > 0); n++)
        depth += (g[n] == '(') - (g[n] == ')');
      json_array_append_new(grid, json_stringn(g, n));
      g += n + (g[n] == ',');
    }
  else if (!s->grid_json) /* the reference's */
    for (int i = 0; i < 3; i++)
      json_array_append_new(grid, json_string(pexpr_text(d->reference.grid[i])));
  rc = problem_def_grid_parse(d, grid, "grid", s->grid_expr, err);
  json_decref(grid);
  if (rc) return -EINVAL;
  if (problem_jobs_declaration(d, s->declaration, sizeof s->declaration, s->problem_sig))
    return api_error_set(err, 500, "out_of_memory", NULL, "out of memory");
  snprintf(s->kind, sizeof s->kind, "problem:%s", d->name);
  s->experiment = s->kind;
  return 0;
}

/* Checks what compiling does not: names, sizes, the launch shape's limits. */
static int submit_check(const struct submit *s, const struct ukernels_config *cfg,
                        struct api_error *err) {
  char names[96];
  user_experiments(names, sizeof names);
  if (!s->experiment)
    return api_error_set(err, 400, "missing_field", "experiment",
                         "experiment is one of %s (or give problem: a problem's name)", names);
  if (!s->problem && !user_of(s->experiment))
    return api_error_set(err, 400, "unknown_type", "experiment",
                         "experiment must be one of %s, got '%.20s'", names, s->experiment);
  if (!s->problem && s->grid_json && !s->has_grid)
    return api_error_set(err, 400, "out_of_range", "grid", GRID_RULE);
  if (!s->name) return api_error_set(err, 400, "missing_field", "name", "the kernel needs a name");
  if (!name_ok(s->name))
    return api_error_set(err, 400, "out_of_range", "name",
                         "name is 1 to 63 letters, digits, '_', '-' or '.'");
  if (!s->source)
    return api_error_set(err, 400, "missing_field", "source",
                         "no source: send the kernel's CUDA C");
  if (s->source_len == 0)
    return api_error_set(err, 400, "out_of_range", "source", "the source is empty");
  if (s->source_len > cfg->max_source_bytes)
    return api_error_set(err, 413, "source_too_large", "source",
                         "the source has %zu bytes; at most %zu", s->source_len,
                         cfg->max_source_bytes);
  long threads = (long)s->block[0] * s->block[1] * s->block[2];
  if (s->block[1] > 1024 || s->block[2] > 64 || threads > 1024)
    return api_error_set(err, 400, "out_of_range", "block",
                         "block %dx%dx%d: at most 1024 threads, y <= 1024, z <= 64", s->block[0],
                         s->block[1], s->block[2]);
  if (s->has_tile && s->has_grid)
    return api_error_set(err, 400, "out_of_range", "grid", "give tile or grid, not both");
  if (s->has_grid && (s->grid[1] > 65535 || s->grid[2] > 65535))
    return api_error_set(err, 400, "out_of_range", "grid", "grid y and z are at most 65535");
  if (s->shared_bytes > cfg->max_shared_optin)
    return api_error_set(err, 400, "out_of_range", "shared_bytes",
                         "%d bytes of dynamic shared memory; the device allows %d", s->shared_bytes,
                         cfg->max_shared_optin);
  if ((unsigned long long)s->scratch_bytes > cfg->max_scratch_bytes)
    return api_error_set(err, 400, "out_of_range", "scratch_bytes",
                         "%lld bytes of scratch; this gpulabd allows %zu (--max-scratch)",
                         s->scratch_bytes, cfg->max_scratch_bytes);
  return 0;
}

/* ---- JSON ---- */

static json_t *ints_json(const int *v, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
  return a;
}

/* The launch and options as stored (store_kernel.spec). */
static json_t *spec_json(const struct submit *s) {
  json_t *opts = json_array();
  for (int i = 0; i < s->n_options; i++) json_array_append_new(opts, json_string(s->options[i]));
  json_t *o = json_pack("{s:s,s:o,s:i,s:o}", "entry", s->entry, "block", ints_json(s->block, 3),
                        "shared_bytes", s->shared_bytes, "options", opts);
  if (!o) return NULL;
  if (s->scratch_bytes) /* only then: kernels stored without it keep their signature */
    json_object_set_new(o, "scratch_bytes", json_integer((json_int_t)s->scratch_bytes));
  if (s->cooperative) json_object_set_new(o, "cooperative", json_true());
  if (s->problem) { /* the problem's version it was compiled for, its grid's expressions */
    json_t *grid = json_array();
    for (int i = 0; i < 3; i++) json_array_append_new(grid, json_string(s->grid_expr[i]));
    json_object_set_new(o, "problem", json_string(s->def->name));
    json_object_set_new(o, "problem_version", json_integer(s->problem_version));
    json_object_set_new(o, "problem_signature_sha256", json_string(s->problem_sig));
    json_object_set_new(o, "grid", grid);
  } else if (s->has_grid)
    json_object_set_new(o, "grid", ints_json(s->grid, 3));
  else
    json_object_set_new(o, "tile", ints_json(s->tile, 2));
  return o;
}

/* ---- POST /kernels ---- */

/* Fills the defaults a submission left out: the experiment's block and tile, then one
 * output per thread. */
static void submit_defaults(struct submit *s) {
  if (s->problem) return; /* its reference's launch: problem_kernel() */
  const struct exp_user *u = user_of(s->experiment);
  if (!s->block[0]) { /* no block: the experiment's; and then its tile unless given */
    for (int i = 0; i < 3; i++) s->block[i] = u ? u->default_block[i] : 1;
    if (u && !s->has_tile && !s->has_grid)
      s->tile[0] = u->default_tile[0], s->tile[1] = u->default_tile[1];
  }
  for (int i = 1; i < 3; i++)
    if (!s->block[i]) s->block[i] = 1;
  if (!s->has_tile && !s->has_grid && !s->tile[0])
    s->tile[0] = s->block[0], s->tile[1] = s->block[1];
  if (s->has_tile && s->tile[1] == 0) s->tile[1] = 1;
  for (int i = 0; i < 3; i++)
    if (s->has_grid && s->grid[i] == 0) s->grid[i] = 1;
}

/* Reads the submission from the body in its media type. form is filled for multipart. */
static int read_submit(struct request *r, struct submit *s, struct form *form, json_t **root,
                       struct api_error *err) {
  memset(s, 0, sizeof *s);
  s->entry = "kernel";
  const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_CONTENT_TYPE);
  bool cuda = ct && (!strncasecmp(ct, "text/x-cuda", 11) || !strncasecmp(ct, "text/plain", 10));
  bool multipart = ct && !strncasecmp(ct, "multipart/form-data", 19);
  int rc;
  if (cuda) {
    s->source = r->body ? r->body : "";
    s->source_len = r->body_len;
    rc = submit_from_text(s, query_get, r->conn, err);
  } else if (multipart) {
    struct MHD_PostProcessor *pp = MHD_create_post_processor(r->conn, 16 << 10, form_part, form);
    if (!pp || MHD_post_process(pp, r->body ? r->body : "", r->body_len) != MHD_YES) {
      if (pp) MHD_destroy_post_processor(pp);
      return api_error_set(err, 400, "invalid_form", NULL,
                           "the multipart/form-data body could not be read");
    }
    MHD_destroy_post_processor(pp);
    s->source = form_get(form, "source", &s->source_len);
    rc = submit_from_text(s, form_get_text, form, err);
  } else {
    json_error_t je;
    *root = json_loadb(r->body ? r->body : "", r->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!*root)
      return api_error_set(err, 400, "invalid_json", NULL,
                           "malformed JSON at line %d, column %d: %s", je.line, je.column, je.text);
    rc = submit_from_json(s, *root, err);
  }
  if (rc == 0) submit_defaults(s);
  return rc;
}

/* The refusals of ucompile_run before it compiled (-EINVAL): the source (#include, a
 * NUL byte: 422 at its line), the entry, or an option (400). */
static enum MHD_Result refused(struct request *r, const char *src, size_t len, const char *msg) {
  int line = 0;
  char why[256];
  if (strlen(src) != len)
    return kernel_unprocessable(r, "source_not_allowed", "source", 0, NULL,
                                "the source holds a NUL byte");
  struct ukernels *u = r->srv->opts.service->ukernels;
  if (ucompile_source_check(src, u ? ukernels_nvrtc(u, NULL) : NULL, &line, why, sizeof why) ==
      -EINVAL)
    return kernel_unprocessable(r, "source_not_allowed", "source", line, NULL, why);
  if (strncmp(msg, "entry", 5) == 0)
    return respond_fail(r, 400, "out_of_range", "entry", "%s", msg);
  return respond_fail(r, 400, "option_not_allowed", "options", "%s", msg);
}

/* The kernel, compiled: stored (as durably as a job) as a new kernel (kernel_id 0) or
 * a new version of kernel_id, put in the backends' table, and answered (201, the
 * version), or with ?run=1 run at once beside every built-in. */
static enum MHD_Result keep_and_answer(struct request *r, struct ukernels *u,
                                       const struct submit *s, char *src,
                                       const struct ucompile_report *rep, bool cached,
                                       int64_t kernel_id) {
  struct store_kernel k;
  memset(&k, 0, sizeof k);
  k.kernel_id = kernel_id;
  request_client(r, k.owner, sizeof k.owner);
  snprintf(k.name, sizeof k.name, "%s", s->name);
  snprintf(k.experiment, sizeof k.experiment, "%s", s->experiment);
  k.is_public = s->is_public;
  k.created = engine_now_unix();
  uint8_t sha[IMAGE_KEY_BYTES];
  if (image_sha256(src, s->source_len, sha)) return respond_json(r, 500, NULL);
  image_key_hex(sha, k.source_sha);
  k.source = src;
  json_t *spec = spec_json(s), *report = ukernels_report_json(u, rep, cached);
  json_t *occupancy = ukernels_occupancy_json(u, s->block, s->shared_bytes, rep);
  if (report && occupancy)
    json_object_set_new(report, "occupancy", occupancy);
  else
    json_decref(occupancy);
  k.spec = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
  k.report = report ? json_dumps(report, JSON_COMPACT) : NULL;
  json_decref(spec);
  json_decref(report);
  k.image = rep->image;
  k.image_bytes = rep->image_bytes;
  k.ptx = rep->ptx; /* borrowed, as the image: GET /kernels/{id}/ptx answers it */
  enum MHD_Result ret;
  int64_t id = 0;
  int rc = k.spec && k.report ? ukernels_insert(u, &k, &id, &k.version) : -ENOMEM;
  if (rc == -ENOENT) { /* its versions were deleted since: a kernel of its own */
    k.kernel_id = 0;
    rc = ukernels_insert(u, &k, &id, &k.version);
  }
  if (rc == -ENOMEM) {
    ret = respond_json(r, 500, NULL);
  } else if (rc) {
    ret = respond_storage(r, rc); /* refused like a job: 507 or 503, nothing kept */
  } else {
    k.id = id;
    if (k.kernel_id <= 0) k.kernel_id = id;
    ukernels_register(&k); /* runnable at once; a failure shows as unavailable runs */
    const char *run = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "run");
    if (run && (!strcmp(run, "1") || !strcmp(run, "true"))) {
      /* ?run=1: a job of the experiment at its default size, every built-in and this. */
      struct exp_spec spec;
      if (s->problem) { /* its problem's reference beside it, at the params' defaults */
        exp_spec_default(EXP_PROBLEM, &spec);
        snprintf(spec.problem.name, sizeof spec.problem.name, "%s", s->def->name);
        spec.problem.version = s->problem_version;
        for (int i = 0; i < s->def->n_params; i++) spec.problem.values[i] = s->def->params[i].def;
      } else {
        exp_spec_default((enum exp_type)exp_type_from_name(s->experiment), &spec);
      }
      if (spec.n_variants < EXP_MAX_VARIANTS)
        spec.variants[spec.n_variants++] = exp_user_variant(id);
      struct api_job_options opts = {.exclusive = true, .device = -1};
      struct api_error err;
      ret = s->problem && problem_jobs_plan(&spec, &err) ? respond_error(r, &err)
                                                         : submit_job(r, &spec, &opts, "");
    } else {
      snprintf(r->location, sizeof r->location, "/kernels/%lld/versions/%d", (long long)k.kernel_id,
               k.version);
      ret = respond_json(r, 201, kernel_doc_json(&k, KERNEL_DOC_VERSION, true, 0, r->api_prefix));
    }
  }
  free(k.spec);
  free(k.report);
  return ret;
}

/* Where s goes: a new version of the owner's kernel of that name and experiment (the
 * newest such, *kernel_id), or a new kernel (*kernel_id 0). Answers into *ret and
 * returns true when it may not: 403 kernel_quota when the owner has as many kernels,
 * or as much source in their newest versions, as allowed; 409 too_many_versions when
 * the kernel has as many versions as allowed. */
static bool over_quota(struct request *r, struct ukernels *u, const struct submit *s,
                       int64_t *kernel_id, enum MHD_Result *ret) {
  const struct ukernels_config *cfg = ukernels_config(u);
  int n = 0, versions = 0;
  size_t bytes = 0, replaced = 0;
  char owner[64];
  request_client(r, owner, sizeof owner);
  *kernel_id = 0;
  int rc = ukernels_named(u, owner, s->experiment, s->name, kernel_id, 1);
  struct store_kernel newest;
  if (rc > 0 && (rc = ukernels_version(u, *kernel_id, 0, &newest, &versions)) == 0) {
    replaced = newest.source ? strlen(newest.source) : 0;
    ukernels_clear(&newest);
  } else if (rc == -ENOENT) {
    *kernel_id = 0, rc = 0;
  }
  if (rc >= 0) rc = ukernels_count(u, owner, &n, &bytes);
  if (rc < 0) {
    *ret = respond_storage(r, rc);
    return true;
  }
  if (*kernel_id && versions >= cfg->max_versions) {
    *ret = respond_fail(r, 409, "too_many_versions", "name",
                        "kernel %lld (%s) has %d versions; at most %d (--max-kernel-versions): "
                        "DELETE %s/kernels/%lld/versions/{version} for old ones first",
                        (long long)*kernel_id, s->name, versions, cfg->max_versions,
                        r->api_prefix ? r->api_prefix : "", (long long)*kernel_id);
    return true;
  }
  if ((*kernel_id || n < cfg->max_per_client) &&
      bytes - replaced + s->source_len <= (size_t)cfg->max_per_client * cfg->max_source_bytes)
    return false;
  *ret = respond_fail(
      r, 403, "kernel_quota", NULL,
      "%s has %d kernels stored (%zu bytes of source in their newest versions); at most %d "
      "(--max-kernels; versions do not count): DELETE /kernels/{id} first",
      owner, n, bytes, cfg->max_per_client);
  return true;
}

static enum MHD_Result kernels_post(struct request *r, struct ukernels *u) {
  struct submit s;
  struct form form = {0};
  json_t *root = NULL;
  struct api_error err;
  enum MHD_Result ret;
  const char *why = NULL;
  char *src = NULL;
  struct ucompile_report *rep = NULL;
  if (read_submit(r, &s, &form, &root, &err) || (s.problem && problem_kernel(r, &s, &err)) ||
      submit_check(&s, ukernels_config(u), &err)) {
    ret = respond_error(r, &err);
    goto out;
  }
  if (!ukernels_nvrtc(u, &why)) {
    ret = respond_fail(
        r, 503, "nvrtc_unavailable", NULL,
        "users' kernels need NVRTC (libnvrtc.so from the CUDA toolkit), which this gpulabd "
        "did not find: %.200s",
        why);
    goto out;
  }
  int64_t kernel_id = 0;
  if (request_store_refuses(r, &ret) || over_quota(r, u, &s, &kernel_id, &ret)) goto out;
  if (!(src = strndup(s.source, s.source_len))) {
    ret = respond_json(r, 500, NULL);
    goto out;
  }
  char file[80], scratch_decl[512];
  snprintf(file, sizeof file, "%s.cu", s.name);
  const char *decl = s.problem ? s.declaration : user_of(s.experiment)->declaration;
  if (s.scratch_bytes && ucompile_declaration_scratch(decl, scratch_decl, sizeof scratch_decl) == 0)
    decl = scratch_decl;
  struct ucompile_req req = {.source = src,
                             .name = file,
                             .entry = s.entry,
                             .declaration = decl,
                             .signature_of = s.problem ? "problem" : NULL,
                             .options = s.options,
                             .n_options = s.n_options};
  bool cached = false;
  char msg[320];
  int rc = strlen(src) != s.source_len ? -EINVAL
                                       : ukernels_compile(u, &req, &rep, &cached, msg, sizeof msg);
  if (rc == -EINVAL) {
    ret = refused(r, src, s.source_len, msg);
  } else if (rc == -EBUSY) {
    r->retry_after_s = 1;
    ret = respond_fail(r, 503, "compile_busy", NULL, "%s", msg);
  } else if (rc == -ENOMEM) {
    ret = respond_json(r, 500, NULL);
  } else if (rc) {
    ret = respond_fail(r, 500, "compile_error", NULL, "NVRTC failed: %s", msg);
  } else if (!rep->ok) {
    ret = kernel_compile_failed(r, rep, ukernels_report_json(u, rep, cached), "source");
  } else {
    ret = keep_and_answer(r, u, &s, src, rep, cached, kernel_id);
  }
out:
  ucompile_report_free(rep);
  free(src);
  problem_def_free(s.def);
  json_decref(root);
  form_free(&form);
  return ret;
}

/* ---- GET /kernels, /kernels/signatures, /kernels/{id} ---- */

struct listing {
  json_t *list;
  const char *prefix;
};

static void list_one(void *arg, const struct store_kernel *k) {
  struct listing *l = arg;
  json_array_append_new(l->list,
                        kernel_doc_json(k, KERNEL_DOC_KERNEL, false, k->versions, l->prefix));
}

static enum MHD_Result kernels_list(struct request *r, struct ukernels *u) {
  const char *exp = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "experiment");
  char who[64];
  request_client(r, who, sizeof who);
  json_t *list = json_array();
  struct listing l = {list, r->api_prefix};
  int rc = ukernels_list(u, request_sees_all(r) ? NULL : who, exp, list_one, &l);
  if (rc < 0) {
    json_decref(list);
    return rc == -ENOMEM ? respond_json(r, 500, NULL) : respond_storage(r, rc);
  }
  return respond_json(r, 200, json_pack("{s:o}", "kernels", list));
}

/* One entry per experiment that takes users' kernels, from its user block. */
static enum MHD_Result kernels_signatures(struct request *r) {
  json_t *list = json_array();
  for (int t = 0; t < EXP_TYPE_COUNT; t++) {
    const struct exp_user *u = exp_user_of((enum exp_type)t);
    if (!u) continue;
    char with_scratch[256]; /* the same with scratch_bytes: one more last argument */
    const char *close = strrchr(u->signature, ')');
    snprintf(with_scratch, sizeof with_scratch, "%.*s, void* scratch)",
             (int)(close ? close - u->signature : (long)strlen(u->signature)), u->signature);
    json_array_append_new(list,
                          json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:s,s:s}", "experiment",
                                    exp_type_name((enum exp_type)t), "signature", u->signature,
                                    "signature_with_scratch", with_scratch, "meaning", u->meaning,
                                    "grid_rule", u->grid_rule, "default_block",
                                    ints_json(u->default_block, 3), "default_tile",
                                    ints_json(u->default_tile, 2), "template", u->template_source,
                                    "output_before_launch", u->reset_zero ? "zero" : "nan"));
  }
  return respond_json(r, 200, json_pack("{s:o}", "signatures", list));
}

/* GET /kernels/{id}: the kernel as its newest version, with its count of versions;
 * DELETE: the kernel with every version (its owner only). */
static enum MHD_Result kernel_one(struct request *r, struct ukernels *u, const char *id_text) {
  uint64_t id;
  int versions = 0;
  struct store_kernel k;
  if (!parse_id(id_text, &id) || id > INT64_MAX ||
      ukernels_version(u, (int64_t)id, 0, &k, &versions))
    return respond_fail(r, 404, "kernel_not_found", "id", "no kernel '%.40s'", id_text);
  bool mine = request_may_see(r, k.owner);
  enum MHD_Result ret;
  if (!mine && !k.is_public) {
    ret = respond_fail(r, 404, "kernel_not_found", "id", "no kernel '%.40s'", id_text);
  } else if (!strcmp(r->method, "DELETE")) {
    int rc = mine ? ukernels_drop(u, k.kernel_id) : 0;
    if (!mine) {
      ret = respond_fail(r, 403, "not_owner", "id", "kernel %s is %s's", id_text, k.owner);
    } else if (rc == -ENOENT) {
      ret = respond_fail(r, 404, "kernel_not_found", "id", "no kernel '%.40s'", id_text);
    } else if (rc) {
      ret = respond_storage(r, rc);
    } else {
      ret = respond_json(r, 200,
                         json_pack("{s:I,s:b,s:i}", "id", (json_int_t)k.kernel_id, "deleted", 1,
                                   "versions", versions));
    }
  } else {
    ret = respond_json(r, 200,
                       kernel_doc_json(&k, KERNEL_DOC_KERNEL, true, versions, r->api_prefix));
  }
  ukernels_clear(&k);
  return ret;
}

/* The routes of users' kernels; without the service (no NVRTC, or off) only the
 * signatures answer, the others 503 nvrtc_unavailable. */
static struct ukernels *service(struct request *r) { return r->srv->opts.service->ukernels; }

static enum MHD_Result unavailable(struct request *r) {
  return respond_fail(r, 503, "nvrtc_unavailable", NULL, "users' kernels are off in this gpulabd");
}

enum MHD_Result route_kernels(struct request *r, const struct route_args *a) {
  (void)a;
  struct ukernels *u = service(r);
  if (!u) return unavailable(r);
  return strcmp(r->method, "POST") == 0 ? kernels_post(r, u) : kernels_list(r, u);
}

enum MHD_Result route_kernel(struct request *r, const struct route_args *a) {
  struct ukernels *u = service(r);
  return u ? kernel_one(r, u, a->id) : unavailable(r);
}

enum MHD_Result route_kernel_signatures(struct request *r, const struct route_args *a) {
  (void)a;
  return kernels_signatures(r);
}

bool route_kernels_media_type(const char *ct) {
  if (!ct) return true;
  static const char *const ok[] = {"application/json", "text/x-cuda", "text/plain",
                                   "multipart/form-data", "application/x-www-form-urlencoded"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (!strncasecmp(ct, ok[i], strlen(ok[i]))) return true;
  return false;
}
