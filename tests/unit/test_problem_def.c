/* api/problem_def.h: problems defined by users. Bad definitions refused with the exact
 * field; good ones parsed, their signature, template and canonical JSON, and their
 * sizes at defaults and at given params. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/problem_def.h"
#include "tests/runner.h"

/* The example with cols' max at 16384: at 65536 x 65536 its buffers would hold
 * 2^32 elements, which test_overflow shows refused. */
static const char *softmax =
    "{\"name\": \"softmax_rows\", \"public\": true,"
    " \"params\": {\"rows\": {\"default\": 4096, \"min\": 1, \"max\": 65536},"
    "             \"cols\": {\"default\": 1024, \"min\": 1, \"max\": 16384}},"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"rows\", \"cols\"],"
    "              \"init\": {\"uniform\": [-4, 4]}}],"
    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [\"rows\", \"cols\"],"
    "               \"tolerance\": {\"abs\": 1e-6, \"rel\": 1e-4}}],"
    " \"reference\": {\"source\": \"extern \\\"C\\\" __global__ void kernel(const float* x, "
    "float* y, int rows, int cols) {}\", \"block\": [256, 1, 1], \"grid\": [\"rows\", 1, 1]},"
    " \"figure\": {\"bytes\": \"8 * rows * cols\"}}";

static const char *histogram =
    "{\"name\": \"hist-256\", \"description\": \"counts of small integers\","
    " \"params\": {\"n\": {\"default\": 1048576, \"min\": 1, \"max\": 16777216},"
    "             \"bins\": {\"default\": 256, \"min\": 1, \"max\": 4096}},"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"int32\", \"shape\": [\"n\"],"
    "              \"init\": {\"integers\": [0, 4095]}}],"
    " \"outputs\": [{\"name\": \"counts\", \"dtype\": \"uint32\", \"shape\": [\"bins\"]}],"
    " \"reference\": {\"source\": \"// atomics\", \"entry\": \"hist\", \"block\": [256],"
    "               \"grid\": [\"cdiv(n, 256)\"], \"shared_bytes\": \"4 * bins\","
    "               \"options\": [\"-lineinfo\"]},"
    " \"figure\": {\"bytes\": \"4 * n + 4 * bins\", \"flops\": 0},"
    " \"scratch_bytes\": \"4 * bins\"}";

static const char *half_scale =
    "{\"name\": \"half_scale\","
    " \"params\": {\"n\": {\"default\": 1000, \"min\": 1, \"max\": 100000000}},"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float16\", \"shape\": [\"n\"],"
    "              \"init\": {\"normal\": [0, 2]}},"
    "             {\"name\": \"w\", \"dtype\": \"bfloat16\", \"shape\": [\"n / 2 + 1\"],"
    "              \"init\": {\"uniform\": [-1.5, 1.5]}}],"
    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"float16\", \"shape\": [\"n\"],"
    "               \"tolerance\": {\"rel\": 0.001}}],"
    " \"reference\": {\"source\": \"k\", \"block\": [128, 1, 1],"
    "               \"grid\": [\"min(cdiv(n, 128), 65536)\", 1, 1]},"
    " \"figure\": {\"flops\": \"n\"}, \"nondeterministic\": true}";

static json_t *load(const char *text) {
  json_error_t jerr;
  json_t *root = json_loads(text, JSON_DECODE_ANY, &jerr);
  if (!root) fprintf(stderr, "test JSON: %s at %d\n", jerr.text, jerr.position);
  CHECK(root != NULL);
  return root;
}

static struct problem_def *parse_ok(json_t *root) {
  struct problem_def *d = NULL;
  struct api_error err = {0};
  int rc = problem_def_parse(root, 0, &d, &err);
  if (rc) fprintf(stderr, "refused: %d %s %s: %s\n", err.status, err.code, err.field, err.message);
  CHECK_INT_EQ(rc, 0);
  CHECK(d != NULL);
  return d;
}

static struct problem_def *parse_text_ok(const char *text) {
  json_t *root = load(text);
  struct problem_def *d = parse_ok(root);
  json_decref(root);
  return d;
}

/* Sets (value non-NULL, JSON text) or deletes the member at path ("inputs/0/shape/1")
 * of root; an array's index one past its end appends. */
static void mutate(json_t *root, const char *path, const char *value) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  json_t *at = root;
  char *seg = buf, *slash;
  while ((slash = strchr(seg, '/'))) {
    *slash = '\0';
    at = json_is_array(at) ? json_array_get(at, (size_t)atoi(seg)) : json_object_get(at, seg);
    CHECK(at != NULL);
    seg = slash + 1;
  }
  json_t *v = value ? load(value) : NULL;
  size_t index = (size_t)atoi(seg);
  if (json_is_array(at) && v && index == json_array_size(at)) /* one past the end: append */
    CHECK_INT_EQ(json_array_append_new(at, v), 0);
  else if (json_is_array(at) && v)
    CHECK_INT_EQ(json_array_set_new(at, index, v), 0);
  else if (json_is_array(at))
    CHECK_INT_EQ(json_array_remove(at, index), 0);
  else if (v)
    CHECK_INT_EQ(json_object_set_new(at, seg, v), 0);
  else
    CHECK_INT_EQ(json_object_del(at, seg), 0);
}

