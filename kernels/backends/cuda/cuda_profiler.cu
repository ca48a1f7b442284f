/* cuda_profiler.h: CUPTI's Range Profiler (the CUDA 12.6+ API) and its launch
 * callbacks, loaded with dlopen. The order of the calls is NVIDIA's (its samples):
 * profiler initialized, chip, counter availability, a host object's config image; per
 * session Enable, the counter data image, SetConfig, Start, the launches, Stop until
 * every pass is submitted (once, with kernel replay), Decode, evaluate each range. */
#include "kernels/backends/cuda/cuda_profiler.h"

#include <cuda.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_runtime_cbid.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <errno.h>
#include <generated_cuda_runtime_api_meta.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "kernels/core/occupancy.h"

/* ---- libcupti, loaded once for the process ---- */

/* The CUPTI functions gpulab calls, each resolved by name (a list clang-format would
 * rewrap on every run). */
// clang-format off
#define CUPTI_FNS(X) \
  X(cuptiGetResultString) \
  X(cuptiProfilerInitialize) \
  X(cuptiDeviceGetChipName) \
  X(cuptiProfilerGetCounterAvailability) \
  X(cuptiProfilerHostInitialize) \
  X(cuptiProfilerHostDeinitialize) \
  X(cuptiProfilerHostConfigAddMetrics) \
  X(cuptiProfilerHostGetConfigImageSize) \
  X(cuptiProfilerHostGetConfigImage) \
  X(cuptiProfilerHostEvaluateToGpuValues) \
  X(cuptiRangeProfilerEnable) \
  X(cuptiRangeProfilerDisable) \
  X(cuptiRangeProfilerGetCounterDataSize) \
  X(cuptiRangeProfilerCounterDataImageInitialize) \
  X(cuptiRangeProfilerSetConfig) \
  X(cuptiRangeProfilerStart) \
  X(cuptiRangeProfilerStop) \
  X(cuptiRangeProfilerDecodeData) \
  X(cuptiRangeProfilerGetCounterDataInfo) \
  X(cuptiSubscribe) \
  X(cuptiUnsubscribe) \
  X(cuptiEnableCallback)
// clang-format on

static struct {
#define CUPTI_FN_SLOT(name) decltype(&::name) name;
  CUPTI_FNS(CUPTI_FN_SLOT)
#undef CUPTI_FN_SLOT
} cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = -ENOENT;
static char load_why[512];
/* One session at a time in the process: the callbacks' one subscriber. */
static pthread_mutex_t session_mu = PTHREAD_MUTEX_INITIALIZER;

