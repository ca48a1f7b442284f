/* Problems users define, against a real gpulabd (CPU backend, NVRTC for real, SQLite):
 * a definition compiled and answered with its signature, template and occupancy; bad
 * ones refused naming their field (the parser's every rule: tests/unit/
 * test_problem_def.c); a reference that does not compile or reads outside the toolkit;
 * versions, a name its first owner's, private and public, delete; all of it kept
 * across a restart; and its jobs, whose runs the CPU backend lists unavailable. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/http_client.h"
#include "tests/runner.h"

#define ALICE "alice-token-0123456789"
#define BOB "bob-token-0123456789abc"

static struct gpulabd d;
static char db[256], tokens[256];

/* A row softmax, float32 in and out, one block per row: the example (cols at
 * most 16384, so that rows x cols stays within 2^31 - 1). */
#define REFERENCE                                                                         \
  "extern \"C\" __global__ void kernel(const float* x, float* y, int rows, int cols) {\n" \
  "  int r = blockIdx.x;\n"                                                               \
  "  if (r >= rows) return;\n"                                                            \
  "  const float* in = x + (size_t)r * cols;\n"                                           \
  "  float m = -3.4e38f, s = 0.f;\n"                                                      \
  "  for (int c = 0; c < cols; c++) m = fmaxf(m, in[c]);\n"                               \
  "  for (int c = 0; c < cols; c++) s += expf(in[c] - m);\n"                              \
  "  for (int c = threadIdx.x; c < cols; c += blockDim.x)\n"                              \
  "    y[(size_t)r * cols + c] = expf(in[c] - m) / s;\n"                                  \
  "}\n"

static json_t *softmax(const char *name, bool is_public) {
  return json_pack(
      "{s:s,s:b,s:{s:{s:i,s:i,s:i},s:{s:i,s:i,s:i}},s:[{s:s,s:s,s:[s,s],s:{s:[i,i]}}],"
      "s:[{s:s,s:s,s:[s,s],s:{s:f,s:f}}],s:{s:s,s:[i,i,i],s:[s,i,i]},s:{s:s}}",
      "name", name, "public", is_public, "params", "rows", "default", 4096, "min", 1, "max", 65536,
      "cols", "default", 1024, "min", 1, "max", 16384, "inputs", "name", "x", "dtype", "float32",
      "shape", "rows", "cols", "init", "uniform", -4, 4, "outputs", "name", "y", "dtype", "float32",
      "shape", "rows", "cols", "tolerance", "abs", 1e-6, "rel", 1e-4, "reference", "source",
      REFERENCE, "block", 256, 1, 1, "grid", "rows", 1, 1, "figure", "bytes", "8 * rows * cols");
}

static void define(json_t *def, long status, struct http_reply *r) {
  char *text = json_dumps(def, JSON_COMPACT);
  http_post_json(&d, "/problems", text, r);
  free(text);
  CHECK_STATUS(r, status);
}

static void as(const char *token) { snprintf(d.http.token, sizeof d.http.token, "%s", token); }

static void start(void) {
  const char *args[] = {"--backend", "cpu",          "--tokens", tokens, "--db",
                        db,          "--access-log", "off",      NULL};
  gpulabd_start(args, &d);
}

