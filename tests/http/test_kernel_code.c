/* The compiler's view of a user's kernel over HTTP on a real gpulabd (--backend cpu,
 * NVRTC compiling for real): a version's PTX (the newest, or a version named), who may
 * see it (tokens: alice's and bob's), the 404s and 400s; its SASS, 503 sass_unavailable where the toolkit has no
 * disassembler (this machine's), and through a stand-in nvdisasm on $PATH its 200 and a
 * failing tool's 503; a database of the days before PTX was kept, upgraded in place:
 * its versions answer 404 ptx_not_kept (and, without a CUBIN, cubin_not_kept), a new
 * version has PTX. SQLite, or with $GPULAB_TEST_DB a PostgreSQL database (the upgrade
 * of an old file is SQLite's alone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "http_client.h"
#include "runner.h"
#include "test_db.h"

static const char *dir; /* test_dir() */
static char db[512];
static const char *args[] = {"--backend", "cpu", "--db", db, "--access-log", "off", NULL};

/* The lecture's padded tile: __shared__ float t[32][33], 4224 bytes. */
static const char *const padded33 =
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
    "  __shared__ float t[32][33];\n"
    "  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "  if (x < n && y < m) t[threadIdx.y][threadIdx.x] = a[(size_t)y * n + x];\n"
    "  __syncthreads();\n"
    "  x = blockIdx.y * 32 + threadIdx.x, y = blockIdx.x * 32 + threadIdx.y;\n"
    "  if (x < m && y < n) b[(size_t)y * m + x] = t[threadIdx.x][threadIdx.y];\n}\n";
/* The naive transpose: no shared memory. */
static const char *const naive =
    "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
    "  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "  if (x < n && y < m) b[(size_t)x * m + y] = a[(size_t)y * n + x];\n}\n";

/* POSTs src as transpose kernel name (query: extra, e.g. "&public=1"), expecting 201;
 * returns the kernel's id. */