struct bad {
  const char *path, *value;   /* a change to the softmax definition (value NULL: delete) */
  const char *path2, *value2; /* and a second one, or NULL */
  const char *code, *field;
  const char *says; /* in the message, or NULL */
};

static const struct bad bads[] = {
    {"name", "\"bad name!\"", NULL, NULL, "out_of_range", "name", NULL},
    {"name", "\"..\"", NULL, NULL, "out_of_range", "name", NULL},
    {"name", NULL, NULL, NULL, "missing_field", "name", NULL},
    {"public", "\"yes\"", NULL, NULL, "wrong_type", "public", NULL},
    {"colour", "1", NULL, NULL, "unknown_field", "colour", "unknown field 'colour'"},
    {"description", "5", NULL, NULL, "wrong_type", "description", NULL},
    {"params", "{}", NULL, NULL, "out_of_range", "params", "1 to 16 params"},
    {"params/rows", "5", NULL, NULL, "wrong_type", "params.rows", NULL},
    {"params/rows/max", "0", NULL, NULL, "out_of_range", "params.rows.max", NULL},
    {"params/rows/default", "70000", NULL, NULL, "out_of_range", "params.rows.default", NULL},
    {"params/rows/min", "3000000000", NULL, NULL, "out_of_range", "params.rows.min", NULL},
    {"params/rows/min", "1.5", NULL, NULL, "wrong_type", "params.rows.min", NULL},
    {"params/rows/step", "1", NULL, NULL, "unknown_field", "params.rows.step", NULL},
    {"params/cols/max", NULL, NULL, NULL, "missing_field", "params.cols.max", NULL},
    {"params/int", "{\"default\": 1, \"min\": 1, \"max\": 2}", NULL, NULL, "out_of_range",
     "params.int", NULL},
    {"params/threadIdx", "{\"default\": 1, \"min\": 1, \"max\": 2}", NULL, NULL, "out_of_range",
     "params.threadIdx", NULL},
    {"params/reps", "{\"default\": 1, \"min\": 1, \"max\": 2}", NULL, NULL, "out_of_range",
     "params.reps", "a field every job has"},
    {"inputs", "[]", NULL, NULL, "out_of_range", "inputs", NULL},
    {"inputs/0", "7", NULL, NULL, "wrong_type", "inputs[0]", NULL},
    {"inputs/0/dtype", "\"float64\"", NULL, NULL, "out_of_range", "inputs[0].dtype", NULL},
    {"inputs/0/shape/1", "\"colz\"", NULL, NULL, "invalid_expression", "inputs[0].shape[1]",
     "inputs[0].shape[1]: unknown name 'colz' at 1"},
    {"inputs/0/shape/1", "\"(cols + 1\"", NULL, NULL, "invalid_expression", "inputs[0].shape[1]",
     "syntax error at 10: expected ')'"},
    {"inputs/0/shape/1", "\"cols / 0\"", NULL, NULL, "invalid_expression", "inputs[0].shape[1]",
     "division by zero at 6"},
    {"inputs/0/shape/1", "\"cols / (rows - 1)\"", NULL, NULL, "invalid_expression",
     "inputs[0].shape[1]",
     "division by zero at 6: the divisor can be 0 (it ranges over [0, 65535])"},
    {"inputs/0/shape/0", "\"rows * rows * rows * rows\"", NULL, NULL, "invalid_expression",
     "inputs[0].shape[0]", "overflow at 20"},
    {"inputs/0/shape/1", "\"cols - 1\"", NULL, NULL, "invalid_problem", "inputs[0].shape[1]",
     "can be 0 over the params' ranges"},
    {"inputs/0/shape/0", "true", NULL, NULL, "wrong_type", "inputs[0].shape[0]", NULL},
    {"inputs/0/shape", "[1, 2, 3, 4, 5]", NULL, NULL, "out_of_range", "inputs[0].shape", NULL},
    {"inputs/0/init", "{\"integers\": [0, 9]}", NULL, NULL, "invalid_problem",
     "inputs[0].init.integers", NULL},
    {"inputs/0/init", "{\"uniform\": [4, -4]}", NULL, NULL, "out_of_range",
     "inputs[0].init.uniform", NULL},
    {"inputs/0/init", "{\"normal\": [0, 0]}", NULL, NULL, "out_of_range",
     "inputs[0].init.normal[1]", NULL},
    {"inputs/0/init", "{\"uniform\": [0, \"1\"]}", NULL, NULL, "wrong_type",
     "inputs[0].init.uniform[1]", NULL},
    {"inputs/0/init", "{\"uniform\": [0, 1], \"normal\": [0, 1]}", NULL, NULL, "out_of_range",
     "inputs[0].init", NULL},
    {"inputs/0/init", "{\"poisson\": [1, 2]}", NULL, NULL, "unknown_field",
     "inputs[0].init.poisson", NULL},
    {"inputs/0/init", NULL, NULL, NULL, "missing_field", "inputs[0].init", NULL},
    {"inputs/0/dtype", "\"float16\"", "inputs/0/init", "{\"uniform\": [-70000, 0]}", "out_of_range",
     "inputs[0].init.uniform[0]", "float16's range"},
    {"inputs/0/dtype", "\"int8\"", "inputs/0/init", "{\"integers\": [0, 300]}", "out_of_range",
     "inputs[0].init.integers[1]", NULL},
    {"inputs/0/dtype", "\"int8\"", "inputs/0/init", "{\"integers\": [0, 2.5]}", "wrong_type",
     "inputs[0].init.integers[1]", NULL},
    {"inputs/0/dtype", "\"uint32\"", NULL, NULL, "invalid_problem", "inputs[0].init.uniform",
     "integers fill integer dtypes"},
    {"inputs/0/name", "\"rows\"", NULL, NULL, "invalid_problem", "inputs[0].name",
     "already the name of params.rows"},
    {"inputs/0/name", "\"2x\"", NULL, NULL, "out_of_range", "inputs[0].name", NULL},
    {"outputs/0/name", "\"x\"", NULL, NULL, "invalid_problem", "outputs[0].name",
     "already the name of inputs[0]"},
    {"outputs/0/init", "{\"uniform\": [0, 1]}", NULL, NULL, "unknown_field", "outputs[0].init",
     NULL},
    {"outputs/0/tolerance", "\"loose\"", NULL, NULL, "out_of_range", "outputs[0].tolerance", NULL},
    {"outputs/0/tolerance", "{\"abs\": -1}", NULL, NULL, "out_of_range", "outputs[0].tolerance.abs",
     NULL},
    {"outputs/0/tolerance", "{}", NULL, NULL, "missing_field", "outputs[0].tolerance", NULL},
    {"outputs/0/tolerance", NULL, NULL, NULL, "missing_field", "outputs[0].tolerance", NULL},
    {"outputs/0/tolerance", "{\"abs\": 1e-6, \"ulp\": 2}", NULL, NULL, "unknown_field",
     "outputs[0].tolerance.ulp", NULL},
    {"outputs/0/tolerance", "\"exact\"", "nondeterministic", "true", "invalid_problem",
     "outputs[0].tolerance", "nondeterministic"},
    {"reference/source", "\"\"", NULL, NULL, "out_of_range", "reference.source", NULL},
    {"reference/source", NULL, NULL, NULL, "missing_field", "reference.source", NULL},
    {"reference/entry", "\"my kernel\"", NULL, NULL, "out_of_range", "reference.entry", NULL},
    {"reference/block", "[2048, 1, 1]", NULL, NULL, "invalid_problem", "reference.block[0]",
     "block x is 1 to 1024"},
    {"reference/block", "[64, 64, 1]", NULL, NULL, "invalid_problem", "reference.block",
     "4096 threads"},
    {"reference/block", "[\"rows\", 1, 1]", NULL, NULL, "invalid_problem", "reference.block[0]",
     "can reach 65536"},
    {"reference/grid", "[\"rows\", \"cols * 4\", 1]", NULL, NULL, "invalid_problem",
     "reference.grid[1]", "can reach 65536"},
    {"reference/grid", "[\"rows / 2\", 1, 1]", NULL, NULL, "invalid_problem", "reference.grid[0]",
     "can be 0"},
    {"reference/grid", "[]", NULL, NULL, "out_of_range", "reference.grid", NULL},
    {"reference/grid", NULL, NULL, NULL, "missing_field", "reference.grid", NULL},
    {"reference/shared_bytes", "\"4 * cols - 8\"", NULL, NULL, "invalid_problem",
     "reference.shared_bytes", NULL},
    {"reference/options", "[1]", NULL, NULL, "wrong_type", "reference.options[0]", NULL},
    {"reference/cooperative", "true", NULL, NULL, "unknown_field", "reference.cooperative", NULL},
    {"figure", "{}", NULL, NULL, "missing_field", "figure", NULL},
    {"figure/bytes", "\"8 * rows * colz\"", NULL, NULL, "invalid_expression", "figure.bytes",
     "unknown name 'colz' at 12"},
    {"figure/gbps", "1", NULL, NULL, "unknown_field", "figure.gbps", NULL},
    {"scratch_bytes", "\"rows - 2\"", NULL, NULL, "invalid_problem", "scratch_bytes", "can be -1"},
    {"nondeterministic", "1", NULL, NULL, "wrong_type", "nondeterministic", NULL},
};

