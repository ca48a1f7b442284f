/* A problem's definition (api/problem_def.h) from JSON: each field typed and ranged,
 * each expression parsed against the params and bounded over their ranges, so that
 * nothing a job may ask for overflows or divides by zero later. The rest of the
 * module (canonical JSON, signature, template, sizes) is problem_def_out.c. */
#include "api/problem_def.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name, *ctype;
  size_t bytes;
  bool integer;
  double lo, hi; /* the values an init may ask for: the type's finite range */
} dtypes[PROBLEM_DTYPE_COUNT] = {
    [PROBLEM_DTYPE_FLOAT32] = {"float32", "float", 4, false, -3.4028234663852886e38,
                               3.4028234663852886e38},
    [PROBLEM_DTYPE_FLOAT16] = {"float16", "__half", 2, false, -65504, 65504},
    [PROBLEM_DTYPE_BFLOAT16] = {"bfloat16", "__nv_bfloat16", 2, false, -3.3895313892515355e38,
                                3.3895313892515355e38},
    [PROBLEM_DTYPE_INT32] = {"int32", "int", 4, true, INT32_MIN, INT32_MAX},
    [PROBLEM_DTYPE_UINT32] = {"uint32", "unsigned int", 4, true, 0, UINT32_MAX},
    [PROBLEM_DTYPE_INT8] = {"int8", "signed char", 1, true, -128, 127},
};

const char *problem_dtype_name(enum problem_dtype t) { return dtypes[t].name; }
const char *problem_dtype_ctype(enum problem_dtype t) { return dtypes[t].ctype; }
size_t problem_dtype_bytes(enum problem_dtype t) { return dtypes[t].bytes; }
bool problem_dtype_is_integer(enum problem_dtype t) { return dtypes[t].integer; }

/* Names a param, input or output may not have: it becomes an argument of CUDA C++
 * code, beside its built-ins, and min, max and cdiv are expressions' functions. */
static const char reserved[] =
    " auto break case char const continue default do double else enum extern float for "
    "goto if inline int long register restrict return short signed sizeof static struct "
    "switch typedef union unsigned void volatile while alignas alignof and and_eq asm "
    "bitand bitor bool catch char8_t char16_t char32_t class compl concept consteval "
    "constexpr constinit const_cast co_await co_return co_yield decltype delete "
    "dynamic_cast explicit export false friend mutable namespace new noexcept not not_eq "
    "nullptr operator or or_eq private protected public reinterpret_cast requires "
    "static_assert static_cast template this thread_local throw true try typeid typename "
    "using virtual wchar_t xor xor_eq threadIdx blockIdx blockDim gridDim warpSize half "
    "nv_bfloat16 scratch min max cdiv ";

/* A C identifier of 1..max characters that is no keyword, built-in or reserved name
 * (no "__" anywhere, no leading '_' and capital: C++ reserves them). */
static bool ident_ok(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n == 0 || n > max || isdigit((unsigned char)s[0]) || strstr(s, "__")) return false;
  if (s[0] == '_' && isupper((unsigned char)s[1])) return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_') return false;
  char word[PROBLEM_NAME_MAX + 3];
  snprintf(word, sizeof word, " %s ", s);
  return strstr(reserved, word) == NULL;
}

bool problem_def_name_valid(const char *s) {
  size_t n = s ? strlen(s) : 0;
  /* Not from a dot: "." and ".." are no path segment a URL keeps (/problems/..). */
  if (n == 0 || n > PROBLEM_NAME_MAX || s[0] == '.') return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.') return false;
  return true;
}

/* What the expressions of one definition are parsed against. */
struct ctx {
  struct problem_def *d;
  const char *names[PROBLEM_MAX_PARAMS];
  struct pexpr_range ranges[PROBLEM_MAX_PARAMS];
  struct api_error *err;
};

static int oom(struct api_error *err) {
  return api_error_set(err, 500, "out_of_memory", NULL, "out of memory");
}

static const char *kind_of(json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  default: return "null";
  }
}

static void join(char *out, size_t len, const char *a, const char *b) {
  snprintf(out, len, "%s%s%s", a, *a ? "." : "", b);
}

/* Refuses a key of obj that keys (NULL-terminated) does not list; at is obj's path. */
static int known_keys(json_t *obj, const char *const *keys, const char *at, struct api_error *err) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    bool ok = false;
    for (int i = 0; keys[i]; i++) ok = ok || !strcmp(key, keys[i]);
    if (ok) continue;
    char field[64], list[200] = "";
    join(field, sizeof field, at, key);
    for (int i = 0; keys[i]; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", keys[i]);
    return api_error_set(err, 400, "unknown_field", field,
                         "unknown field '%.40s' in %s; it takes %s", key, *at ? at : "a problem",
                         list);
  }
  return 0;
}

