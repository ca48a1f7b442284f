/* The .npy codec's conversions: float64 and Fortran order converted to C-order float32
 * (rounding, range, tiles), the upload's choice of reading, and NumPy itself (the
 * system's python3 with numpy: required): files it writes parsed, files we write read
 * by it. */
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

/* The system's Python, for which python3-numpy installs NumPy (a python3 earlier on
 * PATH, such as pyenv's, may lack it). */
#define PYTHON "/usr/bin/python3"

/* ---- float64 and Fortran order, converted ---- */

/* A padded version 1.0 file of dict and data_bytes of data. Caller frees. */
static unsigned char *build_data(const char *dict, const void *data, size_t data_bytes,
                                 size_t *len) {
  size_t n = strlen(dict), hdr_len = (10 + n + 1 + 63) / 64 * 64 - 10;
  *len = 10 + hdr_len + data_bytes;
  unsigned char *b = malloc(*len);
  CHECK(b != NULL);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (unsigned char)(hdr_len & 0xff);
  b[9] = (unsigned char)(hdr_len >> 8);
  memset(b + 10, ' ', hdr_len);
  memcpy(b + 10, dict, n);
  b[10 + hdr_len - 1] = '\n';
  memcpy(b + 10 + hdr_len, data, data_bytes);
  return b;
}

/* Parses a file of dict and data, converts it, and returns the float32 values
 * (caller frees) with the conversion in *conv; NULL when the conversion refused,
 * with its message in err. */
static float *parse_convert(const char *dict, const void *data, size_t data_bytes,
                            struct npy_array *a, struct npy_conversion *conv, char *err,
                            size_t err_len) {
  size_t len;
  unsigned char *b = build_data(dict, data, data_bytes, &len);
  unsigned char *exact = malloc(len); /* its own block, so an over-read trips ASan */
  CHECK(exact != NULL);
  memcpy(exact, b, len);
  free(b);
  int rc = npy_parse(exact, len, a, err, err_len);
  if (rc) fprintf(stderr, "%s: %s\n", dict, err);
  CHECK_INT_EQ(rc, 0);
  float *out = malloc((size_t)a->count * 4);
  CHECK(out != NULL);
  rc = npy_convert(a, out, conv, err, err_len);
  free(exact);
  if (rc) {
    free(out);
    return NULL;
  }
  return out;
}

static void test_float64(void) {
  static const double v[] = {0.1,
                             -1.0 / 3,
                             1e-40,
                             -1e-50,
                             16777217.0,
                             (double)FLT_MAX,
                             0x1.fffffefffffffp127 /* below halfway: FLT_MAX */,
                             NAN,
                             INFINITY,
                             -INFINITY,
                             0.0,
                             -0.0};
  enum { N = sizeof v / sizeof v[0] };
  char dict[128], err[256];
  snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }", (int)N);
  struct npy_array a;
  struct npy_conversion conv;
  float *out = parse_convert(dict, v, sizeof v, &a, &conv, err, sizeof err);
  CHECK(out != NULL);
  CHECK(a.data == NULL && a.elem_bytes == 8 && a.ndim == 1 && a.count == N);
  CHECK_STR_EQ(conv.from_dtype, "float64");
  CHECK_INT_EQ(conv.from_fortran_order, 0);
  double worst = 0;
  for (int i = 0; i < N; i++) {
    float want = (float)v[i];
    if (isnan(v[i]))
      CHECK(isnan(out[i]));
    else
      CHECK(memcmp(&out[i], &want, 4) == 0);
    if (isfinite(v[i]) && fabs(v[i] - (double)want) > worst) worst = fabs(v[i] - (double)want);
  }
  CHECK(out[6] == FLT_MAX && out[3] == 0 && signbit(out[3]) && out[4] == 16777216.0f);
  CHECK(worst > 1e30); /* 0x1.fffffefffffffp127 - FLT_MAX */
  CHECK(conv.max_rounding_error == worst);
  free(out);

  /* Exact values: no rounding at all. */
  double exact[6] = {0, 1, -2.5, 1024, 0.125, 3};
  out = parse_convert("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", exact,
                      sizeof exact, &a, &conv, err, sizeof err);
  CHECK(out != NULL && conv.max_rounding_error == 0 && out[2] == -2.5f && out[5] == 3.0f);
  free(out);

  /* Past float32's range: refused where it lies, in C and in Fortran order. */
  double over[6] = {1, 2, 3, 4, 5, 0x1.ffffffp127};
  out = parse_convert("{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", over,
                      sizeof over, &a, &conv, err, sizeof err);
  CHECK(out == NULL);
  check_fix(err);
  CHECK(strstr(err,
               "float64 value 3.4028235677973366e+38 at [5] does not fit float32 (largest "
               "3.4028235e+38): scale it, or np.clip(a, -3.4e38, 3.4e38).astype(np.float32)"));
  over[5] = 6;
  over[4] = -1e300;
  out = parse_convert("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", over,
                      sizeof over, &a, &conv, err, sizeof err);
  CHECK(out == NULL &&
        strstr(err, "value -1.0000000000000001e+300 at [1, 1] does not fit") != NULL);
  out = parse_convert("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", over,
                      sizeof over, &a, &conv, err, sizeof err);
  CHECK(out == NULL &&
        strstr(err, "at [0, 2] does not fit") != NULL); /* stored 4th: column 2, row 0 */
}

