/* Request parsing and validation: every field is typed, ranged and named. */
#include "api/params.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/utf8.h"

int api_error_set(struct api_error *err, int status, const char *code, const char *field,
                  const char *fmt, ...) {
  err->status = status;
  snprintf(err->code, sizeof err->code, "%s", code);
  snprintf(err->field, sizeof err->field, "%s", field ? field : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  /* Names from the request may be cut by a limit, or not be UTF-8 at all. */
  utf8_scrub_in_place(err->message, sizeof err->message);
  utf8_scrub_in_place(err->field, sizeof err->field);
  return strcmp(code, "out_of_memory") == 0 ? -ENOMEM : -EINVAL;
}

/* Every code gpulabd answers with, and its title (api/openapi.json's
 * components/x-problem-types describes each; test_openapi checks that they agree). */
static const struct {
  const char *code, *title;
} error_titles[] = {
    {"invalid_json", "The body is not valid JSON"},
    {"wrong_type", "A field has the wrong type"},
    {"out_of_range", "A value is out of range"},
    {"unknown_field", "An unknown field"},
    {"missing_field", "A required field is missing"},
    {"unknown_type", "An unknown job type"},
    {"unknown_variant", "An unknown variant"},
    {"duplicate_variant", "A variant named twice"},
    {"unknown_state", "An unknown job state"},
    {"shape_mismatch", "An input's shape does not fit the job"},
    {"dtype_mismatch", "An input holds another dtype than the job reads"},
    {"invalid_npy", "Not a .npy file that gpulabd reads"},
    {"invalid_raw", "Raw float32 data that does not fit its shape"},
    {"missing_token", "No token"},
    {"invalid_token", "The token is not valid"},
    {"not_found", "No such route"},
    {"job_not_found", "No such job"},
    {"buffer_not_found", "No such buffer"},
    {"sweep_not_found", "No such sweep"},
    {"method_not_allowed", "Method not allowed"},
    {"not_acceptable", "No representation the Accept header takes"},
    {"job_finished", "The job has already finished"},
    {"job_elsewhere", "Another node of the fleet holds the job"},
    {"buffer_elsewhere", "Another node of the fleet holds the buffer"},
    {"buffer_in_use", "A job still needs the buffer"},
    {"output_not_kept", "The job's output was not kept"},
    {"sweep_finished", "Every job of the sweep has already finished"},
    {"gone", "The buffer did not survive a restart"},
    {"buffer_lost", "The buffer was lost with its node"},
    {"body_too_large", "The request body is too large"},
    {"buffer_too_large", "The buffer is too large"},
    {"job_too_large", "The job needs more memory than allowed"},
    {"quota_exceeded", "The client's buffer quota is used up"},
    {"unsupported_media_type", "Unsupported media type"},
    {"queue_full", "The client's queue is full"},
    {"rate_limited", "Too many submissions"},
    {"backend_unavailable", "The device failed"},
    {"unavailable", "Not available now"},
    {"upload_failed", "The upload could not be stored"},
    {"download_failed", "The buffer could not be read"},
    {"store_unavailable", "The job store cannot be written"},
    {"out_of_memory", "Out of memory"},
    {"insufficient_storage", "The job store is full"},
    /* users' kernels (server/http/routes_kernels.c) */
    {"option_not_allowed", "A compiler option that is not allowed"},
    {"invalid_form", "The form could not be read"},
    {"kernel_quota", "The client's kernel quota is used up"},
    {"not_owner", "Another client's kernel or problem"},
    {"kernel_not_found", "No such kernel"},
    {"source_too_large", "The kernel's source is too large"},
    {"source_not_allowed", "The source has what device code may not"},
    {"compile_failed", "The kernel did not compile"},
    {"compile_timeout", "The compile took too long"},
    {"compile_error", "The compiler failed"},
    {"nvrtc_unavailable", "No compiler for users' kernels"},
    {"compile_busy", "Every compile slot is busy"},
    /* a kernel's versions (server/http/routes_kernel_versions.c, submit.c) */
    {"too_many_versions", "As many versions as allowed"},
    {"version_not_found", "No such version"},
    {"ambiguous_kernel", "More than one kernel of that name"},
    {"diff_too_large", "The diff is too large"},
    {"diff_unavailable", "The diff could not be made"},
    /* a job's profile (kernels/core/profile.h) */
    {"profiling_unavailable", "Hardware counters cannot be read here"},
    /* problems users define (server/http/routes_problems.c, api/problem_def.c) */
    {"problem_not_found", "No such problem"},
    {"problem_name_taken", "The name is another client's"},
    {"problem_quota", "Too many problems"},
    {"invalid_expression", "An expression cannot be used"},
    {"invalid_problem", "The problem cannot be run as defined"},
    /* the compiler's view of a version (server/http/routes_kernel_versions.c) */
    {"ptx_not_kept", "The version's PTX was not kept"},
    {"cubin_not_kept", "The version's CUBIN was not kept"},
    {"sass_unavailable", "No disassembler for the SASS"},
    {"sass_busy", "Every disassembler slot is busy"},
};

static const char *reason_phrase(int status) {
  switch (status) {
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 406: return "Not Acceptable";
  case 409: return "Conflict";
  case 410: return "Gone";
  case 413: return "Content Too Large";
  case 415: return "Unsupported Media Type";
  case 422: return "Unprocessable Content";
  case 429: return "Too Many Requests";
  case 500: return "Internal Server Error";
  case 503: return "Service Unavailable";
  case 507: return "Insufficient Storage";
  default: return status >= 500 ? "Server Error" : "Client Error";
  }
}

const char *api_error_title(const char *code, int status) {
  for (size_t i = 0; i < sizeof error_titles / sizeof error_titles[0]; i++)
    if (strcmp(code, error_titles[i].code) == 0) return error_titles[i].title;
  return reason_phrase(status);
}

void api_error_type(const char *code, char *buf, size_t len) {
  snprintf(buf, len, "/openapi.json#/components/x-problem-types/%s", code);
}

/* One integer field beside the experiment's params: where it lives in the spec and
 * what it may hold. */
struct int_field {
  const char *name;
  long long min, max;
  size_t offset; /* of an int in struct exp_spec, or SIZE_MAX for the seed */
};

#define SPEC_INT(member) offsetof(struct exp_spec, member)
#define FIELD_SEED ((size_t)-1)

static const struct int_field common_fields[] = {
    {"seed", 0, INT64_MAX, FIELD_SEED},
    {"warmup", 0, API_MAX_WARMUP, SPEC_INT(timing.warmup)},
    {"batches", 1, EXP_MAX_BATCHES, SPEC_INT(timing.batches)},
    {"reps", 1, API_MAX_REPS, SPEC_INT(timing.reps)},
    {"min_samples", 1, EXP_MAX_BATCHES, SPEC_INT(stop.min_samples)},
};

/* The choices of "order" (the first is the default, EXP_ORDER_ALTERNATING) and the
 * noise rule's bound on max_noise. */
static const char *const order_choices[2] = {"interleaved", "sequential"};
#define MAX_NOISE_MAX 1.0

json_t *api_common_params_json(void) {
  json_t *list = json_array();
  for (size_t i = 0; i < sizeof common_fields / sizeof common_fields[0]; i++)
    json_array_append_new(list,
                          json_pack("{s:s,s:s,s:I,s:I}", "name", common_fields[i].name, "kind",
                                    "integer", "min", (json_int_t)common_fields[i].min, "max",
                                    (json_int_t)common_fields[i].max));
  json_array_append_new(list, json_pack("{s:s,s:s,s:[s,s]}", "name", "order", "kind", "choice",
                                        "values", order_choices[0], order_choices[1]));
  json_array_append_new(list, json_pack("{s:s,s:s,s:f,s:f}", "name", "max_noise", "kind", "number",
                                        "min", 0.0, "max", MAX_NOISE_MAX));
  json_array_append_new(list, json_pack("{s:s,s:s,s:f,s:f}", "name", "max_time", "kind", "number",
                                        "min", API_MIN_TIME_S, "max", (double)API_MAX_TIME_S));
  json_array_append_new(list, json_pack("{s:s,s:s}", "name", "graph", "kind", "boolean"));
  json_array_append_new(list, json_pack("{s:s,s:s}", "name", "cold", "kind", "boolean"));
  json_array_append_new(list, json_pack("{s:s,s:s,s:[s,s,s]}", "name", "profile", "kind", "choice",
                                        "values", "off", "counters", "full"));
  return list;
}

static const char *json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a number with a fraction";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  default: return "null";
  }
}

