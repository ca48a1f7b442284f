/* The users' kernels table of the backends (ukreg.h): a small array under a mutex. */
#include "kernels/user/ukreg.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct ukreg_kernel **table;
static size_t n_table, cap_table;
static char runner_path[512];
static double deadline_s = 5;
static bool cpu_runner;
/* Every version put since start, its kernel and number (ukreg_label): kept on removal. */
struct name {
  long long id, kernel_id;
  int version;
};
static struct name *names;
static size_t n_names, cap_names;

/* Notes k's kernel and version (the lock held); a failure leaves the label plain. */
static void remember(const struct ukreg_kernel *k) {
  for (size_t i = 0; i < n_names; i++)
    if (names[i].id == k->id) {
      names[i] = (struct name){k->id, k->kernel_id, k->version};
      return;
    }
  if (n_names == cap_names) {
    size_t cap = cap_names ? 2 * cap_names : 64;
    struct name *grown = realloc(names, cap * sizeof *grown);
    if (!grown) return;
    names = grown, cap_names = cap;
  }
  names[n_names++] = (struct name){k->id, k->kernel_id, k->version};
}

/* Kernel id and version of version id (the lock held): false when never put. */
static bool name_of(long long id, long long *kernel_id, int *version) {
  for (size_t i = 0; i < n_names; i++)
    if (names[i].id == id) {
      *kernel_id = names[i].kernel_id, *version = names[i].version;
      return true;
    }
  return false;
}

void ukreg_label(long long version_id, char *buf, size_t len) {
  long long kernel_id = version_id;
  int version = 0;
  pthread_mutex_lock(&mu);
  bool known = name_of(version_id, &kernel_id, &version);
  pthread_mutex_unlock(&mu);
  if (known && version > 0)
    snprintf(buf, len, "kernel:%lld@%d", kernel_id, version);
  else
    snprintf(buf, len, "kernel:%lld", version_id);
}

static struct ukreg_kernel *copy(const struct ukreg_kernel *k, bool with_image) {
  struct ukreg_kernel *c = malloc(sizeof *c);
  if (!c) return NULL;
  *c = *k;
  c->image = NULL;
  c->image_bytes = 0;
  if (with_image && k->image_bytes) {
    if (!(c->image = malloc(k->image_bytes))) {
      free(c);
      return NULL;
    }
    memcpy(c->image, k->image, k->image_bytes);
    c->image_bytes = k->image_bytes;
  }
  return c;
}

void ukreg_kernel_free(struct ukreg_kernel *k) {
  if (!k) return;
  free(k->image);
  free(k);
}

static size_t find(long long id) {
  for (size_t i = 0; i < n_table; i++)
    if (table[i]->id == id) return i;
  return (size_t)-1;
}

