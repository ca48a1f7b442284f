/* Compiling a user's kernel with NVRTC (ucompile.h). */
#include "kernels/user/ucompile.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/core/clock.h"
#include "kernels/user/uimage.h"

/* ---- options ---- */

static bool is_ident(const char *s, size_t n) {
  if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  for (size_t i = 1; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return false;
  return true;
}

/* A macro's value: printable, no spaces, quotes or backslashes (nothing that could
 * end the option or reach a file). */
static bool is_value(const char *s) {
  for (; *s; s++)
    if (!isgraph((unsigned char)*s) || *s == '"' || *s == '\'' || *s == '\\') return false;
  return true;
}

static bool is_bool_word(const char *s) { return !strcmp(s, "true") || !strcmp(s, "false"); }

/* The option without its leading dashes (one or two), or NULL when it has none. */
static const char *undash(const char *o) {
  if (o[0] != '-') return NULL;
  return o[1] == '-' ? o + 2 : o + 1;
}

/* NULL when o is allowed, else why not (static text). */
static const char *option_refusal(const char *o) {
  size_t len = strlen(o);
  if (len == 0) return "an empty option";
  if (len >= UCOMPILE_MAX_OPTION_LEN) return "too long";
  if (o[0] == '-' && (o[1] == 'D' || o[1] == 'U')) {
    const char *name = o + 2, *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    if (!is_ident(name, n)) return "a macro name must be a C identifier";
    if (o[1] == 'U' && eq) return "-U takes no value";
    if (eq && !is_value(eq + 1)) return "a macro value may not hold spaces, quotes or backslashes";
    return NULL;
  }
  const char *u = undash(o);
  if (!u) return "not an option";
  if (!strcmp(u, "use_fast_math") || !strcmp(u, "lineinfo") || !strcmp(u, "generate-line-info") ||
      !strcmp(u, "restrict") || !strcmp(u, "extra-device-vectorization"))
    return NULL;
  if (!strncmp(u, "maxrregcount=", 13)) {
    char *end;
    long v = strtol(u + 13, &end, 10);
    if (*end || end == u + 13 || v < 16 || v > 255) return "--maxrregcount takes 16..255";
    return NULL;
  }
  static const char *const bools[] = {"ftz=", "prec-div=", "prec-sqrt=", "fmad="};
  for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++) {
    size_t n = strlen(bools[i]);
    if (!strncmp(u, bools[i], n)) return is_bool_word(u + n) ? NULL : "takes true or false";
  }
  if (!strncmp(u, "std=", 4)) {
    static const char *const stds[] = {"c++11", "c++14", "c++17", "c++20"};
    for (size_t i = 0; i < sizeof stds / sizeof stds[0]; i++)
      if (!strcmp(u + 4, stds[i])) return NULL;
    return "-std takes c++11, c++14, c++17 or c++20";
  }
  if (u[0] == 'I' || !strncmp(u, "include", 7) || !strncmp(u, "pre-include", 11))
    return "no include paths or included files: device code comes as one source";
  if (!strncmp(u, "rdc", 3) || !strncmp(u, "relocatable-device-code", 23) || !strcmp(u, "dc") ||
      !strncmp(u, "dlto", 4) || !strncmp(u, "dlink-time-opt", 14))
    return "no separate compilation: the image is one whole CUBIN";
  if (!strncmp(u, "arch", 4) || !strncmp(u, "gpu-architecture", 16))
    return "gpulab picks the architecture (the device's)";
  if (!strncmp(u, "Xptxas", 6) || !strncmp(u, "ptxas-options", 13))
    return "gpulab sets ptxas' options";
  return "not on the whitelist";
}

int ucompile_options_check(const char *const *options, int n_options, char *msg, size_t msg_len) {
  if (n_options < 0 || n_options > UCOMPILE_MAX_OPTIONS) {
    snprintf(msg, msg_len, "at most %d options", UCOMPILE_MAX_OPTIONS);
    return -EINVAL;
  }
  for (int i = 0; i < n_options; i++) {
    const char *why = options[i] ? option_refusal(options[i]) : "a null option";
    if (why) {
      snprintf(msg, msg_len, "option \"%.*s\" is not allowed: %s", UCOMPILE_MAX_OPTION_LEN,
               options[i] ? options[i] : "", why);
      return -EINVAL;
    }
  }
  return 0;
}

