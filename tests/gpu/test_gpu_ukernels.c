/* Users' kernels in jobs on a real GPU (label gpu; skips with 77 where gpulabd finds no
 * CUDA device): every experiment's template (GET /kernels/signatures) with its default
 * block and tile passes its check at odd sizes (tails in every dimension) and at the
 * default size; the lecture's padded33 sent as a user's kernel runs in the same job as
 * the built-in padded33, both timed the poisoned way (both medians printed: the 3% is a
 * benchmark figure, not asserted here), and again cold (each flushed before every
 * timed launch, both checked), while a graph job lists it unavailable; a wrong kernel fails its check with the
 * mismatch count; __trap(), an out-of-range store and an endless loop each fail their
 * job (kernel_fault, kernel_timeout) and the next job passes, gpulabd staying
 * healthy. State does not outlive a launch: probes that write a wrong element whenever
 * they find what an earlier launch left (in a zero-initialized __device__ array, an
 * initialized __device__ counter, the scratch) pass only because the runner puts the
 * module's variables back and zeroes the scratch before every launch; a kernel that
 * writes into its const input fails its job with input_modified. The built-in `shared`
 * reduce and histogram kernels sent as users' run beside themselves at 2^24 (and the
 * default size), and a one-pass scan beside scan's shared and best (shared is five
 * launches: no user's kernel can be its source), every medians printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "kernels/core/clock.h"
#include "runner.h"

static struct gpulabd D;

static const char *const padded33 =
    "#define TILE 32\n"
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
    "  __shared__ float tile[TILE][TILE + 1];\n"
    "  int tx = threadIdx.x, ty = threadIdx.y;\n"
    "  size_t x = (size_t)blockIdx.x * TILE + tx, y = (size_t)blockIdx.y * TILE + ty;\n"
    "  if (x < (size_t)n && y < (size_t)m) tile[ty][tx] = a[y * n + x];\n"
    "  __syncthreads();\n"
    "  size_t ox = (size_t)blockIdx.y * TILE + tx, oy = (size_t)blockIdx.x * TILE + ty;\n"
    "  if (ox < (size_t)m && oy < (size_t)n) b[oy * m + ox] = tile[tx][ty];\n"
    "}\n";
static const char *const wrong =
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
    "  size_t x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "  if (threadIdx.y == 31) return; /* forgets a row of every tile */\n"
    "  if (x < n && y < m) b[x * m + y] = a[y * n + x];\n"
    "}\n";
static const char *const trap =
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) { __trap(); }\n";
static const char *const oob =
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
    "  b[(size_t)m * n + (1ull << 36) + threadIdx.x] = 1.0f;\n"
    "}\n";
/* Idea: a right answer that leaves a mark (or a stash) in its const input. */
static const char *const scribble =
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
    "  size_t x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "  if (x < n && y < m) b[x * m + y] = a[y * n + x];\n"
    "  if (x == 0 && y == 0) ((float *)a)[0] = 42.0f;\n"
    "}\n";
static const char *const endless =
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
    "  for (;;) __nanosleep(1000); /* a side effect each turn: the loop cannot be dropped */\n"
    "}\n";

/* Probes of the state between launches, each a transpose that writes a wrong element
 * when it finds what an earlier launch left behind (jobs of 1024 x 1024). */
#define PROBE_HEAD                                                                    \
  "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n%s) {\n" \
  "  size_t x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"  \
  "  if (x >= n || y >= m) return;\n"                                                 \
  "  float v = a[y * n + x];\n"
/* Idea: keep a flag (or a result) per element in a __device__ array, zero at load. */
static const char *const probe_array =
    "__device__ unsigned char seen[1 << 20];\n" PROBE_HEAD
    "  if (seen[y * n + x]) v = -1.0f; /* an earlier launch was here */\n"
    "  seen[y * n + x] = 1;\n"
    "  b[x * m + y] = v;\n}\n";
/* Idea: count launches in an initialized __device__ variable: each thread takes a
 * ticket; a ticket past this launch's threads means an earlier launch counted too. */
static const char *const probe_counter =
    "__device__ unsigned tickets = 7;\n" PROBE_HEAD
    "  if (atomicAdd(&tickets, 1u) - 7u >= (unsigned)(m * n)) v = -1.0f;\n"
    "  b[x * m + y] = v;\n}\n";
/* Idea: the same flag per element in the scratch, which must come zeroed. */
static const char *const probe_scratch = PROBE_HEAD
    "  unsigned char *seen = (unsigned char *)scratch;\n"
    "  if (seen[y * n + x]) v = -1.0f;\n"
    "  seen[y * n + x] = 1;\n"
    "  b[x * m + y] = v;\n}\n";

/* POSTs a transpose kernel (32 x 32 blocks and tiles) with more query fields (extra:
 * "&scratch_bytes=64", or ""). */
