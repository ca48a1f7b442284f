/* The .npy codec: round trips, every header form NumPy writes, every rejection with
 * its message and its NumPy fix, all truncations, random mutations, and raw float32.
 * Conversions (float64, Fortran order), the upload and NumPy itself are
 * test_npy_convert.c's; the helpers npy_common.c's. Every parsed buffer is a heap
 * block of exactly its size, so ASan sees over-reads. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp */
#endif
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/npy.h"
#include "npy_common.h"
#include "tests/runner.h"

static void test_round_trip(void) {
  static const int64_t shapes[][2] = {{7, 1}, {3, 5}, {1, 1}, {1, 1}, {64, 3}, {100000, 1}};
  static const int ndims[] = {1, 2, 1, 2, 2, 1};
  for (size_t t = 0; t < sizeof ndims / sizeof ndims[0]; t++) {
    size_t hs = npy_header_size(ndims[t], shapes[t]);
    CHECK(hs > 0 && hs % 64 == 0);
    size_t count = (size_t)(shapes[t][0] * shapes[t][1]), len = hs + count * 4;
    char *b = malloc(len);
    CHECK(b != NULL);
    CHECK_INT_EQ(npy_write_header(b, hs - 1, ndims[t], shapes[t], NPY_FLOAT32), 0);
    CHECK_INT_EQ(npy_write_header(b, len, ndims[t], shapes[t], NPY_FLOAT32), hs);
    CHECK(b[hs - 1] == '\n');
    for (size_t i = 0; i < count; i++) {
      float v = (float)i * 0.25f;
      memcpy(b + hs + 4 * i, &v, 4);
    }
    struct npy_array a;
    char err[256] = "";
    CHECK_INT_EQ(npy_parse(b, len, &a, err, sizeof err), 0);
    CHECK_INT_EQ(a.ndim, ndims[t]);
    CHECK_INT_EQ(a.shape[0], shapes[t][0]);
    CHECK_INT_EQ(a.shape[1], shapes[t][1]);
    CHECK_INT_EQ(a.count, count);
    CHECK((const char *)a.data == b + hs);
    check_values(&a, 0.25f);
    free(b);
  }
  char b[256];
  int64_t s[2] = {7, 3};
  CHECK_INT_EQ(npy_write_header(b, sizeof b, 1, s, NPY_FLOAT32), 128);
  CHECK(memmem(b, 128, "'shape': (7,), }", 16) != NULL);
  CHECK_INT_EQ(npy_write_header(b, sizeof b, 2, s, NPY_FLOAT32), 128);
  CHECK(memmem(b, 128, "'shape': (7, 3), }", 18) != NULL);
  CHECK(memmem(b, 128, "{'descr': '<f4', ", 17) == b + 10);
  /* uint32 (a histogram's counts): the same size, '<u4', read back as uint32 */
  CHECK_INT_EQ(npy_write_header(b, sizeof b, 2, s, NPY_UINT32), 128);
  static const char u4[] = "{'descr': '<u4', 'fortran_order': False, 'shape': (7, 3), }";
  CHECK(memmem(b, 128, u4, sizeof u4 - 1) == b + 10);
  char file[128 + 21 * 4] = {0};
  memcpy(file, b, 128);
  struct npy_array a;
  char err[256] = "";
  CHECK_INT_EQ(npy_parse(file, sizeof file, &a, err, sizeof err), 0);
  CHECK(a.dtype == NPY_UINT32 && a.elem_bytes == 4 && a.data == file + 128);
  /* Every dtype kept but bfloat16 (NumPy has no descr for it) writes and reads back. */
  static const char *const descr[NPY_DTYPE_COUNT] = {"'<f4'", "'<u4'", "'<f2'",
                                                     NULL,    "'<i4'", "'|i1'"};
  for (int t = 0; t < NPY_DTYPE_COUNT; t++) {
    CHECK_INT_EQ(npy_write_header(b, sizeof b, 2, s, (enum npy_dtype)t), descr[t] ? 128 : 0);
    if (!descr[t]) continue;
    CHECK(memmem(b, 128, descr[t], 5) == b + 20);
    memcpy(file, b, 128);
    size_t len = 128 + 21 * (size_t)npy_dtype_bytes((enum npy_dtype)t);
    CHECK_INT_EQ(npy_parse(file, len, &a, err, sizeof err), 0);
    CHECK_INT_EQ(a.dtype, t);
    CHECK_INT_EQ(a.count, 21);
    CHECK(a.data == file + 128);
    CHECK_INT_EQ(npy_parse(file, len + 1, &a, err, sizeof err), -EINVAL); /* one byte too many */
  }
  CHECK_INT_EQ(npy_write_header(b, sizeof b, 2, s, (enum npy_dtype)7), 0);
  int64_t big[2] = {INT64_MAX, INT64_MAX};
  CHECK_INT_EQ(npy_header_size(2, big), 128); /* written even if it could not be read */
  int64_t neg[2] = {-1, 3};
  CHECK_INT_EQ(npy_header_size(0, s), 0);
  CHECK_INT_EQ(npy_header_size(3, s), 0);
  CHECK_INT_EQ(npy_header_size(2, neg), 0);
  CHECK_INT_EQ(npy_write_header(b, sizeof b, 3, s, NPY_FLOAT32), 0);
}