/* Lists the accepted field names of type, for unknown-field messages. */
static void accepted_fields(const struct exp_desc *d, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < d->n_params; i++)
    used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s, ", d->params[i].name);
  used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s, ",
                           d->runs ? d->runs->name : "variant");
  for (int s = 0; s < d->n_inputs; s++)
    used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s, ", d->inputs[s].name);
  snprintf(buf + used, used < len ? len - used : 0,
           "seed, warmup, batches, reps, graph, %sorder, min_samples, max_noise, max_time, profile",
           d->flags & EXP_NO_COLD ? "" : "cold, ");
}

/* An integer in [min, max] into *out. */
static int parse_int_in(json_t *v, const char *field, long long min, long long max, long long *out,
                        struct api_error *err) {
  if (!json_is_integer(v))
    return api_error_set(err, 400, "wrong_type", field, "%s must be an integer, got %s", field,
                         json_kind(v));
  long long x = json_integer_value(v);
  if (x < min || x > max)
    return api_error_set(err, 400, "out_of_range", field,
                         "%s must be between %lld and %lld, got %lld", field, min, max, x);
  *out = x;
  return 0;
}

static int parse_int(const struct int_field *f, json_t *v, const char *field, struct exp_spec *spec,
                     struct api_error *err) {
  long long x;
  int rc = parse_int_in(v, field, f->min, f->max, &x, err);
  if (rc) return rc;
  if (f->offset == FIELD_SEED)
    spec->seed = (uint64_t)x;
  else
    *(int *)((char *)spec + f->offset) = (int)x;
  return 0;
}

