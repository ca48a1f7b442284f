/* rsh_lab: checks and times issue 13's reduce, scan and histogram variants beside CUB,
 * one device call (bench/lab/rsh_run.sh). Since the port it runs the product's kernels
 * and launchers (kernels/<name>/<name>.cuh), references and tolerance rules
 * (reduce.c, scan.c, histogram.c); the lab-only candidates are scan's register form at
 * other block sizes (the product's template) and its pipe form (bench/lab/rsh/
 * scan_pipe.cuh). Runs 1 and 2 (bench/lab/run1, run2) ran the lab's own copies, since
 * moved into the product (the branch rshlab has them).
 *
 * Build: the CMake target rsh_lab of a CUDA build tree (sm_90a, not built by default):
 *   cmake --build build --target rsh_lab
 * Run:  rsh_lab reduce|scan|histogram [variant,variant...]   (on the GPU)
 *       rsh_lab selftest                                      (CPU only: the references,
 *                                                              the tolerance rules, the bin rule)
 * Prints a line per check (PASS/FAIL), one ROW line per timing, a pivot table last; exit 0
 * when every check passed, 1 if one failed, 2 on a CUDA error. Inputs: gen.h's uniform
 * [-1, 1) (seed RSH_SEED, stream GEN_X), plus integer-valued ones (trunc(8 x), mean 0:
 * every partial sum stays far below 2^24, so every order is exact) for exact checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "bench/lab/rsh/scan_pipe.cuh"
#include "kernels/core/gen.h"
#include "kernels/histogram/histogram.cuh"
#include "kernels/reduce/reduce.cuh"
#include "kernels/scan/scan.cuh"

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); \
      exit(2);                                                                                  \
    }                                                                                           \
  } while (0)

static const uint64_t RSH_SEED = 20261213;
static const size_t NMAX = (size_t)1 << 26;
static const size_t POOL = (size_t)1 << 28; /* floats: rotation pool for the timings (1 GiB) */
static const size_t GUARD = 64;             /* poisoned words after (and before) every output */
static const double U = 0x1p-24;            /* unit roundoff of float */

enum op { OP_REDUCE, OP_SCAN, OP_HISTOGRAM };
static const char *const kOpNames[] = {"reduce", "scan", "histogram"};
static const char *const kReduceNames[] = {"naive", "shared", "warp", "best", "cub"};
/* scan's lab-only extras, best's two forms at every n: the register form at 128
 * threads a tile (reg128: run 1's best128, best below 2^23), 256 (reg256: run 1's best)
 * and 64; the pipe form (persistent, 256 threads, D = 1, 2, 3 tiles in flight a block;
 * pipe2 was run 2's best from 2^23 on, which lost: best is reg128 at every n now). */
static const char *const kScanNames[] = {"naive", "shared", "best",  "cub",   "reg128",
                                         "reg256", "reg64", "pipe1", "pipe2", "pipe3"};
enum { SCAN_REG128 = SCAN_VARIANTS, SCAN_REG256, SCAN_REG64, SCAN_PIPE1, SCAN_PIPE2, SCAN_PIPE3,
       SCAN_LAB_VARIANTS };
static const char *const kHistNames[] = {"naive", "shared", "best", "cub"};

static int n_variants(int op) {
  return op == OP_REDUCE ? (int)REDUCE_VARIANTS : op == OP_SCAN ? (int)SCAN_LAB_VARIANTS : (int)HISTOGRAM_VARIANTS;
}
static const char *variant_name(int op, int v) {
  return op == OP_REDUCE ? kReduceNames[v] : op == OP_SCAN ? kScanNames[v] : kHistNames[v];
}
static int best_variant(int op) {
  return op == OP_REDUCE ? (int)REDUCE_BEST : op == OP_SCAN ? (int)SCAN_BEST : (int)HISTOGRAM_BEST;
}
static int cub_variant(int op) {
  return op == OP_REDUCE ? (int)REDUCE_CUB : op == OP_SCAN ? (int)SCAN_CUB : (int)HISTOGRAM_CUB;
}

/* ---- host helpers ---- */

template <class F>
static void parallel_for(size_t n, F f) {
  unsigned k = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  if (n < 65536) k = 1;
  std::vector<std::thread> th;
  for (unsigned j = 0; j < k; j++)
    th.emplace_back([=] { f(n * j / k, n * (j + 1) / k); });
  for (auto &t : th) t.join();
}

static float int_value(float x) { return truncf(8.0f * x); } /* -8 (x = -1 only), -7..7 */

static void fill_gen(float *h, size_t n, size_t index0) {
  parallel_for(n, [=](size_t a, size_t b) {
    for (size_t i = a; i < b; i++) h[i] = gen_uniform(RSH_SEED, GEN_X, index0 + i);
  });
}

/* Values every binning rule must agree on: ends of [-1, 1), just outside it, NaN,
 * infinities, signed zeros, subnormals, points on a 2^-16 grid (every power-of-two
 * bin edge), and gen values between. */