static long long post_kernel_with(const char *name, const char *src, const char *extra) {
  char path[200];
  snprintf(path, sizeof path, "/kernels?experiment=transpose&name=%s&block=32,32&tile=32,32%s",
           name, extra);
  struct http_reply r;
  http_request(&D, "POST", path, "text/x-cuda", src, strlen(src), &r);
  CHECK_STATUS(&r, 201);
  printf("%s: compiled in %.1f ms, %lld registers\n", name, JNUM(r.json, "compile.compile_ms"),
         JINT(r.json, "compile.registers"));
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

static long long post_kernel(const char *name, const char *src) {
  return post_kernel_with(name, src, "");
}

/* Idea: a GEMM that computes only the 64 evenly spaced rows a sampled check used to
 * compare (first and last included), leaving the rest as they are (NaN). The check's
 * rows are now drawn secretly per reference and per timed launch: it fails. */
static const char *const rows_only_gemm =
    "extern \"C\" __global__ void kernel(const float* A, const float* B, float* C, int m, int n, int k) {\n"
    "  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "  if (row >= m || col >= n) return;\n"
    "  bool sampled = false;\n"
    "  for (int r = 0; r < 64; r++) sampled |= row == (int)((long long)r * (m - 1) / 63);\n"
    "  if (!sampled) return;\n"
    "  float acc = 0.0f;\n"
    "  for (int i = 0; i < k; ++i) acc = fmaf(A[(size_t)row * k + i], B[(size_t)i * n + col], acc);\n"
    "  C[(size_t)row * n + col] = acc;\n"
    "}\n";

/* Idea: an "FP32" GEMM that rounds its operands to TF32 (what tensor cores compute, far
 * faster): within the worst-case FP32 bound at large k, but not FP32's precision. */
static const char *const tf32_gemm =
    "__device__ __forceinline__ float tf32(float x) {\n"
    "  return __uint_as_float((__float_as_uint(x) + 0x1000u) & ~0x1fffu);\n"
    "}\n"
    "extern \"C\" __global__ void kernel(const float* A, const float* B, float* C, int m, int n, int k) {\n"
    "  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "  if (row >= m || col >= n) return;\n"
    "  float acc = 0.0f;\n"
    "  for (int i = 0; i < k; ++i) acc = fmaf(tf32(A[(size_t)row * k + i]), tf32(B[(size_t)i * n + col]), acc);\n"
    "  C[(size_t)row * n + col] = acc;\n"
    "}\n";

/* Idea: count launches in a __device__ variable and compute only from the third on
 * (spinning through the others, as a cheat that lands on a plausible time would): put
 * back before every launch, the count never moves, and no timed launch computes. */
static const char *const counting =
    "__device__ unsigned launches;\n"
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
    "  size_t x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) atomicAdd(&launches, 1u);\n"
    "  if (launches < 3) return;\n"
    "  if (x < n && y < m) b[x * m + y] = a[y * n + x];\n"
    "}\n";

static json_t *run(const char *path, const char *body);

/* A cheat of experiment exp posted as name, in a job of body's params and the kernel
 * (body: a format with %lld for its id): its check fails; the runner's own check names
 * a timed launch when `launch` is set; precision: the check's precision failed. */
static void caught(const char *exp, const char *name, const char *src, const char *block,
                   const char *body_fmt, bool launch, bool precision) {
  char path[200], body[256];
  snprintf(path, sizeof path, "/kernels?experiment=%s&name=%s&block=%s&tile=%s", exp, name, block,
           block);
  struct http_reply r;
  http_request(&D, "POST", path, "text/x-cuda", src, strlen(src), &r);
  CHECK_STATUS(&r, 201);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  snprintf(body, sizeof body, body_fmt, id);
  snprintf(path, sizeof path, "/%s", exp);
  json_t *j = run(path, body);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  if (JBOOL(j, "result.runs[0].check.passed")) CHECK_FAIL_("%s passed its check", name);
  if (launch) CHECK(strstr(JSTR(j, "result.runs[0].check.failure"), "timed launch 1 of") != NULL);
  if (precision) CHECK(!JBOOL(j, "result.runs[0].check.precision.passed"));
  printf("%s: caught (%lld mismatches%s%s)\n", name, JINT(j, "result.runs[0].check.mismatches"),
         launch ? "; " : "", launch ? JSTR(j, "result.runs[0].check.failure") : "");
  if (precision)
    printf("  precision: rms %g against a limit of %g\n",
           JNUM(j, "result.runs[0].check.precision.rms_rel_err"),
           JNUM(j, "result.runs[0].check.precision.limit"));
  json_decref(j);
}

/* The rows-only GEMM at 2048^3, the TF32 GEMM at 1024^3 and 2048^3 (where the worst-case
 * bound alone let it pass), the launch counter. */
static void rows_only(void) {
  const char *gemm = "{\"m\":%s,\"n\":%s,\"k\":%s,\"variant\":[\"kernel:%%lld\"]}";
  char fmt[128];
  snprintf(fmt, sizeof fmt, gemm, "2048", "2048", "2048");
  caught("gemm", "rows_only", rows_only_gemm, "16,16", fmt, true, false);
  caught("gemm", "tf32_2048", tf32_gemm, "16,16", fmt, false, true);
  snprintf(fmt, sizeof fmt, gemm, "1024", "1024", "1024");
  caught("gemm", "tf32_1024", tf32_gemm, "16,16", fmt, false, true);
  caught("transpose", "counting", counting, "32,32", "{\"variant\":[\"kernel:%lld\"]}", true,
         false);
}

/* Idea: a sum of the first half of x only (twice as fast as reading it all). */
static const char *const sum_half =
    "extern \"C\" __global__ void kernel(const float* x, float* out, int n) {\n"
    "  __shared__ float s[256];\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  s[threadIdx.x] = i < n / 2 ? x[i] : 0.0f;\n"
    "  __syncthreads();\n"
    "  for (int half = blockDim.x / 2; half > 0; half /= 2) {\n"
    "    if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) atomicAdd(out, s[0]);\n"
    "}\n";

/* The template experiment's users start from (GET /kernels/signatures), malloc'ed. */
static char *template_of(const char *experiment) {
  json_t *sigs = http_get_json(&D, "/kernels/signatures");
  char *src = NULL;
  size_t i;
  json_t *sig;
  json_array_foreach(json_object_get(sigs, "signatures"), i, sig) {
    if (!strcmp(JSTR(sig, "experiment"), experiment)) src = strdup(JSTR(sig, "template"));
  }
  json_decref(sigs);
  CHECK(src != NULL);
  return src;
}

/* Idea: a histogram that leaves out the last value. */
static const char *const histogram_but_last =
    "extern \"C\" __global__ void kernel(const float* x, unsigned int* counts, int n, int bins) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n - 1) return;\n"
    "  float v = x[i];\n"
    "  if (!(v >= -1.0f && v < 1.0f)) return;\n"
    "  int b = (int)((v + 1.0f) * (0.5f * (float)bins));\n"
    "  atomicAdd(&counts[b < bins - 1 ? b : bins - 1], 1u);\n"
    "}\n";

/* Reduce, scan and histogram: a sum of half of x, a scan rounded to half precision, a
 * histogram without its last value are caught, each at its first timed launch. */
static void sums_caught(void) {
  /* its error is the other half's sum, some 180 at 10^5 against a tolerance near 0.05: it
   * could pass one check by chance (p ~ 10^-4), so any of them may be the one to fail */
  caught("reduce", "sum_half", sum_half, "256,1", "{\"n\":100000,\"variant\":[\"kernel:%lld\"]}",
         false, false);
  caught("histogram", "histogram_but_last", histogram_but_last, "256,1",
         "{\"variant\":[\"kernel:%lld\"]}", true, false);
  /* Idea: the scan's template with its results rounded to half precision (as a scan that
   * moved its data in FP16 would be), at a size that keeps it short. */
  char *tmpl = template_of("scan");
  const char *store = strstr(tmpl, "y[i] = carry + s[threadIdx.x];");
  CHECK(store != NULL);
  char src[4096];
  snprintf(
      src, sizeof src,
      "#include <cuda_fp16.h>\n%.*sy[i] = __half2float(__float2half(carry + s[threadIdx.x]));%s",
      (int)(store - tmpl), tmpl, store + strlen("y[i] = carry + s[threadIdx.x];"));
  free(tmpl);
  struct http_reply r;
  http_request(&D, "POST", "/kernels?experiment=scan&name=scan_half", "text/x-cuda", src,
               strlen(src), &r);
  CHECK_STATUS(&r, 201);
  char body[128];
  snprintf(body, sizeof body, "{\"n\":100000,\"variant\":[\"kernel:%lld\"]}", JINT(r.json, "id"));
  http_reply_free(&r);
  json_t *j = run("/scan", body);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(!JBOOL(j, "result.runs[0].check.passed"));
  CHECK(strstr(JSTR(j, "result.runs[0].check.failure"), "timed launch 1 of") != NULL);
  printf("scan_half: caught (%lld mismatches; %s)\n", JINT(j, "result.runs[0].check.mismatches"),
         JSTR(j, "result.runs[0].check.failure"));
  json_decref(j);
}

/* A user's kernel POSTed at path (a /kernels?... query) from src: its id. */
static long long post_user(const char *path, const char *src) {
  struct http_reply r;
  http_request(&D, "POST", path, "text/x-cuda", src, strlen(src), &r);
  if (r.status != 201) CHECK_FAIL_("POST %s: %ld %s", path, r.status, r.body);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

/* A job on path of the built-in `shared` and kernel id at params (a JSON object's
 * inside, "" for the default size): both pass their checks; their medians and ratio
 * printed (a test never fails on a time). The job, for more checks. */
static json_t *beside_shared(const char *path, const char *what, const char *params, long long id) {
  char body[256];
  snprintf(body, sizeof body, "{%s%s\"variant\":[\"shared\",\"kernel:%lld\"]}", params,
           *params ? "," : "", id);
  json_t *j = run(path, body);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  if (!JBOOL(j, "result.runs[0].check.passed") || !JBOOL(j, "result.runs[1].check.passed"))
    CHECK_FAIL_("%s at {%s}: %s", what, params,
                json_dumps(json_at(j, "result.runs"), JSON_COMPACT));
  double builtin = JNUM(j, "result.runs[0].timing.median_ms"),
         user = JNUM(j, "result.runs[1].timing.median_ms");
  printf(
      "%s at n = %lld%s: shared %.4f ms, the same kernel as a user's %.4f ms: user/built-in "
      "%.3f (%+.1f%%)\n",
      what, JINT(j, "params.n"), *params ? "" : " (the default size)", builtin, user,
      user / builtin, 100 * (user / builtin - 1));
  return j;
}

/* The reduce template is the built-in shared variant's kernel (a tree per block of 256,
 * an atomic a block): both in one job at the default size and at 2^24, their medians
 * printed side by side (bench/RESULTS.md keeps the figures). */
static void reduce_as_shared(void) {
  char *src = template_of("reduce");
  long long id = post_user("/kernels?experiment=reduce&name=as_shared", src);
  free(src);
  json_decref(beside_shared("/reduce", "reduce", "", id));
  json_decref(beside_shared("/reduce", "reduce", "\"n\":16777216", id));
}

/* The built-in histogram `shared` kernel (histogram_shared_kernel<256>, histogram.cuh)
 * word for word as a user's: its size_t n is the signature's int, its scale (0.5f *
 * bins) and per_pass (the bins a pass, ceil(bins / passes) with passes = gridDim.y)
 * are computed as histogram_shared_plan computes them, and histogram_bin is spelled
 * out. Its launch is the plan's (the test reads it from a job of the built-in). */
static const char *const histogram_shared_user =
    "// histogram_shared_kernel<256>: a grid of (G, passes) blocks of 256; block (g, p)\n"
    "// keeps bins [p * per_pass, ...) of its own histogram in dynamic shared memory,\n"
    "// reads x grid-stride (coalesced), counts with shared atomics, then adds its nonzero\n"
    "// bins to counts (zeroed before the launch) with global atomics.\n"
    "#define BLOCK 256\n"
    "__device__ __forceinline__ int histogram_bin(float x, int bins, float scale) {\n"
    "  if (!(x >= -1.0f && x < 1.0f)) return -1;\n"
    "  int b = (int)((x + 1.0f) * scale);\n"
    "  return b < bins - 1 ? b : bins - 1;\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(BLOCK)\n"
    "kernel(const float* __restrict__ x, unsigned int* counts, int n, int bins) {\n"
    "  extern __shared__ unsigned int h[];\n"
    "  const float scale = 0.5f * (float)bins;\n"
    "  const int per_pass = (bins + (int)gridDim.y - 1) / (int)gridDim.y;\n"
    "  const int t = threadIdx.x, lo = (int)blockIdx.y * per_pass;\n"
    "  const int nb = min(per_pass, bins - lo);\n"
    "  for (int j = t; j < nb; j += BLOCK) h[j] = 0;\n"
    "  __syncthreads();\n"
    "  const size_t stride = (size_t)gridDim.x * BLOCK;\n"
    "  for (size_t i = (size_t)blockIdx.x * BLOCK + t; i < (size_t)n; i += stride) {\n"
    "    const int b = histogram_bin(x[i], bins, scale) - lo; // dropped: negative\n"
    "    if ((unsigned)b < (unsigned)nb) atomicAdd(h + b, 1u);\n"
    "  }\n"
    "  __syncthreads();\n"
    "  for (int j = t; j < nb; j += BLOCK)\n"
    "    if (h[j]) atomicAdd(counts + lo + j, h[j]);\n"
    "}\n";

/* The histogram `shared` kernel as a user's, launched as the built-in is: block 256, the
 * grid (G, passes) and dynamic shared bytes its plan picks at each size (read from a
 * short job of the built-in alone, then POSTed as the kernel's fixed grid and
 * shared_bytes), in one job beside the built-in at the default size (2^22, 256 bins) and
 * at 2^24 with 256 bins; both pass, the two launches the same. At an odd size with 20000
 * bins (two passes, grid.y 2) both pass too. */
static void histogram_as_shared(void) {
  static const char *const sizes[] = {"", "\"n\":16777216,\"bins\":256",
                                      "\"n\":100003,\"bins\":20000"};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    char body[256], path[256];
    snprintf(body, sizeof body,
             "{%s%s\"variant\":[\"shared\"],\"warmup\":0,\"batches\":1,\"reps\":1}", sizes[k],
             *sizes[k] ? "," : "");
    json_t *plan = run("/histogram", body);
    CHECK_STR_EQ(JSTR(plan, "state"), "done");
    long long gx = JINT(plan, "result.runs[0].kernel.grid[0]"),
              gy = JINT(plan, "result.runs[0].kernel.grid[1]"),
              smem = JINT(plan, "result.runs[0].kernel.dynamic_shared_bytes");
    CHECK_INT_EQ(JINT(plan, "result.runs[0].kernel.block[0]"), 256);
    json_decref(plan);
    snprintf(path, sizeof path,
             "/kernels?experiment=histogram&name=as_shared_%zu&block=256&grid=%lld,%lld"
             "&shared_bytes=%lld",
             k, gx, gy, smem);
    long long id = post_user(path, histogram_shared_user);
    json_t *j = beside_shared("/histogram", "histogram", sizes[k], id);
    for (int d = 0; d < 2; d++) {
      char a[64], b[64];
      snprintf(a, sizeof a, "result.runs[0].kernel.grid[%d]", d);
      snprintf(b, sizeof b, "result.runs[1].kernel.grid[%d]", d);
      CHECK_INT_EQ(JINT(j, a), JINT(j, b));
    }
    printf("  %lld bins: both launched grid %lld x %lld, block 256, %lld dynamic shared bytes\n",
           JINT(j, "params.bins"), gx, gy, smem);
    json_decref(j);
    if (k != 0) continue;
    /* The default size again cold: each launch after an L2 flush, so that neither finds
     * its input in the L2 (the runner writes a user's fresh inputs just before it). */
    char cold[64];
    snprintf(cold, sizeof cold, "\"cold\":true");
    json_decref(beside_shared("/histogram", "histogram cold", cold, id));
  }
}

/* The built-in scan `shared` is no one kernel: per level of tile totals a Blelloch tile
 * scan (scan_tile_kernel<SCAN_BLELLOCH>, 1024 a tile), then an add pass per level below
 * the top (scan_add_kernel): five launches at 2^24 (16384 tiles, 16, 1). A user's kernel
 * is one launch, and the first (per-tile) kernel alone is no scan, so there is no user's
 * kernel whose source is `shared`'s. The closest honest one: a single pass, each block a
 * tile, the tiles chained through the scratch (decoupled look-back, as best does), timed
 * beside both shared and best. */
static const char *const scan_one_pass =
    "// y[i] = x[0] + ... + x[i] in one launch: 128 threads a block, a tile of 4096 a block\n"
    "// (tile=4096: grid ceil(n / 4096)). scratch (zeroed before the launch, at least\n"
    "// 8 (tiles + 1) bytes): a tile counter, then a 64-bit status word a tile (flag in the\n"
    "// high half, 1: the tile's aggregate, 2: its inclusive prefix; the float's bits in\n"
    "// the low), stored and loaded whole. A block takes the next tile from the counter,\n"
    "// so every tile below it is already held by a running block; it scans its tile in\n"
    "// registers (float4 j * 128 + t of the tile in round j: coalesced), then warp 0\n"
    "// publishes the aggregate and walks back over the predecessors 32 at a time to the\n"
    "// tile's exclusive prefix (decoupled look-back, Merrill and Garland 2016).\n"
    "#define BLOCK 128\n"
    "#define W (BLOCK / 32)\n"
    "#define R (32 / W)\n"
    "#define TILE 4096\n"
    "#define FULL 0xffffffffu\n"
    "__device__ __forceinline__ float warp_inclusive(float v, int lane) {\n"
    "  for (int o = 1; o < 32; o <<= 1) {\n"
    "    float u = __shfl_up_sync(FULL, v, o);\n"
    "    if (lane >= o) v += u;\n"
    "  }\n"
    "  return v;\n"
    "}\n"
    "__device__ __forceinline__ float warp_sum(float v) {\n"
    "  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);\n"
    "  return v;\n"
    "}\n"
    "__device__ __forceinline__ unsigned long long status_load(const unsigned long long* p) {\n"
    "  unsigned long long v;\n"
    "  asm volatile(\"ld.relaxed.gpu.global.u64 %0, [%1];\" : \"=l\"(v) : \"l\"(p) : \"memory\");\n"
    "  return v;\n"
    "}\n"
    "__device__ __forceinline__ void status_store(unsigned long long* p, unsigned flag, float v) {\n"
    "  unsigned long long w = ((unsigned long long)flag << 32) | __float_as_uint(v);\n"
    "  asm volatile(\"st.relaxed.gpu.global.u64 [%0], %1;\" ::\"l\"(p), \"l\"(w) : \"memory\");\n"
    "}\n"
    "// Warp 0 of tile (>= 1): lane l reads tile pred - l, waiting while any has no flag;\n"
    "// the nearest inclusive prefix plus the aggregates after it ends the walk, a window\n"
    "// of aggregates only is added and the walk goes on. The same value in every lane.\n"
    "__device__ float look_back(const unsigned long long* status, int tile, int lane) {\n"
    "  float excl = 0.0f;\n"
    "  for (int pred = tile - 1;; pred -= 32) {\n"
    "    const int idx = pred - lane;\n"
    "    unsigned long long w = idx >= 0 ? status_load(status + idx) : 2ull << 32;\n"
    "    unsigned ns = 32;\n"
    "    while (__any_sync(FULL, (w >> 32) == 0)) {\n"
    "      __nanosleep(ns);\n"
    "      if (ns < 512) ns *= 2;\n"
    "      if ((w >> 32) == 0) w = status_load(status + idx);\n"
    "    }\n"
    "    const float v = __uint_as_float((unsigned)w);\n"
    "    const unsigned p = __ballot_sync(FULL, (w >> 32) == 2);\n"
    "    if (p) {\n"
    "      const int k = __ffs(p) - 1;\n"
    "      const float between = warp_sum(lane < k ? v : 0.0f);\n"
    "      return (__shfl_sync(FULL, v, k) + between) + excl;\n"
    "    }\n"
    "    excl += warp_sum(v);\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(BLOCK)\n"
    "kernel(const float* x, float* y, int n, void* scratch) {\n"
    "  unsigned* counter = (unsigned*)scratch;\n"
    "  unsigned long long* status = (unsigned long long*)scratch + 1;\n"
    "  __shared__ float seg[32];\n"
    "  __shared__ int claimed;\n"
    "  const int t = threadIdx.x, lane = t & 31, w = t >> 5;\n"
    "  if (t == 0) claimed = (int)atomicAdd(counter, 1u);\n"
    "  __syncthreads();\n"
    "  const int tile = claimed;\n"
    "  const size_t base = (size_t)tile * TILE, end = (size_t)n;\n"
    "  const bool vec = ((((unsigned long long)x) | ((unsigned long long)y)) & 15) == 0;\n"
    "  float4 v[R];\n"
    "#pragma unroll\n"
    "  for (int j = 0; j < R; j++) {\n"
    "    const size_t i = base + 4 * (size_t)(j * BLOCK + t);\n"
    "    if (vec && i + 3 < end) {\n"
    "      v[j] = *(const float4*)(x + i);\n"
    "    } else {\n"
    "      v[j].x = i < end ? x[i] : 0.0f;\n"
    "      v[j].y = i + 1 < end ? x[i + 1] : 0.0f;\n"
    "      v[j].z = i + 2 < end ? x[i + 2] : 0.0f;\n"
    "      v[j].w = i + 3 < end ? x[i + 3] : 0.0f;\n"
    "    }\n"
    "  }\n"
    "#pragma unroll\n"
    "  for (int j = 0; j < R; j++) { // segment j * W + w: 32 float4 of one warp\n"
    "    v[j].y += v[j].x;\n"
    "    v[j].z += v[j].y;\n"
    "    v[j].w += v[j].z;\n"
    "    const float inc = warp_inclusive(v[j].w, lane);\n"
    "    float ex = __shfl_up_sync(FULL, inc, 1);\n"
    "    if (lane == 0) ex = 0.0f;\n"
    "    if (lane == 31) seg[j * W + w] = inc;\n"
    "    v[j].x += ex;\n"
    "    v[j].y += ex;\n"
    "    v[j].z += ex;\n"
    "    v[j].w += ex;\n"
    "  }\n"
    "  __syncthreads();\n"
    "  if (w == 0) {\n"
    "    const float inc = warp_inclusive(seg[lane], lane);\n"
    "    float ex = __shfl_up_sync(FULL, inc, 1);\n"
    "    if (lane == 0) ex = 0.0f;\n"
    "    const float agg = __shfl_sync(FULL, inc, 31);\n"
    "    float excl = 0.0f;\n"
    "    if (tile == 0) {\n"
    "      if (lane == 0) status_store(status, 2, agg);\n"
    "    } else {\n"
    "      if (lane == 0) status_store(status + tile, 1, agg);\n"
    "      excl = look_back(status, tile, lane);\n"
    "      if (lane == 0) status_store(status + tile, 2, excl + agg);\n"
    "    }\n"
    "    seg[lane] = excl + ex;\n"
    "  }\n"
    "  __syncthreads();\n"
    "#pragma unroll\n"
    "  for (int j = 0; j < R; j++) {\n"
    "    const size_t i = base + 4 * (size_t)(j * BLOCK + t);\n"
    "    const float off = seg[j * W + w];\n"
    "    const float4 o = make_float4(v[j].x + off, v[j].y + off, v[j].z + off, v[j].w + off);\n"
    "    if (vec && i + 3 < end) {\n"
    "      *(float4*)(y + i) = o;\n"
    "    } else {\n"
    "      if (i < end) y[i] = o.x;\n"
    "      if (i + 1 < end) y[i + 1] = o.y;\n"
    "      if (i + 2 < end) y[i + 2] = o.z;\n"
    "      if (i + 3 < end) y[i + 3] = o.w;\n"
    "    }\n"
    "  }\n"
    "}\n";

/* The one-pass scan (its scratch: 8 (4096 + 1) bytes, tiles of 2^24) passes at an odd
 * size (a tail in its last tile and past its last float4), then runs beside the
 * built-in shared and best at 2^24, all three passing; the medians printed. */
static void scan_as_shared(void) {
  long long id = post_user(
      "/kernels?experiment=scan&name=one_pass&block=128&tile=4096"
      "&scratch_bytes=32776",
      scan_one_pass);
  char body[256];
  snprintf(body, sizeof body, "{\"n\":1050627,\"variant\":[\"kernel:%lld\"]}", id);
  json_t *j = run("/scan", body);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  if (!JBOOL(j, "result.runs[0].check.passed"))
    CHECK_FAIL_("the one-pass scan at 1050627: %s",
                json_dumps(json_at(j, "result.runs[0]"), JSON_COMPACT));
  json_decref(j);
  snprintf(body, sizeof body, "{\"n\":16777216,\"variant\":[\"shared\",\"best\",\"kernel:%lld\"]}",
           id);
  j = run("/scan", body);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  for (int r = 0; r < 3; r++) {
    char at[64];
    snprintf(at, sizeof at, "result.runs[%d].check.passed", r);
    if (!JBOOL(j, at))
      CHECK_FAIL_("scan at 2^24, run %d: %s", r,
                  json_dumps(json_at(j, "result.runs"), JSON_COMPACT));
  }
  double shared = JNUM(j, "result.runs[0].timing.median_ms"),
         best = JNUM(j, "result.runs[1].timing.median_ms"),
         user = JNUM(j, "result.runs[2].timing.median_ms");
  printf(
      "scan at n = 16777216: shared %.4f ms (5 launches), best %.4f ms, the one-pass user's "
      "%.4f ms: user/shared %.3f, user/best %.3f\n",
      shared, best, user, user / shared, user / best);
  json_decref(j);
}

/* A one-pass sum by a grid-wide sync: each block's partial into the scratch, the grid
 * synced (cooperative_groups, a toolkit header), block 0 adds the partials. */
static const char *const grid_sum =
    "#include <cooperative_groups.h>\n"
    "extern \"C\" __global__ void kernel(const float* x, float* out, int n, void* scratch) {\n"
    "  float* part = (float*)scratch;\n"
    "  __shared__ float s[256];\n"
    "  float v = 0.0f;\n"
    "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "    v += x[i];\n"
    "  s[threadIdx.x] = v;\n"
    "  __syncthreads();\n"
    "  for (int h = blockDim.x / 2; h > 0; h /= 2) {\n"
    "    if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) part[blockIdx.x] = s[0];\n"
    "  cooperative_groups::this_grid().sync();\n"
    "  if (blockIdx.x != 0) return;\n"
    "  float t = 0.0f;\n"
    "  for (int b = threadIdx.x; b < gridDim.x; b += blockDim.x) t += part[b];\n"
    "  s[threadIdx.x] = t;\n"
    "  __syncthreads();\n"
    "  for (int h = blockDim.x / 2; h > 0; h /= 2) {\n"
    "    if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) out[0] = s[0];\n"
    "}\n";

/* The grid-sync sum launched cooperatively with a grid that fits (264 blocks of 256: two
 * an SM on 132 SMs) passes beside shared; with a grid of a million blocks its run is
 * unavailable, saying how many fit. */
static void cooperative(void) {
  long long fits = 0, too_big = 0;
  for (int big = 0; big < 2; big++) {
    char path[200];
    snprintf(path, sizeof path,
             "/kernels?experiment=reduce&name=grid_sum%d&block=256&grid=%d&scratch_bytes=4096"
             "&cooperative=1",
             big, big ? 1000000 : 264);
    struct http_reply r;
    http_request(&D, "POST", path, "text/x-cuda", grid_sum, strlen(grid_sum), &r);
    CHECK_STATUS(&r, 201);
    CHECK(JBOOL(r.json, "cooperative"));
    *(big ? &too_big : &fits) = JINT(r.json, "id");
    http_reply_free(&r);
  }
  char body[128];
  snprintf(body, sizeof body, "{\"variant\":[\"shared\",\"kernel:%lld\",\"kernel:%lld\"]}", fits,
           too_big);
  json_t *j = run("/reduce", body);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  if (!JBOOL(j, "result.runs[1].check.passed"))
    CHECK_FAIL_("the cooperative sum: %s", json_dumps(json_at(j, "result.runs[1]"), JSON_COMPACT));
  CHECK(!JBOOL(j, "result.runs[2].available"));
  CHECK(strstr(JSTR(j, "result.runs[2].reason"), "cooperative launch of 1000000 blocks") != NULL);
  printf("cooperative sum: %.4f ms (shared %.4f ms); a million blocks: %s\n",
         JNUM(j, "result.runs[1].timing.median_ms"), JNUM(j, "result.runs[0].timing.median_ms"),
         JSTR(j, "result.runs[2].reason"));
  json_decref(j);
}

static json_t *job_with(const char *variants, const char *extra);

/* Each probe, in a job of warm-ups, batches and the check: it passes only when nothing
 * an earlier launch left reaches the next (the check reads the last launch's output). */
static void probes(void) {
  char src[1024];
  struct {
    const char *name, *src, *extra, *param;
  } p[] = {{"probe_array", probe_array, "", ""},
           {"probe_counter", probe_counter, "", ""},
           {"probe_scratch", probe_scratch, "&scratch_bytes=1048576", ", void* scratch"}};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
    snprintf(src, sizeof src, p[i].src, p[i].param);
    long long id = post_kernel_with(p[i].name, src, p[i].extra);
    char v[64];
    snprintf(v, sizeof v, "\"kernel:%lld\"", id);
    json_t *j = job_with(v, ",\"m\":1024,\"n\":1024,\"warmup\":2,\"batches\":3,\"reps\":5");
    CHECK_STR_EQ(JSTR(j, "state"), "done");
    if (!JBOOL(j, "result.runs[0].check.passed"))
      CHECK_FAIL_("%s saw an earlier launch's state: %lld mismatches", p[i].name,
                  JINT(j, "result.runs[0].check.mismatches"));
    printf("%s: every launch found its state fresh (%.4f ms)\n", p[i].name,
           JNUM(j, "result.runs[0].timing.median_ms"));
    json_decref(j);
  }
}

