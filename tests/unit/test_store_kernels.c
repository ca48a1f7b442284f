/* Users' kernels and problems in the store (server/store/store.h) against a real
 * database, as test_store.c's cases: an SQLite file, or with $GPULAB_TEST_DB a
 * PostgreSQL database (ctest's test_store_kernels_pg). Kernels and their versions,
 * problems and theirs; on PostgreSQL also a schema of kernels without versions
 * migrated, and two nodes sending versions of one kernel at once. The helpers are
 * store_common.h's. */
#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/store.h"
#include "store_common.h"
#include "test_db.h"
#include "tests/runner.h"

static int kernels_seen;
static void on_kernel(void *arg, const struct store_kernel *k) {
  (void)arg;
  CHECK(k->image == NULL && k->source == NULL && k->ptx == NULL); /* listings stay light */
  CHECK(k->spec && k->report);
  kernels_seen++;
}

static void test_kernels(void) {
  struct store *s = open_store();
  unsigned char image[300];
  for (size_t i = 0; i < sizeof image; i++) image[i] = (unsigned char)(i % 7 ? i : 0);
  struct store_kernel k = {.is_public = false,
                           .created = 3000.5,
                           .source = "__global__ void f() {}",
                           .spec = "{\"entry\":\"f\"}",
                           .report = "{\"ok\":true}",
                           .image = image,
                           .image_bytes = sizeof image,
                           .ptx = "//\n.version 9.0\n.target sm_90\n.visible .entry f()\n{\n}\n"};
  snprintf(k.owner, sizeof k.owner, "alice");
  snprintf(k.name, sizeof k.name, "mine");
  snprintf(k.experiment, sizeof k.experiment, "gemm");
  snprintf(k.source_sha, sizeof k.source_sha, "%064d", 0);
  int64_t a, b;
  int version = 0;
  CHECK_INT_EQ(store_kernel_insert(s, &k, &a, &version), 0);
  CHECK_INT_EQ(version, 1);
  k.is_public = true;
  k.image = NULL;
  k.image_bytes = 0;
  k.ptx = NULL; /* as a version stored before gpulab kept PTX */
  snprintf(k.owner, sizeof k.owner, "bob");
  CHECK_INT_EQ(store_kernel_insert(s, &k, &b, &version), 0);
  CHECK(b > a);

  struct store_kernel got;
  CHECK_INT_EQ(store_kernel_get(s, a, &got), 0);
  CHECK_STR_EQ(got.owner, "alice");
  CHECK_STR_EQ(got.source, "__global__ void f() {}");
  CHECK_INT_EQ(got.image_bytes, sizeof image);
  CHECK(memcmp(got.image, image, sizeof image) == 0);
  CHECK_STR_EQ(got.ptx, "//\n.version 9.0\n.target sm_90\n.visible .entry f()\n{\n}\n");
  CHECK(!got.is_public);
  CHECK_NEAR(got.created, 3000.5, 1e-9);
  store_kernel_clear(&got);
  CHECK_INT_EQ(store_kernel_get(s, b, &got), 0);
  CHECK(got.image == NULL && got.ptx == NULL && got.is_public);
  store_kernel_clear(&got);
  CHECK_INT_EQ(store_kernel_get(s, b + 100, &got), -ENOENT);

  kernels_seen = 0;
  CHECK_INT_EQ(store_kernel_list(s, "alice", NULL, on_kernel, NULL), 2); /* hers + public */
  CHECK_INT_EQ(store_kernel_list(s, "carol", NULL, on_kernel, NULL), 1);
  CHECK_INT_EQ(store_kernel_list(s, NULL, "stencil", on_kernel, NULL), 0);
  CHECK_INT_EQ(kernels_seen, 3);
  int n;
  size_t bytes;
  CHECK_INT_EQ(store_kernel_count(s, "alice", &n, &bytes), 0);
  CHECK_INT_EQ(n, 1);
  CHECK_INT_EQ(bytes, strlen("__global__ void f() {}"));

  CHECK_INT_EQ(store_kernel_delete(s, a), 0);
  CHECK_INT_EQ(store_kernel_delete(s, a), -ENOENT);
  int64_t c;
  CHECK_INT_EQ(store_kernel_insert(s, &k, &c, &version), 0);
  CHECK(c > b); /* never reused */
  store_close(s);
  printf("kernels: ok\n");
}

static int64_t version_ids[8];
static int n_version_ids;
static void on_version(void *arg, const struct store_kernel *k) {
  (void)arg;
  CHECK(k->source == NULL && k->image == NULL && k->ptx == NULL);
  if (n_version_ids < 8) version_ids[n_version_ids++] = k->id;
}

