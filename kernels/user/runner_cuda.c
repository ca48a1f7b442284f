/* gpulab-runner's CUDA mode: its own context on one device; the job's buffers opened
 * from gpulabd's IPC handles (cudaIpcOpenMemHandle); images loaded with
 * cuModuleLoadData and launched with cuLaunchKernel on a stream of its own, timed with
 * its own events. The driver API comes from the runtime (cudaGetDriverEntryPoint-
 * ByVersion), so nothing links libcuda. Any CUDA error once launches were issued is a
 * fault: the context may be lost, so the runner reports it and exits. A cold run
 * flushes the L2 before every timed launch with gpulabd's own flush (cuda_l2flush.cu,
 * built in here too) from a scratch buffer this runner allocates on its first cold run
 * and keeps for its life. Before every launch the module's variables are put back to
 * their initial values from the image (uimage.h: zero-initialized ones with a memset,
 * the others copied from pinned host memory taken from the image at load), and a run's
 * scratch (runner_run_msg.scratch_bytes) is zeroed, so that no launch sees what
 * another left. A fresh run's timed launches each get inputs generated from their own
 * seed and are checked after, untimed (runner_check.h). A problem's buffers
 * (RUNNER_MSG_PROBLEM) are this runner's own (runner_problem.h): its RUNs launch with
 * them as arguments, and each fresh launch is checked against the problem's reference
 * launched on the same inputs just before it. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/backends/cuda/cuda_l2flush.h"
#include "kernels/backends/cuda/cuda_profiler.h"
#include "kernels/histogram/histogram.h"
#include "kernels/user/runner_check.h"
#include "kernels/user/runner_impl.h"
#include "kernels/user/runner_problem.h"
#include "kernels/user/uimage.h"

typedef CUresult (*load_fn)(CUmodule *, const void *);
typedef CUresult (*unload_fn)(CUmodule);
typedef CUresult (*getfn_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*attr_get_fn)(int *, CUfunction_attribute, CUfunction);
typedef CUresult (*attr_set_fn)(CUfunction, CUfunction_attribute, int);
typedef CUresult (*errname_fn)(CUresult, const char **);
typedef CUresult (*getglobal_fn)(CUdeviceptr *, size_t *, CUmodule, const char *);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void **);
typedef CUresult (*occupancy_fn)(int *, CUfunction, int, size_t);

static struct {
  load_fn load;
  unload_fn unload;
  getfn_fn get_function;
  launch_fn launch;
  attr_get_fn attr_get;
  attr_set_fn attr_set;
  errname_fn error_name;
  getglobal_fn get_global;
  coop_fn launch_cooperative;
  occupancy_fn max_blocks_per_sm;
} drv;

static cudaStream_t stream;
static cudaEvent_t *events; /* 2 per launch of the largest per-launch-timed run */
static uint32_t n_events;
static int max_optin;
static int n_sms, l2_bytes; /* the device's, for the L2 flush */
static float *flush_buf;    /* cold: l2_flush_floats(l2_bytes) + 4 floats (the sink), kept */
static size_t flush_len;    /* floats a flush reads */

/* One module-scope variable of a loaded module, put back before every launch. */
#define VAR_ZERO UINT64_MAX
struct var {
  CUdeviceptr d;
  uint64_t bytes;
  uint64_t from; /* its initial bytes' offset in the module's init, or VAR_ZERO */
};

#define MAX_MODULES 32
static struct {
  bool used;
  uint8_t key[32];
  CUmodule mod;
  CUfunction fn;
  uint64_t last_use;
  struct var *vars; /* owned */
  int n_vars;
  uint8_t *init; /* pinned (cudaMallocHost): the variables' initial bytes */
} mods[MAX_MODULES];

static CUdeviceptr scratch; /* runs' scratch (runner_run_msg.scratch_bytes), kept and grown */
static uint64_t scratch_cap;
static struct runner_check_slot *slots, *h_slots; /* fresh runs' findings, one per launch, kept */
static uint32_t n_slots;
static uint64_t use_clock;

static struct runner_problem *prob; /* the problem's buffers, from PROBLEM to DETACH */

static struct {
  int n;
  void *base[RUNNER_MAX_BUFFERS]; /* as opened: close these */
  char *ptr[RUNNER_MAX_BUFFERS];  /* base + offset */
  uint64_t bytes[RUNNER_MAX_BUFFERS];
} att;