static void test_define(void) {
  as(ALICE);
  struct http_reply r;
  json_t *def = softmax("softmax_rows", false);
  define(def, 201, &r);
  CHECK(r.location && strstr(r.location, "/problems/softmax_rows/versions/1"));
  CHECK_STR_EQ(JSTR(r.json, "owner"), "alice");
  CHECK_INT_EQ(JINT(r.json, "version"), 1);
  CHECK_STR_EQ(
      JSTR(r.json, "signature"),
      "extern \"C\" __global__ void kernel(const float *x, float *y, int rows, int cols);");
  CHECK(strstr(
      JSTR(r.json, "template"),
      "extern \"C\" __global__ void kernel(const float *x, float *y, int rows, int cols) {"));
  CHECK_STR_EQ(JSTR(r.json, "prelude"), "");
  CHECK(JBOOL(r.json, "compile.ok"));
  CHECK(JINT(r.json, "compile.registers") > 0);
  CHECK_INT_EQ(JINT(r.json, "compile.occupancy_at_defaults.max_warps_per_sm"), 64);
  /* canonical: the block's and grid's three entries, a literal as an integer */
  CHECK_STR_EQ(JSTR(r.json, "definition.reference.grid[0]"), "rows");
  CHECK_INT_EQ(JINT(r.json, "definition.reference.grid[1]"), 1);
  CHECK_STR_EQ(JSTR(r.json, "definition.figure.bytes"), "8 * rows * cols");
  http_reply_free(&r);
  /* The same name again, its owner: version 2. */
  json_object_set_new(def, "public", json_true());
  define(def, 201, &r);
  CHECK_INT_EQ(JINT(r.json, "version"), 2);
  http_reply_free(&r);
  /* Another owner: the name is taken. */
  as(BOB);
  define(def, 409, &r);
  CHECK_ERROR(&r, 409, "problem_name_taken", "name");
  http_reply_free(&r);
  json_decref(def);
}

/* A half-precision problem: its signature needs cuda_fp16.h, which gpulab includes. */
static void test_half(void) {
  as(BOB);
  json_t *def = softmax("scale_half", false);
  json_t *x = json_array_get(json_object_get(def, "inputs"), 0);
  json_t *y = json_array_get(json_object_get(def, "outputs"), 0);
  json_object_set_new(x, "dtype", json_string("float16"));
  json_object_set_new(y, "dtype", json_string("float16"));
  json_object_set_new(
      json_object_get(def, "reference"), "source",
      json_string("extern \"C\" __global__ void kernel(const __half* x, __half* y, int rows, "
                  "int cols) {\n  size_t i = (size_t)blockIdx.x * cols + threadIdx.x;\n"
                  "  if (threadIdx.x < cols) y[i] = __hmul(x[i], __float2half(2.f));\n}\n"));
  struct http_reply r;
  define(def, 201, &r);
  CHECK_STR_EQ(JSTR(r.json, "prelude"), "#include <cuda_fp16.h>\n");
  CHECK(strstr(JSTR(r.json, "signature"), "const __half *x, __half *y"));
  http_reply_free(&r);
  json_decref(def);
}

/* One key of the softmax definition changed (NULL value: removed), refused. */
static void bad(const char *path, json_t *value, long status, const char *code, const char *field) {
  json_t *def = softmax("bad_one", false), *at = def;
  char key[64], *dot;
  snprintf(key, sizeof key, "%s", path);
  char *k = key;
  while ((dot = strchr(k, '.'))) { /* objects, and arrays' first entries as "0" */
    *dot = '\0';
    at = json_is_array(at) ? json_array_get(at, 0) : json_object_get(at, k);
    k = dot + 1;
  }
  if (value)
    json_object_set_new(at, k, value);
  else
    json_object_del(at, k);
  struct http_reply r;
  define(def, status, &r);
  if (status == 422) { /* with the line and the compile report beside */
    CHECK_STR_EQ(JSTR(r.json, "code"), code);
    CHECK_STR_EQ(JSTR(r.json, "field"), field);
    CHECK(json_is_integer(json_at(r.json, "line")));
  } else {
    CHECK_ERROR(&r, status, code, field);
  }
  http_reply_free(&r);
  json_decref(def);
}

