/* The .npy codec: a bounds-checked reader for the header's Python-literal dict
 * (only what NumPy writes for an array of the dtypes kept, parsed as Python would),
 * the conversion to C order (float64 to float32), and the writer. Every refusal ends with the
 * NumPy (or curl) call that fixes it. Format: numpy.lib.format (NEP 1). */
#include "api/npy.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
#define PREAMBLE_V1 10 /* magic, major, minor, uint16 header length */
#define PREAMBLE_V2 12 /* the same with a uint32 header length (2.0 and 3.0) */
#define HEADER_ALIGN 64
#define STR_KEEP 40   /* bytes of a header string kept for comparison and messages */
#define SHOW_MAX 72   /* untrusted text quoted in a message */
#define SHAPE_TEXT 96 /* a shape as quoted in messages: "(3, 4, 5)" */
#define CONVERT_TILE \
  32 /* a Fortran-order array is transposed in tiles of this many rows and columns */

/* The fixes the messages end with. */
#define FIX_SAVE "write it with np.save('a.npy', a)"
#define FIX_SEND "send the whole file: curl --data-binary @a.npy (curl -d drops line breaks)"

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t err_len, const char *fmt,
                                                      ...) {
  if (err && err_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
  }
  return -EINVAL;
}

/* Own classifiers: <ctype.h> depends on the locale, and the header is bytes. */
static int is_digit(unsigned char ch) { return ch >= '0' && ch <= '9'; }
static int is_space(unsigned char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}
static int is_ident(unsigned char ch) {
  return is_digit(ch) || ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* Quotes n bytes of untrusted text into dst for a message: printable ASCII as is,
 * anything else as \xNN, cut with "..." when it does not fit (or cut is set). */
static void show(char *dst, size_t cap, const unsigned char *s, size_t n, int cut) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char one[5];
    int w = (s[i] >= 0x20 && s[i] < 0x7f) ? snprintf(one, sizeof one, "%c", s[i])
                                          : snprintf(one, sizeof one, "\\x%02x", s[i]);
    if (o + (size_t)w + 4 > cap) {
      cut = 1;
      break;
    }
    memcpy(dst + o, one, (size_t)w);
    o += (size_t)w;
  }
  if (cut && o + 4 <= cap) {
    memcpy(dst + o, "...", 3);
    o += 3;
  }
  dst[o] = '\0';
}

/* ---- The dtypes kept ---- */

static const struct {
  const char *name, *descr, *numpy; /* descr NULL: NumPy has none (bfloat16) */
  int bytes;
} dtypes[NPY_DTYPE_COUNT] = {
    [NPY_FLOAT32] = {"float32", "<f4", "np.float32", 4},
    [NPY_UINT32] = {"uint32", "<u4", "np.uint32", 4},
    [NPY_FLOAT16] = {"float16", "<f2", "np.float16", 2},
    [NPY_BFLOAT16] = {"bfloat16", NULL, "ml_dtypes.bfloat16", 2},
    [NPY_INT32] = {"int32", "<i4", "np.int32", 4},
    [NPY_INT8] = {"int8", "|i1", "np.int8", 1},
};

const char *npy_dtype_name(enum npy_dtype t) {
  return (unsigned)t < NPY_DTYPE_COUNT ? dtypes[t].name : NULL;
}
int npy_dtype_bytes(enum npy_dtype t) {
  return (unsigned)t < NPY_DTYPE_COUNT ? dtypes[t].bytes : 0;
}
int npy_dtype_from_name(const char *name) {
  for (int t = 0; name && t < NPY_DTYPE_COUNT; t++)
    if (strcmp(name, dtypes[t].name) == 0) return t;
  return -1;
}

/* ---- Reading the header dict ---- */

/* A read position in the header text, which excludes its final '\n'. */
struct cursor {
  const unsigned char *start, *p, *end;
  char *err;
  size_t err_len;
};

/* What the dict said; checked only once it has parsed, so that the first error
 * reported does not depend on the order of the keys. */
struct header {
  int have_descr, have_fortran, have_shape;
  char descr[STR_KEEP];
  size_t descr_len; /* true length; descr keeps at most STR_KEEP - 1 bytes */
  int fortran_order;
  long ndim; /* dims seen, may exceed NPY_MAX_NDIM */
  int64_t dim[NPY_MAX_NDIM];
  int any_zero;
  int elided; /* shape_text stopped listing dims */
  char shape_text[SHAPE_TEXT];
};