static float edge_value(size_t i) {
  const float g = gen_uniform(RSH_SEED + 7, GEN_X, i);
  switch (i % 16) {
  case 0: return -1.0f;
  case 1: return 1.0f;
  case 2: return nextafterf(-1.0f, -2.0f);
  case 3: return 1.0f - 0x1p-23f;
  case 4: return __builtin_nanf("");
  case 5: return INFINITY;
  case 6: return -INFINITY;
  case 7: return floorf(g * 65536.0f) / 65536.0f;
  case 8: return -0.0f;
  case 9: return 0.0f;
  case 10: return 1e-45f;
  case 11: return -1e-45f;
  case 12: return 2.5f * g;
  default: return g;
  }
}

/* ---- device helpers ---- */

__global__ void lab_gen_kernel(float *d, size_t n, size_t index0) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    d[i] = gen_uniform(RSH_SEED, GEN_X, index0 + i);
}

/* The copy ceiling: 16-byte grid-stride copy, four loads in flight (as the product's
 * ceiling_copy_kernel). */
__global__ void lab_copy_kernel(const float4 *__restrict__ src, float4 *__restrict__ dst, size_t n4) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n4; i += stride) dst[i] = src[i];
}

struct Lab {
  cudaStream_t s;
  int sms = 0;
  float *d_pool = nullptr, *d_opool = nullptr; /* inputs (gen indices 0..POOL) / scan outputs */
  float *d_int = nullptr, *d_edge = nullptr, *d_same = nullptr;
  float *d_chk = nullptr;                      /* check output: GUARD + NMAX + 4 + GUARD words */
  void *d_temp = nullptr;
  size_t temp_cap = 0;
  std::vector<float> h_x, h_int, h_edge, h_same;
  std::vector<uint32_t> h_chk;
  int failures = 0, checks = 0;
};
static Lab L;

static const size_t EDGE_N = 1000003, SAME_N = ((size_t)1 << 24) + 5;

static cudaError_t op_temp(int op, int v, size_t n, int bins, size_t *b) {
  if (op == OP_REDUCE) return reduce_temp_bytes(v, n, b);
  if (op == OP_SCAN) return scan_temp_bytes(v >= SCAN_VARIANTS ? (int)SCAN_BEST : v, n, b);
  return histogram_temp_bytes(v, n, bins, b);
}

static cudaError_t op_launch(int op, int v, const float *x, size_t n, int bins, void *out,
                             cudaStream_t s) {
  if (op == OP_REDUCE) return reduce_launch(v, x, n, (float *)out, L.d_temp, L.temp_cap, s);
  if (op == OP_SCAN && v >= SCAN_VARIANTS) {
    cudaError_t e = scan_launch(SCAN_BEST, x, 0, (float *)out, L.d_temp, L.temp_cap, s); /* argument checks */
    if (e != cudaSuccess || n == 0) return e;
    float *y = (float *)out;
    switch (v) {
    case SCAN_REG128: return scan_best_launch<128>(x, n, y, L.d_temp, s);
    case SCAN_REG256: return scan_best_launch<256>(x, n, y, L.d_temp, s);
    case SCAN_REG64: return scan_best_launch<64>(x, n, y, L.d_temp, s);
    case SCAN_PIPE1: return scan_pipe_launch<256, 1>(x, n, y, L.d_temp, s);
    case SCAN_PIPE2: return scan_pipe_launch<256, 2>(x, n, y, L.d_temp, s);
    default: return scan_pipe_launch<256, 3>(x, n, y, L.d_temp, s);
    }
  }
  if (op == OP_SCAN) return scan_launch(v, x, n, (float *)out, L.d_temp, L.temp_cap, s);
  return histogram_launch(v, x, n, bins, (uint32_t *)out, L.d_temp, L.temp_cap, s);
}

static size_t out_words(int op, size_t n, int bins) {
  return op == OP_REDUCE ? 1 : op == OP_SCAN ? n : (size_t)bins;
}

/* ---- checks ---- */

/* The expected answer of one input: reduce (sum, sum |x|), scan (prefix, prefix of |x|),
 * histogram (counts). */
struct Ref {
  double sum = 0, abs_sum = 0;
  std::vector<double> y, absp;
  std::vector<uint32_t> hist;
};

/* y[i] = x[0] + ... + x[i] in FP64 and, when abs_prefix is not NULL, abs_prefix[i] =
 * |x[0]| + ... + |x[i]| (the product's scan check computes them as it compares). */
static void scan_ref_inclusive(const float *x, size_t n, double *y, double *abs_prefix) {
  double s = 0, a = 0;
  for (size_t i = 0; i < n; i++) {
    s += (double)x[i];
    y[i] = s;
    if (abs_prefix) {
      a += fabs((double)x[i]);
      abs_prefix[i] = a;
    }
  }
}

static void make_ref(int op, const float *h, size_t n, int bins, Ref *r) {
  if (op == OP_REDUCE) r->sum = reduce_ref_sum(h, n, &r->abs_sum);
  if (op == OP_SCAN) {
    r->y.resize(n);
    r->absp.resize(n);
    scan_ref_inclusive(h, n, r->y.data(), r->absp.data());
  }
  if (op == OP_HISTOGRAM) {
    r->hist.resize(bins);
    histogram_ref(h, n, bins, r->hist.data());
  }
}

struct Verdict {
  bool pass;
  long long bad;
  long long first_bad;
  double worst; /* max err / tol (exact checks: max |err|) */
  bool guards;
};

/* Compares the check buffer (front guard, out at word off, back guard) with ref. exact:
 * equality (integer inputs, histograms); else the variant's tolerance rule. */