static void load(void) {
  static const char *const names[] = {"libcupti.so.13", "libcupti.so",
                                      "/usr/local/cuda/lib64/libcupti.so.13",
                                      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char *e = dlerror();
    size_t used = strlen(load_why);
    snprintf(load_why + used, sizeof load_why - used, "%s%s", used ? "; " : "", e ? e : names[i]);
  }
  if (!lib) return;
#define CUPTI_FN_LOAD(name)                                                                      \
  if (!(*(void **)&cu.name = dlsym(lib, #name))) {                                               \
    snprintf(load_why, sizeof load_why, "libcupti lacks %s (CUDA 12.6 or later needed)", #name); \
    return;                                                                                      \
  }
  CUPTI_FNS(CUPTI_FN_LOAD)
#undef CUPTI_FN_LOAD
  load_why[0] = '\0';
  load_rc = 0;
}

/* A CUPTI params struct, zeroed, its size set (the API's versioning). */
#define CUPTI_PARAMS(type, var) \
  type var = {};                \
  var.structSize = type##_STRUCT_SIZE

/* why = "call: CUPTI's result"; returns -EPERM where the driver forbids counters to this
 * user (and says how to allow them), else -EIO. */
static int cupti_fail(const char *call, CUptiResult r, char *why, size_t why_len) {
  const char *s = NULL;
  if (cu.cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI result";
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
      r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
    snprintf(why, why_len,
             "%s: %s: counters are for administrators (ERR_NVGPUCTRPERM): run as root, or "
             "load nvidia with NVreg_RestrictProfilingToAdminUsers=0",
             call, s);
    return -EPERM;
  }
  snprintf(why, why_len, "%s: %s", call, s);
  return -EIO;
}

#define CUPTI_TRY(call)                                                  \
  do {                                                                   \
    CUptiResult r_ = (call);                                             \
    if (r_ != CUPTI_SUCCESS) return cupti_fail(#call, r_, why, why_len); \
  } while (0)

/* ---- the profiler of one device ---- */

enum { MAX_TERMS = 4, MAX_RANGES = 16, MAX_ROUNDS = 64 };

/* One row of profile.c's table: the sum of coef[i] * (CUPTI metric term[i]); n_terms 0:
 * not a CUPTI metric (the occupancy calculator's), or a term the device refused. */
struct row {
  int n_terms;
  int term[MAX_TERMS];
  double coef[MAX_TERMS];
};

struct cuda_profiler {
  int device, arch;
  CUcontext ctx;
  std::string chip;
  std::vector<uint8_t> avail;       /* counter availability image */
  std::vector<std::string> metrics; /* the accepted CUPTI metrics */
  std::vector<const char *> names;  /* metrics' c_str(), for the API */
  struct row rows[EXP_METRIC_COUNT];
  CUpti_Profiler_Host_Object *host;
  std::vector<uint8_t> config;
};

typedef CUresult (*cu_ctx_get_current_fn)(CUcontext *);
typedef CUresult (*cu_func_get_attribute_fn)(int *, CUfunction_attribute, CUfunction);

static void *driver_entry(const char *name) {
  void *fn = NULL;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    fn = NULL;
  (void)cudaGetLastError();
  return fn;
}

static int host_new(const struct cuda_profiler *p, CUpti_Profiler_Host_Object **out, char *why,
                    size_t why_len) {
  CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params, ip);
  ip.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  ip.pChipName = p->chip.c_str();
  ip.pCounterAvailabilityImage = p->avail.empty() ? NULL : p->avail.data();
  CUPTI_TRY(cu.cuptiProfilerHostInitialize(&ip));
  *out = ip.pHostObject;
  return 0;
}

static void host_free(CUpti_Profiler_Host_Object *host) {
  if (!host) return;
  CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params, dp);
  dp.pHostObject = host;
  (void)cu.cuptiProfilerHostDeinitialize(&dp);
}

/* Whether this device's counters give metric `name`: added alone to a host object of its
 * own, so that a refusal leaves the real one clean. */
static bool metric_offered(const struct cuda_profiler *p, const char *name) {
  CUpti_Profiler_Host_Object *h = NULL;
  char ignored[256];
  if (host_new(p, &h, ignored, sizeof ignored) != 0) return false;
  CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, ap);
  ap.pHostObject = h;
  ap.ppMetricNames = &name;
  ap.numMetrics = 1;
  bool ok = cu.cuptiProfilerHostConfigAddMetrics(&ap) == CUPTI_SUCCESS;
  host_free(h);
  return ok;
}

/* The index of CUPTI metric `name` among the accepted ones, added when the device
 * offers it; -1 when it does not. */
static int metric_slot(struct cuda_profiler *p, const std::string &name) {
  for (size_t i = 0; i < p->metrics.size(); i++)
    if (p->metrics[i] == name) return (int)i;
  if (!metric_offered(p, name.c_str())) return -1;
  p->metrics.push_back(name);
  return (int)p->metrics.size() - 1;
}

/* Row m from profile.c's formula "a + b + 2 * c" (a plain name: one term). A formula
 * that is not CUPTI's (no "__" in a term: the occupancy calculator's), or any term the
 * device refuses, leaves the row empty: the metric reads NaN. */
static void parse_row(struct cuda_profiler *p, int m) {
  struct row *row = &p->rows[m];
  row->n_terms = 0;
  std::string f(exp_profile_metrics[m].nvidia);
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
    size_t b = term.find_first_not_of(' '), e = term.find_last_not_of(' ');
    int slot = -1;
    if (b != std::string::npos && row->n_terms < MAX_TERMS && coef != 0) {
      term = term.substr(b, e - b + 1);
      if (term.find("__") != std::string::npos) slot = metric_slot(p, term);
    }
    if (slot < 0) {
      row->n_terms = 0;
      return;
    }
    row->coef[row->n_terms] = coef;
    row->term[row->n_terms++] = slot;
    if (plus == std::string::npos) break;
    at = plus + 1;
  }
}

