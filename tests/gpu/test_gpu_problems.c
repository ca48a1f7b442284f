/* Problems users define, run on a real GPU through gpulabd (label gpu; skips with 77
 * where gpulabd finds no CUDA device): a row softmax defined over HTTP with a naive
 * reference (one thread per row does the sums); a user's fast kernel of it passes its
 * check on every element and takes a leaderboard row beside the reference's (both
 * medians printed: which is faster is a benchmark figure, not asserted here); a kernel
 * that skips the last column fails with mismatches, its first timed launch on fresh
 * inputs named; one that writes into its input fails naming it; one that looks for the
 * reference's answer in the runner's memory and copies it fails; one that counts its
 * launches in a __device__ variable finds it put back every time; a half-precision problem
 * passes within its tolerance and a kernel off by more fails; a profiled job has each
 * run's counters from the runner; a reference that does not agree with itself fails its
 * job, saying so. Last, the same padded33 as a problem's reference and as the built-in
 * transpose, each at 4096 x 4096, both medians printed (the generic path's cost, for
 * bench/RESULTS.md). And a job whose input is an upload, checked on it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "runner.h"

static struct gpulabd D;

/* The naive reference: one thread per row does the max and the sum. */
#define SOFTMAX_REFERENCE                                                                   \
  "extern \\\"C\\\" __global__ void kernel(const float* x, float* y, int rows, int cols) {" \
  " int r = blockIdx.x; if (r >= rows) return;"                                             \
  " const float* in = x + (size_t)r * cols; float m = -3.4e38f, s = 0.f;"                   \
  " for (int c = 0; c < cols; c++) m = fmaxf(m, in[c]);"                                    \
  " for (int c = 0; c < cols; c++) s += expf(in[c] - m);"                                   \
  " for (int c = threadIdx.x; c < cols; c += blockDim.x)"                                   \
  " y[(size_t)r * cols + c] = expf(in[c] - m) / s; }"

/* A block per row: the max and the sum reduced across the block (shuffles, then one
 * warp), %s the output loop's bound ("cols", or "cols - 1" for the wrong one), %s a
 * statement at the end (a scribble into the input once its outputs are right, or
 * nothing). */
static const char *const fast_fmt =
    "extern \"C\" __global__ void kernel(const float* x, float* y, int rows, int cols) {\n"
    "  __shared__ float red[32];\n"
    "  int r = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
    "  int warps = blockDim.x >> 5;\n"
    "  const float* in = x + (size_t)r * cols;\n"
    "  float m = -3.4e38f;\n"
    "  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);\n"
    "  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));\n"
    "  if (lane == 0) red[warp] = m;\n"
    "  __syncthreads();\n"
    "  if (warp == 0) {\n"
    "    float v = lane < warps ? red[lane] : -3.4e38f;\n"
    "    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
    "    if (lane == 0) red[0] = v;\n"
    "  }\n"
    "  __syncthreads();\n"
    "  m = red[0];\n"
    "  __syncthreads();\n"
    "  float s = 0.f;\n"
    "  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(in[c] - m);\n"
    "  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
    "  if (lane == 0) red[warp] = s;\n"
    "  __syncthreads();\n"
    "  if (warp == 0) {\n"
    "    float v = lane < warps ? red[lane] : 0.f;\n"
    "    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
    "    if (lane == 0) red[0] = v;\n"
    "  }\n"
    "  __syncthreads();\n"
    "  s = red[0];\n"
    "  for (int c = threadIdx.x; c < %s; c += blockDim.x) y[(size_t)r * cols + c] = "
    "expf(in[c] - m) / s;\n"
    "  %s\n"
    "}\n";

/* POSTs body (JSON) to path and answers the document; status must be want. */
static json_t *post(const char *path, const char *body, long want) {
  struct http_reply r;
  http_post_json(&D, path, body, &r);
  CHECK_STATUS(&r, want);
  json_t *j = json_incref(r.json);
  http_reply_free(&r);
  return j;
}

/* A kernel of problem from the fast format (bound, extra), its id. */
static long long kernel_of(const char *problem, const char *name, const char *src) {
  json_t *body = json_pack("{s:s,s:s,s:s}", "problem", problem, "name", name, "source", src);
  char *text = json_dumps(body, JSON_COMPACT);
  json_t *k = post("/kernels", text, 201);
  long long id = JINT(k, "id");
  printf("%s: kernel:%lld, %lld registers\n", name, id, JINT(k, "compile.registers"));
  json_decref(k);
  free(text);
  json_decref(body);
  return id;
}

