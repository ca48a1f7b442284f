/* Users' kernels as a service (ukernels.h): NVRTC, the cache, the compile slots, the
 * stored kernels put in the backends' table. */
#include "server/service/ukernels.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "kernels/core/occupancy.h"
#include "kernels/user/uimage.h"
#include "kernels/user/ukreg.h"
#include "server/log.h"

struct ukernels {
  struct ukernels_config cfg;
  struct nvrtc_lib *nvrtc;
  char nvrtc_why[1024];
  struct image_cache *cache;
  struct store *store, *own; /* own: opened here (":memory:") when none was given */
  pthread_mutex_t mu;        /* the compile slots */
  pthread_cond_t freed;
  int busy;
};

/* Why a stored image may not run under today's rules (ucompile's check_state): state no
 * runner can put back before a launch. Fills why, "" when it may run. */
static void stored_refusal(const void *image, size_t bytes, char *why, size_t why_len) {
  why[0] = '\0';
  if (!image) return;
  void *copy = (uintptr_t)image % 8 ? malloc(bytes) : NULL; /* uimage reads it aligned */
  if (copy) memcpy(copy, image, bytes);
  struct uimage im;
  char msg[160];
  if (uimage_inspect(copy ? copy : image, bytes, &im, msg, sizeof msg) != 0)
    snprintf(why, why_len, "its image cannot be read: %s", msg);
  else if (!strcmp(im.stateful_word, "__managed__"))
    snprintf(why, why_len, "it has a __managed__ variable (stateful_kernel)");
  else if (im.stateful[0])
    snprintf(why, why_len, "it calls %s, the device heap (stateful_kernel)", im.stateful_word);
  else if (im.var_bytes > UCOMPILE_MAX_VAR_BYTES)
    snprintf(why, why_len, "its variables hold %llu bytes (stateful_kernel)",
             (unsigned long long)im.var_bytes);
  uimage_release(&im);
  free(copy);
}

/* A stored kernel into the backends' table (ukreg.h): its image, launch and identity,
 * and whether today's rules refuse it (stored_refusal). */
int ukernels_register(const struct store_kernel *row) {
  struct ukreg_kernel k;
  memset(&k, 0, sizeof k);
  k.id = row->id;
  k.kernel_id = row->kernel_id;
  k.version = row->version;
  snprintf(k.experiment, sizeof k.experiment, "%s", row->experiment);
  snprintf(k.name, sizeof k.name, "%s", row->name);
  snprintf(k.owner, sizeof k.owner, "%s", row->owner);
  snprintf(k.source_sha, sizeof k.source_sha, "%s", row->source_sha);
  json_t *spec = json_loads(row->spec ? row->spec : "{}", 0, NULL);
  json_t *rep = json_loads(row->report ? row->report : "{}", 0, NULL);
  snprintf(k.entry, sizeof k.entry, "%s",
           json_string_value(json_object_get(spec, "entry"))
               ? json_string_value(json_object_get(spec, "entry"))
               : "kernel");
  for (int i = 0; i < 3; i++) {
    k.block[i] = (int)json_integer_value(json_array_get(json_object_get(spec, "block"), (size_t)i));
    k.grid[i] = (int)json_integer_value(json_array_get(json_object_get(spec, "grid"), (size_t)i));
    if (i < 2)
      k.tile[i] = (int)json_integer_value(json_array_get(json_object_get(spec, "tile"), (size_t)i));
    if (k.block[i] < 1) k.block[i] = 1;
  }
  k.has_grid = json_object_get(spec, "grid") != NULL;
  if (json_object_get(spec, "problem")) { /* a problem's: its grid is expressions */
    k.has_grid = false;
    for (int i = 0; i < 3; i++) {
      json_t *g = json_array_get(json_object_get(spec, "grid"), (size_t)i);
      if (json_is_string(g))
        snprintf(k.grid_expr[i], sizeof k.grid_expr[i], "%s", json_string_value(g));
      else
        snprintf(k.grid_expr[i], sizeof k.grid_expr[i], "%lld", (long long)json_integer_value(g));
    }
    const char *sig = json_string_value(json_object_get(spec, "problem_signature_sha256"));
    snprintf(k.problem_sig, sizeof k.problem_sig, "%s", sig ? sig : "");
  }
  k.shared_bytes = (int)json_integer_value(json_object_get(spec, "shared_bytes"));
  k.scratch_bytes = (long long)json_integer_value(json_object_get(spec, "scratch_bytes"));
  k.cooperative = json_is_true(json_object_get(spec, "cooperative"));
  k.registers = (int)json_integer_value(json_object_get(rep, "registers"));
  k.static_shared_bytes = (int)json_integer_value(json_object_get(rep, "shared_bytes"));
  k.stack_bytes = (int)json_integer_value(json_object_get(rep, "stack_bytes"));
  k.spill_bytes = (int)(json_integer_value(json_object_get(rep, "spill_store_bytes")) +
                        json_integer_value(json_object_get(rep, "spill_load_bytes")));
  json_decref(spec);
  json_decref(rep);
  k.image = row->image;
  k.image_bytes = row->image_bytes;
  if (row->image) image_sha256(row->image, row->image_bytes, k.key);
  stored_refusal(row->image, row->image_bytes, k.refused, sizeof k.refused);
  if (k.refused[0]) log_warn("kernel %lld (%s) is not run: %s", (long long)k.id, k.name, k.refused);
  return ukreg_put(&k);
}

