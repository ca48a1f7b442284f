/* The .npy codec: round trips, every header form NumPy writes, every rejection with
 * its message, all truncations, random mutations, and NumPy itself when python3 has
 * it. Every parsed buffer is a heap block of exactly its size, so ASan sees over-reads. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/npy.h"
#include "tests/check.h"

#define DICT_1D "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }"
#define DICT_2D "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

/* A file of header (used verbatim: dict, padding, '\n') after a preamble for major,
 * then n_floats values i * 0.5. Caller frees. */
static unsigned char *build_raw(int major, const char *header, size_t hdr_len, size_t n_floats,
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
static unsigned char *build(int major, const char *dict, int pad, size_t n_floats,
                            size_t *len) {
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

static void check_values(const struct npy_array *a, float step) {
  for (uint64_t i = 0; i < a->count; i++) {
    float v;
    memcpy(&v, (const char *)a->data + 4 * i, 4); /* data may be unaligned */
    CHECK_NEAR(v, (float)i * step, 0);
  }
}

static void expect_ok(int major, const char *dict, int pad, int ndim, int64_t d0, int64_t d1) {
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
  CHECK((const unsigned char *)a.data + a.count * 4 == b + len);
  check_values(&a, 0.5f);
  free(b);
}

static void expect_fail_buf(const void *b, size_t len, const char *want) {
  struct npy_array a;
  char err[256] = "";
  memset(&a, 0xab, sizeof a);
  CHECK_INT_EQ(npy_parse(b, len, &a, err, sizeof err), -1);
  if (!strstr(err, want)) fprintf(stderr, "want \"%s\" in \"%s\"\n", want, err);
  CHECK(strstr(err, want) != NULL);
  CHECK(a.data == NULL && a.count == 0 && a.ndim == 0);
}

static void expect_fail(int major, const char *dict, size_t n_floats, const char *want) {
  size_t len;
  unsigned char *b = build(major, dict, 1, n_floats, &len);
  expect_fail_buf(b, len, want);
  free(b);
}

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
  /* uint32 (a histogram's counts): the same size, '<u4', which uploads refuse */
  CHECK_INT_EQ(npy_write_header(b, sizeof b, 2, s, NPY_UINT32), 128);
  static const char u4[] = "{'descr': '<u4', 'fortran_order': False, 'shape': (7, 3), }";
  CHECK(memmem(b, 128, u4, sizeof u4 - 1) == b + 10);
  char file[128 + 21 * 4] = {0};
  memcpy(file, b, 128);
  struct npy_array a;
  char err[256] = "";
  CHECK_INT_EQ(npy_parse(file, sizeof file, &a, err, sizeof err), -1);
  CHECK(strstr(err, "unsupported dtype '<u4'") != NULL);
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
  expect_fail_buf(json, strlen(json), "wrong magic: not a .npy file");
  expect_fail_buf("\x93NUMPX\x01\x00", 8, "wrong magic");
  expect_fail_buf("", 0, "not a .npy file");
  expect_fail_buf(NULL, 0, "not a .npy file");
  expect_fail(4, DICT_1D, 5, "unsupported .npy version 4.0");
  size_t len;
  unsigned char *b = build(1, DICT_1D, 1, 5, &len);
  b[7] = 1;
  expect_fail_buf(b, len, "unsupported .npy version 1.1");
  free(b);

  /* err may be NULL or short: still -1, still NUL-terminated. */
  struct npy_array a;
  CHECK_INT_EQ(npy_parse(json, strlen(json), &a, NULL, 0), -1);
  char err[8];
  CHECK_INT_EQ(npy_parse(json, strlen(json), &a, err, sizeof err), -1);
  CHECK_STR_EQ(err, "wrong m");
}

static void test_rejected_dtype(void) {
  expect_fail(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", 10,
              "unsupported dtype '<f8': only little-endian float32 ('<f4')");
  expect_fail(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (5,), }", 5,
              "unsupported dtype '>f4'");
  expect_fail(1, "{'descr': '|f4', 'fortran_order': False, 'shape': (5,), }", 5,
              "unsupported dtype '|f4'");
  expect_fail(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }", 5,
              "unsupported dtype '<i4'");
  expect_fail(1, "{'descr': '\xff\x01', 'fortran_order': False, 'shape': (5,), }", 5,
              "unsupported dtype '\\xff\\x01'");
  expect_fail(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (5,), }", 5,
              "structured dtypes are not accepted");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 6,
              "Fortran order is not supported: send C order");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (5,), }", 5,
              "'fortran_order' must be True or False");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (5,), }", 5,
              "'fortran_order' must be True or False");
}