static void test_bad_definitions(void) {
  int n = (int)(sizeof bads / sizeof bads[0]);
  CHECK(n >= 25);
  for (int i = 0; i < n; i++) {
    const struct bad *b = &bads[i];
    json_t *root = load(softmax);
    mutate(root, b->path, b->value);
    if (b->path2) mutate(root, b->path2, b->value2);
    struct problem_def *d = (struct problem_def *)1;
    struct api_error err = {0};
    int rc = problem_def_parse(root, 0, &d, &err);
    bool ok = rc == -EINVAL && err.status == 400 && !strcmp(err.code, b->code) &&
              !strcmp(err.field, b->field) && (!b->says || strstr(err.message, b->says));
    if (!ok)
      fprintf(stderr, "case %d (%s): %d %d %s '%s': %s\n", i, b->path, rc, err.status, err.code,
              err.field, err.message);
    CHECK_INT_EQ(rc, -EINVAL);
    CHECK(d == NULL);
    CHECK_INT_EQ(err.status, 400);
    CHECK_STR_EQ(err.code, b->code);
    CHECK_STR_EQ(err.field, b->field);
    CHECK(!b->says || strstr(err.message, b->says));
    CHECK(strlen(err.message) > 10);
    json_decref(root);
  }
}

/* The example as written: rows and cols up to 65536 make 2^32 elements. And an
 * output alone too large is named as such. */
