/* A problem defined by a user (issue 33, part 2): its JSON definition (params, inputs,
 * outputs, reference kernel, tolerance, figure) parsed and validated into a struct, every
 * expression bounded over the params' ranges at definition time; and what follows from
 * it: the signature its kernels have, a starter kernel, its canonical JSON, and its
 * sizes at a job's params. Knows jansson, not HTTP, the store or CUDA: the routes and
 * the store call it, and every refusal is an api_error naming the exact field.
 *
 * The definition, in short (docs: the example; every key below, no other):
 *   {"name": "softmax_rows", "public": false, "description": "...",
 *    "params": {"rows": {"default": 4096, "min": 1, "max": 65536}, ...},   (1..16)
 *    "inputs":  [{"name": "x", "dtype": "float32", "shape": ["rows", "cols"],
 *                 "init": {"uniform": [-4, 4]} | {"normal": [0, 1]} | {"integers": [0, 9]}}],
 *    "outputs": [{"name": "y", "dtype": "float32", "shape": ["rows", "cols"],
 *                 "tolerance": {"abs": 1e-6, "rel": 1e-4} | "exact"}],      (1..8 each)
 *    "reference": {"source": "...", "entry": "kernel", "block": [256, 1, 1],
 *                  "grid": ["rows", 1, 1], "shared_bytes": "4 * cols", "options": [...]},
 *    "figure": {"bytes": "8 * rows * cols", "flops": "..."},              (one or both)
 *    "nondeterministic": false, "scratch_bytes": "4 * rows"}
 * An expression (kernels/problem/pexpr.h) is a string or a JSON integer.
 *
 * Decisions that a definition's author sees:
 * - Param order is the JSON object's order (jansson keeps insertion order; a test pins
 *   it): the signature's int arguments follow it.
 * - Every shape dimension is >= 1, and every buffer holds at most 2^31 - 1 elements, at
 *   every param value in range (interval bounds: a definition can be refused that would
 *   never overflow, never the reverse).
 * - An output's tolerance is required for float dtypes; an integer output defaults to
 *   "exact" and may give abs/rel as well (a quantised result may be off by one). A value
 *   passes when |got - want| <= abs + rel * |want|.
 * - "nondeterministic": true makes the reference's two runs be compared with the
 *   tolerance instead of bit for bit, so no output may then be "exact".
 * - init: uniform [lo, hi) and normal [mean, std] for float dtypes, integers [lo, hi]
 *   (both included) for integer dtypes, within the dtype's range.
 * - reference.block and grid take 1 to 3 entries (the rest are 1), like a kernel's.
 * - reference.options are kept as given (at most UCOMPILE_MAX_OPTIONS, each shorter than
 *   UCOMPILE_MAX_OPTION_LEN); the whitelist (ucompile_options_check) is the compile's. */
#ifndef GPULAB_API_PROBLEM_DEF_H
#define GPULAB_API_PROBLEM_DEF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/error.h"
#include "kernels/problem/pexpr.h"
#include "kernels/user/ucompile.h"

#define PROBLEM_NAME_MAX 63  /* a problem's name: as a user's kernel's */
#define PROBLEM_IDENT_MAX 31 /* a param's, input's or output's name */
#define PROBLEM_MAX_PARAMS 16
#define PROBLEM_MAX_BUFFERS 8 /* inputs, and outputs, each */
#define PROBLEM_MAX_DIMS 4
#define PROBLEM_MAX_DESCRIPTION 4096         /* bytes */
#define PROBLEM_MAX_SOURCE_BYTES (64 * 1024) /* the reference's, unless the caller says */
#define PROBLEM_MAX_ELEMS INT32_MAX          /* a buffer's elements: int indices */
#define PROBLEM_MAX_SHARED_BYTES (1 << 30)   /* sanity; the device's limit is the caller's */
#define PROBLEM_SIGNATURE_MAX 2048           /* problem_def_signature's text, NUL included */

