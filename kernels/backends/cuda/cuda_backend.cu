/* The CUDA backend (backend_impl.h): opening a device, its lanes (one non-blocking
 * stream each, with timing events, pipeline streams, a cuBLAS handle and host
 * caches), buffers in the device's memory pool, fences (events), and the error
 * classification every CUDA call goes through. Running a job is cuda_run.cu (cuda_job.h).
 * Nothing here synchronizes the device: it waits only on its own streams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <new>

#include "kernels/backends/cuda/cuda_backend_impl.h"
#include "kernels/backends/cuda/cuda_check.h"
#include "kernels/backends/cuda/cuda_kernels.h"
#include "kernels/core/clock.h"

/* ---- errors ---- */

/* Errors after which the context is unusable (CUDA's "sticky" errors). */
static bool known_sticky(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorECCUncorrectable:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorLaunchTimeout:
  case cudaErrorAssert:
  case cudaErrorNvlinkUncorrectable:
  case cudaErrorContained: return true;
  default: return false;
  }
}

static void mark_sick(struct cuda_backend *be, const char *msg) {
  pthread_mutex_lock(&be->mu);
  if (be->healthy.load()) snprintf(be->sick, sizeof be->sick, "%s", msg);
  be->healthy.store(false);
  pthread_mutex_unlock(&be->mu);
}

int cuda_classify(struct cuda_backend *be, cudaStream_t stream, cudaError_t e, const char *call,
                  char *err, size_t err_len) {
  int name_len = (int)strcspn(call, "(");
  snprintf(err, err_len, "%.*s: %s: %s", name_len, call, cudaGetErrorName(e),
           cudaGetErrorString(e));
  (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) return -ENOMEM;
  bool sticky = known_sticky(e) || cudaGetLastError() != cudaSuccess;
  cudaError_t q = cudaStreamQuery(stream);
  if (q != cudaSuccess && q != cudaErrorNotReady) sticky = true;
  (void)cudaGetLastError();
  if (!sticky) return -EINVAL;
  mark_sick(be, err);
  return -EIO;
}

bool cuda_unhealthy(struct cuda_backend *be, char *err, size_t err_len) {
  if (be->healthy.load()) return false;
  pthread_mutex_lock(&be->mu);
  snprintf(err, err_len, "device unhealthy after an earlier error: %s", be->sick);
  pthread_mutex_unlock(&be->mu);
  return true;
}

int cuda_pool_alloc(struct cuda_backend *be, cudaStream_t stream, uint64_t count, float **out,
                    char *err, size_t err_len) {
  size_t bytes = (count ? count : 1) * sizeof(float);
  void *p = NULL;
  cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, be->pool, stream);
  if (e == cudaErrorMemoryAllocation) { /* memory the pool keeps but cannot place */
    (void)cudaGetLastError();
    if (cudaMemPoolTrimTo(be->pool, 0) == cudaSuccess)
      e = cudaMallocFromPoolAsync(&p, bytes, be->pool, stream);
  }
  if (e != cudaSuccess) {
    int rc = cuda_classify(be, stream, e, "cudaMallocAsync", err, err_len);
    if (rc == -ENOMEM) snprintf(err, err_len, "device out of memory allocating %zu bytes", bytes);
    return rc;
  }
  *out = (float *)p;
  return 0;
}

int cuda_func_attrs(struct cuda_backend *be, cudaStream_t stream, const void *func,
                    cudaFuncAttributes *attr, char *err, size_t err_len) {
  pthread_mutex_lock(&be->mu);
  for (int i = 0; i < be->n_attrs; i++) {
    if (be->attrs[i].func == func) {
      *attr = be->attrs[i].attr;
      pthread_mutex_unlock(&be->mu);
      return 0;
    }
  }
  pthread_mutex_unlock(&be->mu);
  cudaError_t e = cudaFuncGetAttributes(attr, func);
  if (e != cudaSuccess) return cuda_classify(be, stream, e, "cudaFuncGetAttributes", err, err_len);
  pthread_mutex_lock(&be->mu);
  if (be->n_attrs < ATTR_CACHE_MAX) {
    be->attrs[be->n_attrs].func = func;
    be->attrs[be->n_attrs].attr = *attr;
    be->n_attrs++;
  }
  pthread_mutex_unlock(&be->mu);
  return 0;
}

