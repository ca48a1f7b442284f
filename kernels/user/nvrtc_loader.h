/* NVRTC loaded at run time (dlopen), so that gpulabd needs no CUDA toolkit to start and
 * links nothing of it: users' kernels are compiled only where libnvrtc is found. The
 * few types NVRTC's API needs are declared here, so a CPU-only build needs no CUDA
 * header either. */
#ifndef GPULAB_NVRTC_LOADER_H
#define GPULAB_NVRTC_LOADER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nvrtc.h's nvrtcResult values that gpulab tells apart (0 is NVRTC_SUCCESS). */
#define NVRTC_LOADER_SUCCESS 0
#define NVRTC_LOADER_ERROR_INVALID_OPTION 5
#define NVRTC_LOADER_ERROR_COMPILATION 6
#define NVRTC_LOADER_ERROR_CANCELLED 16

typedef struct _nvrtcProgram *nvrtc_program; /* nvrtc.h's nvrtcProgram */

/* The entry points gpulab calls, each NVRTC's function of the name in its comment.
 * set_flow_callback is NULL with an NVRTC older than 12.8 (then a compile cannot be
 * cancelled at its time limit). */
struct nvrtc_fns {
  int (*version)(int *major, int *minor);  /* nvrtcVersion */
  const char *(*error_string)(int result); /* nvrtcGetErrorString */
  int (*num_supported_archs)(int *n);      /* nvrtcGetNumSupportedArchs */
  int (*supported_archs)(int *archs);      /* nvrtcGetSupportedArchs */
  int (*create_program)(nvrtc_program *prog, const char *src, const char *name, int n_headers,
                        const char *const *headers, const char *const *include_names);
  int (*destroy_program)(nvrtc_program *prog); /* nvrtcDestroyProgram */
  int (*compile_program)(nvrtc_program prog, int n_options, const char *const *options);
  int (*get_program_log_size)(nvrtc_program prog, size_t *size);
  int (*get_program_log)(nvrtc_program prog, char *log);
  int (*get_cubin_size)(nvrtc_program prog, size_t *size); /* nvrtcGetCUBINSize */
  int (*get_cubin)(nvrtc_program prog, char *cubin);       /* nvrtcGetCUBIN */
  int (*get_ptx_size)(nvrtc_program prog, size_t *size);   /* nvrtcGetPTXSize */
  int (*get_ptx)(nvrtc_program prog, char *ptx);           /* nvrtcGetPTX */
  int (*set_flow_callback)(nvrtc_program prog, int (*callback)(void *payload, void *reserved),
                           void *payload); /* nvrtcSetFlowCallback */
};

/* A loaded NVRTC: its functions, where it came from and its version. */
struct nvrtc_lib {
  struct nvrtc_fns fn;
  char path[512];   /* the name dlopen succeeded with */
  int major, minor; /* nvrtcVersion's */
  int n_archs;      /* supported SM architectures, ascending (e.g. 75 ... 121) */
  int archs[64];
  /* Its toolkit's header folders, real paths: include/ beside the library's folder and,
   * where it exists, include/cccl/ (CUDA 13's <cuda/barrier>, <cuda/pipeline>). The
   * only folders a user's #include <name> may reach (ucompile.h). 0: none found. */
  int n_include_dirs;
  char include_dirs[2][512];
};

/* Opens NVRTC. path NULL: libnvrtc.so.13, libnvrtc.so, then both under $CUDA_HOME/lib64
 * and /usr/local/cuda/lib64; else exactly that file. Returns 0 with *out (the caller
 * frees it with nvrtc_lib_free), or -ENOENT when no library was found or one lacked an
 * entry point, -ENOMEM; why then says so (dlerror's reasons, one line). */
int nvrtc_lib_open(const char *path, struct nvrtc_lib **out, char *why, size_t why_len);
/* Forgets lib (the library itself stays mapped: dlclose could unload what other code
 * still uses). NULL is a no-op. */
void nvrtc_lib_free(struct nvrtc_lib *lib);

/* True when lib compiles for sm_<arch> (e.g. 90). */
int nvrtc_lib_supports(const struct nvrtc_lib *lib, int arch);

#ifdef __cplusplus
}
#endif
#endif