enum problem_dtype {
  PROBLEM_DTYPE_FLOAT32,
  PROBLEM_DTYPE_FLOAT16,
  PROBLEM_DTYPE_BFLOAT16,
  PROBLEM_DTYPE_INT32,
  PROBLEM_DTYPE_UINT32,
  PROBLEM_DTYPE_INT8,
  PROBLEM_DTYPE_COUNT
};
const char *problem_dtype_name(enum problem_dtype t);  /* "float16" */
const char *problem_dtype_ctype(enum problem_dtype t); /* "__half": CUDA C's type */
size_t problem_dtype_bytes(enum problem_dtype t);      /* 2 */
bool problem_dtype_is_integer(enum problem_dtype t);

enum problem_init_kind { PROBLEM_INIT_UNIFORM, PROBLEM_INIT_NORMAL, PROBLEM_INIT_INTEGERS };
/* How an input is filled from the job's seed: uniform [a, b), normal (mean a, std b),
 * integers [a, b] (both included; a and b are whole numbers). */
struct problem_init {
  enum problem_init_kind kind;
  double a, b;
};

/* exact, or |got - want| <= abs + rel * |want|. */
struct problem_tolerance {
  bool exact;
  double abs, rel;
};

struct problem_param {
  char name[PROBLEM_IDENT_MAX + 1];
  int32_t def, min, max; /* min <= def <= max */
};

/* An input or output. The shape's expressions are over the params, in their order. */
struct problem_buffer {
  char name[PROBLEM_IDENT_MAX + 1];
  enum problem_dtype dtype;
  int n_dims;
  struct pexpr *shape[PROBLEM_MAX_DIMS];
  struct problem_init init;           /* inputs only */
  struct problem_tolerance tolerance; /* outputs only */
  int64_t max_elems, max_bytes;       /* upper bounds over the params' ranges */
};

struct problem_reference {
  char *source; /* NUL-terminated, no NUL inside */
  size_t source_bytes;
  char entry[64];                   /* a C identifier; default "kernel" */
  struct pexpr *block[3], *grid[3]; /* x, y, z */
  struct pexpr *shared_bytes;       /* NULL: 0 */
  int64_t max_shared_bytes;         /* its upper bound (0 when none) */
  int n_options;
  char options[UCOMPILE_MAX_OPTIONS][UCOMPILE_MAX_OPTION_LEN];
};

/* A parsed definition. Everything in it is its own: problem_def_free frees it all. */
struct problem_def {
  char name[PROBLEM_NAME_MAX + 1];
  bool is_public;
  char *description; /* NULL: none */
  int n_params;
  struct problem_param params[PROBLEM_MAX_PARAMS];
  int n_inputs, n_outputs;
  struct problem_buffer inputs[PROBLEM_MAX_BUFFERS], outputs[PROBLEM_MAX_BUFFERS];
  struct problem_reference reference;
  struct pexpr *figure_bytes, *figure_flops; /* NULL: not given; one is */
  bool nondeterministic;
  struct pexpr *scratch_bytes; /* NULL: no scratch (and no scratch argument) */
  int64_t max_scratch_bytes;   /* its upper bound (0 when none) */
};

/* Parses and validates the definition root (borrowed). max_source_bytes bounds the
 * reference's source (0: PROBLEM_MAX_SOURCE_BYTES), as the kernels' route's
 * --max-source does. Returns 0 with *out (the caller's: problem_def_free it); -EINVAL
 * with err filled: 400 with code unknown_field, missing_field, wrong_type, out_of_range
 * (a value outside its rule), invalid_expression (an expression's syntax, an unknown
 * name, a division by zero or an overflow, possible at some params in range: the
 * message gives the character position) or invalid_problem (what fails only at the
 * params' extremes or across fields: too many elements, a launch shape out of CUDA's
 * limits, a name used twice, an init or tolerance that does not fit the dtype), or 413
 * source_too_large; and field the exact path ("inputs[0].shape[1]", "params.rows.max").
 * -ENOMEM with err "out_of_memory". */
int problem_def_parse(json_t *root, size_t max_source_bytes, struct problem_def **out,
                      struct api_error *err);