static void test_overflow(void) {
  json_t *root = load(softmax);
  mutate(root, "params/cols/max", "65536");
  struct problem_def *d;
  struct api_error err;
  CHECK_INT_EQ(problem_def_parse(root, 0, &d, &err), -EINVAL);
  CHECK_INT_EQ(err.status, 400);
  CHECK_STR_EQ(err.code, "invalid_problem");
  CHECK_STR_EQ(err.field, "inputs[0].shape");
  CHECK_STR_EQ(err.message,
               "inputs[0] ('x') can hold 4294967296 elements at the params' maxima; at most "
               "2147483647, or a kernel's int indices would overflow");
  mutate(root, "inputs/0/shape", "[\"rows\"]");
  CHECK_INT_EQ(problem_def_parse(root, 0, &d, &err), -EINVAL);
  CHECK_STR_EQ(err.field, "outputs[0].shape");
  CHECK(strstr(err.message, "outputs[0] ('y') can hold 4294967296 elements") != NULL);
  mutate(root, "params/cols/max", "32767"); /* 65536 * 32767 = 2147418112 fits */
  d = parse_ok(root);
  CHECK_INT_EQ(d->outputs[0].max_elems, 2147418112);
  CHECK_INT_EQ(d->outputs[0].max_bytes, 4LL * 2147418112);
  problem_def_free(d);
  mutate(root, "params/cols/max", "32768"); /* 2^31: one past */
  CHECK_INT_EQ(problem_def_parse(root, 0, &d, &err), -EINVAL);
  CHECK_STR_EQ(err.field, "outputs[0].shape");
  json_decref(root);
}

/* A source over the caller's limit is a 413, as a kernel's is. */
static void test_source_limit(void) {
  json_t *root = load(softmax);
  struct problem_def *d;
  struct api_error err;
  CHECK_INT_EQ(problem_def_parse(root, 16, &d, &err), -EINVAL);
  CHECK_INT_EQ(err.status, 413);
  CHECK_STR_EQ(err.code, "source_too_large");
  CHECK_STR_EQ(err.field, "reference.source");
  CHECK_INT_EQ(problem_def_parse(root, 1000, &d, &err), 0);
  problem_def_free(d);
  json_t *arr = load("[1]");
  CHECK_INT_EQ(problem_def_parse(arr, 0, &d, &err), -EINVAL);
  CHECK_STR_EQ(err.code, "wrong_type");
  CHECK_STR_EQ(err.field, "");
  json_decref(arr);
  json_decref(root);
}