static Verdict compare(int op, int v, size_t n, int bins, size_t off, const Ref &r, bool exact) {
  Verdict vd = {true, 0, -1, 0, true};
  const uint32_t *w = L.h_chk.data();
  const size_t m = out_words(op, n, bins);
  for (size_t i = 0; i < GUARD + off; i++) vd.guards &= w[i] == 0xffffffffu;
  for (size_t i = 0; i < GUARD; i++) vd.guards &= w[GUARD + off + m + i] == 0xffffffffu;
  const uint32_t *o = w + GUARD + off;
  if (op == OP_HISTOGRAM) {
    for (size_t b = 0; b < m; b++)
      if (o[b] != r.hist[b]) {
        if (vd.first_bad < 0) vd.first_bad = (long long)b;
        vd.bad++;
        vd.worst = std::max(vd.worst, fabs((double)o[b] - (double)r.hist[b]));
      }
  } else if (op == OP_REDUCE) {
    float got;
    memcpy(&got, o, 4);
    const double err = fabs((double)got - r.sum);
    const double tol = exact ? 0 : reduce_error_depth(v, n) * U * r.abs_sum * 1.01;
    if (!isfinite(got) || !(err <= tol)) vd.bad = 1, vd.first_bad = 0;
    vd.worst = exact ? err : (tol > 0 ? err / tol : err);
  } else {
    const int sv = v >= SCAN_VARIANTS ? (int)SCAN_BEST : v; /* lab forms: best's tiles */
    std::vector<long long> bad(64, 0), first(64, -1);
    std::vector<double> worst(64, 0);
    const size_t parts = n > 65536 ? 64 : 1;
    std::vector<std::thread> th;
    for (size_t p = 0; p < parts; p++)
      th.emplace_back([&, p] {
        for (size_t i = n * p / parts; i < n * (p + 1) / parts; i++) {
          float got;
          memcpy(&got, o + i, 4);
          const double err = fabs((double)got - r.y[i]);
          const double tol = exact ? 0 : scan_error_depth(sv, n, i) * U * r.absp[i] * 1.01;
          if (!isfinite(got) || !(err <= tol)) {
            if (first[p] < 0) first[p] = (long long)i;
            bad[p]++;
          }
          const double q = exact ? err : (tol > 0 ? err / tol : err);
          if (q > worst[p]) worst[p] = q;
        }
      });
    for (auto &t : th) t.join();
    for (size_t p = 0; p < parts; p++) {
      vd.bad += bad[p];
      if (vd.first_bad < 0 && first[p] >= 0) vd.first_bad = first[p];
      vd.worst = std::max(vd.worst, worst[p]);
    }
  }
  vd.pass = vd.bad == 0 && vd.guards;
  return vd;
}

/* Runs variant v once on x (device) with the output and temp poisoned, the output at
 * word off of the check buffer, copies it back and compares. Prints one line. */
static bool check_one(int op, int v, const float *x, size_t n, int bins, size_t off, const Ref &r,
                      bool exact, const char *what, bool launch_again = true) {
  L.checks++;
  char head[160];
  snprintf(head, sizeof head, "check %-9s %-6s n=%-9zu bins=%-5d %-5s off=%zu", kOpNames[op],
           variant_name(op, v), n, op == OP_HISTOGRAM ? bins : 0, what, off);
  size_t need = 0;
  cudaError_t e = op_temp(op, v, n, bins, &need);
  const size_t m = out_words(op, n, bins);
  if (launch_again && e == cudaSuccess) {
    CK(cudaMemsetAsync(L.d_chk, 0xff, (2 * GUARD + off + m) * 4, L.s));
    if (need) CK(cudaMemsetAsync(L.d_temp, 0xff, need, L.s));
    e = op_launch(op, v, x, n, bins, L.d_chk + GUARD + off, L.s);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    printf("%s: FAIL (launch: %s)\n", head, cudaGetErrorString(e));
    L.failures++;
    return false;
  }
  CK(cudaStreamSynchronize(L.s)); /* an error here is sticky: the program ends */
  CK(cudaMemcpy(L.h_chk.data(), L.d_chk, (2 * GUARD + off + m) * 4, cudaMemcpyDeviceToHost));
  const Verdict vd = compare(op, v, n, bins, off, r, exact);
  if (vd.pass)
    printf("%s: PASS (%s %.3g)\n", head, exact ? "max |err|" : "max err/tol", vd.worst);
  else
    printf("%s: FAIL (%lld bad, first %lld, worst %.3g%s)\n", head, vd.bad, vd.first_bad, vd.worst,
           vd.guards ? "" : ", wrote outside its output");
  if (!vd.pass) L.failures++;
  return vd.pass;
}

/* Every variant at sizes with tails (and 0 and 1), on gen inputs (tolerance) and integer
 * inputs (exact), x and (scan) y misaligned on some. */
