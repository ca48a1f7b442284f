/* Params' integer expressions: a recursive-descent parser into postfix code (RPN), and
 * two loops over it: one over values (evaluation), one over intervals (bounds). */
#include "kernels/problem/pexpr.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op_kind {
  OP_LIT,
  OP_NAME,
  OP_NEG,
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_DIV,
  OP_MOD,
  OP_MIN,
  OP_MAX,
  OP_CDIV
};

/* One postfix instruction. start: the index of the first instruction of the subtree
 * this one closes, so that an operator finds its operands (format_c, constant checks). */
struct pexpr_op {
  enum op_kind kind;
  int pos;       /* 1-based character of the text */
  int start;     /* first instruction of this subtree */
  int64_t value; /* OP_LIT: the literal; OP_NAME: the name's index */
};

struct pexpr {
  char text[PEXPR_MAX_TEXT + 1];
  int n_ops;
  struct pexpr_op ops[]; /* at most one per character of text */
};

struct parser {
  const char *s;
  int i; /* index into s */
  int depth;
  const char *const *names;
  int n_names;
  struct pexpr *e;
  struct pexpr_error *err;
};

static int fail(struct pexpr_error *err, int pos, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct pexpr_error *err, int pos, int rc, const char *fmt, ...) {
  err->pos = pos;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return rc;
}

static void emit(struct parser *p, enum op_kind kind, int pos, int start, int64_t value) {
  p->e->ops[p->e->n_ops++] = (struct pexpr_op){kind, pos, start, value};
}

static char peek(struct parser *p) {
  while (p->s[p->i] == ' ' || p->s[p->i] == '\t') p->i++;
  return p->s[p->i];
}

static int unexpected(struct parser *p, const char *wanted) {
  char c = peek(p);
  if (!c)
    return fail(p->err, p->i + 1, -EINVAL, "syntax error at %d: expected %s", p->i + 1, wanted);
  if (isprint((unsigned char)c))
    return fail(p->err, p->i + 1, -EINVAL, "syntax error at %d: expected %s, not '%c'", p->i + 1,
                wanted, c);
  return fail(p->err, p->i + 1, -EINVAL, "syntax error at %d: expected %s", p->i + 1, wanted);
}

static int nest(struct parser *p) {
  if (++p->depth <= PEXPR_MAX_DEPTH) return 0;
  return fail(p->err, p->i + 1, -EINVAL, "nested too deeply at %d: at most %d levels", p->i + 1,
              PEXPR_MAX_DEPTH);
}

static int apply(enum op_kind kind, int64_t a, int64_t b, int64_t *r) {
  switch (kind) {
  case OP_ADD: return __builtin_add_overflow(a, b, r) ? -ERANGE : 0;
  case OP_SUB: return __builtin_sub_overflow(a, b, r) ? -ERANGE : 0;
  case OP_MUL: return __builtin_mul_overflow(a, b, r) ? -ERANGE : 0;
  case OP_MIN: *r = a < b ? a : b; return 0;
  case OP_MAX: *r = a > b ? a : b; return 0;
  default: break;
  }
  if (b == 0) return -EDOM;
  if (a == INT64_MIN && b == -1) { /* the one quotient C cannot hold; its remainder is 0 */
    *r = 0;
    return kind == OP_MOD ? 0 : -ERANGE;
  }
  if (kind == OP_MOD) {
    *r = a % b;
  } else {
    *r = a / b;
    if (kind == OP_CDIV && a % b != 0 && (a < 0) == (b < 0)) (*r)++; /* round up, not to 0 */
  }
  return 0;
}

/* Runs ops[from..to) over values; 0 with *out, or apply's error with *at its position. */
static int run(const struct pexpr *e, int from, int to, const int64_t *values, int64_t *out,
               int *at) {
  int64_t stack[PEXPR_MAX_TEXT + 1];
  int n = 0;
  for (int k = from; k < to; k++) {
    const struct pexpr_op *op = &e->ops[k];
    int rc = 0;
    if (op->kind == OP_LIT) {
      stack[n++] = op->value;
    } else if (op->kind == OP_NAME) {
      stack[n++] = values[op->value];
    } else if (op->kind == OP_NEG) {
      rc = stack[n - 1] == INT64_MIN ? -ERANGE : 0;
      stack[n - 1] = rc ? 0 : -stack[n - 1];
    } else {
      rc = apply(op->kind, stack[n - 2], stack[n - 1], &stack[n - 2]);
      n--;
    }
    if (rc) {
      *at = op->pos;
      return rc;
    }
  }
  *out = stack[0];
  return 0;
}

