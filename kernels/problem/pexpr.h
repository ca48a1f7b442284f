/* Integer expressions over a problem's named params, as its shapes, launch shape and
 * figure use them ("rows", "n / 2 + 1", "cdiv(n, 256)"): parsed once against the names
 * a problem declares, bounded over the params' ranges at definition time, and evaluated
 * at a job's values. No JSON, no CUDA.
 *
 * Grammar (C precedence, left associative):
 *   expr   := term (('+' | '-') term)*
 *   term   := unary (('*' | '/' | '%') unary)*
 *   unary  := '-' unary | atom
 *   atom   := literal | name | func '(' expr ',' expr ')' | '(' expr ')'
 *   func   := min | max | cdiv          (cdiv: ceiling division)
 * Literals are non-negative decimal integers; names are C identifiers from the list the
 * caller gives. Values are int64; '/' and '%' truncate toward zero as C does. Any
 * overflow, and any division by zero, is an error: never a wrapped or undefined value. */
#ifndef GPULAB_PEXPR_H
#define GPULAB_PEXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEXPR_MAX_TEXT 256 /* characters of one expression */
#define PEXPR_MAX_DEPTH 32 /* nested parentheses, calls and unary minus */
#define PEXPR_MAX_NAMES 64 /* names an expression may be parsed against */

/* What went wrong, for a person: pos is the 1-based character of the text it is at (0:
 * none), and message already says it ("unknown name 'colz' at 5", "syntax error at 7:
 * expected ')'", "division by zero at 3"). */
struct pexpr_error {
  int pos;
  char message[160];
};

/* A closed interval of int64 values. */
struct pexpr_range {
  int64_t lo, hi;
};

struct pexpr; /* a compiled expression: immutable, so it may be shared between threads */

/* Compiles text (NUL-terminated, at most PEXPR_MAX_TEXT characters) against names[0..
 * n_names) (borrowed for the call; the expression refers to them by index, so the
 * caller must evaluate it with values in the same order). A divisor that is a constant
 * 0 is refused here; one that can be 0 only for some values, by pexpr_bound. Returns 0
 * with *out (the caller's: pexpr_free it), -EINVAL with err filled, or -ENOMEM. */
int pexpr_parse(const char *text, const char *const *names, int n_names, struct pexpr **out,
                struct pexpr_error *err);
void pexpr_free(struct pexpr *e); /* NULL is a no-op */

/* The text e was parsed from (e's own: valid while e is). */
const char *pexpr_text(const struct pexpr *e);

/* True when e uses name index i. */
bool pexpr_uses(const struct pexpr *e, int i);

/* e's value with name i worth values[i]. Returns 0 with *out, or -ERANGE (overflow) or
 * -EDOM (division by zero) with err naming the operator's position. */
int pexpr_eval(const struct pexpr *e, const int64_t *values, int64_t *out, struct pexpr_error *err);

/* An interval that holds e's value for every choice of values with name i within
 * ranges[i] (interval arithmetic: safe, possibly wider than the exact range when a
 * name occurs twice). Returns 0 with *out, -EDOM when a divisor's interval holds 0, or
 * -ERANGE when some value in the ranges could overflow; err names the operator. Once
 * this succeeded, pexpr_eval cannot fail for values within the ranges. */
int pexpr_bound(const struct pexpr *e, const struct pexpr_range *ranges, struct pexpr_range *out,
                struct pexpr_error *err);

/* e as a C expression of type long long over the same names (min, max and cdiv written
 * out; cdiv as C's (a + b - 1) / b, right for a >= 0, b > 0), for generated source, into
 * buf. Returns 0, or -ENOSPC when it does not fit (buf then holds "0"). */
int pexpr_format_c(const struct pexpr *e, const char *const *names, char *buf, size_t len);

#endif
