/* The accept journal (journal.h): entries appended with one write, read back at the
 * next start. */
#include "server/store/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENTRY_MAGIC 0x314a4147u /* "GAJ1" */
#define NO_BYTES UINT32_MAX     /* a NULL record or request */

struct entry_header {
  uint32_t magic;
  uint32_t len;      /* of what follows the header */
  uint64_t checksum; /* hash_body of what follows the header */
};

/* The row's numbers, then its strings and bytes in this order (lengths here). */
struct entry_fixed {
  uint64_t id;
  double created, finished;
  uint32_t create;
  uint32_t client_len, type_len, state_len, record_len, request_len;
};

/* Job ids, unordered; an id appears once per entry. */
struct id_list {
  uint64_t *id;
  size_t n, cap;
};

struct journal {
  pthread_mutex_t lock; /* the rest: appends and truncations one at a time */
  /* Taken alone (journal_encode, journal_held_ids: never behind a write) or under lock. */
  pthread_mutex_t ids_lock;
  struct id_list encoded; /* entries encoded and not yet appended */
  struct id_list held[2]; /* entries appended to each file since its last truncation */
  int fd[2];
  uint64_t size[2];    /* bytes in each file */
  uint64_t pending[2]; /* rows appended to each and not yet committed */
  int active;          /* the file appended to */
  bool broken;         /* a torn append could not be undone: no more appends */
  char path[2][4096];
};

/* FNV-1a's step over 8-byte words, then over the bytes left, of an entry's body: a
 * torn tail (a power loss's) fails it, and an entry of a few KB costs a few hundred
 * steps. */
#define HASH_START 0xcbf29ce484222325ull
static uint64_t hash_body(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = HASH_START;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; n > 0; p++, n--) h = (h ^ *p) * 0x100000001b3ull;
  return h;
}

static void file_name(char *out, size_t len, const char *db, int gen) {
  snprintf(out, len, "%s-accepted.%d", db, gen);
}

/* ---- reading back ---- */

/* The whole file into *data (malloc'd), its length in *len; 0, or -errno (-ENOENT:
 * no file). */
static int slurp(const char *path, char **data, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  char *buf = NULL;
  int err = fstat(fd, &st) == 0 ? 0 : -errno;
  if (!err && !(buf = malloc((size_t)st.st_size + 1))) err = -ENOMEM;
  size_t got = 0;
  while (!err && got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      err = n < 0 ? -errno : -EIO;
    else
      got += (size_t)n;
  }
  close(fd);
  if (err) {
    free(buf);
    return err;
  }
  *data = buf;
  *len = got;
  return 0;
}

/* The text of n bytes at p, as a NUL-terminated copy in the scratch *buf. */
static const char *text(const char *p, uint32_t n, char **buf) {
  char *s = *buf;
  memcpy(s, p, n);
  s[n] = 0;
  *buf += n + 1;
  return s;
}

/* One file's entries, up to the first that is cut short or fails its checksum. */
static int read_file(const char *path, int (*fn)(void *arg, const struct journal_entry *e),
                     void *arg) {
  char *data = NULL;
  size_t len = 0;
  int err = slurp(path, &data, &len);
  if (err) return err == -ENOENT ? 0 : err;
  const char *at = data, *end = data + len;
  int n = 0, rc = 0;
  char *strings = malloc(len + 4); /* NUL-terminated copies: never more than the file */
  if (!strings) rc = -ENOMEM;
  while (!rc && (size_t)(end - at) >= sizeof(struct entry_header) + sizeof(struct entry_fixed)) {
    struct entry_header h;
    struct entry_fixed f;
    memcpy(&h, at, sizeof h);
    memcpy(&f, at + sizeof h, sizeof f);
    const char *body = at + sizeof h, *p = body + sizeof f;
    uint32_t part[5] = {f.client_len, f.type_len, f.state_len, f.record_len, f.request_len};
    uint64_t parts = 0;
    for (int i = 0; i < 5; i++) parts += part[i] == NO_BYTES ? 0 : part[i];
    if (h.magic != ENTRY_MAGIC || h.len != sizeof f + parts || parts > (uint64_t)(end - p) ||
        hash_body(body, h.len) != h.checksum)
      break; /* a torn tail */
    const char *piece[5];
    for (int i = 0; i < 5; i++) {
      piece[i] = part[i] == NO_BYTES ? NULL : p;
      if (piece[i]) p += part[i];
    }
    if (!piece[0] || !piece[1] || !piece[2]) break;
    char *scratch = strings;
    struct journal_entry e = {.id = f.id,
                              .created = f.created,
                              .finished = f.finished,
                              .create = f.create != 0,
                              .client = text(piece[0], part[0], &scratch),
                              .type = text(piece[1], part[1], &scratch),
                              .state = text(piece[2], part[2], &scratch),
                              .record = piece[3] ? text(piece[3], part[3], &scratch) : NULL,
                              .request = piece[4],
                              .request_len = piece[4] ? part[4] : 0};
    rc = fn(arg, &e);
    n++;
    at = p;
  }
  free(strings);
  free(data);
  return rc ? rc : n;
}