/* A divisor (the subtree that ends just before the operator) that is a constant 0. */
static int check_divisor(struct parser *p, int pos) {
  int end = p->e->n_ops, begin = p->e->ops[end - 1].start, at;
  for (int k = begin; k < end; k++)
    if (p->e->ops[k].kind == OP_NAME) return 0;
  int64_t v;
  if (run(p->e, begin, end, NULL, &v, &at) == 0 && v == 0)
    return fail(p->err, pos, -EINVAL, "division by zero at %d", pos);
  return 0; /* a constant that overflows: pexpr_bound says so */
}

static int parse_expr(struct parser *p);

static int parse_number(struct parser *p) {
  int pos = p->i + 1;
  int64_t v = 0;
  while (isdigit((unsigned char)p->s[p->i])) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, p->s[p->i] - '0', &v))
      return fail(p->err, pos, -EINVAL, "number too large at %d", pos);
    p->i++;
  }
  emit(p, OP_LIT, pos, p->e->n_ops, v);
  return 0;
}

/* min(a, b), max(a, b), cdiv(a, b): the name is read; p->s[p->i] is '('. */
static int parse_call(struct parser *p, const char *name, int len, int pos) {
  static const struct {
    const char *name;
    enum op_kind kind;
  } funcs[] = {{"min", OP_MIN}, {"max", OP_MAX}, {"cdiv", OP_CDIV}};
  int f = -1;
  for (int k = 0; k < 3; k++)
    if ((int)strlen(funcs[k].name) == len && !strncmp(name, funcs[k].name, len)) f = k;
  if (f < 0)
    return fail(p->err, pos, -EINVAL, "unknown function '%.*s' at %d; there are min, max, cdiv",
                len > 40 ? 40 : len, name, pos);
  int start = p->e->n_ops, rc = nest(p);
  if (rc) return rc;
  p->i++;
  if ((rc = parse_expr(p))) return rc;
  if (peek(p) != ',') return unexpected(p, "','");
  p->i++;
  if ((rc = parse_expr(p))) return rc;
  if (peek(p) != ')') return unexpected(p, "')'");
  p->i++;
  p->depth--;
  if (funcs[f].kind == OP_CDIV && (rc = check_divisor(p, pos))) return rc;
  emit(p, funcs[f].kind, pos, start, 0);
  return 0;
}

static int parse_name(struct parser *p) {
  int pos = p->i + 1;
  const char *name = p->s + p->i;
  int len = 0;
  while (isalnum((unsigned char)name[len]) || name[len] == '_') len++;
  p->i += len;
  if (peek(p) == '(') return parse_call(p, name, len, pos);
  for (int k = 0; k < p->n_names; k++)
    if ((int)strlen(p->names[k]) == len && !strncmp(p->names[k], name, len)) {
      emit(p, OP_NAME, pos, p->e->n_ops, k);
      return 0;
    }
  return fail(p->err, pos, -EINVAL, "unknown name '%.*s' at %d", len > 40 ? 40 : len, name, pos);
}

static int parse_atom(struct parser *p) {
  char c = peek(p);
  if (isdigit((unsigned char)c)) return parse_number(p);
  if (isalpha((unsigned char)c) || c == '_') return parse_name(p);
  if (c != '(') return unexpected(p, "a number, a name or '('");
  int rc = nest(p);
  if (rc) return rc;
  p->i++;
  if ((rc = parse_expr(p))) return rc;
  if (peek(p) != ')') return unexpected(p, "')'");
  p->i++;
  p->depth--;
  return 0;
}

static int parse_unary(struct parser *p) {
  if (peek(p) != '-') return parse_atom(p);
  int pos = p->i + 1, start = p->e->n_ops, rc = nest(p);
  if (rc) return rc;
  p->i++;
  if ((rc = parse_unary(p))) return rc;
  p->depth--;
  emit(p, OP_NEG, pos, start, 0);
  return 0;
}

