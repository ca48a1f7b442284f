/* The NumPy .npy codec for job inputs and outputs: reads arrays of 1 or 2 dimensions,
 * C or Fortran order, out of untrusted request bodies (a .npy file, or raw
 * little-endian bytes with a ?shape= and a ?dtype=), converts them to C order (float64
 * to float32), and writes .npy headers for results. libc only; no allocation. */
#ifndef GPULAB_API_NPY_H
#define GPULAB_API_NPY_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_NDIM 2

/* The element types kept, numbered as kernels/core/experiment.h's enum exp_dtype:
 * float32 (uploads of '<f4' or '<f8', and most outputs), uint32 ('<u4'; a histogram's
 * counts), float16 ('<f2'), bfloat16 (raw only: NumPy has no descr for it), int32
 * ('<i4') and int8 ('|i1'). The last four are a problem's inputs (api/problem_def.h). */
enum npy_dtype { NPY_FLOAT32, NPY_UINT32, NPY_FLOAT16, NPY_BFLOAT16, NPY_INT32, NPY_INT8 };
#define NPY_DTYPE_COUNT 6
const char *npy_dtype_name(enum npy_dtype t); /* "float32", ...; NULL past the list */
int npy_dtype_bytes(enum npy_dtype t);        /* 4, 4, 2, 2, 4, 1; 0 past the list */
/* The dtype called name ("float16"), or -1. */
int npy_dtype_from_name(const char *name);

/* An array of 1 or 2 dimensions as an upload held it, every dim >= 1. shape[1] is
 * 1 when ndim == 1, so count == shape[0] * shape[1] always. stored and data are
 * borrowed: they point into the body that was parsed and live as long as it does.
 * They may be unaligned (the body buffer itself need not be aligned, and .npy
 * headers are only padded relative to the file start): read the values with
 * memcpy, never through the pointers directly. */
struct npy_array {
  int ndim;
  int64_t shape[NPY_MAX_NDIM];
  uint64_t count;       /* number of elements: the product of the dims */
  const void *stored;   /* the values as sent: count * elem_bytes, little-endian */
  int elem_bytes;       /* as sent: 8 for float64 ('<f8'), else npy_dtype_bytes(dtype) */
  enum npy_dtype dtype; /* as kept: float64 becomes float32, the others stay */
  int fortran_order;    /* sent column-major, and laid out unlike C order (2-D, no dim of 1) */
  /* The values as gpulab keeps them, C order in dtype: stored itself when it is
   * that already, else NULL (npy_convert makes them). */
  const void *data;
};

/* Parses a .npy file of len bytes (versions 1.0, 2.0 and 3.0). Accepted: descr
 * '<f4', '<f8', '<f2', '<i4', '<u4' or '|i1' (also '<i1'), fortran_order False or True, a shape of 1 or 2 dims each >= 1,
 * and exactly count * elem_bytes bytes of data after the header. The body is
 * untrusted: nothing is read past len and every length field is bounds-checked.
 * body is borrowed and not copied (out->stored points into it); nothing is
 * allocated. Returns 0, or -EINVAL (invalid input) with a one-sentence message
 * in err that ends with the NumPy call that would fix the file where there is one
 * ("a.astype(np.float32)"); err is always NUL-terminated when err_len > 0 and may be
 * NULL; *out is zeroed. */
int npy_parse(const void *body, size_t len, struct npy_array *out, char *err, size_t err_len);

/* Describes raw little-endian bytes with the shape from a ?shape= query, "n" or
 * "m,n": decimal digits only, at most one comma, each dim >= 1, no overflow; and the
 * dtype from ?dtype= (npy_dtype_from_name's names; NULL: float32). len must be exactly
 * count * the dtype's bytes. Borrows body as npy_parse does (out->data is always
 * set). Returns 0, or -EINVAL with err filled and *out zeroed. */
int npy_raw(const void *body, size_t len, const char *shape_text, const char *dtype_text,
            struct npy_array *out, char *err, size_t err_len);

/* Reads an upload body: raw values when shape_text is given (npy_raw, of dtype_text);
 * else a .npy file (npy_parse) when the body starts as one does or declared_npy is set
 * (its Content-Type said application/x-npy), refused with a dtype_text (a .npy carries
 * its dtype); else raw bytes without their shape, refused for that ("missing shape").
 * *raw says which reading it was, for the caller's error code. Returns 0, or -EINVAL
 * with err as npy_parse. */
int npy_upload(const void *body, size_t len, const char *shape_text, const char *dtype_text,
               int declared_npy, struct npy_array *out, int *raw, char *err, size_t err_len);

/* Reads an upload that came with curl's default Content-Type,
 * application/x-www-form-urlencoded (curl -d @a.npy, or --data-binary without -H): a
 * body that starts as a .npy file does is one, sent the wrong way. Returns 0 with err
 * saying how to send it as application/x-npy (it arrived whole); -EINVAL with err
 * saying that and what curl -d broke (it did not: curl -d drops line breaks and stops
 * at a NUL byte); -ENOENT (err untouched) when the body does not start as a .npy. */
int npy_form_upload(const void *body, size_t len, char *err, size_t err_len);

/* How npy_convert made an array C order (and float64 float32). */
struct npy_conversion {
  const char *from_dtype;    /* as sent: "float64", or the kept dtype's name (static) */
  int from_fortran_order;    /* the array was column-major */
  double max_rounding_error; /* the largest |sent - kept| of a finite value; 0: exact */
};

/* Writes a's values into out (a->count elements of a->dtype, the caller's, not
 * overlapping the body) in C order, rounding float64 to nearest as numpy's astype does.
 * info (may be NULL) says what was converted. Returns 0, or -EINVAL with err when a
 * finite float64 value lies past float32's range (it would become infinite). */
int npy_convert(const struct npy_array *a, void *out, struct npy_conversion *info, char *err,
                size_t err_len);

/* Size in bytes of the version 1.0 header npy_write_header writes for this shape (of
 * either dtype): a multiple of 64. Returns 0 when ndim is not 1 or 2 or a dim is
 * negative. */
size_t npy_header_size(int ndim, const int64_t *shape);

/* Writes a version 1.0 .npy header (descr '<f4', '<u4', '<f2', '<i4' or '|i1' as
 * dtype says, fortran_order False, shape written as "(n,)" or "(m, n)") into buf, padded
 * with spaces to a multiple of 64 bytes; the caller appends count elements of
 * little-endian data of that dtype. Not NUL-terminated. Returns the bytes written
 * (npy_header_size), or 0 when cap is too small, the shape is invalid (as
 * npy_header_size) or dtype has no descr (bfloat16). This function cannot otherwise
 * fail. */
size_t npy_write_header(char *buf, size_t cap, int ndim, const int64_t *shape,
                        enum npy_dtype dtype);

#endif
