/* The accept journal: an append-only file beside an SQLite database that makes a job's
 * row durable (as durable as a commit with synchronous=NORMAL: it survives gpulabd
 * crashing, not a power loss) with one write(), where a commit writes whole 4 KiB
 * pages to the WAL. store_sync journals the row an answer waits for (a job's first
 * row, or its final one) and returns; the store's writer commits it to the database
 * later, with the rows gathered meanwhile, and then its journal entry is no longer
 * needed. At the next start, entries the database lacks are applied to it
 * (store_open) before anything reads it.
 *
 * Two files, <db>-accepted.0 and .1, one being appended to: a file whose rows are all
 * in the database is truncated, and appends move to the other once a file passes
 * JOURNAL_SWITCH_BYTES and the other is empty, so that under steady load neither
 * grows past it by more than the rows not yet committed. An entry is a header (its
 * length and a checksum) and the row's fields; an entry cut short or not matching its
 * checksum ends the file's replay (a power loss's torn tail).
 *
 * Thread-safe: appends (and the truncations they race with) are serialized on the
 * journal's own lock, so that a caller encodes an entry under its own lock and writes
 * it outside. Errors are negative errnos. */
#ifndef GPULAB_JOURNAL_H
#define GPULAB_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOURNAL_SWITCH_BYTES (1u << 20)

struct journal;

/* One entry: a job's row as the store keeps it (store.h's struct store_row's job
 * fields). */
struct journal_entry {
  uint64_t id;
  double created, finished;
  bool create;
  const char *client, *type, *state;
  const char *record;  /* NULL: none */
  const void *request; /* NULL: none */
  size_t request_len;
};

/* Every entry in the journal beside database file db, file by file, oldest first:
 * fn(arg, e), e valid during the call. fn returns 0 to go on, or a negative errno
 * that ends the read. Returns the entries read (0 when there are no files), or fn's
 * error, or a negative errno when a file cannot be read. */
int journal_read(const char *db, int (*fn)(void *arg, const struct journal_entry *e), void *arg);

/* Opens the journal beside db for appending, empty (what was in it was applied by
 * now). 0 or a negative errno with why. */
int journal_open(const char *db, struct journal **out, char *why, size_t why_len);

/* Closes j (NULL: a no-op); the files are removed when every row appended was
 * committed (journal_committed), and kept for the next start otherwise. */
void journal_close(struct journal *j);

/* e as an entry's bytes (malloc'd, *len of them; NULL when out of memory or too
 * large): a copy, for journal_append to write after e's memory may have changed.
 * Every entry made goes to journal_append; from here on, journal_held_ids names e's
 * job until the file it went to is truncated. */
void *journal_encode(struct journal *j, const struct journal_entry *e, size_t *len);

/* Appends an entry journal_encode made (its checksum made here) in one write: when it
 * returns, a crash of the process keeps it. Returns the file it went to (0 or 1:
 * journal_committed's gen), or a negative errno (the file is as it was). */
int journal_append(struct journal *j, void *entry, size_t len);

/* The ids of the jobs the journal may hold an entry of (encoded and not yet appended,
 * or in a file not truncated since), sorted, in *ids (malloc'd; NULL when none), *n of
 * them. Were such a job's row deleted, the next start's replay of its entry would
 * bring the job back (finished, it would be queued again): a prune notes it for the
 * replay to skip (store_sqlite_query.c). 0, or -ENOMEM. */
int journal_held_ids(struct journal *j, uint64_t **ids, size_t *n);

/* n rows appended to file gen are committed to the database: a file with none left
 * uncommitted is truncated. */
void journal_committed(struct journal *j, int gen, uint64_t n);

#endif