static void test_refused(void) {
  as(ALICE);
  bad("colour", json_true(), 400, "unknown_field", "colour");
  bad("reference", NULL, 400, "missing_field", "reference");
  bad("params.rows.max", json_integer(0), 400, "out_of_range", "params.rows.max");
  bad("figure.bytes", json_string("8 * rows * colz"), 400, "invalid_expression", "figure.bytes");
  bad("figure.bytes", json_string("8 * (rows"), 400, "invalid_expression", "figure.bytes");
  bad("params.cols.max", json_integer(65536), 400, "invalid_problem", "inputs[0].shape");
  bad("inputs.0.dtype", json_string("float64"), 400, "out_of_range", "inputs[0].dtype");
  bad("reference.grid", json_pack("[s,i,i]", "rows / (cols - cols)", 1, 1), 400,
      "invalid_expression", "reference.grid[0]");
  bad("name", json_string("no spaces"), 400, "out_of_range", "name");
  bad("name", json_string(".."), 400, "out_of_range", "name"); /* no URL keeps /problems/.. */
  /* What the compile refuses. */
  bad("reference.source",
      json_string("extern \"C\" __global__ void kernel(const float* x, float* y, "
                  "int rows, int cols) { y[0] = undefined_name; }"),
      422, "compile_failed", "reference.source");
  bad("reference.source", json_string("#include \"/etc/passwd\"\n"), 422, "source_not_allowed",
      "reference.source");
  bad("reference.source", json_string("extern \"C\" __global__ void kernel(int n) {}"), 422,
      "compile_failed", "reference.source");
  /* ... saying which signature the problem's kernels have. */
  json_t *def = softmax("bad_sig", false);
  json_object_set_new(json_object_get(def, "reference"), "source",
                      json_string("extern \"C\" __global__ void kernel(int n) {}"));
  struct http_reply s;
  define(def, 422, &s);
  CHECK(strstr(JSTR(s.json, "detail"),
               "does not have the problem's signature: it must be extern "
               "\"C\" __global__ void kernel(const float *x, float *y, "
               "int rows, int cols)"));
  http_reply_free(&s);
  json_decref(def);
  bad("reference.options", json_pack("[s]", "-I/etc"), 400, "option_not_allowed",
      "reference.options");
  /* Not JSON. */
  struct http_reply r;
  http_post_json(&d, "/problems", "{\"name\":", &r);
  CHECK_ERROR(&r, 400, "invalid_json", NULL);
  http_reply_free(&r);
  /* None of them was kept. */
  HTTP_EXPECT(&d, "GET", "/problems/bad_one", 404, "problem_not_found", "name");
}