/* ---- source ---- */

/* Copies src into out with line splices removed and comments turned into one space
 * each (line breaks inside block comments kept), literals left as they are; line[i]
 * is the 1-based source line of out[i]. Both have strlen(src) + 1 entries. */
static void flatten(const char *src, char *out, int *line) {
  size_t o = 0;
  int ln = 1;
  char quote = 0;
  for (size_t i = 0; src[i];) {
    if (src[i] == '\\' && src[i + 1] == '\n') { /* a splice joins two lines */
      i += 2, ln++;
      continue;
    }
    if (quote) {
      if (src[i] == '\\' && src[i + 1]) {
        out[o] = src[i], line[o++] = ln;
        i++;
      } else if (src[i] == quote || src[i] == '\n') {
        quote = 0;
      }
      if (src[i] == '\n') ln++;
      out[o] = src[i], line[o++] = ln;
      i++;
      continue;
    }
    if (src[i] == '/' && src[i + 1] == '/') {
      while (src[i] && src[i] != '\n') {
        if (src[i] == '\\' && src[i + 1] == '\n') ln++, i++;
        i++;
      }
      out[o] = ' ', line[o++] = ln;
      continue;
    }
    if (src[i] == '/' && src[i + 1] == '*') {
      i += 2;
      out[o] = ' ', line[o++] = ln;
      while (src[i] && !(src[i] == '*' && src[i + 1] == '/')) {
        if (src[i] == '\n') out[o] = '\n', line[o++] = ln++;
        i++;
      }
      if (src[i]) i += 2;
      continue;
    }
    if (src[i] == '"' || src[i] == '\'') quote = src[i];
    if (src[i] == '\n') {
      out[o] = '\n', line[o++] = ln++;
      i++;
      continue;
    }
    out[o] = src[i], line[o++] = ln;
    i++;
  }
  out[o] = '\0';
  line[o] = ln;
}

/* Whether name (as written between < and >) is a header of lib's toolkit: a relative
 * name without "..", that is a regular file under one of its include folders once
 * every link is followed. */
