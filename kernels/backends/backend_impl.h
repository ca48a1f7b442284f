/* Private to kernels/backends/: how a backend plugs into backend.h. backend.c
 * forwards every call to a backend's ops; registry.c lists the backends (their
 * plugins) and opens one. */
#ifndef GPULAB_BACKEND_IMPL_H
#define GPULAB_BACKEND_IMPL_H

#include "kernels/backends/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

struct backend_ops {
  const char *name;
  void (*device_info)(struct backend *b, struct backend_device_info *info);
  uint64_t (*memory_limit)(const struct backend *b);
  bool (*healthy)(const struct backend *b);
  int (*run)(struct backend *b, int lane, struct backend_job *job,
             const struct backend_hooks *hooks, struct exp_result *result, char *err,
             size_t err_len);
  int (*buffer_upload)(struct backend *b, const float *host, uint64_t count,
                       struct backend_buffer **out, char *err, size_t err_len);
  int (*buffer_download)(struct backend *b, struct backend_buffer *buf, struct backend_fence *fence,
                         float *host, char *err, size_t err_len);
  void (*buffer_free)(struct backend *b, struct backend_buffer *buf);
  void (*fence_free)(struct backend *b, struct backend_fence *fence);
  void (*free)(struct backend *b);
  int (*measure_ceilings)(struct backend *b, char *why, size_t why_len); /* NULL: none */
  /* backend.h's backend_profiling; NULL: MARK, no counters. */
  enum backend_profiling (*profiling)(const struct backend *b, char *why, size_t why_len);
};

/* Both backends keep a buffer as one allocation of floats: device memory from the
 * device's pool (CUDA) or host memory (CPU). */
struct backend_buffer {
  uint64_t count;
  float *data;
  int device; /* CUDA: the ordinal that holds data; CPU: 0 (host memory serves all) */
};

struct backend {
  const struct backend_ops *ops;
  int n_lanes;
  void *impl; /* owned by the backend; freed by ops->free */
};

/* A backend as the registry sees it: each one defines one (cpu_backend_plugin,
 * cuda_backend_plugin), registry.c lists them. */
struct backend_plugin {
  enum backend_kind kind;
  /* Opens device `device` with n_lanes lanes: 0, or -ENODEV (why says why) when no
   * such device answers here, -ENOMEM, -EINVAL (n_lanes < 1). why: one line. */
  int (*open)(int device, int n_lanes, struct backend **out, char *why, size_t why_len);
  /* Devices of this kind here; NULL: the host's one. */
  int (*device_count)(void);
  /* Connects the devices of one gpulabd (CUDA: peer access where the hardware allows;
   * inputs then move by peer copies, else through host memory); entries of other
   * kinds are skipped. NULL: nothing to connect. */
  void (*connect)(struct backend *const *devices, int n);
};

/* Shared by both backends: true if hooks say the job was canceled. */
static inline bool backend_hooks_canceled(const struct backend_hooks *h) {
  return h && h->canceled && h->canceled(h->arg);
}
static inline void backend_hooks_progress(const struct backend_hooks *h, int run, int batch,
                                          double ms) {
  if (h && h->progress) h->progress(h->arg, run, batch, ms);
}
/* Returns whether the window just closed was contended (when phase is UNTIMED). */
static inline bool backend_hooks_phase(const struct backend_hooks *h, enum backend_phase phase) {
  return h && h->phase ? h->phase(h->arg, phase) : false;
}
static inline void backend_hooks_issued(const struct backend_hooks *h) {
  if (h && h->issued) h->issued(h->arg);
}

#ifdef __cplusplus
}
#endif
#endif