/* Size param i of the experiment; a dimension given by the request is fixed. */
static int parse_param(const struct exp_desc *d, int i, json_t *v, const char *field,
                       struct exp_spec *spec, struct api_error *err) {
  long long x;
  int rc = parse_int_in(v, field, d->params[i].min, d->params[i].max, &x, err);
  if (rc) return rc;
  spec->p[i] = (int)x;
  if (d->params[i].flags & EXP_PARAM_DIM) spec->dims_given |= 1u << i;
  return 0;
}

static int unknown_variant(enum exp_type type, const char *field, const char *name,
                           struct api_error *err) {
  char valid[128] = "";
  size_t used = 0;
  for (int i = 0; i < exp_variant_count(type); i++)
    used += (size_t)snprintf(valid + used, sizeof valid - used, "%s, ", exp_variant_name(type, i));
  return api_error_set(
      err, 400, "unknown_variant", field, "unknown variant '%.64s' for %s; valid: %sall%s", name,
      exp_type_name(type), valid,
      exp_user_of(type) ? ", kernel:<id>, kernel:<id>@<version> or kernel:<name> (a user's kernel)"
                        : "");
}

/* A variant by name, or a user's kernel ("kernel:...", for an experiment that takes
 * them) through kr; without kr "kernel:<id>" alone, unchecked. Returns 0 with *id, or
 * -1 with neither (unknown_variant) or the resolver's error in err (-EINVAL). */
static int variant_of(enum exp_type type, const char *name, const char *field,
                      const struct api_kernel_resolver *kr, int *id, struct api_error *err) {
  if (strncmp(name, "kernel:", 7) != 0)
    return (*id = exp_variant_from_name(type, name)) < 0 ? -1 : 0;
  if (!exp_user_of(type)) return -1;
  if (kr) return kr->resolve(kr->ctx, type, name, field, id, err) ? -EINVAL : 0;
  const char *d = name + 7;
  if (*d < '1' || *d > '9' || strlen(d) > 10) return -1;
  for (const char *c = d; *c; c++)
    if (*c < '0' || *c > '9') return -1;
  long long n = atoll(d);
  if (n > EXP_USER_KERNEL_MAX_ID) return -1;
  *id = exp_user_variant(n);
  return 0;
}