static bool toolkit_header(const struct nvrtc_lib *lib, const char *name) {
  if (!lib || !name[0] || name[0] == '/' || strstr(name, "..") || strstr(name, "//")) return false;
  for (const char *c = name; *c; c++)
    if (!isalnum((unsigned char)*c) && !strchr("_.-/", *c)) return false;
  for (int d = 0; d < lib->n_include_dirs; d++) {
    char path[1024], real[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", lib->include_dirs[d], name);
    if (!realpath(path, real) || stat(real, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    for (int e = 0; e < lib->n_include_dirs; e++) {
      size_t n = strlen(lib->include_dirs[e]);
      if (!strncmp(real, lib->include_dirs[e], n) && real[n] == '/') return true;
    }
  }
  return false;
}

/* The #include whose name starts at flat + i (after the directive's word): 0 when it
 * is #include <name> of a toolkit header, else -EINVAL with msg. */
static int include_check(const char *flat, size_t i, int line, const struct nvrtc_lib *lib,
                         char *msg, size_t msg_len) {
  while (flat[i] == ' ' || flat[i] == '\t') i++;
  if (flat[i] != '<') {
    snprintf(msg, msg_len,
             "line %d: only the CUDA toolkit's headers may be included, as #include <name> "
             "(not a quoted or computed name)",
             line);
    return -EINVAL;
  }
  size_t end = i + 1;
  while (flat[end] && flat[end] != '>' && flat[end] != '\n') end++;
  char name[256];
  size_t len = end - i - 1;
  snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1),
           flat + i + 1);
  if (flat[end] != '>' || len >= sizeof name || !toolkit_header(lib, name)) {
    snprintf(msg, msg_len,
             "line %d: #include <%.80s> is not a header of the CUDA toolkit%s (its include/ "
             "and include/cccl/ folders, by a relative name)",
             line, name, lib && lib->n_include_dirs ? "" : ", and none was found beside NVRTC");
    return -EINVAL;
  }
  return 0;
}

int ucompile_source_check(const char *source, const struct nvrtc_lib *lib, int *line, char *msg,
                          size_t msg_len) {
  *line = 0;
  size_t n = strlen(source);
  char *flat = malloc(n + 1);
  int *lines = malloc((n + 1) * sizeof *lines);
  int rc = 0;
  if (!flat || !lines) {
    rc = -ENOMEM;
    snprintf(msg, msg_len, "out of memory");
    goto out;
  }
  flatten(source, flat, lines);
  for (size_t i = 0; flat[i];) {
    while (flat[i] == ' ' || flat[i] == '\t' || flat[i] == '\r' || flat[i] == '\f' ||
           flat[i] == '\v')
      i++;
    bool hash = false;
    if (flat[i] == '#')
      hash = true, i++;
    else if (flat[i] == '%' && flat[i + 1] == ':')
      hash = true, i += 2;
    if (hash) {
      while (flat[i] == ' ' || flat[i] == '\t') i++;
      size_t w = i;
      while (isalnum((unsigned char)flat[i]) || flat[i] == '_') i++;
      size_t wl = i - w;
      if (wl == 7 && !strncmp(flat + w, "include", 7)) {
        if ((rc = include_check(flat, i, lines[w], lib, msg, msg_len))) {
          *line = lines[w];
          goto out;
        }
      }
      static const char *const banned[] = {"include_next", "import", "embed"};
      for (size_t b = 0; b < sizeof banned / sizeof banned[0]; b++) {
        if (wl == strlen(banned[b]) && !strncmp(flat + w, banned[b], wl)) {
          *line = lines[w];
          snprintf(msg, msg_len,
                   "line %d: #%s is not allowed: send device code as one source (the "
                   "CUDA toolkit's headers come with #include <name>)",
                   *line, banned[b]);
          rc = -EINVAL;
          goto out;
        }
      }
    }
    while (flat[i] && flat[i] != '\n') i++;
    if (flat[i]) i++;
  }
out:
  free(flat);
  free(lines);
  return rc;
}

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The first line of source where word stands as a whole word outside comments and
 * literals, or 0. */
static int word_line(const char *source, const char *word) {
  size_t n = strlen(source), wl = strlen(word);
  char *flat = malloc(n + 1);
  int *lines = malloc((n + 1) * sizeof *lines), line = 0;
  if (flat && lines) {
    flatten(source, flat, lines);
    char quote = 0;
    for (size_t i = 0; flat[i] && !line; i++) {
      if (quote) {
        if (flat[i] == '\\' && flat[i + 1])
          i++;
        else if (flat[i] == quote || flat[i] == '\n')
          quote = 0;
      } else if (flat[i] == '"' || flat[i] == '\'') {
        quote = flat[i];
      } else if (!strncmp(flat + i, word, wl) && (i == 0 || !ident_char(flat[i - 1])) &&
                 !ident_char(flat[i + wl])) {
        line = lines[i];
      }
    }
  }
  free(flat);
  free(lines);
  return line;
}

/* ---- the log ---- */

bool ucompile_first_error(const char *log, const char *name, int *line, char *error,
                          size_t error_len) {
  *line = 0;
  if (error_len) error[0] = '\0';
  size_t nl = strlen(name);
  for (const char *p = log; p && *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *hit = NULL;
    for (const char *q = p; q + 7 <= p + len; q++)
      if (!strncmp(q, " error", 6) && (q[6] == ':' || q[6] == ' ')) {
        hit = q;
        break;
      }
    if (hit) {
      if (len > nl + 2 && !strncmp(p, name, nl) && p[nl] == '(') *line = atoi(p + nl + 1);
      const char *text = p;
      while (text < p + len && (*text == ' ' || *text == '\t')) text++;
      snprintf(error, error_len, "%.*s", (int)(p + len - text), text);
      return true;
    }
    p = end ? end + 1 : NULL;
  }
  return false;
}

/* Scans the integer before `suffix` on line [p, p + len): -1 when absent. */
static int number_before(const char *p, size_t len, const char *suffix) {
  size_t sl = strlen(suffix);
  for (const char *q = p; q + sl <= p + len; q++) {
    if (strncmp(q, suffix, sl) != 0) continue;
    const char *d = q;
    while (d > p && d[-1] == ' ') d--;
    const char *e = d;
    while (d > p && isdigit((unsigned char)d[-1])) d--;
    if (d == e) continue;
    return atoi(d);
  }
  return -1;
}

void ucompile_parse_usage(const char *log, const char *entry, struct ucompile_report *r) {
  r->has_usage = false;
  char head[160];
  snprintf(head, sizeof head, "Compiling entry function '%s'", entry);
  const char *p = log ? strstr(log, head) : NULL;
  if (!p) return;
  p += strlen(head);
  const char *stop = strstr(p, "Compiling entry function '");
  for (;;) {
    const char *end = strchr(p, '\n');
    if (!end || (stop && p >= stop)) break;
    size_t len = (size_t)(end - p);
    int v;
    if ((v = number_before(p, len, "bytes stack frame")) >= 0) r->stack_bytes = v;
    if ((v = number_before(p, len, "bytes spill stores")) >= 0) r->spill_store_bytes = v;
    if ((v = number_before(p, len, "bytes spill loads")) >= 0) r->spill_load_bytes = v;
    if ((v = number_before(p, len, "registers")) >= 0) r->registers = v, r->has_usage = true;
    if ((v = number_before(p, len, "barriers")) >= 0) r->barriers = v;
    if ((v = number_before(p, len, "bytes smem")) >= 0) r->shared_bytes = v;
    p = end + 1;
  }
}

/* ---- compiling ---- */

static int flow_cancel(void *payload, void *reserved) {
  (void)reserved;
  return clock_mono_s() > *(const double *)payload ? 1 : 0;
}

/* A program name safe inside #line "...": [A-Za-z0-9_.-], else "kernel.cu". */
static void safe_name(const char *name, char *out, size_t out_len) {
  bool ok = name && name[0] && strlen(name) < out_len;
  for (const char *c = name; ok && *c; c++)
    ok = isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-';
  snprintf(out, out_len, "%s", ok ? name : "kernel.cu");
}

/* The source NVRTC sees: the signature's declaration, a #line back to 1, the user's. */
/* req's declaration with its entry's name (gpulab's own text has one %s for it) into
 * decl: 0, or -1 when it does not fit (decl "" when there is no declaration). */
static int declaration_of(const struct ucompile_req *req, char *decl, size_t len) {
  decl[0] = '\0';
  if (!req->declaration) return 0;
  const char *s = strstr(req->declaration, "%s");
  if (!s || strlen(req->declaration) + strlen(req->entry) >= len) return -1;
  size_t head = (size_t)(s - req->declaration), el = strlen(req->entry);
  memcpy(decl, req->declaration, head);
  memcpy(decl + head, req->entry, el);
  strcpy(decl + head + el, s + 2); /* fits: checked above */
  return 0;
}

/* A declaration's bytes at most: a problem's signature (api/problem_def.h: 2048) with
 * its prelude of includes. */
#define DECL_MAX 2304

static char *full_source(const struct ucompile_req *req, const char *name) {
  char decl[DECL_MAX];
  if (declaration_of(req, decl, sizeof decl)) return NULL;
  size_t n = strlen(decl) + strlen(name) + strlen(req->source) + 32;
  char *src = malloc(n);
  if (src) snprintf(src, n, "%s\n#line 1 \"%s\"\n%s", decl, name, req->source);
  return src;
}

/* The line of the source behind a refusal of word (uimage.stateful_word): the call, or
 * the new or delete that makes it. */
static int stateful_line(const char *source, const char *word) {
  int line = word_line(source, word);
  if (!line && !strcmp(word, "malloc")) line = word_line(source, "new");
  if (!line && !strcmp(word, "free")) line = word_line(source, "delete");
  return line;
}

/* Reads what r's image keeps across launches (uimage.h). A kernel whose state no
 * runner can put back is refused here: ok false, its image dropped, error saying why.
 * Returns 0, or -EIO / -ENOMEM with msg (an image that cannot be read). */
static int check_state(const struct ucompile_req *req, struct ucompile_report *r, char *msg,
                       size_t msg_len) {
  struct uimage im;
  int rc = uimage_inspect(r->image, r->image_bytes, &im, msg, msg_len);
  if (rc) return rc == -ENOMEM ? -ENOMEM : -EIO;
  r->n_vars = im.n_vars;
  r->var_bytes = im.var_bytes;
  if (im.stateful[0]) {
    snprintf(r->error, sizeof r->error, "%s", im.stateful);
    r->error_line = stateful_line(req->source, im.stateful_word);
  } else if (req->max_var_bytes && im.var_bytes > req->max_var_bytes) {
    snprintf(r->error, sizeof r->error,
             "its module-scope variables hold %llu bytes; at most %llu are put back before every "
             "launch: ask for scratch_bytes instead",
             (unsigned long long)im.var_bytes, (unsigned long long)req->max_var_bytes);
  }
  uimage_release(&im);
  if (r->error[0]) {
    r->stateful = true;
    r->ok = false;
    free(r->image);
    free(r->ptx);
    r->image = NULL;
    r->image_bytes = 0;
    r->ptx = NULL;
  }
  return 0;
}

int ucompile_declaration_scratch(const char *decl, char *out, size_t out_len) {
  const char *close = strrchr(decl, ')');
  if (!close || !strchr(decl, '(')) return -EINVAL;
  int n = snprintf(out, out_len, "%.*s, void *scratch%s", (int)(close - decl), decl, close);
  return n < 0 || (size_t)n >= out_len ? -EINVAL : 0;
}

static bool entry_ok(const char *entry) {
  return entry && strlen(entry) < 64 && is_ident(entry, strlen(entry));
}

/* The parameter list of entry's definition that starts on line of source, "(...)"
 * with its spaces collapsed, into out; "" when none starts there. */
static void declared_params(const char *source, const char *entry, int line, char *out,
                            size_t len) {
  out[0] = '\0';
  const char *p = source;
  for (int l = 1; p && l < line; l++) p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL;
  size_t el = strlen(entry);
  for (const char *q = p; q && *q && *q != '\n'; q++) {
    if (strncmp(q, entry, el) || (q > source && ident_char(q[-1])) || ident_char(q[el])) continue;
    const char *open = q + el;
    while (*open == ' ' || *open == '\t') open++;
    if (*open != '(') continue;
    size_t o = 0;
    int depth = 0;
    for (const char *c = open; *c && o + 1 < len; c++) {
      bool space = isspace((unsigned char)*c);
      if (!space || (o > 0 && out[o - 1] != ' ')) out[o++] = space ? ' ' : *c;
      depth += *c == '(' ? 1 : *c == ')' ? -1 : 0;
      if (depth == 0) break;
    }
    out[o] = '\0';
    return;
  }
}

/* NVRTC says "more than one instance of overloaded function" when the user's entry
 * has other parameters than the experiment's declaration (both extern "C"): r's error
 * says instead which signature the experiment expects and what the kernel declared. */
static void say_signature(const struct ucompile_req *req, struct ucompile_report *r) {
  char decl[DECL_MAX], params[256];
  if (!strstr(r->error, "more than one instance of overloaded function") ||
      declaration_of(req, decl, sizeof decl) || !decl[0])
    return;
  size_t n = strlen(decl);
  if (n && decl[n - 1] == ';') decl[n - 1] = '\0';
  const char *sig = strrchr(decl, '\n') ? strrchr(decl, '\n') + 1 : decl; /* past includes */
  declared_params(req->source, req->entry, r->error_line, params, sizeof params);
  snprintf(r->error, sizeof r->error,
           "line %d: %s does not have the %s's signature: it must be %s (gpulab declares it "
           "ahead of your source), and this declares %s%s",
           r->error_line, req->entry, req->signature_of ? req->signature_of : "experiment", sig,
           req->entry, params[0] ? params : "(...)");
}

/* NVRTC names the program in PTX's .file lines by the compiling process' working
 * directory (with -lineinfo: `.file 1 "/srv/gpulab/k.cu"`): that folder of the server
 * is no user's business, so it goes, in place, leaving "k.cu". */
static void ptx_strip_cwd(char *ptx) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd - 1)) return;
  strcat(cwd, "/");
  size_t n = strlen(cwd);
  char *out = ptx;
  for (const char *in = ptx; *in;) { /* a line at a time, moved down over what went */
    const char *eol = strchr(in, '\n'), *end = eol ? eol + 1 : in + strlen(in);
    const char *word = in + strspn(in, " \t"), *quote = memchr(in, '"', (size_t)(end - in));
    if (!strncmp(word, ".file", 5) && quote && (size_t)(end - quote) > n &&
        !strncmp(quote + 1, cwd, n)) {
      size_t head = (size_t)(quote + 1 - in);
      memmove(out, in, head);
      out += head;
      in = quote + 1 + n;
    }
    memmove(out, in, (size_t)(end - in));
    out += end - in;
    in = end;
  }
  *out = '\0';
}

