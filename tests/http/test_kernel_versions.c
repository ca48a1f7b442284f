/* A kernel's versions over HTTP on a real gpulabd (--backend cpu, NVRTC compiling for
 * real, users' transpose kernels run by the CPU runner, --cpu-runner-test): the same
 * name again makes a version; the quota counts kernels and --max-kernel-versions caps
 * versions; kernel:<id>, kernel:<id>@<n> and kernel:<name> as variants and the label a
 * run gets; the diff; deleting one version and all; bad ids and versions; a database
 * of the days before versions upgraded in place; a restart, and a job replayed from the
 * accept journal running the version it named; owners and who sees which version.
 * SQLite, or with $GPULAB_TEST_DB a
 * PostgreSQL database (the upgrade of an old file is SQLite's alone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "http_client.h"
#include "runner.h"
#include "test_db.h"

static const char *dir; /* test_dir() */
static char db[512];
static const char *args[] = {"--backend",
                             "cpu",
                             "--cpu-runner-test",
                             "--db",
                             db,
                             "--max-kernels",
                             "2",
                             "--max-kernel-versions",
                             "3",
                             "--streams",
                             "1",
                             "--access-log",
                             "off",
                             NULL};

/* A transpose kernel named name whose entry is the CPU runner's correct transpose
 * ("kernel"), its source told apart by tag; posted under path_prefix ("" or "/v1"). */
static void post_kernel(struct gpulabd *d, const char *prefix, const char *name, int tag,
                        struct http_reply *r) {
  char src[320], path[160];
  snprintf(src, sizeof src,
           "// version tag %d\n"
           "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
           "  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
           "  if (x < n && y < m) b[(size_t)x * m + y] = a[(size_t)y * n + x];\n}\n",
           tag);
  snprintf(path, sizeof path, "%s/kernels?experiment=transpose&name=%s&block=32,32&tile=32,32",
           prefix, name);
  http_request(d, "POST", path, "text/x-cuda", src, strlen(src), r);
}

/* POSTs, expecting 201; returns the version, the kernel's id into *id. */
static int post_ok(struct gpulabd *d, const char *name, int tag, long long *id) {
  struct http_reply r;
  post_kernel(d, "", name, tag, &r);
  CHECK_STATUS(&r, 201);
  *id = JINT(r.json, "id");
  int version = (int)JINT(r.json, "version");
  http_reply_free(&r);
  return version;
}

/* A 37 x 53 transpose naming variant, waited for: its first run's label. */
static json_t *job_of(struct gpulabd *d, const char *variant) {
  char body[320];
  snprintf(body, sizeof body,
           "{\"m\":37,\"n\":53,\"variant\":\"%s\",\"warmup\":0,\"batches\":1,\"reps\":1}", variant);
  struct http_reply r;
  http_post_json(d, "/transpose?wait=60", body, &r);
  CHECK_STATUS(&r, 200);
  json_t *j = json_incref(r.json);
  http_reply_free(&r);
  return j;
}

static long long tile; /* the kernel the cases share: "tile", versions 1..3 */

/* Resubmission makes versions: the id kept, numbered 1, 2, 3; Location and href under
 * the prefix the request came by; the kernel answers its newest with the count. */
