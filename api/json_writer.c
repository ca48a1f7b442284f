/* A JSON document to text or to a jansson tree, value by value (json_writer.h). */
#include "api/json_writer.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void begin(struct jw *w, bool tree) {
  memset(w, 0, offsetof(struct jw, level));
  memset(&w->level[0], 0, sizeof w->level[0]);
  w->tree = tree;
}

void jw_text_begin(struct jw *w, char *buf, size_t cap) {
  begin(w, false);
  w->text.at = buf ? buf : cap ? malloc(cap) : NULL;
  w->text.cap = w->text.at ? cap : 0;
  w->text.borrowed = buf != NULL;
}

void jw_tree_begin(struct jw *w) { begin(w, true); }

char *jw_text_end(struct jw *w, size_t *len) {
  struct json_text_buf *t = &w->text;
  if (w->failed || t->failed || w->depth != 0 || w->level[0].n == 0) {
    if (!t->borrowed) free(t->at);
    return NULL;
  }
  t->at[t->len] = '\0'; /* every put kept a byte for it */
  if (len) *len = t->len;
  return t->at;
}

json_t *jw_tree_end(struct jw *w) {
  if (!w->failed && w->depth == 0) return w->root;
  for (; w->depth > 0; w->depth--) json_decref(w->level[w->depth].value);
  json_decref(w->root);
  return NULL;
}

/* The member being written in the current container was left out: a whole container
 * goes with it (at its end). */
static void left_out(struct jw *w) {
  struct jw_level *l = &w->level[w->depth];
  if (l->whole) l->dropped = true;
}

/* Text: a member of the current container starts (its comma, its key); *mark: the length
 * before them. false: nothing is to be written (a container left out, no key in an
 * object, a key that is not UTF-8: left out, the text as it was). */
static bool text_open(struct jw *w, const char *key, size_t *mark) {
  struct jw_level *l = &w->level[w->depth];
  struct json_text_buf *t = &w->text;
  *mark = t->len;
  if (w->failed || l->dropped) return false;
  if (w->depth == 0 && l->n > 0) { /* a second document */
    w->failed = true;
    return false;
  }
  if (l->object && !key) {
    left_out(w);
    return false;
  }
  if (l->n > 0) json_text_put_char(t, ',');
  if (l->object) {
    if (!json_text_put_string(t, key, strlen(key))) {
      t->len = *mark;
      left_out(w);
      return false;
    }
    json_text_put_char(t, ':');
  }
  return true;
}

/* Tree: v (stolen; NULL: jansson refused it) joins the current container. */
static void tree_add(struct jw *w, const char *key, json_t *v) {
  struct jw_level *l = &w->level[w->depth];
  int rc = -1;
  if (!v || w->failed || l->dropped) {
    json_decref(v);
  } else if (w->depth == 0 && w->root) { /* a second document */
    json_decref(v);
    w->failed = true;
  } else if (w->depth == 0) {
    w->root = v;
    rc = 0;
  } else if (l->object) {
    rc = json_object_set_new(l->value, key, v); /* a NULL or invalid key: -1, v freed */
  } else {
    rc = json_array_append_new(l->value, v);
  }
  if (rc == 0)
    l->n++;
  else
    left_out(w);
}

static void begin_container(struct jw *w, const char *key, bool object, bool whole) {
  if (w->depth == JW_MAX_DEPTH) {
    w->failed = true;
    return;
  }
  struct jw_level *parent = &w->level[w->depth];
  struct jw_level l = {.key = key, .object = object, .whole = whole};
  l.dropped = w->failed || parent->dropped;
  if (w->tree) {
    l.value = l.dropped ? NULL : object ? json_object() : json_array();
    l.dropped = l.dropped || !l.value;
  } else if (!text_open(w, key, &l.mark)) {
    l.dropped = true;
  } else {
    json_text_put_char(&w->text, object ? '{' : '[');
  }
  w->level[++w->depth] = l;
}

static void end_container(struct jw *w, bool object) {
  if (w->depth == 0 || w->level[w->depth].object != object) {
    w->failed = true; /* more ends than begins, or the wrong end */
    return;
  }
  struct jw_level l = w->level[w->depth--];
  if (w->tree) {
    if (l.dropped) {
      json_decref(l.value);
      left_out(w);
    } else {
      tree_add(w, l.key, l.value);
    }
    return;
  }
  if (l.dropped) {
    w->text.len = l.mark;
    left_out(w);
    return;
  }
  json_text_put_char(&w->text, object ? '}' : ']');
  w->level[w->depth].n++;
}

void jw_object_begin(struct jw *w, const char *key) { begin_container(w, key, true, false); }
void jw_object_begin_whole(struct jw *w, const char *key) { begin_container(w, key, true, true); }
void jw_object_end(struct jw *w) { end_container(w, true); }
void jw_array_begin(struct jw *w, const char *key) { begin_container(w, key, false, false); }
void jw_array_begin_whole(struct jw *w, const char *key) { begin_container(w, key, false, true); }
void jw_array_end(struct jw *w) { end_container(w, false); }

/* Text: the n bytes at s as a member's value (a number or a constant). */
static void text_raw(struct jw *w, const char *key, const char *s, size_t n) {
  size_t mark;
  if (!text_open(w, key, &mark)) return;
  json_text_put(&w->text, s, n);
  w->level[w->depth].n++;
}

void jw_string(struct jw *w, const char *key, const char *s) {
  if (w->tree) {
    tree_add(w, key, json_string(s)); /* NULL s: NULL */
    return;
  }
  size_t mark;
  if (!s) {
    left_out(w);
    return;
  }
  if (!text_open(w, key, &mark)) return;
  if (json_text_put_string(&w->text, s, strlen(s))) {
    w->level[w->depth].n++;
  } else {
    w->text.len = mark;
    left_out(w);
  }
}

void jw_integer(struct jw *w, const char *key, long long v) {
  if (w->tree) {
    tree_add(w, key, json_integer(v));
    return;
  }
  char num[24];
  text_raw(w, key, num, (size_t)json_text_integer(v, num));
}

void jw_real(struct jw *w, const char *key, double v) {
  if (w->tree) {
    tree_add(w, key, json_real(v)); /* not finite: NULL */
    return;
  }
  if (!isfinite(v)) {
    left_out(w);
    return;
  }
  char num[40];
  text_raw(w, key, num, (size_t)json_text_real(v, num));
}

void jw_bool(struct jw *w, const char *key, bool v) {
  if (w->tree) {
    tree_add(w, key, json_boolean(v));
    return;
  }
  text_raw(w, key, v ? "true" : "false", v ? 4 : 5);
}

void jw_null(struct jw *w, const char *key) {
  if (w->tree) {
    tree_add(w, key, json_null());
    return;
  }
  text_raw(w, key, "null", 4);
}