/* A compile that succeeded into r: its usage, whether it defines the entry, its CUBIN
 * and whether that keeps state across launches (check_state). 0, or -errno with msg. */
static int take_image(const struct nvrtc_fns *f, nvrtc_program prog, const struct ucompile_req *req,
                      struct ucompile_report *r, char *msg, size_t msg_len) {
  ucompile_parse_usage(r->log, req->entry, r);
  /* ptxas -v lists each entry it compiled: one not among them was only declared (the
   * signature's declaration) or not extern "C". */
  char head[128];
  snprintf(head, sizeof head, "Compiling entry function '%s'", req->entry);
  if (strstr(r->log, "Compiling entry function '") && !strstr(r->log, head)) {
    snprintf(r->error, sizeof r->error, "no extern \"C\" __global__ function named %s is defined",
             req->entry);
    return 0;
  }
  size_t bytes = 0;
  if (f->get_cubin_size(prog, &bytes) != NVRTC_LOADER_SUCCESS || bytes == 0 ||
      !(r->image = malloc(bytes)) || f->get_cubin(prog, r->image) != NVRTC_LOADER_SUCCESS) {
    snprintf(msg, msg_len, "NVRTC gave no CUBIN");
    return -EIO;
  }
  r->image_bytes = bytes;
  r->ok = true;
  /* The PTX of an sm_XX compile comes beside its CUBIN: the compiler's view that the
   * API shows (GET /kernels/{id}/ptx). None is no failure: the kernel still runs. */
  bytes = 0;
  if (f->get_ptx_size(prog, &bytes) == NVRTC_LOADER_SUCCESS && bytes > 0 &&
      (r->ptx = calloc(bytes + 1, 1)) && f->get_ptx(prog, r->ptx) != NVRTC_LOADER_SUCCESS) {
    free(r->ptx);
    r->ptx = NULL;
  }
  if (r->ptx) ptx_strip_cwd(r->ptx);
  return check_state(req, r, msg, msg_len);
}