static void test_valid_headers(void) {
  for (int major = 1; major <= 3; major++) {
    expect_ok(major, DICT_1D, 1, 1, 5, 1);
    expect_ok(major, DICT_2D, 1, 2, 2, 3);
    expect_ok(major, DICT_2D, 0, 2, 2, 3); /* unpadded: an older writer's alignment */
  }
  expect_ok(1, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}", 1, 2, 2, 3);
  expect_ok(1, "{'shape': (2,3), 'descr': '<f4', 'fortran_order': False}", 1, 2, 2, 3);
  expect_ok(2, "{'fortran_order': False, 'shape': (2, 3,), 'descr': \"<f4\",}", 1, 2, 2, 3);
  expect_ok(3, "{ 'descr' : '<f4' ,\t'fortran_order':False,\n'shape':( 5 , ) }", 1, 1, 5, 1);
  expect_ok(1, "{'descr':'<f4','fortran_order':False,'shape':(1,1)}", 0, 2, 1, 1);

  /* A header longer than 65535 bytes needs version 2's uint32 length. */
  size_t n = strlen(DICT_2D), hdr_len = 70000 - 12;
  char *header = malloc(hdr_len);
  CHECK(header != NULL);
  memcpy(header, DICT_2D, n);
  memset(header + n, ' ', hdr_len - n);
  header[hdr_len - 1] = '\n';
  size_t len;
  unsigned char *b = build_raw(2, header, hdr_len, 6, &len);
  struct npy_array a;
  char err[256];
  CHECK_INT_EQ(npy_parse(b, len, &a, err, sizeof err), 0);
  CHECK_INT_EQ(a.count, 6);
  check_values(&a, 0.5f);
  free(b);
  free(header);

  /* The body buffer itself unaligned: data is too, and must be read with memcpy. */
  b = build(1, DICT_2D, 1, 6, &len);
  unsigned char *odd = malloc(len + 1);
  CHECK(odd != NULL);
  memcpy(odd + 1, b, len);
  CHECK_INT_EQ(npy_parse(odd + 1, len, &a, err, sizeof err), 0);
  CHECK((const unsigned char *)a.data == odd + 1 + len - 24); /* odd, whatever malloc gave */
  check_values(&a, 0.5f);
  free(odd);
  free(b);
}

static void test_rejected_preamble(void) {
  const char *json = "{\"m\": 3}";
  expect_fail_buf(json, strlen(json),
                  "not a .npy file: it does not start with the magic string \\x93NUMPY; write one "
                  "with np.save('a.npy', a)");
  expect_fail_buf("\x93NUMPX\x01\x00", 8, "magic");
  expect_fail_buf("PK\x03\x04\x14\x00", 6, "a .npz archive (zip), not a .npy file: send one array");
  expect_fail_buf("", 0, "empty body: not a .npy file");
  expect_fail_buf(NULL, 0, "not a .npy file");
  expect_fail(4, DICT_1D, 5, "unsupported .npy version 4.0");
  size_t len;
  unsigned char *b = build(1, DICT_1D, 1, 5, &len);
  b[7] = 1;
  expect_fail_buf(b, len,
                  "mangled .npy preamble: version bytes 1.1, which no .npy has (np.save writes "
                  "1.0), as curl -d @a.npy mangles a file");
  expect_fail_buf(b, len, "send the whole file: curl --data-binary @a.npy");
  free(b);

  /* err may be NULL or short: still -EINVAL, still NUL-terminated. */
  struct npy_array a;
  CHECK_INT_EQ(npy_parse(json, strlen(json), &a, NULL, 0), -EINVAL);
  char err[8];
  CHECK_INT_EQ(npy_parse(json, strlen(json), &a, err, sizeof err), -EINVAL);
  CHECK_STR_EQ(err, "not a .");
}