static long long post_kernel(struct gpulabd *d, const char *name, const char *src,
                             const char *extra) {
  char path[200];
  snprintf(path, sizeof path, "/kernels?experiment=transpose&name=%s&block=32,32&tile=32,32%s",
           name, extra);
  struct http_reply r;
  http_request(d, "POST", path, "text/x-cuda", src, strlen(src), &r);
  CHECK_STATUS(&r, 201);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

/* GET path expecting 200 text/plain; returns its body (the caller frees it). */
static char *get_text(struct gpulabd *d, const char *path) {
  struct http_reply r;
  http_get(d, path, &r);
  if (r.status != 200) CHECK_FAIL_("GET %s: %ld %s", path, r.status, r.body);
  CHECK_STR_EQ(r.content_type, "text/plain; charset=utf-8");
  char *body = strdup(r.body);
  http_reply_free(&r);
  return body;
}

/* The PTX of the newest version and of a version named, as NVRTC gave it: the entry,
 * the target, the padded tile's 4224 shared bytes; HEAD; bad ids and versions. */
static void test_ptx(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  long long id = post_kernel(&d, "tile", padded33, "");
  char path[128];
  snprintf(path, sizeof path, "/kernels/%lld/ptx", id);
  char *ptx = get_text(&d, path);
  CHECK(strstr(ptx, ".entry kernel") != NULL);
  CHECK(strstr(ptx, ".target sm_90") != NULL);
  CHECK(strstr(ptx, ".shared .align 4 .b8") != NULL);
  CHECK(strstr(ptx, "[4224]") != NULL);
  free(ptx);
  CHECK_INT_EQ(post_kernel(&d, "tile", naive, ""), id); /* its version 2, no tile */
  ptx = get_text(&d, path);
  CHECK(strstr(ptx, ".entry kernel") != NULL && strstr(ptx, "[4224]") == NULL);
  free(ptx);
  snprintf(path, sizeof path, "/v1/kernels/%lld/versions/1/ptx", id);
  ptx = get_text(&d, path);
  CHECK(strstr(ptx, "[4224]") != NULL);
  free(ptx);
  struct http_reply r;
  http_request(&d, "HEAD", path, NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_INT_EQ(r.body_len, 0);
  http_reply_free(&r);

  snprintf(path, sizeof path, "/kernels/%lld/versions/3/ptx", id);
  HTTP_EXPECT(&d, "GET", path, 404, "version_not_found", "version");
  snprintf(path, sizeof path, "/kernels/%lld/versions/0/ptx", id);
  HTTP_EXPECT(&d, "GET", path, 400, "out_of_range", "version");
  HTTP_EXPECT(&d, "GET", "/kernels/99999/ptx", 404, "kernel_not_found", "id");
  HTTP_EXPECT(&d, "GET", "/kernels/x/versions/1/ptx", 404, "kernel_not_found", "id");
  snprintf(path, sizeof path, "/kernels/%lld/ptx", id);
  HTTP_EXPECT(&d, "POST", path, 405, "method_not_allowed", NULL);

  gpulabd_stop(&d);
}

#define ALICE "alice-token-0123456789"
#define BOB "bob-token-0123456789abc"

/* Who sees a version's PTX: its owner, or anyone when it is public; another client's
 * private kernel is not there (404, as its other routes). */
static void test_owners(void) {
  char tokens[256];
  snprintf(tokens, sizeof tokens, "%s/tokens", dir);
  FILE *f = fopen(tokens, "w");
  CHECK(f != NULL);
  fputs(ALICE " alice\n" BOB " bob\n", f);
  fclose(f);
  const char *targs[] = {"--backend", "cpu",          "--tokens", tokens, "--db",
                         db,          "--access-log", "off",      NULL};
  struct gpulabd d;
  gpulabd_start(targs, &d);
  snprintf(d.http.token, sizeof d.http.token, "%s", ALICE);
  long long mine = post_kernel(&d, "tile", padded33, "");
  long long open = post_kernel(&d, "open", padded33, "&public=1");
  char path[128];
  snprintf(path, sizeof path, "/kernels/%lld/ptx", mine);
  free(get_text(&d, path));
  snprintf(d.http.token, sizeof d.http.token, "%s", BOB);
  HTTP_EXPECT(&d, "GET", path, 404, "kernel_not_found", "id");
  snprintf(path, sizeof path, "/kernels/%lld/versions/1/ptx", mine);
  HTTP_EXPECT(&d, "GET", path, 404, "kernel_not_found", "id");
  snprintf(path, sizeof path, "/kernels/%lld/sass", mine);
  HTTP_EXPECT(&d, "GET", path, 404, "kernel_not_found", "id");
  snprintf(path, sizeof path, "/kernels/%lld/ptx", open);
  char *ptx = get_text(&d, path);
  CHECK(strstr(ptx, "[4224]") != NULL);
  free(ptx);
  gpulabd_stop(&d);
}

/* Whether this machine has a disassembler where gpulabd looks (usass.h): the toolkit
 * that NVRTC is loaded from here is /usr/local/cuda's. */
static bool disassembler_here(void) {
  static const char *const where[] = {"/usr/local/cuda/bin/nvdisasm",
                                      "/usr/local/cuda/bin/cuobjdump"};
  for (size_t i = 0; i < 2; i++)
    if (access(where[i], X_OK) == 0) return true;
  return system("command -v nvdisasm >/dev/null 2>&1 || command -v cuobjdump >/dev/null 2>&1") == 0;
}

/* The SASS by the toolkit's disassembler: where it has none (this machine's CUDA
 * toolkit), 503 sass_unavailable saying what to install (where it looked: the log). */
static void test_sass(void) {
  struct gpulabd d;
  gpulabd_start(args, &d);
  long long id = post_kernel(&d, "tile", padded33, "");
  char path[128];
  snprintf(path, sizeof path, "/kernels/%lld/sass", id);
  struct http_reply r;
  http_get(&d, path, &r);
  if (disassembler_here()) { /* a full toolkit: the real listing */
    CHECK_INT_EQ(r.status, 200);
    CHECK(strstr(r.body, "kernel") != NULL);
    printf("a disassembler is here: %zu bytes of SASS\n", r.body_len);
  } else {
    CHECK_ERROR(&r, 503, "sass_unavailable", NULL);
    const char *detail = JSTR(r.json, "detail");
    CHECK(strstr(detail, "nvdisasm") != NULL && strstr(detail, "cuobjdump") != NULL);
    CHECK(strstr(detail, "bin folder") != NULL && strstr(detail, "$PATH") != NULL);
    CHECK(strstr(detail, "/usr/local") == NULL); /* where it looked: the log's */
    CHECK(strstr(detail, "cuda-nvdisasm") != NULL);
    printf("no disassembler: %s\n", detail);
  }
  http_reply_free(&r);
  snprintf(path, sizeof path, "/kernels/%lld/versions/2/sass", id);
  HTTP_EXPECT(&d, "GET", path, 404, "version_not_found", "version");
  HTTP_EXPECT(&d, "GET", "/kernels/99999/sass", 404, "kernel_not_found", "id");
  gpulabd_stop(&d);
}

/* A stand-in nvdisasm on $PATH (where the toolkit has none): gpulabd runs it with
 * --print-code on a private copy of the CUBIN, removed after, and answers what it
 * wrote; a tool that fails gives 503 with its exit and message. */
static void test_sass_tool(void) {
  if (disassembler_here()) {
    printf("skipped: a real disassembler is found first here\n");
    return;
  }
  char bin[512], tool[600], fail[600], seen[600], path[1200];
  snprintf(bin, sizeof bin, "%s/bin", dir);
  snprintf(tool, sizeof tool, "%s/nvdisasm", bin);
  snprintf(fail, sizeof fail, "%s/fail", dir);
  snprintf(seen, sizeof seen, "%s/seen", dir);
  CHECK(mkdir(bin, 0700) == 0);
  FILE *f = fopen(tool, "w");
  CHECK(f != NULL);
  fprintf(f,
          "#!/bin/sh\n"
          "if [ -e '%s' ]; then echo 'nvdisasm fatal : bad cubin' >&2; exit 3; fi\n"
          "echo \"$2\" > '%s'\n"
          "echo \"stand-in $1\"; od -An -c -N4 \"$2\"\n",
          fail, seen);
  fclose(f);
  CHECK(chmod(tool, 0700) == 0);
  const char *old = getenv("PATH");
  char *saved = strdup(old ? old : "");
  snprintf(path, sizeof path, "%s:%s", bin, saved);
  setenv("PATH", path, 1); /* the gpulabd started now inherits it */
  struct gpulabd d;
  gpulabd_start(args, &d);
  setenv("PATH", saved, 1);
  free(saved);
  long long id = post_kernel(&d, "tile", padded33, "");
  char url[128];
  snprintf(url, sizeof url, "/kernels/%lld/versions/1/sass", id);
  char *sass = get_text(&d, url);
  CHECK(strstr(sass, "stand-in --print-code") == sass);
  CHECK(strstr(sass, "E   L   F") != NULL); /* the CUBIN's ELF magic, as the tool read it */
  free(sass);
  char copy[512] = "";
  f = fopen(seen, "r");
  CHECK(f != NULL && fgets(copy, sizeof copy, f) != NULL);
  fclose(f);
  copy[strcspn(copy, "\n")] = '\0';
  CHECK(strstr(copy, "gpulab-cubin-") != NULL);
  CHECK(access(copy, F_OK) != 0); /* removed after */
  f = fopen(fail, "w");
  CHECK(f != NULL);
  fclose(f);
  struct http_reply r;
  http_get(&d, url, &r);
  CHECK_ERROR(&r, 503, "sass_unavailable", NULL);
  CHECK(strstr(JSTR(r.json, "detail"), "exited with 3: nvdisasm fatal : bad cubin") != NULL);
  http_reply_free(&r);
  gpulabd_stop(&d);
}

/* A database of the days before PTX was kept (today's kernels table without its ptx
 * column, written here by hand): gpulabd adds the column in place; the old version
 * answers 404 ptx_not_kept, and its SASS 404 cubin_not_kept (no CUBIN in this hand-made
 * row); the source posted again makes a version with PTX. SQLite's alone (PostgreSQL's
 * migration: test_store_pg). */
static void test_upgrade(void) {
  if (test_db_is_pg(db)) return;
  char old[256];
  snprintf(old, sizeof old, "%s/old.db", dir);
  const char *sql =
      "CREATE TABLE kernels (id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL,"
      " name TEXT NOT NULL, experiment TEXT NOT NULL, public INTEGER NOT NULL,"
      " created REAL NOT NULL, source_sha TEXT NOT NULL, source TEXT NOT NULL,"
      " spec TEXT NOT NULL, report TEXT NOT NULL, image BLOB, kernel_of INTEGER,"
      " version INTEGER NOT NULL DEFAULT 1);\n"
      "CREATE INDEX kernels_owner ON kernels(owner);\n"
      "INSERT INTO kernels(owner, name, experiment, public, created, source_sha, source, spec,"
      " report) VALUES('127.0.0.1', 'old', 'transpose', 0, 1000,"
      " '0000000000000000000000000000000000000000000000000000000000000000', '// old',"
      " '{\"entry\":\"kernel\",\"block\":[32,32,1],\"tile\":[32,32]}', '{\"ok\":true}');\n";
  sqlite3 *made = NULL;
  CHECK_INT_EQ(sqlite3_open(old, &made), SQLITE_OK);
  CHECK_INT_EQ(sqlite3_exec(made, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(made);
  const char *up[] = {"--backend", "cpu", "--db", old, "--access-log", "off", NULL};
  struct gpulabd d;
  gpulabd_start(up, &d);
  struct http_reply r;
  http_get(&d, "/kernels/1/ptx", &r);
  CHECK_ERROR(&r, 404, "ptx_not_kept", "version");
  CHECK(strstr(JSTR(r.json, "detail"), "stored before gpulab kept PTX") != NULL);
  CHECK(strstr(JSTR(r.json, "detail"), "post its source again") != NULL);
  http_reply_free(&r);
  HTTP_EXPECT(&d, "GET", "/kernels/1/versions/1/ptx", 404, "ptx_not_kept", "version");
  HTTP_EXPECT(&d, "GET", "/kernels/1/sass", 404, "cubin_not_kept", "version");
  CHECK_INT_EQ(post_kernel(&d, "old", padded33, ""), 1); /* its version 2, with PTX */
  char *ptx = get_text(&d, "/kernels/1/ptx");
  CHECK(strstr(ptx, "[4224]") != NULL);
  free(ptx);
  HTTP_EXPECT(&d, "GET", "/kernels/1/versions/1/ptx", 404, "ptx_not_kept", "version");
  gpulabd_stop(&d);
  gpulabd_start(up, &d); /* upgraded once: started again, the same */
  ptx = get_text(&d, "/kernels/1/versions/2/ptx");
  free(ptx);
  gpulabd_stop(&d);
}

static int setup(void) {
  dir = test_dir();
  test_db_in("kernel", dir, "code.db", db, sizeof db);
  return 0;
}

static void reset(void) { test_db_reset(db); }

static void teardown(void) {
  if (test_db_is_pg(db)) test_db_drop(db);
}

static const struct test_case cases[] = {TEST(test_ptx),       TEST(test_owners),  TEST(test_sass),
                                         TEST(test_sass_tool), TEST(test_upgrade), TEST_END};
const struct test_suite test_suite = {
    .cases = cases, .setup = setup, .before_each = reset, .teardown = teardown};