static void test_versions(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  struct http_reply r;
  post_kernel(&d, "/v1", "tile", 1, &r);
  CHECK_STATUS(&r, 201);
  tile = JINT(r.json, "id");
  char want[96];
  snprintf(want, sizeof want, "/v1/kernels/%lld/versions/1", tile);
  CHECK_STR_EQ(r.location, want);
  CHECK_STR_EQ(JSTR(r.json, "href"), want);
  CHECK_INT_EQ(JINT(r.json, "version"), 1);
  http_reply_free(&r);
  long long id;
  CHECK_INT_EQ(post_ok(&d, "tile", 2, &id), 2);
  CHECK_INT_EQ(id, tile);
  post_kernel(&d, "", "tile", 3, &r);
  CHECK_STATUS(&r, 201);
  snprintf(want, sizeof want, "/kernels/%lld/versions/3", tile);
  CHECK_STR_EQ(r.location, want);
  snprintf(want, sizeof want, "kernel:%lld@3", tile);
  CHECK_STR_EQ(JSTR(r.json, "variant"), want);
  http_reply_free(&r);

  char path[96];
  snprintf(path, sizeof path, "/v1/kernels/%lld", tile);
  json_t *k = http_get_json(&d, path);
  CHECK_INT_EQ(JINT(k, "version"), 3);
  CHECK_INT_EQ(JINT(k, "versions"), 3);
  CHECK_STR_EQ(JSTR(k, "href"), path);
  CHECK(strstr(JSTR(k, "source"), "version tag 3") != NULL);
  json_decref(k);
  snprintf(path, sizeof path, "/v1/kernels/%lld/versions", tile);
  json_t *list = http_get_json(&d, path);
  CHECK_INT_EQ(json_array_size(json_at(list, "versions")), 3);
  CHECK_INT_EQ(JINT(list, "versions[0].version"), 1);
  CHECK_INT_EQ(JINT(list, "versions[2].version"), 3);
  CHECK(json_at(list, "versions[0].source") == NULL);
  CHECK(JINT(list, "versions[0].compile.registers") > 0);
  CHECK_INT_EQ(JINT(list, "versions[0].compile.spill_store_bytes"), 0);
  CHECK_INT_EQ(strlen(JSTR(list, "versions[1].source_sha256")), 64);
  snprintf(want, sizeof want, "/v1/kernels/%lld/versions/2", tile);
  CHECK_STR_EQ(JSTR(list, "versions[1].href"), want);
  json_decref(list);
  snprintf(path, sizeof path, "/kernels/%lld/versions/2", tile);
  k = http_get_json(&d, path);
  CHECK_INT_EQ(JINT(k, "version"), 2);
  CHECK(strstr(JSTR(k, "source"), "version tag 2") != NULL);
  CHECK(strstr(JSTR(k, "compile.log"), "kernel") != NULL);
  json_decref(k);
  list = http_get_json(&d, "/kernels");
  CHECK_INT_EQ(json_array_size(json_at(list, "kernels")), 1);
  CHECK_INT_EQ(JINT(list, "kernels[0].versions"), 3);
  json_decref(list);
  gpulabd_stop(&d);
}

/* The quota counts kernels (2 here), not versions; a kernel's versions are capped (3):
 * 409 saying to delete old ones; a failed compile makes no version. */
static void test_limits(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  struct http_reply r;
  post_kernel(&d, "", "tile", 4, &r);
  CHECK_ERROR(&r, 409, "too_many_versions", "name");
  CHECK(strstr(JSTR(r.json, "detail"), "DELETE") != NULL);
  CHECK(strstr(JSTR(r.json, "detail"), "--max-kernel-versions") != NULL);
  http_reply_free(&r);
  long long other;
  CHECK_INT_EQ(post_ok(&d, "other", 1, &other), 1);
  post_kernel(&d, "", "third", 1, &r);
  CHECK_ERROR(&r, 403, "kernel_quota", NULL);
  http_reply_free(&r);
  CHECK_INT_EQ(post_ok(&d, "other", 2, &other), 2); /* a version: no kernel more */
  http_post_json(&d, "/kernels",
                 "{\"experiment\":\"transpose\",\"name\":\"other\",\"source\":\"int x = ;\"}", &r);
  CHECK_STATUS(&r, 422);
  http_reply_free(&r);
  char path[96];
  snprintf(path, sizeof path, "/kernels/%lld", other);
  json_t *k = http_get_json(&d, path);
  CHECK_INT_EQ(JINT(k, "versions"), 2);
  json_decref(k);
  gpulabd_stop(&d);
}

/* Variants: kernel:<id> its newest version when sent, @n a given one, a name the
 * caller's own; the run's label and user_kernel say which version ran, and it ran. */
