/* The runner's problems on a real GPU (label gpu; skips with 77 where no CUDA device
 * answers), driven directly as gpulabd would: images compiled with NVRTC against each
 * problem's declaration and loaded, RUNNER_MSG_PROBLEM makes the buffers at the
 * params and checks the reference against itself, RUNs launch kernels on them. A row
 * softmax (the docs' naive reference): the reference agrees with itself, a fast kernel
 * passes its compare and 20 fresh timed launches and beats the reference, one that
 * skips the last column and one that writes into its input are caught; a float16 and
 * an int32 problem pass right kernels and catch wrong ones; the generator's uniform,
 * normal and integers inputs have the moments and ranges they should; a reference
 * that sums with float atomics is found to differ from itself unless the problem says
 * it is nondeterministic; a profiled launch runs on the problem's arguments.
 * GPULAB_RUNNER names the executable. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runner.h"

#ifndef GPULAB_HAVE_CUDA
static int skip(void) {
  printf("SKIP: a build without CUDA\n");
  return CHECK_SKIP;
}

static const struct test_case cases[] = {TEST_END};
const struct test_suite test_suite = {.cases = cases, .setup = skip};
#else
#include <cuda_runtime_api.h>

#include "kernels/user/image_cache.h"
#include "kernels/user/runner.h"
#include "kernels/user/ucompile.h"

enum { ROWS = 4096, COLS = 1024, N_HALF = 1 << 20, N_INT = (1 << 20) + 7, N_SUM = 1 << 22 };
#define DEADLINE_S 5.0

static const char *const softmax_decl =
    "extern \"C\" __global__ void %s(const float *x, float *y, int rows, int cols);";
/* docs/problems.md's reference: one block per row, every thread the row's max and sum. */
static const char *const softmax_ref =
    "extern \"C\" __global__ void kernel(const float* x, float* y, int rows, int cols) {\n"
    "  int r = blockIdx.x;\n"
    "  if (r >= rows) return;\n"
    "  const float* in = x + (size_t)r * cols;\n"
    "  float m = -3.4e38f, s = 0.f;\n"
    "  for (int c = 0; c < cols; c++) m = fmaxf(m, in[c]);\n"
    "  for (int c = 0; c < cols; c++) s += expf(in[c] - m);\n"
    "  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[(size_t)r * cols + c] = expf(in[c] "
    "- m) / s;\n"
    "}\n";
/* One block per row: the max and the sum by warp shuffles, then across the warps in
 * shared memory. LAST_COL: how many columns it writes (cols; the wrong one cols - 1);
 * WRITE_INPUT: afterwards, zeroes the row's first input. */
#define SOFTMAX_FAST_BODY                                                                 \
  "__device__ float warp_max(float v) {\n"                                                \
  "  for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));\n"    \
  "  return v;\n"                                                                         \
  "}\n"                                                                                   \
  "__device__ float warp_sum(float v) {\n"                                                \
  "  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"             \
  "  return v;\n"                                                                         \
  "}\n"                                                                                   \
  "extern \"C\" __global__ void kernel(const float *x, float *y, int rows, int cols) {\n" \
  "  __shared__ float part[32];\n"                                                        \
  "  int r = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"             \
  "  int warps = blockDim.x >> 5;\n"                                                      \
  "  if (r >= rows) return;\n"                                                            \
  "  const float *in = x + (size_t)r * cols;\n"                                           \
  "  float m = -3.4e38f;\n"                                                               \
  "  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);\n"         \
  "  m = warp_max(m);\n"                                                                  \
  "  if (lane == 0) part[warp] = m;\n"                                                    \
  "  __syncthreads();\n"                                                                  \
  "  m = part[0];\n"                                                                      \
  "  for (int w = 1; w < warps; w++) m = fmaxf(m, part[w]);\n"                            \
  "  __syncthreads();\n"                                                                  \
  "  float s = 0.f;\n"                                                                    \
  "  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(in[c] - m);\n"        \
  "  s = warp_sum(s);\n"                                                                  \
  "  if (lane == 0) part[warp] = s;\n"                                                    \
  "  __syncthreads();\n"                                                                  \
  "  s = 0.f;\n"                                                                          \
  "  for (int w = 0; w < warps; w++) s += part[w];\n"                                     \
  "  for (int c = threadIdx.x; c < LAST_COL; c += blockDim.x)\n"                          \
  "    y[(size_t)r * cols + c] = expf(in[c] - m) / s;\n"                                  \
  "  if (WRITE_INPUT) {\n"                                                                \
  "    __syncthreads();\n"                                                                \
  "    if (threadIdx.x == 0) ((float *)x)[(size_t)r * cols] = 0.f;\n"                     \
  "  }\n"                                                                                 \
  "}\n"
