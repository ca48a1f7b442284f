/* The NumPy .npy codec for job inputs and outputs: reads float32 arrays of 1 or 2
 * dimensions out of untrusted request bodies (a .npy file, or raw bytes with a
 * ?shape=), and writes .npy headers for results (float32 or uint32). libc only; no
 * allocation. */
#ifndef GPULAB_API_NPY_H
#define GPULAB_API_NPY_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_NDIM 2

/* A C-order little-endian float32 array of 1 or 2 dimensions, every dim >= 1.
 * shape[1] is 1 when ndim == 1, so count == shape[0] * shape[1] always.
 * data is borrowed: it points into the body that was parsed and lives as long as
 * it does. data may be unaligned (the body buffer itself need not be 4-aligned,
 * and .npy headers are only padded relative to the file start): read the values
 * with memcpy, never through the float pointer directly. */
struct npy_array {
  int ndim;
  int64_t shape[NPY_MAX_NDIM];
  uint64_t count;    /* number of floats: the product of the dims */
  const float *data; /* count * 4 bytes, little-endian, maybe unaligned */
};

/* Parses a .npy file of len bytes (versions 1.0, 2.0 and 3.0). Accepted: descr
 * '<f4', fortran_order False, a shape of 1 or 2 dims each >= 1, and exactly
 * count * 4 bytes of data after the header. The body is untrusted: nothing is read
 * past len and every length field is bounds-checked. body is borrowed and not
 * copied (out->data points into it); nothing is allocated.
 * Returns 0, or -1 (invalid input, EINVAL) with a one-sentence message in err
 * (always NUL-terminated when err_len > 0; err may be NULL) and *out zeroed. */
int npy_parse(const void *body, size_t len, struct npy_array *out, char *err, size_t err_len);

/* Describes raw little-endian float32 bytes with the shape from a ?shape= query,
 * "n" or "m,n": decimal digits only, at most one comma, each dim >= 1, no overflow.
 * len must be exactly count * 4. Borrows body as npy_parse does.
 * Returns 0, or -1 with err filled and *out zeroed. */
int npy_raw(const void *body, size_t len, const char *shape_text, struct npy_array *out,
            char *err, size_t err_len);

/* The element types written: float32 (uploads, and most outputs) and uint32 (counts:
 * a histogram's output). Both are 4 bytes, little-endian. */
enum npy_dtype { NPY_FLOAT32, NPY_UINT32 };

/* Size in bytes of the version 1.0 header npy_write_header writes for this shape (of
 * either dtype): a multiple of 64. Returns 0 when ndim is not 1 or 2 or a dim is
 * negative. */
size_t npy_header_size(int ndim, const int64_t *shape);

/* Writes a version 1.0 .npy header (descr '<f4' for NPY_FLOAT32, '<u4' for NPY_UINT32,
 * fortran_order False, shape written as "(n,)" or "(m, n)") into buf, padded with
 * spaces to a multiple of 64 bytes; the caller appends count * 4 bytes of
 * little-endian data of that dtype. Not NUL-terminated. Returns the bytes written
 * (npy_header_size), or 0 when cap is too small, the shape is invalid (as
 * npy_header_size) or dtype is not one of the two. This function cannot otherwise
 * fail. */
size_t npy_write_header(char *buf, size_t cap, int ndim, const int64_t *shape,
                        enum npy_dtype dtype);

#endif
