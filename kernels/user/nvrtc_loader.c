/* dlopen-based NVRTC loader (nvrtc_loader.h). */
#include "kernels/user/nvrtc_loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Appends "; text" (or text) to why. */
static void why_add(char *why, size_t why_len, const char *text) {
  if (!why || why_len == 0) return;
  size_t used = strnlen(why, why_len);
  if (used + 1 >= why_len) return;
  snprintf(why + used, why_len - used, "%s%s", used ? "; " : "", text);
}

static void *try_open(const char *name, char *why, size_t why_len) {
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    why_add(why, why_len, e ? e : name); /* dlerror's text names the file */
  }
  return h;
}

/* The default search: the soname, the dev link, then under $CUDA_HOME and /usr/local/cuda. */
static void *open_default(char *path, size_t path_len, char *why, size_t why_len) {
  static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so"};
  const char *dirs[2] = {getenv("CUDA_HOME"), "/usr/local/cuda"};
  char full[512];
  for (size_t i = 0; i < 2; i++) {
    void *h = try_open(sonames[i], why, why_len);
    if (h) {
      snprintf(path, path_len, "%s", sonames[i]);
      return h;
    }
  }
  for (size_t d = 0; d < 2; d++) {
    if (!dirs[d] || !dirs[d][0]) continue;
    for (size_t i = 0; i < 2; i++) {
      snprintf(full, sizeof full, "%s/lib64/%s", dirs[d], sonames[i]);
      void *h = try_open(full, why, why_len);
      if (h) {
        snprintf(path, path_len, "%s", full);
        return h;
      }
    }
  }
  return NULL;
}

/* NVRTC dlopens its builtins (libnvrtc-builtins.so.<major>.<minor>) by soname, which
 * the dynamic loader finds only where ld.so's cache or LD_LIBRARY_PATH names the
 * toolkit's lib64: a machine whose CUDA toolkit was copied or bound in without its
 * ld.so.conf line compiled nothing (NVRTC_ERROR_BUILTIN_OPERATION_FAILURE). Loading
 * them first, from libnvrtc's own folder, makes that later dlopen find them loaded. */
static void preload_builtins(void *nvrtc) {
  struct link_map *map = NULL;
  if (dlinfo(nvrtc, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name[0]) return;
  char pattern[600];
  const char *slash = strrchr(map->l_name, '/');
  if (!slash) return;
  snprintf(pattern, sizeof pattern, "%.*s/libnvrtc-builtins.so.[0-9]*", (int)(slash - map->l_name),
           map->l_name);
  glob_t g;
  if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0)
    (void)dlopen(g.gl_pathv[g.gl_pathc - 1], RTLD_NOW | RTLD_LOCAL); /* kept for the process */
  globfree(&g);
}

/* lib's toolkit's include folders (nvrtc_lib.include_dirs), from where the library
 * that defines sym was loaded: <its folder>/../include, and include/cccl in it. */
static void find_include_dirs(struct nvrtc_lib *lib, void *sym) {
  Dl_info info;
  char real[PATH_MAX], dir[PATH_MAX + 32], inc[PATH_MAX];
  if (!dladdr(sym, &info) || !info.dli_fname || !realpath(info.dli_fname, real)) return;
  char *slash = strrchr(real, '/');
  if (!slash) return;
  *slash = '\0';
  snprintf(dir, sizeof dir, "%s/../include", real);
  if (!realpath(dir, inc) || strlen(inc) >= sizeof lib->include_dirs[0]) return;
  snprintf(lib->include_dirs[lib->n_include_dirs++], sizeof lib->include_dirs[0], "%s", inc);
  snprintf(dir, sizeof dir, "%s/cccl", inc);
  struct stat st;
  if (realpath(dir, inc) && stat(inc, &st) == 0 && S_ISDIR(st.st_mode) &&
      strlen(inc) < sizeof lib->include_dirs[0])
    snprintf(lib->include_dirs[lib->n_include_dirs++], sizeof lib->include_dirs[0], "%s", inc);
}