/* A kernel's versions: numbered after the newest, listed oldest first, the kernel's id
 * kept when its first version goes; the listing shows each kernel once (its newest),
 * the count counts kernels; a drop takes every version. */
static void test_kernel_versions(void) {
  struct store *s = open_store();
  struct store_kernel k = {.created = 1, .source = "v1", .spec = "{}", .report = "{}"};
  snprintf(k.owner, sizeof k.owner, "alice");
  snprintf(k.name, sizeof k.name, "t");
  snprintf(k.experiment, sizeof k.experiment, "transpose");
  int64_t first, id;
  int version;
  CHECK_INT_EQ(store_kernel_insert(s, &k, &first, &version), 0);
  CHECK_INT_EQ(version, 1);
  k.kernel_id = first;
  k.source = "v2 longer";
  CHECK_INT_EQ(store_kernel_insert(s, &k, &id, &version), 0);
  CHECK_INT_EQ(version, 2);
  k.source = "v3";
  k.ptx = ".entry v3"; /* a version's PTX, written by the insert that numbers it */
  CHECK_INT_EQ(store_kernel_insert(s, &k, &id, &version), 0);
  CHECK_INT_EQ(version, 3);
  k.ptx = NULL;
  struct store_kernel got;
  CHECK_INT_EQ(store_kernel_get(s, id, &got), 0);
  CHECK_INT_EQ(got.kernel_id, first);
  CHECK_INT_EQ(got.version, 3);
  CHECK_STR_EQ(got.source, "v3");
  CHECK_STR_EQ(got.ptx, ".entry v3");
  store_kernel_clear(&got);
  CHECK_INT_EQ(store_kernel_get(s, first, &got), 0);
  CHECK(got.ptx == NULL);
  store_kernel_clear(&got);
  n_version_ids = 0;
  CHECK_INT_EQ(store_kernel_versions(s, first, on_version, NULL), 3);
  CHECK_INT_EQ(version_ids[0], first);
  CHECK_INT_EQ(version_ids[2], id);
  /* Another kernel of hers, another name. */
  k.kernel_id = 0;
  snprintf(k.name, sizeof k.name, "u");
  int64_t other;
  CHECK_INT_EQ(store_kernel_insert(s, &k, &other, &version), 0);
  int n;
  size_t bytes;
  CHECK_INT_EQ(store_kernel_count(s, "alice", &n, &bytes), 0);
  CHECK_INT_EQ(n, 2);
  CHECK_INT_EQ(bytes, 4); /* the newest versions' sources: "v3", "v3" */
  int64_t ids[4];
  CHECK_INT_EQ(store_kernel_named(s, "alice", "transpose", "t", ids, 4), 1);
  CHECK_INT_EQ(ids[0], first);
  CHECK_INT_EQ(store_kernel_named(s, "alice", "gemm", "t", ids, 4), 0);
  CHECK_INT_EQ(store_kernel_named(s, "bob", "transpose", "t", ids, 4), 0);
  CHECK_INT_EQ(store_kernel_list(s, "alice", "transpose", on_kernel, NULL), 2);
  /* Its first version deleted: the kernel keeps its id; the next version is 4. */
  CHECK_INT_EQ(store_kernel_delete(s, first), 0);
  CHECK_INT_EQ(store_kernel_versions(s, first, on_version, NULL), 2);
  k.kernel_id = first;
  snprintf(k.name, sizeof k.name, "t");
  CHECK_INT_EQ(store_kernel_insert(s, &k, &id, &version), 0);
  CHECK_INT_EQ(version, 4);
  CHECK_INT_EQ(store_kernel_named(s, "alice", "transpose", "t", ids, 4), 1);
  CHECK_INT_EQ(ids[0], first);
  /* Dropped: every version; a new version of it then has nothing to follow. */
  CHECK_INT_EQ(store_kernel_drop(s, first), 0);
  CHECK_INT_EQ(store_kernel_versions(s, first, on_version, NULL), 0);
  CHECK_INT_EQ(store_kernel_drop(s, first), -ENOENT);
  CHECK_INT_EQ(store_kernel_insert(s, &k, &id, &version), -ENOENT);
  CHECK_INT_EQ(store_kernel_versions(s, other, on_version, NULL), 1);
  store_close(s);
  printf("kernel versions: ok\n");
}

static int problems_seen;
static char problems_names[4][16];
static void on_problem(void *arg, const struct store_problem *p) {
  (void)arg;
  CHECK(p->image == NULL && p->definition && p->report);
  if (problems_seen < 4)
    snprintf(problems_names[problems_seen], 16, "%.10s@%d", p->name, p->version);
  problems_seen++;
}