/* obj[key] of JSON type want at field, or NULL (then missing_field when required). */
static int member(json_t *obj, const char *key, json_type want, const char *field, bool required,
                  const char *what, json_t **out, struct api_error *err) {
  json_t *v = *out = json_object_get(obj, key);
  if (!v && required)
    return api_error_set(err, 400, "missing_field", field, "%s is required: %s", field, what);
  bool fits = !v || json_typeof(v) == want || (want == JSON_TRUE && json_is_boolean(v));
  if (!fits)
    return api_error_set(err, 400, "wrong_type", field, "%s must be %s, got %s", field, what,
                         kind_of(v));
  return 0;
}

static int get_int32(json_t *obj, const char *key, const char *at, int32_t *out,
                     struct api_error *err) {
  char field[64];
  join(field, sizeof field, at, key);
  json_t *v;
  int rc = member(obj, key, JSON_INTEGER, field, true, "an integer", &v, err);
  if (rc) return rc;
  json_int_t n = json_integer_value(v);
  if (n < INT32_MIN || n > INT32_MAX)
    return api_error_set(err, 400, "out_of_range", field,
                         "%s must be within %d and %d, got %" JSON_INTEGER_FORMAT, field, INT32_MIN,
                         INT32_MAX, n);
  *out = (int32_t)n;
  return 0;
}

/* ---- expressions ---- */

/* v (a string or an integer) at field, parsed against the params into *e and bounded
 * over their ranges into *r. *e is set before bounding, so its owner frees it. */
static int expr_parse(struct ctx *c, json_t *v, const char *field, struct pexpr **e,
                      struct pexpr_range *r) {
  char num[32];
  const char *text;
  if (json_is_integer(v)) {
    snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    text = num;
  } else if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)) {
    text = json_string_value(v);
  } else {
    return api_error_set(c->err, 400, "wrong_type", field,
                         "%s must be an expression: a string such as \"rows / 2\" or an integer, "
                         "got %s",
                         field, kind_of(v));
  }
  struct pexpr_error pe;
  int rc = pexpr_parse(text, c->names, c->d->n_params, e, &pe);
  if (rc == -ENOMEM) return oom(c->err);
  if (!rc) rc = pexpr_bound(*e, c->ranges, r, &pe);
  if (rc)
    return api_error_set(c->err, 400, "invalid_expression", field, "%s: %s", field, pe.message);
  return 0;
}

/* An expression whose value must stay within [lo, hi] at every param value in range. */
static int expr_within(struct ctx *c, json_t *v, const char *field, struct pexpr **e, int64_t lo,
                       int64_t hi, const char *rule, struct pexpr_range *out) {
  struct pexpr_range r;
  int rc = expr_parse(c, v, field, e, &r);
  if (rc) return rc;
  if (r.lo < lo || r.hi > hi)
    return api_error_set(c->err, 400, "invalid_problem", field,
                         "%s can %s %" PRId64 " over the params' ranges (it ranges over [%" PRId64
                         ", %" PRId64 "]); %s",
                         field, r.lo < lo ? "be" : "reach", r.lo < lo ? r.lo : r.hi, r.lo, r.hi,
                         rule);
  if (out) *out = r;
  return 0;
}

/* ---- params ---- */

static int parse_param(struct ctx *c, const char *name, json_t *v) {
  static const char *const keys[] = {"default", "min", "max", NULL};
  struct problem_def *d = c->d;
  struct problem_param *p = &d->params[d->n_params];
  char at[64];
  snprintf(at, sizeof at, "params.%s", name);
  if (!ident_ok(name, PROBLEM_IDENT_MAX))
    return api_error_set(c->err, 400, "out_of_range", at,
                         "param '%.40s': a name is a C identifier of at most %d characters, not "
                         "a C/CUDA keyword or built-in, min, max, cdiv or scratch",
                         name, PROBLEM_IDENT_MAX);
  /* A job's document writes the params beside the fields every job has. */
  static const char *const job_fields[] = {
      "variant", "seed",      "warmup",      "batches",    "reps",        "graph",   "cold",
      "profile", "order",     "min_samples", "max_noise",  "max_time",    "problem", "priority",
      "device",  "isolation", "dependency",  "depends_on", "keep_output", "fault",   NULL};
  for (int i = 0; job_fields[i]; i++)
    if (!strcmp(name, job_fields[i]))
      return api_error_set(c->err, 400, "out_of_range", at,
                           "param '%s': the name of a field every job has; pick another", name);
  if (!json_is_object(v))
    return api_error_set(c->err, 400, "wrong_type", at,
                         "%s must be an object {\"default\", \"min\", \"max\"}, got %s", at,
                         kind_of(v));
  int rc = known_keys(v, keys, at, c->err);
  if (!rc) rc = get_int32(v, "min", at, &p->min, c->err);
  if (!rc) rc = get_int32(v, "max", at, &p->max, c->err);
  if (!rc) rc = get_int32(v, "default", at, &p->def, c->err);
  if (rc) return rc;
  char field[64];
  if (p->min > p->max) {
    join(field, sizeof field, at, "max");
    return api_error_set(c->err, 400, "out_of_range", field, "%s (%d) is less than its min (%d)",
                         field, p->max, p->min);
  }
  if (p->def < p->min || p->def > p->max) {
    join(field, sizeof field, at, "default");
    return api_error_set(c->err, 400, "out_of_range", field,
                         "%s (%d) is outside its min..max (%d..%d)", field, p->def, p->min, p->max);
  }
  snprintf(p->name, sizeof p->name, "%s", name);
  c->names[d->n_params] = p->name;
  c->ranges[d->n_params] = (struct pexpr_range){p->min, p->max};
  d->n_params++;
  return 0;
}