/* variant: "name", "all", "kernel:<id>", or a non-empty list of distinct ones. */
static int parse_variant(enum exp_type type, json_t *v, const char *field, struct exp_spec *spec,
                         const struct api_kernel_resolver *kr, struct api_error *err) {
  int id, rc;
  if (json_is_string(v)) {
    const char *name = json_string_value(v);
    if (strcmp(name, "all") == 0) return 0; /* the default already lists all */
    if ((rc = variant_of(type, name, field, kr, &id, err)) == -EINVAL) return rc;
    if (rc) return unknown_variant(type, field, name, err);
    spec->n_variants = 1;
    spec->variants[0] = id;
    return 0;
  }
  if (!json_is_array(v))
    return api_error_set(err, 400, "wrong_type", field,
                         "%s must be a variant name, a list of names or \"all\", got %s", field,
                         json_kind(v));
  size_t n = json_array_size(v);
  size_t most = exp_user_of(type) ? EXP_MAX_VARIANTS : (size_t)exp_variant_count(type);
  if (n == 0 || n > most)
    return api_error_set(err, 400, "out_of_range", field,
                         "%s must list between 1 and %zu variants, got %zu", field, most, n);
  for (size_t i = 0; i < n; i++) {
    json_t *item = json_array_get(v, i);
    if (!json_is_string(item))
      return api_error_set(err, 400, "wrong_type", field, "%s[%zu] must be a string, got %s", field,
                           i, json_kind(item));
    if ((rc = variant_of(type, json_string_value(item), field, kr, &id, err)) == -EINVAL) return rc;
    if (rc) return unknown_variant(type, field, json_string_value(item), err);
    for (size_t k = 0; k < i; k++)
      if (spec->variants[k] == id)
        return api_error_set(err, 400, "duplicate_variant", field, "%s lists '%s' twice", field,
                             json_string_value(item));
    spec->variants[i] = id;
  }
  spec->n_variants = (int)n;
  return 0;
}

/* The runs list (the pipeline's streams): an entry, or a list of them; integer
 * entries in the param's range, and its word at most once, which adds its runs. */
static int parse_runs(const struct exp_runs_param *rp, json_t *v, const char *field,
                      struct exp_spec *spec, struct api_error *err) {
  json_t *one = json_is_integer(v) || json_is_string(v) ? v : NULL;
  size_t n = one ? 1 : json_array_size(v), runs = 0;
  const char *word = rp->word ? rp->word : "";
  if (!one && !json_is_array(v))
    return api_error_set(err, 400, "wrong_type", field,
                         "%s must be a %s, \"%s\" or a list of them, got %s", field, rp->noun, word,
                         json_kind(v));
  bool word_seen = false;
  for (size_t i = 0; i < n; i++) {
    json_t *item = one ? one : json_array_get(v, i);
    const char *text = json_string_value(item);
    if (text && rp->word && strcmp(text, rp->word) == 0 && !word_seen) {
      word_seen = true;
      for (int w = 0; w < rp->n_word_runs; w++)
        if (runs + (size_t)rp->n_word_runs <= EXP_MAX_VARIANTS)
          spec->variants[runs + (size_t)w] = rp->word_runs[w];
      runs += (size_t)rp->n_word_runs;
      continue;
    }
    if (text)
      return api_error_set(
          err, 400, word_seen && !strcmp(text, word) ? "out_of_range" : "wrong_type", field,
          "%s: the only name it takes is \"%s\", once; got '%.40s'", field, word, text);
    if (!json_is_integer(item))
      return api_error_set(err, 400, "wrong_type", field, "%s must hold integers or \"%s\", got %s",
                           field, word, json_kind(item));
    long long s = json_integer_value(item);
    if (s < rp->min || s > rp->max)
      return api_error_set(err, 400, "out_of_range", field,
                           "%s: each %s must be between %d and %d, got %lld", field, rp->noun,
                           rp->min, rp->max, s);
    if (runs < EXP_MAX_VARIANTS) spec->variants[runs] = (int)s;
    runs++;
  }
  if (runs == 0 || runs > EXP_MAX_VARIANTS)
    return api_error_set(err, 400, "out_of_range", field,
                         "%s must give between 1 and %d runs (%s), got %zu", field,
                         EXP_MAX_VARIANTS, rp->word_gives ? rp->word_gives : "", runs);
  spec->n_variants = (int)runs;
  return 0;
}