static const char *const softmax_fast =
    "#define LAST_COL cols\n#define WRITE_INPUT 0\n" SOFTMAX_FAST_BODY;
static const char *const softmax_wrong = /* skips the last column */
    "#define LAST_COL (cols - 1)\n#define WRITE_INPUT 0\n" SOFTMAX_FAST_BODY;
static const char *const softmax_writer = /* right, but zeroes its input's row starts */
    "#define LAST_COL cols\n#define WRITE_INPUT 1\n" SOFTMAX_FAST_BODY;

static const char *const half_decl =
    "#include <cuda_fp16.h>\n"
    "extern \"C\" __global__ void %s(const __half *x, __half *y, int n);";
static const char *const half_ref =
    "extern \"C\" __global__ void kernel(const __half *x, __half *y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = __float2half_rn(2.f * __half2float(x[i]));\n"
    "}\n";
static const char *const half_fast = /* two a thread, as half2 (n even) */
    "extern \"C\" __global__ void kernel(const __half *x, __half *y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (2 * i + 1 < n) ((__half2 *)y)[i] = __hmul2(((const __half2 *)x)[i],\n"
    "                                                __float2half2_rn(2.f));\n"
    "}\n";
static const char *const half_wrong = /* forgets the factor */
    "extern \"C\" __global__ void kernel(const __half *x, __half *y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = x[i];\n"
    "}\n";

static const char *const int_decl = "extern \"C\" __global__ void %s(const int *x, int *y, int n);";
static const char *const int_ref =
    "extern \"C\" __global__ void kernel(const int *x, int *y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = x[i] * x[i];\n"
    "}\n";
static const char *const int_good = /* -1 for an input outside [0, 9]: the generator's range */
    "extern \"C\" __global__ void kernel(const int *x, int *y, int n) {\n"
    "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "    y[i] = x[i] >= 0 && x[i] <= 9 ? x[i] * x[i] : -1;\n"
    "}\n";
static const char *const int_wrong = /* 9 * 9 = 80 */
    "extern \"C\" __global__ void kernel(const int *x, int *y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = x[i] * x[i] - (x[i] == 9);\n"
    "}\n";

/* The generator's moments: u uniform [-4, 4), z normal (1, 2), k integers [0, 9]; the
 * reference (one block) writes min u, max u, mean u, mean z, std z, min k, max k, mean
 * k; the "kernel" writes what they should be. */
static const char *const gen_decl =
    "extern \"C\" __global__ void %s(const float *u, const float *z, const int *k, float *s, "
    "int n);";
static const char *const gen_ref =
    "extern \"C\" __global__ void kernel(const float *u, const float *z, const int *k, float *s,\n"
    "                                    int n) {\n"
    "  __shared__ double acc[8][256];\n"
    "  double v[8] = {1e30, -1e30, 0, 0, 0, 1e30, -1e30, 0};\n"
    "  for (int i = threadIdx.x; i < n; i += blockDim.x) {\n"
    "    double x = u[i], y = z[i];\n"
    "    v[0] = fmin(v[0], x), v[1] = fmax(v[1], x), v[2] += x, v[3] += y, v[4] += y * y;\n"
    "    v[5] = fmin(v[5], (double)k[i]), v[6] = fmax(v[6], (double)k[i]), v[7] += k[i];\n"
    "  }\n"
    "  for (int j = 0; j < 8; j++) acc[j][threadIdx.x] = v[j];\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x) return;\n"
    "  for (int t = 1; t < blockDim.x; t++) {\n"
    "    v[0] = fmin(v[0], acc[0][t]), v[1] = fmax(v[1], acc[1][t]);\n"
    "    v[5] = fmin(v[5], acc[5][t]), v[6] = fmax(v[6], acc[6][t]);\n"
    "    v[2] += acc[2][t], v[3] += acc[3][t], v[4] += acc[4][t], v[7] += acc[7][t];\n"
    "  }\n"
    "  double mz = v[3] / n;\n"
    "  s[0] = v[0], s[1] = v[1], s[2] = v[2] / n, s[3] = mz, s[4] = sqrt(v[4] / n - mz * mz);\n"
    "  s[5] = v[5], s[6] = v[6], s[7] = v[7] / n;\n"
    "}\n";