static int parse_params(struct ctx *c, json_t *root) {
  json_t *v;
  int rc = member(root, "params", JSON_OBJECT, "params", true,
                  "an object of named integers {\"rows\": {\"default\", \"min\", \"max\"}}", &v,
                  c->err);
  if (rc) return rc;
  if (json_object_size(v) < 1 || json_object_size(v) > PROBLEM_MAX_PARAMS)
    return api_error_set(c->err, 400, "out_of_range", "params",
                         "a problem has 1 to %d params, got %zu", PROBLEM_MAX_PARAMS,
                         json_object_size(v));
  const char *name;
  json_t *p;
  json_object_foreach(v, name, p) if ((rc = parse_param(c, name, p))) return rc;
  return 0;
}

/* ---- inputs and outputs ---- */

/* Where name is already used (a param, an input or an output before this one), or NULL. */
static const char *name_taken(const struct problem_def *d, const char *name, char *buf,
                              size_t len) {
  buf[0] = '\0';
  for (int i = 0; i < d->n_params && !buf[0]; i++)
    if (!strcmp(d->params[i].name, name)) snprintf(buf, len, "params.%s", name);
  for (int i = 0; i < d->n_inputs && !buf[0]; i++)
    if (!strcmp(d->inputs[i].name, name)) snprintf(buf, len, "inputs[%d]", i);
  for (int i = 0; i < d->n_outputs && !buf[0]; i++)
    if (!strcmp(d->outputs[i].name, name)) snprintf(buf, len, "outputs[%d]", i);
  return buf[0] ? buf : NULL;
}

static int parse_buffer_name(struct ctx *c, struct problem_buffer *b, json_t *v, const char *at) {
  char field[64], where[64];
  join(field, sizeof field, at, "name");
  json_t *n;
  int rc = member(v, "name", JSON_STRING, field, true, "a C identifier", &n, c->err);
  if (rc) return rc;
  const char *name = json_string_value(n);
  if (!ident_ok(name, PROBLEM_IDENT_MAX) || strlen(name) != json_string_length(n))
    return api_error_set(c->err, 400, "out_of_range", field,
                         "%s '%.40s': a name is a C identifier of at most %d characters, not a "
                         "C/CUDA keyword or built-in, min, max, cdiv or scratch",
                         field, name, PROBLEM_IDENT_MAX);
  if (name_taken(c->d, name, where, sizeof where))
    return api_error_set(c->err, 400, "invalid_problem", field,
                         "%s: '%s' is already the name of %s; params, inputs and outputs are "
                         "the kernel's arguments and need names of their own",
                         field, name, where);
  snprintf(b->name, sizeof b->name, "%s", name);
  return 0;
}

static int parse_dtype(struct ctx *c, struct problem_buffer *b, json_t *v, const char *at) {
  char field[64];
  join(field, sizeof field, at, "dtype");
  json_t *t;
  int rc = member(v, "dtype", JSON_STRING, field, true, "a dtype such as \"float32\"", &t, c->err);
  if (rc) return rc;
  for (int i = 0; i < PROBLEM_DTYPE_COUNT; i++)
    if (!strcmp(json_string_value(t), dtypes[i].name)) {
      b->dtype = (enum problem_dtype)i;
      return 0;
    }
  return api_error_set(c->err, 400, "out_of_range", field,
                       "%s must be one of float32, float16, bfloat16, int32, uint32, int8, got "
                       "'%.20s'",
                       field, json_string_value(t));
}