static void test_rejected_dtype(void) {
  static const struct {
    const char *descr, *want;
  } bad[] = {
      {"'>f4'",
       "unsupported dtype '>f4' (big-endian float32): gpulab reads little-endian float32 "
       "('<f4'), float64 ('<f8', kept as float32), float16 ('<f2'), int32 ('<i4'), uint32 "
       "('<u4') and int8 ('|i1'); send a.astype('<f4')"},
      {"'>i4'", "(big-endian int32): gpulab reads"},
      {"'>i4'", "send a.astype('<i4')"},
      {"'>f8'", "'>f8' (big-endian float64): gpulab reads"},
      {"'|f4'", "unsupported dtype '|f4' (float32)"},
      {"'<f16'", "'<f16' (longdouble)"},
      {"'<i8'",
       "unsupported dtype '<i8' (int64): gpulab reads little-endian float32 ('<f4'), float64 "
       "('<f8', kept as float32), float16 ('<f2'), int32 ('<i4'), uint32 ('<u4') and int8 "
       "('|i1'); send a.astype(np.float32)"},
      {"'<i2'", "'<i2' (int16)"},
      {"'<u2'", "'<u2' (uint16)"},
      {"'|u1'", "'|u1' (uint8)"},
      {"'|b1'", "'|b1' (bool): gpulab reads"},
      {"'<c8'", "'<c8' (complex64): gpulab reads little-endian float32 ('<f4'), float64"},
      {"'<c8'", "('|i1'); send a.real.astype(np.float32) (or np.abs(a).astype(np.float32))"},
      {"'<c16'", "'<c16' (complex128)"},
      {"'|O'", "'|O' (object)"},
      {"'<U3'", "'<U3' (str): gpulab reads"},
      {"'<U3'", "; send a.astype(np.float32), if the strings are numbers"},
      {"'|S5'", "'|S5' (bytes)"},
      {"'<M8[ns]'", "'<M8[ns]' (datetime64): gpulab reads"},
      {"'<M8[ns]'", "; send a.astype(np.int64).astype(np.float32)"},
      {"'<m8[s]'", "'<m8[s]' (timedelta64)"},
      {"'f4'", "unsupported dtype 'f4': gpulab reads"},
      {"'\xff\x01'", "unsupported dtype '\\xff\\x01': gpulab reads"},
      {"'<f4<f4<f4<f4<f4<f4<f4<f4<f4<f4<f4<f4<f4<f4'", "unsupported dtype '<f4<f4<f4<f4<f4<f4<f4"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char dict[160];
    snprintf(dict, sizeof dict, "{'descr': %s, 'fortran_order': False, 'shape': (5,), }",
             bad[i].descr);
    expect_fail(1, dict, 10, bad[i].want);
  }
  expect_fail(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (5,), }", 5,
              "unsupported dtype: a structured array (named fields) is not read; send one field as "
              "float32: a['name'].astype(np.float32)");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (5,), }", 5,
              "'fortran_order' must be True or False");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (5,), }", 5,
              "'fortran_order' must be True or False");
  expect_fail(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 6,
              "truncated: the header promises 48 bytes of data, the body has 24; send the whole "
              "file: curl --data-binary @a.npy (curl -d drops line breaks)");
}

