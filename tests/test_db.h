/* The database a test gives gpulabd or the store (--db): an SQLite file by default,
 * or, with $GPULAB_TEST_DB set (a PostgreSQL cluster's URI, as tests/pg/pg_cluster.sh
 * prints it; ctest's *_pg entries set it), a database of that cluster of the test's
 * own. Failures print why and exit 1 (check.h's style). */
#ifndef GPULAB_TEST_DB_H
#define GPULAB_TEST_DB_H

#include <stdbool.h>
#include <stddef.h>

/* Into out: /tmp/gpulab-<name>-<pid>.db, or the URI of database <name>_<pid> of the
 * cluster, made empty. name: lower case letters, digits and '_'. */
void test_db_make(const char *name, char *out, size_t len);
/* Empties db: the SQLite file and its WAL removed, or the database dropped and made
 * again (nothing may be connected to it). */
void test_db_reset(const char *db);
/* Removes db for good (at the end of a test). */
void test_db_drop(const char *db);
/* Into out, a test's --db: with $GPULAB_TEST_DB, database <prefix>_<file's stem>
 * (test_db_make: made empty); else <dir>/<file>, left as it is. */
void test_db_in(const char *prefix, const char *dir, const char *file, char *out, size_t len);
/* Whether $GPULAB_TEST_DB is set: the test runs on PostgreSQL (ctest's *_pg entries),
 * where the cases of SQLite's file alone pass at once (and PostgreSQL's alone run). */
bool test_db_on_pg(void);
/* Whether db is a PostgreSQL URI: the tests that are SQLite's alone (a read-only
 * file, a file size limit, a corrupted file, the file's lock) ask this. */
bool test_db_is_pg(const char *db);

#endif