static const char *cu_name(CUresult r) {
  const char *s = NULL;
  if (drv.error_name && drv.error_name(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA_ERROR_UNKNOWN";
}

static int resolve(const char *sym, void **slot, char *msg, size_t msg_len) {
  enum cudaDriverEntryPointQueryResult q;
  cudaError_t e = cudaGetDriverEntryPointByVersion(sym, slot, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*slot) {
    snprintf(msg, msg_len, "the driver has no %s (%s)", sym, cudaGetErrorName(e));
    return -ENOSYS;
  }
  return 0;
}

static int cuda_init(int device, struct runner_hello_msg *h, char *msg, size_t msg_len) {
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaFree(0); /* the context, now */
  if (e != cudaSuccess) {
    snprintf(msg, msg_len, "device %d: %s: %s", device, cudaGetErrorName(e), cudaGetErrorString(e));
    return -ENODEV;
  }
  void *p[10];
  static const char *const syms[] = {"cuModuleLoadData",
                                     "cuModuleUnload",
                                     "cuModuleGetFunction",
                                     "cuLaunchKernel",
                                     "cuFuncGetAttribute",
                                     "cuFuncSetAttribute",
                                     "cuGetErrorName",
                                     "cuModuleGetGlobal",
                                     "cuLaunchCooperativeKernel",
                                     "cuOccupancyMaxActiveBlocksPerMultiprocessor"};
  for (int i = 0; i < 10; i++)
    if (resolve(syms[i], &p[i], msg, msg_len)) return -ENOSYS;
  memcpy(&drv.load, &p[0], sizeof p[0]);
  memcpy(&drv.unload, &p[1], sizeof p[1]);
  memcpy(&drv.get_function, &p[2], sizeof p[2]);
  memcpy(&drv.launch, &p[3], sizeof p[3]);
  memcpy(&drv.attr_get, &p[4], sizeof p[4]);
  memcpy(&drv.attr_set, &p[5], sizeof p[5]);
  memcpy(&drv.error_name, &p[6], sizeof p[6]);
  memcpy(&drv.get_global, &p[7], sizeof p[7]);
  memcpy(&drv.launch_cooperative, &p[8], sizeof p[8]);
  memcpy(&drv.max_blocks_per_sm, &p[9], sizeof p[9]);
  e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    snprintf(msg, msg_len, "cudaStreamCreate: %s", cudaGetErrorName(e));
    return -ENODEV;
  }
  struct {
    enum cudaDeviceAttr a;
    int32_t *v;
  } attrs[] = {{cudaDevAttrComputeCapabilityMajor, &h->cc_major},
               {cudaDevAttrComputeCapabilityMinor, &h->cc_minor},
               {cudaDevAttrMultiProcessorCount, &h->sms},
               {cudaDevAttrMaxThreadsPerBlock, &h->max_threads_per_block},
               {cudaDevAttrMaxBlockDimX, &h->max_block[0]},
               {cudaDevAttrMaxBlockDimY, &h->max_block[1]},
               {cudaDevAttrMaxBlockDimZ, &h->max_block[2]},
               {cudaDevAttrMaxGridDimX, &h->max_grid[0]},
               {cudaDevAttrMaxGridDimY, &h->max_grid[1]},
               {cudaDevAttrMaxGridDimZ, &h->max_grid[2]},
               {cudaDevAttrMaxSharedMemoryPerBlock, &h->max_shared_per_block},
               {cudaDevAttrMaxSharedMemoryPerBlockOptin, &h->max_shared_optin}};
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    int v = 0;
    cudaDeviceGetAttribute(&v, attrs[i].a, device);
    *attrs[i].v = v;
  }
  max_optin = h->max_shared_optin;
  n_sms = h->sms;
  if (cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device) != cudaSuccess)
    l2_bytes = 0;
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess)
    snprintf(h->name, sizeof h->name, "%.95s", prop.name);
  return 0;
}

static void module_unload(int i) {
  drv.unload(mods[i].mod);
  free(mods[i].vars);
  if (mods[i].init) cudaFreeHost(mods[i].init);
  mods[i].vars = NULL, mods[i].init = NULL, mods[i].n_vars = 0;
  mods[i].used = false;
}

/* Ends a job: its buffers closed, its problem's freed and every module unloaded (a
 * second wall, besides the variables put back before every launch, against answers
 * memoized across jobs). */
static void cuda_detach(void) {
  for (int i = 0; i < att.n; i++) cudaIpcCloseMemHandle(att.base[i]);
  att.n = 0;
  runner_problem_free(prob);
  prob = NULL;
  for (int i = 0; i < MAX_MODULES; i++)
    if (mods[i].used) module_unload(i);
}

/* Finds each variable of image (uimage.h) in module i and keeps what putting it back
 * takes: its address, and its initial bytes in pinned memory. A variable the driver
 * does not find by name is found from another of its section, whose variables keep
 * their offsets; failing that, the compiler's own ("$str", printf's strings: a stash
 * there gains nothing on fresh inputs) is left as it is, said on stderr. Returns 0, or
 * -EINVAL / -ENOMEM with msg: a module with a variable of the user's that cannot be
 * put back is not run. */
static int vars_ready(int i, const void *image, size_t image_bytes, char *msg, size_t msg_len) {
  struct uimage im;
  int rc = uimage_inspect(image, image_bytes, &im, msg, msg_len);
  if (rc) return rc;
  CUdeviceptr *at = calloc((size_t)im.n_vars + 1, sizeof *at);
  mods[i].vars = calloc((size_t)im.n_vars + 1, sizeof *mods[i].vars);
  uint64_t init_bytes = 0;
  for (int v = 0; v < im.n_vars; v++) init_bytes += im.vars[v].init ? im.vars[v].bytes : 0;
  if (!at || !mods[i].vars ||
      (init_bytes && cudaMallocHost((void **)&mods[i].init, init_bytes) != cudaSuccess)) {
    snprintf(msg, msg_len, "load: out of memory for %d variables", im.n_vars);
    rc = -ENOMEM;
    goto out;
  }
  for (int v = 0; v < im.n_vars; v++) {
    size_t bytes = 0;
    if (drv.get_global(&at[v], &bytes, mods[i].mod, im.vars[v].name) != CUDA_SUCCESS ||
        bytes < im.vars[v].bytes)
      at[v] = 0;
  }
  uint64_t off = 0;
  int n_kept = 0;
  for (int v = 0; v < im.n_vars; v++) {
    const struct uimage_var *x = &im.vars[v];
    for (int w = 0; !at[v] && w < im.n_vars; w++) /* a sibling of its section */
      if (at[w] && im.vars[w].section == x->section) at[v] = at[w] - im.vars[w].offset + x->offset;
    if (!at[v] && x->name[0] == '$') { /* the compiler's own (printf's strings): skipped */
      fprintf(stderr, "gpulab-runner: %s (%llu bytes) is not found by name: not put back\n",
              x->name, (unsigned long long)x->bytes);
      continue;
    }
    if (!at[v]) {
      snprintf(
          msg, msg_len,
          "load: variable %.80s is not in the loaded module: it could not be put back before a launch",
          x->name);
      rc = -EINVAL;
      goto out;
    }
    struct var *d = &mods[i].vars[n_kept++];
    d->d = at[v], d->bytes = x->bytes, d->from = VAR_ZERO;
    if (x->init) {
      memcpy(mods[i].init + off, x->init, x->bytes);
      d->from = off;
      off += x->bytes;
    }
  }
  mods[i].n_vars = n_kept;
out:
  free(at);
  uimage_release(&im);
  cudaGetLastError();
  return rc;
}

