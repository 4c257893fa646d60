"""A content-addressed cache of completed lane and judge calls, in one SQLite file.

Key: ``sha256`` of the canonical JSON of (the lane or judge definition's fingerprint, the rendered request, the
sample index); see :func:`cache_key`. Only the hash is stored as the key. The value is the call's JSON result; the
rendered request body may be stored beside it for inspection (it never contains an API key: keys travel in HTTP
headers, which are not part of the request). Only successful calls are put; a failed call is simply retried next run.

Modes (``--no-cache`` / ``--refresh``):

* ``use`` (default): read hits, write new results;
* ``off``: neither read nor write, and the file is never opened or created;
* ``refresh``: ignore what is stored, run every call, overwrite the stored result.

Provenance: a cache opened for a run stamps what it puts with the run's id and this process's attempt (a random
nonce), so :meth:`CallCache.fetch` can tell a *replay* (an answer this same run got before it was interrupted, now
read back by ``--resume``) from a *cached* answer (one an earlier run got, or a repeat of the same request earlier in
this attempt). Token accounting counts a replay as the run's own call, so a resumed run reports what an
uninterrupted one does; a replayed key is remembered (its 32-byte digest) so a repeat of it counts as cached, as it
would have uninterrupted. Entries written before stamps existed, or without a run, count as cached.

Durability and concurrency: WAL journal, ``synchronous=NORMAL``, one short transaction per put, a busy timeout for
writers in other processes. A process killed with SIGKILL loses at most the put in progress; the file stays
consistent (SQLite's journal guarantees it) and the next open recovers the WAL. One ``CallCache`` may be shared by
every coroutine of an event loop and by worker threads (a lock serialises use of the connection).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalglass.engine.runfolder import make_dirs

if TYPE_CHECKING:
    import sqlite3

SCHEMA_VERSION = "1"


class CacheMode(StrEnum):
    USE = "use"
    OFF = "off"
    REFRESH = "refresh"


def canonical_json(value: Any) -> bytes:
    """Deterministic JSON bytes: sorted keys, no whitespace, UTF-8. Non-JSON values raise TypeError."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def cache_key(fingerprint: str, request: Any, sample: int) -> str:
    """The content address of one call: sha256 over (definition fingerprint, rendered request, sample index)."""
    return hashlib.sha256(canonical_json({"f": fingerprint, "r": request, "s": sample})).hexdigest()


@dataclass(frozen=True, slots=True)
class Hit:
    """A stored result and whether it replays a call this same run made before it was interrupted."""

    value: Any
    replayed: bool


class CallCache:
    """Get/put JSON results by content address. Use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        path: str | Path,
        mode: CacheMode | str = CacheMode.USE,
        *,
        store_requests: bool = True,
        busy_timeout: float = 30.0,
        run: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.mode = CacheMode(mode)
        self.store_requests = store_requests
        self.run = run
        self.attempt = os.urandom(8).hex()
        self._replayed: set[bytes] = set()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if self.mode is not CacheMode.OFF:
            self._db = _open(self.path, busy_timeout)

    @classmethod
    def disabled(cls) -> CallCache:
        return cls(Path("/nonexistent-evalglass-cache"), CacheMode.OFF)

    def get(self, key: str) -> Any | None:
        """The stored result for ``key``; None on a miss, in ``off`` and in ``refresh`` mode."""
        hit = self.fetch(key)
        return None if hit is None else hit.value

    def fetch(self, key: str) -> Hit | None:
        """As :meth:`get`, with the result's provenance (see the module's docstring)."""
        if self.mode is not CacheMode.USE or self._db is None:
            return None
        with self._lock:
            row = self._db.execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
            value = orjson.loads(row[0])
            replayed = False
            if self._from_an_earlier_attempt(value):
                digest = bytes.fromhex(key) if len(key) == 64 else key.encode()
                replayed = digest not in self._replayed
                self._replayed.add(digest)
        return Hit(value, replayed)

    def _from_an_earlier_attempt(self, value: Any) -> bool:
        """Put by this run, in a process before this one (a run that was interrupted and is now resumed)."""
        return (
            self.run is not None
            and isinstance(value, dict)
            and value.get("run") == self.run
            and value.get("attempt") != self.attempt
        )

    def put(self, key: str, value: Any, *, kind: str, request: Any = None) -> bool:
        """Store a successful call's JSON result; returns False when nothing was written (``off`` mode)."""
        if self.mode is CacheMode.OFF or self._db is None:
            return False
        if self.run is not None and isinstance(value, dict):
            value = {**value, "run": self.run, "attempt": self.attempt}
        payload = canonical_json(value)
        stored_request = canonical_json(request) if (self.store_requests and request is not None) else None
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO calls (key, kind, value, request, created) VALUES (?, ?, ?, ?, ?)",
                (key, kind, payload, stored_request, time.time()),
            )
        self.writes += 1
        return True

    def __len__(self) -> int:
        if self._db is None:
            return 0
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open(path: Path, busy_timeout: float) -> sqlite3.Connection:
    import sqlite3  # only live runs open the cache; a recorded run imports this module for CacheMode alone

    make_dirs(path.parent)
    db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"cannot switch {path} to WAL mode (got {mode})")
        db.execute("PRAGMA synchronous = NORMAL")
        with db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS calls ("
                " key TEXT PRIMARY KEY, kind TEXT NOT NULL, value BLOB NOT NULL, request BLOB, created REAL NOT NULL"
                ") WITHOUT ROWID"
            )
            db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
        version = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()[0]
        if version != SCHEMA_VERSION:
            raise sqlite3.OperationalError(
                f"{path} has cache schema {version}, this EvalGlass expects {SCHEMA_VERSION}: delete the file"
            )
    except BaseException:
        db.close()
        raise
    return db


__all__ = ["CacheMode", "CallCache", "Hit", "cache_key", "canonical_json"]