int cuda_func_occupancy(struct cuda_backend *be, cudaStream_t stream, const void *func, int threads,
                        size_t dyn_smem, int *blocks, char *err, size_t err_len) {
  pthread_mutex_lock(&be->mu);
  for (int i = 0; i < be->n_occ; i++) {
    if (be->occ[i].func == func && be->occ[i].threads == threads &&
        be->occ[i].dyn_smem == dyn_smem) {
      *blocks = be->occ[i].blocks;
      pthread_mutex_unlock(&be->mu);
      return 0;
    }
  }
  pthread_mutex_unlock(&be->mu);
  cudaError_t e = cudaSuccess;
  if (dyn_smem > 48 * 1024) {
    /* Raise the kernel's limit to dyn_smem, never lower it: a launcher may have raised it
     * further for its larger sizes (histogram best), and other lanes launch it meanwhile. */
    cudaFuncAttributes attr;
    e = cudaFuncGetAttributes(&attr, func);
    if (e == cudaSuccess && (size_t)attr.maxDynamicSharedSizeBytes < dyn_smem)
      e = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn_smem);
  }
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, func, threads, dyn_smem);
  if (e != cudaSuccess)
    return cuda_classify(be, stream, e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", err,
                         err_len);
  pthread_mutex_lock(&be->mu);
  if (be->n_occ < ATTR_CACHE_MAX) {
    be->occ[be->n_occ].func = func;
    be->occ[be->n_occ].threads = threads;
    be->occ[be->n_occ].dyn_smem = dyn_smem;
    be->occ[be->n_occ].blocks = *blocks;
    be->n_occ++;
  }
  pthread_mutex_unlock(&be->mu);
  return 0;
}

/* ---- lanes ---- */

int cuda_lane_pinned(struct cuda_backend *be, struct lane *l, size_t bytes, void **out, char *err,
                     size_t err_len) {
  if (l->pin_bytes < bytes) {
    if (l->pin) (void)cudaFreeHost(l->pin);
    l->pin = NULL;
    l->pin_bytes = 0;
    void *p = NULL;
    cudaError_t e = cudaMallocHost(&p, bytes);
    if (e != cudaSuccess) return cuda_classify(be, l->stream, e, "cudaMallocHost", err, err_len);
    l->pin = p;
    l->pin_bytes = bytes;
  }
  *out = l->pin;
  return 0;
}

/* Frees the lane's staging, pinned or not. */
static void lane_host_free(struct lane *l) {
  if (l->host && l->host_pinned)
    (void)cudaFreeHost(l->host);
  else
    free(l->host);
  l->host = NULL;
  l->host_bytes = 0;
}

int cuda_lane_host(struct lane *l, size_t count, float **out, char *err, size_t err_len) {
  size_t bytes = (count ? count : 1) * sizeof(float);
  if (l->host_bytes < bytes) {
    lane_host_free(l); /* no copy into it is in flight: a job sizes it once */
    void *p = NULL;
    l->host_pinned = bytes <= LANE_PINNED_STAGING_MAX && cudaMallocHost(&p, bytes) == cudaSuccess;
    if (!l->host_pinned) { /* too large to pin, or no pinned memory left: pageable */
      (void)cudaGetLastError();
      p = malloc(bytes);
    }
    l->host = p;
    l->host_bytes = l->host ? bytes : 0;
    if (!l->host) {
      snprintf(err, err_len, "host out of memory for a %zu-byte copy of the outputs", bytes);
      return -ENOMEM;
    }
  }
  *out = (float *)l->host;
  return 0;
}

int cuda_lane_aux(struct cuda_backend *be, struct lane *l, int n, char *err, size_t err_len) {
  while (l->n_aux < n) {
    cudaError_t e = cudaEventCreateWithFlags(&l->join[l->n_aux], cudaEventDisableTiming);
    if (e != cudaSuccess) return cuda_classify(be, l->stream, e, "cudaEventCreate", err, err_len);
    e = cudaStreamCreateWithFlags(&l->aux[l->n_aux], cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      (void)cudaEventDestroy(l->join[l->n_aux]);
      return cuda_classify(be, l->stream, e, "cudaStreamCreate", err, err_len);
    }
    l->n_aux++;
  }
  return 0;
}

/* ---- what a job may ask ---- */

