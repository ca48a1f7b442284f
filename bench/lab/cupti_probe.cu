/* Can CUPTI's Range Profiler (the CUDA 12.6+ API: cupti_range_profiler.h with
 * cupti_profiler_host.h and cupti_target.h) read gpulab's metrics (the table of
 * kernels/core/profile.c) in this process, with kernel replay, and what do they read for
 * the lecture's kernels? One run on the GPU machine answers both and checks issue 32's
 * done-when numbers. Not a test; bench/lab/cupti_probe.sh runs it and keeps the log.
 *   cupti_probe                   everything; exit 0: all checks pass, 1: a check or a
 *                                 call failed, 77: no GPU, or no counters for this user
 *   cupti_probe --replay user     the same with user replay, the L2 flushed before each
 *                                 pass (the fallback if kernel replay misreads DRAM bytes)
 *   cupti_probe --host-only CHIP  the host API alone (no GPU): which metrics it accepts
 *                                 for CHIP (e.g. GH100) and in how many passes */
#include <cuda.h> /* CUcontext and CUresult only: the driver comes through the runtime */
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_version.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>
#include <vector>

#include "kernels/core/profile.h"

enum { PROBE_OK = 0, PROBE_FAIL = 1, PROBE_SKIP = 77 };
enum { MAX_TERMS = 4, MAX_RANGES = 8, MAX_ROUNDS = 64 };

/* ---- errors: every call named, the driver's refusal of counters told apart ---- */

static void explain_privileges(void) {
  printf(
      "cupti_probe: the driver forbids GPU performance counters to this user "
      "(ERR_NVGPUCTRPERM).\n"
      "  fix: run as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0\n"
      "  (e.g. 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in\n"
      "  /etc/modprobe.d/nvidia-profiling.conf, then reload the module or reboot);\n"
      "  https://developer.nvidia.com/ERR_NVGPUCTRPERM\n");
}

/* Prints which CUPTI call failed and why; returns the exit status it calls for: 77 where
 * the driver forbids counters to this user, else 1. */
static int cupti_failed(const char *call, CUptiResult r) {
  const char *s = NULL;
  const char *msg = NULL; /* CUPTI's longer explanation, where it has one */
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI result";
  if (cuptiGetErrorMessage(r, &msg) != CUPTI_SUCCESS || !msg) msg = "";
  printf("cupti_probe: %s failed: %s (%d) %s\n", call, s, (int)r, msg);
  fflush(stdout);
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
      r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
    explain_privileges();
    return PROBE_SKIP;
  }
  return PROBE_FAIL;
}

static int cuda_failed(const char *call, cudaError_t e) {
  printf("cupti_probe: %s failed: %s (%s)\n", call, cudaGetErrorString(e), cudaGetErrorName(e));
  fflush(stdout);
  return PROBE_FAIL;
}

