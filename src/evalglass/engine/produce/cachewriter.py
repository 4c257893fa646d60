"""Group commit for the call cache: puts are committed by a thread of their own, many to a transaction.

Why: a transaction per put cost the event loop about 0.1 ms per call (SQLite writes the B-tree pages it touched to
the WAL at every commit), the largest single item of a cached chat call on the loop. Here the puts of a few
milliseconds go into one ``executemany`` transaction on a thread of their own, so the commit (and any wait for
another process's lock) happens off the caller's thread. It saves commits, not page writes: keys are hashes, so a
group's rows land on about as many leaf pages as it has rows (BENCHMARKS.md, case 11c).

The rule (what a SIGKILL can lose): a put is committed within :data:`LINGER` seconds plus one commit of being made,
unless the writer thread is starved of CPU; and at most :data:`LIMIT` puts are ever waiting (a put that would be the
next one waits for the commit in progress), so a process killed outright loses at most :data:`LIMIT` results, in
practice the few of the last milliseconds. That is safe because nothing else depends on a put being on disk: a
resumed run re-evaluates every example through the cache (it reads nothing from an interrupted run's partial
``scores.jsonl``), so a lost put is one call made again, exactly like the call that was in flight at the kill. Every
other way a run ends (it finishes, Ctrl-C or SIGTERM, an exception) commits everything first: ``flush`` and
``close`` wait for it, and the run closes its cache before it commits its artifacts.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

#: How long the writer gathers puts before it commits them (seconds).
LINGER = 0.005
#: Puts waiting at most: the writer commits at once when this many wait, and a put beyond it waits for the commit.
LIMIT = 128

Row = tuple[str, str, bytes, bytes | None, float, bytes]  # key, kind, value, request, created, mac
_INSERT = "INSERT OR REPLACE INTO calls (key, kind, value, request, created, mac) VALUES (?, ?, ?, ?, ?, ?)"


class GroupWriter:
    """Rows for the ``calls`` table, committed in groups by a daemon thread on ``db`` (a connection no other
    thread uses). ``pending`` answers reads of what is not committed yet, so a put is visible at once."""

    def __init__(self, db: sqlite3.Connection, *, linger: float = LINGER, limit: int = LIMIT) -> None:
        self._db = db
        self._linger = linger
        self._limit = limit
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # the writer waits here for rows, or for more of them
        self._settled = threading.Condition(self._lock)  # flushes and full puts wait here for a commit
        self._rows: list[Row] = []
        #: Values not committed yet, by key (the newest put of a key wins, as it will in the table).
        self.pending: dict[str, bytes] = {}
        self._added = 0  # puts accepted so far
        self._done = 0  # of them, committed or given up on
        self._hurry = False  # a flush is waiting: commit without lingering
        self._closing = False
        self._thread: threading.Thread | None = None
        self._owner = os.getpid()
        #: The first reason a commit failed; from then on nothing more is written (every later put is counted as
        #: unstored), since each further commit would fail the same way or wait out the busy timeout again.
        self.failure: str | None = None
        self.written = 0
        self.unstored = 0

    def add(self, row: Row) -> bool:
        """Queue one row; False (and counted as unstored) when writing failed earlier or the writer is closed."""
        with self._lock:
            while len(self._rows) >= self._limit and self.failure is None and not self._closing:
                self._work.notify()
                self._settled.wait()
            if self.failure is not None or self._closing:
                self.unstored += 1
                return False
            self._rows.append(row)
            self.pending[row[0]] = row[2]
            self._added += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="evalglass-cache-writer", daemon=True)
                self._thread.start()
            elif len(self._rows) == 1 or len(self._rows) >= self._limit:
                self._work.notify()  # the first row wakes the writer; more rows wait out its linger
        return True

    def flush(self) -> None:
        """Return once every row added before this call is committed (or given up on)."""
        with self._lock:
            target = self._added
            while self._done < target and self._thread is not None and self._thread.is_alive():
                self._hurry = True
                self._work.notify()
                self._settled.wait()

    def close(self) -> None:
        """Commit what is queued, stop the thread, close the connection. Idempotent; a forked child (which has no
        writer thread and must not use its parent's connection) does nothing."""
        if os.getpid() != self._owner:
            return
        with self._lock:
            if self._closing:
                return
            self._closing = True
            self._work.notify()
            thread = self._thread
        if thread is not None:
            thread.join()
        self._db.close()

    # ------------------------------------------------------------------ the writer thread
    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._rows and not self._closing:
                    self._work.wait()
                if not self._rows:
                    return
                deadline = time.monotonic() + self._linger
                while not (self._closing or self._hurry or len(self._rows) >= self._limit):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._work.wait(left)
                batch, self._rows = self._rows, []
                self._hurry = False
                failed = self.failure is not None
            if not failed:
                failed = not self._commit(batch)
            with self._lock:
                for key, _, value, *_ in batch:
                    if self.pending.get(key) is value:  # not replaced by a newer put meanwhile
                        del self.pending[key]
                if failed:
                    self.unstored += len(batch)
                else:
                    self.written += len(batch)
                self._done += len(batch)
                self._settled.notify_all()

    def _commit(self, batch: list[Row]) -> bool:
        """One transaction for the whole batch; False (and :attr:`failure` set) when it could not be written."""
        import sqlite3

        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            db.executemany(_INSERT, batch)
            db.execute("COMMIT")
        except Exception as exc:  # sqlite3.Error (a full disk, a lock held too long), or anything unforeseen
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            with self._lock:
                self.failure = str(exc) if isinstance(exc, sqlite3.Error) else f"{type(exc).__name__}: {exc}"
            return False
        return True


__all__ = ["LIMIT", "LINGER", "GroupWriter", "Row"]