static void test_rejected_shape(void) {
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 5), }", 60,
              "shape (3, 4, 5) has 3 dimensions; 1 or 2 are accepted");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 1,
              "shape () has 0 dimensions; 1 or 2 are accepted");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", 0,
              "empty arrays are not accepted");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0), }", 0,
              "empty arrays are not accepted");
  expect_fail(1,
              "{'descr': '<f4', 'fortran_order': False, "
              "'shape': (9223372036854775807, 9223372036854775807), }",
              0, "shape (9223372036854775807, 9223372036854775807) has too many elements");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }",
              0, "too many elements"); /* 2^62 floats: 2^64 bytes */
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }",
              0, "shape dimension 9223372036854775808 is too large");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,"
                 "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,), }",
              1, "has 42 dimensions");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5), }", 5,
              "shape (5) is not a tuple: a 1-D shape is written (5,)");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [5], }", 5,
              "'shape' must be a tuple");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-5,), }", 5,
              "negative shape dimension");
  expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (05,), }", 5,
              "leading zeros");
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
      CHECK_INT_EQ(npy_parse(p, cut, &a, err, sizeof err), -1);
      CHECK(err[0] != '\0');
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
      CHECK((const unsigned char *)a.data + a.count * 4 == p + len);
    } else {
      CHECK(err[0] != '\0');
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
  int rc = npy_raw(body, len, shape, &a, err, sizeof err);
  if (!want) {
    if (rc != 0) fprintf(stderr, "raw '%s' %zu: %s\n", shape, len, err);
    CHECK_INT_EQ(rc, 0);
    CHECK((const char *)a.data == body);
    CHECK_INT_EQ(a.count * 4, len);
    return;
  }
  CHECK_INT_EQ(rc, -1);
  if (!strstr(err, want)) fprintf(stderr, "raw '%s': want \"%s\" in \"%s\"\n", shape, want, err);
  CHECK(strstr(err, want) != NULL);
  CHECK(a.data == NULL && a.count == 0);
}