struct preload {
  long long *ids;
  int n, cap;
};

/* A listing has no images: ids only, each read in full after. */
static void preload_version(void *arg, const struct store_kernel *head) {
  struct preload *p = arg;
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 64;
    long long *ids = realloc(p->ids, sizeof *ids * (size_t)cap);
    if (!ids) return;
    p->ids = ids, p->cap = cap;
  }
  p->ids[p->n++] = head->id;
}

static void preload_kernel(void *arg, const struct store_kernel *head) {
  struct preload *kernels = arg;
  int n = kernels->n;
  preload_version(kernels, head); /* its newest version's id: the kernel's below */
  if (kernels->n > n) kernels->ids[n] = head->kernel_id;
}

/* Every stored version of every kernel into the backends' table; returns how many. */
static int preload(struct store *s) {
  struct preload kernels = {0}, p = {0};
  store_kernel_list(s, NULL, NULL, preload_kernel, &kernels);
  for (int i = 0; i < kernels.n; i++) store_kernel_versions(s, kernels.ids[i], preload_version, &p);
  free(kernels.ids);
  int loaded = 0;
  for (int i = 0; i < p.n; i++) {
    struct store_kernel row;
    if (store_kernel_get(s, p.ids[i], &row) == 0) {
      loaded += ukernels_register(&row) == 0;
      store_kernel_clear(&row);
    }
  }
  free(p.ids);
  return loaded;
}

int ukernels_new(const struct ukernels_config *cfg, struct ukernels **out, char *err,
                 size_t err_len) {
  *out = NULL;
  struct ukernels *u = calloc(1, sizeof *u);
  if (!u) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  u->cfg = *cfg;
  struct ukernels_config *c = &u->cfg;
  if (c->arch <= 0) c->arch = UCOMPILE_DEFAULT_ARCH;
  if (c->max_per_client <= 0) c->max_per_client = 32;
  if (c->max_versions <= 0) c->max_versions = 64;
  if (c->max_source_bytes == 0) c->max_source_bytes = 64 << 10;
  if (c->compile_time_s <= 0) c->compile_time_s = 10;
  if (c->compile_slots <= 0) c->compile_slots = 2;
  if (c->compile_wait_s <= 0) c->compile_wait_s = 5;
  if (c->cache_bytes == 0) c->cache_bytes = 64u << 20;
  if (c->max_shared_optin <= 0) c->max_shared_optin = 227 << 10;
  if (c->max_var_bytes == 0) c->max_var_bytes = UCOMPILE_MAX_VAR_BYTES;
  pthread_mutex_init(&u->mu, NULL);
  pthread_cond_init(&u->freed, NULL);
  if (c->nvrtc_path && !strcmp(c->nvrtc_path, "none")) {
    snprintf(u->nvrtc_why, sizeof u->nvrtc_why, "gpulabd runs with --nvrtc none");
  } else if (nvrtc_lib_open(c->nvrtc_path, &u->nvrtc, u->nvrtc_why, sizeof u->nvrtc_why)) {
    log_warn("users' kernels: no NVRTC, POST /kernels answers 503: %s", u->nvrtc_why);
  } else if (!nvrtc_lib_supports(u->nvrtc, c->arch)) {
    log_warn("users' kernels: NVRTC %d.%d cannot compile for sm_%d", u->nvrtc->major,
             u->nvrtc->minor, c->arch);
  } else {
    log_info("users' kernels: NVRTC %d.%d (%s), sm_%d", u->nvrtc->major, u->nvrtc->minor,
             u->nvrtc->path, c->arch);
  }
  u->store = c->store;
  if (image_cache_new(c->cache_bytes, &u->cache)) {
    snprintf(err, err_len, "out of memory");
    ukernels_free(u);
    return -1;
  }
  if (!u->store) { /* --db none: the kernels are kept for this run only */
    char why[320];
    if (store_open(":memory:", &u->own, why, sizeof why)) {
      snprintf(err, err_len, "a store in memory for the kernels: %s", why);
      ukernels_free(u);
      return -1;
    }
    u->store = u->own;
  }
  int n = preload(u->store);
  if (n) log_info("users' kernels: %d stored kernel(s) ready to run", n);
  *out = u;
  return 0;
}