/* An input: {"seed": s}, {"buffer": id} or {"job": id}. */
static int parse_input(json_t *v, const char *field, struct exp_input *in, struct api_error *err) {
  static const char *const kinds[] = {"seed", "buffer", "job"};
  if (!json_is_object(v) || json_object_size(v) != 1)
    return api_error_set(err, 400, "wrong_type", field,
                         "%s must be {\"seed\": s}, {\"buffer\": id} or {\"job\": id}", field);
  const char *key = json_object_iter_key(json_object_iter(v));
  json_t *value = json_object_iter_value(json_object_iter(v));
  for (int k = 0; k < 3; k++) {
    if (strcmp(key, kinds[k]) != 0) continue;
    long long min = k == 0 ? 0 : 1;
    if (!json_is_integer(value) || json_integer_value(value) < min)
      return api_error_set(err, 400, json_is_integer(value) ? "out_of_range" : "wrong_type", field,
                           "%s.%s must be an integer of at least %lld", field, key, min);
    *in = (struct exp_input){(enum exp_input_kind)k, (uint64_t)json_integer_value(value)};
    return 0;
  }
  return api_error_set(err, 400, "unknown_field", field,
                       "%s: unknown source '%.40s'; use seed, buffer or job", field, key);
}

static int parse_choice(json_t *v, const char *field, const char *yes, const char *no, bool *out,
                        struct api_error *err) {
  const char *text = json_string_value(v);
  if (text && strcmp(text, yes) == 0)
    *out = true;
  else if (text && strcmp(text, no) == 0)
    *out = false;
  else
    return api_error_set(err, 400, json_is_string(v) ? "out_of_range" : "wrong_type", field,
                         "%s must be \"%s\" or \"%s\"", field, yes, no);
  return 0;
}

/* A number (integer or with a fraction) in [min, max]. */
static int parse_number(json_t *v, const char *field, double min, double max, double *out,
                        struct api_error *err) {
  if (!json_is_number(v))
    return api_error_set(err, 400, "wrong_type", field, "%s must be a number, got %s", field,
                         json_kind(v));
  double x = json_number_value(v);
  if (!(x >= min && x <= max))
    return api_error_set(err, 400, "out_of_range", field, "%s must be between %g and %g, got %g",
                         field, min, max, x);
  *out = x;
  return 0;
}

static int parse_bool(json_t *v, const char *field, bool *out, struct api_error *err) {
  if (!json_is_boolean(v))
    return api_error_set(err, 400, "wrong_type", field, "%s must be true or false, got %s", field,
                         json_kind(v));
  *out = json_is_true(v);
  return 0;
}

/* cold: a boolean; never true where the experiment says it cannot be (EXP_NO_COLD). */
static int parse_cold(const struct exp_desc *d, json_t *v, const char *field, struct exp_spec *spec,
                      struct api_error *err) {
  int rc = parse_bool(v, field, &spec->cold, err);
  if (rc == 0 && spec->cold && (d->flags & EXP_NO_COLD))
    return api_error_set(err, 400, "out_of_range", field, "%s must be false for %s: %s", field,
                         d->name, d->no_cold_why);
  return rc;
}