/* Problems: versions of a name, its owner's alone; get by version; listings without
 * images; a delete marks every version, a new definition shows the name again. */
static void test_problems(void) {
  struct store *s = open_store();
  unsigned char image[200];
  for (size_t i = 0; i < sizeof image; i++) image[i] = (unsigned char)(i % 5 ? i : 0);
  struct store_problem p = {.created = 4000.25,
                            .definition = "{\"name\":\"softmax\"}",
                            .report = "{\"ok\":true}",
                            .image = image,
                            .image_bytes = sizeof image};
  snprintf(p.owner, sizeof p.owner, "alice");
  snprintf(p.name, sizeof p.name, "softmax");
  int64_t id1, id2, id;
  int version = 0;
  CHECK_INT_EQ(store_problem_insert(s, &p, &id1, &version), 0);
  CHECK_INT_EQ(version, 1);
  p.definition = "{\"name\":\"softmax\",\"v\":2}";
  p.is_public = true;
  CHECK_INT_EQ(store_problem_insert(s, &p, &id2, &version), 0);
  CHECK_INT_EQ(version, 2);
  CHECK(id2 > id1);
  snprintf(p.owner, sizeof p.owner, "bob"); /* alice's name */
  CHECK_INT_EQ(store_problem_insert(s, &p, &id, &version), -EEXIST);
  snprintf(p.name, sizeof p.name, "layernorm");
  p.image = NULL;
  p.image_bytes = 0;
  CHECK_INT_EQ(store_problem_insert(s, &p, &id, &version), 0);
  CHECK_INT_EQ(version, 1);

  struct store_problem got;
  CHECK_INT_EQ(store_problem_get(s, "softmax", 0, &got), 0);
  CHECK_INT_EQ(got.id, id2);
  CHECK_INT_EQ(got.version, 2);
  CHECK_STR_EQ(got.owner, "alice");
  CHECK(got.is_public && !got.deleted && got.created == 4000.25);
  CHECK_STR_EQ(got.definition, "{\"name\":\"softmax\",\"v\":2}");
  CHECK_INT_EQ(got.image_bytes, sizeof image);
  CHECK(memcmp(got.image, image, sizeof image) == 0);
  store_problem_clear(&got);
  CHECK_INT_EQ(store_problem_get(s, "softmax", 1, &got), 0);
  CHECK(!got.is_public);
  store_problem_clear(&got);
  CHECK_INT_EQ(store_problem_get(s, "layernorm", 0, &got), 0);
  CHECK(got.image == NULL && got.image_bytes == 0);
  store_problem_clear(&got);
  CHECK_INT_EQ(store_problem_get(s, "softmax", 3, &got), -ENOENT);
  CHECK_INT_EQ(store_problem_get(s, "nope", 0, &got), -ENOENT);

  problems_seen = 0;
  CHECK_INT_EQ(store_problem_each(s, NULL, on_problem, NULL), 2); /* newest of each name */
  CHECK_STR_EQ(problems_names[0], "layernorm@1");
  CHECK_STR_EQ(problems_names[1], "softmax@2");
  problems_seen = 0;
  CHECK_INT_EQ(store_problem_each(s, "softmax", on_problem, NULL), 2); /* oldest first */
  CHECK_STR_EQ(problems_names[0], "softmax@1");

  CHECK_INT_EQ(store_problem_delete(s, "softmax"), 0);
  CHECK_INT_EQ(store_problem_delete(s, "nope"), -ENOENT);
  CHECK_INT_EQ(store_problem_get(s, "softmax", 1, &got), 0);
  CHECK(got.deleted);
  store_problem_clear(&got);
  snprintf(p.owner, sizeof p.owner, "alice");
  snprintf(p.name, sizeof p.name, "softmax");
  CHECK_INT_EQ(store_problem_insert(s, &p, &id, &version), 0);
  CHECK_INT_EQ(version, 3);
  CHECK_INT_EQ(store_problem_get(s, "softmax", 0, &got), 0);
  CHECK(!got.deleted);
  store_problem_clear(&got);
  store_close(s);
  printf("problems: ok\n");
}

/* A database of schema version 4 (kernels without versions) with a kernel in it: the
 * next gpulabd's migration makes the kernel version 1 of itself, and its next version 2. */