static int build_config(struct cuda_profiler *p, char *why, size_t why_len) {
  for (int m = 0; m < EXP_METRIC_COUNT; m++) parse_row(p, m);
  if (p->metrics.empty()) {
    snprintf(why, why_len, "CUPTI accepts none of gpulab's metrics on %s", p->chip.c_str());
    return -ENOTSUP;
  }
  for (const std::string &m : p->metrics) p->names.push_back(m.c_str());
  int rc = host_new(p, &p->host, why, why_len);
  if (rc) return rc;
  CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, ap);
  ap.pHostObject = p->host;
  ap.ppMetricNames = p->names.data();
  ap.numMetrics = p->names.size();
  CUPTI_TRY(cu.cuptiProfilerHostConfigAddMetrics(&ap));
  CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params, sp);
  sp.pHostObject = p->host;
  CUPTI_TRY(cu.cuptiProfilerHostGetConfigImageSize(&sp));
  p->config.assign(sp.configImageSize, 0);
  CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params, gp);
  gp.pHostObject = p->host;
  gp.configImageSize = p->config.size();
  gp.pConfigImage = p->config.data();
  CUPTI_TRY(cu.cuptiProfilerHostGetConfigImage(&gp));
  return 0;
}

/* Initialization (process-wide, idempotent in CUPTI), the chip, whether the device
 * profiles ranges, the counters this context offers. */
static int open_device(struct cuda_profiler *p, char *why, size_t why_len) {
  cudaError_t e = cudaSetDevice(p->device);
  if (e == cudaSuccess) e = cudaFree(0); /* the primary context, now */
  cudaDeviceProp prop;
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, p->device);
  if (e != cudaSuccess) {
    snprintf(why, why_len, "CUDA device %d: %s", p->device, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return -EIO;
  }
  p->arch = prop.major * 10 + prop.minor;
  cu_ctx_get_current_fn get_ctx = (cu_ctx_get_current_fn)driver_entry("cuCtxGetCurrent");
  if (!get_ctx || get_ctx(&p->ctx) != CUDA_SUCCESS || !p->ctx) {
    snprintf(why, why_len, "the driver gave no current context (cuCtxGetCurrent)");
    return -EIO;
  }
  CUPTI_PARAMS(CUpti_Profiler_Initialize_Params, ip);
  CUPTI_TRY(cu.cuptiProfilerInitialize(&ip));
  CUPTI_PARAMS(CUpti_Device_GetChipName_Params, cp);
  cp.deviceIndex = (size_t)p->device;
  CUPTI_TRY(cu.cuptiDeviceGetChipName(&cp));
  p->chip = cp.pChipName;
  CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params, ap);
  ap.ctx = p->ctx;
  CUPTI_TRY(cu.cuptiProfilerGetCounterAvailability(&ap));
  p->avail.assign(ap.counterAvailabilityImageSize, 0);
  ap.pCounterAvailabilityImage = p->avail.data();
  CUPTI_TRY(cu.cuptiProfilerGetCounterAvailability(&ap));
  return 0;
}

int cuda_profiler_open(int device, struct cuda_profiler **out, char *why, size_t why_len) {
  *out = NULL;
  pthread_once(&load_once, load);
  if (load_rc) {
    snprintf(why, why_len, "no CUPTI: %s", load_why);
    return load_rc;
  }
  struct cuda_profiler *p = new (std::nothrow) cuda_profiler();
  if (!p) {
    snprintf(why, why_len, "out of host memory");
    return -ENOMEM;
  }
  p->device = device;
  pthread_mutex_lock(&session_mu);
  int rc = open_device(p, why, why_len);
  if (rc == 0) rc = build_config(p, why, why_len);
  pthread_mutex_unlock(&session_mu);
  if (rc) {
    cuda_profiler_close(p);
    return rc;
  }
  *out = p;
  return 0;
}

void cuda_profiler_close(struct cuda_profiler *p) {
  if (!p) return;
  host_free(p->host);
  delete p;
}

/* ---- a session: the launches seen, then the ranges read ---- */

/* The driver's launch parameters as CUPTI passes them: generated_cuda_meta.h's
 * cuLaunchKernel_params and cuLaunchKernelEx_params (that header needs cuda.h's
 * internal _v1 types, so their layouts are spelled here). */
struct cu_launch_kernel_params {
  CUfunction f;
  unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  void **kernelParams, **extra;
};
struct cu_launch_kernel_ex_params {
  const CUlaunchConfig *config;
  CUfunction f;
  void **kernelParams, **extra;
};

/* A launch the callbacks saw, in launch order (the ranges' order). */
struct launch_seen {
  std::string name;
  unsigned grid[3], block[3];
  size_t dyn_smem;
  const void *func;  /* a runtime launch's entry, or NULL */
  CUfunction cufunc; /* a driver launch's, or NULL */
};

