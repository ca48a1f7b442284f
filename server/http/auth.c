/* Tokens and their clients, from a tokens file. */
#include "server/http/auth.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/utf8.h"

struct entry {
  unsigned char token[AUTH_TOKEN_MAX]; /* zero-padded, so every compare reads the same bytes */
  size_t token_len;
  struct auth_client client;
};

struct auth {
  struct entry *entries;
  int n;
};

static int fail(char *err, size_t len, const char *path, int line, const char *what) {
  snprintf(err, len, "%s:%d: %s", path, line, what);
  return -EINVAL;
}

/* One "key=value" or "admin" option of a line. */
static int parse_option(char *word, struct auth_client *c) {
  char *eq = strchr(word, '=');
  if (!eq) return strcmp(word, "admin") == 0 ? (c->admin = true, 0) : -1;
  *eq = '\0';
  char *end;
  errno = 0;
  double v = strtod(eq + 1, &end);
  if (end == eq + 1 || *end || errno || v < 0) return -EINVAL;
  if (strcmp(word, "max_queued") == 0 && v >= 1 && v <= 1e6)
    c->max_queued = (int)v;
  else if (strcmp(word, "max_buffer_bytes") == 0 && v >= 1)
    c->max_buffer_bytes = (uint64_t)v;
  else if (strcmp(word, "rate") == 0 && v > 0)
    c->rate = v;
  else
    return -EINVAL;
  return 0;
}

static int parse_line(char *text, struct entry *e, const char *path, int line, char *err,
                      size_t len) {
  char *save = NULL, *token = strtok_r(text, " \t", &save), *name = strtok_r(NULL, " \t", &save);
  if (!token || !name) return fail(err, len, path, line, "expected: TOKEN NAME [options]");
  size_t n = strlen(token);
  if (n < 16 || n >= AUTH_TOKEN_MAX)
    return fail(err, len, path, line, "a token must have 16 to 127 characters");
  if (strlen(name) >= sizeof e->client.name)
    return fail(err, len, path, line, "the name is too long");
  if (!utf8_valid(name)) return fail(err, len, path, line, "the name is not UTF-8 text");
  memset(e, 0, sizeof *e);
  memcpy(e->token, token, n);
  e->token_len = n;
  snprintf(e->client.name, sizeof e->client.name, "%s", name);
  for (char *w; (w = strtok_r(NULL, " \t", &save));)
    if (parse_option(w, &e->client))
      return fail(err, len, path, line,
                  "unknown option (use max_queued=N, max_buffer_bytes=N, rate=N or admin)");
  return 0;
}

int auth_load(const char *path, struct auth **out, char *err, size_t err_len) {
  FILE *f = fopen(path, "r");
  if (!f) {
    int e = errno;
    snprintf(err, err_len, "%s: %s", path, strerror(e));
    return -e;
  }
  struct auth *a = calloc(1, sizeof *a);
  char buf[1024];
  int line = 0, cap = 0, rc = a ? 0 : fail(err, err_len, path, 0, "out of memory");
  while (rc == 0 && fgets(buf, sizeof buf, f)) {
    line++;
    if (!strchr(buf, '\n') && !feof(f)) {
      rc = fail(err, err_len, path, line, "line too long");
      break;
    }
    buf[strcspn(buf, "\r\n")] = '\0';
    char *p = buf;
    while (isspace((unsigned char)*p)) p++;
    if (!*p || *p == '#') continue;
    if (a->n == cap) {
      cap = cap ? 2 * cap : 16;
      struct entry *e = realloc(a->entries, (size_t)cap * sizeof *e);
      if (!e) {
        rc = fail(err, err_len, path, line, "out of memory");
        break;
      }
      a->entries = e;
    }
    rc = parse_line(p, &a->entries[a->n], path, line, err, err_len);
    for (int i = 0; rc == 0 && i < a->n; i++)
      if (!strcmp(a->entries[i].client.name, a->entries[a->n].client.name) ||
          !memcmp(a->entries[i].token, a->entries[a->n].token, AUTH_TOKEN_MAX))
        rc = fail(err, err_len, path, line, "a name or token given twice");
    if (rc == 0) a->n++;
  }
  fclose(f);
  if (rc == 0 && a->n == 0) rc = fail(err, err_len, path, line, "no client in the file");
  if (rc) {
    auth_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

void auth_free(struct auth *a) {
  if (!a) return;
  free(a->entries);
  free(a);
}

int auth_count(const struct auth *a) { return a->n; }

const struct auth_client *auth_check(const struct auth *a, const char *token) {
  unsigned char given[AUTH_TOKEN_MAX] = {0};
  size_t n = token ? strnlen(token, AUTH_TOKEN_MAX) : 0;
  if (n == AUTH_TOKEN_MAX) n = 0; /* longer than any token: compare as empty, still in full */
  memcpy(given, token ? token : "", n);
  const struct auth_client *found = NULL;
  for (int i = 0; i < a->n; i++) {
    unsigned diff = (unsigned)(a->entries[i].token_len ^ n);
    for (size_t k = 0; k < AUTH_TOKEN_MAX; k++) diff |= a->entries[i].token[k] ^ given[k];
    /* No early exit: every entry is compared in full. */
    const struct auth_client *mine = &a->entries[i].client;
    found = diff == 0 && n > 0 ? mine : found;
  }
  return found;
}