static long long fast_kernel(const char *name, const char *bound, const char *extra) {
  char src[4096];
  snprintf(src, sizeof src, fast_fmt, bound, extra);
  return kernel_of("softmax_rows", name, src);
}

/* A job of problem with body, waited for: the job. */
static json_t *job(const char *problem, const char *body) {
  char path[160];
  snprintf(path, sizeof path, "/problems/%s/jobs?wait=0", problem);
  struct http_reply r;
  http_post_json(&D, path, body, &r);
  if (r.status != 200) CHECK_STATUS(&r, 202);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return job_wait_final(&D, id, 300);
}

static void print_runs(json_t *j) {
  for (size_t i = 0; i < json_array_size(json_at(j, "result.runs")); i++) {
    char at[64];
    snprintf(at, sizeof at, "result.runs[%zu]", i);
    json_t *run = json_at(j, at);
    json_t *median = json_at(run, "timing.median_ms");
    printf("  %-14s median %.4f ms  figure %.1f  check %s (%lld of %lld wrong)%s%s\n",
           json_string_value(json_at(run, "variant")), median ? json_number_value(median) : -1.0,
           json_number_value(json_at(run, "figure")),
           json_is_true(json_at(run, "check.passed")) ? "passed" : "FAILED",
           (long long)json_integer_value(json_at(run, "check.mismatches")),
           (long long)json_integer_value(json_at(run, "check.compared")),
           json_at(run, "check.failure") ? "; " : "",
           json_at(run, "check.failure") ? json_string_value(json_at(run, "check.failure")) : "");
  }
}

static void softmax(void) {
  json_t *def = post(
      "/problems",
      "{\"name\": \"softmax_rows\", \"public\": true,"
      " \"params\": {\"rows\": {\"default\": 4096, \"min\": 1, \"max\": 65536},"
      "  \"cols\": {\"default\": 1024, \"min\": 1, \"max\": 16384}},"
      " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"rows\","
      " \"cols\"], \"init\": {\"uniform\": [-4, 4]}}],"
      " \"outputs\": [{\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [\"rows\","
      " \"cols\"], \"tolerance\": {\"abs\": 1e-6, \"rel\": 1e-4}}],"
      " \"reference\": {\"source\": \"" SOFTMAX_REFERENCE
      "\", \"block\": [256, 1, 1],"
      " \"grid\": [\"rows\", 1, 1]},"
      " \"figure\": {\"bytes\": \"8 * rows * cols\"}}",
      201);
  json_decref(def);
  long long fast = fast_kernel("fast", "cols", "");
  long long wrong = fast_kernel("wrong", "cols - 1", "");
  long long scribble = fast_kernel("scribble", "cols",
                                   "if (r == 0 && threadIdx.x == 0) ((float *)x)[0] = 0.f;");
  char body[256];
  snprintf(body, sizeof body,
           "{\"params\": {\"rows\": 4096, \"cols\": 1024}, \"variant\": [\"reference\", "
           "\"kernel:%lld\", \"kernel:%lld\"]}",
           fast, wrong);
  json_t *j = job("softmax_rows", body);
  print_runs(j);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.runs[0].check.passed"));
  CHECK(JBOOL(j, "result.runs[1].check.passed"));
  CHECK_INT_EQ(JINT(j, "result.runs[1].check.compared"), 4096 * 1024);
  CHECK(!JBOOL(j, "result.runs[2].check.passed"));
  CHECK(JINT(j, "result.runs[2].check.mismatches") > 0);
  CHECK(strstr(JSTR(j, "result.runs[2].check.failure"), "timed launch 1 of") != NULL);
  json_decref(j);
  snprintf(body, sizeof body,
           "{\"params\": {\"rows\": 512, \"cols\": 1000}, \"variant\": \"kernel:%lld\"}", scribble);
  j = job("softmax_rows", body);
  print_runs(j);
  CHECK(!JBOOL(j, "result.runs[0].check.passed"));
  CHECK(strstr(JSTR(j, "result.runs[0].check.failure"), "changed its input x") != NULL);
  json_decref(j);
  /* The leaderboard at that size: the reference's row and the fast kernel's. */
  json_t *board = http_get_json(&D, "/leaderboard/problem:softmax_rows?size=4096,1024");
  bool ref_row = false, fast_row = false;
  for (size_t i = 0; i < json_array_size(json_at(board, "rows")); i++) {
    json_t *row = json_array_get(json_at(board, "rows"), i);
    const char *v = json_string_value(json_object_get(row, "variant"));
    printf("  rank %lld: %s %.1f %s\n", (long long)json_integer_value(json_object_get(row, "rank")),
           v, json_number_value(json_object_get(row, "figure")),
           json_string_value(json_object_get(row, "unit")));
    ref_row = ref_row || !strcmp(v, "reference");
    fast_row = fast_row || strstr(v, "kernel:") == v;
  }
  CHECK(ref_row && fast_row);
  CHECK_INT_EQ(json_array_size(json_at(board, "rows")), 2); /* the wrong kernel takes none */
  json_decref(board);
}

