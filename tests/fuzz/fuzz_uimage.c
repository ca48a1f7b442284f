/* libFuzzer target for the reader of users' compiled images (kernels/user/uimage.c):
 * the input, copied into a heap block of exactly its size (malloc's alignment, as the
 * compile step and the runner hand images over), goes to uimage_inspect. It must never
 * read past the block; an accepted image's variables must lie inside it and add up. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/user/uimage.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *image = malloc(size ? size : 1);
  if (!image) return 0;
  memcpy(image, data, size);
  struct uimage im;
  char msg[160];
  if (uimage_inspect(image, size, &im, msg, sizeof msg) == 0) {
    uint64_t sum = 0;
    for (int i = 0; i < im.n_vars; i++) {
      const struct uimage_var *v = &im.vars[i];
      FUZZ_CHECK(v->name && v->bytes > 0);
      FUZZ_CHECK(v->space == UIMAGE_GLOBAL || v->space == UIMAGE_CONSTANT);
      if (v->init) FUZZ_CHECK(v->init >= image && v->init + v->bytes <= image + size);
      sum += v->bytes;
    }
    FUZZ_CHECK(sum == im.var_bytes);
    FUZZ_CHECK(strlen(im.stateful) < sizeof im.stateful);
    uimage_release(&im);
  } else {
    FUZZ_CHECK(msg[0] != '\0');
  }
  free(image);
  return 0;
}