/* The shape: each dimension at least 1, the element count at most 2^31 - 1. */
static int parse_shape(struct ctx *c, struct problem_buffer *b, json_t *v, const char *at) {
  char field[64], dim[96];
  join(field, sizeof field, at, "shape");
  json_t *s;
  int rc = member(v, "shape", JSON_ARRAY, field, true, "an array of 1 to 4 expressions", &s,
                  c->err);
  if (rc) return rc;
  if (json_array_size(s) < 1 || json_array_size(s) > PROBLEM_MAX_DIMS)
    return api_error_set(c->err, 400, "out_of_range", field, "%s has 1 to %d dimensions, got %zu",
                         field, PROBLEM_MAX_DIMS, json_array_size(s));
  int64_t elems = 1;
  bool over = false;
  for (size_t i = 0; i < json_array_size(s); i++) {
    struct pexpr_range r;
    snprintf(dim, sizeof dim, "%s[%zu]", field, i);
    rc = expr_within(c, json_array_get(s, i), dim, &b->shape[b->n_dims++], 1, INT64_MAX,
                     "a dimension is at least 1", &r);
    if (rc) return rc;
    over = over || __builtin_mul_overflow(elems, r.hi, &elems);
  }
  if (over || elems > PROBLEM_MAX_ELEMS) {
    char count[32] = "more than 2^63";
    if (!over) snprintf(count, sizeof count, "%" PRId64, elems);
    return api_error_set(c->err, 400, "invalid_problem", field,
                         "%s ('%s') can hold %s elements at the params' maxima; at most %d, or a "
                         "kernel's int indices would overflow",
                         at, b->name, count, PROBLEM_MAX_ELEMS);
  }
  b->max_elems = elems;
  b->max_bytes = elems * (int64_t)dtypes[b->dtype].bytes;
  return 0;
}

/* [a, b] of an init: two numbers (integers for "integers") within the dtype's range. */
static int init_pair(struct ctx *c, struct problem_buffer *b, json_t *v, bool integers,
                     const char *field) {
  if (!json_is_array(v) || json_array_size(v) != 2)
    return api_error_set(c->err, 400, "wrong_type", field, "%s must be an array of 2 %s", field,
                         integers ? "integers" : "numbers");
  double x[2];
  for (int i = 0; i < 2; i++) {
    char f[64];
    json_t *e = json_array_get(v, (size_t)i);
    snprintf(f, sizeof f, "%s[%d]", field, i);
    if (integers ? !json_is_integer(e) : !json_is_number(e))
      return api_error_set(c->err, 400, "wrong_type", f, "%s must be %s, got %s", f,
                           integers ? "an integer" : "a number", kind_of(e));
    x[i] = json_number_value(e);
    bool std = b->init.kind == PROBLEM_INIT_NORMAL && i == 1;
    if (!isfinite(x[i]) || x[i] < (std ? 0 : dtypes[b->dtype].lo) || x[i] > dtypes[b->dtype].hi ||
        (std && x[i] == 0))
      return api_error_set(c->err, 400, "out_of_range", f, "%s must be %s %s's range (%g..%g)", f,
                           std ? "positive and within" : "within", dtypes[b->dtype].name,
                           dtypes[b->dtype].lo, dtypes[b->dtype].hi);
  }
  b->init.a = x[0];
  b->init.b = x[1];
  if (b->init.kind == PROBLEM_INIT_UNIFORM ? x[0] >= x[1] : x[0] > x[1])
    return api_error_set(c->err, 400, "out_of_range", field, "%s is [lo, hi] with lo %s hi", field,
                         integers ? "<=" : "<");
  return 0;
}

static int parse_init(struct ctx *c, struct problem_buffer *b, json_t *v, const char *at) {
  static const char *const keys[] = {"uniform", "normal", "integers", NULL};
  char field[64], sub[64];
  join(field, sizeof field, at, "init");
  json_t *init;
  const char *what =
      "one of {\"uniform\": [lo, hi]}, {\"normal\": [mean, std]}, {\"integers\": [lo, hi]}";
  int rc = member(v, "init", JSON_OBJECT, field, true, what, &init, c->err);
  if (!rc) rc = known_keys(init, keys, field, c->err);
  if (rc) return rc;
  if (json_object_size(init) != 1)
    return api_error_set(c->err, 400, "out_of_range", field, "%s must be %s", field, what);
  const char *kind = json_object_iter_key(json_object_iter(init));
  join(sub, sizeof sub, field, kind);
  b->init.kind = !strcmp(kind, "uniform")  ? PROBLEM_INIT_UNIFORM
                 : !strcmp(kind, "normal") ? PROBLEM_INIT_NORMAL
                                           : PROBLEM_INIT_INTEGERS;
  bool integers = b->init.kind == PROBLEM_INIT_INTEGERS;
  if (integers != dtypes[b->dtype].integer)
    return api_error_set(c->err, 400, "invalid_problem", sub,
                         "%s does not fit %s's dtype %s: integers fill integer dtypes, uniform "
                         "and normal float ones",
                         sub, at, dtypes[b->dtype].name);
  return init_pair(c, b, json_object_get(init, kind), integers, sub);
}

