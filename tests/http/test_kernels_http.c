/* Users' kernels over HTTP on a real gpulabd (--backend cpu; NVRTC compiles for real):
 * POST /kernels as JSON, text/x-cuda and multipart/form-data; a compile error's 422
 * with its line and report; refused options and includes; validation; the cache; GET,
 * list and DELETE; jobs that name a kernel (and sweeps); storage across a restart; a
 * store that cannot take the kernel refuses it as it refuses a job (507); ownership
 * and quotas with tokens; 503 without NVRTC. Errors are problems (RFC 9457). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "http_client.h"
#include "runner.h"
#include "test_db.h"

#define ALICE "alice-token-0123456789"
#define BOB "bob-token-0123456789abc"

static const char *dir; /* test_dir() */

static const char *const good_json =
    "{\"experiment\":\"transpose\",\"name\":\"padded\",\"block\":[32,32,1],\"tile\":[32,32],"
    "\"options\":[\"-DTILE=32\",\"-lineinfo\"],\"source\":"
    "\"extern \\\"C\\\" __global__ void kernel(const float* a, float* b, int m, int n) {\\n"
    "  __shared__ float t[TILE][TILE + 1];\\n"
    "  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;\\n"
    "  if (x < n && y < m) t[threadIdx.y][threadIdx.x] = a[(size_t)y * n + x];\\n"
    "  __syncthreads();\\n"
    "  int ox = blockIdx.y * TILE + threadIdx.x, oy = blockIdx.x * TILE + threadIdx.y;\\n"
    "  if (ox < m && oy < n) b[(size_t)oy * m + ox] = t[threadIdx.x][threadIdx.y];\\n"
    "}\\n\"}";

static const char *const cu_file =
    "// a user's file, sent as it is\n"
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
    "  int x = blockIdx.x * 32 + threadIdx.x;\n"
    "  for (int y = blockIdx.y * 32 + threadIdx.y; y < m && y < (blockIdx.y + 1) * 32; y += 8)\n"
    "    if (x < n) b[(size_t)x * m + y] = a[(size_t)y * n + x];\n"
    "}\n";

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

static void post(struct gpulabd *d, const char *body, long status, const char *code,
                 struct http_reply *out) {
  http_post_json(d, "/kernels", body, out);
  if (code)
    CHECK_ERROR(out, status, code, json_string_value(json_at(out->json, "field")));
  else
    CHECK_STATUS(out, status);
}

/* A 422: a problem with its line (and, from the compiler, its report) as extension
 * members. */
static void check_unprocessable(const struct http_reply *r, const char *code, int line) {
  CHECK_INT_EQ(r->status, 422);
  CHECK(r->content_type && strncmp(r->content_type, "application/problem+json", 24) == 0);
  CHECK_STR_EQ(JSTR(r->json, "code"), code);
  CHECK_STR_EQ(JSTR(r->json, "field"), "source");
  CHECK(JSTR(r->json, "detail")[0] != '\0');
  if (line)
    CHECK_INT_EQ(JINT(r->json, "line"), line);
  else
    CHECK(json_is_null(json_at(r->json, "line")));
}

/* The transpose signature, JSON-escaped, without its closing parenthesis. */
#define SIG "extern \\\"C\\\" __global__ void kernel(const float* a, float* b, int m, int n"

/* POSTs a transpose kernel named name whose source is src (JSON-escaped already), with
 * extra members (",\"scratch_bytes\":64", or ""). */
static void post_source(struct gpulabd *d, const char *name, const char *src, const char *extra,
                        struct http_reply *r) {
  char body[2048];
  snprintf(body, sizeof body, "{\"experiment\":\"transpose\",\"name\":\"%s\",\"source\":\"%s\"%s}",
           name, src, extra);
  http_post_json(d, "/kernels", body, r);
}

/* State that outlives a launch: what no runner can put back is refused at POST
 * (422 stateful_kernel naming it, at its line); what it can put back compiles, and
 * scratch comes from scratch_bytes. */