__attribute__((format(printf, 2, 3))) static int syntax(struct cursor *c, const char *fmt, ...) {
  char what[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return fail(c->err, c->err_len,
              "malformed .npy header: %s (at byte %zu of the header dict); " FIX_SAVE, what,
              (size_t)(c->p - c->start));
}

static void skip_space(struct cursor *c) {
  while (c->p < c->end && is_space(*c->p)) c->p++;
}

static int at(const struct cursor *c, unsigned char ch) { return c->p < c->end && *c->p == ch; }

/* Consumes word if it is next and not the start of a longer identifier. */
static int match_word(struct cursor *c, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
  if ((size_t)(c->end - c->p) > n && is_ident(c->p[n])) return 0;
  c->p += n;
  return 1;
}

/* A Python string literal in ' or " without escapes (NumPy writes none). Keeps the
 * first STR_KEEP - 1 bytes NUL-terminated in out and the true length in *len. */
static int parse_string(struct cursor *c, char *out, size_t *len) {
  if (!at(c, '\'') && !at(c, '"')) return syntax(c, "expected a quoted string");
  unsigned char quote = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != quote) {
    if (*c->p == '\\') return syntax(c, "escape sequences in header strings are not supported");
    if (*c->p == '\n') break;
    if (n < STR_KEEP - 1) out[n] = (char)*c->p;
    n++;
    c->p++;
  }
  if (!at(c, quote)) return syntax(c, "unterminated string");
  c->p++;
  out[n < STR_KEEP - 1 ? n : STR_KEEP - 1] = '\0';
  *len = n;
  return 0;
}

/* One dim: a non-negative decimal integer up to INT64_MAX, no leading zeros. */
static int parse_dim(struct cursor *c, int64_t *dim) {
  if (at(c, '-')) return syntax(c, "negative shape dimension");
  const unsigned char *digits = c->p;
  uint64_t v = 0;
  while (c->p < c->end && is_digit(*c->p)) {
    unsigned d = (unsigned)(*c->p - '0');
    if (v > ((uint64_t)INT64_MAX - d) / 10) {
      size_t n = 0;
      while (digits + n < c->end && is_digit(digits[n])) n++;
      char shown[SHOW_MAX];
      show(shown, 32, digits, n, 0);
      return fail(c->err, c->err_len,
                  "shape dimension %s is too large (the limit is 2^63-1); " FIX_SAVE, shown);
    }
    v = v * 10 + d;
    c->p++;
  }
  if (c->p == digits) return syntax(c, "expected an integer shape dimension");
  if (c->p - digits > 1 && digits[0] == '0') return syntax(c, "leading zeros in a shape dimension");
  *dim = (int64_t)v;
  return 0;
}

/* Records a dim and appends it to the shape's text as NumPy prints it. */
static void add_dim(struct header *h, int64_t dim, size_t *text_len) {
  if (h->ndim < NPY_MAX_NDIM) h->dim[h->ndim] = dim;
  if (dim == 0) h->any_zero = 1;
  if (*text_len < SHAPE_TEXT - 32) {
    int w = snprintf(h->shape_text + *text_len, SHAPE_TEXT - *text_len, "%s%" PRId64,
                     h->ndim ? ", " : "", dim);
    *text_len += (size_t)w;
  } else if (!h->elided) {
    *text_len += (size_t)snprintf(h->shape_text + *text_len, SHAPE_TEXT - *text_len, ", ...");
    h->elided = 1;
  }
  h->ndim++;
}

/* A tuple of dims: "()", "(5,)", "(2, 3)", "(2,3,)"; "(5)" is an int, not a tuple. */
static int parse_shape(struct cursor *c, struct header *h) {
  if (!at(c, '(')) return syntax(c, "'shape' must be a tuple such as (5,) or (2, 3)");
  c->p++;
  size_t text_len = 1;
  int comma = 0;
  h->ndim = h->any_zero = h->elided = 0; /* a repeated key starts over, then fails */
  strcpy(h->shape_text, "(");
  skip_space(c);
  while (!at(c, ')')) {
    int64_t dim = 0;
    if (parse_dim(c, &dim) != 0) return -EINVAL;
    add_dim(h, dim, &text_len);
    skip_space(c);
    if (at(c, ',')) {
      comma = 1;
      c->p++;
      skip_space(c);
    } else if (!at(c, ')')) {
      return syntax(c, "expected ',' or ')' in the shape");
    }
  }
  c->p++;
  if (h->ndim == 1 && !comma)
    return syntax(c, "shape (%" PRId64 ") is not a tuple: a 1-D shape is written (%" PRId64 ",)",
                  h->dim[0], h->dim[0]);
  snprintf(h->shape_text + text_len, SHAPE_TEXT - text_len, "%s", h->ndim == 1 ? ",)" : ")");
  return 0;
}