/* profile: false or "off", true or "counters", "full" (kernels/core/profile.h). */
static int parse_profile(json_t *v, const char *field, struct exp_spec *spec,
                         struct api_error *err) {
  if (json_is_boolean(v)) {
    spec->profile = json_is_true(v) ? EXP_PROFILE_COUNTERS : EXP_PROFILE_OFF;
    return 0;
  }
  const char *t = json_string_value(v);
  if (t && strcmp(t, "off") == 0)
    spec->profile = EXP_PROFILE_OFF;
  else if (t && strcmp(t, "counters") == 0)
    spec->profile = EXP_PROFILE_COUNTERS;
  else if (t && strcmp(t, "full") == 0)
    spec->profile = EXP_PROFILE_FULL;
  else
    return api_error_set(err, 400, t ? "out_of_range" : "wrong_type", field,
                         "%s must be true, false, \"off\", \"counters\" or \"full\", got %s%.40s%s",
                         field, t ? "\"" : "", t ? t : json_kind(v), t ? "\"" : "");
  return 0;
}

/* One job option; returns 1 when key is not one. */
static int parse_option(const char *key, json_t *v, struct api_job_options *o,
                        struct api_error *err) {
  if (strcmp(key, "priority") == 0) {
    if (!json_is_integer(v))
      return api_error_set(err, 400, "wrong_type", key, "priority must be an integer, got %s",
                           json_kind(v));
    long long p = json_integer_value(v);
    if (p < -API_MAX_PRIORITY || p > API_MAX_PRIORITY)
      return api_error_set(err, 400, "out_of_range", key,
                           "priority must be between %d and %d, got %lld", -API_MAX_PRIORITY,
                           API_MAX_PRIORITY, p);
    o->priority = (int)p;
    return 0;
  }
  if (strcmp(key, "device") == 0) {
    if (!json_is_integer(v))
      return api_error_set(err, 400, "wrong_type", key, "device must be an integer, got %s",
                           json_kind(v));
    if (json_integer_value(v) < 0 || json_integer_value(v) > API_MAX_DEVICE)
      return api_error_set(err, 400, "out_of_range", key,
                           "device must be between 0 and %d, got %lld", API_MAX_DEVICE,
                           (long long)json_integer_value(v));
    o->device = (int)json_integer_value(v);
    return 0;
  }
  if (strcmp(key, "isolation") == 0)
    return parse_choice(v, key, "exclusive", "shared", &o->exclusive, err);
  if (strcmp(key, "dependency") == 0)
    return parse_choice(v, key, "host", "event", &o->host_sync, err);
  if (strcmp(key, "keep_output") == 0) return parse_bool(v, key, &o->keep_output, err);
  if (strcmp(key, "depends_on") != 0) return 1;
  size_t n = json_array_size(v);
  if (!json_is_array(v))
    return api_error_set(err, 400, "wrong_type", key,
                         "depends_on must be a list of job ids, got %s", json_kind(v));
  if (n > API_MAX_DEPENDS)
    return api_error_set(err, 400, "out_of_range", key, "depends_on lists at most %d jobs, got %zu",
                         API_MAX_DEPENDS, n);
  for (size_t i = 0; i < n; i++) {
    json_t *id = json_array_get(v, i);
    if (!json_is_integer(id) || json_integer_value(id) < 1)
      return api_error_set(err, 400, json_is_integer(id) ? "out_of_range" : "wrong_type", key,
                           "depends_on[%zu] must be a job id (an integer of at least 1)", i);
    o->depends_on[i] = (uint64_t)json_integer_value(id);
  }
  o->n_depends = (int)n;
  return 0;
}

static void options_default(struct api_job_options *o) {
  memset(o, 0, sizeof *o);
  o->exclusive = true;
  o->device = -1;
}

static bool faults_allowed;
void api_params_allow_faults(bool allow) { faults_allowed = allow; }

static int input_slot(enum exp_type type, const char *key) {
  for (int s = 0; s < exp_input_count(type); s++)
    if (strcmp(key, exp_input_name(type, s)) == 0) return s;
  return -1;
}

static const struct int_field *find_common_field(const char *key) {
  for (size_t i = 0; i < sizeof common_fields / sizeof common_fields[0]; i++)
    if (strcmp(key, common_fields[i].name) == 0) return &common_fields[i];
  return NULL;
}