static void test_softmax(void) {
  struct problem_def *d = parse_text_ok(softmax);
  CHECK_STR_EQ(d->name, "softmax_rows");
  CHECK(d->is_public);
  CHECK(d->description == NULL);
  CHECK_INT_EQ(d->n_params, 2);
  CHECK_STR_EQ(d->params[0].name, "rows");
  CHECK_INT_EQ(d->params[0].def, 4096);
  CHECK_INT_EQ(d->params[1].max, 16384);
  CHECK_INT_EQ(d->n_inputs, 1);
  CHECK_INT_EQ(d->n_outputs, 1);
  CHECK_INT_EQ(d->inputs[0].dtype, PROBLEM_DTYPE_FLOAT32);
  CHECK_INT_EQ(d->inputs[0].n_dims, 2);
  CHECK_STR_EQ(pexpr_text(d->inputs[0].shape[1]), "cols");
  CHECK_INT_EQ(d->inputs[0].init.kind, PROBLEM_INIT_UNIFORM);
  CHECK_NEAR(d->inputs[0].init.a, -4, 0);
  CHECK_NEAR(d->inputs[0].init.b, 4, 0);
  CHECK_INT_EQ(d->inputs[0].max_elems, 65536LL * 16384);
  CHECK(!d->outputs[0].tolerance.exact);
  CHECK_NEAR(d->outputs[0].tolerance.abs, 1e-6, 0);
  CHECK_NEAR(d->outputs[0].tolerance.rel, 1e-4, 0);
  CHECK_STR_EQ(d->reference.entry, "kernel");
  CHECK_STR_EQ(pexpr_text(d->reference.block[0]), "256");
  CHECK_STR_EQ(pexpr_text(d->reference.grid[0]), "rows");
  CHECK(d->reference.shared_bytes == NULL);
  CHECK_INT_EQ(d->reference.n_options, 0);
  CHECK(d->figure_bytes != NULL && d->figure_flops == NULL);
  CHECK(!d->nondeterministic);
  CHECK(d->scratch_bytes == NULL);
  char sig[PROBLEM_SIGNATURE_MAX];
  CHECK_INT_EQ(problem_def_signature(d, sig, sizeof sig), 0);
  CHECK_STR_EQ(sig,
               "extern \"C\" __global__ void %s(const float *x, float *y, int rows, int cols);");
  CHECK_INT_EQ(problem_def_signature(d, sig, 20), -ENOSPC);
  CHECK_STR_EQ(problem_def_prelude(d), "");
  problem_def_free(d);
  problem_def_free(NULL);
  /* a float output may be exact; an integer output may have a tolerance */
  json_t *root = load(softmax);
  mutate(root, "outputs/0/tolerance", "\"exact\"");
  mutate(root, "outputs/1",
         "{\"name\": \"q\", \"dtype\": \"int8\", \"shape\": [\"rows\"], "
         "\"tolerance\": {\"abs\": 1}}");
  d = parse_ok(root);
  CHECK(d->outputs[0].tolerance.exact);
  CHECK(!d->outputs[1].tolerance.exact);
  CHECK_NEAR(d->outputs[1].tolerance.abs, 1, 0);
  CHECK_INT_EQ(d->outputs[1].max_bytes, 65536);
  problem_def_free(d);
  json_decref(root);
}

static void test_histogram(void) {
  struct problem_def *d = parse_text_ok(histogram);
  CHECK_STR_EQ(d->description, "counts of small integers");
  CHECK(!d->is_public);
  CHECK_INT_EQ(d->inputs[0].init.kind, PROBLEM_INIT_INTEGERS);
  CHECK_NEAR(d->inputs[0].init.b, 4095, 0);
  CHECK_INT_EQ(d->outputs[0].dtype, PROBLEM_DTYPE_UINT32);
  CHECK(d->outputs[0].tolerance.exact); /* an integer output's default */
  CHECK_STR_EQ(d->reference.entry, "hist");
  CHECK_STR_EQ(pexpr_text(d->reference.block[1]), "1"); /* filled */
  CHECK_STR_EQ(pexpr_text(d->reference.grid[2]), "1");
  CHECK_INT_EQ(d->reference.max_shared_bytes, 4 * 4096);
  CHECK_INT_EQ(d->reference.n_options, 1);
  CHECK_STR_EQ(d->reference.options[0], "-lineinfo");
  CHECK_INT_EQ(d->max_scratch_bytes, 4 * 4096);
  char sig[PROBLEM_SIGNATURE_MAX];
  CHECK_INT_EQ(problem_def_signature(d, sig, sizeof sig), 0);
  CHECK_STR_EQ(sig,
               "extern \"C\" __global__ void %s(const int *x, unsigned int *counts, int n, "
               "int bins, void *scratch);");
  problem_def_free(d);
}

