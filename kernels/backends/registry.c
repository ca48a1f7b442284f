/* The list of backends, and backend_open's choice among them: CUDA when it was built
 * and a device answers (or was asked for), else the CPU. */
#include <stdio.h>

#include "kernels/backends/backend_impl.h"

extern const struct backend_plugin cpu_backend_plugin; /* backends/cpu/cpu_backend.c */
#ifdef GPULAB_HAVE_CUDA
extern const struct backend_plugin cuda_backend_plugin; /* backends/cuda/cuda_backend.cu */
#endif

int backend_open(enum backend_kind kind, int device, int n_lanes, struct backend **out, char *why,
                 size_t why_len) {
  const struct backend_plugin *cpu = &cpu_backend_plugin;
  *out = NULL;
  if (kind == BACKEND_CPU) {
    int rc = cpu->open(device, n_lanes, out, why, why_len);
    if (rc == 0) snprintf(why, why_len, "cpu backend: asked for with --backend cpu");
    return rc;
  }
#ifdef GPULAB_HAVE_CUDA
  char cuda_why[256] = "";
  int rc = cuda_backend_plugin.open(device, n_lanes, out, cuda_why, sizeof cuda_why);
  if (rc == 0) {
    snprintf(why, why_len, "cuda backend: %s", cuda_why);
    return 0;
  }
  if (kind == BACKEND_CUDA) {
    snprintf(why, why_len, "cuda backend unavailable: %s", cuda_why);
    return rc;
  }
  rc = cpu->open(device, n_lanes, out, why, why_len);
  if (rc == 0) snprintf(why, why_len, "cpu backend: no CUDA device answered (%s)", cuda_why);
  return rc;
#else
  if (kind == BACKEND_CUDA) {
    snprintf(why, why_len, "cuda backend unavailable: gpulabd was built without CUDA (no nvcc)");
    return -ENODEV;
  }
  int rc = cpu->open(device, n_lanes, out, why, why_len);
  if (rc == 0) snprintf(why, why_len, "cpu backend: gpulabd was built without CUDA (no nvcc)");
  return rc;
#endif
}

int backend_cuda_device_count(void) {
#ifdef GPULAB_HAVE_CUDA
  return cuda_backend_plugin.device_count();
#else
  return 0;
#endif
}

void backend_connect(struct backend *const *devices, int n) {
#ifdef GPULAB_HAVE_CUDA
  cuda_backend_plugin.connect(devices, n);
#else
  (void)devices;
  (void)n;
#endif
}