static const char *const gen_want =
    "extern \"C\" __global__ void kernel(const float *u, const float *z, const int *k, float *s,\n"
    "                                    int n) {\n"
    "  const float want[8] = {-4.f, 4.f, 0.f, 1.f, 2.f, 0.f, 9.f, 4.5f};\n"
    "  if (threadIdx.x < 8) s[threadIdx.x] = want[threadIdx.x];\n"
    "}\n";

/* Sums with float atomics into 64 slots of its scratch; the last block out copies them:
 * the order of the additions, so their rounding, changes from launch to launch. */
static const char *const sum_decl =
    "extern \"C\" __global__ void %s(const float *x, float *y, int n, void *scratch);";
static const char *const sum_ref =
    "extern \"C\" __global__ void kernel(const float *x, float *y, int n, void *scratch) {\n"
    "  float *acc = (float *)scratch;\n"
    "  unsigned *done = (unsigned *)(acc + 64);\n"
    "  __shared__ bool last;\n"
    "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "    atomicAdd(&acc[i & 63], x[i]);\n"
    "  __threadfence();\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) last = atomicAdd(done, 1u) == gridDim.x - 1;\n"
    "  __syncthreads();\n"
    "  if (last && threadIdx.x < 64) y[threadIdx.x] = atomicAdd(&acc[threadIdx.x], 0.f);\n"
    "}\n";

static struct nvrtc_lib *lib;
static int arch;
static struct runner *r; /* one for every case */

/* One row of the summary printed at the end. */
struct row {
  char what[72];
  double ms;
  char result[96];
};
static struct row rows[32];
static int n_rows;

static void row_add(const char *what, double ms, const char *result) {
  if (n_rows == 32) return;
  struct row *w = &rows[n_rows++];
  snprintf(w->what, sizeof w->what, "%s", what);
  w->ms = ms;
  snprintf(w->result, sizeof w->result, "%s", result);
  printf("  %-44s %9.4f ms  %s\n", what, ms, result);
}

/* Compiles src against decl and loads it into the held runner; its key into key. */
static void load(const char *src, const char *decl, uint8_t key[32]) {
  struct ucompile_req req = {.source = src,
                             .name = "user.cu",
                             .entry = "kernel",
                             .declaration = decl,
                             .signature_of = "problem",
                             .arch = arch,
                             .time_limit_s = 60};
  struct ucompile_report *rep;
  char msg[256];
  CHECK_INT_EQ(ucompile_run(lib, &req, &rep, msg, sizeof msg), 0);
  if (!rep->ok) fprintf(stderr, "%s\n", rep->log);
  CHECK(rep->ok);
  image_sha256(rep->image, rep->image_bytes, key);
  struct runner_loaded_msg loaded;
  CHECK_INT_EQ(
      runner_load(r, key, "kernel", rep->image, rep->image_bytes, &loaded, msg, sizeof msg), 0);
  ucompile_report_free(rep);
}

static struct runner_problem_ready_msg problem(const struct runner_problem_msg *m, int want_rc) {
  struct runner_problem_ready_msg ready;
  memset(&ready, 0, sizeof ready);
  struct runner_fault fault;
  char err[256] = "";
  int rc = runner_problem(r, m, DEADLINE_S, &ready, &fault, err, sizeof err);
  if (rc != want_rc) printf("  PROBLEM: %s (%s)\n", err, strerror(-rc));
  CHECK_INT_EQ(rc, want_rc);
  return ready;
}

/* A RUN of the problem's kernel `key`: n launches into run's outputs, poisoned before
 * each; timed with fresh_seed (0: untimed) and/or compare. */
