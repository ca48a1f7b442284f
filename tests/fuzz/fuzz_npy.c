/* libFuzzer target for the .npy reader (api/npy.c). The whole input goes to
 * npy_parse; it is also split at its first '\n' into a ?shape= text and a raw body
 * for npy_raw ("2,3\n" then 24 bytes). Each part is copied into a heap block of
 * exactly its size so that ASan sees any read past it. An accepted array must be
 * consistent, and converted to C order in its dtype (npy_convert) and written back
 * (npy_write_header) it must parse to the same. The raw part's shape text may end in
 * " dtype" ("2,3 int8"), read as ?dtype=. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/npy.h"
#include "tests/fuzz/fuzz_check.h"

static void check_array(const struct npy_array *a, const void *body, size_t len) {
  FUZZ_CHECK(a->ndim == 1 || a->ndim == 2);
  FUZZ_CHECK(a->shape[0] >= 1 && a->shape[1] >= 1);
  FUZZ_CHECK(a->ndim == 2 || a->shape[1] == 1);
  FUZZ_CHECK(a->count == (uint64_t)a->shape[0] * (uint64_t)a->shape[1]);
  int kept = npy_dtype_bytes(a->dtype);
  FUZZ_CHECK(kept > 0 &&
             (a->elem_bytes == kept || (a->elem_bytes == 8 && a->dtype == NPY_FLOAT32)));
  const char *stored = (const char *)a->stored, *start = body;
  FUZZ_CHECK(stored >= start &&
             (uint64_t)(stored - start) + a->count * (uint64_t)a->elem_bytes == len);
  /* Borrowed exactly when the values are C order in the dtype kept already. */
  FUZZ_CHECK((a->data != NULL) == (a->elem_bytes == kept && !a->fortran_order));
  FUZZ_CHECK(!a->data || (const void *)a->data == a->stored);

  /* Converted (or as they are), then written back as a version 1.0 file, they read
   * the same. */
  size_t bytes = (size_t)a->count * (size_t)kept;
  unsigned char *values = malloc(bytes);
  FUZZ_CHECK(values != NULL);
  struct npy_conversion conv;
  char err[256];
  if (npy_convert(a, values, &conv, err, sizeof err) != 0) {
    FUZZ_CHECK(a->elem_bytes == 8 && err[0]); /* only float64 can be out of range */
    free(values);
    return;
  }
  FUZZ_CHECK(!(conv.max_rounding_error < 0) &&
             (a->elem_bytes == 8 || conv.max_rounding_error == 0));
  if (a->data) FUZZ_CHECK(memcmp(values, a->data, bytes) == 0);
  size_t hdr = npy_header_size(a->ndim, a->shape);
  FUZZ_CHECK(hdr > 0 && hdr % 64 == 0);
  size_t n = hdr + bytes;
  char *file = malloc(n);
  FUZZ_CHECK(file != NULL);
  FUZZ_CHECK(npy_write_header(file, hdr - 1, a->ndim, a->shape, a->dtype) == 0);
  if (a->dtype == NPY_BFLOAT16) { /* no descr: raw only */
    FUZZ_CHECK(npy_write_header(file, n, a->ndim, a->shape, a->dtype) == 0);
    free(file);
    free(values);
    return;
  }
  FUZZ_CHECK(npy_write_header(file, n, a->ndim, a->shape, a->dtype) == hdr);
  memcpy(file + hdr, values, bytes);
  struct npy_array b;
  int rc = npy_parse(file, n, &b, err, sizeof err);
  if (rc != 0) fprintf(stderr, "written back, refused: %s\n", err);
  FUZZ_CHECK(rc == 0);
  FUZZ_CHECK(b.ndim == a->ndim && b.shape[0] == a->shape[0] && b.shape[1] == a->shape[1]);
  FUZZ_CHECK(b.count == a->count && b.dtype == a->dtype && b.data &&
             memcmp(b.data, values, bytes) == 0);
  free(file);
  free(values);
}

static void check_refused(int rc, const struct npy_array *a, const char *err, size_t err_len) {
  FUZZ_CHECK(rc == -EINVAL);
  FUZZ_CHECK(a->ndim == 0 && a->count == 0 && a->data == NULL && a->stored == NULL);
  FUZZ_CHECK(memchr(err, '\0', err_len) && err[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct npy_array a;
  char err[200];
  /* A small err buffer on every other input: messages must be cut, not overrun. */
  size_t err_len = size % 2 ? sizeof err : 17;
  int rc = npy_parse(data, size, &a, err, err_len);
  if (rc == 0)
    check_array(&a, data, size);
  else
    check_refused(rc, &a, err, err_len);

  const uint8_t *nl = memchr(data, '\n', size);
  size_t shape_len = nl ? (size_t)(nl - data) : size;
  size_t body_len = nl ? size - shape_len - 1 : 0;
  char *shape = malloc(shape_len + 1);
  char *body = malloc(body_len ? body_len : 1);
  FUZZ_CHECK(shape && body);
  memcpy(shape, data, shape_len);
  shape[shape_len] = '\0'; /* an embedded NUL just ends the text, as in a query */
  if (body_len) memcpy(body, nl + 1, body_len);
  char *space = strchr(shape, ' ');
  if (space) *space = '\0';
  rc = npy_raw(body, body_len, shape, space ? space + 1 : NULL, &a, err, err_len);
  if (rc == 0)
    check_array(&a, body, body_len);
  else
    check_refused(rc, &a, err, err_len);
  free(body);
  free(shape);

  /* As an upload without ?shape=: the .npy reading, or a refusal. */
  int raw;
  rc = npy_upload(data, size, NULL, NULL, size % 3 == 0, &a, &raw, err, err_len);
  if (rc == 0)
    check_array(&a, data, size);
  else
    check_refused(rc, &a, err, err_len);
  return 0;
}