static void test_half(void) {
  struct problem_def *d = parse_text_ok(half_scale);
  CHECK(d->nondeterministic);
  CHECK_INT_EQ(d->inputs[0].init.kind, PROBLEM_INIT_NORMAL);
  CHECK_NEAR(d->inputs[0].init.b, 2, 0);
  CHECK_INT_EQ(d->inputs[1].max_elems, 50000001);
  CHECK_INT_EQ(d->inputs[1].max_bytes, 100000002);
  CHECK_NEAR(d->outputs[0].tolerance.abs, 0, 0);
  CHECK_NEAR(d->outputs[0].tolerance.rel, 0.001, 0);
  char sig[PROBLEM_SIGNATURE_MAX];
  CHECK_INT_EQ(problem_def_signature(d, sig, sizeof sig), 0);
  CHECK_STR_EQ(sig,
               "extern \"C\" __global__ void %s(const __half *x, const __nv_bfloat16 *w, "
               "__half *y, int n);");
  CHECK_STR_EQ(problem_def_prelude(d), "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n");
  char *t = problem_def_template(d);
  CHECK(t != NULL);
  CHECK_STR_EQ(t,
               "// half_scale: a kernel of this problem. gpulab declares the signature below "
               "ahead of your\n"
               "// source (with the includes it needs): keep its parameters as they are.\n"
               "//   x: float16 [n], input: read only\n"
               "//   w: bfloat16 [n / 2 + 1], input: read only\n"
               "//   y: float16 [n], output: write every element\n"
               "//   n: 1..100000000 (default 1000)\n"
               "// The reference launches block [128, 1, 1] and grid [min(cdiv(n, 128), 65536), "
               "1, 1]; a kernel gives its own.\n"
               "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
               "extern \"C\" __global__ void kernel(const __half *x, const __nv_bfloat16 *w, "
               "__half *y, int n) {\n"
               "  // A grid-stride loop over y's elements: right for any grid and block.\n"
               "  const long long count = (long long)n;\n"
               "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;\n"
               "       i += (long long)gridDim.x * blockDim.x) {\n"
               "    // y[i] = ...;\n  }\n}\n");
  free(t);
  problem_def_free(d);
}

/* to_json is canonical: parsing it gives the same definition, whose JSON is the same. */
static void round_trip(const char *text) {
  struct problem_def *d = parse_text_ok(text);
  json_t *j1 = problem_def_to_json(d);
  CHECK(j1 != NULL);
  struct problem_def *d2 = parse_ok(j1);
  json_t *j2 = problem_def_to_json(d2);
  CHECK(json_equal(j1, j2));
  char sig1[PROBLEM_SIGNATURE_MAX], sig2[PROBLEM_SIGNATURE_MAX];
  CHECK_INT_EQ(problem_def_signature(d, sig1, sizeof sig1), 0);
  CHECK_INT_EQ(problem_def_signature(d2, sig2, sizeof sig2), 0);
  CHECK_STR_EQ(sig1, sig2);
  CHECK_INT_EQ(d2->outputs[0].max_elems, d->outputs[0].max_elems);
  CHECK_INT_EQ(d2->reference.source_bytes, d->reference.source_bytes);
  CHECK_STR_EQ(d2->reference.source, d->reference.source);
  json_decref(j1);
  json_decref(j2);
  problem_def_free(d);
  problem_def_free(d2);
}

static void test_round_trip(void) {
  round_trip(softmax);
  round_trip(histogram);
  round_trip(half_scale);
  /* the canonical text itself: every key in its place, literals as integers */
  struct problem_def *d = parse_text_ok(histogram);
  json_t *j = problem_def_to_json(d);
  char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
  CHECK_STR_EQ(text,
               "{\"name\":\"hist-256\",\"public\":false,\"description\":\"counts of small "
               "integers\",\"params\":{\"n\":{\"default\":1048576,\"min\":1,\"max\":16777216},"
               "\"bins\":{\"default\":256,\"min\":1,\"max\":4096}},\"inputs\":[{\"name\":\"x\","
               "\"dtype\":\"int32\",\"shape\":[\"n\"],\"init\":{\"integers\":[0,4095]}}],"
               "\"outputs\":[{\"name\":\"counts\",\"dtype\":\"uint32\",\"shape\":[\"bins\"],"
               "\"tolerance\":\"exact\"}],\"reference\":{\"source\":\"// atomics\",\"entry\":"
               "\"hist\",\"block\":[256,1,1],\"grid\":[\"cdiv(n, 256)\",1,1],\"shared_bytes\":"
               "\"4 * bins\",\"options\":[\"-lineinfo\"]},\"figure\":{\"bytes\":\"4 * n + 4 * "
               "bins\",\"flops\":0},\"nondeterministic\":false,\"scratch_bytes\":\"4 * bins\"}");
  free(text);
  json_decref(j);
  problem_def_free(d);
}