static struct runner_done_msg run(const uint8_t key[32], uint32_t grid, uint32_t block,
                                  uint32_t run_set, uint32_t n, uint64_t fresh_seed,
                                  uint32_t compare) {
  struct runner_run_msg m;
  memset(&m, 0, sizeof m);
  memcpy(m.key, key, 32);
  m.grid[0] = grid, m.grid[1] = m.grid[2] = 1;
  m.block[0] = block, m.block[1] = m.block[2] = 1;
  m.n_launches = n;
  m.poison_each = 1;
  m.timed = fresh_seed != 0;
  m.problem = (struct runner_problem_run){
      .on = 1, .run = run_set, .compare = compare, .fresh_seed = fresh_seed};
  struct runner_done_msg done;
  memset(&done, 0, sizeof done);
  struct runner_fault fault;
  char err[256] = "";
  int rc = runner_run(r, &m, DEADLINE_S, &done, &fault, err, sizeof err);
  if (rc) printf("  RUN: %s (%s)\n", err, strerror(-rc));
  CHECK_INT_EQ(rc, 0);
  return done;
}

static void say_check(const char *what, const struct runner_done_msg *d, double ms) {
  char res[96];
  const struct runner_problem_check *c = &d->problem_check;
  snprintf(res, sizeof res, "compare: %llu of %llu wrong, max abs %.3g rel %.3g",
           (unsigned long long)c->mismatches, (unsigned long long)c->compared, c->max_abs_err,
           c->max_rel_err);
  row_add(what, ms, res);
}

static void say_fresh(const char *what, const struct runner_done_msg *d) {
  char res[96];
  snprintf(res, sizeof res, "fresh: %u checked, bad launch %u what %u #%u (%llu, first %llu)",
           d->fresh_checked, d->bad_launch, d->bad_what, d->bad_input,
           (unsigned long long)d->bad_count, (unsigned long long)d->bad_index);
  row_add(what, d->ms_per_launch, res);
}

static int setup(void) {
  int n_dev = 0;
  if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
    printf("SKIP: no CUDA device answers\n");
    return CHECK_SKIP;
  }
  char why[512];
  CHECK_INT_EQ(nvrtc_lib_open(NULL, &lib, why, sizeof why), 0);
  int major = 0, minor = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  arch = major * 10 + minor;
  const char *exe = getenv("GPULAB_RUNNER");
  struct runner_config cfg = {.exe = exe ? exe : "./gpulab-runner", .mode = RUNNER_MODE_CUDA};
  CHECK_INT_EQ(runner_new(&cfg, &r), 0);
  char err[256];
  CHECK_INT_EQ(runner_acquire(r, err, sizeof err), 0);
  return 0;
}

static void teardown(void) {
  printf("\n%-46s %12s  %s\n", "case", "ms/launch", "result");
  for (int i = 0; i < n_rows; i++)
    printf("%-46s %12.4f  %s\n", rows[i].what, rows[i].ms, rows[i].result);
  runner_release(r);
  runner_free(r);
  nvrtc_lib_free(lib);
}

static struct runner_problem_msg softmax_msg(const uint8_t ref[32]) {
  struct runner_problem_msg m;
  memset(&m, 0, sizeof m);
  m.n_in = 1, m.n_out = 1, m.n_params = 2, m.n_runs = 4;
  m.in[0] = (struct runner_problem_input){RUNNER_DTYPE_FLOAT32, RUNNER_INIT_UNIFORM, -4, 4,
                                          (uint64_t)ROWS * COLS};
  m.out[0] = (struct runner_problem_output){RUNNER_DTYPE_FLOAT32, 0, 1e-6, 1e-4,
                                            (uint64_t)ROWS * COLS};
  m.params[0] = ROWS, m.params[1] = COLS;
  m.seed = 0x5eed0033;
  memcpy(m.ref_key, ref, 32);
  m.ref_grid[0] = ROWS, m.ref_grid[1] = m.ref_grid[2] = 1;
  m.ref_block[0] = 256, m.ref_block[1] = m.ref_block[2] = 1;
  return m;
}

/* Before any PROBLEM and after DETACH a problem's RUN is refused; a PROBLEM whose
 * reference is not loaded too. */
