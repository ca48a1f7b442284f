/* A JSON document written value by value, to one of two back-ends: compact text (the
 * bytes json_text would write for the same document, straight into one growing buffer:
 * no tree, no malloc per value) or a jansson tree, for callers that need a json_t. An
 * encoder written once against a struct jw makes either, the same document.
 *
 * jansson's rules hold in both, so that both agree with each other and with what
 * jansson's own calls built before: a value jansson refuses (a real that is not finite,
 * a string that is NULL or not valid UTF-8, a member with a NULL or invalid key) is
 * left out with its key; a container begun whole (what json_pack built) is left out
 * whole when any value in it is, and its own parent goes on without it. One key twice
 * in an object is the caller's mistake: the tree keeps the last value, the text both. */
#ifndef GPULAB_API_JSON_WRITER_H
#define GPULAB_API_JSON_WRITER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/json_text.h"

#define JW_MAX_DEPTH 16 /* containers open at once; deeper, the document fails */

/* One open container (level 0: the top, which holds the document; 1 to JW_MAX_DEPTH:
 * containers). */
struct jw_level {
  size_t mark;     /* text: the length before its comma and key */
  json_t *value;   /* tree: the container */
  const char *key; /* tree: its key in its parent, borrowed until its end */
  int n;           /* members written */
  bool object, whole, dropped;
};

/* On the caller's stack; its fields are the writer's. */
struct jw {
  struct json_text_buf text;
  json_t *root;
  bool tree;
  bool failed; /* containers that did not nest, or too deep; a second value at the top */
  int depth;
  struct jw_level level[JW_MAX_DEPTH + 1];
};

/* Starts a text document. buf (cap bytes) is the caller's, written into until the text
 * outgrows it; NULL: cap bytes are malloc'd up front (size it for the usual document:
 * the text grows by doubling). */
void jw_text_begin(struct jw *w, char *buf, size_t cap);
/* Ends it: the text, NUL-terminated, its length in *len when len is not NULL. It is buf
 * when it fit there, else malloc'd (the caller frees it when it is not buf). NULL when
 * nothing was written, the one value was left out, or the writer failed. */
char *jw_text_end(struct jw *w, size_t *len);

/* Starts a tree document. */
void jw_tree_begin(struct jw *w);
/* Ends it: a new reference, or NULL as jw_text_end. */
json_t *jw_tree_end(struct jw *w);

/* Every value takes key: its name in the object being written (borrowed; for a
 * container until its end), ignored in an array and at the top. */
void jw_object_begin(struct jw *w, const char *key);
void jw_object_begin_whole(struct jw *w, const char *key);
void jw_object_end(struct jw *w);
void jw_array_begin(struct jw *w, const char *key);
void jw_array_begin_whole(struct jw *w, const char *key);
void jw_array_end(struct jw *w);
void jw_string(struct jw *w, const char *key, const char *s);
void jw_integer(struct jw *w, const char *key, long long v);
void jw_real(struct jw *w, const char *key, double v);
void jw_bool(struct jw *w, const char *key, bool v);
void jw_null(struct jw *w, const char *key);

#endif