static int key_is(const char *key, size_t len, const char *name) {
  return len == strlen(name) && memcmp(key, name, len) == 0;
}

/* The value of one key, which the cursor is at. */
static int parse_value(struct cursor *c, struct header *h, const char *key, size_t key_len) {
  if (key_is(key, key_len, "descr")) {
    if (at(c, '['))
      return fail(c->err, c->err_len,
                  "unsupported dtype: a structured array (named fields) is not read; send one "
                  "field as float32: a['name'].astype(np.float32)");
    h->have_descr++;
    return parse_string(c, h->descr, &h->descr_len);
  }
  if (key_is(key, key_len, "fortran_order")) {
    h->have_fortran++;
    if (match_word(c, "False"))
      h->fortran_order = 0;
    else if (match_word(c, "True"))
      h->fortran_order = 1;
    else
      return syntax(c, "'fortran_order' must be True or False");
    return 0;
  }
  if (key_is(key, key_len, "shape")) {
    h->have_shape++;
    return parse_shape(c, h);
  }
  char shown[SHOW_MAX];
  show(shown, sizeof shown, (const unsigned char *)key,
       key_len < STR_KEEP - 1 ? key_len : STR_KEEP - 1, key_len > STR_KEEP - 1);
  return fail(
      c->err, c->err_len,
      "unknown key '%s' in the .npy header: only 'descr', 'fortran_order' and 'shape'; " FIX_SAVE,
      shown);
}

/* {'key': value, ...} with an optional trailing comma, then only whitespace. */
static int parse_dict(struct cursor *c, struct header *h) {
  skip_space(c);
  if (!at(c, '{')) return syntax(c, "expected '{'");
  c->p++;
  for (;;) {
    skip_space(c);
    if (at(c, '}')) break;
    char key[STR_KEEP];
    size_t key_len;
    if (parse_string(c, key, &key_len) != 0) return -EINVAL;
    skip_space(c);
    if (!at(c, ':')) return syntax(c, "expected ':' after a key");
    c->p++;
    skip_space(c);
    if (parse_value(c, h, key, key_len) != 0) return -EINVAL;
    if (h->have_descr > 1 || h->have_fortran > 1 || h->have_shape > 1)
      return syntax(c, "a key appears twice");
    skip_space(c);
    if (at(c, ',')) {
      c->p++;
      continue;
    }
    if (!at(c, '}')) return syntax(c, "expected ',' or '}'");
    break;
  }
  c->p++;
  skip_space(c);
  if (c->p != c->end) return syntax(c, "unexpected text after the dict");
  if (!h->have_descr || !h->have_fortran || !h->have_shape)
    return fail(c->err, c->err_len, "the .npy header lacks '%s'; " FIX_SAVE,
                !h->have_descr     ? "descr"
                : !h->have_fortran ? "fortran_order"
                                   : "shape");
  return 0;
}

/* ---- Checks shared by the two readers ---- */

/* Fills out from checked dims: ndim 1 or 2, none zero, count * elem_bytes fits in
 * 64 bits (and in size_t). */