/* Idea: the runner keeps a problem's sets in one allocation, the reference's answers a
 * set or two past this run's outputs (a job of [reference, this]: run 1 of 2). Find a
 * row there that is a softmax (finite, non-negative, summing to 1) and copy it: right
 * at the speed of a copy, if the answer to the inputs it is timed on were there while
 * it runs. The reference runs after each launch, its sets poisoned before: caught. */
static const char *const copycat =
    "extern \"C\" __global__ void kernel(const float* x, float* y, int rows, int cols) {\n"
    "  __shared__ int pick;\n"
    "  size_t set = (size_t)rows * cols, r = blockIdx.x;\n"
    "  if (threadIdx.x == 0) {\n"
    "    pick = 0;\n"
    "    for (int k = 1; k <= 2 && !pick; k++) {\n"
    "      const float* c = y + k * set + r * cols;\n"
    "      float s = 0.f;\n"
    "      bool ok = true;\n"
    "      for (int i = 0; i < cols; i++) { float v = c[i]; ok = ok && v == v && v >= 0.f; s += v; }\n"
    "      if (ok && fabsf(s - 1.f) < 1e-3f) pick = k;\n"
    "    }\n"
    "  }\n"
    "  __syncthreads();\n"
    "  if (!pick) return;\n"
    "  for (int i = threadIdx.x; i < cols; i += blockDim.x) y[r * cols + i] = y[pick * set + r * cols + i];\n"
    "}\n";

static void copies_the_answer(void) {
  long long id = kernel_of("softmax_rows", "copycat", copycat);
  char body[256];
  snprintf(body, sizeof body,
           "{\"params\": {\"rows\": 4096, \"cols\": 1024}, \"variant\": [\"reference\", "
           "\"kernel:%lld\"]}",
           id);
  json_t *j = job("softmax_rows", body);
  print_runs(j);
  CHECK(JBOOL(j, "result.runs[0].check.passed"));
  if (JBOOL(j, "result.runs[1].check.passed")) CHECK_FAIL_("%s", "the copycat passed its check");
  CHECK(strstr(JSTR(j, "result.runs[1].check.failure"), "timed launch 1 of") != NULL);
  json_decref(j);
}

/* Idea: keep state across launches in a __device__ counter: each block takes a ticket,
 * and a ticket past this launch's blocks means an earlier launch ran, where a kernel
 * could reuse what it left. This probe then writes a wrong row; it passes only because
 * the runner puts the module's variables back before every launch, on a problem's path
 * as on an experiment's. */
static const char *const probe_counter =
    "__device__ unsigned tickets = 5;\n"
    "extern \"C\" __global__ void kernel(const float* x, float* y, int rows, int cols) {\n"
    "  __shared__ int earlier;\n"
    "  size_t r = blockIdx.x;\n"
    "  if (threadIdx.x == 0) earlier = atomicAdd(&tickets, 1u) - 5u >= (unsigned)rows;\n"
    "  __syncthreads();\n"
    "  const float* in = x + r * cols;\n"
    "  float m = -3.4e38f, s = 0.f;\n"
    "  for (int c = 0; c < cols; c++) m = fmaxf(m, in[c]);\n"
    "  for (int c = 0; c < cols; c++) s += expf(in[c] - m);\n"
    "  for (int c = threadIdx.x; c < cols; c += blockDim.x)\n"
    "    y[r * cols + c] = earlier ? -1.f : expf(in[c] - m) / s;\n"
    "}\n";