static void test_refusals(void) {
  uint8_t ref[32], other[32];
  load(softmax_ref, softmax_decl, ref);
  struct runner_run_msg m;
  memset(&m, 0, sizeof m);
  memcpy(m.key, ref, 32);
  m.grid[0] = m.grid[1] = m.grid[2] = 1, m.block[0] = m.block[1] = m.block[2] = 1;
  m.n_launches = 1;
  m.problem.on = 1;
  struct runner_done_msg done;
  struct runner_fault fault;
  char err[256];
  CHECK_INT_EQ(runner_run(r, &m, DEADLINE_S, &done, &fault, err, sizeof err), -EINVAL);
  printf("  a RUN before PROBLEM: %s\n", err);
  memset(other, 0xab, sizeof other);
  struct runner_problem_msg pm = softmax_msg(other);
  problem(&pm, -ENOENT);
  pm = softmax_msg(ref);
  pm.n_runs = 0;
  problem(&pm, -EINVAL);
  pm = softmax_msg(ref);
  problem(&pm, 0);
  CHECK_INT_EQ(runner_detach(r), 0); /* frees the problem's buffers, unloads the images */
  load(softmax_ref, softmax_decl, ref);
  CHECK_INT_EQ(runner_run(r, &m, DEADLINE_S, &done, &fault, err, sizeof err), -EINVAL);
  CHECK_INT_EQ(runner_detach(r), 0);
}

/* (a)-(d): the row softmax. */
static void test_softmax(void) {
  uint8_t ref[32], fast[32], wrong[32], writer[32];
  load(softmax_ref, softmax_decl, ref);
  load(softmax_fast, softmax_decl, fast);
  load(softmax_wrong, softmax_decl, wrong);
  load(softmax_writer, softmax_decl, writer);
  struct runner_problem_msg pm = softmax_msg(ref);
  struct runner_problem_ready_msg ready = problem(&pm, 0);
  char res[96];
  snprintf(res, sizeof res, "PROBLEM: agreed %u (%llu differ)", ready.agreed,
           (unsigned long long)ready.differ);
  row_add("(a) softmax reference vs itself", ready.ref_ms, res);
  CHECK_SOFT(ready.agreed == 1, "the reference differs from itself at %llu elements",
             (unsigned long long)ready.differ);

  /* The reference as a run (set 0) and the fast kernel (set 1): compared, then 20 fresh. */
  struct runner_done_msg d = run(ref, ROWS, 256, 0, 1, 0, 1);
  say_check("(a) softmax reference as a run", &d, 0);
  CHECK_SOFT(d.problem_check.mismatches == 0 && d.problem_check.compared == (uint64_t)ROWS * COLS,
             "the reference's run: %llu mismatches",
             (unsigned long long)d.problem_check.mismatches);
  struct runner_done_msg ref_t = run(ref, ROWS, 256, 0, 20, 0x1234, 0);
  say_fresh("(a) softmax reference, 20 fresh timed", &ref_t);
  CHECK_SOFT(ref_t.fresh_checked == 20 && ref_t.bad_launch == 0, "the reference failed launch %u",
             ref_t.bad_launch);
  d = run(fast, ROWS, 256, 1, 3, 0, 1);
  say_check("(b) softmax fast", &d, 0);
  CHECK_SOFT(d.problem_check.mismatches == 0, "fast: %llu mismatches, first %llu: %g vs %g",
             (unsigned long long)d.problem_check.mismatches,
             (unsigned long long)d.problem_check.first_index, d.problem_check.got,
             d.problem_check.want);
  CHECK_SOFT(d.problem_check.max_rel_err < 1e-4, "fast: max rel err %g",
             d.problem_check.max_rel_err);
  struct runner_done_msg fast_t = run(fast, ROWS, 256, 1, 20, 0x4321, 0);
  say_fresh("(b) softmax fast, 20 fresh timed", &fast_t);
  CHECK_SOFT(fast_t.fresh_checked == 20 && fast_t.bad_launch == 0,
             "fast failed fresh launch %u (what %u, %llu elements)", fast_t.bad_launch,
             fast_t.bad_what, (unsigned long long)fast_t.bad_count);
  printf("  softmax: reference %.4f ms, fast %.4f ms (%.1fx)%s\n", ref_t.ms_per_launch,
         fast_t.ms_per_launch, ref_t.ms_per_launch / fast_t.ms_per_launch,
         fast_t.ms_per_launch < ref_t.ms_per_launch ? "" : "  NOTE: not faster");
  /* The job's inputs are the job's again after a fresh request: compare still passes. */
  d = run(fast, ROWS, 256, 1, 1, 0, 1);
  CHECK_SOFT(d.problem_check.mismatches == 0, "fast after a fresh request: %llu mismatches",
             (unsigned long long)d.problem_check.mismatches);

  /* (c) the last column never written: one element a row. */
  d = run(wrong, ROWS, 256, 2, 1, 0, 1);
  say_check("(c) softmax wrong (no last column)", &d, 0);
  CHECK_SOFT(d.problem_check.mismatches == ROWS && d.problem_check.first_index == COLS - 1 &&
                 d.problem_check.first_output == 0 && isnan(d.problem_check.got),
             "wrong: %llu mismatches, first %llu (got %g want %g)",
             (unsigned long long)d.problem_check.mismatches,
             (unsigned long long)d.problem_check.first_index, d.problem_check.got,
             d.problem_check.want);
  d = run(wrong, ROWS, 256, 2, 20, 0x777, 0);
  say_fresh("(c) softmax wrong, fresh timed", &d);
  CHECK_SOFT(d.bad_launch == 1 && d.bad_what == 1 && d.bad_input == 0 && d.bad_count == ROWS &&
                 d.bad_index == COLS - 1,
             "wrong: bad launch %u what %u count %llu index %llu", d.bad_launch, d.bad_what,
             (unsigned long long)d.bad_count, (unsigned long long)d.bad_index);

  /* (d) right outputs, but it zeroes x's row starts. */
  d = run(writer, ROWS, 256, 3, 5, 0x999, 0);
  say_fresh("(d) softmax writes its input, fresh timed", &d);
  CHECK_SOFT(d.bad_launch == 1 && d.bad_what == 2 && d.bad_input == 0 && d.bad_count >= ROWS - 2 &&
                 d.bad_count <= ROWS && d.bad_index <= COLS,
             "writer: bad launch %u what %u count %llu index %llu", d.bad_launch, d.bad_what,
             (unsigned long long)d.bad_count, (unsigned long long)d.bad_index);
  /* The job's inputs were generated again: the fast kernel still passes. */
  d = run(fast, ROWS, 256, 1, 1, 0, 1);
  CHECK_SOFT(d.problem_check.mismatches == 0, "fast after the writer: %llu mismatches",
             (unsigned long long)d.problem_check.mismatches);
  CHECK_INT_EQ(runner_detach(r), 0);
}