static int parse_params_object(enum exp_type type, json_t *obj, const char *prefix,
                               struct exp_spec *spec, struct api_job_options *opts,
                               const struct api_kernel_resolver *kr, struct api_error *err) {
  const struct exp_desc *d = exp_desc(type);
  bool input_given[EXP_MAX_INPUTS] = {false};
  if (exp_spec_default(type, spec) != 0) {
    char types[160];
    exp_type_list(types, sizeof types);
    return api_error_set(err, 400, "unknown_type", "type", "type must be one of %s, got %d", types,
                         (int)type);
  }
  if (!json_is_object(obj))
    return api_error_set(err, 400, "wrong_type", *prefix ? "params" : "",
                         "the %s must be a JSON object, got %s", *prefix ? "params" : "body",
                         json_kind(obj));
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    char field[64];
    snprintf(field, sizeof field, "%s%.40s", prefix, key);
    const struct int_field *f = find_common_field(key);
    int rc, param = exp_param_index(type, key), slot = input_slot(type, key);
    if (param >= 0) {
      rc = parse_param(d, param, v, field, spec, err);
    } else if (f) {
      rc = parse_int(f, v, field, spec, err);
    } else if (slot >= 0) {
      rc = parse_input(v, field, &spec->inputs[slot], err);
      input_given[slot] = true;
    } else if (strcmp(key, "graph") == 0)
      rc = parse_bool(v, field, &spec->graph, err);
    else if (faults_allowed && strcmp(key, "fault") == 0)
      rc = parse_choice(v, field, "device_lost", "none", &spec->fault, err);
    else if (strcmp(key, "cold") == 0)
      rc = parse_cold(d, v, field, spec, err);
    else if (strcmp(key, "profile") == 0)
      rc = parse_profile(v, field, spec, err);
    else if (strcmp(key, "order") == 0) {
      bool interleaved = true;
      rc = parse_choice(v, field, order_choices[0], order_choices[1], &interleaved, err);
      spec->order = interleaved ? EXP_ORDER_ALTERNATING : EXP_ORDER_SEQUENTIAL;
    } else if (strcmp(key, "max_noise") == 0)
      rc = parse_number(v, field, 0, MAX_NOISE_MAX, &spec->stop.max_noise, err);
    else if (strcmp(key, "max_time") == 0)
      rc = parse_number(v, field, API_MIN_TIME_S, API_MAX_TIME_S, &spec->stop.max_time_s, err);
    else if (opts && (rc = parse_option(key, v, opts, err)) <= 0)
      ; /* a job option beside the params */
    else if (!d->runs && strcmp(key, "variant") == 0)
      rc = parse_variant(type, v, field, spec, kr, err);
    else if (d->runs && strcmp(key, d->runs->name) == 0)
      rc = parse_runs(d->runs, v, field, spec, err);
    else {
      char accepted[200];
      accepted_fields(d, accepted, sizeof accepted);
      return api_error_set(err, 400, "unknown_field", field, "unknown field '%s'; %s accepts: %s",
                           field, exp_type_name(type), accepted);
    }
    if (rc) return rc;
  }
  /* cold times each launch alone, a graph replays reps launches back to back: hot. */
  if (spec->cold && spec->graph) {
    char field[64];
    snprintf(field, sizeof field, "%scold", prefix);
    return api_error_set(err, 400, "out_of_range", field,
                         "%s and graph do not go together: a graph runs its launches back to back, "
                         "so all but the first find the L2 warm",
                         field);
  }
  /* Inputs nobody named come from the job's seed. */
  for (int s = 0; s < EXP_MAX_INPUTS; s++)
    if (!input_given[s]) spec->inputs[s] = (struct exp_input){EXP_INPUT_SEED, spec->seed};
  return 0;
}

/* Loads a JSON document; an empty (or all-blank) body means {}. */
static json_t *load_body(const char *body, size_t len, struct api_error *err) {
  size_t i = 0;
  while (i < len && strchr(" \t\r\n", body[i]) && body[i]) i++;
  if (i == len) return json_object();
  json_error_t je;
  json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
  if (!root)
    api_error_set(err, 400, "invalid_json", "",
                  "malformed JSON at byte %d (line %d, column %d): %s", je.position, je.line,
                  je.column, je.text);
  return root;
}