static int validate_spec(const struct exp_spec *s, char *err, size_t err_len) {
  const struct exp_timing_params *t = &s->timing;
  if (!exp_desc(s->type)) {
    snprintf(err, err_len, "unknown experiment type %d", (int)s->type);
    return -EINVAL;
  }
  if (t->warmup < 0 || t->batches < 1 || t->batches > EXP_MAX_BATCHES || t->reps < 1) {
    snprintf(err, err_len,
             "timing out of range: warmup %d (>= 0), batches %d (1..%d), reps %d (>= 1)", t->warmup,
             t->batches, EXP_MAX_BATCHES, t->reps);
    return -EINVAL;
  }
  if (s->stop.min_samples < 0 || s->stop.min_samples > EXP_MAX_BATCHES ||
      !(s->stop.max_noise >= 0) || !(s->stop.max_time_s >= 0)) {
    snprintf(err, err_len,
             "stopping rule out of range: min_samples %d (0..%d), max_noise %g and "
             "max_time %g (>= 0)",
             s->stop.min_samples, EXP_MAX_BATCHES, s->stop.max_noise, s->stop.max_time_s);
    return -EINVAL;
  }
  const struct exp_desc *d = exp_desc(s->type);
  if (s->cold && (s->graph || (d->flags & EXP_NO_COLD))) {
    snprintf(err, err_len, "cold times kernel launches one by one: not with graph%s%s",
             d->flags & EXP_NO_COLD ? " or " : "", d->flags & EXP_NO_COLD ? d->name : "");
    return -EINVAL;
  }
  bool ok = s->n_variants >= 1 && s->n_variants <= EXP_MAX_VARIANTS;
  for (int i = 0; ok && i < s->n_variants; i++) {
    int v = s->variants[i];
    if (!d->runs) {
      ok = (v >= 0 && v < d->n_variants) || (d->user && exp_variant_is_user(v));
      continue;
    }
    ok = v >= d->runs->min && v <= d->runs->max && v <= LANE_MAX_AUX;
    for (int w = 0; !ok && d->runs->word && w < d->runs->n_word_runs; w++)
      ok = v == d->runs->word_runs[w];
  }
  for (int i = 0; ok && i < d->n_params; i++) ok = s->p[i] >= 0;
  if (!ok && d->runs)
    snprintf(err, err_len, "%s params out of range", d->name);
  else if (!ok)
    snprintf(err, err_len, "%s: variants or sizes out of range", d->name);
  return ok ? 0 : -EINVAL;
}

int cuda_validate(const struct backend_job *job, char *err, size_t err_len) {
  const struct exp_spec *s = job->spec;
  int rc = validate_spec(s, err, err_len);
  if (rc != 0) return rc;
  /* A problem's inputs given are checked against its plan where they are copied
   * (cuda_problem.cu's give_inputs). */
  for (int slot = 0; s->type != EXP_PROBLEM && slot < EXP_MAX_INPUTS; slot++) {
    const struct backend_buffer *buf = job->input[slot];
    if (slot >= exp_input_count(s->type)) {
      if (!buf) continue;
      snprintf(err, err_len, "a %s job has no input slot %d", exp_type_name(s->type), slot);
      return -EINVAL;
    }
    const char *name = exp_input_name(s->type, slot);
    if (!buf) {
      if (s->inputs[slot].kind == EXP_INPUT_SEED) continue;
      snprintf(err, err_len, "input %s: no buffer given for a buffer or job input", name);
      return -EINVAL;
    }
    struct exp_shape shape;
    exp_input_shape(s, slot, &shape);
    if (buf->count != (uint64_t)exp_shape_count(&shape) || (buf->count && !buf->data)) {
      snprintf(err, err_len, "input %s holds %llu floats, this job needs %lld", name,
               (unsigned long long)buf->count, (long long)exp_shape_count(&shape));
      return -EINVAL;
    }
  }
  if (job->n_after < 0 || (job->n_after > 0 && !job->after)) {
    snprintf(err, err_len, "n_after %d without fences", job->n_after);
    return -EINVAL;
  }
  return 0;
}

/* ---- buffers and fences: any thread, on the utility stream ---- */