static void test_variants(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  char variant[160], want[64];
  struct http_reply r;
  snprintf(variant, sizeof variant, "kernel:%lld", tile);
  json_t *j = job_of(&d, variant);
  snprintf(want, sizeof want, "kernel:%lld@3", tile);
  CHECK_STR_EQ(JSTR(j, "result.runs[0].variant"), want);
  CHECK_STR_EQ(JSTR(j, "params.variant[0]"), want);
  CHECK_INT_EQ(JINT(j, "result.runs[0].user_kernel.id"), tile);
  CHECK_INT_EQ(JINT(j, "result.runs[0].user_kernel.version"), 3);
  CHECK(JBOOL(j, "result.runs[0].available"));
  CHECK(JBOOL(j, "result.runs[0].check.passed"));
  json_decref(j);
  snprintf(variant, sizeof variant, "kernel:%lld@1", tile);
  j = job_of(&d, variant);
  CHECK_STR_EQ(JSTR(j, "result.runs[0].variant"), variant);
  CHECK_INT_EQ(JINT(j, "result.runs[0].user_kernel.version"), 1);
  CHECK(JBOOL(j, "result.runs[0].check.passed"));
  json_decref(j);
  j = job_of(&d, "kernel:tile@2");
  snprintf(want, sizeof want, "kernel:%lld@2", tile);
  CHECK_STR_EQ(JSTR(j, "result.runs[0].variant"), want);
  json_decref(j);
  j = job_of(&d, "kernel:tile");
  snprintf(want, sizeof want, "kernel:%lld@3", tile);
  CHECK_STR_EQ(JSTR(j, "result.runs[0].variant"), want);
  json_decref(j);
  /* The leaderboard's row of a version links it under the request's prefix. */
  json_t *board = http_get_json(&d, "/v1/leaderboard/transpose?size=37,53");
  bool found = false;
  for (size_t i = 0; i < json_array_size(json_at(board, "rows")); i++) {
    json_t *row = json_array_get(json_at(board, "rows"), i);
    if (strcmp(json_string_value(json_object_get(row, "variant")), want)) continue;
    char href[96];
    snprintf(href, sizeof href, "/v1/kernels/%lld/versions/3", tile);
    CHECK_STR_EQ(JSTR(row, "user_kernel.href"), href);
    found = true;
  }
  CHECK(found);
  json_decref(board);
  /* The versions' best figures: their rows of that leaderboard. */
  char path[96];
  snprintf(path, sizeof path, "/kernels/%lld/versions?size=37,53", tile);
  json_t *list = http_get_json(&d, path);
  CHECK_INT_EQ(JINT(list, "size.n"), 53);
  CHECK_STR_EQ(JSTR(list, "versions[2].best.variant"), want);
  CHECK(JNUM(list, "versions[2].best.figure") > 0);
  CHECK(JINT(list, "versions[0].best.rank") >= 1);
  json_decref(list);
  snprintf(path, sizeof path, "/kernels/%lld/versions", tile); /* the default size: none ran */
  list = http_get_json(&d, path);
  CHECK(json_is_null(json_at(list, "versions[2].best")));
  json_decref(list);
  snprintf(path, sizeof path, "/kernels/%lld/versions?size=0", tile);
  HTTP_EXPECT(&d, "GET", path, 400, "out_of_range", "size");

  /* Wrong ones: 400 saying what, nothing run. */
  snprintf(variant, sizeof variant, "{\"variant\":\"kernel:%lld@9\"}", tile);
  http_post_json(&d, "/transpose", variant, &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  CHECK(strstr(JSTR(r.json, "detail"), "no version 9") != NULL);
  http_reply_free(&r);
  http_post_json(&d, "/transpose", "{\"variant\":\"kernel:nosuch\"}", &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  CHECK(strstr(JSTR(r.json, "detail"), "no transpose kernel named 'nosuch'") != NULL);
  http_reply_free(&r);
  http_post_json(&d, "/transpose", "{\"variant\":\"kernel:tile@0\"}", &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  http_reply_free(&r);
  http_post_json(&d, "/transpose", "{\"variant\":\"kernel:a b\"}", &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  http_reply_free(&r);
  http_post_json(&d, "/gemm", "{\"variant\":\"kernel:tile\"}", &r); /* a transpose kernel */
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  http_reply_free(&r);
  snprintf(variant, sizeof variant,
           "{\"type\":\"transpose\",\"params\":{\"variant\":[\"kernel:tile\",\"kernel:%lld\"]}}",
           tile);
  http_post_json(&d, "/jobs", variant, &r); /* the same version twice */
  CHECK_ERROR(&r, 400, "duplicate_variant", "params.variant");
  http_reply_free(&r);
  gpulabd_stop(&d);
}

/* The diff: text/plain, a unified diff of the two sources; bad input a problem. */
static void test_diff(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  char path[128];
  struct http_reply r;
  snprintf(path, sizeof path, "/v1/kernels/%lld/diff?from=1&to=3", tile);
  http_get(&d, path, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK(r.content_type && strncmp(r.content_type, "text/plain", 10) == 0);
  char label[96];
  snprintf(label, sizeof label, "--- kernel:%lld@1/tile.cu", tile);
  CHECK(strstr(r.body, label) != NULL);
  snprintf(label, sizeof label, "+++ kernel:%lld@3/tile.cu", tile);
  CHECK(strstr(r.body, label) != NULL);
  CHECK(strstr(r.body, "\n-// version tag 1\n+// version tag 3\n") != NULL);
  CHECK(strstr(r.body, "@@ -1,") != NULL);
  http_reply_free(&r);
  snprintf(path, sizeof path, "/kernels/%lld/diff?from=2&to=2", tile);
  http_get(&d, path, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_INT_EQ(r.body_len, 0); /* the same: no difference */
  http_reply_free(&r);
  snprintf(path, sizeof path, "/kernels/%lld/diff?to=2", tile);
  HTTP_EXPECT(&d, "GET", path, 400, "missing_field", "from");
  snprintf(path, sizeof path, "/kernels/%lld/diff?from=1&to=x", tile);
  HTTP_EXPECT(&d, "GET", path, 400, "out_of_range", "to");
  snprintf(path, sizeof path, "/kernels/%lld/diff?from=1&to=-2", tile);
  HTTP_EXPECT(&d, "GET", path, 400, "out_of_range", "to");
  snprintf(path, sizeof path, "/kernels/%lld/diff?from=1&to=8", tile);
  HTTP_EXPECT(&d, "GET", path, 404, "version_not_found", "version");
  HTTP_EXPECT(&d, "GET", "/kernels/98765/diff?from=1&to=2", 404, "kernel_not_found", "id");
  gpulabd_stop(&d);
}

/* Bad ids and versions: 404 or 400, nothing changed. */
static void test_bad_input(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  char path[96];
  HTTP_EXPECT(&d, "GET", "/kernels/abc/versions", 404, "kernel_not_found", "id");
  HTTP_EXPECT(&d, "GET", "/kernels/0/versions", 404, "kernel_not_found", "id");
  HTTP_EXPECT(&d, "GET", "/kernels/98765/versions/1", 404, "kernel_not_found", "id");
  snprintf(path, sizeof path, "/kernels/%lld/versions/abc", tile);
  HTTP_EXPECT(&d, "GET", path, 400, "out_of_range", "version");
  snprintf(path, sizeof path, "/kernels/%lld/versions/0", tile);
  HTTP_EXPECT(&d, "DELETE", path, 400, "out_of_range", "version");
  snprintf(path, sizeof path, "/kernels/%lld/versions/01", tile);
  HTTP_EXPECT(&d, "GET", path, 400, "out_of_range", "version");
  snprintf(path, sizeof path, "/kernels/%lld/versions/99999999999", tile);
  HTTP_EXPECT(&d, "GET", path, 400, "out_of_range", "version");
  snprintf(path, sizeof path, "/kernels/%lld/versions/4", tile);
  HTTP_EXPECT(&d, "DELETE", path, 404, "version_not_found", "version");
  snprintf(path, sizeof path, "/kernels/%lld/versions/1", tile);
  HTTP_EXPECT(&d, "PUT", path, 405, "method_not_allowed", NULL);
  snprintf(path, sizeof path, "/kernels/%lld/versions", tile);
  HTTP_EXPECT(&d, "DELETE", path, 405, "method_not_allowed", NULL);
  json_t *list = http_get_json(&d, path);
  CHECK_INT_EQ(json_array_size(json_at(list, "versions")), 3);
  json_decref(list);
  gpulabd_stop(&d);
}

/* Across a restart the versions are all there and each runs as itself; a job queued
 * when gpulabd was killed, replayed from the accept journal, runs the version it
 * named then, not the one sent since. */
static void test_restart(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  char variant[64], path[96];
  snprintf(path, sizeof path, "/kernels/%lld/versions", tile);
  json_t *list = http_get_json(&d, path);
  CHECK_INT_EQ(json_array_size(json_at(list, "versions")), 3);
  json_decref(list);
  snprintf(variant, sizeof variant, "kernel:%lld@2", tile);
  json_t *j = job_of(&d, variant);
  CHECK_STR_EQ(JSTR(j, "result.runs[0].variant"), variant);
  CHECK(JBOOL(j, "result.runs[0].check.passed"));
  json_decref(j);
  /* A slow job holds the one stream; the kernel's job queues behind it. */
  long long slow = HTTP_POST_ID(&d, "/stencil?wait=0",
                                "{\"n\":1000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,"
                                "\"batches\":100,\"reps\":1,\"isolation\":\"shared\"}",
                                202);
  job_wait_state(&d, slow, "running", 30);
  long long queued = HTTP_POST_ID(&d, "/transpose?wait=0",
                                  "{\"m\":37,\"n\":53,\"variant\":\"kernel:tile\",\"warmup\":0,"
                                  "\"batches\":1,\"reps\":1}",
                                  202);
  /* Version 1 deleted (room under the cap), a new one (4) sent: "kernel:tile" would now
   * be version 4. */
  snprintf(path, sizeof path, "/kernels/%lld/versions/1", tile);
  HTTP_EXPECT(&d, "DELETE", path, 200, NULL, NULL);
  long long id;
  CHECK_INT_EQ(post_ok(&d, "tile", 4, &id), 4);
  gpulabd_kill(&d);
  gpulabd_start(args, &d);
  j = job_wait_final(&d, queued, 60);
  snprintf(variant, sizeof variant, "kernel:%lld@3", tile);
  CHECK_STR_EQ(JSTR(j, "params.variant[0]"), variant);
  CHECK_STR_EQ(JSTR(j, "result.runs[0].variant"), variant);
  CHECK(JBOOL(j, "result.runs[0].available"));
  CHECK(JBOOL(j, "result.runs[0].check.passed"));
  json_decref(j);
  snprintf(path, sizeof path, "/kernels/%lld/versions", tile);
  list = http_get_json(&d, path);
  CHECK_INT_EQ(json_array_size(json_at(list, "versions")), 3);
  CHECK_INT_EQ(JINT(list, "versions[0].version"), 2);
  CHECK_INT_EQ(JINT(list, "versions[2].version"), 4);
  json_decref(list);
  gpulabd_stop(&d);
}

/* Deleting: one version (the kernel keeps its id), the last one (the kernel goes), a
 * whole kernel with its versions. */
static void test_delete(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  char path[96];
  struct http_reply r;
  snprintf(path, sizeof path, "/kernels/%lld/versions/4", tile);
  http_request(&d, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK(!JBOOL(r.json, "kernel_deleted"));
  CHECK_INT_EQ(JINT(r.json, "version"), 4);
  http_reply_free(&r);
  HTTP_EXPECT(&d, "GET", path, 404, "version_not_found", "version");
  snprintf(path, sizeof path, "/kernels/%lld", tile);
  json_t *k = http_get_json(&d, path);
  CHECK_INT_EQ(JINT(k, "version"), 3);
  CHECK_INT_EQ(JINT(k, "versions"), 2);
  json_decref(k);
  snprintf(path, sizeof path, "/kernels/%lld/versions/2", tile);
  HTTP_EXPECT(&d, "DELETE", path, 200, NULL, NULL);
  snprintf(path, sizeof path, "/kernels/%lld/versions/3", tile);
  http_request(&d, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK(JBOOL(r.json, "kernel_deleted"));
  http_reply_free(&r);
  snprintf(path, sizeof path, "/kernels/%lld", tile);
  HTTP_EXPECT(&d, "GET", path, 404, "kernel_not_found", "id");
  /* The name is free again: a new kernel, a new id, version 1. */
  long long id;
  CHECK_INT_EQ(post_ok(&d, "tile", 5, &id), 1);
  CHECK(id != tile);
  long long other;
  CHECK_INT_EQ(post_ok(&d, "other", 3, &other), 3);
  snprintf(path, sizeof path, "/kernels/%lld", other);
  http_request(&d, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK_INT_EQ(JINT(r.json, "versions"), 3);
  http_reply_free(&r);
  snprintf(path, sizeof path, "/kernels/%lld/versions", other);
  HTTP_EXPECT(&d, "GET", path, 404, "kernel_not_found", "id");
  snprintf(path, sizeof path, "kernel:%lld@1", other);
  char body[128];
  snprintf(body, sizeof body, "{\"variant\":\"%s\"}", path);
  http_post_json(&d, "/transpose", body, &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  http_reply_free(&r);
  gpulabd_stop(&d);
}

/* A database of the days before versions (the old kernels table, written here by
 * hand): gpulabd upgrades it in place, each kernel version 1 of itself; two of one
 * name make kernel:<name> ambiguous (400), and the name sent again becomes a version
 * of the newer. SQLite's alone (PostgreSQL's migration: test_store_pg). */
static void test_upgrade(void) {
  if (test_db_is_pg(db)) return;
  /* The old schema, made with SQLite's own library (the fresh root has no sqlite3
   * shell). */
  char old[256], sql[2400];
  snprintf(old, sizeof old, "%s/old.db", dir);
  int at = snprintf(
      sql, sizeof sql, "%s",
      "CREATE TABLE kernels (id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL,"
      " name TEXT NOT NULL, experiment TEXT NOT NULL, public INTEGER NOT NULL,"
      " created REAL NOT NULL, source_sha TEXT NOT NULL, source TEXT NOT NULL,"
      " spec TEXT NOT NULL, report TEXT NOT NULL, image BLOB);\n"
      "CREATE INDEX kernels_owner ON kernels(owner);\n");
  for (int i = 1; i <= 2; i++)
    at += snprintf(sql + at, sizeof sql - (size_t)at,
                   "INSERT INTO kernels(owner, name, experiment, public, created, source_sha,"
                   " source, spec, report) VALUES('127.0.0.1', 'dup', 'transpose', 0, 1000,"
                   " '%064d', '// old %d',"
                   " '{\"entry\":\"kernel\",\"block\":[32,32,1],\"tile\":[32,32]}',"
                   " '{\"ok\":true}');\n",
                   i, i);
  CHECK(at > 0 && (size_t)at < sizeof sql);
  sqlite3 *made = NULL;
  CHECK_INT_EQ(sqlite3_open(old, &made), SQLITE_OK);
  CHECK_INT_EQ(sqlite3_exec(made, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(made);
  const char *up[] = {"--backend", "cpu", "--cpu-runner-test", "--db", old, "--access-log",
                      "off",       NULL};
  struct gpulabd d;
  gpulabd_start(up, &d);
  json_t *list = http_get_json(&d, "/kernels");
  CHECK_INT_EQ(json_array_size(json_at(list, "kernels")), 2);
  CHECK_INT_EQ(JINT(list, "kernels[0].id"), 2);
  CHECK_INT_EQ(JINT(list, "kernels[0].version"), 1);
  CHECK_INT_EQ(JINT(list, "kernels[0].versions"), 1);
  CHECK_STR_EQ(JSTR(list, "kernels[1].href"), "/kernels/1");
  json_decref(list);
  json_t *k = http_get_json(&d, "/kernels/1/versions/1");
  CHECK_STR_EQ(JSTR(k, "source"), "// old 1");
  CHECK_STR_EQ(JSTR(k, "variant"), "kernel:1@1");
  json_decref(k);
  struct http_reply r;
  http_post_json(&d, "/transpose", "{\"variant\":\"kernel:dup\"}", &r);
  CHECK_ERROR(&r, 400, "ambiguous_kernel", "variant");
  CHECK(strstr(JSTR(r.json, "detail"), "ids 2, 1") != NULL);
  http_reply_free(&r);
  long long id;
  CHECK_INT_EQ(post_ok(&d, "dup", 3, &id), 2);
  CHECK_INT_EQ(id, 2);
  /* An old job's run of kernel:1 (its version 1) still reads as before the upgrade. */
  json_t *j = job_of(&d, "kernel:1");
  CHECK_STR_EQ(JSTR(j, "result.runs[0].variant"), "kernel:1@1");
  json_decref(j);
  gpulabd_stop(&d);
  gpulabd_start(up, &d); /* upgraded once: started again, the same */
  k = http_get_json(&d, "/kernels/2");
  CHECK_INT_EQ(JINT(k, "versions"), 2);
  json_decref(k);
  gpulabd_stop(&d);
}

#define ALICE "alice-token-0123456789"
#define BOB "bob-token-0123456789abc"

static void as(struct gpulabd *d, const char *token) {
  snprintf(d->http.token, sizeof d->http.token, "%s", token);
}

/* Owners: the same name from another client is a kernel of its own, not a version of
 * the first's; kernel:<name> is the caller's own; another client sees a kernel whose
 * newest version is public, and of it only the public versions; deletes only its own. */
static void test_owners(void) {
  char tokens[256], tdb[512], path[128], body[160];
  snprintf(tokens, sizeof tokens, "%s/tokens", dir);
  FILE *f = fopen(tokens, "w");
  CHECK(f != NULL);
  fputs(ALICE " alice\n" BOB " bob\n", f);
  fclose(f);
  if (test_db_is_pg(db))
    test_db_make("kernel_versions_owners", tdb, sizeof tdb);
  else
    snprintf(tdb, sizeof tdb, "%s/owners.db", dir);
  const char *targs[] = {"--backend", "cpu", "--cpu-runner-test", "--tokens", tokens,
                         "--db",      tdb,   "--access-log",      "off",      NULL};
  struct gpulabd d;
  gpulabd_start(targs, &d);
  struct http_reply r;
  as(&d, ALICE);
  long long a;
  CHECK_INT_EQ(post_ok(&d, "t", 1, &a), 1);
  char src[400];
  snprintf(src, sizeof src,
           "// public\n"
           "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {}\n");
  http_request(&d, "POST", "/kernels?experiment=transpose&name=t&public=1", "text/x-cuda", src,
               strlen(src), &r);
  CHECK_STATUS(&r, 201);
  CHECK_INT_EQ(JINT(r.json, "version"), 2);
  http_reply_free(&r);
  as(&d, BOB);
  long long b;
  CHECK_INT_EQ(post_ok(&d, "t", 1, &b), 1); /* bob's own "t" */
  CHECK(b != a);
  json_t *j = job_of(&d, "kernel:t");
  snprintf(path, sizeof path, "kernel:%lld@1", b);
  CHECK_STR_EQ(JSTR(j, "result.runs[0].variant"), path);
  json_decref(j);
  /* alice's kernel: its newest version public, so seen, with its public versions only. */
  snprintf(path, sizeof path, "/kernels/%lld/versions", a);
  json_t *list = http_get_json(&d, path);
  CHECK_INT_EQ(json_array_size(json_at(list, "versions")), 1);
  CHECK_INT_EQ(JINT(list, "versions[0].version"), 2);
  json_decref(list);
  snprintf(path, sizeof path, "/kernels/%lld/versions/1", a);
  HTTP_EXPECT(&d, "GET", path, 404, "version_not_found", "version");
  HTTP_EXPECT(&d, "DELETE", path, 404, "version_not_found", "version");
  snprintf(path, sizeof path, "/kernels/%lld/versions/2", a);
  HTTP_EXPECT(&d, "DELETE", path, 403, "not_owner", "id");
  snprintf(path, sizeof path, "/kernels/%lld/diff?from=1&to=2", a);
  HTTP_EXPECT(&d, "GET", path, 404, "version_not_found", "version");
  snprintf(body, sizeof body, "kernel:%lld@2", a); /* public: bob may run it */
  j = job_of(&d, body);
  CHECK_STR_EQ(JSTR(j, "result.runs[0].variant"), body);
  json_decref(j);
  snprintf(body, sizeof body, "{\"variant\":\"kernel:%lld@1\"}", a); /* private: no */
  http_post_json(&d, "/transpose", body, &r);
  CHECK_ERROR(&r, 400, "unknown_variant", "variant");
  http_reply_free(&r);
  /* alice's next version is private: her kernel is hidden from bob again. */
  as(&d, ALICE);
  CHECK_INT_EQ(post_ok(&d, "t", 3, &a), 3);
  as(&d, BOB);
  snprintf(path, sizeof path, "/kernels/%lld/versions", a);
  HTTP_EXPECT(&d, "GET", path, 404, "kernel_not_found", "id");
  list = http_get_json(&d, "/kernels");
  CHECK_INT_EQ(json_array_size(json_at(list, "kernels")), 1); /* his own */
  json_decref(list);
  gpulabd_stop(&d);
  if (test_db_is_pg(db)) test_db_drop(tdb);
}

static int setup(void) {
  dir = test_dir();
  test_db_in("kernel", dir, "versions.db", db, sizeof db);
  return 0;
}

static const struct test_case cases[] = {
    TEST(test_versions),
    TEST_AFTER(test_limits, test_versions),
    TEST_AFTER(test_variants, test_limits),
    TEST_AFTER(test_diff, test_variants),
    TEST_AFTER(test_bad_input, test_diff),
    TEST_AFTER(test_restart, test_bad_input),
    TEST_AFTER(test_delete, test_restart),
    TEST(test_upgrade),
    TEST(test_owners),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = setup};