/* A transpose job of variants (a JSON list's inside), waited for. */
static json_t *job(const char *variants) {
  char body[256];
  snprintf(body, sizeof body, "{\"variant\":[%s]}", variants);
  struct http_reply r;
  http_post_json(&D, "/transpose?wait=120", body, &r);
  CHECK(r.status == 200 || r.status == 202);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return job_wait_final(&D, id, 180);
}

/* A job on path with body (JSON), waited for. */
static json_t *run(const char *path, const char *body) {
  struct http_reply r;
  char url[160];
  snprintf(url, sizeof url, "%s?wait=120", path);
  http_post_json(&D, url, body, &r);
  CHECK(r.status == 200 || r.status == 202);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return job_wait_final(&D, id, 300);
}

/* A transpose job of variants with more fields (extra: ",\"cold\":true"), waited for. */
static json_t *job_with(const char *variants, const char *extra) {
  char body[256];
  snprintf(body, sizeof body, "{\"variant\":[%s]%s}", variants, extra);
  return run("/transpose", body);
}

/* Each experiment's template as a user sends it (its default block and tile): its run
 * passes at sizes with tails against its tile, and at the default size. */
static void templates(void) {
  static const struct {
    const char *experiment, *odd;
  } sizes[] = {{"transpose", "\"m\":131,\"n\":197"},
               {"gemm", "\"m\":130,\"n\":135,\"k\":77"},
               {"stencil", "\"n\":9001,\"radius\":37"},
               {"reduce", "\"n\":1000003"},
               {"scan", "\"n\":1050627"},
               {"histogram", "\"n\":1000003,\"bins\":257"}};
  json_t *sigs = http_get_json(&D, "/kernels/signatures");
  size_t i;
  json_t *sig;
  json_array_foreach(json_object_get(sigs, "signatures"), i, sig) {
    const char *exp = JSTR(sig, "experiment"), *src = JSTR(sig, "template");
    char path[128], body[256];
    snprintf(path, sizeof path, "/kernels?experiment=%s&name=template_%s", exp, exp);
    struct http_reply r;
    http_request(&D, "POST", path, "text/x-cuda", src, strlen(src), &r);
    CHECK_STATUS(&r, 201);
    long long id = JINT(r.json, "id");
    http_reply_free(&r);
    const char *odd = NULL;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
      if (!strcmp(sizes[k].experiment, exp)) odd = sizes[k].odd;
    CHECK(odd != NULL);
    for (int pass = 0; pass < 2; pass++) {
      snprintf(body, sizeof body, "{%s%s\"variant\":[\"kernel:%lld\"]}", pass ? "" : odd,
               pass ? "" : ",", id);
      snprintf(path, sizeof path, "/%s", exp);
      json_t *j = run(path, body);
      if (strcmp(JSTR(j, "state"), "done") || !JBOOL(j, "result.runs[0].check.passed"))
        CHECK_FAIL_("%s's template at %s: %s", exp, pass ? "the default size" : odd,
                    json_dumps(j, JSON_COMPACT));
      printf("%s template (kernel:%lld) at %s: passed, %.4f ms, grid %lld x %lld\n", exp, id,
             pass ? "the default size" : odd, JNUM(j, "result.runs[0].timing.median_ms"),
             JINT(j, "result.runs[0].kernel.grid[0]"), JINT(j, "result.runs[0].kernel.grid[1]"));
      json_decref(j);
    }
  }
  json_decref(sigs);
}