#define CUPTI_TRY(call)                                      \
  do {                                                       \
    CUptiResult r_ = (call);                                 \
    if (r_ != CUPTI_SUCCESS) return cupti_failed(#call, r_); \
  } while (0)
/* A CUPTI params struct, zeroed, its size set (the API's versioning). */
#define CUPTI_PARAMS(type, var) \
  type var = {};                \
  var.structSize = type##_STRUCT_SIZE
#define CUDA_TRY(call)                                    \
  do {                                                    \
    cudaError_t e_ = (call);                              \
    if (e_ != cudaSuccess) return cuda_failed(#call, e_); \
  } while (0)

/* ---- the lecture's kernels (mappings as in kernels/transpose and kernels/gemm) ---- */

enum { TILE = 32, GEMM_TILE = 16, N_TRANSPOSE = 4096, N_COPY = 8192, N_GEMM = 1024 };

/* A is m x n, B = A^T is n x m. Block 32x32, thread (x, y) reads A[y][x] and writes
 * B[x][y]: a warp reads 128 contiguous bytes (4 sectors) and writes 32 floats m apart
 * (32 sectors). Sizes are multiples of 32 here, so no bounds checks. */
__global__ void transpose_naive_kernel(const float *a, float *b, int m, int n) {
  size_t x = (size_t)blockIdx.x * TILE + threadIdx.x, y = (size_t)blockIdx.y * TILE + threadIdx.y;
  b[x * m + y] = a[y * n + x];
}

/* The lecture's tiled<S>: block 32x32 stores a tile of A by rows, then writes B by rows
 * reading the tile by columns. Row stride S = 32 puts that column in one bank (32-way
 * conflict); S = 33 spreads it over all 32 banks. */
template <int S>
__global__ void transpose_tiled_kernel(const float *a, float *b, int m, int n) {
  __shared__ float tile[TILE][S];
  int tx = threadIdx.x, ty = threadIdx.y;
  tile[ty][tx] = a[((size_t)blockIdx.y * TILE + ty) * n + (size_t)blockIdx.x * TILE + tx];
  __syncthreads();
  b[((size_t)blockIdx.x * TILE + ty) * m + (size_t)blockIdx.y * TILE + tx] = tile[tx][ty];
}

/* B[y][x] = A[y][x], block 32x32: both sides coalesced; reads 4mn bytes once. */
__global__ void copy_kernel(const float *a, float *b, int m, int n) {
  size_t x = (size_t)blockIdx.x * TILE + threadIdx.x, y = (size_t)blockIdx.y * TILE + threadIdx.y;
  b[y * n + x] = a[y * n + x];
}

/* C = A B, all n x n row-major. Block 16x16 owns a 16x16 tile of C; per 16-wide slice
 * of K each thread stages one A and one B element in shared, then 16 fmaf: n^3 FFMA in
 * all, 2 n^3 flops. n is a multiple of 16 here. */
__global__ void gemm_tiled_kernel(const float *A, const float *B, float *C, int n) {
  __shared__ float As[GEMM_TILE][GEMM_TILE], Bs[GEMM_TILE][GEMM_TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  size_t row = (size_t)blockIdx.y * GEMM_TILE + ty, col = (size_t)blockIdx.x * GEMM_TILE + tx;
  float acc = 0;
  for (int base = 0; base < n; base += GEMM_TILE) {
    As[ty][tx] = A[row * n + base + tx];
    Bs[ty][tx] = B[(size_t)(base + ty) * n + col];
    __syncthreads();
    for (int k = 0; k < GEMM_TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads();
  }
  C[row * n + col] = acc;
}

/* Launchers: a and b each hold N_COPY^2 floats (the gemm takes A and B from a, C in b). */
static void naive_launch(float *a, float *b, cudaStream_t s) {
  transpose_naive_kernel<<<dim3(N_TRANSPOSE / TILE, N_TRANSPOSE / TILE), dim3(TILE, TILE), 0, s>>>(
      a, b, N_TRANSPOSE, N_TRANSPOSE);
}
static void shared32_launch(float *a, float *b, cudaStream_t s) {
  transpose_tiled_kernel<32>
      <<<dim3(N_TRANSPOSE / TILE, N_TRANSPOSE / TILE), dim3(TILE, TILE), 0, s>>>(a, b, N_TRANSPOSE,
                                                                                 N_TRANSPOSE);
}
static void padded33_launch(float *a, float *b, cudaStream_t s) {
  transpose_tiled_kernel<33>
      <<<dim3(N_TRANSPOSE / TILE, N_TRANSPOSE / TILE), dim3(TILE, TILE), 0, s>>>(a, b, N_TRANSPOSE,
                                                                                 N_TRANSPOSE);
}
static void copy_launch(float *a, float *b, cudaStream_t s) {
  copy_kernel<<<dim3(N_COPY / TILE, N_COPY / TILE), dim3(TILE, TILE), 0, s>>>(a, b, N_COPY, N_COPY);
}
static void gemm_launch(float *a, float *b, cudaStream_t s) {
  gemm_tiled_kernel<<<dim3(N_GEMM / GEMM_TILE, N_GEMM / GEMM_TILE), dim3(GEMM_TILE, GEMM_TILE), 0,
                      s>>>(a, a + (size_t)N_GEMM * N_GEMM, b, N_GEMM);
}

enum { K_NAIVE, K_SHARED32, K_PADDED33, K_COPY, K_GEMM, K_COUNT };
static const struct {
  const char *name;
  void (*launch)(float *a, float *b, cudaStream_t s);
} kernel_cases[K_COUNT] = {
    /* in enum order */
    {"naive4096", naive_launch},        {"shared32_4096", shared32_launch},
    {"padded33_4096", padded33_launch}, {"copy8192", copy_launch},
    {"gemm_tiled1024", gemm_launch},
};

/* ---- the metrics: profile.c's table, its formulas split into CUPTI's metrics ---- */

struct probe_row { /* one entry of exp_profile_metrics */
  int n_terms;     /* value = sum coef[i] * metric[term[i]] */
  int term[MAX_TERMS];
  double coef[MAX_TERMS];
};

struct session_info { /* what one kernel's session did, printed on one line */
  int n_rounds;
  size_t n_ranges, n_dropped;
  char range_names[96];
};

struct probe {
  bool host_only, user_replay;
  std::string chip;
  std::vector<uint8_t> avail; /* counter availability image; empty in host-only mode */
  CUpti_Profiler_Host_Object *host;
  std::vector<std::string> metrics; /* every distinct CUPTI metric of the table */
  std::vector<int> slot;            /* metric -> index in names, -1: refused */
  std::vector<const char *> names;  /* the accepted ones (into metrics, grown no more) */
  struct probe_row rows[EXP_METRIC_COUNT];
  std::vector<uint8_t> config;
  size_t n_passes;
  CUcontext ctx;
  cudaStream_t stream;
  float *d_a, *d_b, *d_flush;
  size_t flush_bytes;
  double value[K_COUNT][EXP_METRIC_COUNT]; /* NaN: not read */
};

static int metric_index(struct probe *p, const std::string &name) {
  for (size_t i = 0; i < p->metrics.size(); i++)
    if (p->metrics[i] == name) return (int)i;
  p->metrics.push_back(name);
  return (int)p->metrics.size() - 1;
}

/* Splits "a + b + 2 * c" (profile.c's formula form) into terms; a plain name is one term
 * with coefficient 1. Returns 0, or -1 on a formula it cannot read. */
static int parse_row(struct probe *p, const char *formula, struct probe_row *row) {
  std::string f(formula);
  row->n_terms = 0;
  size_t at = 0;
  while (at <= f.size()) {
    size_t plus = f.find('+', at);
    std::string term = f.substr(at, plus == std::string::npos ? std::string::npos : plus - at);
    double coef = 1;
    size_t star = term.find('*');
    if (star != std::string::npos) {
      coef = atof(term.substr(0, star).c_str());
      term = term.substr(star + 1);
    }
    size_t b = term.find_first_not_of(" "), e = term.find_last_not_of(" ");
    if (b == std::string::npos || row->n_terms == MAX_TERMS || coef == 0) return -1;
    row->coef[row->n_terms] = coef;
    row->term[row->n_terms++] = metric_index(p, term.substr(b, e - b + 1));
    if (plus == std::string::npos) break;
    at = plus + 1;
  }
  return 0;
}

static int parse_table(struct probe *p) {
  for (int i = 0; i < EXP_METRIC_COUNT; i++) {
    if (parse_row(p, exp_profile_metrics[i].nvidia, &p->rows[i]) != 0) {
      printf("cupti_probe: cannot read the formula of %s: %s\n", exp_profile_metrics[i].name,
             exp_profile_metrics[i].nvidia);
      return PROBE_FAIL;
    }
  }
  return PROBE_OK;
}

/* ---- the host API: chip, metrics accepted one by one, the config image ---- */

static int host_new(const struct probe *p, CUpti_Profiler_Host_Object **out) {
  CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params, ip);
  ip.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  ip.pChipName = p->chip.c_str();
  ip.pCounterAvailabilityImage = p->avail.empty() ? NULL : p->avail.data();
  CUPTI_TRY(cuptiProfilerHostInitialize(&ip));
  *out = ip.pHostObject;
  return PROBE_OK;
}

static int host_free(CUpti_Profiler_Host_Object *host) {
  if (!host) return PROBE_OK;
  CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params, dp);
  dp.pHostObject = host;
  CUPTI_TRY(cuptiProfilerHostDeinitialize(&dp));
  return PROBE_OK;
}

/* Whether the host API takes one metric: added alone to a host object of its own, so
 * that a refusal leaves the real one clean. Prints the verdict and the metric's unit. */
static int try_metric(const struct probe *p, const char *name, bool *accepted) {
  CUpti_Profiler_Host_Object *h = NULL;
  int rc = host_new(p, &h);
  if (rc != PROBE_OK) return rc;
  CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, ap);
  ap.pHostObject = h;
  ap.ppMetricNames = &name;
  ap.numMetrics = 1;
  CUptiResult r = cuptiProfilerHostConfigAddMetrics(&ap);
  *accepted = r == CUPTI_SUCCESS;
  const char *note = "";
  if (!*accepted) {
    if (cuptiGetResultString(r, &note) != CUPTI_SUCCESS) note = "?";
  } else {
    CUPTI_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params, mp);
    mp.pHostObject = h;
    mp.pMetricName = name;
    if (cuptiProfilerHostGetMetricProperties(&mp) == CUPTI_SUCCESS && mp.pDimUnit)
      note = mp.pDimUnit;
  }
  printf("  %-9s %-62s %s\n", *accepted ? "accepted" : "REFUSED", name, note);
  return host_free(h);
}