struct session {
  std::vector<launch_seen> launches;
  int runtime_depth; /* inside a runtime launch: its driver call is the same launch */
  int launch_rc;     /* the launch function's error: the job's, not the profiler's */
};

static bool runtime_launch(CUpti_CallbackId id) {
  return id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ||
         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 ||
         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000 ||
         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000;
}

static bool driver_launch(CUpti_CallbackId id) {
  return id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
}

static void record_runtime(struct session *s, CUpti_CallbackId id, const CUpti_CallbackData *cb) {
  launch_seen l = {};
  l.name = cb->symbolName ? cb->symbolName : "?";
  dim3 g, b;
  if (id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
      id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060) {
    const cudaLaunchKernelExC_v11060_params *p = (const cudaLaunchKernelExC_v11060_params *)
                                                     cb->functionParams;
    g = p->config->gridDim, b = p->config->blockDim;
    l.dyn_smem = p->config->dynamicSmemBytes;
    l.func = p->func;
  } else { /* cudaLaunchKernel's layout, the cooperative and ptsz variants' too */
    const cudaLaunchKernel_v7000_params *p = (const cudaLaunchKernel_v7000_params *)
                                                 cb->functionParams;
    g = p->gridDim, b = p->blockDim;
    l.dyn_smem = p->sharedMem;
    l.func = p->func;
  }
  l.grid[0] = g.x, l.grid[1] = g.y, l.grid[2] = g.z;
  l.block[0] = b.x, l.block[1] = b.y, l.block[2] = b.z;
  s->launches.push_back(l);
}

static void record_driver(struct session *s, CUpti_CallbackId id, const CUpti_CallbackData *cb) {
  launch_seen l = {};
  l.name = cb->symbolName ? cb->symbolName : "?";
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    const cu_launch_kernel_ex_params *p = (const cu_launch_kernel_ex_params *)cb->functionParams;
    const CUlaunchConfig *c = p->config;
    l.grid[0] = c->gridDimX, l.grid[1] = c->gridDimY, l.grid[2] = c->gridDimZ;
    l.block[0] = c->blockDimX, l.block[1] = c->blockDimY, l.block[2] = c->blockDimZ;
    l.dyn_smem = c->sharedMemBytes;
    l.cufunc = p->f;
  } else { /* cuLaunchKernel's layout, the cooperative and ptsz variants' too */
    const cu_launch_kernel_params *p = (const cu_launch_kernel_params *)cb->functionParams;
    l.grid[0] = p->gridDimX, l.grid[1] = p->gridDimY, l.grid[2] = p->gridDimZ;
    l.block[0] = p->blockDimX, l.block[1] = p->blockDimY, l.block[2] = p->blockDimZ;
    l.dyn_smem = p->sharedMemBytes;
    l.cufunc = p->f;
  }
  s->launches.push_back(l);
}

/* CUPTI's callback: each kernel launch once, whether through the runtime (which calls
 * the driver inside) or the driver alone (cuBLAS, gpulab-runner's way). */
static void CUPTIAPI on_launch(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                               const void *data) {
  struct session *s = (struct session *)userdata;
  const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && runtime_launch(id)) {
    if (cb->callbackSite == CUPTI_API_EXIT) {
      s->runtime_depth--;
      return;
    }
    s->runtime_depth++;
    record_runtime(s, id, cb);
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && driver_launch(id) &&
             cb->callbackSite == CUPTI_API_ENTER && s->runtime_depth == 0) {
    record_driver(s, id, cb);
  }
}