static void check_state(struct gpulabd *d) {
  struct http_reply r;
  /* A cache in the device heap, found again by later launches. */
  post_source(d, "heap",
              "__device__ float *memo;\\n" SIG
              ") {\\n  if (!memo) memo = (float *)malloc(64);\\n"
              "  b[0] = memo[0];\\n}\\n",
              "", &r);
  check_unprocessable(&r, "stateful_kernel", 3);
  CHECK(strstr(JSTR(r.json, "detail"), "malloc") != NULL);
  CHECK(strstr(JSTR(r.json, "detail"), "scratch_bytes") != NULL);
  CHECK(!JBOOL(r.json, "compile.ok"));
  http_reply_free(&r);
  /* A launch counter in managed memory. */
  post_source(d, "managed",
              "\\n__managed__ int launches;\\n" SIG ") {\\n  atomicAdd(&launches, 1);\\n}\\n", "",
              &r);
  check_unprocessable(&r, "stateful_kernel", 2);
  CHECK(strstr(JSTR(r.json, "detail"), "__managed__ variable 'launches'") != NULL);
  http_reply_free(&r);
  /* Put back before every launch, so they compile: a __device__ array, __constant__
   * data, printf (its format string is a variable too). */
  post_source(
      d, "globals",
      "__device__ float cache[256];\\n__constant__ float table[4] = {1, 2, 3, 4};\\n" SIG
      ") {\\n  int i = threadIdx.x;\\n  if (i < m * n) b[i] = a[i] + cache[i % 256] + table[i % 4];\\n"
      "  if (i == 0) printf(\\\"%d\\\\n\\\", m);\\n}\\n",
      "", &r);
  CHECK_STATUS(&r, 201);
  CHECK(JINT(r.json, "compile.module_variables") >= 3);
  CHECK(JINT(r.json, "compile.module_variable_bytes") >= 256 * 4 + 16);
  CHECK(json_at(r.json, "scratch_bytes") == NULL); /* none asked: the signature as it was */
  http_reply_free(&r);
  /* Scratch: one more last argument, void* scratch; kept with the kernel. */
  post_source(d, "scratchy",
              SIG
              ", void* scratch) {\\n  unsigned *s = (unsigned *)scratch;\\n"
              "  atomicAdd(s, 1u);\\n  b[0] = a[0];\\n}\\n",
              ",\"scratch_bytes\":4096", &r);
  CHECK_STATUS(&r, 201);
  CHECK_INT_EQ(JINT(r.json, "scratch_bytes"), 4096);
  char path[64];
  snprintf(path, sizeof path, "/kernels/%lld", (long long)JINT(r.json, "id"));
  http_reply_free(&r);
  json_t *k = http_get_json(d, path);
  CHECK_INT_EQ(JINT(k, "scratch_bytes"), 4096);
  json_decref(k);
  /* Asking for scratch without taking it: the signature no longer matches. */
  post_source(d, "noscratch", SIG ") {\\n  b[0] = a[0];\\n}\\n", ",\"scratch_bytes\":64", &r);
  check_unprocessable(&r, "compile_failed", 1);
  http_reply_free(&r);
  /* The cap, the type, the sign; and the query form's field. */
  post_source(d, "x", "int x;", ",\"scratch_bytes\":1099511627776", &r);
  CHECK_ERROR(&r, 400, "out_of_range", "scratch_bytes");
  CHECK(strstr(JSTR(r.json, "detail"), "--max-scratch") != NULL);
  http_reply_free(&r);
  post_source(d, "x", "int x;", ",\"scratch_bytes\":\"64\"", &r);
  CHECK_ERROR(&r, 400, "wrong_type", "scratch_bytes");
  http_reply_free(&r);
  post_source(d, "x", "int x;", ",\"scratch_bytes\":-1", &r);
  CHECK_ERROR(&r, 400, "out_of_range", "scratch_bytes");
  http_reply_free(&r);
  const char *cu =
      "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n, void* s) {}\n";
  http_request(d, "POST", "/kernels?experiment=transpose&name=q&scratch_bytes=128", "text/x-cuda",
               cu, strlen(cu), &r);
  CHECK_STATUS(&r, 201);
  CHECK_INT_EQ(JINT(r.json, "scratch_bytes"), 128);
  http_reply_free(&r);
  http_request(d, "POST", "/kernels?experiment=transpose&name=q&scratch_bytes=12x", "text/x-cuda",
               cu, strlen(cu), &r);
  CHECK_ERROR(&r, 400, "out_of_range", "scratch_bytes");
  http_reply_free(&r);
  /* A cooperative launch (a grid-wide sync, with the toolkit's cooperative_groups): kept
   * with the kernel and shown with it; absent when not asked; a value of another type
   * is refused. */
  post_source(d, "grid_sync",
              "#include <cooperative_groups.h>\\n" SIG
              ") {\\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\\n"
              "  if (i < m * n) b[i] = a[i];\\n  cooperative_groups::this_grid().sync();\\n}\\n",
              ",\"cooperative\":true", &r);
  CHECK_STATUS(&r, 201);
  CHECK(JBOOL(r.json, "cooperative"));
  snprintf(path, sizeof path, "/kernels/%lld", (long long)JINT(r.json, "id"));
  http_reply_free(&r);
  k = http_get_json(d, path);
  CHECK(JBOOL(k, "cooperative"));
  json_decref(k);
  post_source(d, "x", "int x;", ",\"cooperative\":\"yes\"", &r);
  CHECK_ERROR(&r, 400, "wrong_type", "cooperative");
  http_reply_free(&r);
  const char *plain =
      "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {}\n";
  http_request(d, "POST", "/kernels?experiment=transpose&name=q&cooperative=1", "text/x-cuda",
               plain, strlen(plain), &r);
  CHECK_STATUS(&r, 201);
  CHECK(JBOOL(r.json, "cooperative"));
  http_reply_free(&r);
  http_request(d, "POST", "/kernels?experiment=transpose&name=q&cooperative=maybe", "text/x-cuda",
               cu, strlen(cu), &r);
  CHECK_ERROR(&r, 400, "out_of_range", "cooperative");
  http_reply_free(&r);
}