static int cuda_buffer_upload(struct backend *b, const float *host, uint64_t count,
                              struct backend_buffer **out, char *err, size_t err_len) {
  struct cuda_backend *be = (struct cuda_backend *)b->impl;
  *out = NULL;
  if (cuda_unhealthy(be, err, err_len)) return -EIO;
  struct backend_buffer *buf = (struct backend_buffer *)calloc(1, sizeof *buf);
  if (!buf) {
    snprintf(err, err_len, "host out of memory");
    return -ENOMEM;
  }
  buf->count = count;
  buf->device = be->device;
  int rc = 0;
  pthread_mutex_lock(&be->util_mu);
  CUDA_TRY_UTIL(be, cudaSetDevice(be->device)); /* HTTP threads: the device may be unset */
  rc = cuda_pool_alloc(be, be->util, count, &buf->data, err, err_len);
  if (rc != 0) goto fail;
  if (count)
    CUDA_TRY_UTIL(be, cudaMemcpyAsync(buf->data, host, count * sizeof(float),
                                      cudaMemcpyHostToDevice, be->util));
  CUDA_TRY_UTIL(be, cudaStreamSynchronize(be->util));
  pthread_mutex_unlock(&be->util_mu);
  *out = buf;
  return 0;
fail:
  if (buf->data) (void)cudaFreeAsync(buf->data, be->util);
  (void)cudaGetLastError();
  pthread_mutex_unlock(&be->util_mu);
  free(buf);
  return rc;
}

static int cuda_buffer_download(struct backend *b, struct backend_buffer *buf,
                                struct backend_fence *fence, float *host, char *err,
                                size_t err_len) {
  struct cuda_backend *be = (struct cuda_backend *)b->impl;
  if (cuda_unhealthy(be, err, err_len)) return -EIO;
  int rc = 0;
  bool locked = false;
  CUDA_TRY_UTIL(be, cudaSetDevice(be->device));
  /* Wait for the writer before taking the stream, so that a download of a job still
   * running does not hold up every other upload and download. */
  if (fence) CUDA_TRY_UTIL(be, cudaEventSynchronize(fence->event));
  pthread_mutex_lock(&be->util_mu);
  locked = true;
  if (fence) CUDA_TRY_UTIL(be, cudaStreamWaitEvent(be->util, fence->event, 0));
  if (buf->count)
    CUDA_TRY_UTIL(be, cudaMemcpyAsync(host, buf->data, buf->count * sizeof(float),
                                      cudaMemcpyDeviceToHost, be->util));
  CUDA_TRY_UTIL(be, cudaStreamSynchronize(be->util));
  pthread_mutex_unlock(&be->util_mu);
  return 0;
fail:
  if (locked) pthread_mutex_unlock(&be->util_mu);
  return rc;
}

/* The engine frees a buffer only once no job uses it, so no ordering is needed
 * against the lanes' streams; the free is ordered after earlier downloads. */
static void cuda_buffer_free(struct backend *b, struct backend_buffer *buf) {
  struct cuda_backend *be = (struct cuda_backend *)b->impl;
  pthread_mutex_lock(&be->util_mu);
  if (cudaSetDevice(be->device) == cudaSuccess) (void)cudaFreeAsync(buf->data, be->util);
  (void)cudaGetLastError();
  pthread_mutex_unlock(&be->util_mu);
  free(buf);
}

/* Destroying an event that a stream still waits on is legal: the wait completes as
 * it would have. */
static void cuda_fence_free(struct backend *b, struct backend_fence *fence) {
  struct cuda_backend *be = (struct cuda_backend *)b->impl;
  if (cudaSetDevice(be->device) == cudaSuccess) (void)cudaEventDestroy(fence->event);
  (void)cudaGetLastError();
  free(fence);
}

/* ---- the backend ---- */

bool cuda_clocks_read(struct cuda_backend *be, struct nvml_reading *out) {
  if (!be->nvml) return false;
  pthread_mutex_lock(&be->nvml_mu);
  double now = clock_mono_s();
  if (!be->nvml_ok || now - be->nvml_at > NVML_MAX_AGE_S) {
    be->nvml_ok = nvml_loader_read(be->nvml, &be->nvml_last);
    be->nvml_at = now;
  }
  bool ok = be->nvml_ok;
  *out = be->nvml_last;
  pthread_mutex_unlock(&be->nvml_mu);
  return ok;
}