/* Fortran order at sizes around the conversion's tiles, float32 and float64: element
 * (i, j) = i * 1000 + j lands at i * cols + j. A dim of 1 needs no conversion. */
static void test_fortran(void) {
  static const int sizes[][2] = {{2, 3},   {37, 70}, {70, 37}, {32, 32},
                                 {33, 65}, {1, 5},   {5, 1},   {1, 1}};
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++)
    for (int elem = 4; elem <= 8; elem += 4) {
      int rows = sizes[t][0], cols = sizes[t][1];
      size_t n = (size_t)rows * cols;
      unsigned char *stored = malloc(n * (size_t)elem);
      CHECK(stored != NULL);
      for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
          size_t k = (size_t)j * rows + i;
          double d = i * 1000 + j;
          float f = (float)d;
          if (elem == 8)
            memcpy(stored + 8 * k, &d, 8);
          else
            memcpy(stored + 4 * k, &f, 4);
        }
      char dict[128], err[256];
      snprintf(dict, sizeof dict, "{'descr': '<f%d', 'fortran_order': True, 'shape': (%d, %d), }",
               elem, rows, cols);
      struct npy_array a;
      struct npy_conversion conv;
      float *out = parse_convert(dict, stored, n * (size_t)elem, &a, &conv, err, sizeof err);
      CHECK(out != NULL);
      bool laid_out_as_c = rows == 1 || cols == 1;
      CHECK_INT_EQ(a.fortran_order, !laid_out_as_c);
      CHECK((a.data != NULL) == (laid_out_as_c && elem == 4));
      CHECK_INT_EQ(conv.from_fortran_order, !laid_out_as_c);
      CHECK_STR_EQ(conv.from_dtype, elem == 8 ? "float64" : "float32");
      CHECK(conv.max_rounding_error == 0);
      for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
          if (out[(size_t)i * cols + j] != (float)(i * 1000 + j))
            CHECK_FAIL_("%dx%d f%d: (%d, %d) is %g", rows, cols, elem, i, j,
                        out[(size_t)i * cols + j]);
      free(out);
      free(stored);
    }
  /* A 1-D array said to be Fortran order is laid out as C order: borrowed as it is. */
  float f[5] = {1, 2, 3, 4, 5};
  size_t len;
  unsigned char *b = build_data("{'descr': '<f4', 'fortran_order': True, 'shape': (5,), }", f,
                                sizeof f, &len);
  struct npy_array a;
  char err[256];
  CHECK_INT_EQ(npy_parse(b, len, &a, err, sizeof err), 0);
  CHECK(a.data != NULL && a.fortran_order == 0);
  free(b);
}