static void check_api(struct gpulabd *d, long long *first_id, char *sha) {
  struct http_reply r;
  /* The signatures, for the editor. */
  json_t *sigs = http_get_json(d, "/kernels/signatures");
  CHECK_INT_EQ(json_array_size(json_at(sigs, "signatures")), 6);
  CHECK_STR_EQ(JSTR(sigs, "signatures[0].signature"),
               "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n)");
  CHECK(strstr(JSTR(sigs, "signatures[1].signature"), "int m, int n, int k") != NULL);
  CHECK_STR_EQ(
      JSTR(sigs, "signatures[0].signature_with_scratch"),
      "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n, void* scratch)");
  /* Every experiment's template compiles as sent, with its default block and tile; the
   * accumulating signatures (reduce, histogram) get their output zeroed, not NaN. */
  size_t i;
  json_t *sig;
  json_array_foreach(json_at(sigs, "signatures"), i, sig) {
    const char *exp = JSTR(sig, "experiment");
    json_t *body = json_pack("{s:s,s:s,s:s}", "experiment", exp, "name", "template", "source",
                             JSTR(sig, "template"));
    char *text = json_dumps(body, 0);
    post(d, text, 201, NULL, &r);
    CHECK(JBOOL(r.json, "compile.ok"));
    CHECK_STR_EQ(JSTR(r.json, "experiment"), exp);
    CHECK(json_equal(json_at(r.json, "block"), json_at(sig, "default_block")));
    bool zeroed = !strcmp(exp, "reduce") || !strcmp(exp, "histogram");
    CHECK_STR_EQ(JSTR(sig, "output_before_launch"), zeroed ? "zero" : "nan");
    printf("%s's template: %lld registers\n", exp, (long long)JINT(r.json, "compile.registers"));
    char path[48]; /* gone again: the listings below count the kernels sent after */
    snprintf(path, sizeof path, "/kernels/%lld", (long long)JINT(r.json, "id"));
    http_reply_free(&r);
    HTTP_EXPECT(d, "DELETE", path, 200, NULL, NULL);
    free(text);
    json_decref(body);
  }
  /* A kernel of another signature is told the experiment's, and what it declared. */
  http_post_json(d, "/kernels",
                 "{\"experiment\":\"reduce\",\"name\":\"not_a_sum\",\"source\":\"" SIG ") {}\"}",
                 &r);
  check_unprocessable(&r, "compile_failed", 1);
  CHECK(strstr(JSTR(r.json, "detail"), "kernel(const float *x, float *out, int n)") != NULL);
  CHECK(strstr(JSTR(r.json, "detail"), "declares kernel(const float* a, float* b, int m, int n)") !=
        NULL);
  printf("reduce with the transpose's signature: %s\n", JSTR(r.json, "detail"));
  http_reply_free(&r);
  json_decref(sigs);

  /* JSON: compiled, with ptxas' usage; the same again comes from the cache. */
  post(d, good_json, 201, NULL, &r);
  *first_id = JINT(r.json, "id");
  CHECK(r.location && strstr(r.location, "/kernels/") != NULL);
  CHECK(JBOOL(r.json, "compile.ok"));
  CHECK(!JBOOL(r.json, "compile.cached"));
  CHECK(JINT(r.json, "compile.registers") > 0);
  CHECK_INT_EQ(JINT(r.json, "compile.shared_bytes"), 32 * 33 * 4);
  CHECK_INT_EQ(JINT(r.json, "compile.spill_store_bytes"), 0);
  CHECK_STR_EQ(JSTR(r.json, "compile.arch"), "sm_90");
  /* Its block of 1024 threads (32 warps) on sm_90's 64: two blocks at most, fewer when
   * its registers (more than 32 each) or shared bytes say so, which the limiter names. */
  json_t *occ = json_at(r.json, "compile.occupancy");
  long long blocks = JINT(occ, "blocks_per_sm");
  CHECK(blocks >= 1 && blocks <= 2);
  CHECK_INT_EQ(JINT(occ, "warps_per_sm"), 32 * blocks);
  CHECK_INT_EQ(JINT(occ, "max_warps_per_sm"), 64);
  CHECK(JNUM(occ, "fraction") == blocks / 2.0);
  CHECK_INT_EQ(JINT(occ, "blocks_by.warps"), 2);
  /* registers: a warp's rounded up to 256s, 16 Ki in each quarter of the SM */
  long long warp_regs = (JINT(r.json, "compile.registers") * 32 + 255) / 256 * 256;
  CHECK_INT_EQ(JINT(occ, "blocks_by.registers"), 4 * (16384 / warp_regs) / 32);
  char by[40];
  snprintf(by, sizeof by, "blocks_by.%s", JSTR(occ, "limiter"));
  CHECK_INT_EQ(JINT(occ, by), blocks);
  CHECK_INT_EQ(strlen(JSTR(r.json, "source_sha256")), 64);
  snprintf(sha, 65, "%s", JSTR(r.json, "source_sha256"));
  char variant[32];
  snprintf(variant, sizeof variant, "kernel:%lld@1", *first_id);
  CHECK_STR_EQ(JSTR(r.json, "variant"), variant);
  CHECK_INT_EQ(JINT(r.json, "version"), 1);
  http_reply_free(&r);
  /* The same name again: version 2 of the kernel (its id kept), from the cache. */
  post(d, good_json, 201, NULL, &r);
  CHECK(JBOOL(r.json, "compile.cached"));
  CHECK_INT_EQ(JINT(r.json, "id"), *first_id);
  CHECK_INT_EQ(JINT(r.json, "version"), 2);
  snprintf(variant, sizeof variant, "kernel:%lld@2", *first_id);
  CHECK_STR_EQ(JSTR(r.json, "variant"), variant);
  http_reply_free(&r);

  /* A syntax error: 422 at its line, with the log. */
  http_post_json(
      d, "/kernels",
      "{\"experiment\":\"transpose\",\"name\":\"broken\",\"source\":"
      "\"extern \\\"C\\\" __global__ void kernel(const float* a, float* b, int m, int n) {\\n"
      "  int x = threadIdx.x;\\n  b[x] = a[x] +;\\n}\\n\"}",
      &r);
  check_unprocessable(&r, "compile_failed", 3);
  CHECK(strstr(JSTR(r.json, "compile.log"), "broken.cu(3)") != NULL);
  CHECK_INT_EQ(JINT(r.json, "compile.error_line"), 3);
  CHECK(!JBOOL(r.json, "compile.ok"));
  http_reply_free(&r);
  /* The wrong signature fails to compile at the definition. */
  http_post_json(
      d, "/kernels",
      "{\"experiment\":\"gemm\",\"name\":\"sig\",\"source\":"
      "\"extern \\\"C\\\" __global__ void kernel(const float* a, float* b, int m, int n) {}\"}",
      &r);
  check_unprocessable(&r, "compile_failed", 1);
  http_reply_free(&r);

  /* Refused before compiling. */
  post(
      d,
      "{\"experiment\":\"transpose\",\"name\":\"x\",\"source\":\"int x;\",\"options\":[\"-I/etc\"]}",
      400, "option_not_allowed", &r);
  http_reply_free(&r);
  post(
      d,
      "{\"experiment\":\"transpose\",\"name\":\"x\",\"source\":\"int x;\",\"options\":[\"-rdc=true\"]}",
      400, "option_not_allowed", &r);
  http_reply_free(&r);
  http_post_json(
      d, "/kernels",
      "{\"experiment\":\"transpose\",\"name\":\"x\",\"source\":\"\\n#include \\\"/etc/passwd\\\"\\n\"}",
      &r);
  check_unprocessable(&r, "source_not_allowed", 2);
  CHECK(json_at(r.json, "compile") == NULL);
  http_reply_free(&r);
  /* Only the toolkit's headers, by name: a path outside it is refused at its line, and
   * its detail shows nothing of the file. */
  http_post_json(d, "/kernels",
                 "{\"experiment\":\"transpose\",\"name\":\"x\",\"source\":\"#include "
                 "<cuda_fp16.h>\\n#include </etc/passwd>\\n\"}",
                 &r);
  check_unprocessable(&r, "source_not_allowed", 2);
  CHECK(strstr(JSTR(r.json, "detail"), "root:") == NULL);
  http_reply_free(&r);
  post(d, "{\"experiment\":\"pipeline\",\"name\":\"x\",\"source\":\"int x;\"}", 400, "unknown_type",
       &r);
  http_reply_free(&r);
  post(d, "{\"name\":\"x\",\"source\":\"int x;\"}", 400, "missing_field", &r);
  http_reply_free(&r);
  post(d, "{\"experiment\":\"transpose\",\"name\":\"a b\",\"source\":\"int x;\"}", 400,
       "out_of_range", &r);
  CHECK_STR_EQ(JSTR(r.json, "field"), "name");
  http_reply_free(&r);
  post(d, "{\"experiment\":\"transpose\",\"name\":\"x\",\"source\":\"int x;\",\"block\":[64,32,1]}",
       400, "out_of_range", &r);
  CHECK_STR_EQ(JSTR(r.json, "field"), "block");
  http_reply_free(&r);
  post(
      d,
      "{\"experiment\":\"transpose\",\"name\":\"x\",\"source\":\"int x;\",\"shared_bytes\":10000000}",
      400, "out_of_range", &r);
  CHECK_STR_EQ(JSTR(r.json, "field"), "shared_bytes");
  http_reply_free(&r);
  post(
      d,
      "{\"experiment\":\"transpose\",\"name\":\"x\",\"source\":\"int x;\",\"tile\":[1],\"grid\":[1]}",
      400, "out_of_range", &r);
  CHECK_STR_EQ(JSTR(r.json, "field"), "grid");
  http_reply_free(&r);
  post(d, "{\"experiment\":\"transpose\",\"name\":\"x\",\"source\":\"int x;\",\"public\":1}", 400,
       "wrong_type", &r);
  http_reply_free(&r);
  post(d, "{\"experiment\":\"transpose\",\"name\":\"x\",\"source\":\"int x;\",\"color\":1}", 400,
       "unknown_field", &r);
  http_reply_free(&r);
  post(d, "{\"experiment\":\"transpose\",\"name\":\"x\"}", 400, "missing_field", &r);
  CHECK_STR_EQ(JSTR(r.json, "field"), "source");
  http_reply_free(&r);
  http_request(d, "POST", "/kernels", "image/png", "x", 1, &r);
  CHECK_ERROR(&r, 415, "unsupported_media_type", NULL);
  http_reply_free(&r);

  /* The file as it is: text/x-cuda with the fields as query parameters. */
  http_request(
      d, "POST",
      "/kernels?experiment=transpose&name=my_tile&block=32,8&tile=32,32&options=-lineinfo,-DX=1",
      "text/x-cuda", cu_file, strlen(cu_file), &r);
  CHECK_STATUS(&r, 201);
  CHECK_INT_EQ(JINT(r.json, "block[1]"), 8);
  CHECK_INT_EQ(JINT(r.json, "tile[1]"), 32);
  CHECK_STR_EQ(JSTR(r.json, "options[1]"), "-DX=1");
  CHECK_STR_EQ(JSTR(r.json, "source"), cu_file);
  http_reply_free(&r);

  /* An HTML form's multipart/form-data; the experiment's block when none is given. */
  char form[2048];
  int n = snprintf(
      form, sizeof form,
      "--XyZ\r\nContent-Disposition: form-data; name=\"experiment\"\r\n\r\nstencil\r\n"
      "--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nmine\r\n"
      "--XyZ\r\nContent-Disposition: form-data; name=\"source\"; filename=\"s.cu\"\r\n"
      "Content-Type: text/plain\r\n\r\n%s\r\n--XyZ--\r\n",
      "extern \"C\" __global__ void kernel(const float* x, float* y, int n, int r) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = x[i];\n}");
  http_request(d, "POST", "/kernels", "multipart/form-data; boundary=XyZ", form, (size_t)n, &r);
  CHECK_STATUS(&r, 201);
  CHECK_STR_EQ(JSTR(r.json, "experiment"), "stencil");
  CHECK_INT_EQ(JINT(r.json, "block[0]"), 256);
  CHECK_INT_EQ(JINT(r.json, "tile[0]"), 256);
  http_reply_free(&r);

  /* Listing (newest first, no source, no log) and one kernel in full. */
  json_t *list = http_get_json(d, "/kernels"); /* kernels, not versions */
  CHECK_INT_EQ(json_array_size(json_at(list, "kernels")), 3);
  CHECK_INT_EQ(JINT(list, "kernels[2].versions"), 2);
  CHECK(json_at(list, "kernels[0].source") == NULL);
  CHECK(json_at(list, "kernels[0].compile.log") == NULL);
  json_decref(list);
  list = http_get_json(d, "/kernels?experiment=stencil");
  CHECK_INT_EQ(json_array_size(json_at(list, "kernels")), 1);
  json_decref(list);
  char path[64];
  snprintf(path, sizeof path, "/kernels/%lld", *first_id);
  json_t *k = http_get_json(d, path);
  CHECK(strstr(JSTR(k, "source"), "__shared__ float t[TILE][TILE + 1]") != NULL);
  CHECK(strstr(JSTR(k, "compile.log"), "Compiling entry function 'kernel'") != NULL);
  json_decref(k);
  /* A job naming it: on the CPU backend that run is listed unavailable, saying why,
   * beside the built-ins, with the kernel's identity. */
  char body[256];
  snprintf(body, sizeof body,
           "{\"m\":33,\"n\":47,\"variant\":[\"padded33\",\"kernel:%lld\"],\"warmup\":0,"
           "\"batches\":1,\"reps\":1}",
           *first_id);
  http_post_json(d, "/transpose", body, &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "params.variant[1]"), variant);
  CHECK(JBOOL(r.json, "result.runs[0].available"));
  CHECK_STR_EQ(JSTR(r.json, "result.runs[1].variant"), variant);
  CHECK(!JBOOL(r.json, "result.runs[1].available"));
  CHECK(strstr(JSTR(r.json, "result.runs[1].reason"), "CPU backend") != NULL);
  CHECK_INT_EQ(JINT(r.json, "result.runs[1].user_kernel.id"), *first_id);
  CHECK_INT_EQ(JINT(r.json, "result.runs[1].user_kernel.version"), 2);
  CHECK_STR_EQ(JSTR(r.json, "result.runs[1].user_kernel.name"), "padded");
  CHECK_STR_EQ(JSTR(r.json, "result.runs[1].user_kernel.source_sha256"), sha);
  http_reply_free(&r);
  http_post_json(d, "/transpose", "{\"variant\":[\"kernel:999\"]}", &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  http_reply_free(&r);
  http_post_json(d, "/jobs", "{\"type\":\"transpose\",\"params\":{\"variant\":\"kernel:999\"}}",
                 &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "params.variant");
  http_reply_free(&r);
  http_post_json(d, "/pipeline", "{\"streams\":\"kernel:1\"}", &r); /* no users' kernels there */
  CHECK_STATUS(&r, 400);
  http_reply_free(&r);
  http_post_json(d, "/transpose", "{\"variant\":[\"kernel:0\"]}", &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  http_reply_free(&r);
  snprintf(body, sizeof body, "{\"variant\":[\"kernel:%lld\",\"kernel:%lld\"]}", *first_id,
           *first_id);
  http_post_json(d, "/transpose", body, &r);
  CHECK_ERROR(&r, 400, "duplicate_variant", "variant");
  http_reply_free(&r);
  snprintf(body, sizeof body, "{\"variant\":[\"naive\",\"kernel:%lld\"]}", *first_id);
  http_post_json(d, "/gemm", body, &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  CHECK(strstr(JSTR(r.json, "detail"), "transpose kernel") != NULL);
  http_reply_free(&r);
  /* A sweep whose points name it: its rows have the kernel's column too. */
  snprintf(
      body, sizeof body,
      "{\"type\":\"transpose\",\"params\":{\"variant\":[\"naive\",\"kernel:%lld\"],\"warmup\":0,"
      "\"batches\":1,\"reps\":1},\"axes\":{\"m\":[8,16]}}",
      *first_id);
  http_post_json(d, "/sweeps?wait=60", body, &r);
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
  http_post_json(d, "/sweeps",
                 "{\"type\":\"transpose\",\"params\":{\"variant\":\"kernel:998\"},"
                 "\"axes\":{\"m\":[8,16]}}",
                 &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "params.variant"); /* where the body names it */
  http_reply_free(&r);

  /* ?run=1: stored, then run against the built-ins at the default size. */
  http_request(d, "POST",
               "/kernels?experiment=transpose&name=ran&block=32,8&tile=32,32&run=1&wait=120",
               "text/x-cuda", cu_file, strlen(cu_file), &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "state"), "done");
  CHECK_INT_EQ(JINT(r.json, "params.m"), 4096);
  CHECK_INT_EQ(json_array_size(json_at(r.json, "result.runs")), 6);
  CHECK(strncmp(JSTR(r.json, "result.runs[5].variant"), "kernel:", 7) == 0);
  CHECK(!JBOOL(r.json, "result.runs[5].available"));
  http_reply_free(&r);

  /* The leaderboard at a size: the best verified run per variant, linking its job. */
  json_t *board = http_get_json(d, "/leaderboard/transpose?size=33,47");
  CHECK_INT_EQ(json_array_size(json_at(board, "rows")), 1); /* padded33; the kernel did not run */
  CHECK_STR_EQ(JSTR(board, "rows[0].variant"), "padded33");
  CHECK_INT_EQ(JINT(board, "rows[0].rank"), 1);
  CHECK(strncmp(JSTR(board, "rows[0].href"), "/jobs/", 6) == 0);
  json_decref(board);
  /* Under /v1 every href carries it, as Location does. */
  board = http_get_json(d, "/v1/leaderboard/transpose?size=33,47");
  CHECK(strncmp(JSTR(board, "rows[0].href"), "/v1/jobs/", 9) == 0);
  char v1[64], plain[64];
  snprintf(v1, sizeof v1, "/v1/kernels/%lld", *first_id);
  snprintf(plain, sizeof plain, "/kernels/%lld", *first_id);
  json_t *kd = http_get_json(d, v1);
  CHECK_STR_EQ(JSTR(kd, "href"), v1);
  json_decref(kd);
  kd = http_get_json(d, plain);
  CHECK_STR_EQ(JSTR(kd, "href"), plain);
  json_decref(kd);
  kd = http_get_json(d, "/v1/kernels");
  CHECK(strncmp(JSTR(kd, "kernels[0].href"), "/v1/kernels/", 12) == 0);
  json_decref(kd);
  CHECK_INT_EQ(JINT(board, "size.n"), 47);
  json_decref(board);
  board = http_get_json(d, "/leaderboard/transpose");
  CHECK_INT_EQ(json_array_size(json_at(board, "rows")), 4); /* the ?run=1 job's transposes */
  CHECK(JNUM(board, "rows[0].figure") >= JNUM(board, "rows[3].figure"));
  json_decref(board);
  HTTP_EXPECT(d, "GET", "/leaderboard/transpose?size=x", 400, "wrong_type", "size");
  HTTP_EXPECT(d, "GET", "/leaderboard/transpose?size=0", 400, "out_of_range", "size");
  HTTP_EXPECT(d, "GET", "/leaderboard/pipeline", 404, "not_found", "experiment");

  HTTP_EXPECT(d, "GET", "/kernels/999", 404, "kernel_not_found", "id");
  HTTP_EXPECT(d, "GET", "/kernels/abc", 404, "kernel_not_found", "id");
}

static void test_tokens(void) {
  char tokens[128], db[512];
  snprintf(tokens, sizeof tokens, "%s/tokens", dir);
  test_db_in("kernels", dir, "tok.db", db, sizeof db);
  write_file(tokens, ALICE " alice\n" BOB " bob\n");
  const char *args[] = {"--backend",     "cpu", "--tokens",     tokens, "--db", db,
                        "--max-kernels", "2",   "--access-log", "off",  NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  struct http_reply r;
  snprintf(d.http.token, sizeof d.http.token, "%s", ALICE);
  post(
      &d,
      "{\"experiment\":\"stencil\",\"name\":\"secret\",\"source\":\"extern \\\"C\\\" __global__ void "
      "kernel(const float* x, float* y, int n, int r) {}\"}",
      201, NULL, &r);
  long long secret = JINT(r.json, "id");
  CHECK_STR_EQ(JSTR(r.json, "owner"), "alice");
  http_reply_free(&r);
  post(
      &d,
      "{\"experiment\":\"stencil\",\"name\":\"shared\",\"public\":true,\"source\":\"extern \\\"C\\\" "
      "__global__ void kernel(const float* x, float* y, int n, int r) {}\"}",
      201, NULL, &r);
  long long shared = JINT(r.json, "id");
  http_reply_free(&r);
  post(&d, "{\"experiment\":\"stencil\",\"name\":\"third\",\"source\":\"int x;\"}", 403,
       "kernel_quota", &r);
  http_reply_free(&r);

  snprintf(d.http.token, sizeof d.http.token, "%s", BOB);
  char path[64];
  snprintf(path, sizeof path, "/kernels/%lld", secret);
  HTTP_EXPECT(&d, "GET", path, 404, "kernel_not_found", "id");
  HTTP_EXPECT(&d, "DELETE", path, 404, "kernel_not_found", "id");
  snprintf(path, sizeof path, "/kernels/%lld", shared);
  json_t *k = http_get_json(&d, path);
  CHECK_STR_EQ(JSTR(k, "owner"), "alice");
  json_decref(k);
  HTTP_EXPECT(&d, "DELETE", path, 403, "not_owner", "id");
  json_t *list = http_get_json(&d, "/kernels");
  CHECK_INT_EQ(json_array_size(json_at(list, "kernels")), 1);
  json_decref(list);
  d.http.token[0] = '\0';
  HTTP_EXPECT(&d, "GET", "/kernels", 401, NULL, NULL);

  snprintf(d.http.token, sizeof d.http.token, "%s", ALICE);
  snprintf(path, sizeof path, "/kernels/%lld", secret);
  HTTP_EXPECT(&d, "DELETE", path, 200, NULL, NULL);
  HTTP_EXPECT(&d, "GET", path, 404, "kernel_not_found", "id");
  gpulabd_stop(&d);
}

/* A store that cannot take a kernel (a file size limit: EFBIG, as a full disk gives
 * ENOSPC) refuses it as it refuses a job: 507 insufficient_storage with Retry-After,
 * nothing kept; a job is refused too while it fails; every kernel it accepted is there
 * after a restart. SQLite's alone: the limit is on gpulabd's own file. */
static void test_store_full(void) {
  char db[128], path[160];
  snprintf(db, sizeof db, "%s/full.db", dir);
  signal(SIGXFSZ, SIG_IGN); /* inherited: the limit makes writes fail with EFBIG */
  struct rlimit saved, lim;
  CHECK_INT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  lim = saved;
  lim.rlim_cur = 512 * 1024;
  CHECK_INT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  const char *args[] = {"--backend", "cpu",          "--db", db,  "--max-kernels",
                        "200",       "--access-log", "off",  NULL};
  struct gpulabd d;
  gpulabd_start(args, &d);
  CHECK_INT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0); /* gpulabd keeps the limit it started with */
  static char src[62000];
  size_t n = (size_t)snprintf(src, sizeof src, "// ");
  memset(src + n, 'x', 60000);
  n += 60000;
  snprintf(src + n, sizeof src - n,
           "\nextern \"C\" __global__ void kernel(const float* x, float* y, int n, int r) {}\n");
  int accepted = 0;
  bool refused = false;
  struct http_reply r;
  for (int i = 0; i < 100 && !refused; i++) {
    snprintf(path, sizeof path, "/kernels?experiment=stencil&name=big%d", i);
    http_request(&d, "POST", path, "text/x-cuda", src, strlen(src), &r);
    if (r.status == 201) {
      accepted++;
    } else {
      CHECK_ERROR(&r, 507, "insufficient_storage", NULL);
      CHECK(r.retry_after != NULL);
      refused = true;
    }
    http_reply_free(&r);
  }
  printf("a file size limit of 512 KiB: %d kernels of 60 KB stored, then 507\n", accepted);
  CHECK(refused && accepted > 0);
  http_post_json(&d, "/stencil", "{\"n\":64}", &r); /* the store is failing: no job either */
  CHECK(r.status == 507 || r.status == 503);
  http_reply_free(&r);
  gpulabd_stop(&d);
  gpulabd_start(args, &d);
  json_t *list = http_get_json(&d, "/kernels");
  CHECK_INT_EQ(json_array_size(json_at(list, "kernels")), accepted);
  json_decref(list);
  gpulabd_stop(&d);
}

static char db[512]; /* the store of test_api's gpulabd, kept across its restart */
static const char *args[] = {"--backend", "cpu", "--db", db, "--access-log", "off", NULL};

static int make_dir(void) {
  dir = test_dir();
  test_db_in("kernels", dir, "k.db", db, sizeof db);
  return 0;
}

/* The routes, then the kernels' state; the first kernel's id and source hash are what
 * test_restart finds again. */
static long long first_id;
static char first_sha[65];
static void test_api(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  check_api(&d, &first_id, first_sha);
  check_state(&d);
  gpulabd_stop(&d);
}

/* Across a restart: the kernel, its source and report are still there. */
static void test_restart(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  char path[64];
  snprintf(path, sizeof path, "/kernels/%lld", first_id);
  json_t *k = http_get_json(&d, path);
  CHECK_STR_EQ(JSTR(k, "source_sha256"), first_sha);
  CHECK(JBOOL(k, "compile.ok"));
  json_decref(k);
  gpulabd_stop(&d);
}

static void test_store_full_sqlite(void) {
  if (!test_db_is_pg(db)) test_store_full(); /* SQLite's alone */
}

/* Without NVRTC: 503 nvrtc_unavailable, saying why. */
static void test_without_nvrtc(void) {
  struct gpulabd d;
  const char *none[] = {"--backend", "cpu",          "--db", "none", "--nvrtc",
                        "none",      "--access-log", "off",  NULL};
  gpulabd_start(none, &d);
  struct http_reply r;
  post(&d, good_json, 503, "nvrtc_unavailable", &r);
  CHECK(strstr(JSTR(r.json, "detail"), "--nvrtc none") != NULL);
  http_reply_free(&r);
  gpulabd_stop(&d);
  const char *missing[] = {"--backend",    "cpu",     "--db",
                           "none",         "--nvrtc", "/nonexistent/libnvrtc.so",
                           "--access-log", "off",     NULL};
  gpulabd_start(missing, &d);
  post(&d, good_json, 503, "nvrtc_unavailable", &r);
  CHECK(strstr(JSTR(r.json, "detail"), "/nonexistent/libnvrtc.so") != NULL);
  http_reply_free(&r);
  gpulabd_stop(&d);
}

static const struct test_case cases[] = {
    TEST(test_api),           TEST_AFTER(test_restart, test_api),
    TEST(test_tokens),        {"store_full", test_store_full_sqlite, NULL},
    TEST(test_without_nvrtc), TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = make_dir};