static void cuda_device_info(struct backend *b, struct backend_device_info *info) {
  struct cuda_backend *be = (struct cuda_backend *)b->impl;
  memset(info, 0, sizeof *info);
  snprintf(info->backend, sizeof info->backend, "cuda");
  snprintf(info->name, sizeof info->name, "%.127s", be->prop.name);
  info->index = be->device;
  const unsigned char *u = (const unsigned char *)be->prop.uuid.bytes; /* nvidia-smi's form */
  snprintf(info->uuid, sizeof info->uuid,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
           u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
           u[15]);
  snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%08X:%02X:%02X.0",
           (unsigned)be->prop.pciDomainID, (unsigned)be->prop.pciBusID,
           (unsigned)be->prop.pciDeviceID);
  info->cc_major = be->prop.major;
  info->cc_minor = be->prop.minor;
  info->sms = be->prop.multiProcessorCount;
  info->mem_total_bytes = be->prop.totalGlobalMem;
  info->mem_free_bytes = be->mem_free_at_open;
  size_t free_b = 0, total_b = 0;
  if (be->healthy.load() && cudaSetDevice(be->device) == cudaSuccess &&
      cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
    info->mem_free_bytes = free_b;
  (void)cudaGetLastError();
  info->sm_clock_mhz = be->sm_clock_khz / 1000;
  info->mem_clock_mhz = be->mem_clock_khz / 1000;
  info->mem_bus_bits = be->prop.memoryBusWidth;
  info->l2_bytes = be->prop.l2CacheSize;
  cudaRuntimeGetVersion(&info->runtime_version);
  cudaDriverGetVersion(&info->driver_version);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  info->cpu_cores = cores > 0 ? (int)cores : 0;
  pthread_mutex_lock(&be->mu);
  info->ceilings = be->ceilings;
  snprintf(info->ceilings_method, sizeof info->ceilings_method, "%s", be->ceilings_method);
  info->limits = be->limits;
  snprintf(info->limits_method, sizeof info->limits_method, "%s", be->limits_method);
  pthread_mutex_unlock(&be->mu);
  struct nvml_reading now = {};
  info->nvml = cuda_clocks_read(be, &now);
  snprintf(info->nvml_why, sizeof info->nvml_why, "%s",
           info->nvml ? ""
           : be->nvml ? "NVML could not read the SM clock"
                      : be->nvml_why);
  if (info->nvml) {
    info->sm_mhz_now = now.sm_mhz;
    info->temp_c = now.temp_c;
    info->power_w = now.power_w;
    info->clock_reasons = now.reasons;
    info->util = now.util;
    info->util_gpu_pct = now.util_gpu_pct;
    info->util_mem_pct = now.util_mem_pct;
    nvml_loader_driver_version(info->driver, sizeof info->driver);
  }
}

static uint64_t cuda_memory_limit(const struct backend *b) {
  return ((const struct cuda_backend *)b->impl)->mem_limit;
}

static bool cuda_healthy(const struct backend *b) {
  return ((const struct cuda_backend *)b->impl)->healthy.load();
}

static void lane_destroy(struct lane *l) {
  if (l->cublas) cublas_loader_get(NULL)->destroy(l->cublas); /* loaded: it made one */
  for (int k = 0; k < l->n_aux; k++) {
    cudaStreamDestroy(l->aux[k]);
    cudaEventDestroy(l->join[k]);
  }
  if (l->fork) cudaEventDestroy(l->fork);
  if (l->start) cudaEventDestroy(l->start);
  if (l->stop) cudaEventDestroy(l->stop);
  for (int k = 0; k < 2 * LANE_ALONE_PAIRS; k++)
    if (l->alone[k]) cudaEventDestroy(l->alone[k]);
  if (l->stream) cudaStreamDestroy(l->stream);
  if (l->pin) cudaFreeHost(l->pin);
  for (int g = 0; g < LANE_GEN_SLOTS; g++)
    if (l->gen[g].data) (void)cudaFree(l->gen[g].data);
  lane_host_free(l);
}

/* Frees whatever of be exists; safe on a partly opened backend. */
static void destroy(struct cuda_backend *be) {
  if (!be) return;
  (void)cudaSetDevice(be->device);
  if (be->lanes) {
    for (int i = 0; i < be->n_lanes; i++) lane_destroy(&be->lanes[i]);
    free(be->lanes);
  }
  if (be->util) {
    (void)cudaStreamSynchronize(be->util); /* frees still queued */
    cudaStreamDestroy(be->util);
  }
  (void)cudaGetLastError();
  cuda_profiler_close(be->profiler);
  reference_cache_free(be->refs);
  pthread_mutex_destroy(&be->nvml_mu);
  pthread_mutex_destroy(&be->util_mu);
  pthread_mutex_destroy(&be->mu);
  delete be;
}