int ukreg_put(const struct ukreg_kernel *k) {
  struct ukreg_kernel *c = copy(k, true);
  if (!c) return -ENOMEM;
  if (c->kernel_id <= 0) c->kernel_id = c->id, c->version = c->version > 0 ? c->version : 1;
  pthread_mutex_lock(&mu);
  remember(c);
  size_t i = find(k->id);
  int rc = 0;
  if (i != (size_t)-1) {
    ukreg_kernel_free(table[i]);
    table[i] = c;
  } else if (n_table == cap_table) {
    size_t cap = cap_table ? 2 * cap_table : 16;
    struct ukreg_kernel **t = realloc(table, cap * sizeof *t);
    if (t) {
      table = t, cap_table = cap;
      table[n_table++] = c;
    } else {
      ukreg_kernel_free(c);
      rc = -ENOMEM;
    }
  } else {
    table[n_table++] = c;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

int ukreg_get(long long id, struct ukreg_kernel **out) {
  *out = NULL;
  pthread_mutex_lock(&mu);
  size_t i = find(id);
  int rc = -ENOENT;
  if (i != (size_t)-1) rc = (*out = copy(table[i], true)) ? 0 : -ENOMEM;
  pthread_mutex_unlock(&mu);
  return rc;
}

int ukreg_identity(long long id, struct ukreg_kernel *out) {
  pthread_mutex_lock(&mu);
  size_t i = find(id);
  if (i != (size_t)-1) {
    *out = *table[i];
    out->image = NULL;
    out->image_bytes = 0;
  }
  pthread_mutex_unlock(&mu);
  return i != (size_t)-1 ? 0 : -ENOENT;
}

bool ukreg_run_user(struct exp_run *run) {
  if (!exp_variant_is_user(run->variant)) return false;
  struct ukreg_kernel k;
  memset(&run->user, 0, sizeof run->user);
  long long id = exp_user_kernel_id(run->variant);
  run->user.id = id;
  pthread_mutex_lock(&mu);
  name_of(id, &run->user.id, &run->user.version);
  pthread_mutex_unlock(&mu);
  if (ukreg_identity(id, &k) != 0) return false;
  snprintf(run->user.name, sizeof run->user.name, "%s", k.name);
  snprintf(run->user.owner, sizeof run->user.owner, "%s", k.owner);
  snprintf(run->user.source_sha256, sizeof run->user.source_sha256, "%s", k.source_sha);
  return true;
}

void ukreg_remove(long long id) {
  pthread_mutex_lock(&mu);
  size_t i = find(id);
  if (i != (size_t)-1) {
    ukreg_kernel_free(table[i]);
    table[i] = table[--n_table];
  }
  pthread_mutex_unlock(&mu);
}

void ukreg_set_runner_path(const char *path) {
  pthread_mutex_lock(&mu);
  snprintf(runner_path, sizeof runner_path, "%s", path ? path : "");
  pthread_mutex_unlock(&mu);
}

void ukreg_runner_path(char *buf, size_t len) {
  pthread_mutex_lock(&mu);
  if (runner_path[0]) {
    snprintf(buf, len, "%s", runner_path);
  } else {
    char self[480];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) slash[1] = '\0';
    snprintf(buf, len, "%sgpulab-runner", slash ? self : "./");
  }
  pthread_mutex_unlock(&mu);
}

void ukreg_set_deadline(double seconds) { deadline_s = seconds > 0 ? seconds : 5; }
double ukreg_deadline(void) { return deadline_s; }
void ukreg_set_cpu_runner(bool on) { cpu_runner = on; }
bool ukreg_cpu_runner(void) { return cpu_runner; }

_Static_assert((int)EXP_USER_CHECK_NONE == (int)RUNNER_CHECK_NONE &&
                   (int)EXP_USER_CHECK_TRANSPOSE == (int)RUNNER_CHECK_TRANSPOSE &&
                   (int)EXP_USER_CHECK_GEMM == (int)RUNNER_CHECK_GEMM &&
                   (int)EXP_USER_CHECK_STENCIL == (int)RUNNER_CHECK_STENCIL &&
                   (int)EXP_USER_CHECK_REDUCE == (int)RUNNER_CHECK_REDUCE &&
                   (int)EXP_USER_CHECK_SCAN == (int)RUNNER_CHECK_SCAN &&
                   (int)EXP_USER_CHECK_HISTOGRAM == (int)RUNNER_CHECK_HISTOGRAM,
               "exp_user_check and runner_check number the checks alike");

bool ukreg_fresh(const struct exp_spec *s, struct runner_fresh *f) {
  memset(f, 0, sizeof *f);
  const struct exp_desc *d = exp_desc(s->type);
  const struct exp_user *u = d ? d->user : NULL;
  if (!u || u->fresh_check == EXP_USER_CHECK_NONE || d->n_inputs > RUNNER_MAX_FRESH) return false;
  f->check = (uint32_t)u->fresh_check;
  f->n_in = (uint32_t)d->n_inputs;
  for (int i = 0; i < d->n_inputs; i++) {
    struct exp_shape shape;
    exp_input_shape(s, i, &shape);
    f->stream[i] = d->inputs[i].stream;
    f->scale[i] = d->inputs[i].scale;
    f->floats[i] = (uint64_t)exp_shape_count(&shape);
  }
  for (int a = 0, k = 0; a < u->n_args && k < 4; a++)
    if (u->args[a].kind == EXP_USER_ARG_PARAM) f->p[k++] = s->p[u->args[a].index];
  f->seed = ((uint64_t)arc4random() << 32) | arc4random();
  f->sample_rows = 64; /* gemm: rows per launch, drawn from its seed (all when fewer) */
  return true;
}

void ukreg_fresh_failure(const struct exp_spec *s, const struct runner_done_msg *done, uint32_t n,
                         char *out, size_t len) {
  const struct exp_desc *d = exp_desc(s->type);
  if (done->bad_what == 2) {
    const char *name = d && done->bad_input < (uint32_t)d->n_inputs
                           ? d->inputs[done->bad_input].name
                           : "?";
    snprintf(out, len,
             "timed launch %u of %u on fresh inputs: it changed its input %s (%llu elements, the "
             "first at %llu)",
             done->bad_launch, n, name, (unsigned long long)done->bad_count,
             (unsigned long long)done->bad_index);
  } else {
    snprintf(out, len,
             "timed launch %u of %u on fresh inputs: %llu output elements wrong or not finite, "
             "the first at %llu",
             done->bad_launch, n, (unsigned long long)done->bad_count,
             (unsigned long long)done->bad_index);
  }
}
