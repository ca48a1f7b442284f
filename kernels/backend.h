/* The backends behind one small interface: run one job's experiment on one lane
 * (a CUDA stream, or a CPU thread) of one device. The engine owns the threads;
 * a backend never starts any of its own. */
#ifndef GPULAB_BACKEND_H
#define GPULAB_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kernels/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

enum backend_kind { BACKEND_AUTO, BACKEND_CPU, BACKEND_CUDA };

/* Errors: 0 or one of these. */
#define BACKEND_ECANCELED (-1) /* hooks->canceled said stop; the result is partial */
#define BACKEND_ENOMEM (-2)    /* device (or host) memory ran out; the backend is fine */
#define BACKEND_EDEVICE (-3)   /* the device failed; backend_healthy() is now false */
#define BACKEND_EINVAL (-4)    /* a spec (or lane count) the backend cannot take */
#define BACKEND_EUNAVAIL (-5)  /* backend_open: this kind is not available here */

struct backend;

struct backend_device_info {
  char backend[8];   /* "cuda" or "cpu" */
  char name[128];    /* GPU name or CPU model */
  int index;         /* device ordinal */
  int cc_major, cc_minor, sms;
  uint64_t mem_total_bytes, mem_free_bytes;
  int sm_clock_mhz, mem_clock_mhz, mem_bus_bits, l2_bytes;
  int runtime_version, driver_version; /* CUDA's encoding, e.g. 13000 */
  int cpu_cores;
};

/* Called by the backend while a job runs; all may be NULL. */
struct backend_hooks {
  bool (*canceled)(void *arg); /* polled at batch boundaries */
  void (*progress)(void *arg, int run, int batch, double sample_ms);
  void *arg;
};

/* Opens device `device` of kind with n_lanes lanes. BACKEND_AUTO picks CUDA when a
 * device answers, else the CPU. why receives one line saying what was chosen and
 * why (or why opening failed). Returns 0 or BACKEND_EUNAVAIL / BACKEND_ENOMEM;
 * *out is owned by the caller (backend_free). */
int backend_open(enum backend_kind kind, int device, int n_lanes, struct backend **out,
                 char *why, size_t why_len);
void backend_free(struct backend *b); /* NULL is a no-op; no job may be running */

const char *backend_name(const struct backend *b); /* "cuda" or "cpu" */
int backend_lanes(const struct backend *b);
void backend_device_info(struct backend *b, struct backend_device_info *info);
/* Bytes one job may use at most; a spec needing more is refused before queueing. */
uint64_t backend_memory_limit(const struct backend *b);
/* False once the device hit an error it cannot recover from. */
bool backend_healthy(const struct backend *b);

/* Runs spec on lane (0 <= lane < n_lanes) and fills result. Blocks the calling
 * thread; at most one call per lane at a time, different lanes concurrently.
 * Returns 0 (result complete, checks done), or an error with a message in err. */
int backend_run(struct backend *b, int lane, const struct exp_spec *spec,
                const struct backend_hooks *hooks, struct exp_result *result,
                char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