/* Params keep the JSON object's order (jansson keeps insertion order), which is the
 * signature's; the template's locals step around the arguments' names. */
static void test_param_order(void) {
  json_t *root = load(softmax);
  json_object_del(json_object_get(root, "params"), "rows");
  mutate(root, "params/zeta", "{\"default\": 2, \"min\": 1, \"max\": 9}");
  mutate(root, "params/count", "{\"default\": 2, \"min\": 1, \"max\": 9}");
  mutate(root, "params/alpha", "{\"default\": 2, \"min\": 1, \"max\": 9}");
  mutate(root, "params/rows", "{\"default\": 2, \"min\": 1, \"max\": 9}");
  mutate(root, "outputs/0/name", "\"i\"");
  struct problem_def *d = parse_ok(root);
  const char *want[] = {"cols", "zeta", "count", "alpha", "rows"};
  CHECK_INT_EQ(d->n_params, 5);
  for (int i = 0; i < 5; i++) CHECK_STR_EQ(d->params[i].name, want[i]);
  char sig[PROBLEM_SIGNATURE_MAX];
  CHECK_INT_EQ(problem_def_signature(d, sig, sizeof sig), 0);
  CHECK_STR_EQ(sig,
               "extern \"C\" __global__ void %s(const float *x, float *i, int cols, int zeta, "
               "int count, int alpha, int rows);");
  char *t = problem_def_template(d);
  CHECK(strstr(t, "  const long long count_ = (long long)rows * (long long)cols;\n") != NULL);
  CHECK(strstr(t,
               "for (long long i_ = blockIdx.x * (long long)blockDim.x + threadIdx.x; i_ < "
               "count_;\n") != NULL);
  CHECK(strstr(t, "    // i[i_] = ...;\n") != NULL);
  free(t);
  problem_def_free(d);
  json_decref(root);
}

static void test_sizes(void) {
  struct problem_def *d = parse_text_ok(softmax);
  int64_t v[PROBLEM_MAX_PARAMS];
  struct api_error err;
  struct problem_sizes s;
  CHECK_INT_EQ(problem_def_values_parse(d, NULL, v, &err), 0);
  CHECK_INT_EQ(v[0], 4096);
  CHECK_INT_EQ(v[1], 1024);
  CHECK_INT_EQ(problem_def_sizes(d, v, &s, &err), 0);
  CHECK_INT_EQ(s.inputs[0].n_dims, 2);
  CHECK_INT_EQ(s.inputs[0].dims[0], 4096);
  CHECK_INT_EQ(s.inputs[0].dims[1], 1024);
  CHECK_INT_EQ(s.inputs[0].elems, 4194304);
  CHECK_INT_EQ(s.outputs[0].bytes, 16777216);
  CHECK_INT_EQ(s.block[0], 256);
  CHECK_INT_EQ(s.block[1], 1);
  CHECK_INT_EQ(s.grid[0], 4096);
  CHECK_INT_EQ(s.grid[2], 1);
  CHECK(s.has_bytes && !s.has_flops);
  CHECK_INT_EQ(s.bytes, 33554432);
  CHECK_INT_EQ(s.shared_bytes, 0);
  CHECK_INT_EQ(s.buffer_bytes, 2 * 16777216);
  json_t *p = load("{\"cols\": 3, \"rows\": 10}");
  CHECK_INT_EQ(problem_def_values_parse(d, p, v, &err), 0);
  json_decref(p);
  CHECK_INT_EQ(v[0], 10);
  CHECK_INT_EQ(v[1], 3);
  CHECK_INT_EQ(problem_def_sizes(d, v, &s, &err), 0);
  CHECK_INT_EQ(s.outputs[0].elems, 30);
  CHECK_INT_EQ(s.grid[0], 10);
  CHECK_INT_EQ(s.bytes, 240);
  v[1] = 16385;
  CHECK_INT_EQ(problem_def_sizes(d, v, &s, &err), -EINVAL);
  CHECK_STR_EQ(err.code, "out_of_range");
  CHECK_STR_EQ(err.field, "params.cols");
  problem_def_free(d);
}

