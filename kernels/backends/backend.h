/* The backends behind one small interface: run one job's experiment on one lane
 * (a CUDA stream, or a CPU thread) of one device, keep data in device buffers, and
 * order jobs with fences (CUDA events, or completion flags on the CPU). The engine
 * owns the threads; a backend never starts any of its own. */
#ifndef GPULAB_BACKEND_H
#define GPULAB_BACKEND_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

enum backend_kind { BACKEND_AUTO, BACKEND_CPU, BACKEND_CUDA };

/* Errors: every call returns 0 or a negative errno value (<errno.h>), the human
 * message in the caller's buffer:
 *   -ECANCELED  hooks->canceled said stop; the result is partial
 *   -ENOMEM     device (or host) memory ran out; the backend is fine
 *   -EIO        the device failed; backend_healthy() is now false
 *   -EINVAL     a spec (or lane count) the backend cannot take
 *   -ENODEV     backend_open, backend_measure_ceilings: not available here
 *   -EFAULT     a user's kernel faulted in its runner (kernels/user/runner.h); the
 *               runner is replaced, the backend is fine
 *   -ETIMEDOUT  a user's kernel's launch ran past its deadline; its runner was killed
 *   -EROFS      a user's kernel wrote into one of its inputs (input_modified) */

struct backend;
/* floats in the device's memory (the CPU backend's: host memory). */
struct backend_buffer;
/* The point in a job's device work after which its output is complete: children
 * wait on it on the device (cudaStreamWaitEvent), never on the host. */
struct backend_fence;

struct backend_device_info {
  char backend[8]; /* "cuda" or "cpu" */
  char name[128];  /* GPU name or CPU model */
  int index;       /* device ordinal */
  /* As the DCGM exporter labels a GPU: its UUID ("GPU-" and 32 hex digits, as
   * nvidia-smi shows it) and PCI bus id (NVML's form, "00000000:3B:00.0"); both ""
   * on the CPU, which has neither. */
  char uuid[48], pci_bus_id[20];
  char driver[32]; /* the NVIDIA driver's version (NVML), "" unknown */
  int cc_major, cc_minor, sms;
  uint64_t mem_total_bytes, mem_free_bytes;
  int sm_clock_mhz, mem_clock_mhz, mem_bus_bits, l2_bytes;
  int runtime_version, driver_version; /* CUDA's encoding, e.g. 13000 */
  int cpu_cores;
  /* Measured by backend_measure_ceilings (zeros before, with --no-ceilings, on the
   * CPU); ceilings_method says how ("" when not measured). */
  struct exp_ceilings ceilings;
  char ceilings_method[384];
  /* The copy at each size (experiment.h: exp_limits), measured with the ceilings. */
  struct exp_limits limits;
  char limits_method[384];
  /* NVML, read now (at most ~20 ms old): nvml false without it, nvml_why says why. */
  bool nvml;
  char nvml_why[128];
  int sm_mhz_now, temp_c;
  double power_w;
  uint64_t clock_reasons; /* EXP_CLOCK_* bits */
  bool util;              /* NVML's utilization read: */
  int util_gpu_pct;       /* percent of the last sample period a kernel ran */
  int util_mem_pct;       /* percent of it the memory was read or written */
};

/* The phases of a job's device work, reported through hooks->phase so that the
 * engine can keep timed windows exclusive. */
enum backend_phase {
  BACKEND_PHASE_SETUP,   /* inputs, the output, untimed work */
  BACKEND_PHASE_TIMED,   /* a timed window: warm-ups and batches of one or more runs */
  BACKEND_PHASE_UNTIMED, /* after a timed window: copies for the check, graph capture */
  BACKEND_PHASE_IDLE,    /* all device work of the job is complete */
};

/* Called by the backend while a job runs, from the job's thread. All may be NULL.
 * phase(): entering a phase. The backend calls it for TIMED only once the job's
 * earlier device work is complete when job->exclusive, and for UNTIMED and IDLE
 * only once the window's (the job's) device work is complete; it may block (the
 * engine waits there for exclusivity). Entering SETUP or TIMED returns true when
 * the job was canceled while it waited: the backend then issues none of that
 * phase's work, reports UNTIMED (after TIMED) and IDLE, and returns
 * -ECANCELED. Entering UNTIMED
 * returns whether the timed window just closed was contended: another job's
 * device work may have overlapped it. issued(): the job's output and done fence
 * are enqueued; its children may be issued now. */
struct backend_hooks {
  bool (*canceled)(void *arg); /* polled at batch boundaries */
  void (*progress)(void *arg, int run, int batch, double sample_ms);
  bool (*phase)(void *arg, enum backend_phase phase);
  void (*issued)(void *arg);
  void *arg;
};