void ukernels_free(struct ukernels *u) {
  if (!u) return;
  store_close(u->own);
  image_cache_free(u->cache);
  nvrtc_lib_free(u->nvrtc);
  pthread_cond_destroy(&u->freed);
  pthread_mutex_destroy(&u->mu);
  free(u);
}

const struct ukernels_config *ukernels_config(const struct ukernels *u) { return &u->cfg; }
struct store *ukernels_store(struct ukernels *u) {
  return u->store;
}

const struct nvrtc_lib *ukernels_nvrtc(const struct ukernels *u, const char **why) {
  if (!u->nvrtc && why) *why = u->nvrtc_why;
  return u->nvrtc;
}

int ukernels_insert(struct ukernels *u, const struct store_kernel *k, int64_t *id, int *version) {
  return store_kernel_insert(u->store, k, id, version);
}

int ukernels_get(struct ukernels *u, int64_t id, struct store_kernel *out) {
  return u ? store_kernel_get(u->store, id, out) : -ENOENT;
}

struct pick {
  int want, n; /* want: a version's number, 0: the newest */
  int64_t id;  /* the version found, 0: none */
};

static void pick_version(void *arg, const struct store_kernel *k) {
  struct pick *p = arg;
  p->n++;
  if (p->want == 0 || k->version == p->want) p->id = k->id; /* oldest first: the last is newest */
}

int ukernels_version(struct ukernels *u, int64_t kernel_id, int version, struct store_kernel *out,
                     int *versions) {
  memset(out, 0, sizeof *out);
  if (versions) *versions = 0;
  if (!u) return -ENOENT;
  struct pick p = {.want = version};
  int rc = store_kernel_versions(u->store, kernel_id, pick_version, &p);
  if (rc < 0) return rc;
  if (versions) *versions = p.n;
  return p.id ? store_kernel_get(u->store, p.id, out) : -ENOENT;
}

int ukernels_delete(struct ukernels *u, int64_t id) {
  int rc = store_kernel_delete(u->store, id);
  if (rc == 0) ukreg_remove(id);
  return rc;
}

int ukernels_drop(struct ukernels *u, int64_t kernel_id) {
  struct preload p = {0};
  int rc = store_kernel_versions(u->store, kernel_id, preload_version, &p);
  if (rc >= 0) rc = store_kernel_drop(u->store, kernel_id);
  for (int i = 0; rc == 0 && i < p.n; i++) ukreg_remove(p.ids[i]);
  free(p.ids);
  return rc;
}

int ukernels_list(struct ukernels *u, const char *owner, const char *experiment,
                  void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  return u ? store_kernel_list(u->store, owner, experiment, fn, arg) : 0;
}

int ukernels_versions(struct ukernels *u, int64_t kernel_id,
                      void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  return u ? store_kernel_versions(u->store, kernel_id, fn, arg) : 0;
}

int ukernels_named(struct ukernels *u, const char *owner, const char *experiment, const char *name,
                   int64_t *ids, int max) {
  return u ? store_kernel_named(u->store, owner, experiment, name, ids, max) : 0;
}

int ukernels_count(struct ukernels *u, const char *owner, int *n, size_t *source_bytes) {
  *n = 0;
  *source_bytes = 0;
  return u ? store_kernel_count(u->store, owner, n, source_bytes) : 0;
}

void ukernels_clear(struct store_kernel *k) { store_kernel_clear(k); }

const char *ukernels_refused(int64_t id, char *why, size_t why_len) {
  struct ukreg_kernel reg;
  if (ukreg_identity(id, &reg) != 0 || !reg.refused[0]) return NULL;
  snprintf(why, why_len, "%s", reg.refused);
  return why;
}

int ukernels_compile(struct ukernels *u, struct ucompile_req *req, struct ucompile_report **out,
                     bool *cached, char *msg, size_t msg_len) {
  *out = NULL;
  *cached = false;
  if (!u->nvrtc) {
    snprintf(msg, msg_len, "%s", u->nvrtc_why);
    return -ENODEV;
  }
  req->arch = u->cfg.arch;
  req->time_limit_s = u->cfg.compile_time_s;
  req->max_var_bytes = u->cfg.max_var_bytes;
  /* A cached answer needs no slot. */
  uint8_t key[IMAGE_KEY_BYTES];
  if (image_cache_key(req, u->nvrtc->major, u->nvrtc->minor, key) == 0 &&
      ucompile_options_check(req->options, req->n_options, msg, msg_len) == 0 &&
      image_cache_get(u->cache, key, out) == 0) {
    *cached = true;
    return 0;
  }
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  double w = u->cfg.compile_wait_s;
  until.tv_sec += (time_t)w;
  until.tv_nsec += (long)((w - (double)(time_t)w) * 1e9);
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&u->mu);
  int rc = 0;
  while (u->busy >= u->cfg.compile_slots && rc == 0)
    rc = pthread_cond_timedwait(&u->freed, &u->mu, &until);
  if (u->busy >= u->cfg.compile_slots) {
    pthread_mutex_unlock(&u->mu);
    snprintf(msg, msg_len, "%d compiles are running (--compile-slots); try again shortly", u->busy);
    return -EBUSY;
  }
  u->busy++;
  pthread_mutex_unlock(&u->mu);
  rc = image_cache_compile(u->cache, u->nvrtc, req, out, cached, msg, msg_len);
  pthread_mutex_lock(&u->mu);
  u->busy--;
  pthread_cond_signal(&u->freed);
  pthread_mutex_unlock(&u->mu);
  return rc;
}