static void check_sizes(int op, const std::vector<int> &vs) {
  const size_t sizes[] = {0,    1,    2,    3,     5,     31,      33,        255,       256,
                          257,  1023, 1024, 1025,  4095,  4096,    4097,      65535,     65537,
                          1000003, (size_t)1 << 20, ((size_t)1 << 22) + 1, (size_t)1 << 24,
                          NMAX - 3, NMAX};
  const int hbins[] = {1, 3, 256, 1000, 4096, 12289, 16384, 16385, 65535, 65536};
  for (size_t n : sizes) {
    const bool big = n > ((size_t)1 << 22) + 1;
    for (int mode = 0; mode < 2; mode++) { /* 0: gen values, 1: integer values */
      if (op == OP_HISTOGRAM && mode == 1) continue;
      const float *hx = mode ? L.h_int.data() : L.h_x.data();
      const float *dx = mode ? L.d_int : L.d_pool;
      const std::vector<size_t> offs =
          (n == 5 || n == 4097 || n == 1000003) ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{0};
      for (size_t xo : offs) {
        for (int bi = 0; bi < (op == OP_HISTOGRAM ? (int)(sizeof hbins / sizeof *hbins) : 1); bi++) {
          const int bins = op == OP_HISTOGRAM ? hbins[bi] : 0;
          if (op == OP_HISTOGRAM && big && bins != 1 && bins != 256 && bins != 4096 && bins != 65536)
            continue;
          Ref r;
          make_ref(op, hx + xo, n, bins, &r);
          for (int v : vs) {
            check_one(op, v, dx + xo, n, bins, 0, r, mode == 1 || op == OP_HISTOGRAM,
                      mode ? "int" : "gen");
            if (op == OP_SCAN && xo == 0 && (n == 4097 || n == 1000003))
              check_one(op, v, dx, n, bins, 1, r, mode == 1, mode ? "int" : "gen"); /* y + 1 */
          }
        }
      }
    }
  }
  if (op == OP_HISTOGRAM) { /* edge values, and one value 2^24 + 5 times (the drains) */
    for (int bins : {1, 2, 3, 256, 4096, 16385, 65536}) {
      Ref r;
      make_ref(op, L.h_edge.data(), EDGE_N, bins, &r);
      for (int v : vs) check_one(op, v, L.d_edge, EDGE_N, bins, 0, r, true, "edge");
    }
    for (int bins : {1, 256, 4096, 40000, 65536}) {
      Ref r;
      make_ref(op, L.h_same.data(), SAME_N, bins, &r);
      for (int v : vs) check_one(op, v, L.d_same, SAME_N, bins, 0, r, true, "same");
    }
  }
}

/* Captures launch() (returning a cudaError_t) on L.s into an executable graph; nullptr,
 * with a line saying why, when the capture or the instantiation fails. */
template <class F>
static cudaGraphExec_t capture(F launch, const char *what) {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  CK(cudaStreamBeginCapture(L.s, cudaStreamCaptureModeThreadLocal));
  cudaError_t e = launch();
  const cudaError_t end = cudaStreamEndCapture(L.s, &g);
  if (e == cudaSuccess) e = end;
  if (e == cudaSuccess) e = cudaGraphInstantiate(&ge, g, 0);
  if (g) (void)cudaGraphDestroy(g);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    printf("graph %s: FAIL (capture: %s)\n", what, cudaGetErrorString(e));
    return nullptr;
  }
  return ge;
}

/* Captures one launch of every variant into a graph, replays it, poisons output and
 * temp, replays it again and checks: each replay must initialize what it uses. */
static void check_graphs(int op, const std::vector<int> &vs) {
  const size_t n = ((size_t)1 << 20) + 3;
  for (int bins : {256, 65536}) {
    if (op != OP_HISTOGRAM && bins != 256) continue;
    Ref r;
    make_ref(op, L.h_x.data(), n, bins, &r);
    for (int v : vs) {
      size_t need = 0;
      CK(op_temp(op, v, n, bins, &need));
      char what[96];
      snprintf(what, sizeof what, "%s %s n=%zu bins=%d", kOpNames[op], variant_name(op, v), n, bins);
      cudaGraphExec_t ge = capture([&] { return op_launch(op, v, L.d_pool, n, bins, L.d_chk + GUARD, L.s); }, what);
      if (!ge) {
        L.checks++;
        L.failures++;
        continue;
      }
      CK(cudaGraphLaunch(ge, L.s));
      CK(cudaMemsetAsync(L.d_chk, 0xff, (2 * GUARD + out_words(op, n, bins)) * 4, L.s));
      if (need) CK(cudaMemsetAsync(L.d_temp, 0xff, need, L.s));
      CK(cudaGraphLaunch(ge, L.s));
      check_one(op, v, L.d_pool, n, bins, 0, r, op == OP_HISTOGRAM, "graph", false);
      CK(cudaGraphExecDestroy(ge));
    }
  }
}

/* ---- timing ---- */

struct Stat {
  double med_us = 0, min_us = 0;
  int reps = 0;
};

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t k = v.size();
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

/* launch(k) issues the k-th launch (k picks the rotation slot) and returns its error. 3 warm-ups, an estimate
 * from 3 more, then batches of reps launches (about 1.5 ms a batch) between two events;
 * a sample is batch time / reps. graph: the batch is one captured graph of reps launches. */