int journal_read(const char *db, int (*fn)(void *arg, const struct journal_entry *e), void *arg) {
  int total = 0;
  for (int gen = 0; gen < 2; gen++) {
    char path[4096];
    file_name(path, sizeof path, db, gen);
    int n = read_file(path, fn, arg);
    if (n < 0) return n;
    total += n;
  }
  return total;
}

/* ---- the ids of the entries held ---- */

static bool ids_add(struct id_list *l, uint64_t id) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    uint64_t *grown = realloc(l->id, cap * sizeof *grown);
    if (!grown) return false;
    l->id = grown;
    l->cap = cap;
  }
  l->id[l->n++] = id;
  return true;
}

static void ids_remove(struct id_list *l, uint64_t id) {
  for (size_t i = 0; i < l->n; i++)
    if (l->id[i] == id) {
      l->id[i] = l->id[--l->n];
      return;
    }
}

/* An appended entry's id goes from encoded to held[gen] (gen < 0: not appended). One
 * that cannot be moved (out of memory) stays in encoded: held until the journal
 * closes. */
static void ids_appended(struct journal *j, uint64_t id, int gen) {
  pthread_mutex_lock(&j->ids_lock);
  if (gen < 0 || ids_add(&j->held[gen], id)) ids_remove(&j->encoded, id);
  pthread_mutex_unlock(&j->ids_lock);
}