/* A profiled RUN of a problem's kernel: one untimed launch under CUPTI on the
 * problem's arguments, its outputs then compared (right: it ran, on the job's inputs). */
static void test_profile(void) {
  uint8_t ref[32], fast[32];
  load(softmax_ref, softmax_decl, ref);
  load(softmax_fast, softmax_decl, fast);
  struct runner_problem_msg pm = softmax_msg(ref);
  problem(&pm, 0);
  struct runner_run_msg m;
  memset(&m, 0, sizeof m);
  memcpy(m.key, fast, 32);
  m.grid[0] = ROWS, m.grid[1] = m.grid[2] = 1;
  m.block[0] = 256, m.block[1] = m.block[2] = 1;
  m.n_launches = 1, m.poison_each = 1, m.profile = 1;
  m.problem = (struct runner_problem_run){.on = 1, .run = 1, .compare = 1};
  struct runner_done_msg d;
  memset(&d, 0, sizeof d);
  struct runner_fault fault;
  char err[256] = "", res[96];
  CHECK_INT_EQ(runner_run(r, &m, DEADLINE_S, &d, &fault, err, sizeof err), 0);
  CHECK(d.profile.requested);
  if (!d.profile.available) printf("  no counters: %s\n", d.profile.reason);
  snprintf(res, sizeof res, "profile: %.40s, %d kernel(s) seen; compare: %llu wrong",
           d.profile.available ? "counters" : d.profile.reason, d.profile.n_kernels_seen,
           (unsigned long long)d.problem_check.mismatches);
  row_add("softmax fast, profiled", 0, res);
  CHECK_SOFT(d.problem_check.mismatches == 0 && d.problem_check.compared == (uint64_t)ROWS * COLS,
             "profiled: %llu mismatches", (unsigned long long)d.problem_check.mismatches);
  CHECK_SOFT(!d.profile.available || d.profile.n_kernels_seen >= 1, "profiled: no kernel seen");
  CHECK_INT_EQ(runner_detach(r), 0);
}