static int subscribe(struct session *s, CUpti_SubscriberHandle *sub, char *why, size_t why_len) {
  CUPTI_TRY(cu.cuptiSubscribe(sub, (CUpti_CallbackFunc)on_launch, s));
  static const CUpti_CallbackId rt[] = {
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000};
  static const CUpti_CallbackId dr[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                                        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
  for (CUpti_CallbackId id : rt)
    CUPTI_TRY(cu.cuptiEnableCallback(1, *sub, CUPTI_CB_DOMAIN_RUNTIME_API, id));
  for (CUpti_CallbackId id : dr)
    CUPTI_TRY(cu.cuptiEnableCallback(1, *sub, CUPTI_CB_DOMAIN_DRIVER_API, id));
  return 0;
}

/* The theoretical occupancy of a launch seen: the kernel's registers and static shared
 * memory (from the runtime or the driver), the calculator of occupancy.h. */
static void occupancy_of(const struct cuda_profiler *p, const launch_seen &l,
                         struct exp_profile_kernel *k) {
  int regs = -1, smem = -1;
  cudaFuncAttributes a;
  if (l.func && cudaFuncGetAttributes(&a, l.func) == cudaSuccess) {
    regs = a.numRegs, smem = (int)a.sharedSizeBytes;
  } else if (l.cufunc) {
    static cu_func_get_attribute_fn get = (cu_func_get_attribute_fn)driver_entry(
        "cuFuncGetAttribute");
    if (!get || get(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, l.cufunc) != CUDA_SUCCESS ||
        get(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, l.cufunc) != CUDA_SUCCESS)
      regs = -1;
  }
  (void)cudaGetLastError();
  if (regs < 0) return;
  struct occupancy_launch ol = {p->arch, (int)(l.block[0] * l.block[1] * l.block[2]), regs, smem,
                                (int)l.dyn_smem};
  struct occupancy o;
  char ignored[128];
  if (occupancy_theoretical(&ol, &o, ignored, sizeof ignored) != 0) return;
  k->value[EXP_METRIC_THEORETICAL_OCCUPANCY_PCT] = 100.0 * o.fraction;
  snprintf(k->occupancy_limiter, sizeof k->occupancy_limiter, "%s", o.limiter ? o.limiter : "");
}

/* Range r's values into kernel k: each row's terms from the evaluated metrics. */
static int read_range(struct cuda_profiler *p, std::vector<uint8_t> &image, size_t r,
                      struct exp_profile_kernel *k, char *why, size_t why_len) {
  std::vector<double> got(p->names.size(), NAN);
  CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params, ep);
  ep.pHostObject = p->host;
  ep.pCounterDataImage = image.data();
  ep.counterDataImageSize = image.size();
  ep.rangeIndex = r;
  ep.ppMetricNames = p->names.data();
  ep.numMetrics = p->names.size();
  ep.pMetricValues = got.data();
  CUPTI_TRY(cu.cuptiProfilerHostEvaluateToGpuValues(&ep));
  for (int m = 0; m < EXP_METRIC_COUNT; m++) {
    const struct row *row = &p->rows[m];
    double v = row->n_terms ? 0 : NAN;
    for (int t = 0; t < row->n_terms; t++) v += row->coef[t] * got[(size_t)row->term[t]];
    k->value[m] = v;
  }
  return 0;
}

/* SetConfig on a fresh counter data image, Start, the launches, Stop until every pass
 * was submitted, the ranges decoded into out. */