static int add_metrics(struct probe *p) {
  printf("\nmetrics (kernels/core/profile.c's table, formulas split):\n");
  p->slot.assign(p->metrics.size(), -1);
  for (size_t i = 0; i < p->metrics.size(); i++) {
    bool ok = false;
    int rc = try_metric(p, p->metrics[i].c_str(), &ok);
    if (rc != PROBE_OK) return rc;
    if (ok) {
      p->slot[i] = (int)p->names.size();
      p->names.push_back(p->metrics[i].c_str());
    }
  }
  printf("  %zu of %zu accepted\n", p->names.size(), p->metrics.size());
  return p->names.empty() ? PROBE_FAIL : PROBE_OK;
}

static int build_config(struct probe *p) {
  int rc = host_new(p, &p->host);
  if (rc != PROBE_OK) return rc;
  CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, ap);
  ap.pHostObject = p->host;
  ap.ppMetricNames = p->names.data();
  ap.numMetrics = p->names.size();
  CUPTI_TRY(cuptiProfilerHostConfigAddMetrics(&ap));
  CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params, sp);
  sp.pHostObject = p->host;
  CUPTI_TRY(cuptiProfilerHostGetConfigImageSize(&sp));
  p->config.assign(sp.configImageSize, 0);
  CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params, gp);
  gp.pHostObject = p->host;
  gp.configImageSize = p->config.size();
  gp.pConfigImage = p->config.data();
  CUPTI_TRY(cuptiProfilerHostGetConfigImage(&gp));
  CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params, np);
  np.configImageSize = p->config.size();
  np.pConfigImage = p->config.data();
  CUPTI_TRY(cuptiProfilerHostGetNumOfPasses(&np));
  p->n_passes = np.numOfPasses;
  printf("config image: %zu bytes, %zu metrics, %zu pass(es) per kernel\n", p->config.size(),
         p->names.size(), p->n_passes);
  return PROBE_OK;
}