static int check_shape(long ndim, const int64_t *dim, int any_zero, const char *text,
                       int elem_bytes, struct npy_array *out, char *err, size_t err_len) {
  if (ndim == 0)
    return fail(err, err_len, "shape () has 0 dimensions; 1 or 2 are accepted: np.atleast_1d(a)");
  if (ndim < 1 || ndim > NPY_MAX_NDIM)
    return fail(err, err_len,
                "shape %s has %ld dimensions; 1 or 2 are accepted: a.reshape(a.shape[0], -1) "
                "(or a.reshape(-1))",
                text, ndim);
  if (any_zero)
    return fail(
        err, err_len,
        "empty arrays are not accepted: shape %s has no elements; send one with a.size >= 1", text);
  uint64_t d0 = (uint64_t)dim[0], d1 = ndim == 2 ? (uint64_t)dim[1] : 1;
  int overflow = d1 > UINT64_MAX / (uint64_t)elem_bytes / d0;
#if SIZE_MAX < UINT64_MAX
  overflow = overflow || d0 * d1 * (uint64_t)elem_bytes > SIZE_MAX; /* a 32-bit size_t too */
#endif
  if (overflow)
    return fail(err, err_len, "shape %s has too many elements: its byte count overflows; " FIX_SAVE,
                text);
  out->ndim = (int)ndim;
  out->shape[0] = (int64_t)d0;
  out->shape[1] = (int64_t)d1;
  out->count = d0 * d1;
  out->elem_bytes = elem_bytes;
  return 0;
}

/* The data must be exactly count * elem_bytes: shorter is truncated, longer is junk.
 * raw_shape: the ?shape= text of a raw upload (its messages differ), or NULL. */
static int check_data(const unsigned char *data, size_t data_len, const char *raw_shape,
                      struct npy_array *out, char *err, size_t err_len) {
  uint64_t want = out->count * (uint64_t)out->elem_bytes;
  const char *name = dtypes[out->dtype].name, *numpy = dtypes[out->dtype].numpy;
  const char *file = out->dtype == NPY_FLOAT32 ? "a.f32" : "a.bin";
  if (raw_shape && data_len != want && data_len / 8 == out->count && data_len % 8 == 0 &&
      out->elem_bytes < 8)
    return fail(err, err_len,
                "?shape=%s needs %" PRIu64
                " bytes (%d per %s), the body has %zu: 8 per "
                "element, float64? send %s: a.astype(%s).tofile('%s')",
                raw_shape, want, out->elem_bytes, name, data_len, name, numpy, file);
  if (raw_shape && data_len != want)
    return fail(err, err_len,
                "%s: ?shape=%s needs %" PRIu64
                " bytes (%d per %s), the body has %zu; "
                "a.astype(%s).tofile('%s') writes them, curl --data-binary @%s "
                "sends them",
                data_len < want ? "truncated" : "trailing bytes", raw_shape, want, out->elem_bytes,
                name, data_len, numpy, file, file);
  if (data_len < want)
    return fail(err, err_len,
                "truncated: the header promises %" PRIu64
                " bytes of data, the body has %zu; " FIX_SEND,
                want, data_len);
  if (data_len > want)
    return fail(err, err_len,
                "trailing bytes: the header promises %" PRIu64
                " bytes of data, the body has %zu; send one array per upload, as "
                "np.save('a.npy', a) writes it",
                want, data_len);
  out->stored = data;
  return 0;
}

/* ---- npy_parse ---- */

