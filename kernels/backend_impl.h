/* Private to kernels/: how a backend plugs into backend.h. */
#ifndef GPULAB_BACKEND_IMPL_H
#define GPULAB_BACKEND_IMPL_H

#include "kernels/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

struct backend_ops {
  const char *name;
  void (*device_info)(struct backend *b, struct backend_device_info *info);
  uint64_t (*memory_limit)(const struct backend *b);
  bool (*healthy)(const struct backend *b);
  int (*run)(struct backend *b, int lane, const struct exp_spec *spec,
             const struct backend_hooks *hooks, struct exp_result *result, char *err,
             size_t err_len);
  void (*free)(struct backend *b);
};

struct backend {
  const struct backend_ops *ops;
  int n_lanes;
  void *impl; /* owned by the backend; freed by ops->free */
};

int cpu_backend_open(int n_lanes, struct backend **out, char *why, size_t why_len);
/* Returns BACKEND_EUNAVAIL (why says why) when no CUDA device answers. */
int cuda_backend_open(int device, int n_lanes, struct backend **out, char *why,
                      size_t why_len);

/* Shared by both backends: true if hooks say the job was canceled. */
static inline bool backend_hooks_canceled(const struct backend_hooks *h) {
  return h && h->canceled && h->canceled(h->arg);
}
static inline void backend_hooks_progress(const struct backend_hooks *h, int run, int batch,
                                          double ms) {
  if (h && h->progress) h->progress(h->arg, run, batch, ms);
}

#ifdef __cplusplus
}
#endif
#endif