json_t *ukernels_report_json(const struct ukernels *u, const struct ucompile_report *r,
                             bool cached) {
  const struct nvrtc_lib *lib = u->nvrtc;
  char arch[16], nvrtc[16], sha[65] = "";
  snprintf(arch, sizeof arch, "sm_%d", r->arch);
  snprintf(nvrtc, sizeof nvrtc, "%d.%d", lib ? lib->major : 0, lib ? lib->minor : 0);
  if (r->image) {
    uint8_t key[IMAGE_KEY_BYTES];
    if (image_sha256(r->image, r->image_bytes, key) == 0) image_key_hex(key, sha);
  }
  json_t *o = json_pack("{s:b,s:b,s:s,s:s,s:f,s:s}", "ok", r->ok, "cached", cached, "arch", arch,
                        "nvrtc", nvrtc, "compile_ms", r->compile_ms, "log", r->log ? r->log : "");
  if (!o) return NULL;
  if (r->ok) {
    json_object_set_new(o, "image_bytes", json_integer((json_int_t)r->image_bytes));
    /* What a runner puts back before every launch (uimage.h). */
    json_object_set_new(o, "module_variables", json_integer(r->n_vars));
    json_object_set_new(o, "module_variable_bytes", json_integer((json_int_t)r->var_bytes));
    json_object_set_new(o, "image_sha256", json_string(sha));
  } else {
    json_object_set_new(o, "error", json_string(r->error));
    json_object_set_new(o, "error_line", r->error_line ? json_integer(r->error_line) : json_null());
  }
  if (r->has_usage) {
    json_object_set_new(o, "registers", json_integer(r->registers));
    json_object_set_new(o, "barriers", json_integer(r->barriers));
    json_object_set_new(o, "shared_bytes", json_integer(r->shared_bytes));
    json_object_set_new(o, "stack_bytes", json_integer(r->stack_bytes));
    json_object_set_new(o, "spill_store_bytes", json_integer(r->spill_store_bytes));
    json_object_set_new(o, "spill_load_bytes", json_integer(r->spill_load_bytes));
  }
  return o;
}

/* Blocks per SM a resource allows; null where it sets no limit (the calculator says
 * INT_MAX for a kernel that uses none of it). */
static json_t *blocks_or_null(int blocks) {
  return blocks > 4096 ? json_null() : json_integer(blocks);
}

json_t *ukernels_occupancy_json(const struct ukernels *u, const int block[3],
                                int dynamic_shared_bytes, const struct ucompile_report *r) {
  if (!r->has_usage) return NULL;
  struct occupancy_launch l = {.arch = u->cfg.arch,
                               .threads_per_block = block[0] * block[1] * block[2],
                               .registers = r->registers,
                               .static_shared_bytes = r->shared_bytes,
                               .dynamic_shared_bytes = dynamic_shared_bytes};
  struct occupancy o;
  char why[200], arch[16];
  if (occupancy_theoretical(&l, &o, why, sizeof why))
    return json_pack("{s:b,s:s}", "available", 0, "reason", why);
  snprintf(arch, sizeof arch, "sm_%d", l.arch);
  return json_pack("{s:i,s:i,s:i,s:f,s:s,s:{s:o,s:o,s:o,s:o},s:s,s:s}", "blocks_per_sm",
                   o.blocks_per_sm, "warps_per_sm", o.warps_per_sm, "max_warps_per_sm",
                   o.max_warps_per_sm, "fraction", o.fraction, "limiter", o.limiter, "blocks_by",
                   "registers", blocks_or_null(o.blocks_by_registers), "shared_memory",
                   blocks_or_null(o.blocks_by_shared), "warps", blocks_or_null(o.blocks_by_warps),
                   "blocks", blocks_or_null(o.blocks_by_blocks), "arch", arch, "calculator",
                   "cuda_occupancy.h");
}