static void test_raw(void) {
  struct npy_array a;
  char err[256];
  float body[6] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
  CHECK_INT_EQ(npy_raw(body, sizeof body, "2,3", &a, err, sizeof err), 0);
  CHECK_INT_EQ(a.ndim, 2);
  CHECK_INT_EQ(a.shape[0], 2);
  CHECK_INT_EQ(a.shape[1], 3);
  check_values(&a, 0.5f);
  CHECK_INT_EQ(npy_raw(body, sizeof body, "6", &a, err, sizeof err), 0);
  CHECK_INT_EQ(a.ndim, 1);
  CHECK_INT_EQ(a.shape[1], 1);
  expect_raw("5", 20, NULL);
  expect_raw("1,1", 4, NULL);
  expect_raw("007", 28, NULL);
  expect_raw(NULL, 20, "missing shape");
  expect_raw("", 20, "missing shape");
  expect_raw("0", 0, "empty arrays are not accepted");
  expect_raw("2,0", 0, "empty arrays are not accepted");
  const char *bad[] = {"2,3,4", " 5", "5 ", "+5", "-5", "5,", ",5", "a", "5x", "2;3", "2,,3",
                       "0x10", "1e3", "5\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_raw(bad[i], 20, "is not n or m,n");
  expect_raw("99999999999999999999", 20, "too large");
  expect_raw("9223372036854775807,9223372036854775807", 20, "has too many elements");
  expect_raw("4611686018427387904", 20, "has too many elements");
  expect_raw("2,3", 20, "truncated: the header promises 24 bytes of data, the body has 20");
  expect_raw("2,3", 25, "trailing bytes");
  expect_raw("5", 0, "truncated");
  CHECK_INT_EQ(npy_raw(NULL, 20, "5", &a, err, sizeof err), -1);
}

/* ---- NumPy itself ---- */

static unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  CHECK(fseek(f, 0, SEEK_END) == 0);
  long n = ftell(f);
  CHECK(n > 0);
  rewind(f);
  unsigned char *b = malloc((size_t)n);
  CHECK(b != NULL);
  CHECK_INT_EQ(fread(b, 1, (size_t)n, f), n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  CHECK_INT_EQ(fwrite(text, 1, strlen(text), f), strlen(text));
  CHECK(fclose(f) == 0);
}

static const char numpy_writes[] =
    "import sys, numpy as np\n"
    "from numpy.lib import format as fmt\n"
    "d = sys.argv[1]\n"
    "np.save(d + '/a1.npy', np.arange(7, dtype=np.float32) * np.float32(0.5))\n"
    "np.save(d + '/a2.npy', (np.arange(15, dtype=np.float32) * np.float32(0.5)).reshape(3, 5))\n"
    "np.save(d + '/big.npy', np.arange(100000, dtype=np.float32) * np.float32(0.5))\n"
    "a = (np.arange(6, dtype=np.float32) * np.float32(0.5)).reshape(2, 3)\n"
    "np.save(d + '/sliced.npy', np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2])\n"
    "for v in (1, 2, 3):\n"
    "    with open(d + '/v%d.npy' % v, 'wb') as f:\n"
    "        fmt.write_array(f, a, version=(v, 0))\n"
    "np.save(d + '/f8.npy', np.arange(3, dtype=np.float64))\n"
    "np.save(d + '/fortran.npy', np.asfortranarray(a))\n"
    "np.save(d + '/empty.npy', np.zeros((0,), dtype=np.float32))\n"
    "np.save(d + '/cube.npy', np.zeros((2, 2, 2), dtype=np.float32))\n"
    "np.save(d + '/scalar.npy', np.float32(1.5))\n";

static const char numpy_reads[] =
    "import sys, numpy as np\n"
    "d = sys.argv[1]\n"
    "a = np.load(d + '/ours1.npy')\n"
    "assert a.dtype == np.float32 and a.shape == (7,), (a.dtype, a.shape)\n"
    "assert (a == np.arange(7, dtype=np.float32) * np.float32(0.25)).all(), a\n"
    "b = np.load(d + '/ours2.npy')\n"
    "assert b.dtype == np.float32 and b.shape == (3, 5), (b.dtype, b.shape)\n"
    "assert b.flags.c_contiguous and not np.isfortran(b)\n"
    "assert (b.ravel() == np.arange(15, dtype=np.float32) * np.float32(0.25)).all(), b\n"
    "c = np.load(d + '/ours3.npy')\n"
    "assert c.dtype == np.uint32 and c.shape == (7,), (c.dtype, c.shape)\n"
    "assert (c == np.arange(7, dtype=np.uint32) * 3 + 4000000000).all(), c\n";

static void parse_numpy_file(const char *dir, const char *name, int ndim, int64_t d0,
                             int64_t d1, const char *want_err) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t len;
  unsigned char *b = read_file(path, &len);
  struct npy_array a;
  char err[256] = "";
  int rc = npy_parse(b, len, &a, err, sizeof err);
  if (want_err) {
    if (rc != -1 || !strstr(err, want_err)) fprintf(stderr, "%s: %d \"%s\"\n", name, rc, err);
    CHECK(rc == -1 && strstr(err, want_err) != NULL);
  } else {
    if (rc != 0) fprintf(stderr, "%s: %s\n", name, err);
    CHECK_INT_EQ(rc, 0);
    CHECK_INT_EQ(a.ndim, ndim);
    CHECK_INT_EQ(a.shape[0], d0);
    CHECK_INT_EQ(a.shape[1], d1);
    if (strcmp(name, "sliced.npy") != 0) check_values(&a, 0.5f);
  }
  free(b);
}