/* Checks magic and version and finds the header: [*hdr, *hdr + *hdr_len) lies in body. */
static int read_preamble(const unsigned char *b, size_t len, size_t *hdr, size_t *hdr_len,
                         char *err, size_t err_len) {
  if (len == 0)
    return fail(err, err_len,
                "empty body: not a .npy file; write one with np.save('a.npy', a) "
                "and send it with curl --data-binary @a.npy");
  if (len >= 4 && memcmp(b, "PK\x03\x04", 4) == 0)
    return fail(err, err_len,
                "a .npz archive (zip), not a .npy file: send one array of it, "
                "np.save('a.npy', np.load('f.npz')['name'])");
  if (memcmp(b, MAGIC, len < MAGIC_LEN ? len : MAGIC_LEN) != 0)
    return fail(err, err_len,
                "not a .npy file: it does not start with the magic string "
                "\\x93NUMPY; write one with np.save('a.npy', a) (a.tofile() writes raw bytes: "
                "send those with ?shape=)");
  if (len < PREAMBLE_V1)
    return fail(err, err_len, "truncated: %zu bytes is shorter than the .npy preamble; " FIX_SEND,
                len);
  unsigned major = b[6], minor = b[7];
  /* No .npy has a minor version other than 0: such bytes are a mangled file's. */
  if (major < 1 || minor != 0)
    return fail(
        err, err_len,
        "mangled .npy preamble: version bytes %u.%u, which no .npy has (np.save writes "
        "1.0), as curl -d @a.npy mangles a file (it drops line breaks and NUL bytes): " FIX_SEND,
        major, minor);
  if (major > 3)
    return fail(err, err_len,
                "unsupported .npy version %u.%u: 1.0, 2.0 and 3.0 are read; " FIX_SAVE, major,
                minor);
  size_t pre = major == 1 ? PREAMBLE_V1 : PREAMBLE_V2;
  if (len < pre)
    return fail(err, err_len, "truncated: %zu bytes is shorter than the .npy preamble; " FIX_SEND,
                len);
  uint32_t n = (uint32_t)b[8] | (uint32_t)b[9] << 8;
  if (major > 1) n |= (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
  /* Compared as len - pre, which cannot wrap, rather than pre + n, which might. */
  if (n > len - pre)
    return fail(err, err_len, "header length %" PRIu32 " runs past the body (%zu bytes); " FIX_SEND,
                n, len);
  if (n == 0 || b[pre + n - 1] != '\n')
    return fail(err, err_len, "malformed .npy header: it does not end in a newline; " FIX_SEND);
  *hdr = pre;
  *hdr_len = n;
  return 0;
}

/* NumPy's name for a plain descr ("<i8": "int64", "|b1": "bool"), or NULL. */
static const char *dtype_name(const char *d, size_t n) {
  static const struct {
    const char *code, *name;
  } names[] = {
      {"f2", "float16"},      {"f4", "float32"}, {"f8", "float64"},   {"f16", "longdouble"},
      {"f12", "longdouble"},  {"i1", "int8"},    {"i2", "int16"},     {"i4", "int32"},
      {"i8", "int64"},        {"u1", "uint8"},   {"u2", "uint16"},    {"u4", "uint32"},
      {"u8", "uint64"},       {"b1", "bool"},    {"c8", "complex64"}, {"c16", "complex128"},
      {"c32", "clongdouble"}, {"O", "object"},   {"O8", "object"}};
  if (n < 2 || !strchr("<>|=", d[0])) return NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (key_is(d + 1, n - 1, names[i].code)) return names[i].name;
  switch (d[1]) {
  case 'U': return "str";
  case 'S': return "bytes";
  case 'M': return "datetime64";
  case 'm': return "timedelta64";
  case 'V': return "void";
  default: return NULL;
  }
}

/* The refusal of a descr gpulab does not read, with its fix. */
static int refuse_dtype(const struct header *h, char *err, size_t err_len) {
  char shown[SHOW_MAX], named[32] = "";
  size_t n = h->descr_len < STR_KEEP - 1 ? h->descr_len : STR_KEEP - 1;
  show(shown, sizeof shown, (const unsigned char *)h->descr, n, h->descr_len > STR_KEEP - 1);
  const char *name = h->descr_len < STR_KEEP ? dtype_name(h->descr, h->descr_len) : NULL;
  const char *fix = "a.astype(np.float32)";
  char kind = h->descr_len >= 2 ? h->descr[1] : 0, little[96];
  if (name && h->descr[0] == '>') {
    snprintf(named, sizeof named, " (big-endian %s)", name);
    /* Little-endian of the same type; float64 as float32, which is what gpulab keeps. */
    snprintf(little, sizeof little, "a.astype('<%s')", strcmp(shown + 1, "f8") ? shown + 1 : "f4");
    fix = kind == 'f' || kind == 'i' || kind == 'u' ? little : fix;
  } else if (name) {
    snprintf(named, sizeof named, " (%s)", name);
  }
  if (kind == 'c') fix = "a.real.astype(np.float32) (or np.abs(a).astype(np.float32))";
  if (kind == 'U' || kind == 'S') fix = "a.astype(np.float32), if the strings are numbers";
  if (kind == 'M' || kind == 'm') fix = "a.astype(np.int64).astype(np.float32)";
  return fail(err, err_len,
              "unsupported dtype '%s'%s: gpulab reads little-endian float32 ('<f4'), float64 "
              "('<f8', kept as float32), float16 ('<f2'), int32 ('<i4'), uint32 ('<u4') and int8 "
              "('|i1'); send %s",
              shown, named, fix);
}

static int check_header(const struct header *h, struct npy_array *out, char *err, size_t err_len) {
  int elem = 0;
  if (key_is(h->descr, h->descr_len, "<f8")) {
    elem = 8;
    out->dtype = NPY_FLOAT32;
  }
  for (int t = 0; !elem && t < NPY_DTYPE_COUNT; t++)
    if (dtypes[t].descr && (key_is(h->descr, h->descr_len, dtypes[t].descr) ||
                            (t == NPY_INT8 && key_is(h->descr, h->descr_len, "<i1")))) {
      elem = dtypes[t].bytes;
      out->dtype = (enum npy_dtype)t;
    }
  if (!elem) return refuse_dtype(h, err, err_len);
  if (check_shape(h->ndim, h->dim, h->any_zero, h->shape_text, elem, out, err, err_len) != 0)
    return -EINVAL;
  out->fortran_order = h->fortran_order && out->ndim == 2 && out->shape[1] > 1 && out->shape[0] > 1;
  return 0;
}

int npy_parse(const void *body, size_t len, struct npy_array *out, char *err, size_t err_len) {
  const unsigned char *b = body;
  memset(out, 0, sizeof *out);
  if (err && err_len) err[0] = '\0';
  if (!b) len = 0;
  size_t hdr = 0, hdr_len = 0;
  if (read_preamble(b, len, &hdr, &hdr_len, err, err_len) != 0) return -EINVAL;
  struct header h;
  memset(&h, 0, sizeof h);
  struct cursor c = {b + hdr, b + hdr, b + hdr + hdr_len - 1, err, err_len};
  if (parse_dict(&c, &h) != 0 || check_header(&h, out, err, err_len) != 0 ||
      check_data(b + hdr + hdr_len, len - hdr - hdr_len, NULL, out, err, err_len) != 0) {
    memset(out, 0, sizeof *out);
    return -EINVAL;
  }
  if (out->elem_bytes == npy_dtype_bytes(out->dtype) && !out->fortran_order)
    out->data = out->stored;
  return 0;
}

/* ---- npy_raw ---- */

int npy_raw(const void *body, size_t len, const char *shape_text, const char *dtype_text,
            struct npy_array *out, char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  if (err && err_len) err[0] = '\0';
  int dtype = dtype_text ? npy_dtype_from_name(dtype_text) : NPY_FLOAT32;
  if (dtype < 0) {
    char shown[SHOW_MAX];
    size_t n = 0; /* bounded: dtype_text comes from a query string */
    while (n < SHOW_MAX && dtype_text[n]) n++;
    show(shown, sizeof shown, (const unsigned char *)dtype_text, n, n == SHOW_MAX);
    return fail(err, err_len,
                "dtype '%s' is not one gpulab keeps: float32, uint32, float16, bfloat16, int32 "
                "or int8",
                shown);
  }
  if (!shape_text || !*shape_text)
    return fail(err, err_len, "missing shape: give ?shape=n or ?shape=m,n with raw %s",
                dtypes[dtype].name);
  size_t text_len = 0; /* bounded: shape_text comes from a query string */
  while (text_len < SHOW_MAX && shape_text[text_len]) text_len++;
  char shown[SHOW_MAX];
  show(shown, sizeof shown, (const unsigned char *)shape_text, text_len, text_len == SHOW_MAX);
  const char *p = shape_text;
  int64_t dim[NPY_MAX_NDIM];
  long ndim = 0;
  int any_zero = 0;
  for (;;) {
    if (!is_digit((unsigned char)*p))
      return fail(err, err_len, "shape '%s' is not n or m,n (decimal digits, one comma)", shown);
    uint64_t v = 0;
    for (; is_digit((unsigned char)*p); p++) {
      unsigned d = (unsigned)(*p - '0');
      if (v > ((uint64_t)INT64_MAX - d) / 10)
        return fail(err, err_len, "shape '%s' has a dimension too large (over 2^63-1)", shown);
      v = v * 10 + d;
    }
    any_zero |= v == 0;
    dim[ndim++] = (int64_t)v;
    if (*p == '\0') break;
    if (*p != ',' || ndim == NPY_MAX_NDIM)
      return fail(err, err_len, "shape '%s' is not n or m,n (decimal digits, one comma)", shown);
    p++;
  }
  char text[SHAPE_TEXT];
  if (ndim == 1)
    snprintf(text, sizeof text, "(%" PRId64 ",)", dim[0]);
  else
    snprintf(text, sizeof text, "(%" PRId64 ", %" PRId64 ")", dim[0], dim[1]);
  out->dtype = (enum npy_dtype)dtype;
  if (check_shape(ndim, dim, any_zero, text, dtypes[dtype].bytes, out, err, err_len) != 0 ||
      check_data(body, body ? len : 0, shown, out, err, err_len) != 0) {
    memset(out, 0, sizeof *out);
    return -EINVAL;
  }
  out->data = out->stored;
  return 0;
}

/* ---- npy_form_upload ---- */

int npy_form_upload(const void *body, size_t len, char *err, size_t err_len) {
  const unsigned char *b = body;
  size_t prefix = len < MAGIC_LEN ? len : MAGIC_LEN;
  if (!b || len == 0 || memcmp(b, MAGIC, prefix) != 0) return -ENOENT;
  struct npy_array a;
  char why[320];
  if (npy_parse(b, len, &a, why, sizeof why) == 0) {
    fail(err, err_len,
         "this body is a .npy file sent as a form (Content-Type "
         "application/x-www-form-urlencoded, curl's default): say what it is, curl -H "
         "'Content-Type: application/x-npy' --data-binary @a.npy");
    return 0;
  }
  return fail(
      err, err_len,
      "this body is a .npy file that curl -d mangled (it came as a form, curl -d's "
      "Content-Type; it drops line breaks, and NUL bytes or all that follows the first: %zu "
      "bytes arrived): send the whole file with curl -H 'Content-Type: application/x-npy' "
      "--data-binary @a.npy",
      len);
}

/* ---- npy_upload ---- */

int npy_upload(const void *body, size_t len, const char *shape_text, const char *dtype_text,
               int declared_npy, struct npy_array *out, int *raw, char *err, size_t err_len) {
  const unsigned char *b = body;
  if (!b) len = 0;
  size_t prefix = len < MAGIC_LEN ? len : MAGIC_LEN;
  int npy_magic = len >= MAGIC_LEN && memcmp(b, MAGIC, MAGIC_LEN) == 0;
  *raw = shape_text != NULL;
  if (shape_text) {
    if (npy_raw(b, len, shape_text, dtype_text, out, err, err_len) == 0) return 0;
    if (npy_magic && err && err_len) {
      char shown[SHOW_MAX];
      size_t n = 0; /* bounded: shape_text comes from a query string */
      while (n < SHOW_MAX && shape_text[n]) n++;
      show(shown, sizeof shown, (const unsigned char *)shape_text, n, n == SHOW_MAX);
      fail(err, err_len,
           "this body is a .npy file (it starts with \\x93NUMPY), not raw float32 "
           "for ?shape=%s: send it without ?shape= (a .npy carries its shape)",
           shown);
    }
    return -EINVAL;
  }
  if (declared_npy || (prefix > 0 && memcmp(b, MAGIC, prefix) == 0)) {
    if (dtype_text) {
      memset(out, 0, sizeof *out);
      return fail(err, err_len,
                  "?dtype= is for raw values (with ?shape=); a .npy file carries its dtype: "
                  "send it without ?dtype=");
    }
    return npy_parse(b, len, out, err, err_len);
  }
  *raw = 1;
  memset(out, 0, sizeof *out);
  return fail(err, err_len,
              "missing shape: this body is not a .npy file (it does not start with \\x93NUMPY), "
              "so it is raw %s (%zu bytes), which needs ?shape=n or ?shape=m,n; a .npy "
              "carries its shape: np.save('a.npy', a)",
              dtype_text && npy_dtype_from_name(dtype_text) >= 0 ? dtype_text : "float32", len);
}

/* ---- npy_convert ---- */

/* Element k of the stored values into out (kept_bytes wide: float64 as float32), the
 * rounding's size kept in *worst. Returns -1 for a finite float64 past float32's range. */
static int convert_one(const unsigned char *stored, int elem_bytes, int kept_bytes, uint64_t k,
                       unsigned char *out, double *worst) {
  if (elem_bytes == kept_bytes) {
    memcpy(out, stored + (uint64_t)elem_bytes * k, (size_t)elem_bytes);
    return 0;
  }
  float f;
  double d;
  memcpy(&d, stored + 8 * k, 8);
  /* From 2^128 - 2^103 (halfway past FLT_MAX) on, rounding gives infinity. */
  if (isfinite(d) && fabs(d) >= 0x1.ffffffp127) return -1;
  f = (float)d;
  memcpy(out, &f, 4);
  double e = fabs(d - (double)f); /* NaN for NaN and infinities: not counted */
  if (e > *worst) *worst = e;
  return 0;
}

int npy_convert(const struct npy_array *a, void *out, struct npy_conversion *info, char *err,
                size_t err_len) {
  if (err && err_len) err[0] = '\0';
  const unsigned char *stored = a->stored;
  unsigned char *kept = out;
  int kept_bytes = npy_dtype_bytes(a->dtype);
  uint64_t rows = (uint64_t)a->shape[0], cols = a->ndim == 2 ? (uint64_t)a->shape[1] : 1;
  double worst = 0;
  /* C order: element (i, j) is stored at i * cols + j; Fortran order at j * rows + i.
   * Tiles keep both the reads and the writes of a transposition near each other. */
  for (uint64_t i0 = 0; i0 < rows; i0 += CONVERT_TILE)
    for (uint64_t j0 = 0; j0 < cols; j0 += CONVERT_TILE)
      for (uint64_t i = i0; i < rows && i < i0 + CONVERT_TILE; i++)
        for (uint64_t j = j0; j < cols && j < j0 + CONVERT_TILE; j++) {
          uint64_t k = a->fortran_order ? j * rows + i : i * cols + j;
          if (convert_one(stored, a->elem_bytes, kept_bytes, k,
                          kept + (i * cols + j) * (uint64_t)kept_bytes, &worst) == 0)
            continue;
          double d;
          memcpy(&d, stored + 8 * k, 8);
          char at[48];
          if (a->ndim == 1)
            snprintf(at, sizeof at, "[%" PRIu64 "]", i);
          else
            snprintf(at, sizeof at, "[%" PRIu64 ", %" PRIu64 "]", i, j);
          return fail(err, err_len,
                      "float64 value %.17g at %s does not fit float32 (largest 3.4028235e+38): "
                      "scale it, or np.clip(a, -3.4e38, 3.4e38).astype(np.float32)",
                      d, at);
        }
  if (info) {
    info->from_dtype = a->elem_bytes == 8 ? "float64" : dtypes[a->dtype].name;
    info->from_fortran_order = a->fortran_order;
    info->max_rounding_error = worst;
  }
  return 0;
}

/* ---- Writing ---- */

/* The dict exactly as NumPy writes it (keys sorted, trailing ", "), into buf. Every
 * descr written is 3 characters, so the header's size does not depend on it. */
static size_t dict_text(char *buf, size_t cap, int ndim, const int64_t *shape, const char *descr) {
  int n = ndim == 1 ? snprintf(buf, cap,
                               "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRId64 ",), }",
                               descr, shape[0])
                    : snprintf(buf, cap,
                               "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRId64
                               ", %" PRId64 "), }",
                               descr, shape[0], shape[1]);
  return n > 0 ? (size_t)n : 0;
}

