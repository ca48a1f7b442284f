/* What the .npy codec's tests share (test_npy.c: headers, rejections, truncations,
 * mutations; test_npy_convert.c: float64 and Fortran order converted, the upload,
 * NumPy itself): files built from a header, and the checks of a parse. */
#ifndef GPULAB_TEST_NPY_COMMON_H
#define GPULAB_TEST_NPY_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "api/npy.h"

#define DICT_1D "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }"
#define DICT_2D "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
/* A file of header (used verbatim: dict, padding, '\n') after a preamble for major,
 * then n_floats values i * 0.5. Caller frees. */
unsigned char *build_raw(int major, const char *header, size_t hdr_len, size_t n_floats,
                         size_t *len);
/* The same with dict padded by spaces and '\n' to a multiple of 64, as NumPy does
 * (pad = 0: just dict and '\n'). */
unsigned char *build(int major, const char *dict, int pad, size_t n_floats, size_t *len);
void check_values(const struct npy_array *a, float step);
void expect_ok(int major, const char *dict, int pad, int ndim, int64_t d0, int64_t d1);
/* Every refusal of a .npy says how to fix it: a NumPy call, or how to send the file. */
void check_fix(const char *err);
void expect_fail_buf(const void *b, size_t len, const char *want);
void expect_fail(int major, const char *dict, size_t n_floats, const char *want);

#endif