static void state_put_back(void) {
  long long id = kernel_of("softmax_rows", "probe_counter", probe_counter);
  char body[256];
  snprintf(body, sizeof body,
           "{\"params\": {\"rows\": 256, \"cols\": 512}, \"variant\": \"kernel:%lld\"}", id);
  json_t *j = job("softmax_rows", body);
  print_runs(j);
  CHECK(JBOOL(j, "result.runs[0].check.passed")); /* every launch found the counter at 5 */
  json_decref(j);
}

/* Half precision: y = 1.5 x rounded to half; a kernel that adds 0.01 is past the
 * tolerance (1e-3 + 1e-3 |want|) wherever |want| < 9. */
static void half(void) {
  json_t *def = post(
      "/problems",
      "{\"name\": \"scale_half\", \"params\": {\"n\": {\"default\": 1000000, \"min\": 1, \"max\": "
      "16777216}}, \"inputs\": [{\"name\": \"x\", \"dtype\": \"float16\", \"shape\": [\"n\"], "
      "\"init\": {\"normal\": [0, 1]}}], \"outputs\": [{\"name\": \"y\", \"dtype\": \"float16\", "
      "\"shape\": [\"n\"], \"tolerance\": {\"abs\": 1e-3, \"rel\": 1e-3}}], \"reference\": "
      "{\"source\": \"extern \\\"C\\\" __global__ void kernel(const __half* x, __half* y, int n) { "
      "int i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = __float2half(1.5f * "
      "__half2float(x[i])); }\", \"block\": [256], \"grid\": [\"cdiv(n, 256)\"]}, \"figure\": "
      "{\"bytes\": \"4 * n\"}}",
      201);
  json_decref(def);
  long long off = kernel_of(
      "scale_half", "off",
      "extern \"C\" __global__ void kernel(const __half* x, __half* y, int n) {\n"
      "  int i = blockIdx.x * 256 + threadIdx.x;\n"
      "  if (i < n) y[i] = __float2half(1.5f * __half2float(x[i]) + 0.01f);\n"
      "}\n");
  char body[256];
  /* Two elements a thread (__half2): its own grid, a block per 512. */
  json_t *k = post(
      "/kernels",
      "{\"problem\": \"scale_half\", \"name\": \"half2\", \"grid\": [\"cdiv(n, 512)\"],"
      " \"source\": \"extern \\\"C\\\" __global__ void kernel(const __half* x, __half* y,"
      " int n) { int i = 2 * (blockIdx.x * 256 + threadIdx.x); if (i + 1 < n) { __half2"
      " v = *(const __half2*)(x + i); *(__half2*)(y + i) = __floats2half2_rn(1.5f *"
      " __low2float(v), 1.5f * __high2float(v)); } else if (i < n) y[i] ="
      " __float2half(1.5f * __half2float(x[i])); }\"}",
      201);
  long long good = JINT(k, "id");
  json_decref(k);
  snprintf(body, sizeof body,
           "{\"params\": {\"n\": 1000003}, \"variant\": [\"reference\", \"kernel:%lld\", "
           "\"kernel:%lld\"]}",
           good, off);
  json_t *j = job("scale_half", body);
  print_runs(j);
  CHECK(JBOOL(j, "result.runs[0].check.passed"));
  CHECK(JBOOL(j, "result.runs[1].check.passed"));
  CHECK(!JBOOL(j, "result.runs[2].check.passed"));
  CHECK(JINT(j, "result.runs[2].check.mismatches") > 0);
  json_decref(j);
}

/* A profiled job: each run's counters come from the runner's replay. */
static void profiled(void) {
  json_t *j = job("softmax_rows",
                  "{\"params\": {\"rows\": 1024, \"cols\": 1024}, \"profile\": "
                  "true, \"variant\": \"reference\"}");
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  json_t *p = json_at(j, "result.runs[0].profile");
  printf("profile: available %s %s\n", json_is_true(json_object_get(p, "available")) ? "yes" : "no",
         json_string_value(json_object_get(p, "reason"))
             ? json_string_value(json_object_get(p, "reason"))
             : "");
  CHECK(json_object_get(p, "available") != NULL);
  json_decref(j);
}

/* A reference that sums with atomics into one value per output block: its order, and
 * so its last bits, differ from launch to launch; not said to be nondeterministic, its
 * job fails saying so. */