static void print_supported_chips(void) {
  CUPTI_PARAMS(CUpti_Profiler_Host_GetSupportedChips_Params, cp);
  CUptiResult r = cuptiProfilerHostGetSupportedChips(&cp);
  if (r != CUPTI_SUCCESS) {
    cupti_failed("cuptiProfilerHostGetSupportedChips(&cp)", r);
    return;
  }
  printf("chips this CUPTI's host API knows:");
  for (size_t i = 0; i < cp.numChips; i++) printf(" %s", cp.ppChipNames[i]);
  printf("\n");
}

/* ---- the device: context, chip, counter availability ---- */

typedef CUresult (*cu_ctx_get_current_fn)(CUcontext *);

/* The current context through the runtime's driver entry point (no libcuda link, so the
 * probe starts, and says so, where no driver is). */
static int current_context(CUcontext *ctx) {
  void *fn = NULL;
  cudaDriverEntryPointQueryResult q;
  CUDA_TRY(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || !fn) {
    printf("cupti_probe: the driver has no cuCtxGetCurrent (query result %d)\n", (int)q);
    return PROBE_FAIL;
  }
  CUresult r = ((cu_ctx_get_current_fn)fn)(ctx);
  if (r != CUDA_SUCCESS || !*ctx) {
    printf("cupti_probe: cuCtxGetCurrent failed (%d) or gave no context\n", (int)r);
    return PROBE_FAIL;
  }
  return PROBE_OK;
}

static int open_device(struct probe *p) {
  int n = 0, driver = 0, runtime = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    printf("cupti_probe: no CUDA device answers (cudaGetDeviceCount: %s); nothing to probe\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return PROBE_SKIP;
  }
  CUDA_TRY(cudaSetDevice(0));
  CUDA_TRY(cudaFree(0)); /* the primary context, now */
  cudaDeviceProp prop;
  CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
  CUDA_TRY(cudaDriverGetVersion(&driver));
  CUDA_TRY(cudaRuntimeGetVersion(&runtime));
  uint32_t cupti_version = 0;
  CUPTI_TRY(cuptiGetVersion(&cupti_version));
  printf("device 0: %s, sm_%d%d, %d SMs, %.0f MiB L2; driver API %d, runtime %d, CUPTI API %u\n",
         prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize / 1048576.0,
         driver, runtime, cupti_version);
  int rc = current_context(&p->ctx);
  if (rc == PROBE_OK) printf("context: %p\n", (void *)p->ctx);
  return rc;
}