/* One job, as the engine hands it to backend_run. */
struct backend_job {
  const struct exp_spec *spec; /* sizes resolved from the inputs */
  /* Inputs given as data, by slot (NULL: generate from spec->inputs[slot].value), or
   * for a problem's job by input (NULL: generated from the job's seed; else holding the
   * input's elements in its dtype, spec->problem.input_buffer). Borrowed: the engine
   * keeps them alive until backend_run returns. They may be written by jobs still
   * running: wait on `after` before reading them. */
  struct backend_buffer *input[EXP_MAX_JOB_BUFFERS];
  struct backend_fence *const *after; /* fences of the parents, borrowed */
  int n_after;
  bool exclusive; /* see hooks->phase */
  /* Set by the backend before hooks->issued, owned by the engine afterwards (also
   * when backend_run then fails): the output of the job's first run, computed once
   * before any timing (or, when its whole timing is that run's one launch, that
   * launch's), and the fence after which it is complete. */
  struct backend_buffer *output;
  struct backend_fence *done;
};

/* Opens device `device` of kind with n_lanes lanes. BACKEND_AUTO picks CUDA when a
 * device answers, else the CPU. why receives one line saying what was chosen and
 * why (or why opening failed). Returns 0 or -ENODEV / -ENOMEM /
 * -EINVAL; *out is owned by the caller (backend_free). */
int backend_open(enum backend_kind kind, int device, int n_lanes, struct backend **out, char *why,
                 size_t why_len);
void backend_free(struct backend *b); /* NULL is a no-op; no job may be running */
/* CUDA devices visible here; 0 without CUDA or a driver. */
int backend_cuda_device_count(void);
/* Connects the devices of one gpulabd (peer access between CUDA devices). */
void backend_connect(struct backend *const *devices, int n);

const char *backend_name(const struct backend *b); /* "cuda" or "cpu" */
int backend_lanes(const struct backend *b);
void backend_device_info(struct backend *b, struct backend_device_info *info);
/* Measures the device's ceilings (experiment.h: exp_ceilings) once, on the device
 * alone: call it after backend_open, before any job runs (gpulabd does at start-up
 * unless --no-ceilings). From then on backend_device_info and every job's result
 * carry them. CUDA: about half a second. Returns 0 (why: one line of figures), or
 * -ENODEV when the backend has none to measure (the CPU), or an error
 * (the ceilings stay zero; a ceiling that alone failed, e.g. cuBLAS missing, stays
 * zero and why says so). */
int backend_measure_ceilings(struct backend *b, char *why, size_t why_len);
/* Whether b replays a job's kernels under NVIDIA's profiler after its timed batches
 * (exp_spec.profile, kernels/core/profile.h), known from the backend's open:
 *   REPLAY  it does: each run's profile holds its kernels' counters;
 *   MARK    it takes such jobs and marks each run's profile unavailable, why saying why
 *           (the CPU, which has no hardware counters);
 *   REFUSE  not here (no CUPTI, counters forbidden to this user, or no replay in this
 *           build): such a job is refused before queueing, why saying why and how to
 *           mend it. */
enum backend_profiling { BACKEND_PROFILE_REPLAY, BACKEND_PROFILE_MARK, BACKEND_PROFILE_REFUSE };
enum backend_profiling backend_profiling(const struct backend *b, char *why, size_t why_len);
/* Bytes one job may use at most; a spec needing more is refused before queueing. */
uint64_t backend_memory_limit(const struct backend *b);
/* False once the device hit an error it cannot recover from. */
bool backend_healthy(const struct backend *b);

/* Runs job on lane (0 <= lane < n_lanes) and fills result. Blocks the calling
 * thread; at most one call per lane at a time, different lanes concurrently.
 * Returns 0 (result complete, checks done), or an error with a message in err.
 * A spec or input the backend cannot take (-EINVAL, also a data input whose
 * count does not match its shape) fails before any hook; an error before issued()
 * leaves output and done NULL; a failure after SETUP still reports UNTIMED (if a
 * window was open) and IDLE. Each backend defines its own struct backend_fence. */
int backend_run(struct backend *b, int lane, struct backend_job *job,
                const struct backend_hooks *hooks, struct exp_result *result, char *err,
                size_t err_len);

/* Buffers. Upload and download block the calling thread (any thread) and are safe
 * to call concurrently with jobs. A download waits for `fence` (may be NULL) first:
 * the fence of the job that wrote the buffer. Free only once no job that uses the
 * buffer is running. Errors as above. */
int backend_buffer_upload(struct backend *b, const float *host, uint64_t count,
                          struct backend_buffer **out, char *err, size_t err_len);
int backend_buffer_download(struct backend *b, struct backend_buffer *buf,
                            struct backend_fence *fence, float *host, char *err, size_t err_len);
uint64_t backend_buffer_count(const struct backend_buffer *buf);         /* floats */
void backend_buffer_free(struct backend *b, struct backend_buffer *buf); /* NULL: no-op */
/* Frees a fence once no job waits on it any more. NULL is a no-op. */
void backend_fence_free(struct backend *b, struct backend_fence *fence);

#ifdef __cplusplus
}
#endif
#endif