static void disagreeing(void) {
  json_t *def = post(
      "/problems",
      "{\"name\": \"atomic_sums\", \"params\": {\"n\": {\"default\": 1048576, \"min\": 1024, "
      "\"max\": 16777216}}, \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": "
      "[\"n\"], \"init\": {\"uniform\": [0, 1]}}], \"outputs\": [{\"name\": \"s\", \"dtype\": "
      "\"float32\", \"shape\": [64], \"tolerance\": {\"abs\": 0, \"rel\": 1e-4}}], \"reference\": "
      "{\"source\": \"extern \\\"C\\\" __global__ void kernel(const float* x, float* s, int n) { "
      "int i = blockIdx.x * 256 + threadIdx.x; if (i < 64) s[i] = 0.f; __threadfence(); if (i < "
      "n) atomicAdd(&s[i % 64], x[i]); }\", \"block\": [256], \"grid\": [\"cdiv(n, 256)\"]}, "
      "\"figure\": {\"bytes\": \"4 * n\"}}",
      201);
  json_decref(def);
  json_t *j = job("atomic_sums", "{}");
  char *error = json_dumps(json_object_get(j, "error"), JSON_ENCODE_ANY);
  printf("atomic_sums: %s: %s\n", JSTR(j, "state"), error);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK(strstr(error, "disagrees with itself") != NULL);
  free(error);
  json_decref(j);
}

/* The same padded33 as a problem's reference and as the built-in, 4096 x 4096 each. */
static void overhead(void) {
  json_t *def = post(
      "/problems",
      "{\"name\": \"transpose_p\", \"params\": {\"m\": {\"default\": 4096, \"min\": 1, \"max\": "
      "16384}, \"n\": {\"default\": 4096, \"min\": 1, \"max\": 16384}}, \"inputs\": [{\"name\": "
      "\"a\", \"dtype\": \"float32\", \"shape\": [\"m\", \"n\"], \"init\": {\"uniform\": [-1, "
      "1]}}], \"outputs\": [{\"name\": \"b\", \"dtype\": \"float32\", \"shape\": [\"n\", \"m\"], "
      "\"tolerance\": \"exact\"}], \"reference\": {\"source\": \"#define TILE 32\\nextern "
      "\\\"C\\\" __global__ void kernel(const float* a, float* b, int m, int n) {\\n  __shared__ "
      "float tile[TILE][TILE + 1];\\n  int tx = threadIdx.x, ty = threadIdx.y;\\n  size_t x = "
      "(size_t)blockIdx.x * TILE + tx, y = (size_t)blockIdx.y * TILE + ty;\\n  if (x < (size_t)n "
      "&& y < (size_t)m) tile[ty][tx] = a[y * n + x];\\n  __syncthreads();\\n  size_t ox = "
      "(size_t)blockIdx.y * TILE + tx, oy = (size_t)blockIdx.x * TILE + ty;\\n  if (ox < "
      "(size_t)m && oy < (size_t)n) b[oy * m + ox] = tile[tx][ty];\\n}\\n\", \"block\": [32, 32], "
      "\"grid\": [\"cdiv(n, 32)\", \"cdiv(m, 32)\"]}, \"figure\": {\"bytes\": \"8 * m * n\"}}",
      201);
  json_decref(def);
  for (int round = 0; round < 2; round++) {
    json_t *p = job("transpose_p", "{}");
    struct http_reply r;
    http_post_json(&D, "/transpose?wait=120",
                   "{\"m\": 4096, \"n\": 4096, \"variant\": \"padded33\"}", &r);
    CHECK_STATUS(&r, 200);
    CHECK(JBOOL(p, "result.runs[0].check.passed"));
    printf(
        "overhead round %d: problem's padded33 %.4f ms (%.1f GB/s, run %.1f ms); built-in "
        "padded33 %.4f ms (%.1f GB/s, run %.1f ms)\n",
        round, JNUM(p, "result.runs[0].timing.median_ms"), JNUM(p, "result.runs[0].figure"),
        JNUM(p, "run_ms"), JNUM(r.json, "result.runs[0].timing.median_ms"),
        JNUM(r.json, "result.runs[0].figure"), JNUM(r.json, "run_ms"));
    http_reply_free(&r);
    json_decref(p);
  }
}