static void test_pg_kernels_upgrade(void) {
  if (!test_db_on_pg()) return; /* PostgreSQL\'s alone (SQLite's: test_kernel_versions) */
  test_db_reset(db);
  struct store *s = NULL;
  char err[512];
  CHECK_INT_EQ(store_open(db, &s, err, sizeof err), 0);
  store_close(s);
  PGconn *c = PQconnectdb(db); /* back to version 4, as the gpulabd before versions left it */
  PQclear(PQexec(c,
                 "DROP TABLE problems;" /* migrations 6 and 7 (ptx, below) */
                 "DROP INDEX kernels_versions; ALTER TABLE kernels DROP COLUMN kernel_of,"
                 " DROP COLUMN version, DROP COLUMN ptx; UPDATE gpulab_schema SET version = 4;"
                 " INSERT INTO kernels(owner, name, experiment, public, created, source_sha,"
                 " source, spec, report) VALUES('alice', 'old', 'gemm', false, 1, 'x',"
                 " 'old source', '{}', '{}')"));
  PGresult *res = PQexec(c, "SELECT id FROM kernels");
  CHECK_INT_EQ(PQntuples(res), 1);
  int64_t old = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  PQfinish(c);
  CHECK_INT_EQ(store_open(db, &s, err, sizeof err), 0);
  struct store_kernel k;
  CHECK_INT_EQ(store_kernel_get(s, old, &k), 0);
  CHECK_INT_EQ(k.kernel_id, old);
  CHECK_INT_EQ(k.version, 1);
  CHECK_STR_EQ(k.source, "old source");
  CHECK(k.ptx == NULL); /* migration 7: stored before gpulab kept PTX */
  k.kernel_id = old;
  int64_t id;
  int version;
  CHECK_INT_EQ(store_kernel_insert(s, &k, &id, &version), 0);
  CHECK_INT_EQ(version, 2);
  store_kernel_clear(&k);
  store_close(s);
  printf("kernels upgraded: ok\n");
}

struct racer {
  struct store *s;
  int64_t kernel_id;
  int ok, busy, other;
};

static void *race_versions(void *arg) {
  struct racer *r = arg;
  struct store_kernel k = {
      .kernel_id = r->kernel_id, .created = 1, .source = "v", .spec = "{}", .report = "{}"};
  snprintf(k.owner, sizeof k.owner, "alice");
  snprintf(k.name, sizeof k.name, "raced");
  snprintf(k.experiment, sizeof k.experiment, "gemm");
  for (int i = 0; i < 10; i++) {
    int64_t id;
    int version, rc = store_kernel_insert(r->s, &k, &id, &version);
    if (rc == 0)
      r->ok++;
    else if (rc == -EBUSY)
      r->busy++;
    else
      r->other++;
  }
  return NULL;
}

static int64_t raced_versions[32];
static int n_raced;
static void on_raced(void *arg, const struct store_kernel *k) {
  (void)arg;
  if (n_raced < 32) raced_versions[n_raced++] = k->version;
}

/* Two nodes sending versions of one kernel at once: each version numbered once (the
 * unique index, and the loser numbering again), and a clash is no store failure. */
static void test_pg_versions_race(void) {
  if (!test_db_on_pg()) return; /* PostgreSQL\'s alone: SQLite's writes are one at a time */
  struct store *a = open_store(), *b = open_store();
  struct store_kernel k = {.created = 1, .source = "v", .spec = "{}", .report = "{}"};
  snprintf(k.owner, sizeof k.owner, "alice");
  snprintf(k.name, sizeof k.name, "raced");
  snprintf(k.experiment, sizeof k.experiment, "gemm");
  int64_t first;
  int version;
  CHECK_INT_EQ(store_kernel_insert(a, &k, &first, &version), 0);
  struct racer ra = {a, first, 0, 0, 0}, rb = {b, first, 0, 0, 0};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, race_versions, &ra);
  pthread_create(&tb, NULL, race_versions, &rb);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK_INT_EQ(ra.other + rb.other, 0);
  CHECK_INT_EQ(store_check(a), 0);
  CHECK_INT_EQ(store_check(b), 0);
  n_raced = 0;
  CHECK_INT_EQ(store_kernel_versions(a, first, on_raced, NULL), 1 + ra.ok + rb.ok);
  for (int i = 0; i < n_raced; i++)
    CHECK_INT_EQ(raced_versions[i], i + 1); /* 1, 2, ... once each */
  printf("versions raced: %d and %d stored, %d busy\n", ra.ok, rb.ok, ra.busy + rb.busy);
  CHECK(ra.ok + rb.ok >= 10);
  store_close(a);
  store_close(b);
}

static const struct test_case cases[] = {
    TEST(test_kernels),          TEST(test_kernel_versions),
    TEST(test_problems),         TEST(test_pg_kernels_upgrade),
    TEST(test_pg_versions_race), TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = store_db_setup, .teardown = store_db_teardown};