/* The counters this context offers, which the host API filters metrics by. Without
 * them (a failure other than privileges) the probe goes on with the chip's whole list. */
static int counter_availability(struct probe *p) {
  CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params, ap);
  ap.ctx = p->ctx;
  CUptiResult r = cuptiProfilerGetCounterAvailability(&ap);
  if (r == CUPTI_SUCCESS) {
    p->avail.assign(ap.counterAvailabilityImageSize, 0);
    ap.pCounterAvailabilityImage = p->avail.data();
    r = cuptiProfilerGetCounterAvailability(&ap);
  }
  if (r != CUPTI_SUCCESS) {
    p->avail.clear();
    int rc = cupti_failed("cuptiProfilerGetCounterAvailability(&ap) (going on without it)", r);
    return rc == PROBE_SKIP ? rc : PROBE_OK;
  }
  printf("counter availability image: %zu bytes\n", p->avail.size());
  return PROBE_OK;
}

/* The profiler's initialization (first, as NVIDIA's samples order it: the probe that
 * asked for the chip's name first crashed on an H100 after its device line, before any
 * later one; that this was the cause is a guess not yet run), the chip's name, whether
 * the device supports range profiling (said, not enforced: Enable's error is the precise
 * one), the counters. */
static int open_profiler(struct probe *p) {
  CUPTI_PARAMS(CUpti_Profiler_Initialize_Params, ip);
  CUPTI_TRY(cuptiProfilerInitialize(&ip));
  printf("profiler initialized\n");
  CUPTI_PARAMS(CUpti_Device_GetChipName_Params, cp);
  cp.deviceIndex = 0;
  CUPTI_TRY(cuptiDeviceGetChipName(&cp));
  p->chip = cp.pChipName;
  printf("chip: %s\n", p->chip.c_str());
  CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params, sp);
  sp.cuDevice = 0;
  sp.api = CUPTI_PROFILER_RANGE_PROFILING;
  CUptiResult r = cuptiProfilerDeviceSupported(&sp);
  if (r != CUPTI_SUCCESS)
    cupti_failed("cuptiProfilerDeviceSupported(&sp) (going on)", r);
  else
    printf(
        "range profiling supported: %s (architecture %d, vGPU %d, confidential compute %d, "
        "CMP %d, WSL %d; 3 = supported, 2 = disabled, 1 = unsupported)\n",
        sp.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? "yes" : "NO",
        (int)sp.architecture, (int)sp.vGpu, (int)sp.confidentialCompute, (int)sp.cmp, (int)sp.wsl);
  return counter_availability(p);
}

/* ---- one kernel under the range profiler ---- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Start, launch, Stop until CUPTI says every pass is submitted (kernel replay: once, the
 * passes inside the launch; user replay: once per pass, the L2 flushed before each). */
static int run_rounds(struct probe *p, CUpti_RangeProfiler_Object *obj, int k, int *n_rounds) {
  for (*n_rounds = 0; *n_rounds < MAX_ROUNDS;) {
    if (p->user_replay) {
      CUDA_TRY(cudaMemsetAsync(p->d_flush, *n_rounds & 0xff, p->flush_bytes, p->stream));
      CUDA_TRY(cudaStreamSynchronize(p->stream));
    }
    CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params, sp);
    sp.pRangeProfilerObject = obj;
    CUPTI_TRY(cuptiRangeProfilerStart(&sp));
    kernel_cases[k].launch(p->d_a, p->d_b, p->stream);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaStreamSynchronize(p->stream));
    CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params, tp);
    tp.pRangeProfilerObject = obj;
    CUPTI_TRY(cuptiRangeProfilerStop(&tp));
    ++*n_rounds;
    if (tp.isAllPassSubmitted) return PROBE_OK;
  }
  printf("cupti_probe: %s: passes not all submitted after %d rounds\n", kernel_cases[k].name,
         MAX_ROUNDS);
  return PROBE_FAIL;
}