static void test_rejected_shape(void) {
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 5), }", 60,
              "shape (3, 4, 5) has 3 dimensions; 1 or 2 are accepted: a.reshape(a.shape[0], -1)");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 1,
              "shape () has 0 dimensions; 1 or 2 are accepted: np.atleast_1d(a)");
  expect_fail(
      1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", 0,
      "empty arrays are not accepted: shape (0,) has no elements; send one with a.size >= 1");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0), }", 0,
              "empty arrays are not accepted");
  expect_fail(1,
              "{'descr': '<f4', 'fortran_order': False, "
              "'shape': (9223372036854775807, 9223372036854775807), }",
              0, "shape (9223372036854775807, 9223372036854775807) has too many elements");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 0,
              "too many elements"); /* 2^62 floats: 2^64 bytes */
  expect_fail(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }", 0,
              "too many elements"); /* 2^61 doubles: 2^64 bytes */
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }", 0,
              "shape dimension 9223372036854775808 is too large");
  expect_fail(1,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,"
              "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,), }",
              1, "has 42 dimensions");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5), }", 5,
              "shape (5) is not a tuple: a 1-D shape is written (5,)");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [5], }", 5,
              "'shape' must be a tuple");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-5,), }", 5,
              "negative shape dimension");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (05,), }", 5, "leading zeros");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5 5,), }", 5,
              "expected ',' or ')'");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,,), }", 5,
              "expected an integer shape dimension");
}

static void test_rejected_syntax(void) {
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 5,
              "truncated: the header promises 24 bytes of data, the body has 20");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 7,
              "trailing bytes: the header promises 24 bytes of data, the body has 28");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False}", 5, "lacks 'shape'");
  expect_fail(1, "{'fortran_order': False, 'shape': (5,)}", 5, "lacks 'descr'");
  expect_fail(1, "{}", 5, "lacks 'descr'");
  expect_fail(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (5,)}", 5,
              "a key appears twice");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), 'foo': 1}", 5,
              "unknown key 'foo'");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,)} x", 5,
              "unexpected text after the dict");
  expect_fail(1, "{'descr': '<f4' 'fortran_order': False, 'shape': (5,)}", 5,
              "expected ',' or '}'");
  expect_fail(1, "{'descr' '<f4', 'fortran_order': False, 'shape': (5,)}", 5,
              "expected ':' after a key");
  expect_fail(1, "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (5,)}", 5,
              "escape sequences");
  expect_fail(1, "{'descr': '<f4, 'fortran_order': False, 'shape': (5,)}", 5,
              "malformed .npy header");
  expect_fail(1, "{'descr': \"<f4}", 5, "unterminated string");
  expect_fail(1, "['descr', '<f4']", 5, "expected '{'");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,)", 5, "expected");
}

static void test_rejected_lengths(void) {
  /* A header that does not end in '\n'. */
  size_t len;
  unsigned char *b = build_raw(1, DICT_1D, strlen(DICT_1D), 5, &len);
  expect_fail_buf(b, len, "does not end in a newline");
  free(b);

  /* Length fields that run past the body: 1000 in a 200-byte body, 0xFFFF, 2^32-1. */
  b = build(1, DICT_1D, 1, 5, &len);
  unsigned char *small = malloc(200);
  CHECK(small != NULL);
  memset(small, ' ', 200);
  memcpy(small, b, len < 200 ? len : 200);
  small[8] = 1000 & 0xff;
  small[9] = 1000 >> 8;
  expect_fail_buf(small, 200, "header length 1000 runs past the body (200 bytes)");
  b[8] = b[9] = 0xff;
  expect_fail_buf(b, len, "header length 65535 runs past the body");
  free(b);
  free(small);
  b = build(2, DICT_1D, 1, 5, &len);
  b[8] = b[9] = b[10] = b[11] = 0xff;
  expect_fail_buf(b, len, "header length 4294967295 runs past the body");
  b[8] = b[9] = b[10] = b[11] = 0;
  expect_fail_buf(b, len, "does not end in a newline");
  free(b);
}