static void cuda_free(struct backend *b) {
  destroy((struct cuda_backend *)b->impl);
  free(b);
}

/* Counters where CUPTI's range profiler opened with the device; otherwise a job asking
 * for them is refused, saying why (no CUPTI, counters forbidden to this user, ...). */
static enum backend_profiling cuda_profiling(const struct backend *b, char *why, size_t why_len) {
  const struct cuda_backend *be = (const struct cuda_backend *)b->impl;
  if (be->profiler) return BACKEND_PROFILE_REPLAY;
  snprintf(why, why_len, "device %d cannot read GPU performance counters: %s", be->device,
           be->profiler_why);
  return BACKEND_PROFILE_REFUSE;
}

static const struct backend_ops cuda_ops = {
    "cuda",          cuda_device_info,   cuda_memory_limit,     cuda_healthy,
    cuda_run,        cuda_buffer_upload, cuda_buffer_download,  cuda_buffer_free,
    cuda_fence_free, cuda_free,          cuda_measure_ceilings, cuda_profiling};

/* Reports a failed call during open: out of memory -> -ENOMEM, else
 * -ENODEV. */
static int open_fail(cudaError_t e, const char *call, char *why, size_t why_len) {
  snprintf(why, why_len, "%s: %s: %s", call, cudaGetErrorName(e), cudaGetErrorString(e));
  (void)cudaGetLastError();
  return e == cudaErrorMemoryAllocation ? -ENOMEM : -ENODEV;
}

static int open_lanes(struct cuda_backend *be, char *why, size_t why_len) {
  CUDA_TRY_OPEN("cudaStreamCreate", cudaStreamCreateWithFlags(&be->util, cudaStreamNonBlocking));
  be->lanes = (struct lane *)calloc((size_t)be->n_lanes, sizeof *be->lanes);
  if (!be->lanes) {
    snprintf(why, why_len, "out of host memory for %d lanes", be->n_lanes);
    return -ENOMEM;
  }
  for (int i = 0; i < be->n_lanes; i++) {
    struct lane *l = &be->lanes[i];
    CUDA_TRY_OPEN("cudaStreamCreate", cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking));
    CUDA_TRY_OPEN("cudaEventCreate", cudaEventCreate(&l->start));
    CUDA_TRY_OPEN("cudaEventCreate", cudaEventCreate(&l->stop));
    for (int k = 0; k < 2 * LANE_ALONE_PAIRS; k++)
      CUDA_TRY_OPEN("cudaEventCreate", cudaEventCreate(&l->alone[k]));
    CUDA_TRY_OPEN("cudaEventCreate", cudaEventCreateWithFlags(&l->fork, cudaEventDisableTiming));
  }
  return 0;
}