/* Decodes the session's counters and evaluates its first range into out[] (by names). */
static int read_ranges(struct probe *p, CUpti_RangeProfiler_Object *obj,
                       std::vector<uint8_t> &image, struct session_info *si, double *out) {
  CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params, dp);
  dp.pRangeProfilerObject = obj;
  CUPTI_TRY(cuptiRangeProfilerDecodeData(&dp));
  CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params, ip);
  ip.pCounterDataImage = image.data();
  ip.counterDataImageSize = image.size();
  CUPTI_TRY(cuptiRangeProfilerGetCounterDataInfo(&ip));
  si->n_ranges = ip.numTotalRanges;
  si->n_dropped = dp.numOfRangeDropped;
  for (size_t r = 0; r < ip.numTotalRanges; r++) {
    CUPTI_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params, rp);
    rp.pCounterDataImage = image.data();
    rp.counterDataImageSize = image.size();
    rp.rangeIndex = r;
    rp.rangeDelimiter = "/";
    CUPTI_TRY(cuptiRangeProfilerCounterDataGetRangeInfo(&rp));
    size_t used = strlen(si->range_names);
    snprintf(si->range_names + used, sizeof si->range_names - used, "%s'%s'", r ? "," : "",
             rp.rangeName ? rp.rangeName : "");
  }
  if (ip.numTotalRanges == 0) {
    printf("cupti_probe: the session decoded no range\n");
    return PROBE_FAIL;
  }
  CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params, ep);
  ep.pHostObject = p->host;
  ep.pCounterDataImage = image.data();
  ep.counterDataImageSize = image.size();
  ep.rangeIndex = 0;
  ep.ppMetricNames = p->names.data();
  ep.numMetrics = p->names.size();
  ep.pMetricValues = out;
  CUPTI_TRY(cuptiProfilerHostEvaluateToGpuValues(&ep));
  return PROBE_OK;
}

/* The counter data image sized for this config, SetConfig, the rounds, the reading. */
static int profile_session(struct probe *p, CUpti_RangeProfiler_Object *obj, int k,
                           struct session_info *si, double *out) {
  CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params, sp);
  sp.pRangeProfilerObject = obj;
  sp.pMetricNames = p->names.data();
  sp.numMetrics = p->names.size();
  sp.maxNumOfRanges = MAX_RANGES;
  sp.maxNumRangeTreeNodes = MAX_RANGES;
  CUPTI_TRY(cuptiRangeProfilerGetCounterDataSize(&sp));
  std::vector<uint8_t> image(sp.counterDataSize, 0);
  CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params, ip);
  ip.pRangeProfilerObject = obj;
  ip.counterDataSize = image.size();
  ip.pCounterData = image.data();
  CUPTI_TRY(cuptiRangeProfilerCounterDataImageInitialize(&ip));
  CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params, cp);
  cp.pRangeProfilerObject = obj;
  cp.configSize = p->config.size();
  cp.pConfig = p->config.data();
  cp.counterDataImageSize = image.size();
  cp.pCounterDataImage = image.data();
  cp.range = CUPTI_AutoRange; /* each kernel its own range */
  cp.replayMode = p->user_replay ? CUPTI_UserReplay : CUPTI_KernelReplay;
  cp.maxRangesPerPass = MAX_RANGES;
  cp.numNestingLevels = 1; /* the header: 1 for auto range */
  cp.minNestingLevel = 1;
  cp.passIndex = 0;
  cp.targetNestingLevel = 1;
  CUPTI_TRY(cuptiRangeProfilerSetConfig(&cp));
  int rc = run_rounds(p, obj, k, &si->n_rounds);
  if (rc != PROBE_OK) return rc;
  return read_ranges(p, obj, image, si, out);
}