/* What alice and bob each see; who may delete; a deleted problem's versions. */
static void test_visibility(void) {
  as(BOB);
  json_t *list = http_get_json(&d, "/problems"); /* alice's public softmax, his scale_half */
  CHECK_INT_EQ(json_array_size(json_at(list, "problems")), 2);
  json_decref(list);
  struct http_reply r;
  http_get(&d, "/problems/softmax_rows/versions/1", &r); /* private */
  CHECK_ERROR(&r, 404, "version_not_found", "version");
  http_reply_free(&r);
  json_t *v = http_get_json(&d, "/problems/softmax_rows/versions");
  CHECK_INT_EQ(json_array_size(json_at(v, "versions")), 1); /* the public one */
  json_decref(v);
  HTTP_EXPECT(&d, "DELETE", "/problems/softmax_rows", 403, "not_owner", "name");
  as(ALICE);
  http_get(&d, "/problems/scale_half", &r); /* bob's, private */
  CHECK_ERROR(&r, 404, "problem_not_found", "name");
  http_reply_free(&r);
  json_t *p = http_get_json(&d, "/problems/softmax_rows");
  CHECK_INT_EQ(JINT(p, "versions"), 2);
  json_decref(p);
  http_request(&d, "DELETE", "/problems/softmax_rows", NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK(JBOOL(r.json, "deleted"));
  http_reply_free(&r);
  HTTP_EXPECT(&d, "GET", "/problems/softmax_rows", 404, "problem_not_found", "name");
  p = http_get_json(&d, "/problems/softmax_rows/versions/1"); /* still readable */
  CHECK(JBOOL(p, "deleted"));
  json_decref(p);
  list = http_get_json(&d, "/problems");
  CHECK_INT_EQ(json_array_size(json_at(list, "problems")), 0);
  json_decref(list);
  HTTP_EXPECT(&d, "GET", "/problems/softmax_rows/versions/x", 400, "out_of_range", "version");
}

/* Defined again after its delete: version 3, shown again; and all of it after a
 * restart. */
static void test_restart(void) {
  as(ALICE);
  json_t *def = softmax("softmax_rows", true);
  struct http_reply r;
  define(def, 201, &r);
  CHECK_INT_EQ(JINT(r.json, "version"), 3);
  http_reply_free(&r);
  json_decref(def);
  gpulabd_stop(&d);
  start();
  as(ALICE);
  json_t *p = http_get_json(&d, "/problems/softmax_rows");
  CHECK_INT_EQ(JINT(p, "version"), 3);
  CHECK_INT_EQ(JINT(p, "versions"), 3);
  CHECK(JBOOL(p, "compile.ok"));
  CHECK(strstr(JSTR(p, "definition.reference.source"), "expf(in[c] - m)"));
  json_decref(p);
  as(BOB);
  p = http_get_json(&d, "/problems/scale_half");
  CHECK_STR_EQ(JSTR(p, "owner"), "bob");
  json_decref(p);
}

/* POST to path with body and expects the refusal status, code and field. */
static void refused_job(const char *path, const char *body, long status, const char *code,
                        const char *field) {
  struct http_reply r;
  http_post_json(&d, path, body, &r);
  CHECK_ERROR(&r, status, code, field);
  http_reply_free(&r);
}

/* POSTs a kernel (JSON text) and expects status, and code and field on a refusal. */
static void kernel(const char *body, long status, const char *code, const char *field,
                   struct http_reply *r) {
  http_post_json(&d, "/kernels", body, r);
  if (code)
    CHECK_ERROR(r, status, code, field);
  else
    CHECK_STATUS(r, status);
}

/* A one-block-per-row copy: a kernel with softmax_rows' signature (its check fails on
 * a GPU; here it is only compiled). */
#define ROW_COPY                                                                            \
  "extern \\\"C\\\" __global__ void kernel(const float* x, float* y, int rows, int cols) {" \
  " for (int c = threadIdx.x; c < cols; c += blockDim.x)"                                   \
  " y[(size_t)blockIdx.x * cols + c] = x[(size_t)blockIdx.x * cols + c]; }"

/* Users' kernels of a problem: compiled with its signature, its reference's launch
 * unless they give theirs (a grid of expressions over its params, bounded), named in
 * its jobs, refused by field where they are wrong. */
static void test_kernels(void) {
  as(BOB); /* alice's softmax_rows is public */
  struct http_reply r;
  kernel("{\"problem\": \"softmax_rows\", \"name\": \"rowcopy\", \"source\": \"" ROW_COPY "\"}",
         201, NULL, NULL, &r);
  CHECK_STR_EQ(JSTR(r.json, "experiment"), "problem:softmax_rows");
  CHECK_INT_EQ(JINT(r.json, "block[0]"), 256); /* the reference's */
  http_reply_free(&r);
  kernel(
      "{\"problem\": \"softmax_rows\", \"name\": \"halves\", \"block\": [128], "
      "\"grid\": [\"cdiv(rows, 2)\", 2], \"source\": \"" ROW_COPY "\"}",
      201, NULL, NULL, &r);
  http_reply_free(&r);
  kernel(
      "{\"problem\": \"softmax_rows\", \"name\": \"x\", \"grid\": [\"rowz\"], "
      "\"source\": \"" ROW_COPY "\"}",
      400, "invalid_expression", "grid[0]", &r);
  http_reply_free(&r);
  kernel(
      "{\"problem\": \"softmax_rows\", \"name\": \"x\", \"grid\": [\"4 * rows * cols\"], "
      "\"source\": \"" ROW_COPY "\"}",
      400, "invalid_problem", "grid[0]", &r); /* 2^32 blocks at the maxima */
  http_reply_free(&r);
  kernel(
      "{\"problem\": \"softmax_rows\", \"experiment\": \"transpose\", \"name\": \"x\", "
      "\"source\": \"" ROW_COPY "\"}",
      400, "out_of_range", "problem", &r);
  http_reply_free(&r);
  kernel("{\"problem\": \"nope\", \"name\": \"x\", \"source\": \"" ROW_COPY "\"}", 404,
         "problem_not_found", "problem", &r);
  http_reply_free(&r);
  kernel(
      "{\"problem\": \"scale_half\", \"name\": \"x\", \"source\": \"extern \\\"C\\\" "
      "__global__ void kernel(const __half* x, __half* y, int rows, int cols) {}\"}",
      201, NULL, NULL, &r); /* bob's own, another signature: __half from its prelude */
  http_reply_free(&r);
  as(ALICE);
  kernel("{\"problem\": \"scale_half\", \"name\": \"x\", \"source\": \"" ROW_COPY "\"}", 404,
         "problem_not_found", "problem", &r); /* bob's, private */
  http_reply_free(&r);
  kernel(
      "{\"problem\": \"softmax_rows\", \"name\": \"x\", \"tile\": [32], \"source\": "
      "\"" ROW_COPY "\"}",
      400, "out_of_range", "tile", &r);
  http_reply_free(&r);
  kernel(
      "{\"problem\": \"softmax_rows\", \"name\": \"x\", \"scratch_bytes\": 64, "
      "\"source\": \"" ROW_COPY "\"}",
      400, "out_of_range", "scratch_bytes", &r);
  http_reply_free(&r);
  kernel(
      "{\"experiment\": \"transpose\", \"name\": \"x\", \"grid\": [\"m\"], \"source\": "
      "\"" ROW_COPY "\"}",
      400, "out_of_range", "grid", &r); /* an experiment's kernel's grid is integers */
  http_reply_free(&r);
  kernel(
      "{\"problem\": \"softmax_rows\", \"name\": \"x\", \"source\": \"extern \\\"C\\\" "
      "__global__ void kernel(const float* x, double* y, int rows, int cols) {}\"}",
      422, NULL, NULL, &r); /* another signature: a 422 with its compile report */
  CHECK_STR_EQ(JSTR(r.json, "code"), "compile_failed");
  CHECK(strstr(JSTR(r.json, "detail"), "problem's signature"));
  http_reply_free(&r);
  /* A job names bob's public-problem kernels; a kernel of another problem is refused. */
  as(BOB);
  http_post_json(&d, "/problems/softmax_rows/jobs?wait=30",
                 "{\"params\": {\"rows\": 8, \"cols\": 64}, \"variant\": [\"reference\", "
                 "\"kernel:rowcopy\", \"kernel:halves\"]}",
                 &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "result.runs[1].user_kernel.name"), "rowcopy");
  CHECK_STR_EQ(JSTR(r.json, "result.runs[2].user_kernel.name"), "halves");
  CHECK(!JBOOL(r.json, "result.runs[2].available"));
  http_reply_free(&r);
  refused_job("/problems/softmax_rows/jobs", "{\"variant\": \"kernel:x\"}", 400, "unknown_variant",
              "variant"); /* bob's x is scale_half's */
}

