/* What a user's compiled image (a CUBIN, an ELF file) holds that could outlive a launch:
 * its module-scope variables (__device__, __constant__, and the compiler's own, such as
 * printf's format strings), each with its initial bytes, so that a runner can put every
 * one back before every launch; and what cannot be put back: calls into the device heap
 * (malloc and free, which new and delete call too) and __managed__ variables. Plain C
 * over <elf.h>; every offset and size is checked against the image, so a malformed image
 * is an error, never a read past its end. Knows neither NVRTC nor CUDA. */
#ifndef GPULAB_UIMAGE_H
#define GPULAB_UIMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum uimage_space {
  UIMAGE_GLOBAL,   /* .nv.global (zero-initialized) or .nv.global.init */
  UIMAGE_CONSTANT, /* .nv.constant3: the program's __constant__ data */
};

/* One module-scope variable. */
struct uimage_var {
  char *name; /* as the image names it (mangled where C++ mangles it); owned */
  enum uimage_space space;
  uint64_t bytes;
  const uint8_t *init; /* its initial bytes, pointing into the image; NULL: all zero */
  int section;         /* its section's index: the variables of one section keep their */
  uint64_t offset;     /* offsets from each other when loaded */
};

struct uimage {
  int n_vars;
  struct uimage_var *vars; /* owned (uimage_release) */
  uint64_t var_bytes;      /* the sum of vars[].bytes */
  /* The first thing in the image that no restore can undo, for the user: "it calls
   * malloc (the device heap outlives a launch) ...", "__managed__ variable 'x' ...";
   * "" when none. */
  char stateful[256];
  /* The word of the source behind it: "malloc", "free", ... or "__managed__". */
  char stateful_word[32];
};

/* Reads image[0..bytes) (8-byte aligned, as malloc returns it) into *out
 * (uimage_release it; the init pointers borrow from image, which must outlive their
 * use). Returns 0, -EINVAL with msg when the bytes are not a 64-bit little-endian ELF
 * image or a table in it is misaligned or runs past its end, -ENOMEM. */
int uimage_inspect(const void *image, size_t bytes, struct uimage *out, char *msg, size_t msg_len);
void uimage_release(struct uimage *im); /* zeroes *im; a zeroed one is a no-op */

#ifdef __cplusplus
}
#endif
#endif
