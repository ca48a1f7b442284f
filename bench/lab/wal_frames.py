#!/usr/bin/env python3
"""WAL frames (4 KiB pages) per commit of the tiny job's rows on gpulabd's SQLite schema
(issue 16): a ?wait=0 job (its queued row inserted, then its final row updated, two
commits) and a waited job (its final row inserted, one commit), with the request kept
in the final row and without it (b37165e). Sizes are the tiny job's; times include
Python's own. Not a test: it counts.
  python3 bench/lab/wal_frames.py [JOBS]   (default 3000)"""
import os
import sqlite3
import sys
import tempfile
import time

REQUEST, QUEUED_RECORD, FINAL_RECORD = 408, 595, 1851  # bytes, as gpulabd stores them


def setup(path):
    c = sqlite3.connect(path, isolation_level=None)
    for pragma in ("auto_vacuum=INCREMENTAL", "journal_mode=WAL", "synchronous=NORMAL",
                   "wal_autocheckpoint=0"):
        c.execute("PRAGMA " + pragma)
    c.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, client TEXT NOT NULL, type TEXT NOT NULL,"
              " state TEXT NOT NULL, created REAL NOT NULL, finished REAL NOT NULL DEFAULT 0,"
              " request BLOB, record TEXT)")
    c.execute("CREATE INDEX jobs_unfinished ON jobs(state) WHERE state IN ('queued', 'waiting', 'running')")
    return c


def frames(wal):
    return (os.path.getsize(wal) - 32) // (4096 + 24) if os.path.exists(wal) else 0


def commit(c, wal, sql, args):
    f0, t0 = frames(wal), time.perf_counter()
    c.execute("BEGIN")
    c.execute(sql, args)
    c.execute("COMMIT")
    return frames(wal) - f0, time.perf_counter() - t0


def run(kind, drop, n, folder):
    path = os.path.join(folder, "%s-%d.db" % (kind, drop))
    c, wal = setup(path), path + "-wal"
    sums = [[0, 0.0], [0, 0.0]]
    for i in range(1, n + 1):
        if kind == "accept":
            steps = [("INSERT INTO jobs VALUES (?, 'anon', 'transpose', 'queued', 1.0, 0, ?, ?)",
                      (i, b"r" * REQUEST, "q" * QUEUED_RECORD)),
                     ("UPDATE jobs SET state='done', finished=2.0, record=?%s WHERE id=?"
                      % (", request=NULL" if drop else ""), ("d" * FINAL_RECORD, i))]
        else:
            steps = [("INSERT INTO jobs VALUES (?, 'anon', 'transpose', 'done', 1.0, 2.0, ?, ?)",
                      (i, None if drop else b"r" * REQUEST, "d" * FINAL_RECORD))]
        for k, (sql, args) in enumerate(steps):
            f, t = commit(c, wal, sql, args)
            sums[k][0] += f
            sums[k][1] += t
        if frames(wal) > 20000:
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = c.execute("PRAGMA page_count").fetchone()[0] / n
    what = ["insert", "update"] if kind == "accept" else ["insert"]
    print("%-7s request %-7s %s, pages/job %.2f" % (
        kind, "dropped" if drop else "kept", ", ".join(
            "%s %.2f frames %.0f us" % (w, sums[k][0] / n, sums[k][1] / n * 1e6) for k, w in enumerate(what)),
        pages))


if __name__ == "__main__":
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    with tempfile.TemporaryDirectory() as folder:
        for kind in ("accept", "waited"):
            for drop in (False, True):
                run(kind, drop, jobs, folder)