template <class F>
static Stat time_it(F launch, bool graph) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  int k = 0;
  for (int i = 0; i < 3; i++) CK(launch(k++));
  CK(cudaEventRecord(a, L.s));
  for (int i = 0; i < 3; i++) CK(launch(k++));
  CK(cudaEventRecord(b, L.s));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  const double t1 = std::max(1e-4, ms / 3.0);
  Stat st;
  st.reps = (int)std::min(200.0, std::max(1.0, ceil(1.5 / t1)));
  const int batches = t1 > 5.0 ? 3 : 7;
  cudaGraphExec_t ge = nullptr;
  if (graph) {
    ge = capture(
        [&] {
          cudaError_t e = cudaSuccess;
          for (int r = 0; r < st.reps && e == cudaSuccess; r++) e = launch(k++);
          return e;
        },
        "timing");
    if (!ge) {
      CK(cudaEventDestroy(a));
      CK(cudaEventDestroy(b));
      return Stat();
    }
    CK(cudaGraphLaunch(ge, L.s));
  }
  std::vector<double> samples;
  for (int bt = 0; bt < batches; bt++) {
    CK(cudaEventRecord(a, L.s));
    if (graph) CK(cudaGraphLaunch(ge, L.s));
    else
      for (int r = 0; r < st.reps; r++) CK(launch(k++));
    CK(cudaEventRecord(b, L.s));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms, a, b));
    samples.push_back(1000.0 * ms / st.reps);
  }
  if (ge) CK(cudaGraphExecDestroy(ge));
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  st.med_us = median(samples);
  st.min_us = *std::min_element(samples.begin(), samples.end());
  return st;
}

static size_t slots_for(size_t n) { return std::max<size_t>(1, std::min<size_t>(64, POOL / n)); }

static double op_bytes(int op, size_t n, int bins) {
  return op == OP_REDUCE ? 4.0 * n : op == OP_SCAN ? 8.0 * n : 4.0 * n + 4.0 * bins;
}

struct Row {
  size_t n;
  int bins;
  int v; /* -1: copy */
  Stat st, graph;
  double gbs;
  bool pass;
};

static Stat time_copy(size_t n) {
  const size_t slots = slots_for(n);
  const int blocks = 4 * L.sms * 2; /* 256 threads: 8 blocks of 256 an SM */
  auto ker = [&](int k) {
    const size_t o = (size_t)(k % slots) * n;
    lab_copy_kernel<<<blocks, 256, 0, L.s>>>(reinterpret_cast<const float4 *>(L.d_pool + o),
                                             reinterpret_cast<float4 *>(L.d_opool + o), n / 4);
    return cudaGetLastError();
  };
  auto mc = [&](int k) {
    const size_t o = (size_t)(k % slots) * n;
    return cudaMemcpyAsync(L.d_opool + o, L.d_pool + o, n * 4, cudaMemcpyDeviceToDevice, L.s);
  };
  Stat a = time_it(ker, false), b = time_it(mc, false);
  printf("copy n=%zu: kernel %.2f us (%.0f GB/s), cudaMemcpyAsync %.2f us (%.0f GB/s)\n", n, a.med_us,
         8.0 * n / a.med_us / 1e3, b.med_us, 8.0 * n / b.med_us / 1e3);
  return a.med_us < b.med_us ? a : b;
}

static void print_resources(int op) {
  struct K {
    const void *f;
    const char *name;
    int block;
    size_t smem;
  };
  std::vector<K> ks;
  if (op == OP_REDUCE) {
    ks = {{(const void *)reduce_naive_kernel<REDUCE_BLOCK>, "reduce_naive_kernel<256>", 256, 0},
          {(const void *)reduce_block_kernel<REDUCE_BLOCK, false>, "reduce_block_kernel<256,tree>", 256, 0},
          {(const void *)reduce_block_kernel<REDUCE_BLOCK, true>, "reduce_block_kernel<256,shuffle>", 256, 0},
          {(const void *)reduce_best_kernel<REDUCE_BLOCK, REDUCE_BEST_UNROLL>, "reduce_best_kernel<256,4>", 256, 0}};
  } else if (op == OP_SCAN) {
    ks = {{(const void *)scan_tile_kernel<SCAN_HILLIS_STEELE>, "scan_tile_kernel<hillis_steele>", 1024, 0},
          {(const void *)scan_tile_kernel<SCAN_BLELLOCH>, "scan_tile_kernel<blelloch>", 512, 0},
          {(const void *)scan_add_kernel<SCAN_ADD_BLOCK>, "scan_add_kernel<256>", 256, 0},
          {(const void *)scan_best_kernel<SCAN_BEST_BLOCK, true>, "scan_best_kernel<128,vec> (best < 2^23, reg128)", 128, 0},
          {(const void *)scan_best_kernel<SCAN_BEST_SCALAR_BLOCK, false>, "scan_best_kernel<256,scalar>", 256, 0},
          {(const void *)scan_best_kernel<256, true>, "scan_best_kernel<256,vec> (reg256)", 256, 0},
          {(const void *)scan_best_kernel<64, true>, "scan_best_kernel<64,vec> (reg64)", 64, 0},
          {(const void *)scan_pipe_kernel<256, 1>, "scan_pipe_kernel<256,1> (pipe1)", 256, scan_pipe_smem<1>()},
          {(const void *)scan_pipe_kernel<256, 2>, "scan_pipe_kernel<256,2> (best >= 2^23, pipe2)", 256, scan_pipe_smem<2>()},
          {(const void *)scan_pipe_kernel<256, 3>, "scan_pipe_kernel<256,3> (pipe3)", 256, scan_pipe_smem<3>()}};
  } else {
    ks = {{(const void *)histogram_naive_kernel<HISTOGRAM_BLOCK>, "histogram_naive_kernel<256>", 256, 0},
          {(const void *)histogram_shared_kernel<HISTOGRAM_BLOCK>, "histogram_shared_kernel<256> (48 KiB)", 256, 49152},
          {(const void *)histogram_best_kernel<false>, "histogram_best_kernel<u32> (64 KiB)", 1024, 65536},
          {(const void *)histogram_best_kernel<true>, "histogram_best_kernel<packed> (65536 bins)", 1024,
           histogram_best_smem(65536)}};
  }
  for (const K &k : ks) {
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, k.f));
    if (k.smem + fa.sharedSizeBytes > 48 * 1024) { /* as the launcher does, before its first launch */
      CK(cudaFuncSetAttribute(k.f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)k.smem));
      CK(cudaFuncSetAttribute(k.f, cudaFuncAttributePreferredSharedMemoryCarveout,
                              (int)cudaSharedmemCarveoutMaxShared));
    }
    int occ = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k.f, k.block, k.smem) != cudaSuccess) {
      (void)cudaGetLastError();
      occ = -1;
    }
    printf("cfg %-50s regs %3d, static smem %5zu B, dyn smem %6zu B, local %zu B, %d blocks/SM (%d warps)\n",
           k.name, fa.numRegs, fa.sharedSizeBytes, k.smem, fa.localSizeBytes, occ, occ * k.block / 32);
  }
}