static int tolerance_value(struct ctx *c, json_t *t, const char *key, const char *field,
                           double *out) {
  char f[64];
  join(f, sizeof f, field, key);
  json_t *v = json_object_get(t, key);
  *out = 0;
  if (!v) return 0;
  if (!json_is_number(v))
    return api_error_set(c->err, 400, "wrong_type", f, "%s must be a number, got %s", f,
                         kind_of(v));
  *out = json_number_value(v);
  if (!isfinite(*out) || *out < 0)
    return api_error_set(c->err, 400, "out_of_range", f, "%s must be finite and not negative", f);
  return 0;
}

static int parse_tolerance(struct ctx *c, struct problem_buffer *b, json_t *v, const char *at) {
  static const char *const keys[] = {"abs", "rel", NULL};
  const char *what = "{\"abs\": x, \"rel\": y} (either or both) or \"exact\"";
  char field[64];
  join(field, sizeof field, at, "tolerance");
  json_t *t = json_object_get(v, "tolerance");
  b->tolerance = (struct problem_tolerance){.exact = true};
  if (!t && dtypes[b->dtype].integer) return 0; /* an integer output is exact by default */
  if (!t)
    return api_error_set(c->err, 400, "missing_field", field, "%s is required for a %s output: %s",
                         field, dtypes[b->dtype].name, what);
  if (json_is_string(t) && !strcmp(json_string_value(t), "exact")) return 0;
  if (!json_is_object(t))
    return api_error_set(c->err, 400, json_is_string(t) ? "out_of_range" : "wrong_type", field,
                         "%s must be %s", field, what);
  int rc = known_keys(t, keys, field, c->err);
  if (rc) return rc;
  if (json_object_size(t) == 0)
    return api_error_set(c->err, 400, "missing_field", field, "%s must be %s", field, what);
  b->tolerance.exact = false;
  rc = tolerance_value(c, t, "abs", field, &b->tolerance.abs);
  return rc ? rc : tolerance_value(c, t, "rel", field, &b->tolerance.rel);
}

static int parse_buffer(struct ctx *c, json_t *v, bool output, int i) {
  static const char *const in_keys[] = {"name", "dtype", "shape", "init", NULL};
  static const char *const out_keys[] = {"name", "dtype", "shape", "tolerance", NULL};
  struct problem_def *d = c->d;
  struct problem_buffer *b = output ? &d->outputs[i] : &d->inputs[i];
  char at[32];
  snprintf(at, sizeof at, "%s[%d]", output ? "outputs" : "inputs", i);
  if (!json_is_object(v))
    return api_error_set(c->err, 400, "wrong_type", at, "%s must be an object, got %s", at,
                         kind_of(v));
  int rc = known_keys(v, output ? out_keys : in_keys, at, c->err);
  if (!rc) rc = parse_buffer_name(c, b, v, at);
  if (!rc) rc = parse_dtype(c, b, v, at);
  if (!rc) rc = parse_shape(c, b, v, at);
  if (!rc) rc = output ? parse_tolerance(c, b, v, at) : parse_init(c, b, v, at);
  return rc;
}

/* inputs or outputs: 1..8 buffers. The count grows as each is parsed, so that names
 * are checked against the earlier ones and problem_def_free finds their shapes. */
static int parse_buffers(struct ctx *c, json_t *root, bool output) {
  const char *key = output ? "outputs" : "inputs";
  json_t *a;
  int rc = member(root, key, JSON_ARRAY, key, true, "an array of 1 to 8 buffers", &a, c->err);
  if (rc) return rc;
  if (json_array_size(a) < 1 || json_array_size(a) > PROBLEM_MAX_BUFFERS)
    return api_error_set(c->err, 400, "out_of_range", key, "a problem has 1 to %d %s, got %zu",
                         PROBLEM_MAX_BUFFERS, key, json_array_size(a));
  int *n = output ? &c->d->n_outputs : &c->d->n_inputs;
  for (size_t i = 0; i < json_array_size(a); i++) {
    (*n)++; /* before parsing: its expressions are then freed with d */
    struct problem_buffer *b = output ? &c->d->outputs[i] : &c->d->inputs[i];
    b->name[0] = '\0';
    if ((rc = parse_buffer(c, json_array_get(a, i), output, (int)i))) return rc;
  }
  return 0;
}