int api_params_parse(enum exp_type type, const char *body, size_t len, struct exp_spec *spec,
                     struct api_job_options *opts, struct api_error *err) {
  return api_params_parse_with(type, body, len, spec, opts, NULL, err);
}

int api_job_request_parse(const char *body, size_t len, struct api_job_request *req,
                          struct api_error *err) {
  return api_job_request_parse_with(body, len, req, NULL, err);
}

int api_params_parse_with(enum exp_type type, const char *body, size_t len, struct exp_spec *spec,
                          struct api_job_options *opts, const struct api_kernel_resolver *kr,
                          struct api_error *err) {
  json_t *root = load_body(body, len, err);
  if (!root) return -EINVAL;
  options_default(opts);
  int rc = parse_params_object(type, root, "", spec, opts, kr, err);
  json_decref(root);
  return rc;
}

int api_params_parse_json(enum exp_type type, json_t *root, struct exp_spec *spec,
                          struct api_job_options *opts, const struct api_kernel_resolver *kr,
                          struct api_error *err) {
  options_default(opts);
  return parse_params_object(type, root, "", spec, opts, kr, err);
}

int api_job_request_parse_with(const char *body, size_t len, struct api_job_request *req,
                               const struct api_kernel_resolver *kr, struct api_error *err) {
  json_t *root = load_body(body, len, err);
  if (!root) return -EINVAL;
  int rc = -EINVAL;
  json_t *type = NULL, *params = NULL;
  const char *key;
  json_t *v;
  if (!json_is_object(root)) {
    api_error_set(err, 400, "wrong_type", "", "the body must be a JSON object, got %s",
                  json_kind(root));
    goto fail;
  }
  options_default(&req->opts);
  json_object_foreach(root, key, v) {
    int orc;
    if (strcmp(key, "type") == 0)
      type = v;
    else if (strcmp(key, "params") == 0)
      params = v;
    else if ((orc = parse_option(key, v, &req->opts, err)) < 0)
      goto fail;
    else if (orc > 0) {
      api_error_set(err, 400, "unknown_field", key,
                    "unknown field '%.40s'; a job accepts: type, params, depends_on, priority, "
                    "isolation, keep_output, dependency, device",
                    key);
      goto fail;
    }
  }
  char types[160];
  exp_type_list(types, sizeof types);
  if (!type) {
    api_error_set(err, 400, "missing_field", "type", "type is required: one of %s", types);
    goto fail;
  }
  int t = json_is_string(type) ? exp_type_from_name(json_string_value(type)) : -1;
  if (t < 0) {
    api_error_set(err, 400, json_is_string(type) ? "unknown_type" : "wrong_type", "type",
                  "type must be one of %s, got %s%.40s%s", types,
                  json_is_string(type) ? "'" : json_kind(type),
                  json_is_string(type) ? json_string_value(type) : "",
                  json_is_string(type) ? "'" : "");
    goto fail;
  }
  json_t *empty = NULL;
  if (!params) params = empty = json_object();
  rc = parse_params_object((enum exp_type)t, params, "params.", &req->spec, NULL, kr, err);
  json_decref(empty);
fail:
  json_decref(root);
  return rc;
}

int api_wait_parse(const char *text, double default_s, double *wait_s, struct api_error *err) {
  if (!text) {
    *wait_s = default_s;
    return 0;
  }
  char *end = NULL;
  double w = strtod(text, &end);
  if (end == text || *end != '\0' || !isfinite(w))
    return api_error_set(err, 400, "wrong_type", "wait",
                         "wait must be a number of seconds, got '%.40s'", text);
  if (w < 0 || w > API_MAX_WAIT_S)
    return api_error_set(err, 400, "out_of_range", "wait",
                         "wait must be between 0 and %d seconds, got %g", API_MAX_WAIT_S, w);
  *wait_s = w;
  return 0;
}