/* A one-input, one-output, one-param (n) problem of dtype t. */
static struct runner_problem_msg simple_msg(const uint8_t ref[32], uint32_t t, uint32_t init,
                                            double a, double b, uint64_t n, uint32_t exact,
                                            double tol) {
  struct runner_problem_msg m;
  memset(&m, 0, sizeof m);
  m.n_in = 1, m.n_out = 1, m.n_params = 1, m.n_runs = 2;
  m.in[0] = (struct runner_problem_input){t, init, a, b, n};
  m.out[0] = (struct runner_problem_output){t, exact, tol, tol, n};
  m.params[0] = (int32_t)n;
  m.seed = 42;
  memcpy(m.ref_key, ref, 32);
  m.ref_grid[0] = (uint32_t)((n + 255) / 256), m.ref_grid[1] = m.ref_grid[2] = 1;
  m.ref_block[0] = 256, m.ref_block[1] = m.ref_block[2] = 1;
  return m;
}

/* A right kernel (set 0) passes compare and fresh launches, a wrong one (set 1) fails
 * both. */
static void right_and_wrong(const char *name, const uint8_t good[32], uint32_t good_grid,
                            const uint8_t bad[32], uint32_t bad_grid) {
  char what[72];
  struct runner_done_msg d = run(good, good_grid, 256, 0, 2, 0, 1);
  snprintf(what, sizeof what, "(e) %s right", name);
  say_check(what, &d, 0);
  CHECK_SOFT(d.problem_check.mismatches == 0, "%s right: %llu mismatches (first %llu: %g vs %g)",
             name, (unsigned long long)d.problem_check.mismatches,
             (unsigned long long)d.problem_check.first_index, d.problem_check.got,
             d.problem_check.want);
  d = run(good, good_grid, 256, 0, 10, 0xabc, 0);
  snprintf(what, sizeof what, "(e) %s right, fresh timed", name);
  say_fresh(what, &d);
  CHECK_SOFT(d.fresh_checked == 10 && d.bad_launch == 0, "%s right: bad launch %u", name,
             d.bad_launch);
  d = run(bad, bad_grid, 256, 1, 2, 0, 1);
  snprintf(what, sizeof what, "(e) %s wrong", name);
  say_check(what, &d, 0);
  CHECK_SOFT(d.problem_check.mismatches > 0, "%s wrong passed its compare", name);
  d = run(bad, bad_grid, 256, 1, 10, 0xdef, 0);
  snprintf(what, sizeof what, "(e) %s wrong, fresh timed", name);
  say_fresh(what, &d);
  CHECK_SOFT(d.bad_launch == 1 && d.bad_what == 1, "%s wrong: bad launch %u what %u", name,
             d.bad_launch, d.bad_what);
}

/* (e) float16 (y = 2x rounded) and int32 (y = x * x, exact). */
static void test_dtypes(void) {
  uint8_t ref[32], good[32], bad[32];
  load(half_ref, half_decl, ref);
  load(half_fast, half_decl, good);
  load(half_wrong, half_decl, bad);
  struct runner_problem_msg pm = simple_msg(ref, RUNNER_DTYPE_FLOAT16, RUNNER_INIT_NORMAL, 0, 1,
                                            N_HALF, 0, 1e-3);
  struct runner_problem_ready_msg ready = problem(&pm, 0);
  CHECK_SOFT(ready.agreed == 1, "float16 reference: %llu differ", (unsigned long long)ready.differ);
  right_and_wrong("float16 2x", good, N_HALF / 2 / 256, bad, N_HALF / 256);
  CHECK_INT_EQ(runner_detach(r), 0);

  load(int_ref, int_decl, ref);
  load(int_good, int_decl, good);
  load(int_wrong, int_decl, bad);
  pm = simple_msg(ref, RUNNER_DTYPE_INT32, RUNNER_INIT_INTEGERS, 0, 9, N_INT, 1, 0);
  ready = problem(&pm, 0);
  CHECK_SOFT(ready.agreed == 1, "int32 reference: %llu differ", (unsigned long long)ready.differ);
  right_and_wrong("int32 x*x", good, 264, bad, (N_INT + 255) / 256);
  CHECK_INT_EQ(runner_detach(r), 0);
}