static void passes(long long good) {
  char v[64];
  snprintf(v, sizeof v, "\"kernel:%lld\"", good);
  json_t *j = job(v);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.runs[0].check.passed"));
  json_decref(j);
}

static int start(void) {
  const char *args[] = {"--backend",         "cuda", "--db",         "none", "--streams", "1",
                        "--kernel-deadline", "2",    "--access-log", "off",  NULL};
  gpulabd_start_or_skip(args, &D);
  return 0;
}

static void stop(void) { gpulabd_stop(&D); }

static long long good; /* padded33 as a user's kernel: test_faults runs it after each */

/* The same source as the built-in, in the same job, timed the same way: hot, cold, and
 * in a graph. */
static void test_good(void) {
  good = post_kernel("padded33_user", padded33);

  /* The same source as the built-in, in the same job, timed the same way. */
  char v[64];
  snprintf(v, sizeof v, "\"padded33\",\"kernel:%lld\"", good);
  json_t *j = job(v);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  if (!JBOOL(j, "result.passed"))
    CHECK_FAIL_("not passed: %s", json_dumps(json_at(j, "result.runs"), JSON_COMPACT));
  double builtin = JNUM(j, "result.runs[0].timing.median_ms");
  double user = JNUM(j, "result.runs[1].timing.median_ms");
  printf("padded33 built-in %.4f ms (%.0f GB/s), user %.4f ms (%.0f GB/s): user/built-in %.3f\n",
         builtin, JNUM(j, "result.runs[0].figure"), user, JNUM(j, "result.runs[1].figure"),
         user / builtin);
  printf("  methods: %s | %s\n", JSTR(j, "result.runs[0].timing.method"),
         JSTR(j, "result.runs[1].timing.method"));
  CHECK(strstr(JSTR(j, "result.runs[0].timing.method"), "poisoned") != NULL);
  CHECK(strstr(JSTR(j, "result.runs[1].timing.method"), "gpulab-runner") != NULL);
  CHECK_STR_EQ(JSTR(j, "result.runs[1].user_kernel.name"), "padded33_user");
  CHECK_INT_EQ(JINT(j, "result.runs[1].user_kernel.id"), good);
  CHECK(JINT(j, "result.runs[1].kernel.registers") > 0);
  json_decref(j);

  /* Cold: the built-in flushed by gpulabd, the user's kernel by gpulab-runner in its
   * own context (the same flush: twice the L2, before every timed launch; a runner
   * that answers with fewer flushes than launches fails the job), both checked. */
  j = job_with(v, ",\"cold\":true");
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  if (!JBOOL(j, "result.passed"))
    CHECK_FAIL_("not passed: %s", json_dumps(json_at(j, "result.runs"), JSON_COMPACT));
  for (int r = 0; r < 2; r++) {
    char at[64];
    snprintf(at, sizeof at, "result.runs[%d].available", r);
    CHECK(JBOOL(j, at));
    snprintf(at, sizeof at, "result.runs[%d].check.passed", r);
    CHECK(JBOOL(j, at));
    snprintf(at, sizeof at, "result.runs[%d].timing.cold", r);
    CHECK(JBOOL(j, at));
    snprintf(at, sizeof at, "result.runs[%d].timing.median_ms", r);
    CHECK(JNUM(j, at) > 0);
  }
  double cold_builtin = JNUM(j, "result.runs[0].timing.median_ms");
  double cold_user = JNUM(j, "result.runs[1].timing.median_ms");
  printf(
      "cold: padded33 built-in %.4f ms (hot %.4f), user %.4f ms (hot %.4f): user/built-in %.3f\n",
      cold_builtin, builtin, cold_user, user, cold_user / cold_builtin);
  printf("  methods: %s | %s\n", JSTR(j, "result.runs[0].timing.method"),
         JSTR(j, "result.runs[1].timing.method"));
  CHECK(strstr(JSTR(j, "result.runs[0].timing.method"), "cold:") != NULL);
  CHECK(strstr(JSTR(j, "result.runs[1].timing.method"), "gpulab-runner") != NULL);
  CHECK(strstr(JSTR(j, "result.runs[1].timing.method"), "L2") != NULL);
  json_decref(j);

  /* Graph: the built-in is captured; the user's kernel, in another process's context,
   * is listed unavailable and says so. */
  j = job_with(v, ",\"graph\":true");
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.runs[0].available"));
  CHECK(!JBOOL(j, "result.runs[1].available"));
  CHECK(strstr(JSTR(j, "result.runs[1].reason"), "another process") != NULL);
  printf("graph: kernel:%lld unavailable: %s\n", good, JSTR(j, "result.runs[1].reason"));
  json_decref(j);
}