/* float32: i * 0.25; uint32: 3i + 4e9 (past a float's exact integers) */
static void write_ours(const char *dir, const char *name, int ndim, const int64_t *shape,
                       enum npy_dtype dtype) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t hs = npy_header_size(ndim, shape), count = (size_t)(shape[0] * (ndim == 2 ? shape[1] : 1));
  char *b = malloc(hs + count * 4);
  CHECK(b != NULL);
  CHECK_INT_EQ(npy_write_header(b, hs, ndim, shape, dtype), hs);
  for (size_t i = 0; i < count; i++) {
    float v = (float)i * 0.25f;
    uint32_t u = 3u * (uint32_t)i + 4000000000u;
    memcpy(b + hs + 4 * i, dtype == NPY_UINT32 ? (void *)&u : (void *)&v, 4);
  }
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  CHECK_INT_EQ(fwrite(b, 1, hs + count * 4, f), hs + count * 4);
  CHECK(fclose(f) == 0);
  free(b);
}

static void test_numpy(void) {
  if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    printf("note: python3 with numpy not found; skipping the NumPy cross-check\n");
    return;
  }
  char dir[] = "/tmp/test_npy_XXXXXX", script[600], cmd[1400];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(script, sizeof script, "%s/writes.py", dir);
  write_text(script, numpy_writes);
  snprintf(cmd, sizeof cmd, "python3 %s %s", script, dir);
  CHECK_INT_EQ(system(cmd), 0);
  parse_numpy_file(dir, "a1.npy", 1, 7, 1, NULL);
  parse_numpy_file(dir, "a2.npy", 2, 3, 5, NULL);
  parse_numpy_file(dir, "big.npy", 1, 100000, 1, NULL);
  parse_numpy_file(dir, "sliced.npy", 2, 2, 3, NULL);
  parse_numpy_file(dir, "v1.npy", 2, 2, 3, NULL);
  parse_numpy_file(dir, "v2.npy", 2, 2, 3, NULL);
  parse_numpy_file(dir, "v3.npy", 2, 2, 3, NULL);
  parse_numpy_file(dir, "f8.npy", 0, 0, 0, "unsupported dtype '<f8'");
  parse_numpy_file(dir, "fortran.npy", 0, 0, 0, "Fortran order is not supported");
  parse_numpy_file(dir, "empty.npy", 0, 0, 0, "empty arrays are not accepted");
  parse_numpy_file(dir, "cube.npy", 0, 0, 0, "shape (2, 2, 2) has 3 dimensions");
  parse_numpy_file(dir, "scalar.npy", 0, 0, 0, "shape () has 0 dimensions");

  const int64_t s1[2] = {7, 1}, s2[2] = {3, 5};
  write_ours(dir, "ours1.npy", 1, s1, NPY_FLOAT32);
  write_ours(dir, "ours2.npy", 2, s2, NPY_FLOAT32);
  write_ours(dir, "ours3.npy", 1, s1, NPY_UINT32);
  snprintf(script, sizeof script, "%s/reads.py", dir);
  write_text(script, numpy_reads);
  snprintf(cmd, sizeof cmd, "python3 %s %s", script, dir);
  CHECK_INT_EQ(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_INT_EQ(system(cmd), 0);
  printf("numpy cross-check: parsed NumPy's files, NumPy loaded ours\n");
}

int main(void) {
  test_round_trip();
  test_valid_headers();
  test_rejected_preamble();
  test_rejected_dtype();
  test_rejected_shape();
  test_rejected_syntax();
  test_rejected_lengths();
  test_truncations();
  test_mutations();
  test_raw();
  test_numpy();
  printf("test_npy: ok\n");
  return 0;
}