int ucompile_run(const struct nvrtc_lib *lib, const struct ucompile_req *req,
                 struct ucompile_report **out, char *msg, size_t msg_len) {
  *out = NULL;
  const struct nvrtc_fns *f = &lib->fn;
  struct ucompile_report *r = NULL;
  nvrtc_program prog = NULL;
  char *src = NULL;
  const char **opts = NULL;
  int rc = ucompile_options_check(req->options, req->n_options, msg, msg_len);
  if (rc) return rc;
  if (!entry_ok(req->entry)) {
    snprintf(msg, msg_len, "entry must be a C identifier of at most 63 characters");
    return -EINVAL;
  }
  int line;
  if ((rc = ucompile_source_check(req->source, lib, &line, msg, msg_len))) return rc;
  char name[64];
  safe_name(req->name, name, sizeof name);
  rc = -ENOMEM;
  r = calloc(1, sizeof *r);
  src = full_source(req, name);
  opts = calloc((size_t)req->n_options + 6, sizeof *opts);
  if (!r || !src || !opts) {
    snprintf(msg, msg_len, "out of memory");
    goto fail;
  }
  r->arch = req->arch;
  char arch_opt[40];
  snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=sm_%d", req->arch);
  int n = 0;
  opts[n++] = arch_opt;
  opts[n++] = "--ptxas-options=-v";
  /* From 12.9 NVRTC keeps its output in the driver's compute cache (~/.nv): a hit skips
   * ptxas, and its log, so the report would lose the kernel's registers and spills.
   * gpulab has its own cache of reports (image_cache.h). */
  if (lib->major > 12 || (lib->major == 12 && lib->minor >= 9)) opts[n++] = "--no-cache";
  char include_opt[2][sizeof lib->include_dirs[0] + 4]; /* the toolkit's headers only */
  for (int d = 0; d < lib->n_include_dirs && d < 2; d++) {
    snprintf(include_opt[d], sizeof include_opt[d], "-I%s", lib->include_dirs[d]);
    opts[n++] = include_opt[d];
  }
  for (int i = 0; i < req->n_options; i++) opts[n++] = req->options[i];
  int res = f->create_program(&prog, src, name, 0, NULL, NULL);
  if (res != NVRTC_LOADER_SUCCESS) {
    snprintf(msg, msg_len, "nvrtcCreateProgram: %s", f->error_string(res));
    rc = res == 1 ? -ENOMEM : -EIO;
    goto fail;
  }
  double deadline = clock_mono_s() + req->time_limit_s;
  if (req->time_limit_s > 0 && f->set_flow_callback)
    f->set_flow_callback(prog, flow_cancel, &deadline);
  double t0 = clock_mono_s();
  res = f->compile_program(prog, n, opts);
  r->compile_ms = (clock_mono_s() - t0) * 1e3;
  r->result = res;
  size_t log_size = 0;
  if (f->get_program_log_size(prog, &log_size) != NVRTC_LOADER_SUCCESS) log_size = 0;
  r->log = calloc(log_size + 1, 1);
  if (!r->log) {
    snprintf(msg, msg_len, "out of memory");
    goto fail;
  }
  if (log_size > 1) f->get_program_log(prog, r->log);
  if (res == NVRTC_LOADER_ERROR_CANCELLED) {
    r->timed_out = true;
    snprintf(r->error, sizeof r->error, "the compile took longer than its limit of %.3g s",
             req->time_limit_s);
  } else if (res == NVRTC_LOADER_ERROR_COMPILATION || res == NVRTC_LOADER_ERROR_INVALID_OPTION) {
    if (!ucompile_first_error(r->log, name, &r->error_line, r->error, sizeof r->error))
      snprintf(r->error, sizeof r->error, "%s", f->error_string(res));
    else
      say_signature(req, r);
  } else if (res != NVRTC_LOADER_SUCCESS) {
    snprintf(msg, msg_len, "nvrtcCompileProgram: %s", f->error_string(res));
    rc = res == 1 ? -ENOMEM : -EIO;
    goto fail;
  } else if ((rc = take_image(f, prog, req, r, msg, msg_len))) {
    goto fail;
  }
  f->destroy_program(&prog);
  free(src);
  free(opts);
  *out = r;
  return 0;
fail:
  if (prog) f->destroy_program(&prog);
  ucompile_report_free(r);
  free(src);
  free(opts);
  return rc;
}

void ucompile_report_free(struct ucompile_report *r) {
  if (!r) return;
  free(r->log);
  free(r->image);
  free(r->ptx);
  free(r);
}