/* A job of a problem: its params by name, its version, its runs listed unavailable on
 * the CPU backend with the reason; bad bodies refused by field; another's private
 * problem and a deleted one take no jobs. */
static void test_jobs(void) {
  as(BOB); /* alice's softmax_rows (version 3) is public */
  struct http_reply r;
  http_post_json(&d, "/problems/softmax_rows/jobs?wait=30",
                 "{\"params\": {\"rows\": 64, \"cols\": 100}, \"variant\": \"reference\", "
                 "\"seed\": 7}",
                 &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "type"), "problem");
  CHECK_STR_EQ(JSTR(r.json, "state"), "done");
  CHECK_INT_EQ(JINT(r.json, "params.rows"), 64);
  CHECK_INT_EQ(JINT(r.json, "params.cols"), 100);
  CHECK_INT_EQ(JINT(r.json, "params.seed"), 7);
  CHECK_STR_EQ(JSTR(r.json, "params.problem.name"), "softmax_rows");
  CHECK_INT_EQ(JINT(r.json, "params.problem.version"), 3);
  CHECK_STR_EQ(JSTR(r.json, "result.unit"), "GB/s");
  CHECK(JNUM(r.json, "result.work") == 8.0 * 64 * 100); /* the figure's bytes at its params */
  CHECK_STR_EQ(JSTR(r.json, "result.runs[0].variant"), "reference");
  CHECK(!JBOOL(r.json, "result.runs[0].available"));
  CHECK(strstr(JSTR(r.json, "result.runs[0].reason"), "CUDA device"));
  http_reply_free(&r);
  json_t *board = http_get_json(&d, "/leaderboard/problem:softmax_rows?size=64,100");
  CHECK_STR_EQ(JSTR(board, "experiment"), "problem:softmax_rows");
  CHECK_INT_EQ(JINT(board, "problem.version"), 3);
  CHECK_INT_EQ(JINT(board, "size.cols"), 100);
  CHECK_INT_EQ(json_array_size(json_at(board, "rows")), 0); /* nothing ran on the CPU */
  json_decref(board);
  HTTP_EXPECT(&d, "GET", "/leaderboard/problem:softmax_rows?size=64,0", 400, "out_of_range",
              "size");
  HTTP_EXPECT(&d, "GET", "/leaderboard/problem:softmax_rows?version=9", 404, "problem_not_found",
              "experiment");
  /* A sweep of its params: a job per point, the table naming the problem. */
  http_post_json(&d, "/sweeps?wait=30",
                 "{\"type\": \"problem:softmax_rows\", \"params\": {\"rows\": 8}, \"axes\": "
                 "{\"cols\": [16, 32, 64]}, \"variant\": \"reference\"}",
                 &r);
  CHECK_STATUS(&r, 200); /* every point ended within the wait */
  CHECK_STR_EQ(JSTR(r.json, "type"), "problem:softmax_rows");
  CHECK_STR_EQ(JSTR(r.json, "state"), "done");
  CHECK_INT_EQ(json_array_size(json_at(r.json, "jobs")), 3);
  CHECK_INT_EQ(JINT(r.json, "rows[2].cols"), 64);
  http_reply_free(&r);
  refused_job("/sweeps", "{\"type\": \"problem:softmax_rows\", \"axes\": {\"cols\": [0]}}", 400,
              "out_of_range", "axes.cols");
  refused_job("/sweeps", "{\"type\": \"problem:nope\", \"axes\": {\"cols\": [1]}}", 404,
              "problem_not_found", "type");
  const char *path = "/problems/softmax_rows/jobs";
  refused_job(path, "{\"params\": {\"rows\": 0}}", 400, "out_of_range", "params.rows");
  refused_job(path, "{\"params\": {\"rowz\": 1}}", 400, "unknown_field", "params.rowz");
  refused_job(path, "{\"params\": [1]}", 400, "wrong_type", "params");
  refused_job(path, "{\"variant\": \"naive\"}", 400, "unknown_variant", "variant");
  refused_job(path, "{\"variant\": \"kernel:999\"}", 400, "unknown_variant", "variant");
  refused_job(path, "{\"keep_output\": true}", 400, "out_of_range", "keep_output");
  refused_job(path, "{\"m\": 64}", 400, "unknown_field", "m");
  refused_job(path, "{\"params\": ", 400, "invalid_json", NULL);
  refused_job("/problems/nope/jobs", "{}", 404, "problem_not_found", "name");
  as(ALICE);
  refused_job("/problems/scale_half/jobs", "{}", 404, "problem_not_found", "name"); /* bob's */
  http_request(&d, "DELETE", "/problems/softmax_rows", NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
  refused_job(path, "{}", 404, "problem_not_found", "name");
}

