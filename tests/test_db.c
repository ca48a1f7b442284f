/* The tests' databases (test_db.h): SQLite files, or databases of a PostgreSQL
 * cluster made and dropped through libpq. */
#include "test_db.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool test_db_is_pg(const char *db) {
  return strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0;
}

/* The URI's database name (its path, up to '?'), into name. */
static void db_name(const char *uri, char *name, size_t len) {
  const char *path = strchr(strstr(uri, "://") + 3, '/');
  size_t n = path ? strcspn(path + 1, "?") : 0;
  snprintf(name, len, "%.*s", (int)n, path ? path + 1 : "");
}

/* sql on the cluster's own database ($GPULAB_TEST_DB's). */
static void admin(const char *sql) {
  const char *base = getenv("GPULAB_TEST_DB");
  PGconn *c = PQconnectdb(base);
  PGresult *res = PQstatus(c) == CONNECTION_OK ? PQexec(c, sql) : NULL;
  if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
    fprintf(stderr, "FAIL: %s on %s: %s", sql, base, PQerrorMessage(c));
    exit(1);
  }
  PQclear(res);
  PQfinish(c);
}

void test_db_make(const char *name, char *out, size_t len) {
  const char *base = getenv("GPULAB_TEST_DB");
  if (!base || !*base) {
    snprintf(out, len, "/tmp/gpulab-%s-%d.db", name, (int)getpid());
    test_db_reset(out);
    return;
  }
  if (!test_db_is_pg(base)) {
    fprintf(stderr, "FAIL: GPULAB_TEST_DB=%s is not a postgresql:// URI\n", base);
    exit(1);
  }
  const char *path = strchr(strstr(base, "://") + 3, '/');
  const char *query = path ? strchr(path, '?') : NULL;
  int head = path ? (int)(path - base) : (int)strlen(base);
  snprintf(out, len, "%.*s/%s_%d%s", head, base, name, (int)getpid(), query ? query : "");
  test_db_reset(out);
}

void test_db_in(const char *prefix, const char *dir, const char *file, char *out, size_t len) {
  if (!test_db_on_pg()) {
    snprintf(out, len, "%s/%s", dir, file);
    return;
  }
  char name[64];
  snprintf(name, sizeof name, "%s_%.*s", prefix, (int)strcspn(file, "."), file);
  test_db_make(name, out, len);
}

bool test_db_on_pg(void) {
  const char *base = getenv("GPULAB_TEST_DB");
  return base && *base;
}

void test_db_reset(const char *db) {
  char sql[300];
  if (!test_db_is_pg(db)) {
    snprintf(sql, sizeof sql, "rm -f '%s' '%s-wal' '%s-shm'", db, db, db);
    if (system(sql) != 0) fprintf(stderr, "warning: %s failed\n", sql);
    return;
  }
  char name[64];
  db_name(db, name, sizeof name);
  snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
  admin(sql);
  snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
  admin(sql);
}

void test_db_drop(const char *db) {
  if (!test_db_is_pg(db)) return test_db_reset(db);
  char name[64], sql[128];
  db_name(db, name, sizeof name);
  snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
  admin(sql);
}