static void test_wrong(void) {
  char v[64];
  json_t *j;
  /* A wrong kernel: its check fails with the mismatch count; the job is done. */
  long long bad = post_kernel("wrong", wrong);
  snprintf(v, sizeof v, "\"padded33\",\"kernel:%lld\"", bad);
  j = job(v);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(!JBOOL(j, "result.runs[1].check.passed"));
  long long mismatches = JINT(j, "result.runs[1].check.mismatches");
  printf("wrong: %lld mismatches\n", mismatches);
  CHECK(mismatches > 0);
  CHECK(json_is_null(json_at(j, "result.runs[1].figure")));
  /* The runner's own check caught it at the first timed launch, on fresh inputs. */
  CHECK(strstr(JSTR(j, "result.runs[1].check.failure"), "timed launch 1 of") != NULL);
  printf("wrong: %s\n", JSTR(j, "result.runs[1].check.failure"));
  json_decref(j);
}

/* Faults: each fails its job with its code; the next job passes. */
static void test_faults(void) {
  char v[64];
  json_t *j;
  const char *srcs[4] = {trap, oob, endless, scribble},
             *names[4] = {"trap", "oob", "endless", "scribble"};
  const char *codes[4] = {"kernel_fault", "kernel_fault", "kernel_timeout", "input_modified"};
  for (int i = 0; i < 4; i++) {
    long long id = post_kernel(names[i], srcs[i]);
    snprintf(v, sizeof v, "\"padded33\",\"kernel:%lld\"", id);
    double t0 = clock_mono_s();
    j = job(v);
    double failed = clock_mono_s() - t0;
    CHECK_STR_EQ(JSTR(j, "state"), "failed");
    CHECK_STR_EQ(JSTR(j, "error.code"), codes[i]);
    printf("%s: %s (%s) after %.2f s\n", names[i], codes[i], JSTR(j, "error.message"), failed);
    json_decref(j);
    t0 = clock_mono_s();
    passes(good);
    printf("  the next job passed %.2f s later\n", clock_mono_s() - t0);
    json_t *h = http_get_json(&D, "/health");
    json_decref(h);
  }
}

static const struct test_case cases[] = {
    TEST(templates),
    TEST(probes),
    TEST(test_good),
    TEST(test_wrong),
    TEST(rows_only),
    TEST(sums_caught),
    TEST(reduce_as_shared),
    TEST(histogram_as_shared),
    TEST(scan_as_shared),
    TEST(cooperative),
    TEST_AFTER(test_faults, test_good),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