/* Uploads body (a .npy, or raw values with a query) as bob; its id. */
static long long upload(const char *query, const void *body, size_t len, const char *dtype) {
  struct http_reply r;
  char path[96];
  snprintf(path, sizeof path, "/buffers%s", query);
  http_request(&d, "POST", path, query[0] ? "application/octet-stream" : "application/x-npy", body,
               len, &r);
  CHECK_STATUS(&r, 201);
  CHECK_STR_EQ(JSTR(r.json, "dtype"), dtype);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

/* A version 1.0 .npy of descr and a 1-D shape (n,) with data of len bytes, into out. */
static size_t npy(char *out, const char *descr, int n, const void *data, size_t len) {
  char dict[128];
  int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }",
                   descr, n);
  memcpy(out, "\x93NUMPY\x01\x00\x76\x00", 10); /* a 118-byte header: 128 in all */
  memset(out + 10, ' ', 118);
  memcpy(out + 10, dict, (size_t)k);
  out[127] = '\n';
  memcpy(out + 128, data, len);
  return 128 + len;
}

/* A problem's job given its inputs as uploads: each checked against the input's dtype
 * and shape at the job's params, named in the job; the uploads of every dtype a problem
 * takes, kept as sent and downloaded the same. */
static void test_job_inputs(void) {
  as(BOB); /* alice's softmax_rows (version 3, x float32 rows x cols) is public */
  float x[8 * 16];
  for (int i = 0; i < 8 * 16; i++) x[i] = (float)(i % 7) - 3.f;
  long long a = upload("?shape=8,16", x, sizeof x, "float32"),
            flat = upload("?shape=128", x, sizeof x, "float32"),
            turned = upload("?shape=16,8", x, sizeof x, "float32");
  struct http_reply r;
  char body[256];
  snprintf(body, sizeof body,
           "{\"params\": {\"rows\": 8, \"cols\": 16}, \"inputs\": {\"x\": {\"buffer\": %lld}}, "
           "\"variant\": \"reference\"}",
           a);
  http_post_json(&d, "/problems/softmax_rows/jobs?wait=30", body, &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "state"), "done");
  CHECK_INT_EQ(JINT(r.json, "params.inputs.x.buffer"), a);
  CHECK(!JBOOL(r.json, "result.runs[0].available")); /* no CUDA here */
  long long job = JINT(r.json, "id");
  http_reply_free(&r);
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", job);
  json_t *again = http_get_json(&d, path);
  CHECK_INT_EQ(JINT(again, "params.inputs.x.buffer"), a); /* as listed later */
  json_decref(again);
  snprintf(body, sizeof body,
           "{\"params\": {\"rows\": 8, \"cols\": 16}, \"inputs\": {\"x\": {\"buffer\": %lld}}}",
           flat); /* a flat view of the same elements */
  http_post_json(&d, "/problems/softmax_rows/jobs", body, &r);
  if (r.status != 200) CHECK_STATUS(&r, 202);
  http_reply_free(&r);
  const char *jobs = "/problems/softmax_rows/jobs";
  snprintf(body, sizeof body,
           "{\"params\": {\"rows\": 8, \"cols\": 16}, \"inputs\": {\"x\": {\"buffer\": %lld}}}",
           turned);
  refused_job(jobs, body, 400, "shape_mismatch", "inputs.x");
  snprintf(body, sizeof body, "{\"inputs\": {\"x\": {\"buffer\": %lld}}}", a); /* 4096 x 1024 */
  refused_job(jobs, body, 400, "shape_mismatch", "inputs.x");
  char file[128 + 16];
  int8_t bytes[16] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16};
  long long i8 = upload("", file, npy(file, "|i1", 16, bytes, 16), "int8");
  snprintf(body, sizeof body,
           "{\"params\": {\"rows\": 1, \"cols\": 16}, \"inputs\": {\"x\": {\"buffer\": %lld}}}",
           i8);
  refused_job(jobs, body, 400, "dtype_mismatch", "inputs.x");
  snprintf(body, sizeof body, "{\"a\": {\"buffer\": %lld}, \"m\": 4, \"n\": 4}", i8);
  refused_job("/transpose", body, 400, "dtype_mismatch", "a"); /* a built-in reads float32 */
  refused_job(jobs, "{\"inputs\": {\"z\": {\"buffer\": 1}}}", 400, "unknown_field", "inputs.z");
  refused_job(jobs, "{\"inputs\": {\"x\": 5}}", 400, "wrong_type", "inputs.x");
  refused_job(jobs, "{\"inputs\": {\"x\": {\"buffer\": 0}}}", 400, "wrong_type", "inputs.x");
  refused_job(jobs, "{\"inputs\": {\"x\": {\"buffer\": 1, \"seed\": 2}}}", 400, "wrong_type",
              "inputs.x");
  refused_job(jobs, "{\"inputs\": [1]}", 400, "wrong_type", "inputs");
  refused_job(
      jobs, "{\"params\": {\"rows\": 8, \"cols\": 16}, \"inputs\": {\"x\": {\"buffer\": 999999}}}",
      404, "buffer_not_found", "inputs.x");
  snprintf(body, sizeof body,
           "{\"type\": \"problem:softmax_rows\", \"params\": {\"rows\": 8}, \"axes\": "
           "{\"cols\": [16]}, \"inputs\": {\"x\": {\"buffer\": %lld}}}",
           a);
  refused_job("/sweeps", body, 400, "unknown_field", "inputs");
  as(ALICE); /* bob's buffer is not alice's to name */
  snprintf(body, sizeof body,
           "{\"params\": {\"rows\": 8, \"cols\": 16}, \"inputs\": {\"x\": {\"buffer\": %lld}}}", a);
  refused_job(jobs, body, 404, "buffer_not_found", "inputs.x");
  as(BOB);

  /* Every dtype a problem's input may have, uploaded and downloaded as sent: float16,
   * int32 and uint32 as .npy, bfloat16 raw (no .npy descr: it comes back raw); int8's
   * 16 bytes above, and 3 of them, which the device pads to a word. */
  uint16_t h[4] = {0x3c00, 0xc000, 0x7bff, 0x0001};
  long long f16 = upload("", file, npy(file, "<f2", 4, h, sizeof h), "float16");
  int32_t i4[3] = {-7, 1 << 30, 0};
  long long i32 = upload("", file, npy(file, "<i4", 3, i4, sizeof i4), "int32");
  long long u32 = upload("", file, npy(file, "<u4", 3, i4, sizeof i4), "uint32");
  long long odd = upload("", file, npy(file, "|i1", 3, bytes, 3), "int8");
  long long bf16 = upload("?shape=2,2&dtype=bfloat16", h, sizeof h, "bfloat16");
  const struct {
    long long id;
    const char *descr;
    const void *data;
    size_t len;
  } back[] = {{f16, "'<f2'", h, sizeof h},
              {i32, "'<i4'", i4, sizeof i4},
              {u32, "'<u4'", i4, sizeof i4},
              {i8, "'|i1'", bytes, 16},
              {odd, "'|i1'", bytes, 3}};
  for (size_t k = 0; k < sizeof back / sizeof back[0]; k++) {
    snprintf(path, sizeof path, "/buffers/%lld", back[k].id);
    http_get(&d, path, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK(r.body_len == 128 + back[k].len);
    CHECK(memmem(r.body, 128, back[k].descr, 5) != NULL);
    CHECK(memcmp(r.body + 128, back[k].data, back[k].len) == 0);
    http_reply_free(&r);
  }
  snprintf(path, sizeof path, "/buffers/%lld", bf16);
  http_get(&d, path, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_STR_EQ(r.content_type, "application/octet-stream");
  CHECK(r.body_len == sizeof h && memcmp(r.body, h, sizeof h) == 0);
  http_reply_free(&r);
  http_request(&d, "POST", "/buffers?shape=3&dtype=float64", "application/octet-stream",
               (const char *)x, 24, &r);
  CHECK_ERROR(&r, 400, "invalid_raw", "dtype");
  http_reply_free(&r);
  http_request(&d, "POST", "/buffers?shape=5&dtype=int8", "application/octet-stream",
               (const char *)x, 4, &r);
  CHECK_ERROR(&r, 400, "invalid_raw", "shape"); /* 4 bytes for 5 int8 */
  CHECK(strstr(JSTR(r.json, "detail"), "(1 per int8)") != NULL);
  http_reply_free(&r);
  http_request(&d, "POST", "/buffers?dtype=int8", "application/x-npy", file,
               npy(file, "|i1", 3, bytes, 3), &r);
  CHECK_ERROR(&r, 400, "invalid_npy", "dtype"); /* a .npy says its dtype itself */
  http_reply_free(&r);
}

static int setup(void) {
  snprintf(db, sizeof db, "%s/problems.db", test_dir());
  snprintf(tokens, sizeof tokens, "%s/tokens", test_dir());
  FILE *f = fopen(tokens, "w");
  CHECK(f != NULL);
  fprintf(f, ALICE " alice\n" BOB " bob\n");
  fclose(f);
  start();
  return 0;
}

static void teardown(void) { gpulabd_stop(&d); }

static const struct test_case cases[] = {
    TEST(test_define),     TEST(test_half),    TEST(test_refused),
    TEST(test_visibility), TEST(test_restart), TEST(test_kernels),
    TEST(test_job_inputs), TEST(test_jobs),    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = setup, .teardown = teardown};
