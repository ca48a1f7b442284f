/* What follows from a parsed problem (api/problem_def.h): its canonical JSON, the
 * signature of its kernels and a template, and its sizes at a job's params. The
 * parsing itself is problem_def.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/problem_def.h"

/* ---- canonical JSON ---- */

/* A plain decimal literal (no sign, no leading zero, no spaces) as an integer, any
 * other expression as its text: either parses back to the same text. */
static json_t *expr_json(const struct pexpr *e) {
  const char *t = pexpr_text(e);
  size_t n = strlen(t);
  bool plain = n > 0 && n <= 18 && (t[0] != '0' || n == 1) && strspn(t, "0123456789") == n;
  return plain ? json_integer(strtoll(t, NULL, 10)) : json_string(t);
}

/* Sets o[key] = v (stolen); false when v is NULL or it could not be set. */
static bool set(json_t *o, const char *key, json_t *v) {
  return v && json_object_set_new(o, key, v) == 0;
}

static bool push(json_t *a, json_t *v) { return v && json_array_append_new(a, v) == 0; }

static json_t *params_json(const struct problem_def *d) {
  json_t *o = json_object();
  bool ok = o != NULL;
  for (int i = 0; ok && i < d->n_params; i++) {
    const struct problem_param *p = &d->params[i];
    ok = set(
        o, p->name,
        json_pack("{s:i,s:i,s:i}", "default", (int)p->def, "min", (int)p->min, "max", (int)p->max));
  }
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

static json_t *init_json(const struct problem_init *in) {
  static const char *const kinds[] = {"uniform", "normal", "integers"};
  json_t *pair = in->kind == PROBLEM_INIT_INTEGERS
                     ? json_pack("[I,I]", (json_int_t)in->a, (json_int_t)in->b)
                     : json_pack("[f,f]", in->a, in->b);
  return pair ? json_pack("{s:o}", kinds[in->kind], pair) : NULL;
}

static json_t *tolerance_json(const struct problem_tolerance *t) {
  if (t->exact) return json_string("exact");
  return json_pack("{s:f,s:f}", "abs", t->abs, "rel", t->rel);
}

static json_t *buffer_json(const struct problem_buffer *b, bool output) {
  json_t *o = json_object(), *shape = json_array();
  bool ok = o && shape && set(o, "name", json_string(b->name)) &&
            set(o, "dtype", json_string(problem_dtype_name(b->dtype)));
  for (int k = 0; ok && k < b->n_dims; k++) ok = push(shape, expr_json(b->shape[k]));
  ok = ok && set(o, "shape", json_incref(shape));
  ok = ok && (output ? set(o, "tolerance", tolerance_json(&b->tolerance))
                     : set(o, "init", init_json(&b->init)));
  json_decref(shape);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

static json_t *exprs_json(struct pexpr *const *e, int n) {
  json_t *a = json_array();
  bool ok = a != NULL;
  for (int k = 0; ok && k < n; k++) ok = push(a, expr_json(e[k]));
  if (!ok) json_decref(a);
  return ok ? a : NULL;
}

static json_t *reference_json(const struct problem_reference *r) {
  json_t *o = json_object();
  bool ok = o && set(o, "source", json_stringn(r->source, r->source_bytes)) &&
            set(o, "entry", json_string(r->entry)) && set(o, "block", exprs_json(r->block, 3)) &&
            set(o, "grid", exprs_json(r->grid, 3));
  if (ok && r->shared_bytes) ok = set(o, "shared_bytes", expr_json(r->shared_bytes));
  if (ok && r->n_options) {
    json_t *a = json_array();
    ok = set(o, "options", a);
    for (int i = 0; ok && i < r->n_options; i++) ok = push(a, json_string(r->options[i]));
  }
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

static json_t *buffers_json(const struct problem_buffer *b, int n, bool output) {
  json_t *a = json_array();
  bool ok = a != NULL;
  for (int i = 0; ok && i < n; i++) ok = push(a, buffer_json(&b[i], output));
  if (!ok) json_decref(a);
  return ok ? a : NULL;
}

json_t *problem_def_to_json(const struct problem_def *d) {
  json_t *o = json_object(), *fig = json_object();
  bool ok = o && fig && set(o, "name", json_string(d->name)) &&
            set(o, "public", json_boolean(d->is_public));
  if (ok && d->description) ok = set(o, "description", json_string(d->description));
  ok = ok && set(o, "params", params_json(d)) &&
       set(o, "inputs", buffers_json(d->inputs, d->n_inputs, false)) &&
       set(o, "outputs", buffers_json(d->outputs, d->n_outputs, true)) &&
       set(o, "reference", reference_json(&d->reference));
  if (ok && d->figure_bytes) ok = set(fig, "bytes", expr_json(d->figure_bytes));
  if (ok && d->figure_flops) ok = set(fig, "flops", expr_json(d->figure_flops));
  ok = ok && set(o, "figure", json_incref(fig)) &&
       set(o, "nondeterministic", json_boolean(d->nondeterministic));
  if (ok && d->scratch_bytes) ok = set(o, "scratch_bytes", expr_json(d->scratch_bytes));
  json_decref(fig);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

/* ---- signature and template ---- */

struct text {
  char *s;
  size_t used, len;
  bool full;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...) {
  if (t->full) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->s + t->used, t->len - t->used, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= t->len - t->used)
    t->full = true;
  else
    t->used += (size_t)n;
}

/* "const float *x, float *y, int rows, int cols[, void *scratch]" */
static void add_params(struct text *t, const struct problem_def *d) {
  for (int i = 0; i < d->n_inputs; i++)
    add(t, "const %s *%s, ", problem_dtype_ctype(d->inputs[i].dtype), d->inputs[i].name);
  for (int i = 0; i < d->n_outputs; i++)
    add(t, "%s *%s, ", problem_dtype_ctype(d->outputs[i].dtype), d->outputs[i].name);
  for (int i = 0; i < d->n_params; i++)
    add(t, "int %s%s", d->params[i].name, i + 1 < d->n_params ? ", " : "");
  if (d->scratch_bytes) add(t, ", void *scratch");
}

int problem_def_signature(const struct problem_def *d, char *buf, size_t len) {
  struct text t = {buf, 0, len, len == 0};
  add(&t, "extern \"C\" __global__ void %%s(");
  add_params(&t, d);
  add(&t, ");");
  if (t.full && len) buf[0] = '\0';
  return t.full ? -ENOSPC : 0;
}

const char *problem_def_prelude(const struct problem_def *d) {
  bool half = false, bf16 = false;
  for (int i = 0; i < d->n_inputs + d->n_outputs; i++) {
    enum problem_dtype t = i < d->n_inputs ? d->inputs[i].dtype : d->outputs[i - d->n_inputs].dtype;
    half = half || t == PROBLEM_DTYPE_FLOAT16;
    bf16 = bf16 || t == PROBLEM_DTYPE_BFLOAT16;
  }
  if (half && bf16) return "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";
  return half ? "#include <cuda_fp16.h>\n" : bf16 ? "#include <cuda_bf16.h>\n" : "";
}

/* "[rows][cols]" */
static void add_shape(struct text *t, const struct problem_buffer *b) {
  for (int k = 0; k < b->n_dims; k++) add(t, "[%s]", pexpr_text(b->shape[k]));
}

static void add_comments(struct text *t, const struct problem_def *d) {
  add(t,
      "// %s: a kernel of this problem. gpulab declares the signature below ahead of your\n"
      "// source (with the includes it needs): keep its parameters as they are.\n",
      d->name);
  for (int i = 0; i < d->n_inputs; i++) {
    add(t, "//   %s: %s ", d->inputs[i].name, problem_dtype_name(d->inputs[i].dtype));
    add_shape(t, &d->inputs[i]);
    add(t, ", input: read only\n");
  }
  for (int i = 0; i < d->n_outputs; i++) {
    add(t, "//   %s: %s ", d->outputs[i].name, problem_dtype_name(d->outputs[i].dtype));
    add_shape(t, &d->outputs[i]);
    add(t, ", output: write every element\n");
  }
  for (int i = 0; i < d->n_params; i++)
    add(t, "//   %s: %d..%d (default %d)\n", d->params[i].name, d->params[i].min, d->params[i].max,
        d->params[i].def);
  if (d->scratch_bytes)
    add(t, "//   scratch: %s bytes, zeroed before each launch\n", pexpr_text(d->scratch_bytes));
  const struct problem_reference *r = &d->reference;
  add(t,
      "// The reference launches block [%s, %s, %s] and grid [%s, %s, %s]; a kernel gives its "
      "own.\n",
      pexpr_text(r->block[0]), pexpr_text(r->block[1]), pexpr_text(r->block[2]),
      pexpr_text(r->grid[0]), pexpr_text(r->grid[1]), pexpr_text(r->grid[2]));
}

/* base, or base with '_' appended until no param, input or output has the name: a local
 * of the template may not redeclare an argument. */
static void fresh_name(const struct problem_def *d, const char *base, char *out, size_t len) {
  snprintf(out, len, "%s", base);
  for (int i = 0; i < d->n_params + d->n_inputs + d->n_outputs; i++) {
    const char *name = i < d->n_params ? d->params[i].name
                       : i < d->n_params + d->n_inputs
                           ? d->inputs[i - d->n_params].name
                           : d->outputs[i - d->n_params - d->n_inputs].name;
    if (strcmp(name, out) == 0 && strlen(out) + 1 < len) {
      strcat(out, "_");
      i = -1; /* check the longer name against all again */
    }
  }
}

/* The template's text into t (t->full when it did not fit). */
static void add_template(struct text *t, const struct problem_def *d) {
  const char *names[PROBLEM_MAX_PARAMS];
  for (int i = 0; i < d->n_params; i++) names[i] = d->params[i].name;
  const struct problem_buffer *y = &d->outputs[0];
  char count[PROBLEM_IDENT_MAX + 8], i[PROBLEM_IDENT_MAX + 8];
  fresh_name(d, "count", count, sizeof count);
  fresh_name(d, "i", i, sizeof i);
  add_comments(t, d);
  add(t, "%sextern \"C\" __global__ void kernel(", problem_def_prelude(d));
  add_params(t, d);
  add(t,
      ") {\n  // A grid-stride loop over %s's elements: right for any grid and block.\n"
      "  const long long %s = ",
      y->name, count);
  for (int k = 0; k < y->n_dims; k++) {
    char c[PEXPR_MAX_TEXT * 4];
    if (pexpr_format_c(y->shape[k], names, c, sizeof c)) /* min/max nested past its size */
      snprintf(c, sizeof c, "1LL /* %s */", pexpr_text(y->shape[k]));
    add(t, "%s%s", k ? " * " : "", c);
  }
  add(t,
      ";\n  for (long long %s = blockIdx.x * (long long)blockDim.x + threadIdx.x; %s < %s;\n"
      "       %s += (long long)gridDim.x * blockDim.x) {\n"
      "    // %s[%s] = ...;\n  }\n}\n",
      i, i, count, i, y->name, i);
}

char *problem_def_template(const struct problem_def *d) {
  for (size_t len = 8192;; len *= 2) {
    struct text t = {malloc(len), 0, len, false};
    if (!t.s) return NULL;
    add_template(&t, d);
    if (!t.full) return t.s;
    free(t.s);
  }
}

/* ---- at a job's params ---- */

static int param_index(const struct problem_def *d, const char *name) {
  for (int i = 0; i < d->n_params; i++)
    if (!strcmp(d->params[i].name, name)) return i;
  return -1;
}

int problem_def_values_parse(const struct problem_def *d, json_t *params, int64_t *values,
                             struct api_error *err) {
  for (int i = 0; i < d->n_params; i++) values[i] = d->params[i].def;
  if (!params) return 0;
  if (!json_is_object(params))
    return api_error_set(err, 400, "wrong_type", "params", "params must be an object of integers");
  const char *key;
  json_t *v;
  json_object_foreach(params, key, v) {
    char field[64], names[200] = "";
    snprintf(field, sizeof field, "params.%s", key);
    int i = param_index(d, key);
    for (int k = 0; i < 0 && k < d->n_params; k++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "",
               d->params[k].name);
    if (i < 0)
      return api_error_set(err, 400, "unknown_field", field, "unknown param '%.40s'; %s has %s",
                           key, d->name, names);
    if (!json_is_integer(v))
      return api_error_set(err, 400, "wrong_type", field, "%s must be an integer", field);
    json_int_t n = json_integer_value(v);
    if (n < d->params[i].min || n > d->params[i].max)
      return api_error_set(err, 400, "out_of_range", field,
                           "%s must be between %d and %d, got %" JSON_INTEGER_FORMAT, field,
                           d->params[i].min, d->params[i].max, n);
    values[i] = n;
  }
  return 0;
}

/* e at values into *out; a failure is impossible once bounded, and is said if it happens. */
static int eval(const struct pexpr *e, const int64_t *values, const char *what, int64_t *out,
                struct api_error *err) {
  struct pexpr_error pe;
  if (pexpr_eval(e, values, out, &pe) == 0) return 0;
  return api_error_set(err, 400, "invalid_problem", what, "%s: %s", what, pe.message);
}

static int extent(const struct problem_buffer *b, const int64_t *values, const char *at,
                  struct problem_extent *x, struct api_error *err) {
  x->n_dims = b->n_dims;
  x->elems = 1;
  for (int k = 0; k < b->n_dims; k++) {
    int rc = eval(b->shape[k], values, at, &x->dims[k], err);
    if (rc) return rc;
    x->elems *= x->dims[k]; /* at most PROBLEM_MAX_ELEMS: bounded at definition */
  }
  x->bytes = x->elems * (int64_t)problem_dtype_bytes(b->dtype);
  return 0;
}

static int launch_sizes(const struct problem_def *d, const int64_t *values, struct problem_sizes *s,
                        struct api_error *err) {
  const struct problem_reference *r = &d->reference;
  int rc = 0;
  for (int k = 0; !rc && k < 3; k++) {
    rc = eval(r->block[k], values, "reference.block", &s->block[k], err);
    if (!rc) rc = eval(r->grid[k], values, "reference.grid", &s->grid[k], err);
  }
  if (!rc && r->shared_bytes)
    rc = eval(r->shared_bytes, values, "reference.shared_bytes", &s->shared_bytes, err);
  if (!rc && d->scratch_bytes)
    rc = eval(d->scratch_bytes, values, "scratch_bytes", &s->scratch_bytes, err);
  if (!rc && (s->has_bytes = d->figure_bytes != NULL))
    rc = eval(d->figure_bytes, values, "figure.bytes", &s->bytes, err);
  if (!rc && (s->has_flops = d->figure_flops != NULL))
    rc = eval(d->figure_flops, values, "figure.flops", &s->flops, err);
  return rc;
}

int problem_def_sizes(const struct problem_def *d, const int64_t *values, struct problem_sizes *out,
                      struct api_error *err) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < d->n_params; i++)
    if (values[i] < d->params[i].min || values[i] > d->params[i].max) {
      char field[64];
      snprintf(field, sizeof field, "params.%s", d->params[i].name);
      return api_error_set(err, 400, "out_of_range", field,
                           "%s must be between %d and %d, got %" PRId64, field, d->params[i].min,
                           d->params[i].max, values[i]);
    }
  int rc = 0;
  int64_t total = 0;
  for (int i = 0; !rc && i < d->n_inputs + d->n_outputs; i++) {
    bool output = i >= d->n_inputs;
    int j = output ? i - d->n_inputs : i;
    char at[32];
    snprintf(at, sizeof at, "%s[%d].shape", output ? "outputs" : "inputs", j);
    struct problem_extent *x = output ? &out->outputs[j] : &out->inputs[j];
    rc = extent(output ? &d->outputs[j] : &d->inputs[j], values, at, x, err);
    total += rc ? 0 : x->bytes; /* 16 buffers of at most 2^33 bytes */
  }
  if (!rc) rc = launch_sizes(d, values, out, err);
  if (!rc && __builtin_add_overflow(total, out->scratch_bytes, &out->buffer_bytes))
    out->buffer_bytes = INT64_MAX;
  return rc;
}
