/* Compiling a user's kernel: device code only, with NVRTC (nvrtc_loader.h), for one
 * SM architecture, into a CUBIN. Checks what the user may ask for (options from a
 * whitelist, no #include but of the CUDA toolkit's headers), declares the experiment's fixed signature (exp_user) ahead
 * of the user's source so that a kernel with another signature fails to compile at the
 * user's line, and reads back the compiler's log: the first error and its line, and
 * from ptxas (-v) the entry's registers, shared and local bytes and spills. Knows
 * neither HTTP nor JSON nor CUDA's runtime. */
#ifndef GPULAB_UCOMPILE_H
#define GPULAB_UCOMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kernels/user/nvrtc_loader.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UCOMPILE_MAX_OPTIONS 16
#define UCOMPILE_MAX_OPTION_LEN 128
#define UCOMPILE_DEFAULT_ARCH 90 /* sm_90, the H200's, when no device says otherwise */
/* Module-scope variable bytes put back before every launch, unless a service says. */
#define UCOMPILE_MAX_VAR_BYTES (16u << 20)

/* What to compile. Every pointer is borrowed for the call. */
struct ucompile_req {
  const char *source; /* NUL-terminated CUDA C device code */
  const char *name;   /* the program's file name in the log, e.g. "my_tile.cu" */
  const char *entry;  /* the extern "C" __global__ function to keep */
  /* A declaration of the entry with the experiment's signature, "%s" standing for
   * the entry's name (exp_user.declaration); NULL: none. */
  const char *declaration;
  /* Whose signature that is, for a kernel that has another: "experiment" (NULL) or
   * "problem". */
  const char *signature_of;
  const char *const *options; /* the user's, checked with ucompile_options_check */
  int n_options;
  int arch;            /* SM architecture: 90 compiles for sm_90 */
  double time_limit_s; /* 0: none; else the compile is cancelled after it */
  /* The bytes of module-scope variables a runner may put back before every launch
   * (uimage.h); an image with more is refused as stateful. 0: no limit. */
  uint64_t max_var_bytes;
};

/* What compiling produced. ok false: the image is NULL and error says why. */
struct ucompile_report {
  bool ok;
  int result;     /* NVRTC's nvrtcResult */
  bool timed_out; /* cancelled at req->time_limit_s */
  char *log;      /* the whole program log, NUL-terminated ("" when empty) */
  void *image;    /* the CUBIN */
  size_t image_bytes;
  /* The PTX NVRTC made on the way to the CUBIN, NUL-terminated, as NVRTC gave it; NULL
   * when none (a failed or refused compile, or an NVRTC that kept none). */
  char *ptx;
  /* The first error, as "k.cu(12): error: ..." gives it: its line in the user's
   * source (0 when the message has none) and its text (one line). */
  int error_line;
  char error[256];
  /* ptxas' resource usage of the entry (has_usage false when the log lacks it). */
  bool has_usage;
  int registers, barriers, shared_bytes, stack_bytes, spill_store_bytes, spill_load_bytes;
  double compile_ms; /* wall time of nvrtcCompileProgram */
  int arch;
  /* What the image keeps across launches (uimage.h): its module-scope variables, which
   * a runner puts back before every launch. A kernel whose state cannot be put back
   * (the device heap, __managed__, more variable bytes than max_var_bytes) compiled
   * but is refused: ok false, no image, stateful says why (error too) and error_line
   * is the first line of the source that names it (0: none found). */
  int n_vars;
  uint64_t var_bytes;
  bool stateful;
};

/* Checks the user's options against the whitelist: -D<NAME>[=<value>] and -U<NAME>
 * (C identifiers; values without spaces or quotes), --maxrregcount=<16..255>,
 * -use_fast_math, -lineinfo, --ftz / --prec-div / --prec-sqrt / --fmad=<true|false>,
 * -std=c++<11|14|17|20>, -restrict, --extra-device-vectorization (one or two leading
 * dashes alike). Returns 0, or -EINVAL with msg naming the first one refused and why
 * (e.g. include paths, -rdc, an architecture: gpulab picks it). */
int ucompile_options_check(const char *const *options, int n_options, char *msg, size_t msg_len);

/* Checks source for what device code may not do here, so that nothing on the server's
 * disk but the CUDA toolkit's headers is read into a compile or its log: an #include
 * other than #include <name> of a header of lib's toolkit (nvrtc_lib.include_dirs: a
 * name of letters, digits, _ . - and /, no "..", that is a file there, also once its
 * links are followed; lib NULL: none), a quoted or computed #include, #include_next,
 * #import and #embed (their digraphs too; comments and line splices are seen through).
 * Returns 0, or -EINVAL with msg and *line (1-based) set. */
int ucompile_source_check(const char *source, const struct nvrtc_lib *lib, int *line, char *msg,
                          size_t msg_len);

/* The declaration of a kernel that asked for scratch: decl (exp_user.declaration) with
 * one more last parameter, "void *scratch". Returns 0, or -EINVAL when decl has no
 * parameter list or out is too short. */
int ucompile_declaration_scratch(const char *decl, char *out, size_t out_len);

/* Compiles req with lib (the options checked first, then the source). Returns 0 with
 * *out (ucompile_report_free it), also when compiling failed (ok false: the log, the
 * first error, its line); -EINVAL for a refused option or source (msg says which, no
 * report), -ENOMEM, -EIO when NVRTC failed other than by the source (msg: its error).
 * Thread-safe: NVRTC compiles programs on different threads at once. */
int ucompile_run(const struct nvrtc_lib *lib, const struct ucompile_req *req,
                 struct ucompile_report **out, char *msg, size_t msg_len);
void ucompile_report_free(struct ucompile_report *r); /* NULL is a no-op */

/* Reads the first error of an NVRTC log for a program named name: its line (0 when it
 * names none) and its text into error. Returns false when the log has no error. */
bool ucompile_first_error(const char *log, const char *name, int *line, char *error,
                          size_t error_len);
/* Reads ptxas -v's usage of entry from log into r (has_usage and the counts). */
void ucompile_parse_usage(const char *log, const char *entry, struct ucompile_report *r);

#ifdef __cplusplus
}
#endif
#endif