static void time_op(int op, const std::vector<int> &vs, std::vector<Row> &rows) {
  const size_t sizes[] = {(size_t)1 << 20, (size_t)1 << 22, (size_t)1 << 24, (size_t)1 << 26};
  const std::vector<int> bin_list = op == OP_HISTOGRAM ? std::vector<int>{1, 256, 4096, 65536} : std::vector<int>{0};
  float *d_small = L.d_chk; /* reduce / histogram output of the timed launches */
  for (size_t n : sizes) {
    const Stat cs = time_copy(n);
    rows.push_back({n, 0, -1, cs, Stat(), 8.0 * n / cs.med_us / 1e3, true});
    const size_t slots = slots_for(n);
    for (int bins : bin_list) {
      Ref r;
      make_ref(op, L.h_x.data(), n, bins, &r);
      for (int v : vs) {
        auto launch = [&](int k) {
          const size_t o = (size_t)(k % slots) * n;
          void *out = op == OP_SCAN ? (void *)(L.d_opool + o) : (void *)d_small;
          return op_launch(op, v, L.d_pool + o, n, bins, out, L.s);
        };
        const Stat st = time_it(launch, false);
        Stat gs;
        if (n == ((size_t)1 << 20)) gs = time_it(launch, true);
        const bool pass = check_one(op, v, L.d_pool, n, bins, 0, r, op == OP_HISTOGRAM, "timed");
        const double gbs = op_bytes(op, n, bins) / st.med_us / 1e3;
        rows.push_back({n, bins, v, st, gs, gbs, pass});
        printf("ROW %s %s n=%zu bins=%d median_us=%.2f min_us=%.2f reps=%d GB/s=%.0f pct_copy=%.1f "
               "graph_us=%.2f %s\n",
               kOpNames[op], variant_name(op, v), n, bins, st.med_us, st.min_us, st.reps, gbs,
               100.0 * gbs / (8.0 * n / cs.med_us / 1e3), gs.med_us, pass ? "PASS" : "FAIL");
      }
    }
  }
}

/* The pivot: a line per (n, bins) with copy and every variant's GB/s (% of copy). */
static void print_table(int op, const std::vector<int> &vs, const std::vector<Row> &rows) {
  printf("\n## %s: GB/s (%% of the copy ceiling at the same n; bytes %s); median of batches\n\n",
         kOpNames[op], op == OP_REDUCE ? "4n" : op == OP_SCAN ? "8n" : "4n + 4 bins");
  printf("| n | bins | copy |");
  for (int v : vs) printf(" %s |", variant_name(op, v));
  printf(" best/cub | checks |\n|---|---|---|");
  for (size_t i = 0; i < vs.size(); i++) printf("---|");
  printf("---|---|\n");
  double copy = 0;
  for (size_t i = 0; i < rows.size(); i++) {
    if (rows[i].v == -1) {
      copy = rows[i].gbs;
      continue;
    }
    if (i > 0 && rows[i - 1].v != -1 && rows[i - 1].bins == rows[i].bins && rows[i - 1].n == rows[i].n) continue;
    const size_t n = rows[i].n;
    const int bins = rows[i].bins;
    int lg = 0;
    while (((size_t)1 << lg) < n) lg++;
    printf("| 2^%d | %d | %.0f |", lg, bins, copy);
    double best = 0, cub = 0;
    bool ok = true;
    for (int v : vs) {
      for (const Row &r : rows)
        if (r.n == n && r.bins == bins && r.v == v) {
          printf(" %.0f (%.0f%%) |", r.gbs, 100.0 * r.gbs / copy);
          ok &= r.pass;
          if (v == best_variant(op)) best = r.gbs;
          if (v == cub_variant(op)) cub = r.gbs;
        }
    }
    if (best > 0 && cub > 0) printf(" %.2f |", best / cub);
    else printf(" - |");
    printf(" %s |\n", ok ? "PASS" : "FAIL");
  }
  if (rows.size() && rows.back().n == ((size_t)1 << 26)) {
    printf("\ngraph replay at 2^20 (us per launch):");
    for (const Row &r : rows)
      if (r.v >= 0 && r.n == ((size_t)1 << 20)) {
        if (op == OP_HISTOGRAM) printf(" %s/%d=%.2f", variant_name(op, r.v), r.bins, r.graph.med_us);
        else printf(" %s=%.2f", variant_name(op, r.v), r.graph.med_us);
      }
    printf("\n");
  }
}