static int id_order(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int journal_held_ids(struct journal *j, uint64_t **ids, size_t *n) {
  *ids = NULL;
  *n = 0;
  pthread_mutex_lock(&j->ids_lock);
  const struct id_list *from[3] = {&j->encoded, &j->held[0], &j->held[1]};
  size_t total = from[0]->n + from[1]->n + from[2]->n;
  uint64_t *out = total ? malloc(total * sizeof *out) : NULL;
  for (int i = 0; out && i < 3; i++) {
    if (from[i]->n) memcpy(out + *n, from[i]->id, from[i]->n * sizeof *out);
    *n += from[i]->n;
  }
  pthread_mutex_unlock(&j->ids_lock);
  if (total && !out) return -ENOMEM;
  if (out) qsort(out, total, sizeof *out, id_order);
  *ids = out;
  return 0;
}

/* ---- appending ---- */

int journal_open(const char *db, struct journal **out, char *why, size_t why_len) {
  struct journal *j = calloc(1, sizeof *j);
  if (!j) {
    snprintf(why, why_len, "out of memory");
    return -ENOMEM;
  }
  for (int gen = 0; gen < 2; gen++) {
    file_name(j->path[gen], sizeof j->path[gen], db, gen);
    j->fd[gen] = open(j->path[gen], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (j->fd[gen] < 0) {
      int e = errno;
      snprintf(why, why_len, "cannot open %s: %s", j->path[gen], strerror(e));
      if (gen == 1) close(j->fd[0]);
      free(j);
      return -e;
    }
  }
  pthread_mutex_init(&j->lock, NULL);
  pthread_mutex_init(&j->ids_lock, NULL);
  *out = j;
  return 0;
}

void journal_close(struct journal *j) {
  if (!j) return;
  bool done = j->pending[0] == 0 && j->pending[1] == 0;
  for (int gen = 0; gen < 2; gen++) {
    close(j->fd[gen]);
    if (done) unlink(j->path[gen]);
  }
  pthread_mutex_destroy(&j->lock);
  pthread_mutex_destroy(&j->ids_lock);
  free(j->encoded.id);
  free(j->held[0].id);
  free(j->held[1].id);
  free(j);
}

static uint32_t len_or_none(const void *p, size_t n) { return p ? (uint32_t)n : NO_BYTES; }

/* Appends n bytes at *at. */
static void put(char **at, const void *src, size_t n) {
  if (n) memcpy(*at, src, n);
  *at += n;
}

void *journal_encode(struct journal *j, const struct journal_entry *e, size_t *len) {
  size_t record_len = e->record ? strlen(e->record) : 0;
  if (record_len >= NO_BYTES || e->request_len >= NO_BYTES) return NULL;
  struct entry_fixed f = {.id = e->id,
                          .created = e->created,
                          .finished = e->finished,
                          .create = e->create,
                          .client_len = (uint32_t)strlen(e->client),
                          .type_len = (uint32_t)strlen(e->type),
                          .state_len = (uint32_t)strlen(e->state),
                          .record_len = len_or_none(e->record, record_len),
                          .request_len = len_or_none(e->request, e->request_len)};
  size_t request_len = e->request ? e->request_len : 0;
  size_t body = sizeof f + f.client_len + f.type_len + f.state_len + record_len + request_len;
  struct entry_header h = {.magic = ENTRY_MAGIC, .len = (uint32_t)body};
  char *entry = body < NO_BYTES ? malloc(sizeof h + body) : NULL, *at = entry;
  if (!entry) return NULL;
  pthread_mutex_lock(&j->ids_lock);
  bool noted = ids_add(&j->encoded, e->id);
  pthread_mutex_unlock(&j->ids_lock);
  if (!noted) {
    free(entry);
    return NULL;
  }
  put(&at, &h, sizeof h);
  put(&at, &f, sizeof f);
  put(&at, e->client, f.client_len);
  put(&at, e->type, f.type_len);
  put(&at, e->state, f.state_len);
  put(&at, e->record, record_len);
  put(&at, e->request, request_len);
  *len = sizeof h + body;
  return entry;
}

int journal_append(struct journal *j, void *entry, size_t len) {
  struct entry_header h;
  memcpy(&h, entry, sizeof h);
  h.checksum = hash_body((char *)entry + sizeof h, len - sizeof h);
  memcpy(entry, &h, sizeof h);
  pthread_mutex_lock(&j->lock);
  int other = 1 - j->active, gen = -EIO;
  if (j->size[j->active] > JOURNAL_SWITCH_BYTES && j->pending[other] == 0 && j->size[other] == 0)
    j->active = other;
  if (!j->broken) gen = j->active;
  ssize_t n = -1;
  if (gen >= 0) do
      n = write(j->fd[gen], entry, len);
    while (n < 0 && errno == EINTR);
  if (gen >= 0 && n != (ssize_t)len) { /* a full disk part way: the file goes back as it was */
    int e = n < 0 ? errno : ENOSPC;
    /* Or, when it cannot, no entry goes after that tail (which ends the replay). */
    if (n > 0 && ftruncate(j->fd[gen], (off_t)j->size[gen]) != 0) j->broken = true;
    gen = -e;
  } else if (gen >= 0) {
    j->size[gen] += len;
    j->pending[gen]++;
  }
  struct entry_fixed f;
  memcpy(&f, (char *)entry + sizeof h, sizeof f);
  ids_appended(j, f.id, gen); /* under lock: before a truncation of gen can forget it */
  pthread_mutex_unlock(&j->lock);
  return gen;
}

void journal_committed(struct journal *j, int gen, uint64_t n) {
  pthread_mutex_lock(&j->lock);
  j->pending[gen] -= n < j->pending[gen] ? n : j->pending[gen];
  if (j->pending[gen] == 0 && j->size[gen] > 0 && ftruncate(j->fd[gen], 0) == 0) {
    j->size[gen] = 0;
    pthread_mutex_lock(&j->ids_lock);
    j->held[gen].n = 0;
    pthread_mutex_unlock(&j->ids_lock);
  }
  pthread_mutex_unlock(&j->lock);
}