/* ---- the reference ---- */

static int parse_source(struct ctx *c, json_t *ref, size_t max_bytes) {
  struct problem_reference *r = &c->d->reference;
  json_t *v;
  int rc = member(ref, "source", JSON_STRING, "reference.source", true,
                  "the reference kernel's CUDA C", &v, c->err);
  if (rc) return rc;
  size_t n = json_string_length(v);
  if (n == 0)
    return api_error_set(c->err, 400, "out_of_range", "reference.source",
                         "reference.source is empty");
  if (strlen(json_string_value(v)) != n)
    return api_error_set(c->err, 400, "out_of_range", "reference.source",
                         "reference.source holds a NUL character");
  if (n > max_bytes)
    return api_error_set(c->err, 413, "source_too_large", "reference.source",
                         "reference.source has %zu bytes; at most %zu", n, max_bytes);
  if (!(r->source = malloc(n + 1))) return oom(c->err);
  memcpy(r->source, json_string_value(v), n + 1);
  r->source_bytes = n;
  return 0;
}

static int parse_entry(struct ctx *c, json_t *ref) {
  struct problem_reference *r = &c->d->reference;
  json_t *v;
  int rc = member(ref, "entry", JSON_STRING, "reference.entry", false, "a C identifier", &v,
                  c->err);
  if (rc) return rc;
  const char *entry = v ? json_string_value(v) : "kernel";
  if (!ident_ok(entry, sizeof r->entry - 1) || (v && strlen(entry) != json_string_length(v)))
    return api_error_set(c->err, 400, "out_of_range", "reference.entry",
                         "reference.entry '%.40s' must be a C identifier of at most %zu characters",
                         entry, sizeof r->entry - 1);
  snprintf(r->entry, sizeof r->entry, "%s", entry);
  return 0;
}

/* block or grid: 1 to 3 expressions (the rest are 1), each within 1..max[i] at every
 * param value in range; *threads gets the product of their upper bounds. */
static int parse_launch(struct ctx *c, json_t *ref, const char *key, struct pexpr **dims,
                        const int64_t *max, int64_t *threads) {
  char field[32], dim[40], rule[64];
  snprintf(field, sizeof field, "reference.%s", key);
  json_t *a;
  int rc = member(ref, key, JSON_ARRAY, field, true, "an array of 1 to 3 expressions", &a, c->err);
  if (rc) return rc;
  if (json_array_size(a) < 1 || json_array_size(a) > 3)
    return api_error_set(c->err, 400, "out_of_range", field, "%s has 1 to 3 entries, got %zu",
                         field, json_array_size(a));
  *threads = 1;
  for (int i = 0; i < 3; i++) {
    struct pexpr_range r = {1, 1};
    struct pexpr_error pe;
    snprintf(dim, sizeof dim, "%s[%d]", field, i);
    snprintf(rule, sizeof rule, "%s %c is 1 to %" PRId64, key, "xyz"[i], max[i]);
    if ((size_t)i >= json_array_size(a))
      rc = pexpr_parse("1", NULL, 0, &dims[i], &pe) ? oom(c->err) : 0;
    else
      rc = expr_within(c, json_array_get(a, (size_t)i), dim, &dims[i], 1, max[i], rule, &r);
    if (rc) return rc;
    *threads *= r.hi; /* at most 1024 * 1024 * 64, or 2^31 * 65535 * 65535 < 2^63 */
  }
  return 0;
}

int problem_def_grid_parse(const struct problem_def *d, json_t *a, const char *field,
                           char out[3][PROBLEM_GRID_TEXT], struct api_error *err) {
  static const int64_t grid_max[3] = {INT32_MAX, 65535, 65535};
  struct ctx c = {.d = (struct problem_def *)d, .err = err};
  for (int i = 0; i < d->n_params; i++) {
    c.names[i] = d->params[i].name;
    c.ranges[i] = (struct pexpr_range){d->params[i].min, d->params[i].max};
  }
  if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > 3)
    return api_error_set(err, 400, json_is_array(a) ? "out_of_range" : "wrong_type", field,
                         "%s is a list of 1 to 3 expressions over the problem's params", field);
  for (int i = 0; i < 3; i++) {
    if ((size_t)i >= json_array_size(a)) {
      snprintf(out[i], PROBLEM_GRID_TEXT, "1");
      continue;
    }
    char dim[40], rule[64];
    struct pexpr *e = NULL;
    snprintf(dim, sizeof dim, "%s[%d]", field, i);
    snprintf(rule, sizeof rule, "grid %c is 1 to %" PRId64, "xyz"[i], grid_max[i]);
    int rc = expr_within(&c, json_array_get(a, (size_t)i), dim, &e, 1, grid_max[i], rule, NULL);
    if (rc == 0 && strlen(pexpr_text(e)) >= PROBLEM_GRID_TEXT)
      rc = api_error_set(err, 400, "out_of_range", dim, "%s is at most %d characters", dim,
                         PROBLEM_GRID_TEXT - 1);
    if (rc == 0) snprintf(out[i], PROBLEM_GRID_TEXT, "%s", pexpr_text(e));
    pexpr_free(e);
    if (rc) return rc;
  }
  return 0;
}