/* ---- CPU self-test (no GPU): references, tolerance rules, bin rule ---- */

static int selftest() {
  int bad = 0;
  /* bin rule: the largest gen value lands below `bins` without the clamp, -1 in bin 0,
   * and a power-of-two bin's left edge in that bin, for every bins */
  long long clamp_hits = 0, edge_bad = 0;
  for (int bins = 1; bins <= HISTOGRAM_MAX_BINS; bins++) {
    const float sc = histogram_scale(bins);
    if ((int)((1.0f - 0x1p-23f + 1.0f) * sc) > bins - 1) clamp_hits++;
    if (histogram_bin(-1.0f, bins, sc) != 0 || histogram_bin(1.0f, bins, sc) != -1) edge_bad++;
    if ((bins & (bins - 1)) == 0)
      for (int k = 0; k < bins; k += 1 + bins / 64)
        if (histogram_bin(2.0f * k / bins - 1.0f, bins, sc) != k) edge_bad++;
  }
  printf("selftest bin rule: clamp needed for %lld of 65536 bin counts on gen's grid, %lld edge "
         "misses: %s\n", clamp_hits, edge_bad, clamp_hits || edge_bad ? "FAIL" : "PASS");
  bad += clamp_hits || edge_bad;
  /* histogram reference: counts add up to the values kept */
  std::vector<float> e(EDGE_N);
  for (size_t i = 0; i < EDGE_N; i++) e[i] = edge_value(i);
  std::vector<uint32_t> h(65536);
  long long kept = histogram_ref(e.data(), EDGE_N, 65536, h.data()), sum = 0, inrange = 0;
  for (uint32_t c : h) sum += c;
  for (float v : e) inrange += v >= -1.0f && v < 1.0f;
  printf("selftest histogram_ref: %lld kept of %zu, sum %lld, in range %lld: %s\n", kept, EDGE_N, sum,
         inrange, kept == sum && sum == inrange ? "PASS" : "FAIL");
  bad += !(kept == sum && sum == inrange);
  /* reduce: a float sum in sequential order (chain n - 1) passes naive's rule; integer
   * inputs sum exactly in float; the tolerances at this n, for the notes */
  const size_t n = 1000003;
  std::vector<float> x(n), xi(n);
  fill_gen(x.data(), n, 0);
  for (size_t i = 0; i < n; i++) xi[i] = int_value(x[i]);
  double as = 0, ref = reduce_ref_sum(x.data(), n, &as);
  float f = 0, fi = 0;
  for (size_t i = 0; i < n; i++) f += x[i], fi += xi[i];
  const double tol_naive = reduce_error_depth(REDUCE_NAIVE, n) * U * as * 1.01;
  const bool r_ok = fabs(f - ref) <= tol_naive && (double)fi == reduce_ref_sum(xi.data(), n, nullptr);
  printf("selftest reduce n=%zu: ref %.9g, sum|x| %.6g, sequential float err %.3g; tolerances:",
         n, ref, as, fabs(f - ref));
  for (int v = 0; v < REDUCE_VARIANTS; v++)
    printf(" %s %.3g", kReduceNames[v], reduce_error_depth(v, n) * U * as * 1.01);
  printf("; int sum %.0f exact: %s\n", fi, r_ok ? "PASS" : "FAIL");
  bad += !r_ok;
  /* scan: the FP64 prefix rounded to float passes every rule; a float prefix in sequential
   * order passes naive's; integer prefixes stay below 2^24 */
  std::vector<double> y(n), ap(n), yi(n);
  scan_ref_inclusive(x.data(), n, y.data(), ap.data());
  scan_ref_inclusive(xi.data(), n, yi.data(), nullptr);
  long long over = 0;
  double maxi = 0, seq_worst = 0;
  float run = 0;
  for (size_t i = 0; i < n; i++) {
    run += x[i];
    for (int v = 0; v < SCAN_VARIANTS; v++)
      if (fabs((double)(float)y[i] - y[i]) > scan_error_depth(v, n, i) * U * ap[i] * 1.01) over++;
    const double tol = scan_error_depth(SCAN_NAIVE, n, i) * U * ap[i] * 1.01;
    if (tol > 0) seq_worst = std::max(seq_worst, fabs((double)run - y[i]) / tol);
    maxi = std::max(maxi, fabs(yi[i]));
  }
  const bool s_ok = over == 0 && maxi < 16777216.0;
  printf("selftest scan n=%zu: rounded ref over a tolerance at %lld elements; sequential float "
         "prefix at %.3g of naive's tolerance (informative); at the last element tolerances",
         n, over, seq_worst);
  for (int v = 0; v < SCAN_VARIANTS; v++)
    printf(" %s %.3g", kScanNames[v], scan_error_depth(v, n, n - 1) * U * ap[n - 1] * 1.01);
  printf(" (|y| %.3g); max |int prefix| %.0f: %s\n", fabs(y[n - 1]), maxi, s_ok ? "PASS" : "FAIL");
  bad += !s_ok;
  return bad ? 1 : 0;
}