/* The upload's reading: ?shape= means raw; else a .npy when it starts as one or says
 * it is one; else raw without a shape, refused for that. */
static void test_upload(void) {
  static float floats[6];
  size_t len;
  unsigned char *npy = build(1, DICT_2D, 1, 6, &len);
  struct npy_array a;
  char err[320];
  int raw = -1;
  CHECK_INT_EQ(npy_upload(npy, len, NULL, NULL, 0, &a, &raw, err, sizeof err), 0);
  CHECK(raw == 0 && a.ndim == 2 && a.count == 6);
  CHECK_INT_EQ(npy_upload(npy, len, NULL, NULL, 1, &a, &raw, err, sizeof err), 0);
  CHECK_INT_EQ(npy_upload(floats, sizeof floats, "2,3", NULL, 0, &a, &raw, err, sizeof err), 0);
  CHECK(raw == 1 && a.ndim == 2 && (const void *)a.data == floats);
  CHECK_INT_EQ(npy_upload(floats, sizeof floats, "2,3", NULL, 1, &a, &raw, err, sizeof err),
               0); /* shape wins */

  CHECK_INT_EQ(npy_upload(npy, len, "2,3", NULL, 0, &a, &raw, err, sizeof err), -EINVAL);
  CHECK(raw == 1 && a.data == NULL);
  CHECK_STR_EQ(
      err,
      "this body is a .npy file (it starts with \\x93NUMPY), not raw float32 for ?shape=2,3: "
      "send it without ?shape= (a .npy carries its shape)");
  CHECK_INT_EQ(npy_upload(floats, sizeof floats, NULL, NULL, 0, &a, &raw, err, sizeof err),
               -EINVAL);
  CHECK(raw == 1 && a.data == NULL && a.count == 0);
  CHECK_STR_EQ(
      err,
      "missing shape: this body is not a .npy file (it does not start with \\x93NUMPY), so it "
      "is raw float32 (24 bytes), which needs ?shape=n or ?shape=m,n; a .npy carries its "
      "shape: np.save('a.npy', a)");
  CHECK_INT_EQ(npy_upload(floats, sizeof floats, NULL, NULL, 1, &a, &raw, err, sizeof err),
               -EINVAL);
  CHECK(raw == 0 && strstr(err, "not a .npy file: it does not start with the magic string") == err);
  CHECK_INT_EQ(npy_upload("\x93NU", 3, NULL, NULL, 0, &a, &raw, err, sizeof err),
               -EINVAL); /* starts as one */
  CHECK(raw == 0 && strstr(err, "truncated: 3 bytes is shorter than the .npy preamble") == err);
  CHECK_INT_EQ(npy_upload(NULL, 0, NULL, NULL, 0, &a, &raw, err, sizeof err), -EINVAL);
  CHECK(raw == 1 && strstr(err, "missing shape") == err && strstr(err, "(0 bytes)"));
  CHECK_INT_EQ(npy_upload("", 0, NULL, NULL, 1, &a, &raw, err, sizeof err), -EINVAL);
  CHECK(raw == 0 && strstr(err, "empty body") == err);
  CHECK_INT_EQ(npy_upload(floats, sizeof floats, "", NULL, 0, &a, &raw, err, sizeof err), -EINVAL);
  CHECK(raw == 1 && strstr(err, "missing shape") == err);
  free(npy);
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
    "np.save(d + '/empty.npy', np.zeros((0,), dtype=np.float32))\n"
    "np.save(d + '/cube.npy', np.zeros((2, 2, 2), dtype=np.float32))\n"
    "np.save(d + '/scalar.npy', np.float32(1.5))\n"
    "np.save(d + '/i8.npy', np.arange(3))\n"
    "np.save(d + '/c8.npy', np.ones(3, dtype=np.complex64))\n"
    "np.save(d + '/be.npy', np.ones(3, dtype='>f4'))\n"
    "np.savez(d + '/z.npz', x=np.ones(3))\n"
    "with open(d + '/z.npz', 'rb') as f, open(d + '/z.npy', 'wb') as g:\n"
    "    g.write(f.read())\n"
    /* float64 and Fortran order, with NumPy's own float32 of each (C order) and its
     * largest rounding error: np.random.rand's doubles, wide exponents (subnormal and
     * underflowing float32 results), transposed views. */
    "rng = np.random.default_rng(2026)\n"
    "def conv(name, x):\n"
    "    np.save(d + '/' + name + '.npy', x)\n"
    "    y = np.ascontiguousarray(x.astype(np.float32))\n"
    "    y.tofile(d + '/' + name + '.f32')\n"
    "    with np.errstate(invalid='ignore'):  # inf - inf\n"
    "        e = np.abs(x.astype(np.float64) - y.astype(np.float64))\n"
    "    with open(d + '/' + name + '.err', 'w') as f:\n"
    "        f.write(repr(float(np.max(e[np.isfinite(e)], initial=0.0))))\n"
    "r = rng.random((37, 70))\n"
    "conv('rand', r)\n"
    "conv('rand_f', np.asfortranarray(r))\n"
    "conv('rand_t', r.T)\n"
    "conv('f32_t', r.astype(np.float32).T)\n"
    "conv('f32_f', np.asfortranarray(r.astype(np.float32)))\n"
    "w = rng.standard_normal(4096) * 10.0 ** rng.integers(-50, 38, 4096)\n"
    "w[:4] = [np.nan, np.inf, -np.inf, -0.0]\n"
    "conv('wide', w)\n"
    "conv('ones_1d', np.ones(5))\n";

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

static void parse_numpy_file(const char *dir, const char *name, int ndim, int64_t d0, int64_t d1,
                             const char *want_err) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t len;
  unsigned char *b = read_file(path, &len);
  struct npy_array a;
  char err[256] = "";
  int rc = npy_parse(b, len, &a, err, sizeof err);
  if (want_err) {
    if (rc != -EINVAL || !strstr(err, want_err)) fprintf(stderr, "%s: %d \"%s\"\n", name, rc, err);
    CHECK(rc == -EINVAL && strstr(err, want_err) != NULL);
    check_fix(err);
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

/* name.npy converted must be NumPy's own astype(np.float32) of it, bit for bit (NaN
 * as NaN), with NumPy's largest rounding error exactly. */
static void convert_numpy_file(const char *dir, const char *name, int ndim, int64_t d0, int64_t d1,
                               int elem_bytes, int fortran_order) {
  char path[512], err[256] = "";
  snprintf(path, sizeof path, "%s/%s.npy", dir, name);
  size_t len, want_len, err_text_len;
  unsigned char *b = read_file(path, &len);
  struct npy_array a;
  if (npy_parse(b, len, &a, err, sizeof err)) CHECK_FAIL_("%s.npy: %s", name, err);
  CHECK(a.ndim == ndim && a.shape[0] == d0 && a.shape[1] == d1);
  CHECK_INT_EQ(a.elem_bytes, elem_bytes);
  CHECK_INT_EQ(a.fortran_order, fortran_order);
  float *out = malloc((size_t)a.count * 4);
  CHECK(out != NULL);
  struct npy_conversion conv;
  if (npy_convert(&a, out, &conv, err, sizeof err)) CHECK_FAIL_("%s.npy: %s", name, err);
  snprintf(path, sizeof path, "%s/%s.f32", dir, name);
  unsigned char *want = read_file(path, &want_len);
  CHECK_INT_EQ(want_len, a.count * 4);
  for (uint64_t i = 0; i < a.count; i++) {
    float w;
    memcpy(&w, want + 4 * i, 4);
    if (isnan(w) ? !isnan(out[i]) : memcmp(&w, &out[i], 4) != 0)
      CHECK_FAIL_("%s: element %" PRIu64 " is %.9g, NumPy's astype gives %.9g", name, i, out[i], w);
  }
  snprintf(path, sizeof path, "%s/%s.err", dir, name);
  char *text = (char *)read_file(path, &err_text_len);
  text = realloc(text, err_text_len + 1);
  text[err_text_len] = '\0';
  double numpy_err = strtod(text, NULL);
  if (conv.max_rounding_error != numpy_err)
    CHECK_FAIL_("%s: max_rounding_error %.17g, NumPy's %.17g", name, conv.max_rounding_error,
                numpy_err);
  CHECK_STR_EQ(conv.from_dtype, elem_bytes == 8 ? "float64" : "float32");
  CHECK_INT_EQ(conv.from_fortran_order, fortran_order);
  free(text);
  free(want);
  free(out);
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
  if (system(PYTHON " -c 'import numpy' >/dev/null 2>&1") != 0)
    CHECK_FAIL_(
        "%s with numpy not found: the NumPy cross-check cannot run (apt-get install "
        "python3-numpy; scripts/gpulab test installs it)",
        PYTHON);
  char dir[] = "/tmp/test_npy_XXXXXX", script[600], cmd[1400];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(script, sizeof script, "%s/writes.py", dir);
  write_text(script, numpy_writes);
  snprintf(cmd, sizeof cmd, PYTHON " %s %s", script, dir);
  CHECK_INT_EQ(system(cmd), 0);
  parse_numpy_file(dir, "a1.npy", 1, 7, 1, NULL);
  parse_numpy_file(dir, "a2.npy", 2, 3, 5, NULL);
  parse_numpy_file(dir, "big.npy", 1, 100000, 1, NULL);
  parse_numpy_file(dir, "sliced.npy", 2, 2, 3, NULL);
  parse_numpy_file(dir, "v1.npy", 2, 2, 3, NULL);
  parse_numpy_file(dir, "v2.npy", 2, 2, 3, NULL);
  parse_numpy_file(dir, "v3.npy", 2, 2, 3, NULL);
  parse_numpy_file(dir, "empty.npy", 0, 0, 0, "empty arrays are not accepted");
  parse_numpy_file(dir, "cube.npy", 0, 0, 0, "shape (2, 2, 2) has 3 dimensions");
  parse_numpy_file(dir, "i8.npy", 0, 0, 0, "unsupported dtype '<i8' (int64)");
  parse_numpy_file(dir, "c8.npy", 0, 0, 0, "unsupported dtype '<c8' (complex64)");
  parse_numpy_file(dir, "be.npy", 0, 0, 0, "unsupported dtype '>f4' (big-endian float32)");
  parse_numpy_file(dir, "z.npy", 0, 0, 0, "a .npz archive (zip)");
  convert_numpy_file(dir, "rand", 2, 37, 70, 8, 0);
  convert_numpy_file(dir, "rand_f", 2, 37, 70, 8, 1);
  convert_numpy_file(dir, "rand_t", 2, 70, 37, 8, 1);
  convert_numpy_file(dir, "f32_t", 2, 70, 37, 4, 1);
  convert_numpy_file(dir, "f32_f", 2, 37, 70, 4, 1);
  convert_numpy_file(dir, "wide", 1, 4096, 1, 8, 0);
  convert_numpy_file(dir, "ones_1d", 1, 5, 1, 8, 0);
  parse_numpy_file(dir, "scalar.npy", 0, 0, 0, "shape () has 0 dimensions");

  const int64_t s1[2] = {7, 1}, s2[2] = {3, 5};
  write_ours(dir, "ours1.npy", 1, s1, NPY_FLOAT32);
  write_ours(dir, "ours2.npy", 2, s2, NPY_FLOAT32);
  write_ours(dir, "ours3.npy", 1, s1, NPY_UINT32);
  snprintf(script, sizeof script, "%s/reads.py", dir);
  write_text(script, numpy_reads);
  snprintf(cmd, sizeof cmd, PYTHON " %s %s", script, dir);
  CHECK_INT_EQ(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_INT_EQ(system(cmd), 0);
  printf(
      "numpy cross-check: parsed and converted NumPy's files as its astype does, NumPy loaded ours\n");
}

static const struct test_case cases[] = {
    TEST(test_float64), TEST(test_fortran), TEST(test_upload), TEST(test_numpy), TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