/* Puts module i's variables back and zeroes the scratch of a run that has one, on the
 * stream, before a launch. */
static cudaError_t state_reset(int i, uint64_t scratch_bytes) {
  cudaError_t e = cudaSuccess;
  for (int v = 0; v < mods[i].n_vars && e == cudaSuccess; v++) {
    const struct var *x = &mods[i].vars[v];
    e = x->from == VAR_ZERO ? cudaMemsetAsync((void *)(uintptr_t)x->d, 0, x->bytes, stream)
                            : cudaMemcpyAsync((void *)(uintptr_t)x->d, mods[i].init + x->from,
                                              x->bytes, cudaMemcpyHostToDevice, stream);
  }
  if (e == cudaSuccess && scratch_bytes)
    e = cudaMemsetAsync((void *)(uintptr_t)scratch, 0, scratch_bytes, stream);
  return e;
}

/* Whether a fresh run's inputs fit the attached buffers; else -EINVAL with msg. */
static int fresh_ok(const struct runner_run_msg *m, char *msg, size_t msg_len) {
  const struct runner_fresh *f = &m->fresh;
  bool ok = f->check <= RUNNER_CHECK_HISTOGRAM && f->n_in >= 1 && f->n_in <= RUNNER_MAX_FRESH &&
            f->n_in <= (uint32_t)att.n;
  for (uint32_t i = 0; ok && i < f->n_in; i++) ok = f->floats[i] * sizeof(float) <= att.bytes[i];
  for (int i = 0; ok && i < 4; i++) ok = f->p[i] >= 0;
  if (ok && f->check == RUNNER_CHECK_GEMM) ok = f->n_in == 2;
  /* The 1-D checks read n = p[0] inputs and n outputs (scan) or p[1] counts (histogram). */
  if (ok && (f->check == RUNNER_CHECK_REDUCE || f->check == RUNNER_CHECK_SCAN ||
             f->check == RUNNER_CHECK_HISTOGRAM))
    ok = (uint64_t)f->p[0] <= f->floats[0] &&
         m->out_floats >= (f->check == RUNNER_CHECK_SCAN        ? (uint64_t)f->p[0]
                           : f->check == RUNNER_CHECK_HISTOGRAM ? (uint64_t)f->p[1]
                                                                : 1) &&
         (f->check != RUNNER_CHECK_HISTOGRAM || (f->p[1] >= 1 && f->p[1] <= HISTOGRAM_MAX_BINS));
  if (!ok) snprintf(msg, msg_len, "run: fresh inputs that do not fit the buffers");
  return ok ? 0 : -EINVAL;
}

/* The slots of a fresh run of n launches, grown when needed. */
static int slots_ready(uint32_t n, char *msg, size_t msg_len) {
  if (n <= n_slots) return 0;
  if (slots) cudaFree(slots);
  free(h_slots);
  n_slots = 0;
  h_slots = malloc(n * sizeof *h_slots);
  cudaError_t e = h_slots ? cudaMalloc((void **)&slots, n * sizeof *slots)
                          : cudaErrorMemoryAllocation;
  if (e != cudaSuccess) {
    cudaGetLastError();
    slots = NULL;
    snprintf(msg, msg_len, "run: the check's %u slots: %s", n, cudaGetErrorName(e));
    return -ENOMEM;
  }
  n_slots = n;
  return 0;
}

/* The first launch of a fresh run whose slot holds a finding, into done. */
static void fresh_report(uint32_t n, uint32_t n_in, struct runner_done_msg *done) {
  done->fresh_checked = n;
  for (uint32_t l = 0; l < n && !done->bad_launch; l++) {
    const struct runner_check_slot *s = &h_slots[l];
    if (s->out_bad) {
      done->bad_launch = l + 1, done->bad_what = 1;
      done->bad_count = s->out_bad, done->bad_index = s->out_first;
    }
    for (uint32_t i = 0; i < n_in && !done->bad_launch; i++)
      if (s->in_bad[i]) {
        done->bad_launch = l + 1, done->bad_what = 2, done->bad_input = i;
        done->bad_count = s->in_bad[i], done->bad_index = s->in_first[i];
      }
  }
}

/* The scratch of a run asking for bytes, grown when needed. */
static int scratch_ready(uint64_t bytes, char *msg, size_t msg_len) {
  if (bytes <= scratch_cap) return 0;
  if (scratch) cudaFree((void *)(uintptr_t)scratch);
  scratch = 0, scratch_cap = 0;
  void *d = NULL;
  cudaError_t e = cudaMalloc(&d, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    snprintf(msg, msg_len, "run: %llu bytes of scratch: %s", (unsigned long long)bytes,
             cudaGetErrorName(e));
    return -ENOMEM;
  }
  scratch = (CUdeviceptr)(uintptr_t)d, scratch_cap = bytes;
  return 0;
}