size_t npy_header_size(int ndim, const int64_t *shape) {
  if (ndim < 1 || ndim > NPY_MAX_NDIM || !shape) return 0;
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0) return 0;
  char dict[160];
  size_t n = PREAMBLE_V1 + dict_text(dict, sizeof dict, ndim, shape, "<f4") + 1; /* + '\n' */
  return (n + HEADER_ALIGN - 1) / HEADER_ALIGN * HEADER_ALIGN;
}

size_t npy_write_header(char *buf, size_t cap, int ndim, const int64_t *shape,
                        enum npy_dtype dtype) {
  size_t size = npy_header_size(ndim, shape);
  if (size == 0 || !buf || cap < size || (unsigned)dtype >= NPY_DTYPE_COUNT || !dtypes[dtype].descr)
    return 0;
  char dict[160];
  size_t n = dict_text(dict, sizeof dict, ndim, shape, dtypes[dtype].descr);
  size_t hdr_len = size - PREAMBLE_V1; /* at most a few hundred: fits uint16 */
  memcpy(buf, MAGIC, MAGIC_LEN);
  buf[6] = 1;
  buf[7] = 0;
  buf[8] = (char)(hdr_len & 0xff);
  buf[9] = (char)(hdr_len >> 8);
  memcpy(buf + PREAMBLE_V1, dict, n);
  memset(buf + PREAMBLE_V1 + n, ' ', size - PREAMBLE_V1 - n - 1);
  buf[size - 1] = '\n';
  return size;
}