/* cdiv, min, scratch, shared bytes, both figures. */
static void test_sizes_more(void) {
  int64_t v[PROBLEM_MAX_PARAMS];
  struct api_error err;
  struct problem_sizes s;
  struct problem_def *d = parse_text_ok(histogram);
  json_t *p = load("{\"n\": 1000}");
  CHECK_INT_EQ(problem_def_values_parse(d, p, v, &err), 0);
  json_decref(p);
  CHECK_INT_EQ(problem_def_sizes(d, v, &s, &err), 0);
  CHECK_INT_EQ(s.grid[0], 4); /* cdiv(1000, 256) */
  CHECK_INT_EQ(s.block[0], 256);
  CHECK_INT_EQ(s.shared_bytes, 1024);
  CHECK_INT_EQ(s.scratch_bytes, 1024);
  CHECK_INT_EQ(s.bytes, 4 * 1000 + 4 * 256);
  CHECK(s.has_flops);
  CHECK_INT_EQ(s.flops, 0);
  CHECK_INT_EQ(s.buffer_bytes, 4000 + 1024 + 1024);
  problem_def_free(d);

  d = parse_text_ok(half_scale);
  CHECK_INT_EQ(problem_def_values_parse(d, NULL, v, &err), 0);
  CHECK_INT_EQ(problem_def_sizes(d, v, &s, &err), 0);
  CHECK_INT_EQ(s.inputs[1].elems, 501);
  CHECK_INT_EQ(s.inputs[1].bytes, 1002);
  CHECK_INT_EQ(s.grid[0], 8);
  v[0] = 100000000;
  CHECK_INT_EQ(problem_def_sizes(d, v, &s, &err), 0);
  CHECK_INT_EQ(s.grid[0], 65536); /* min(781250, 65536) */
  CHECK_INT_EQ(s.flops, 100000000);
  problem_def_free(d);
}

/* A job's params: each refused by name. */
static void expect_values_error(const struct problem_def *d, const char *text, const char *code,
                                const char *field) {
  json_t *p = load(text);
  int64_t v[PROBLEM_MAX_PARAMS];
  struct api_error err = {0};
  CHECK_INT_EQ(problem_def_values_parse(d, p, v, &err), -EINVAL);
  CHECK_INT_EQ(err.status, 400);
  CHECK_STR_EQ(err.code, code);
  CHECK_STR_EQ(err.field, field);
  json_decref(p);
}

static void test_values_errors(void) {
  struct problem_def *d = parse_text_ok(softmax);
  expect_values_error(d, "{\"rows\": 0}", "out_of_range", "params.rows");
  expect_values_error(d, "{\"cols\": 16385}", "out_of_range", "params.cols");
  expect_values_error(d, "{\"colz\": 1}", "unknown_field", "params.colz");
  expect_values_error(d, "{\"rows\": \"4\"}", "wrong_type", "params.rows");
  expect_values_error(d, "{\"rows\": 1.0}", "wrong_type", "params.rows");
  expect_values_error(d, "[1]", "wrong_type", "params");
  json_t *p = load("{\"rows\": 0}");
  int64_t v[PROBLEM_MAX_PARAMS];
  struct api_error err;
  problem_def_values_parse(d, p, v, &err);
  CHECK_STR_EQ(err.message, "params.rows must be between 1 and 65536, got 0");
  json_decref(p);
  problem_def_free(d);
}

static void test_dtypes(void) {
  const char *names[] = {"float32", "float16", "bfloat16", "int32", "uint32", "int8"};
  const char *ctypes[] = {"float", "__half", "__nv_bfloat16", "int", "unsigned int", "signed char"};
  const size_t bytes[] = {4, 2, 2, 4, 4, 1};
  for (int t = 0; t < PROBLEM_DTYPE_COUNT; t++) {
    CHECK_STR_EQ(problem_dtype_name((enum problem_dtype)t), names[t]);
    CHECK_STR_EQ(problem_dtype_ctype((enum problem_dtype)t), ctypes[t]);
    CHECK_INT_EQ(problem_dtype_bytes((enum problem_dtype)t), bytes[t]);
    CHECK_INT_EQ(problem_dtype_is_integer((enum problem_dtype)t), t >= PROBLEM_DTYPE_INT32);
  }
  CHECK(problem_def_name_valid("softmax_rows-v2.1"));
  CHECK(!problem_def_name_valid(""));
  CHECK(!problem_def_name_valid("a b"));
  CHECK(!problem_def_name_valid(NULL));
  char long_name[80];
  memset(long_name, 'a', 64);
  long_name[64] = '\0';
  CHECK(!problem_def_name_valid(long_name));
  long_name[63] = '\0';
  CHECK(problem_def_name_valid(long_name));
}

static const struct test_case cases[] = {
    TEST(test_bad_definitions),
    TEST(test_overflow),
    TEST(test_source_limit),
    TEST(test_softmax),
    TEST(test_histogram),
    TEST(test_half),
    TEST(test_round_trip),
    TEST(test_param_order),
    TEST(test_sizes),
    TEST(test_sizes_more),
    TEST(test_values_errors),
    TEST(test_dtypes),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