static int parse_term(struct parser *p) {
  int start = p->e->n_ops, rc = parse_unary(p);
  for (char c; !rc && ((c = peek(p)) == '*' || c == '/' || c == '%');) {
    int pos = ++p->i;
    enum op_kind kind = c == '*' ? OP_MUL : c == '/' ? OP_DIV : OP_MOD;
    if ((rc = parse_unary(p))) break;
    if (kind != OP_MUL && (rc = check_divisor(p, pos))) break;
    emit(p, kind, pos, start, 0);
  }
  return rc;
}

static int parse_expr(struct parser *p) {
  int start = p->e->n_ops, rc = parse_term(p);
  for (char c; !rc && ((c = peek(p)) == '+' || c == '-');) {
    int pos = ++p->i;
    if ((rc = parse_term(p))) break;
    emit(p, c == '+' ? OP_ADD : OP_SUB, pos, start, 0);
  }
  return rc;
}

int pexpr_parse(const char *text, const char *const *names, int n_names, struct pexpr **out,
                struct pexpr_error *err) {
  *out = NULL;
  size_t len = strlen(text);
  if (len > PEXPR_MAX_TEXT)
    return fail(err, PEXPR_MAX_TEXT + 1, -EINVAL, "expression too long: %zu characters, at most %d",
                len, PEXPR_MAX_TEXT);
  struct pexpr *e = calloc(1, sizeof *e + (len + 1) * sizeof e->ops[0]);
  if (!e) return fail(err, 0, -ENOMEM, "out of memory");
  memcpy(e->text, text, len + 1);
  struct parser p = {.s = e->text, .names = names, .n_names = n_names, .e = e, .err = err};
  int rc = peek(&p) ? parse_expr(&p) : fail(err, 1, -EINVAL, "syntax error at 1: empty expression");
  if (!rc && peek(&p)) {
    char c = peek(&p);
    rc = fail(err, p.i + 1, -EINVAL, "syntax error at %d: unexpected '%c' after the expression",
              p.i + 1, isprint((unsigned char)c) ? c : '?');
  }
  if (rc) {
    free(e);
    return rc;
  }
  *out = e;
  return 0;
}

void pexpr_free(struct pexpr *e) { free(e); }

const char *pexpr_text(const struct pexpr *e) { return e->text; }

bool pexpr_uses(const struct pexpr *e, int i) {
  for (int k = 0; k < e->n_ops; k++)
    if (e->ops[k].kind == OP_NAME && e->ops[k].value == i) return true;
  return false;
}

int pexpr_eval(const struct pexpr *e, const int64_t *values, int64_t *out,
               struct pexpr_error *err) {
  int at = 0, rc = run(e, 0, e->n_ops, values, out, &at);
  if (rc == -EDOM) return fail(err, at, rc, "division by zero at %d", at);
  if (rc) return fail(err, at, rc, "overflow at %d: the value passes the int64 range", at);
  return 0;
}

/* ---- bounds ---- */

static uint64_t magnitude(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

/* a % b for a in ra and a divisor in rb (0 not in it): the remainder has a's sign, and
 * is smaller than the divisor's largest magnitude and no larger than a's. */
static struct pexpr_range bound_mod(struct pexpr_range ra, struct pexpr_range rb) {
  uint64_t mb = magnitude(rb.lo) > magnitude(rb.hi) ? magnitude(rb.lo) : magnitude(rb.hi);
  uint64_t least = magnitude(rb.lo) < magnitude(rb.hi) ? magnitude(rb.lo) : magnitude(rb.hi);
  if (ra.lo >= 0 && (uint64_t)ra.hi < least) return ra; /* a % b == a throughout */
  uint64_t lo = ra.lo < 0 ? magnitude(ra.lo) : 0, hi = ra.hi > 0 ? (uint64_t)ra.hi : 0;
  if (lo > mb - 1) lo = mb - 1;
  if (hi > mb - 1) hi = mb - 1;
  return (struct pexpr_range){-(int64_t)lo, (int64_t)hi};
}

/* Binary op over two intervals. +, -, * are exact at the corners; /, cdiv and % have
 * the divisor's sign fixed (0 is refused), where each is monotonic in either operand,
 * so their extremes are at the corners too. */
static int bound_binary(enum op_kind kind, struct pexpr_range ra, struct pexpr_range rb,
                        struct pexpr_range *out) {
  if ((kind == OP_DIV || kind == OP_MOD || kind == OP_CDIV) && rb.lo <= 0 && rb.hi >= 0)
    return -EDOM;
  if (kind == OP_MOD) {
    *out = bound_mod(ra, rb);
    return 0;
  }
  int64_t as[2] = {ra.lo, ra.hi}, bs[2] = {rb.lo, rb.hi}, v;
  *out = (struct pexpr_range){INT64_MAX, INT64_MIN};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      int rc = apply(kind, as[i], bs[j], &v);
      if (rc) return rc;
      if (v < out->lo) out->lo = v;
      if (v > out->hi) out->hi = v;
    }
  return 0;
}