static int parse_options(struct ctx *c, json_t *ref) {
  struct problem_reference *r = &c->d->reference;
  json_t *a;
  int rc = member(ref, "options", JSON_ARRAY, "reference.options", false,
                  "an array of compiler options", &a, c->err);
  if (rc || !a) return rc;
  if (json_array_size(a) > UCOMPILE_MAX_OPTIONS)
    return api_error_set(c->err, 400, "out_of_range", "reference.options",
                         "reference.options lists at most %d options, got %zu",
                         UCOMPILE_MAX_OPTIONS, json_array_size(a));
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *o = json_array_get(a, i);
    char field[40];
    snprintf(field, sizeof field, "reference.options[%zu]", i);
    if (!json_is_string(o))
      return api_error_set(c->err, 400, "wrong_type", field, "%s must be a string, got %s", field,
                           kind_of(o));
    size_t n = json_string_length(o);
    if (n == 0 || n >= UCOMPILE_MAX_OPTION_LEN || strlen(json_string_value(o)) != n)
      return api_error_set(c->err, 400, "out_of_range", field, "%s must have 1 to %d characters",
                           field, UCOMPILE_MAX_OPTION_LEN - 1);
    memcpy(r->options[i], json_string_value(o), n + 1);
    r->n_options++;
  }
  return 0;
}

static int parse_reference(struct ctx *c, json_t *root, size_t max_source) {
  static const char *const keys[] = {"source",       "entry",   "block", "grid",
                                     "shared_bytes", "options", NULL};
  static const int64_t block_max[3] = {1024, 1024, 64}, grid_max[3] = {INT32_MAX, 65535, 65535};
  struct problem_reference *r = &c->d->reference;
  json_t *ref, *v;
  int64_t threads, blocks;
  int rc = member(root, "reference", JSON_OBJECT, "reference", true,
                  "an object {\"source\", \"block\", \"grid\", ...}", &ref, c->err);
  if (!rc) rc = known_keys(ref, keys, "reference", c->err);
  if (!rc) rc = parse_source(c, ref, max_source);
  if (!rc) rc = parse_entry(c, ref);
  if (!rc) rc = parse_launch(c, ref, "block", r->block, block_max, &threads);
  if (!rc && threads > 1024)
    return api_error_set(c->err, 400, "invalid_problem", "reference.block",
                         "reference.block can reach %" PRId64
                         " threads at the params' maxima; a block has at most 1024",
                         threads);
  if (!rc) rc = parse_launch(c, ref, "grid", r->grid, grid_max, &blocks);
  if (!rc) rc = parse_options(c, ref);
  if (rc || !(v = json_object_get(ref, "shared_bytes"))) return rc;
  struct pexpr_range b;
  rc = expr_within(c, v, "reference.shared_bytes", &r->shared_bytes, 0, PROBLEM_MAX_SHARED_BYTES,
                   "dynamic shared memory is 0 to 2^30 bytes", &b);
  r->max_shared_bytes = rc ? 0 : b.hi;
  return rc;
}

/* ---- the rest ---- */

static int parse_figure(struct ctx *c, json_t *root) {
  static const char *const keys[] = {"bytes", "flops", NULL};
  struct problem_def *d = c->d;
  json_t *f, *v;
  int rc = member(root, "figure", JSON_OBJECT, "figure", true,
                  "{\"bytes\": expression, \"flops\": expression} (either or both)", &f, c->err);
  if (!rc) rc = known_keys(f, keys, "figure", c->err);
  if (rc) return rc;
  if (json_object_size(f) == 0)
    return api_error_set(c->err, 400, "missing_field", "figure",
                         "figure needs bytes, flops or both: expressions over the params");
  if ((v = json_object_get(f, "bytes")) &&
      (rc = expr_within(c, v, "figure.bytes", &d->figure_bytes, 0, INT64_MAX,
                        "bytes moved are not negative", NULL)))
    return rc;
  if ((v = json_object_get(f, "flops")))
    rc = expr_within(c, v, "figure.flops", &d->figure_flops, 0, INT64_MAX,
                     "a count of operations is not negative", NULL);
  return rc;
}

