/* dlopen-based cuBLAS loader (cublas_loader.h). The library is opened once and never
 * closed; a failure is remembered with its reason and not retried. */
#include "kernels/backends/cuda/cublas_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct cublas_fns fns;
static const struct cublas_fns *loaded; /* &fns once every symbol resolved */
static char load_why[512];

static void *open_library(void) {
  static const char *const names[] = {"libcublas.so.13", "libcublas.so",
                                      "/usr/local/cuda/lib64/libcublas.so.13"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    const char *e = dlerror();
    size_t used = strlen(load_why);
    snprintf(load_why + used, sizeof load_why - used, "%s%s", used ? "; " : "",
             e ? e : names[i]); /* dlerror's text names the file */
  }
  return NULL;
}

/* Resolves name into *slot; false (load_why says which) if missing. */
static bool resolve(void *lib, const char *name, void **slot) {
  *slot = dlsym(lib, name);
  if (*slot) return true;
  const char *e = dlerror();
  snprintf(load_why, sizeof load_why, "cuBLAS lacks %s: %s", name, e ? e : "not found");
  return false;
}

static void load(void) {
  void *lib = open_library();
  if (!lib) return;
  void *p[5];
  if (!resolve(lib, "cublasCreate_v2", &p[0]) || !resolve(lib, "cublasDestroy_v2", &p[1]) ||
      !resolve(lib, "cublasSetStream_v2", &p[2]) || !resolve(lib, "cublasSetMathMode", &p[3]) ||
      !resolve(lib, "cublasSgemm_v2", &p[4]))
    return; /* the library stays open; harmless, and dlclose could unload a user's copy */
  /* POSIX guarantees a dlsym result converts to the function's pointer type. */
  fns.create = (cublasStatus_t(*)(cublasHandle_t *))p[0];
  fns.destroy = (cublasStatus_t(*)(cublasHandle_t))p[1];
  fns.set_stream = (cublasStatus_t(*)(cublasHandle_t, cudaStream_t))p[2];
  fns.set_math_mode = (cublasStatus_t(*)(cublasHandle_t, cublasMath_t))p[3];
  fns.sgemm = (cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                 int, const float *, const float *, int, const float *, int,
                                 const float *, float *, int))p[4];
  load_why[0] = '\0';
  loaded = &fns;
}

const struct cublas_fns *cublas_loader_get(const char **why) {
  pthread_once(&load_once, load);
  if (!loaded && why) *why = load_why;
  return loaded;
}

cublasStatus_t cublas_loader_handle_new(const struct cublas_fns *f, cudaStream_t stream,
                                        cublasHandle_t *handle) {
  *handle = NULL;
  cublasHandle_t h = NULL;
  cublasStatus_t st = f->create(&h);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  st = f->set_stream(h, stream);
  if (st == CUBLAS_STATUS_SUCCESS) st = f->set_math_mode(h, CUBLAS_DEFAULT_MATH);
  if (st != CUBLAS_STATUS_SUCCESS) {
    f->destroy(h);
    return st;
  }
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublas_loader_sgemm_rowmajor(const struct cublas_fns *f, cublasHandle_t handle,
                                            int m, int n, int k, const float *d_a, const float *d_b,
                                            float *d_c) {
  const float one = 1.0f, zero = 0.0f;
  /* Leading dimensions must be >= 1 even for empty matrices. */
  int ldb = n > 0 ? n : 1, lda = k > 0 ? k : 1, ldc = n > 0 ? n : 1;
  return f->sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, d_b, ldb, d_a, lda, &zero, d_c,
                  ldc);
}

const char *cublas_loader_status_name(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  default: return "CUBLAS_STATUS_UNKNOWN";
  }
}