int nvrtc_lib_open(const char *path, struct nvrtc_lib **out, char *why, size_t why_len) {
  *out = NULL;
  if (why && why_len) why[0] = '\0';
  struct nvrtc_lib *lib = calloc(1, sizeof *lib);
  if (!lib) return -ENOMEM;
  void *h;
  if (path) {
    h = try_open(path, why, why_len);
    if (h) snprintf(lib->path, sizeof lib->path, "%s", path);
  } else {
    h = open_default(lib->path, sizeof lib->path, why, why_len);
  }
  if (!h) goto fail;
  preload_builtins(h);
  if (why && why_len) why[0] = '\0';
  static const char *const names[] = {"nvrtcVersion",
                                      "nvrtcGetErrorString",
                                      "nvrtcGetNumSupportedArchs",
                                      "nvrtcGetSupportedArchs",
                                      "nvrtcCreateProgram",
                                      "nvrtcDestroyProgram",
                                      "nvrtcCompileProgram",
                                      "nvrtcGetProgramLogSize",
                                      "nvrtcGetProgramLog",
                                      "nvrtcGetCUBINSize",
                                      "nvrtcGetCUBIN",
                                      "nvrtcGetPTXSize",
                                      "nvrtcGetPTX"};
  void *p[sizeof names / sizeof names[0]];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    p[i] = dlsym(h, names[i]);
    if (!p[i]) {
      char msg[600];
      snprintf(msg, sizeof msg, "%s lacks %s", lib->path, names[i]);
      why_add(why, why_len, msg);
      goto fail;
    }
  }
  /* POSIX guarantees a dlsym result converts to the function's pointer type; the
   * nvrtcResult enum is passed and returned as an int. */
  struct nvrtc_fns *f = &lib->fn;
  memcpy(&f->version, &p[0], sizeof(void *));
  memcpy(&f->error_string, &p[1], sizeof(void *));
  memcpy(&f->num_supported_archs, &p[2], sizeof(void *));
  memcpy(&f->supported_archs, &p[3], sizeof(void *));
  memcpy(&f->create_program, &p[4], sizeof(void *));
  memcpy(&f->destroy_program, &p[5], sizeof(void *));
  memcpy(&f->compile_program, &p[6], sizeof(void *));
  memcpy(&f->get_program_log_size, &p[7], sizeof(void *));
  memcpy(&f->get_program_log, &p[8], sizeof(void *));
  memcpy(&f->get_cubin_size, &p[9], sizeof(void *));
  memcpy(&f->get_cubin, &p[10], sizeof(void *));
  memcpy(&f->get_ptx_size, &p[11], sizeof(void *));
  memcpy(&f->get_ptx, &p[12], sizeof(void *));
  find_include_dirs(lib, p[0]);
  void *flow = dlsym(h, "nvrtcSetFlowCallback"); /* NVRTC 12.8 on */
  memcpy(&f->set_flow_callback, &flow, sizeof flow);
  if (f->version(&lib->major, &lib->minor) != NVRTC_LOADER_SUCCESS) {
    why_add(why, why_len, "nvrtcVersion failed");
    goto fail;
  }
  int n = 0;
  if (f->num_supported_archs(&n) == NVRTC_LOADER_SUCCESS && n > 0) {
    int *all = calloc((size_t)n, sizeof *all);
    if (all && f->supported_archs(all) == NVRTC_LOADER_SUCCESS) {
      for (int i = 0; i < n && lib->n_archs < (int)(sizeof lib->archs / sizeof lib->archs[0]); i++)
        lib->archs[lib->n_archs++] = all[i];
    }
    free(all);
  }
  *out = lib;
  return 0;
fail:
  free(lib); /* the handle, if any, stays open: harmless */
  return -ENOENT;
}

void nvrtc_lib_free(struct nvrtc_lib *lib) { free(lib); }

int nvrtc_lib_supports(const struct nvrtc_lib *lib, int arch) {
  for (int i = 0; i < lib->n_archs; i++)
    if (lib->archs[i] == arch) return 1;
  return 0;
}