static int parse_head(struct ctx *c, json_t *root) {
  struct problem_def *d = c->d;
  json_t *v;
  int rc = member(root, "name", JSON_STRING, "name", true, "the problem's name", &v, c->err);
  if (rc) return rc;
  if (!problem_def_name_valid(json_string_value(v)) ||
      strlen(json_string_value(v)) != json_string_length(v))
    return api_error_set(c->err, 400, "out_of_range", "name",
                         "name is 1 to %d letters, digits, '_', '-' or '.'", PROBLEM_NAME_MAX);
  snprintf(d->name, sizeof d->name, "%s", json_string_value(v));
  if ((rc = member(root, "public", JSON_TRUE, "public", false, "true or false", &v, c->err)))
    return rc;
  d->is_public = v && json_is_true(v);
  if ((rc = member(root, "nondeterministic", JSON_TRUE, "nondeterministic", false, "true or false",
                   &v, c->err)))
    return rc;
  d->nondeterministic = v && json_is_true(v);
  if ((rc = member(root, "description", JSON_STRING, "description", false, "a string", &v,
                   c->err)) ||
      !v)
    return rc;
  size_t n = json_string_length(v);
  if (n > PROBLEM_MAX_DESCRIPTION || strlen(json_string_value(v)) != n)
    return api_error_set(c->err, 400, "out_of_range", "description",
                         "description has at most %d bytes, no NUL character",
                         PROBLEM_MAX_DESCRIPTION);
  if (!(d->description = strdup(json_string_value(v)))) return oom(c->err);
  return 0;
}

/* What holds across fields once all are read. */
static int check_whole(struct ctx *c) {
  const struct problem_def *d = c->d;
  for (int i = 0; i < d->n_outputs && d->nondeterministic; i++)
    if (d->outputs[i].tolerance.exact) {
      char field[40];
      snprintf(field, sizeof field, "outputs[%d].tolerance", i);
      return api_error_set(c->err, 400, "invalid_problem", field,
                           "the problem is nondeterministic: its reference's runs are compared "
                           "with %s, which must then not be exact",
                           field);
    }
  return 0;
}

int problem_def_parse(json_t *root, size_t max_source_bytes, struct problem_def **out,
                      struct api_error *err) {
  static const char *const keys[] = {
      "name",      "public", "description",      "params",        "inputs", "outputs",
      "reference", "figure", "nondeterministic", "scratch_bytes", NULL};
  *out = NULL;
  if (!json_is_object(root))
    return api_error_set(err, 400, "wrong_type", "", "a problem is a JSON object, got %s",
                         root ? kind_of(root) : "nothing");
  struct ctx c = {.d = calloc(1, sizeof *c.d), .err = err};
  if (!c.d) return oom(err);
  json_t *v;
  int rc = known_keys(root, keys, "", err);
  if (!rc) rc = parse_head(&c, root);
  if (!rc) rc = parse_params(&c, root);
  if (!rc) rc = parse_buffers(&c, root, false);
  if (!rc) rc = parse_buffers(&c, root, true);
  if (!rc)
    rc = parse_reference(&c, root, max_source_bytes ? max_source_bytes : PROBLEM_MAX_SOURCE_BYTES);
  if (!rc) rc = parse_figure(&c, root);
  if (!rc && (v = json_object_get(root, "scratch_bytes"))) {
    struct pexpr_range r;
    rc = expr_within(&c, v, "scratch_bytes", &c.d->scratch_bytes, 0, INT64_MAX,
                     "a byte count is not negative", &r);
    c.d->max_scratch_bytes = rc ? 0 : r.hi;
  }
  if (!rc) rc = check_whole(&c);
  if (rc) {
    problem_def_free(c.d);
    return rc;
  }
  *out = c.d;
  return 0;
}

void problem_def_free(struct problem_def *d) {
  if (!d) return;
  for (int i = 0; i < d->n_inputs + d->n_outputs; i++) {
    struct problem_buffer *b = i < d->n_inputs ? &d->inputs[i] : &d->outputs[i - d->n_inputs];
    for (int k = 0; k < b->n_dims; k++) pexpr_free(b->shape[k]);
  }
  for (int k = 0; k < 3; k++) {
    pexpr_free(d->reference.block[k]);
    pexpr_free(d->reference.grid[k]);
  }
  pexpr_free(d->reference.shared_bytes);
  pexpr_free(d->figure_bytes);
  pexpr_free(d->figure_flops);
  pexpr_free(d->scratch_bytes);
  free(d->reference.source);
  free(d->description);
  free(d);
}