static int open_device(struct cuda_backend *be, char *why, size_t why_len) {
  int count = 0;
  CUDA_TRY_OPEN("cudaGetDeviceCount", cudaGetDeviceCount(&count));
  if (be->device < 0 || be->device >= count) {
    snprintf(why, why_len, "CUDA device %d not present (%d device%s)", be->device, count,
             count == 1 ? "" : "s");
    return -ENODEV;
  }
  CUDA_TRY_OPEN("cudaSetDevice", cudaSetDevice(be->device));
  CUDA_TRY_OPEN("cudaGetDeviceProperties", cudaGetDeviceProperties(&be->prop, be->device));
  CUDA_TRY_OPEN("cudaDeviceGetAttribute",
                cudaDeviceGetAttribute(&be->sm_clock_khz, cudaDevAttrClockRate, be->device));
  CUDA_TRY_OPEN("cudaDeviceGetAttribute",
                cudaDeviceGetAttribute(&be->mem_clock_khz, cudaDevAttrMemoryClockRate, be->device));
  /* NVML names devices by PCI bus id, not by CUDA's ordinal (CUDA_VISIBLE_DEVICES
   * and the ordering can differ). Without it, runs carry no clocks. */
  char pci[32] = "";
  if (cudaDeviceGetPCIBusId(pci, (int)sizeof pci, be->device) == cudaSuccess)
    be->nvml = nvml_loader_device(pci, be->nvml_why, sizeof be->nvml_why);
  else
    snprintf(be->nvml_why, sizeof be->nvml_why, "cudaDeviceGetPCIBusId failed");
  (void)cudaGetLastError();
  /* A device this binary has no code for fails here rather than on every launch. */
  cudaFuncAttributes attr;
  CUDA_TRY_OPEN("cudaFuncGetAttributes (kernel image)",
                cudaFuncGetAttributes(&attr, gen_kernel_func()));
  size_t free_b = 0, total_b = 0;
  CUDA_TRY_OPEN("cudaMemGetInfo", cudaMemGetInfo(&free_b, &total_b));
  be->mem_free_at_open = free_b;
  be->mem_limit = (uint64_t)((double)free_b * 0.9);
  /* Freed blocks stay in the pool for the next job instead of going back to the
   * driver (and being mapped again at every allocation). */
  CUDA_TRY_OPEN("cudaDeviceGetDefaultMemPool", cudaDeviceGetDefaultMemPool(&be->pool, be->device));
  uint64_t threshold = UINT64_MAX;
  CUDA_TRY_OPEN("cudaMemPoolSetAttribute",
                cudaMemPoolSetAttribute(be->pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  int rc = open_lanes(be, why, why_len);
  if (rc == 0 &&
      cuda_profiler_open(be->device, &be->profiler, be->profiler_why, sizeof be->profiler_why) != 0)
    be->profiler = NULL; /* a device without counters still times jobs */
  return rc;
}

/* -ENODEV (why says why) when no CUDA device answers. */
static int cuda_open(int device, int n_lanes, struct backend **out, char *why, size_t why_len) {
  *out = NULL;
  if (n_lanes < 1) {
    snprintf(why, why_len, "n_lanes must be >= 1, not %d", n_lanes);
    return -EINVAL;
  }
  struct cuda_backend *be = new (std::nothrow) cuda_backend();
  struct backend *b = (struct backend *)calloc(1, sizeof *b);
  if (!be || !b) {
    delete be;
    free(b);
    snprintf(why, why_len, "out of host memory");
    return -ENOMEM;
  }
  pthread_mutex_init(&be->mu, NULL);
  pthread_mutex_init(&be->util_mu, NULL);
  pthread_mutex_init(&be->nvml_mu, NULL);
  be->healthy.store(true);
  be->device = device;
  be->n_lanes = n_lanes;
  int rc = reference_cache_new(REFERENCE_CACHE_ENTRIES, REFERENCE_CACHE_BYTES, &be->refs);
  if (rc != 0) snprintf(why, why_len, "out of host memory");
  if (rc == 0) rc = open_device(be, why, why_len);
  if (rc != 0) {
    destroy(be);
    free(b);
    return rc;
  }
  b->ops = &cuda_ops;
  b->n_lanes = n_lanes;
  b->impl = be;
  snprintf(why, why_len, "%s (cc %d.%d, %d SMs), %d stream%s", be->prop.name, be->prop.major,
           be->prop.minor, be->prop.multiProcessorCount, n_lanes, n_lanes == 1 ? "" : "s");
  *out = b;
  return 0;
}

static int cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

/* Peer access is a property of the pair; each device records whom it can read. */
static void cuda_connect(struct backend *const *devices, int n) {
  for (int i = 0; i < n; i++) {
    if (devices[i]->ops != &cuda_ops) continue;
    struct cuda_backend *a = (struct cuda_backend *)devices[i]->impl;
    for (int k = 0; k < n; k++) {
      if (k == i || devices[k]->ops != &cuda_ops) continue;
      struct cuda_backend *b = (struct cuda_backend *)devices[k]->impl;
      int can = 0;
      if (b->device >= 64 || cudaDeviceCanAccessPeer(&can, a->device, b->device) != cudaSuccess ||
          !can)
        continue;
      cudaSetDevice(a->device);
      cudaError_t e = cudaDeviceEnablePeerAccess(b->device, 0);
      if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled) a->peer[b->device] = true;
      (void)cudaGetLastError();
    }
  }
}

extern "C" const struct backend_plugin cuda_backend_plugin = {BACKEND_CUDA, cuda_open,
                                                              cuda_device_count, cuda_connect};