/* One kernel: the range profiler enabled on the context for it alone, then disabled. */
static int profile_kernel(struct probe *p, int k) {
  CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params, ep);
  ep.ctx = p->ctx;
  double t0 = now_ms();
  CUPTI_TRY(cuptiRangeProfilerEnable(&ep));
  std::vector<double> got(p->names.size(), NAN);
  struct session_info si = {};
  int rc = profile_session(p, ep.pRangeProfilerObject, k, &si, got.data());
  CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params, dp);
  dp.pRangeProfilerObject = ep.pRangeProfilerObject;
  CUptiResult r = cuptiRangeProfilerDisable(&dp);
  if (r != CUPTI_SUCCESS && rc == PROBE_OK) rc = cupti_failed("cuptiRangeProfilerDisable(&dp)", r);
  printf("  %-15s %s: %d round(s) of Start/launch/Stop, %zu range(s) [%s], %zu dropped, %.1f ms\n",
         kernel_cases[k].name, rc == PROBE_OK ? "read" : "FAILED", si.n_rounds, si.n_ranges,
         si.range_names, si.n_dropped, now_ms() - t0);
  for (int i = 0; i < EXP_METRIC_COUNT; i++) {
    const struct probe_row *row = &p->rows[i];
    double v = rc == PROBE_OK ? 0 : NAN;
    for (int t = 0; t < row->n_terms; t++) {
      int s = p->slot[row->term[t]];
      v += s < 0 ? NAN : row->coef[t] * got[s];
    }
    p->value[k][i] = v;
  }
  return rc;
}

/* ---- the table and the done-when checks ---- */

static void print_value(double v) {
  if (isnan(v))
    printf(" %15s", "-");
  else if (fabs(v) >= 1e4 || v == floor(v))
    printf(" %15.0f", v);
  else
    printf(" %15.3f", v);
}

static double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

static void print_table(const struct probe *p) {
  printf("\n%-30s", "metric (profile.c name)");
  for (int k = 0; k < K_COUNT; k++) printf(" %15s", kernel_cases[k].name);
  printf("\n");
  for (int i = 0; i < EXP_METRIC_COUNT; i++) {
    printf("%-30s", exp_profile_metrics[i].name);
    for (int k = 0; k < K_COUNT; k++) print_value(p->value[k][i]);
    printf("\n");
  }
  printf("%-30s", "load sectors/request");
  for (int k = 0; k < K_COUNT; k++)
    print_value(ratio(p->value[k][EXP_METRIC_LOAD_SECTORS], p->value[k][EXP_METRIC_LOAD_REQUESTS]));
  printf("\n%-30s", "store sectors/request");
  for (int k = 0; k < K_COUNT; k++)
    print_value(
        ratio(p->value[k][EXP_METRIC_STORE_SECTORS], p->value[k][EXP_METRIC_STORE_REQUESTS]));
  printf("\n");
}

/* One check: prints it and returns 1 when it failed (a value not read fails). */
static int check(const char *what, double got, bool ok, const char *want) {
  printf("%s  %-44s %18.4f  (want %s)\n", ok && !isnan(got) ? "PASS" : "FAIL", what, got, want);
  return ok && !isnan(got) ? 0 : 1;
}

static bool within(double got, double want, double rel) { return fabs(got - want) <= rel * want; }

static int run_checks(const struct probe *p) {
  const double(*v)[EXP_METRIC_COUNT] = p->value;
  double st = ratio(v[K_NAIVE][EXP_METRIC_STORE_SECTORS], v[K_NAIVE][EXP_METRIC_STORE_REQUESTS]);
  double ld = ratio(v[K_NAIVE][EXP_METRIC_LOAD_SECTORS], v[K_NAIVE][EXP_METRIC_LOAD_REQUESTS]);
  /* Conflicts per load request: the lecture's 32-way conflict is 31 extra wavefronts;
   * conflict-free code reads a fraction of one (Nsight Compute's counter too). */
  double c32 = ratio(v[K_SHARED32][EXP_METRIC_SHARED_LOAD_CONFLICTS],
                     v[K_SHARED32][EXP_METRIC_SHARED_LOAD_REQUESTS]);
  double c33 = ratio(v[K_PADDED33][EXP_METRIC_SHARED_LOAD_CONFLICTS],
                     v[K_PADDED33][EXP_METRIC_SHARED_LOAD_REQUESTS]);
  double rd = v[K_COPY][EXP_METRIC_DRAM_READ_BYTES], mn = (double)N_COPY * N_COPY;
  double fl = v[K_GEMM][EXP_METRIC_FP32_FLOPS], g = (double)N_GEMM;
  int failed = 0;
  printf("\nissue 32's done-when checks:\n");
  failed += check("naive 4096^2 store sectors/request", st, within(st, 32, 0.01), "32 +-1%");
  failed += check("naive 4096^2 load sectors/request", ld, within(ld, 4, 0.01), "4 +-1%");
  failed += check("shared32 load conflicts per request", c32, within(c32, 31, 0.05), "31 +-5%");
  failed += check("padded33 load conflicts per request", c33, c33 < 1, "< 1");
  failed += check("copy 8192^2 DRAM bytes read / 4mn", rd / (4 * mn), within(rd, 4 * mn, 0.05),
                  "1 +-5%");
  failed += check("gemm tiled 1024^3 FP32 flops / 2mnk", fl / (2 * g * g * g),
                  within(fl, 2 * g * g * g, 0.01), "1 +-1%");
  printf("%d of 6 checks failed\n", failed);
  return failed ? PROBE_FAIL : PROBE_OK;
}