/* ---- main ---- */

static void setup() {
  CK(cudaSetDevice(0));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  L.sms = p.multiProcessorCount;
  printf("device: %s, sm_%d%d, %d SMs, L2 %d MiB, %zu KiB shared/SM, %zu KiB opt-in/block\n", p.name,
         p.major, p.minor, p.multiProcessorCount, p.l2CacheSize >> 20, p.sharedMemPerMultiprocessor >> 10,
         p.sharedMemPerBlockOptin >> 10);
  CK(cudaStreamCreateWithFlags(&L.s, cudaStreamNonBlocking));
  CK(cudaMalloc(&L.d_pool, (POOL + 16) * 4));
  CK(cudaMalloc(&L.d_opool, (POOL + 16) * 4));
  CK(cudaMalloc(&L.d_int, (NMAX + 16) * 4));
  CK(cudaMalloc(&L.d_edge, EDGE_N * 4));
  CK(cudaMalloc(&L.d_same, SAME_N * 4));
  CK(cudaMalloc(&L.d_chk, (2 * GUARD + NMAX + 16) * 4));
  lab_gen_kernel<<<4 * L.sms * 8, 256, 0, L.s>>>(L.d_pool, POOL + 16, 0);
  CK(cudaGetLastError());
  L.h_x.resize(NMAX + 16);
  L.h_int.resize(NMAX + 16);
  L.h_edge.resize(EDGE_N);
  L.h_same.assign(SAME_N, 0.3f);
  L.h_chk.resize(2 * GUARD + NMAX + 16);
  fill_gen(L.h_x.data(), NMAX + 16, 0);
  for (size_t i = 0; i < NMAX + 16; i++) L.h_int[i] = int_value(L.h_x[i]);
  for (size_t i = 0; i < EDGE_N; i++) L.h_edge[i] = edge_value(i);
  CK(cudaMemcpy(L.d_int, L.h_int.data(), (NMAX + 16) * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(L.d_edge, L.h_edge.data(), EDGE_N * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(L.d_same, L.h_same.data(), SAME_N * 4, cudaMemcpyHostToDevice));
  CK(cudaStreamSynchronize(L.s));
  std::vector<float> back(NMAX + 16);
  CK(cudaMemcpy(back.data(), L.d_pool, (NMAX + 16) * 4, cudaMemcpyDeviceToHost));
  const bool same = memcmp(back.data(), L.h_x.data(), (NMAX + 16) * 4) == 0;
  printf("inputs: gen on the GPU %s gen on the CPU (first %zu values)\n", same ? "==" : "!=", NMAX + 16);
  if (!same) L.failures++;
}

/* The largest temp any variant of op needs at any size this lab uses. */
static void alloc_temp(int op) {
  size_t cap = 0;
  for (int v = 0; v < n_variants(op); v++)
    for (size_t n : {NMAX, (size_t)1 << 24, SAME_N, EDGE_N})
      for (int bins : {1, 256, 4096, 16385, 40000, 65536}) {
        size_t b = 0;
        CK(op_temp(op, v, n, op == OP_HISTOGRAM ? bins : 1, &b));
        cap = std::max(cap, b);
      }
  L.temp_cap = cap;
  CK(cudaMalloc(&L.d_temp, std::max<size_t>(cap, 256)));
  printf("temp: %zu bytes at most (", cap);
  for (int v = 0; v < n_variants(op); v++) {
    size_t b = 0;
    CK(op_temp(op, v, NMAX, 256, &b));
    printf("%s%s %zu", v ? ", " : "", variant_name(op, v), b);
  }
  printf(" at n = 2^26%s)\n", op == OP_HISTOGRAM ? ", 256 bins" : "");
}

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) {
    fprintf(stderr, "usage: rsh_lab reduce|scan|histogram|selftest [variant,...]\n");
    return 2;
  }
  if (!strcmp(argv[1], "selftest")) return selftest();
  int op = -1;
  for (int i = 0; i < 3; i++)
    if (!strcmp(argv[1], kOpNames[i])) op = i;
  if (op < 0) {
    fprintf(stderr, "unknown op %s\n", argv[1]);
    return 2;
  }
  std::vector<int> vs; /* argv[2]: variant names, comma-separated, matched whole */
  for (int v = 0; v < n_variants(op); v++) {
    bool want = argc < 3;
    for (const char *p = argc < 3 ? "" : argv[2]; !want && *p;) {
      const char *q = strchr(p, ',');
      const size_t len = q ? (size_t)(q - p) : strlen(p);
      want = len == strlen(variant_name(op, v)) && !strncmp(p, variant_name(op, v), len);
      p += len + (q ? 1 : 0);
    }
    if (want) vs.push_back(v);
  }
  if (vs.empty()) {
    fprintf(stderr, "no variant of %s in %s\n", argv[1], argv[2]);
    return 2;
  }
  setup();
  alloc_temp(op);
  print_resources(op);
  check_sizes(op, vs);
  check_graphs(op, vs);
  std::vector<Row> rows;
  time_op(op, vs, rows);
  print_table(op, vs, rows);
  printf("\n%s: %d checks, %d failed\n", kOpNames[op], L.checks, L.failures);
  return L.failures ? 1 : 0;
}