void problem_def_free(struct problem_def *d); /* NULL is a no-op */

/* A problem's name: 1 to 63 letters, digits, '_', '-' or '.' (a user's kernel's rule),
 * not starting with '.' (it names a URL's path segment: /problems/{name}). */
bool problem_def_name_valid(const char *name);

/* d in canonical form: every key present but the optional ones not given
 * (description, shared_bytes, options, figure's missing one, scratch_bytes), block and
 * grid with 3 entries, an expression that is a plain decimal literal as an integer,
 * the others as the text given. problem_def_parse of it gives d again. A new reference
 * (json_decref), or NULL when memory ran out. */
json_t *problem_def_to_json(const struct problem_def *d);

/* The declaration every kernel of d (and its reference) has, "%s" for the entry, as
 * exp_user.declaration has it: inputs as const T *, outputs as T *, the params as int
 * in their order, then void *scratch when d has scratch_bytes:
 *   extern "C" __global__ void %s(const float *x, float *y, int rows, int cols);
 * into buf. Returns 0, or -ENOSPC (PROBLEM_SIGNATURE_MAX is always enough; ucompile.c's
 * declaration buffer holds it with its prelude). */
int problem_def_signature(const struct problem_def *d, char *buf, size_t len);

/* The includes that signature needs ahead of it ("" or #include <cuda_fp16.h> and/or
 * <cuda_bf16.h>, one a line): a compiler declares prelude + signature before the
 * user's source. Static text. */
const char *problem_def_prelude(const struct problem_def *d);

/* A kernel to start from: comments on the buffers and the launch, the prelude, the
 * signature with entry "kernel", and a grid-stride loop over the first output's
 * elements. NUL-terminated, the caller's (free), or NULL when memory ran out. */
char *problem_def_template(const struct problem_def *d);

/* A user's kernel of d: its grid, a (borrowed: an array of 1 to 3 expressions, strings
 * or integers, the rest 1), parsed against d's params and bounded as the reference's is
 * (x 1 to 2^31 - 1, y and z 1 to 65535 at every param value in range), each one's text
 * into out (missing ones "1"). field names it in errors ("grid"). 0, or -EINVAL with err
 * (400 wrong_type, out_of_range, invalid_expression, invalid_problem naming
 * "grid[1]"), or -ENOMEM. */
#define PROBLEM_GRID_TEXT 64 /* an entry's text, NUL included */
int problem_def_grid_parse(const struct problem_def *d, json_t *a, const char *field,
                           char out[3][PROBLEM_GRID_TEXT], struct api_error *err);

/* ---- at a job's params ---- */

/* A job's "params" object (borrowed; NULL: all defaults) into values[0..n_params), in
 * d's order, defaults filled. Returns 0, or -EINVAL with err: 400 unknown_field
 * ("params.colz"), wrong_type or out_of_range ("params.rows": outside min..max). */
int problem_def_values_parse(const struct problem_def *d, json_t *params, int64_t *values,
                             struct api_error *err);

struct problem_extent {
  int n_dims;
  int64_t dims[PROBLEM_MAX_DIMS];
  int64_t elems, bytes;
};

/* Everything d's expressions give at one set of values. */
struct problem_sizes {
  struct problem_extent inputs[PROBLEM_MAX_BUFFERS], outputs[PROBLEM_MAX_BUFFERS];
  int64_t block[3], grid[3];
  int64_t shared_bytes, scratch_bytes; /* 0 when d has none */
  bool has_bytes, has_flops;
  int64_t bytes, flops; /* the figure's */
  int64_t buffer_bytes; /* inputs + outputs + scratch: one run's device memory */
};

/* d at values (n_params of them, in d's order). Cannot fail for values within the
 * params' ranges (the definition was bounded there); values outside them are a 400
 * out_of_range naming "params.<name>". Returns 0 or -EINVAL with err. */
int problem_def_sizes(const struct problem_def *d, const int64_t *values, struct problem_sizes *out,
                      struct api_error *err);

#endif