/* ---- main ---- */

static int alloc_buffers(struct probe *p) {
  size_t bytes = (size_t)N_COPY * N_COPY * sizeof(float);
  CUDA_TRY(cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking));
  CUDA_TRY(cudaMalloc(&p->d_a, bytes));
  CUDA_TRY(cudaMalloc(&p->d_b, bytes));
  /* Inputs before profiling starts (values do not change these counters). */
  CUDA_TRY(cudaMemsetAsync(p->d_a, 0x3f, bytes, p->stream));
  CUDA_TRY(cudaMemsetAsync(p->d_b, 0, bytes, p->stream));
  if (p->user_replay) {
    int l2 = 0;
    CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    p->flush_bytes = 2 * (size_t)l2;
    CUDA_TRY(cudaMalloc(&p->d_flush, p->flush_bytes));
  }
  /* Each kernel once before profiling: modules load lazily, at a kernel's first launch. */
  for (int k = 0; k < K_COUNT; k++) {
    kernel_cases[k].launch(p->d_a, p->d_b, p->stream);
    CUDA_TRY(cudaGetLastError());
  }
  CUDA_TRY(cudaStreamSynchronize(p->stream));
  return PROBE_OK;
}

static int profile_all(struct probe *p) {
  int rc = alloc_buffers(p);
  if (rc != PROBE_OK) return rc;
  printf("\nrange profiler: %s replay, auto range (one range per kernel)\n",
         p->user_replay ? "user (L2 flushed before each pass)" : "kernel");
  int worst = PROBE_OK;
  for (int k = 0; k < K_COUNT; k++) {
    rc = profile_kernel(p, k);
    if (rc == PROBE_SKIP) return rc;
    if (rc != PROBE_OK) worst = rc; /* the other kernels may still read */
  }
  print_table(p);
  rc = run_checks(p);
  return worst != PROBE_OK ? worst : rc;
}

static int probe_run(struct probe *p) {
  int rc = parse_table(p);
  if (rc == PROBE_OK && !p->host_only) rc = open_device(p);
  if (rc == PROBE_OK && !p->host_only) rc = open_profiler(p);
  if (rc == PROBE_OK && p->host_only) print_supported_chips();
  if (rc == PROBE_OK) rc = add_metrics(p);
  if (rc == PROBE_OK) rc = build_config(p);
  if (rc == PROBE_OK && !p->host_only) rc = profile_all(p);
  if (p->host) host_free(p->host); /* says so if it fails; the verdict stands */
  if (!p->host_only && p->ctx) {
    CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params, dp);
    CUptiResult r = cuptiProfilerDeInitialize(&dp);
    if (r != CUPTI_SUCCESS) cupti_failed("cuptiProfilerDeInitialize(&dp)", r);
    cudaFree(p->d_flush); /* NULL where never allocated; errors here change nothing */
    cudaFree(p->d_b);
    cudaFree(p->d_a);
    if (p->stream) cudaStreamDestroy(p->stream);
  }
  return rc;
}

int main(int argc, char **argv) {
  static struct probe p;            /* zeroed; holds the value table */
  setvbuf(stdout, NULL, _IOLBF, 0); /* a line at a time: a crash in CUPTI loses none */
  for (int k = 0; k < K_COUNT; k++)
    for (int i = 0; i < EXP_METRIC_COUNT; i++) p.value[k][i] = NAN;
  if (argc == 3 && strcmp(argv[1], "--host-only") == 0) {
    p.host_only = true;
    p.chip = argv[2];
  } else if (argc == 3 && strcmp(argv[1], "--replay") == 0 && strcmp(argv[2], "user") == 0) {
    p.user_replay = true;
  } else if (argc != 1) {
    fprintf(stderr, "usage: %s [--replay user | --host-only CHIP]\n", argv[0]);
    return 2;
  }
  int rc = probe_run(&p);
  printf("cupti_probe: exit %d\n", rc);
  return rc;
}