/* The generator: uniform [-4, 4), normal (1, 2), integers [0, 9] have their ranges and
 * moments (within 0.02; a million samples put the means within 0.002 of them). */
static void test_generator(void) {
  uint8_t ref[32], want[32];
  load(gen_ref, gen_decl, ref);
  load(gen_want, gen_decl, want);
  const uint64_t n = 1u << 20;
  struct runner_problem_msg m;
  memset(&m, 0, sizeof m);
  m.n_in = 3, m.n_out = 1, m.n_params = 1, m.n_runs = 1;
  m.in[0] = (struct runner_problem_input){RUNNER_DTYPE_FLOAT32, RUNNER_INIT_UNIFORM, -4, 4, n};
  m.in[1] = (struct runner_problem_input){RUNNER_DTYPE_FLOAT32, RUNNER_INIT_NORMAL, 1, 2, n};
  m.in[2] = (struct runner_problem_input){RUNNER_DTYPE_INT32, RUNNER_INIT_INTEGERS, 0, 9, n};
  m.out[0] = (struct runner_problem_output){RUNNER_DTYPE_FLOAT32, 0, 0.02, 0, 8};
  m.params[0] = (int32_t)n;
  m.seed = 7;
  memcpy(m.ref_key, ref, 32);
  m.ref_grid[0] = m.ref_grid[1] = m.ref_grid[2] = 1;
  m.ref_block[0] = 256, m.ref_block[1] = m.ref_block[2] = 1;
  struct runner_problem_ready_msg ready = problem(&m, 0);
  CHECK_SOFT(ready.agreed == 1, "the moments' reference differs from itself");
  struct runner_done_msg d = run(want, 1, 32, 0, 1, 0, 1);
  say_check("generator: ranges and moments", &d, 0);
  CHECK_SOFT(d.problem_check.mismatches == 0,
             "generator: moment %llu is %g, should be %g (max abs err %g)",
             (unsigned long long)d.problem_check.first_index, d.problem_check.want,
             d.problem_check.got, d.problem_check.max_abs_err);
  CHECK_INT_EQ(runner_detach(r), 0);
}

/* (f) float atomics: the reference differs from itself bit for bit, and agrees within
 * its tolerance once the problem says it is nondeterministic. */
static void test_nondeterministic(void) {
  uint8_t ref[32];
  load(sum_ref, sum_decl, ref);
  struct runner_problem_msg m = simple_msg(ref, RUNNER_DTYPE_FLOAT32, RUNNER_INIT_UNIFORM, -1000,
                                           1000, N_SUM, 0, 0);
  m.out[0].elems = 64, m.out[0].abs = 64, m.out[0].rel = 1e-3;
  m.scratch_bytes = 64 * sizeof(float) + sizeof(unsigned);
  m.ref_grid[0] = 1024;
  struct runner_problem_ready_msg ready = problem(&m, 0);
  char res[96];
  snprintf(res, sizeof res, "PROBLEM: agreed %u (%llu of 64 differ, first %llu)", ready.agreed,
           (unsigned long long)ready.differ, (unsigned long long)ready.index);
  row_add("(f) atomic sums, nondeterministic 0", ready.ref_ms, res);
  CHECK_SOFT(ready.agreed == 0 && ready.output == 0 && ready.differ > 0 && ready.differ <= 64,
             "atomic sums: agreed %u, %llu differ", ready.agreed, (unsigned long long)ready.differ);
  m.nondeterministic = 1;
  ready = problem(&m, 0);
  snprintf(res, sizeof res, "PROBLEM: agreed %u (%llu of 64 differ)", ready.agreed,
           (unsigned long long)ready.differ);
  row_add("(f) atomic sums, nondeterministic 1", ready.ref_ms, res);
  CHECK_SOFT(ready.agreed == 1, "atomic sums within tolerance: %llu differ",
             (unsigned long long)ready.differ);
  CHECK_INT_EQ(runner_detach(r), 0);
}

static const struct test_case cases[] = {
    TEST(test_refusals),  TEST(test_softmax),          TEST(test_profile), TEST(test_dtypes),
    TEST(test_generator), TEST(test_nondeterministic), TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = setup, .teardown = teardown};
#endif