int pexpr_bound(const struct pexpr *e, const struct pexpr_range *ranges, struct pexpr_range *out,
                struct pexpr_error *err) {
  struct pexpr_range stack[PEXPR_MAX_TEXT + 1];
  int n = 0;
  for (int k = 0; k < e->n_ops; k++) {
    const struct pexpr_op *op = &e->ops[k];
    int rc = 0;
    if (op->kind == OP_LIT) {
      stack[n++] = (struct pexpr_range){op->value, op->value};
    } else if (op->kind == OP_NAME) {
      stack[n++] = ranges[op->value];
    } else if (op->kind == OP_NEG) {
      struct pexpr_range r = stack[n - 1];
      if (r.lo == INT64_MIN)
        rc = -ERANGE;
      else
        stack[n - 1] = (struct pexpr_range){-r.hi, -r.lo};
    } else {
      struct pexpr_range rb = stack[--n];
      rc = bound_binary(op->kind, stack[n - 1], rb, &stack[n - 1]);
      if (rc == -EDOM)
        return fail(err, op->pos, rc,
                    "division by zero at %d: the divisor can be 0 (it ranges over [%" PRId64
                    ", %" PRId64 "])",
                    op->pos, rb.lo, rb.hi);
    }
    if (rc)
      return fail(err, op->pos, rc, "overflow at %d: the value can pass the int64 range", op->pos);
  }
  *out = stack[0];
  return 0;
}

/* ---- C text ---- */

struct cbuf {
  char *s;
  size_t used, len;
  bool full;
};

static void put(struct cbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct cbuf *b, const char *fmt, ...) {
  if (b->full) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->s + b->used, b->len - b->used, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= b->len - b->used)
    b->full = true;
  else
    b->used += (size_t)n;
}

/* The subtree that ends at instruction k, fully parenthesised. */
static void format_op(const struct pexpr *e, int k, const char *const *names, struct cbuf *b) {
  const struct pexpr_op *op = &e->ops[k];
  if (op->kind == OP_LIT) {
    put(b, "%" PRId64 "LL", op->value);
    return;
  }
  if (op->kind == OP_NAME) {
    put(b, "(long long)%s", names[op->value]);
    return;
  }
  if (op->kind == OP_NEG) {
    put(b, "(-");
    format_op(e, k - 1, names, b);
    put(b, ")");
    return;
  }
  int right = k - 1, left = e->ops[right].start - 1;
  static const char *const sym[] = {
      [OP_ADD] = " + ", [OP_SUB] = " - ", [OP_MUL] = " * ", [OP_DIV] = " / ", [OP_MOD] = " % "};
  if (op->kind == OP_MIN || op->kind == OP_MAX) {
    const char *cmp = op->kind == OP_MIN ? " < " : " > ";
    const int parts[] = {left, right, left, right};
    const char *const between[] = {cmp, " ? ", " : ", ")"};
    put(b, "(");
    for (int i = 0; i < 4; i++) format_op(e, parts[i], names, b), put(b, "%s", between[i]);
  } else if (op->kind == OP_CDIV) {
    put(b, "((");
    format_op(e, left, names, b);
    put(b, " + ");
    format_op(e, right, names, b);
    put(b, " - 1) / ");
    format_op(e, right, names, b);
    put(b, ")");
  } else {
    put(b, "(");
    format_op(e, left, names, b);
    put(b, "%s", sym[op->kind]);
    format_op(e, right, names, b);
    put(b, ")");
  }
}

int pexpr_format_c(const struct pexpr *e, const char *const *names, char *buf, size_t len) {
  struct cbuf b = {buf, 0, len, len == 0};
  if (len) buf[0] = '\0';
  format_op(e, e->n_ops - 1, names, &b);
  if (!b.full) return 0;
  if (len >= 2) snprintf(buf, len, "0");
  return -ENOSPC;
}