static int session_run(struct cuda_profiler *p, CUpti_RangeProfiler_Object *obj, struct session *s,
                       cudaStream_t stream, cuda_profiler_launch_fn launch, void *arg,
                       struct exp_profile *out, char *why, size_t why_len) {
  CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params, sp);
  sp.pRangeProfilerObject = obj;
  sp.pMetricNames = p->names.data();
  sp.numMetrics = p->names.size();
  sp.maxNumOfRanges = MAX_RANGES;
  sp.maxNumRangeTreeNodes = MAX_RANGES;
  CUPTI_TRY(cu.cuptiRangeProfilerGetCounterDataSize(&sp));
  std::vector<uint8_t> image(sp.counterDataSize, 0);
  CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params, ip);
  ip.pRangeProfilerObject = obj;
  ip.counterDataSize = image.size();
  ip.pCounterData = image.data();
  CUPTI_TRY(cu.cuptiRangeProfilerCounterDataImageInitialize(&ip));
  CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params, cp);
  cp.pRangeProfilerObject = obj;
  cp.configSize = p->config.size();
  cp.pConfig = p->config.data();
  cp.counterDataImageSize = image.size();
  cp.pCounterDataImage = image.data();
  cp.range = CUPTI_AutoRange; /* each kernel its own range */
  cp.replayMode = CUPTI_KernelReplay;
  cp.maxRangesPerPass = MAX_RANGES;
  cp.numNestingLevels = 1;
  cp.minNestingLevel = 1;
  cp.passIndex = 0;
  cp.targetNestingLevel = 1;
  CUPTI_TRY(cu.cuptiRangeProfilerSetConfig(&cp));
  bool all_passes = false;
  for (int round = 0; round < MAX_ROUNDS && !all_passes; round++) {
    s->launches.clear();
    CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params, st);
    st.pRangeProfilerObject = obj;
    CUPTI_TRY(cu.cuptiRangeProfilerStart(&st));
    int rc = launch(arg);
    cudaError_t e = cudaStreamSynchronize(stream);
    CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params, tp);
    tp.pRangeProfilerObject = obj;
    CUptiResult stopped = cu.cuptiRangeProfilerStop(&tp);
    if (rc) return s->launch_rc = rc;
    if (e != cudaSuccess) {
      snprintf(why, why_len, "the profiled launches: %s", cudaGetErrorString(e));
      return s->launch_rc = -EIO;
    }
    if (stopped != CUPTI_SUCCESS)
      return cupti_fail("cuptiRangeProfilerStop", stopped, why, why_len);
    all_passes = tp.isAllPassSubmitted;
  }
  if (!all_passes) {
    snprintf(why, why_len, "CUPTI wanted more than %d replays of the run", MAX_ROUNDS);
    return -EIO;
  }
  CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params, dp);
  dp.pRangeProfilerObject = obj;
  CUPTI_TRY(cu.cuptiRangeProfilerDecodeData(&dp));
  CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params, gi);
  gi.pCounterDataImage = image.data();
  gi.counterDataImageSize = image.size();
  CUPTI_TRY(cu.cuptiRangeProfilerGetCounterDataInfo(&gi));
  size_t ranges = gi.numTotalRanges;
  out->n_kernels_seen = (int)(s->launches.size() > ranges ? s->launches.size() : ranges);
  out->n_kernels = (int)(ranges < EXP_PROFILE_MAX_KERNELS ? ranges : EXP_PROFILE_MAX_KERNELS);
  for (int r = 0; r < out->n_kernels; r++) {
    struct exp_profile_kernel *k = &out->kernels[r];
    if (int rc = read_range(p, image, (size_t)r, k, why, why_len)) return rc;
    if ((size_t)r < s->launches.size()) { /* ranges and launches in the same order */
      const launch_seen &l = s->launches[(size_t)r];
      snprintf(k->name, sizeof k->name, "%s", l.name.c_str());
      for (int d = 0; d < 3; d++) k->grid[d] = (int)l.grid[d], k->block[d] = (int)l.block[d];
      occupancy_of(p, l, k);
    } else {
      snprintf(k->name, sizeof k->name, "kernel %d", r);
    }
  }
  return 0;
}

int cuda_profiler_run(struct cuda_profiler *p, cudaStream_t stream, cuda_profiler_launch_fn launch,
                      void *arg, struct exp_profile *out) {
  memset(out, 0, sizeof *out);
  out->requested = true;
  out->clocks_locked = false;  /* CUPTI's range profiler leaves the clocks as they are */
  out->caches_flushed = false; /* gpulab flushes nothing between the passes */
  char why[512] = "";          /* more than reason holds: exp_profile_unavailable cuts it */
  const size_t why_len = sizeof why;
  pthread_mutex_lock(&session_mu);
  struct session s = {};
  s.launch_rc = 0;
  CUpti_SubscriberHandle sub = NULL;
  int rc = subscribe(&s, &sub, why, why_len);
  CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params, ep);
  ep.ctx = p->ctx;
  CUptiResult enabled = CUPTI_ERROR_UNKNOWN;
  if (rc == 0) {
    enabled = cu.cuptiRangeProfilerEnable(&ep);
    if (enabled != CUPTI_SUCCESS)
      rc = cupti_fail("cuptiRangeProfilerEnable", enabled, why, why_len);
  }
  if (rc == 0)
    rc = session_run(p, ep.pRangeProfilerObject, &s, stream, launch, arg, out, why, why_len);
  if (enabled == CUPTI_SUCCESS) {
    CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params, dp);
    dp.pRangeProfilerObject = ep.pRangeProfilerObject;
    CUptiResult r = cu.cuptiRangeProfilerDisable(&dp);
    if (r != CUPTI_SUCCESS && rc == 0)
      rc = cupti_fail("cuptiRangeProfilerDisable", r, why, why_len);
  }
  if (sub) (void)cu.cuptiUnsubscribe(sub);
  (void)cudaStreamSynchronize(stream);
  (void)cudaGetLastError();
  pthread_mutex_unlock(&session_mu);
  if (s.launch_rc) return s.launch_rc; /* the job's failure, not the profiler's */
  out->available = rc == 0;
  if (rc) exp_profile_unavailable(out, why);
  return 0;
}