/* Inputs given as an upload: an int32 problem (y = x + 1) whose job names a buffer of
 * 3i - 7 as x. The reference agrees with itself on it and a kernel that adds 1 passes; a
 * kernel that writes 3i - 6 without reading x matches on the job's inputs (0 mismatches:
 * they are the upload, not generated) yet fails at its first timed launch, whose inputs
 * are fresh; without the upload the same kernel mismatches on the job's inputs too. */
static void given_inputs(void) {
  json_t *def = post(
      "/problems",
      "{\"name\": \"plus_one\", \"params\": {\"n\": {\"default\": 100000, \"min\": 1, "
      "\"max\": 16777216}}, \"inputs\": [{\"name\": \"x\", \"dtype\": \"int32\", \"shape\": "
      "[\"n\"], \"init\": {\"integers\": [-1000, 1000]}}], \"outputs\": [{\"name\": \"y\", "
      "\"dtype\": \"int32\", \"shape\": [\"n\"], \"tolerance\": \"exact\"}], \"reference\": "
      "{\"source\": \"extern \\\"C\\\" __global__ void kernel(const int* x, int* y, int n) { int "
      "i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = x[i] + 1; }\", \"block\": [256], "
      "\"grid\": [\"cdiv(n, 256)\"]}, \"figure\": {\"bytes\": \"8 * n\"}}",
      201);
  json_decref(def);
  long long plus = kernel_of("plus_one", "plus",
                             "extern \"C\" __global__ void kernel(const int* x, int* y, int n) {\n"
                             "  int i = blockIdx.x * 256 + threadIdx.x;\n"
                             "  if (i < n) y[i] = x[i] + 1;\n"
                             "}\n");
  long long fixed = kernel_of("plus_one", "fixed",
                              "extern \"C\" __global__ void kernel(const int* x, int* y, int n) {\n"
                              "  int i = blockIdx.x * 256 + threadIdx.x;\n"
                              "  if (i < n) y[i] = 3 * i - 6;\n"
                              "}\n");
  enum { N = 100000 };
  static int32_t x[N];
  for (int i = 0; i < N; i++) x[i] = 3 * i - 7;
  struct http_reply r;
  char path[64], body[256];
  snprintf(path, sizeof path, "/buffers?shape=%d&dtype=int32", N);
  http_request(&D, "POST", path, "application/octet-stream", (const char *)x, sizeof x, &r);
  CHECK_STATUS(&r, 201);
  long long buffer = JINT(r.json, "id");
  http_reply_free(&r);
  snprintf(body, sizeof body,
           "{\"params\": {\"n\": %d}, \"inputs\": {\"x\": {\"buffer\": %lld}}, \"variant\": "
           "[\"reference\", \"kernel:%lld\", \"kernel:%lld\"]}",
           N, buffer, plus, fixed);
  json_t *j = job("plus_one", body);
  print_runs(j);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK_INT_EQ(JINT(j, "params.inputs.x.buffer"), buffer);
  CHECK(JBOOL(j, "result.runs[0].check.passed"));
  CHECK(JBOOL(j, "result.runs[1].check.passed"));
  CHECK(!JBOOL(j, "result.runs[2].check.passed"));
  CHECK_INT_EQ(JINT(j, "result.runs[2].check.mismatches"), 0); /* right on the upload */
  CHECK(strstr(JSTR(j, "result.runs[2].check.failure"), "timed launch 1 of") != NULL);
  json_decref(j);
  snprintf(body, sizeof body, "{\"params\": {\"n\": %d}, \"variant\": [\"kernel:%lld\"]}", N,
           fixed);
  j = job("plus_one", body); /* generated inputs: wrong there too */
  print_runs(j);
  CHECK(JINT(j, "result.runs[0].check.mismatches") > 0);
  json_decref(j);
}

static int start(void) {
  const char *args[] = {"--backend",         "cuda", "--db",         "none", "--streams", "1",
                        "--kernel-deadline", "5",    "--access-log", "off",  NULL};
  gpulabd_start_or_skip(args, &D);
  return 0;
}

static void stop(void) { gpulabd_stop(&D); }

static const struct test_case cases[] = {
    TEST(softmax),
    TEST_AFTER(copies_the_answer, softmax),
    TEST_AFTER(state_put_back, softmax),
    TEST(half),
    TEST_AFTER(profiled, softmax),
    TEST(disagreeing),
    TEST(overhead),
    TEST(given_inputs),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