static int cuda_attach(const struct runner_attach_msg *m, const int *fds, int n_fds, char *msg,
                       size_t msg_len) {
  for (int i = 0; i < n_fds; i++) close(fds[i]);
  if (m->n > RUNNER_MAX_BUFFERS) return -EINVAL;
  for (uint32_t i = 0; i < m->n; i++) {
    cudaIpcMemHandle_t h;
    memcpy(&h, m->buf[i].ipc, sizeof h);
    void *base = NULL;
    cudaError_t e = cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      snprintf(msg, msg_len, "cudaIpcOpenMemHandle of buffer %u: %s", i, cudaGetErrorName(e));
      cudaGetLastError();
      cuda_detach();
      return -EIO;
    }
    att.base[att.n] = base;
    att.ptr[att.n] = (char *)base + m->buf[i].offset;
    att.bytes[att.n++] = m->buf[i].bytes;
  }
  return 0;
}

static int find_module(const uint8_t key[32]) {
  for (int i = 0; i < MAX_MODULES; i++)
    if (mods[i].used && !memcmp(mods[i].key, key, 32)) return i;
  return -1;
}

static int cuda_load(const struct runner_load_msg *m, const void *image,
                     struct runner_loaded_msg *out, char *msg, size_t msg_len) {
  int i = find_module(m->key);
  out->cached = i >= 0;
  if (i < 0) {
    int victim = 0;
    for (i = 0; i < MAX_MODULES; i++) {
      if (!mods[i].used) break;
      if (mods[i].last_use < mods[victim].last_use) victim = i;
    }
    if (i == MAX_MODULES) {
      i = victim;
      module_unload(i);
    }
    char entry[65];
    snprintf(entry, sizeof entry, "%.64s", m->entry);
    CUresult r = drv.load(&mods[i].mod, image);
    if (r != CUDA_SUCCESS) {
      snprintf(msg, msg_len, "cuModuleLoadData: %s", cu_name(r));
      return -EINVAL;
    }
    r = drv.get_function(&mods[i].fn, mods[i].mod, entry);
    if (r != CUDA_SUCCESS) {
      module_unload(i);
      snprintf(msg, msg_len, "cuModuleGetFunction(%s): %s", entry, cu_name(r));
      return -ENOENT;
    }
    int rc = vars_ready(i, image, m->image_bytes, msg, msg_len);
    if (rc) {
      module_unload(i);
      return rc;
    }
    memcpy(mods[i].key, m->key, 32);
    mods[i].used = true;
  }
  mods[i].last_use = ++use_clock;
  CUfunction f = mods[i].fn;
  drv.attr_get(&out->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
  drv.attr_get(&out->static_shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
  drv.attr_get(&out->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
  drv.attr_get(&out->max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
  return 0;
}

static int grow_events(uint32_t n, char *msg, size_t msg_len) {
  if (n <= n_events) return 0;
  cudaEvent_t *e = realloc(events, sizeof *e * n);
  if (!e) return -ENOMEM;
  events = e;
  for (; n_events < n; n_events++) {
    cudaError_t c = cudaEventCreate(&events[n_events]);
    if (c != cudaSuccess) {
      snprintf(msg, msg_len, "cudaEventCreate: %s", cudaGetErrorName(c));
      return -ENOMEM;
    }
  }
  return 0;
}

/* The scratch buffer the L2 flush reads, made on the first cold run and kept (zeroed
 * once; what it holds does not matter, only that it is read through L2). */
static int flush_ready(char *msg, size_t msg_len) {
  if (flush_buf) return 0;
  size_t n = l2_flush_floats(l2_bytes);
  if (n == 0) {
    snprintf(msg, msg_len, "cold: the device reports no L2 size (cudaDevAttrL2CacheSize)");
    return -ENOTSUP;
  }
  float *d = NULL;
  cudaError_t e = cudaMalloc((void **)&d, (n + 4) * sizeof(float));
  if (e == cudaSuccess) e = cudaMemsetAsync(d, 0, (n + 4) * sizeof(float), stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) {
    snprintf(msg, msg_len, "cold: the L2 flush's buffer of %zu bytes: %s", (n + 4) * sizeof(float),
             cudaGetErrorName(e));
    if (d) cudaFree(d);
    cudaGetLastError();
    return -ENOMEM;
  }
  flush_buf = d, flush_len = n;
  return 0;
}

/* A CUDA error after launches were issued: the kernel's fault. */
static int fault_of(cudaError_t e, struct runner_fault_msg *fault) {
  snprintf(fault->name, sizeof fault->name, "%s", cudaGetErrorName(e));
  snprintf(fault->msg, sizeof fault->msg, "%s", cudaGetErrorString(e));
  return 1;
}

/* The most arguments of a launch: a problem's inputs, outputs and params. */
#define PLAN_MAX_ARGS (2 * RUNNER_PROBLEM_MAX_BUFFERS + RUNNER_PROBLEM_MAX_PARAMS)

/* A step before or after a launch failed (what): the fault of an earlier launch when
 * the stream holds one (1), else -EIO with msg. */
static int step_failed(cudaError_t e, struct runner_fault_msg *fault, char *msg, size_t msg_len,
                       const char *what) {
  cudaError_t se = cudaStreamSynchronize(stream);
  if (se != cudaSuccess) return fault_of(se, fault); /* an earlier launch faulted */
  snprintf(msg, msg_len, "%s: %s", what, cudaGetErrorName(e));
  return -EIO;
}

/* Lets f take bytes of dynamic shared memory: 0, or -EINVAL with msg. */
static int shared_allow(CUfunction f, uint32_t bytes, char *msg, size_t msg_len) {
  if ((int)bytes > max_optin) {
    snprintf(msg, msg_len, "run: %u bytes of dynamic shared memory, the device allows %d", bytes,
             max_optin);
    return -EINVAL;
  }
  CUresult r = drv.attr_set(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
  if (r != CUDA_SUCCESS) {
    snprintf(msg, msg_len, "cuFuncSetAttribute(max dynamic shared %u): %s", bytes, cu_name(r));
    return -EINVAL;
  }
  return 0;
}

/* The problem's reference (module mi) launched with params, after its variables and
 * the scratch are put back; timed: between events 0 and 1. 0, 1 a fault (in fault), or
 * -errno with msg. */
static int ref_launch(int mi, void **params, bool timed, struct runner_fault_msg *fault, char *msg,
                      size_t msg_len) {
  const struct runner_problem_msg *pm = &prob->m;
  cudaError_t e = state_reset(mi, pm->scratch_bytes);
  if (e != cudaSuccess)
    return step_failed(e, fault, msg, msg_len, "putting the reference's variables back");
  if (timed) cudaEventRecord(events[0], stream);
  CUresult r = drv.launch(mods[mi].fn, pm->ref_grid[0], pm->ref_grid[1], pm->ref_grid[2],
                          pm->ref_block[0], pm->ref_block[1], pm->ref_block[2],
                          pm->ref_shared_bytes, (CUstream)stream, params, NULL);
  if (r != CUDA_SUCCESS) {
    e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) return fault_of(e, fault); /* an earlier launch faulted */
    snprintf(msg, msg_len,
             "the reference's cuLaunchKernel(grid %u,%u,%u block %u,%u,%u, %u B shared): %s",
             pm->ref_grid[0], pm->ref_grid[1], pm->ref_grid[2], pm->ref_block[0], pm->ref_block[1],
             pm->ref_block[2], pm->ref_shared_bytes, cu_name(r));
    return -EINVAL;
  }
  if (timed) cudaEventRecord(events[1], stream);
  return 0;
}

/* PROBLEM: the previous problem's buffers freed, m's made and its inputs generated
 * from m->seed (or copied from the attached buffers that give them), the reference launched twice on them (its first launch's outputs in
 * the fresh set, its second's kept as the truth for the job's inputs) and the two
 * compared, bit for bit or (nondeterministic) by the outputs' rules. Every set is
 * poisoned first, so that no output a kernel leaves unwritten holds what the memory
 * held before. */
static int cuda_problem(const struct runner_problem_msg *m, struct runner_problem_ready_msg *ready,
                        struct runner_fault_msg *fault, char *msg, size_t msg_len) {
  runner_problem_free(prob);
  prob = NULL;
  int mi = find_module(m->ref_key);
  if (mi < 0) {
    snprintf(msg, msg_len, "problem: the reference's image is not loaded");
    return -ENOENT;
  }
  mods[mi].last_use = ++use_clock;
  int rc = runner_problem_new(m, &prob, msg, msg_len);
  if (rc) return rc;
  for (uint32_t i = 0; i < m->n_in && rc == 0; i++) {
    uint32_t b = m->in[i].given;
    if (b && b <= (uint32_t)att.n)
      rc = runner_problem_give(prob, i, att.ptr[b - 1], att.bytes[b - 1], msg, msg_len);
    else if (b)
      rc = -EINVAL,
      snprintf(msg, msg_len, "problem: input %u given in buffer %u of %d", i, b - 1, att.n);
  }
  if (rc) goto fail;
  if ((rc = scratch_ready(m->scratch_bytes, msg, msg_len)) ||
      (rc = shared_allow(mods[mi].fn, m->ref_shared_bytes, msg, msg_len)) ||
      (rc = grow_events(2, msg, msg_len)))
    goto fail;
  void *ptrs[2][2 * RUNNER_PROBLEM_MAX_BUFFERS], *params[2][PLAN_MAX_ARGS + 1];
  int32_t ints[RUNNER_PROBLEM_MAX_PARAMS];
  void *const *sets[2] = {prob->ref_fresh, prob->ref};
  for (int k = 0; k < 2; k++) {
    int n = runner_problem_args(prob, sets[k], ptrs[k], ints, params[k]);
    if (m->scratch_bytes) params[k][n] = &scratch;
  }
  cudaError_t e = cudaMemsetAsync(prob->out[0][0], 0xff, prob->set_bytes * (m->n_runs + 2), stream);
  for (int k = 0; k < 2 && e == cudaSuccess && rc == 0; k++) {
    e = runner_problem_job_inputs(prob, stream); /* as the reference found them */
    if (e == cudaSuccess) rc = ref_launch(mi, params[k], k == 1, fault, msg, msg_len);
  }
  if (rc) goto fail;
  if (e == cudaSuccess) e = runner_problem_check_reference(prob, stream);
  if (e == cudaSuccess) e = runner_problem_job_inputs(prob, stream);
  if (e != cudaSuccess) {
    rc = step_failed(e, fault, msg, msg_len, "problem: generating or comparing");
    goto fail;
  }
  float ms = 0;
  if ((e = cudaStreamSynchronize(stream)) != cudaSuccess ||
      (e = cudaEventElapsedTime(&ms, events[0], events[1])) != cudaSuccess ||
      (e = runner_problem_read_reference(prob, ready)) != cudaSuccess)
    return fault_of(e, fault);
  ready->ref_ms = ms;
  /* Their answers compared, the reference's sets hold nothing a kernel could copy. */
  e = cudaMemsetAsync(prob->out[0][0], 0xff, prob->set_bytes * (m->n_runs + 2), stream);
  return e == cudaSuccess ? 0 : fault_of(e, fault);
fail: /* no half-made problem: its runs are refused */
  if (rc != 1) {
    runner_problem_free(prob);
    prob = NULL;
  }
  return rc;
}

/* One run's plan: its kernel, its arguments bound, and what each launch needs first. */
struct run_plan {
  const struct runner_run_msg *m;
  int mi; /* its module */
  CUfunction f;
  void *ptrs[PLAN_MAX_ARGS];
  int32_t ints[PLAN_MAX_ARGS];
  void *params[PLAN_MAX_ARGS + 1]; /* and the scratch */
  uint64_t scratch_bytes;
  bool cold, fresh;
  bool per_launch; /* each launch timed alone: something is done before each */
  float *fresh_in[RUNNER_MAX_FRESH];
  void *out; /* what poisoning fills */
  size_t out_bytes;
  /* A problem's run (m->problem.on); when fresh, its reference (module ref_mi, -1:
   * none) launched on each launch's inputs first, into the problem's fresh set. */
  bool problem;
  int ref_mi;
  void *ref_ptrs[2 * RUNNER_PROBLEM_MAX_BUFFERS];
  void *ref_params[PLAN_MAX_ARGS + 1];
};

/* An experiment's run: m's arguments from the attached buffers. Their count, or
 * -EINVAL with msg. */
static int bind_args(const struct runner_run_msg *m, struct run_plan *p, char *msg,
                     size_t msg_len) {
  if (m->n_args > RUNNER_MAX_ARGS || m->out_buffer >= (uint32_t)att.n ||
      m->out_floats * sizeof(float) > att.bytes[m->out_buffer]) {
    snprintf(msg, msg_len, "run: bad arguments or output");
    return -EINVAL;
  }
  for (uint32_t i = 0; i < m->n_args; i++) {
    if (m->args[i].kind == RUNNER_ARG_BUFFER) {
      if (m->args[i].value < 0 || m->args[i].value >= att.n) {
        snprintf(msg, msg_len, "run: argument %u names buffer %d of %d", i, m->args[i].value,
                 att.n);
        return -EINVAL;
      }
      p->ptrs[i] = att.ptr[m->args[i].value];
      p->params[i] = &p->ptrs[i];
    } else {
      p->ints[i] = m->args[i].value;
      p->params[i] = &p->ints[i];
    }
  }
  p->scratch_bytes = m->scratch_bytes;
  p->out = att.ptr[m->out_buffer];
  p->out_bytes = m->out_floats * sizeof(float);
  return (int)m->n_args;
}

/* A problem's run: its arguments from the problem's buffers (runner_proto.h's
 * runner_problem_run). Their count, or -errno with msg. */
static int bind_problem(const struct runner_run_msg *m, struct run_plan *p, char *msg,
                        size_t msg_len) {
  const struct runner_problem_run *q = &m->problem;
  const bool fresh = m->timed && q->fresh_seed;
  const char *why = !prob ? "no problem's buffers (a PROBLEM request makes them)"
                    : q->run >= prob->m.n_runs ? "no such run of the problem"
                    : q->compare > 1           ? "compare is 0 or 1"
                    : q->compare && fresh
                        ? "compare is of launches on the job's inputs, not fresh ones"
                    : m->reset_zero
                        ? "a problem's outputs are poisoned with all bits set, not zeroed"
                    : m->scratch_bytes && m->scratch_bytes != prob->m.scratch_bytes
                        ? "its scratch is the problem's"
                        : NULL;
  if (why) {
    snprintf(msg, msg_len, "run: %s", why);
    return -EINVAL;
  }
  p->problem = true;
  p->scratch_bytes = prob->m.scratch_bytes;
  p->out = prob->out[q->run][0];
  p->out_bytes = prob->set_bytes;
  if (fresh || q->compare) { /* the reference runs after the kernel, on the same inputs */
    p->ref_mi = find_module(prob->m.ref_key);
    if (p->ref_mi < 0) {
      snprintf(msg, msg_len, "run: the problem's reference is not loaded");
      return -ENOENT;
    }
    mods[p->ref_mi].last_use = ++use_clock;
    int n = runner_problem_args(prob, prob->ref_fresh, p->ref_ptrs, p->ints, p->ref_params);
    if (p->scratch_bytes) p->ref_params[n] = &scratch;
  }
  return runner_problem_args(prob, prob->out[q->run], p->ptrs, p->ints, p->params);
}

/* m's kernel, arguments, scratch and shared memory into p, checked: 0 or -errno with msg. */
static int plan_run(const struct runner_run_msg *m, struct run_plan *p, char *msg, size_t msg_len) {
  *p = (struct run_plan){.m = m, .mi = find_module(m->key), .ref_mi = -1};
  if (p->mi < 0) {
    snprintf(msg, msg_len, "run: no image loaded under that key");
    return -ENOENT;
  }
  mods[p->mi].last_use = ++use_clock;
  p->f = mods[p->mi].fn;
  int n = m->problem.on ? bind_problem(m, p, msg, msg_len) : bind_args(m, p, msg, msg_len);
  if (n < 0) return n;
  int rc = scratch_ready(p->scratch_bytes, msg, msg_len);
  if (rc) return rc;
  if (p->scratch_bytes) p->params[n] = &scratch;
  /* A fresh problem run launches its reference too, maybe the same function. */
  uint32_t shared = m->dyn_shared_bytes;
  if (p->ref_mi >= 0) {
    uint32_t ref = prob->m.ref_shared_bytes;
    if (p->ref_mi == p->mi)
      shared = shared > ref ? shared : ref;
    else if ((rc = shared_allow(mods[p->ref_mi].fn, ref, msg, msg_len)))
      return rc;
  }
  if ((rc = shared_allow(p->f, shared, msg, msg_len))) return rc;
  if (m->cold > 1) {
    snprintf(msg, msg_len, "run: cold is 0 or 1, not %u", m->cold);
    return -EINVAL;
  }
  if (m->cooperative) { /* every block resident at once, or a grid-wide sync never returns */
    int per_sm = 0;
    CUresult r = drv.max_blocks_per_sm(
        &per_sm, p->f, (int)(m->block[0] * m->block[1] * m->block[2]), m->dyn_shared_bytes);
    unsigned long long blocks = (unsigned long long)m->grid[0] * m->grid[1] * m->grid[2];
    if (r != CUDA_SUCCESS || blocks > (unsigned long long)per_sm * (unsigned long long)n_sms) {
      snprintf(msg, msg_len,
               "run: a cooperative launch of %llu blocks; %d fit on the device at once (%d per "
               "SM x %d SMs)%s%s",
               blocks, per_sm * n_sms, per_sm, n_sms, r != CUDA_SUCCESS ? ": " : "",
               r != CUDA_SUCCESS ? cu_name(r) : "");
      return -EINVAL;
    }
  }
  p->cold = m->timed && m->cold; /* untimed launches (the check's, warm-ups) stay as they are */
  p->fresh = m->timed && (p->problem ? m->problem.fresh_seed != 0 : m->fresh.check != 0);
  if (p->fresh && p->problem)
    rc = runner_problem_slots_ready(prob, m->n_launches, msg, msg_len);
  else if (p->fresh && !(rc = fresh_ok(m, msg, msg_len)))
    rc = slots_ready(m->n_launches, msg, msg_len);
  if (rc) return rc;
  for (uint32_t i = 0; p->fresh && !p->problem && i < m->fresh.n_in; i++)
    p->fresh_in[i] = (float *)att.ptr[i];
  /* Anything done before each launch stays outside the timed part: each timed alone. */
  p->per_launch = m->timed &&
                  (m->poison_each || p->cold || p->fresh || mods[p->mi].n_vars || p->scratch_bytes);
  rc = grow_events(p->per_launch ? 2 * m->n_launches : 2, msg, msg_len);
  if (rc) return rc;
  if (p->cold && (rc = flush_ready(msg, msg_len))) return rc;
  return 0;
}

/* Before launch i of a fresh problem run, untimed: the inputs generated from the
 * launch's seed. No answer to them is in the device's memory while the kernel runs: the
 * reference's set holds all bits set, and the reference runs after the kernel
 * (problem_truth). */
static int problem_fresh_before(const struct run_plan *p, uint32_t i,
                                struct runner_fault_msg *fault, char *msg, size_t msg_len) {
  cudaError_t e = runner_problem_generate(prob, p->m->problem.fresh_seed + i, stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(prob->ref_fresh[0], 0xff, prob->set_bytes, stream);
  if (e != cudaSuccess) return step_failed(e, fault, msg, msg_len, "run: the fresh inputs");
  return 0;
}

/* After a problem run's launch, untimed: the reference launched on the inputs the kernel
 * had (*fresh_seed's, or the job's when NULL; made again first, should the kernel have
 * written into them, which the check then finds) into the fresh set, the truth the run's
 * outputs are compared with. */
static int problem_truth(const struct run_plan *p, const uint64_t *fresh_seed,
                         struct runner_fault_msg *fault, char *msg, size_t msg_len) {
  cudaError_t e = fresh_seed ? runner_problem_generate(prob, *fresh_seed, stream)
                             : runner_problem_job_inputs(prob, stream);
  if (e != cudaSuccess) return step_failed(e, fault, msg, msg_len, "run: the inputs again");
  return ref_launch(p->ref_mi, (void **)p->ref_params, false, fault, msg, msg_len);
}

/* Launch i of p's run, with what comes before it (fresh inputs, the poisoned output,
 * the module's variables put back, a cold L2) and its check after. */
static int launch_one(const struct run_plan *p, uint32_t i, struct runner_done_msg *done,
                      struct runner_fault_msg *fault, char *msg, size_t msg_len) {
  const struct runner_run_msg *m = p->m;
  char what[64];
  cudaError_t e;
  int rc;
  if (p->fresh && p->problem && (rc = problem_fresh_before(p, i, fault, msg, msg_len))) return rc;
  if (p->fresh && !p->problem &&
      (e = runner_fresh_generate(&m->fresh, p->fresh_in, i, stream)) != cudaSuccess) {
    snprintf(what, sizeof what, "run: generating launch %u's inputs failed", i);
    return step_failed(e, fault, msg, msg_len, what);
  }
  /* NaN, all bits; or 0.0f for a kernel that accumulates. A fresh problem launch's
   * outputs always. */
  if (m->poison_each || (p->fresh && p->problem))
    cudaMemsetAsync(p->out, m->reset_zero ? 0 : 0xff, p->out_bytes, stream);
  e = state_reset(p->mi, p->scratch_bytes); /* untimed: before the start event */
  if (e != cudaSuccess)
    return step_failed(e, fault, msg, msg_len, "run: putting the module's variables back");
  if (p->cold) { /* after the poisoning: its dirty lines are written back untimed */
    e = l2_flush_launch(flush_buf, flush_len, flush_buf + flush_len, n_sms, stream);
    if (e != cudaSuccess) return step_failed(e, fault, msg, msg_len, "cold: the L2 flush's launch");
    done->l2_flushes++;
  }
  if (p->per_launch) cudaEventRecord(events[2 * i], stream);
  CUresult r = m->cooperative
                   ? drv.launch_cooperative(p->f, m->grid[0], m->grid[1], m->grid[2], m->block[0],
                                            m->block[1], m->block[2], m->dyn_shared_bytes,
                                            (CUstream)stream, (void **)p->params)
                   : drv.launch(p->f, m->grid[0], m->grid[1], m->grid[2], m->block[0], m->block[1],
                                m->block[2], m->dyn_shared_bytes, (CUstream)stream,
                                (void **)p->params, NULL);
  if (r != CUDA_SUCCESS) {
    e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) return fault_of(e, fault); /* an earlier launch faulted */
    snprintf(msg, msg_len, "%s(grid %u,%u,%u block %u,%u,%u, %u B shared): %s",
             m->cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel", m->grid[0],
             m->grid[1], m->grid[2], m->block[0], m->block[1], m->block[2], m->dyn_shared_bytes,
             cu_name(r));
    return -EINVAL;
  }
  if (p->per_launch) cudaEventRecord(events[2 * i + 1], stream);
  if (p->fresh && p->problem) { /* outputs against the reference's, inputs as generated */
    uint64_t seed = m->problem.fresh_seed + i;
    /* The inputs as the kernel left them, then the truth on seed's and the outputs. */
    e = runner_problem_check_fresh_inputs(prob, seed, i, stream);
    if (e == cudaSuccess && (rc = problem_truth(p, &seed, fault, msg, msg_len))) return rc;
    if (e == cudaSuccess) e = runner_problem_check_fresh(prob, m->problem.run, i, stream);
  } else if (p->fresh)
    e = runner_fresh_check(&m->fresh, (const float *const *)p->fresh_in, (const float *)p->out,
                           m->out_floats, i, &slots[i], stream);
  if (p->fresh && e != cudaSuccess) {
    snprintf(what, sizeof what, "run: checking launch %u failed", i);
    return step_failed(e, fault, msg, msg_len, what);
  }
  return 0;
}

/* After a problem run's launches: the compare (m->problem.compare) and the job's inputs
 * made again (a fresh request leaves its last launch's, and a kernel may have
 * written into them), so that the next request finds them; then the findings read
 * into done. 0, 1 a fault, or -errno with msg. */
static int problem_finish(const struct run_plan *p, struct runner_done_msg *done,
                          struct runner_fault_msg *fault, char *msg, size_t msg_len) {
  const struct runner_problem_run *q = &p->m->problem;
  int rc = q->compare ? problem_truth(p, NULL, fault, msg, msg_len) : 0;
  if (rc) return rc;
  cudaError_t e = q->compare ? runner_problem_check_run(prob, q->run, stream) : cudaSuccess;
  if (e == cudaSuccess) e = runner_problem_job_inputs(prob, stream);
  if (e != cudaSuccess) return step_failed(e, fault, msg, msg_len, "run: the problem's check");
  e = cudaStreamSynchronize(stream);
  if (e == cudaSuccess && q->compare) e = runner_problem_read_run(prob, &done->problem_check);
  if (e == cudaSuccess && p->fresh) e = runner_problem_read_fresh(prob, p->m->n_launches, done);
  return e == cudaSuccess ? 0 : fault_of(e, fault);
}

/* ---- a profiled launch (runner_run_msg.profile) ---- */

static struct cuda_profiler *profiler; /* opened at the first profiled request */
static bool profiler_tried;
static char profiler_why[512];

struct profiled {
  const struct run_plan *p;
  struct runner_done_msg *done;
  struct runner_fault_msg *fault;
  char *msg;
  size_t msg_len;
};

/* The run's one launch, complete: 0, 1 a fault (in fault), or -errno with msg. */
static int profiled_launch(void *arg) {
  struct profiled *a = (struct profiled *)arg;
  int rc = launch_one(a->p, 0, a->done, a->fault, a->msg, a->msg_len);
  if (rc) return rc;
  cudaError_t e = cudaStreamSynchronize(stream);
  return e == cudaSuccess ? 0 : fault_of(e, a->fault);
}

static int profile_run(const struct runner_run_msg *m, struct runner_done_msg *done,
                       struct runner_fault_msg *fault, char *msg, size_t msg_len) {
  if (m->n_launches != 1 || m->timed) {
    snprintf(msg, msg_len, "run: a profiled request is one untimed launch");
    return -EINVAL;
  }
  struct run_plan p;
  int rc = plan_run(m, &p, msg, msg_len);
  if (rc) return rc;
  if (!profiler_tried) {
    int device = 0;
    (void)cudaGetDevice(&device);
    profiler_tried = true;
    if (cuda_profiler_open(device, &profiler, profiler_why, sizeof profiler_why) != 0)
      profiler = NULL;
  }
  if (!profiler) {
    exp_profile_unavailable(&done->profile, profiler_why);
    return 0;
  }
  struct profiled a = {&p, done, fault, msg, msg_len};
  rc = cuda_profiler_run(profiler, stream, profiled_launch, &a, &done->profile);
  return rc == 0 && p.problem ? problem_finish(&p, done, fault, msg, msg_len) : rc;
}

static int cuda_run(const struct runner_run_msg *m, struct runner_done_msg *done,
                    struct runner_fault_msg *fault, char *msg, size_t msg_len) {
  if (m->profile) return profile_run(m, done, fault, msg, msg_len);
  struct run_plan p;
  int rc = plan_run(m, &p, msg, msg_len);
  if (rc) return rc;
  if (m->timed && !p.per_launch) cudaEventRecord(events[0], stream);
  for (uint32_t i = 0; i < m->n_launches; i++)
    if ((rc = launch_one(&p, i, done, fault, msg, msg_len))) return rc;
  if (m->timed && !p.per_launch) cudaEventRecord(events[1], stream);
  cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return fault_of(e, fault);
  if (m->timed && m->n_launches) {
    double total = 0;
    for (uint32_t i = 0; i < (p.per_launch ? m->n_launches : 1); i++) {
      float ms = 0;
      e = cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]);
      if (e != cudaSuccess) return fault_of(e, fault);
      total += ms;
    }
    done->ms_per_launch = total / m->n_launches;
  }
  if (done->l2_flushes) done->flush_bytes = flush_len * sizeof(float);
  if (p.problem) return problem_finish(&p, done, fault, msg, msg_len);
  if (p.fresh) {
    e = cudaMemcpy(h_slots, slots, m->n_launches * sizeof *h_slots, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return fault_of(e, fault);
    fresh_report(m->n_launches, m->fresh.n_in, done);
  }
  return 0;
}

const struct runner_ops runner_cuda_ops = {cuda_init, cuda_attach, cuda_detach,
                                           cuda_load, cuda_run,    cuda_problem};
