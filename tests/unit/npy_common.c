/* The .npy tests' helpers (npy_common.h). */
#include "npy_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

/* A file of header (used verbatim: dict, padding, '\n') after a preamble for major,
 * then n_floats values i * 0.5. Caller frees. */
unsigned char *build_raw(int major, const char *header, size_t hdr_len, size_t n_floats,
                         size_t *len) {
  size_t pre = major == 1 ? 10 : 12;
  *len = pre + hdr_len + n_floats * 4;
  unsigned char *b = malloc(*len);
  CHECK(b != NULL);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)major;
  b[7] = 0;
  for (size_t i = 0; i < pre - 8; i++) b[8 + i] = (unsigned char)(hdr_len >> (8 * i));
  memcpy(b + pre, header, hdr_len);
  for (size_t i = 0; i < n_floats; i++) {
    float v = (float)i * 0.5f;
    memcpy(b + pre + hdr_len + 4 * i, &v, 4);
  }
  return b;
}

/* The same with dict padded by spaces and '\n' to a multiple of 64, as NumPy does
 * (pad = 0: just dict and '\n'). */
unsigned char *build(int major, const char *dict, int pad, size_t n_floats, size_t *len) {
  size_t pre = major == 1 ? 10 : 12, n = strlen(dict);
  size_t hdr_len = n + 1;
  if (pad) hdr_len = (pre + n + 1 + 63) / 64 * 64 - pre;
  char *header = malloc(hdr_len);
  CHECK(header != NULL);
  memcpy(header, dict, n);
  memset(header + n, ' ', hdr_len - n);
  header[hdr_len - 1] = '\n';
  unsigned char *b = build_raw(major, header, hdr_len, n_floats, len);
  free(header);
  return b;
}

void check_values(const struct npy_array *a, float step) {
  for (uint64_t i = 0; i < a->count; i++) {
    float v;
    memcpy(&v, (const char *)a->data + 4 * i, 4); /* data may be unaligned */
    CHECK_NEAR(v, (float)i * step, 0);
  }
}

void expect_ok(int major, const char *dict, int pad, int ndim, int64_t d0, int64_t d1) {
  size_t len;
  unsigned char *b = build(major, dict, pad, (size_t)(d0 * d1), &len);
  struct npy_array a;
  char err[256] = "";
  int rc = npy_parse(b, len, &a, err, sizeof err);
  if (rc != 0) fprintf(stderr, "v%d %s: %s\n", major, dict, err);
  CHECK_INT_EQ(rc, 0);
  CHECK_INT_EQ(a.ndim, ndim);
  CHECK_INT_EQ(a.shape[0], d0);
  CHECK_INT_EQ(a.shape[1], d1);
  CHECK_INT_EQ(a.count, d0 * d1);
  CHECK_INT_EQ(a.elem_bytes, 4);
  CHECK_INT_EQ(a.fortran_order, 0);
  CHECK((const unsigned char *)a.data + a.count * 4 == b + len);
  CHECK((const void *)a.data == a.stored);
  check_values(&a, 0.5f);
  free(b);
}

/* Every refusal of a .npy says how to fix it: a NumPy call, or how to send the file. */
void check_fix(const char *err) {
  static const char *const fixes[] = {
      "np.save(",          "a.astype(",          "a.reshape(",  "np.atleast_1d(", "a.real.astype(",
      "a['name'].astype(", "curl --data-binary", "a.size >= 1", "np.load(",       "np.clip("};
  for (size_t i = 0; i < sizeof fixes / sizeof fixes[0]; i++)
    if (strstr(err, fixes[i])) return;
  CHECK_FAIL_("the message names no fix: \"%s\"", err);
}

void expect_fail_buf(const void *b, size_t len, const char *want) {
  struct npy_array a;
  char err[256] = "";
  memset(&a, 0xab, sizeof a);
  CHECK_INT_EQ(npy_parse(b, len, &a, err, sizeof err), -EINVAL);
  if (!strstr(err, want)) fprintf(stderr, "want \"%s\" in \"%s\"\n", want, err);
  CHECK(strstr(err, want) != NULL);
  CHECK(strlen(err) < sizeof err - 1); /* not cut */
  check_fix(err);
  CHECK(a.data == NULL && a.stored == NULL && a.count == 0 && a.ndim == 0);
}

void expect_fail(int major, const char *dict, size_t n_floats, const char *want) {
  size_t len;
  unsigned char *b = build(major, dict, 1, n_floats, &len);
  expect_fail_buf(b, len, want);
  free(b);
}