/* Every proper prefix of a valid file must fail cleanly. */
static void test_truncations(void) {
  for (int major = 1; major <= 3; major++) {
    size_t len;
    unsigned char *b = build(major, DICT_2D, 1, 6, &len);
    for (size_t cut = 0; cut < len; cut++) {
      unsigned char *p = malloc(cut ? cut : 1);
      CHECK(p != NULL);
      memcpy(p, b, cut);
      struct npy_array a;
      char err[256] = "";
      CHECK_INT_EQ(npy_parse(p, cut, &a, err, sizeof err), -EINVAL);
      CHECK(err[0] != '\0');
      check_fix(err);
      free(p);
    }
    free(b);
  }
  size_t len;
  unsigned char *b = build(1, DICT_2D, 1, 6, &len);
  expect_fail_buf(b, 3, "3 bytes is shorter than the .npy preamble");
  expect_fail_buf(b, 9, "shorter than the .npy preamble");
  expect_fail_buf(b, 20, "runs past the body (20 bytes)");
  expect_fail_buf(b, len - 1, "truncated: the header promises 24 bytes of data, the body has 23");
  free(b);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) { /* xorshift64: fixed seed, same mutations every run */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* One random edit, biased toward the header and its syntax characters. */
static void mutate(unsigned char *p, size_t *len, size_t cap) {
  static const char special[] = "{}()[],:'\" \n\t0123456789-TrueFals<f4\xff";
  size_t hdr_end = *len < 128 ? *len : 128;
  size_t span = rng() % 2 ? hdr_end : *len; /* one call per statement: fixed order */
  size_t at = rng() % span;
  switch (rng() % 6) {
  case 0: p[at] = (unsigned char)rng(); break;
  case 1: p[at] ^= (unsigned char)(1u << (rng() % 8)); break;
  case 2: p[at] = (unsigned char)special[rng() % (sizeof special - 1)]; break;
  case 3: p[8 + rng() % 4] = (unsigned char)rng(); break; /* the length field */
  case 4: *len = rng() % (*len + 1); break;
  case 5:
    if (*len < cap) p[(*len)++] = (unsigned char)rng();
    break;
  }
  if (*len == 0) *len = 1;
}

static void test_mutations(void) {
  size_t len1, len2;
  unsigned char *v1 = build(1, DICT_2D, 1, 6, &len1);
  unsigned char *v2 = build(2, "{'shape': (5,), 'descr': \"<f4\", 'fortran_order': False}", 1, 5,
                            &len2);
  int n_ok = 0;
  for (int i = 0; i < 1000; i++) {
    const unsigned char *base = i % 2 ? v2 : v1;
    size_t len = i % 2 ? len2 : len1, cap = len + 16;
    unsigned char *work = malloc(cap);
    CHECK(work != NULL);
    memcpy(work, base, len);
    for (int n = 1 + (int)(rng() % 4); n > 0; n--) mutate(work, &len, cap);
    unsigned char *p = malloc(len); /* exact size, so an over-read trips ASan */
    CHECK(p != NULL);
    memcpy(p, work, len);
    struct npy_array a;
    char err[256] = "";
    if (npy_parse(p, len, &a, err, sizeof err) == 0) {
      n_ok++;
      CHECK(a.ndim == 1 || a.ndim == 2);
      CHECK(a.shape[0] >= 1 && a.shape[1] >= 1);
      CHECK_INT_EQ(a.count, (uint64_t)a.shape[0] * (uint64_t)a.shape[1]);
      CHECK((const unsigned char *)a.stored + a.count * (uint64_t)a.elem_bytes == p + len);
    } else {
      CHECK(err[0] != '\0');
      check_fix(err);
    }
    free(p);
    free(work);
  }
  printf("mutations: %d of 1000 still parsed\n", n_ok);
  free(v1);
  free(v2);
}

static void expect_raw(const char *shape, size_t len, const char *want) {
  static char body[64];
  struct npy_array a;
  char err[256] = "";
  int rc = npy_raw(body, len, shape, NULL, &a, err, sizeof err);
  if (!want) {
    if (rc != 0) fprintf(stderr, "raw '%s' %zu: %s\n", shape, len, err);
    CHECK_INT_EQ(rc, 0);
    CHECK((const char *)a.data == body);
    CHECK_INT_EQ(a.count * 4, len);
    return;
  }
  CHECK_INT_EQ(rc, -EINVAL);
  if (!strstr(err, want)) fprintf(stderr, "raw '%s': want \"%s\" in \"%s\"\n", shape, want, err);
  CHECK(strstr(err, want) != NULL);
  CHECK(a.data == NULL && a.count == 0);
}

static void test_raw(void) {
  struct npy_array a;
  char err[256];
  float body[6] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
  CHECK_INT_EQ(npy_raw(body, sizeof body, "2,3", NULL, &a, err, sizeof err), 0);
  CHECK_INT_EQ(a.ndim, 2);
  CHECK_INT_EQ(a.shape[0], 2);
  CHECK_INT_EQ(a.shape[1], 3);
  check_values(&a, 0.5f);
  CHECK_INT_EQ(npy_raw(body, sizeof body, "6", NULL, &a, err, sizeof err), 0);
  CHECK_INT_EQ(a.ndim, 1);
  CHECK_INT_EQ(a.shape[1], 1);
  expect_raw("5", 20, NULL);
  expect_raw("1,1", 4, NULL);
  expect_raw("007", 28, NULL);
  expect_raw(NULL, 20, "missing shape");
  expect_raw("", 20, "missing shape");
  expect_raw("0", 0, "empty arrays are not accepted");
  expect_raw("2,0", 0, "empty arrays are not accepted");
  const char *bad[] = {"2,3,4", " 5", "5 ",  "+5",   "-5",   "5,",  ",5",
                       "a",     "5x", "2;3", "2,,3", "0x10", "1e3", "5\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_raw(bad[i], 20, "is not n or m,n");
  expect_raw("99999999999999999999", 20, "too large");
  expect_raw("9223372036854775807,9223372036854775807", 20, "has too many elements");
  expect_raw("4611686018427387904", 20, "has too many elements");
  expect_raw("2,3", 20,
             "truncated: ?shape=2,3 needs 24 bytes (4 per float32), the body has 20; "
             "a.astype(np.float32).tofile('a.f32') writes them");
  expect_raw("2,3", 25, "trailing bytes: ?shape=2,3 needs 24 bytes");
  expect_raw("2,3", 48,
             "?shape=2,3 needs 24 bytes (4 per float32), the body has 48: 8 per element, "
             "float64? send float32: a.astype(np.float32).tofile('a.f32')");
  expect_raw("5", 0, "truncated");
  CHECK_INT_EQ(npy_raw(NULL, 20, "5", NULL, &a, err, sizeof err), -EINVAL);
  /* ?dtype=: 24 bytes are 12 float16, 6 int32, 24 int8; the messages name the dtype. */
  CHECK_INT_EQ(npy_raw(body, sizeof body, "3,4", "float16", &a, err, sizeof err), 0);
  CHECK(a.dtype == NPY_FLOAT16 && a.elem_bytes == 2 && a.count == 12 && a.data == body);
  CHECK_INT_EQ(npy_raw(body, sizeof body, "12", "bfloat16", &a, err, sizeof err), 0);
  CHECK(a.dtype == NPY_BFLOAT16 && a.count == 12);
  CHECK_INT_EQ(npy_raw(body, sizeof body, "6", "int32", &a, err, sizeof err), 0);
  CHECK(a.dtype == NPY_INT32 && a.count == 6);
  CHECK_INT_EQ(npy_raw(body, sizeof body, "24", "int8", &a, err, sizeof err), 0);
  CHECK(a.dtype == NPY_INT8 && a.count == 24);
  CHECK_INT_EQ(npy_raw(body, sizeof body, "6", "float16", &a, err, sizeof err), -EINVAL);
  CHECK(strstr(err,
               "trailing bytes: ?shape=6 needs 12 bytes (2 per float16), the body has 24; "
               "a.astype(np.float16).tofile('a.bin')") != NULL);
  CHECK_INT_EQ(npy_raw(body, sizeof body, "6", "float64", &a, err, sizeof err), -EINVAL);
  CHECK(strstr(err, "dtype 'float64' is not one gpulab keeps") != NULL);
  CHECK_INT_EQ(npy_raw(body, sizeof body, NULL, "int8", &a, err, sizeof err), -EINVAL);
  CHECK(strstr(err, "missing shape: give ?shape=n or ?shape=m,n with raw int8") != NULL);
  CHECK_INT_EQ(npy_dtype_from_name("uint32"), NPY_UINT32);
  CHECK_INT_EQ(npy_dtype_from_name("Float32"), -1);
  CHECK(npy_dtype_name((enum npy_dtype)NPY_DTYPE_COUNT) == NULL);
}

static const struct test_case cases[] = {
    TEST(test_round_trip),
    TEST(test_valid_headers),
    TEST(test_rejected_preamble),
    TEST(test_rejected_dtype),
    TEST(test_rejected_shape),
    TEST(test_rejected_syntax),
    TEST(test_rejected_lengths),
    TEST(test_truncations),
    TEST(test_mutations),
    TEST(test_raw),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
