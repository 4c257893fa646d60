"""A content-addressed cache of completed lane and judge calls, in one SQLite file.

Key: the content address of (the lane or judge definition's fingerprint, the rendered request, the sample index);
see :func:`evalglass.lanes.callcache.cache_key`, where the get → call → put sequence lanes and judges use lives too.
Only the hash is stored as the key. The value is the call's JSON result; the rendered request body may be stored
beside it for inspection (it never contains an API key: keys travel in HTTP headers, which are not part of the
request). Only successful calls are put; a failed call is simply retried next run.

An agent's step after its first stores, as its request, the key of the step before and the messages added since
(``{"added": [...], "extends": key, "from": n}``, :meth:`evalglass.lanes.callcache.GrownRequest.stored`): each
step's request is the one before plus what was added, so storing it whole put n growing copies of the conversation
in the file (quadratic in a trajectory's length). :func:`stored_request` follows the links back to a whole request
and rebuilds any step's. Answers never depend on this column: an entry is found by its key, the hash of the whole
request (the conversation included), so no answer is ever served for another conversation, and entries stored
whole by an earlier EvalGlass answer as before (and end the chains of later steps that extend them).

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

Trust (docs/caching.md): the file lies in the project, where a pull request can commit one, so no entry is taken
on the file's word. Every put stores an HMAC-SHA256 over the entry's key and value under the cache's secret
(:mod:`evalglass.engine.produce.cachekey`: ``EVALGLASS_CACHE_KEY``, else a per-user key file outside the project),
and a read whose MAC does not verify (another key, no MAC: an older EvalGlass's entry, or one written by hand) is a
*miss*: the call is made and its answer overwrites the entry. Such entries are counted (:attr:`CallCache.unvouched`)
and :meth:`CallCache.problems` says how many in one warning line. What this process put and has not committed yet
is read from memory, never from the file, so it needs no check. A replayed entry the run put after finding an
unvouched one carries ``"unvouched": true``, so a resumed run counts what an uninterrupted one does.

Durability and concurrency: WAL journal, ``synchronous=NORMAL``, a busy timeout for writers in other processes.
Puts are committed in groups by a writer thread (:mod:`evalglass.engine.produce.cachewriter`): a put is visible to reads
at once and committed within a few milliseconds; a process killed with SIGKILL loses at most the puts of those last
milliseconds (never more than ``cachewriter.LIMIT``), which a resumed run simply makes again. The file stays
consistent (SQLite's journal guarantees it) and the next open recovers the WAL. :meth:`CallCache.flush`,
:meth:`CallCache.problems` and :meth:`CallCache.close` wait until every put is committed. One ``CallCache`` may be
shared by every coroutine of an event loop and by worker threads (a lock serialises use of the read connection; the
writer thread has a connection of its own).

When the cache cannot be used (docs/lanes.md, "When the cache cannot be written"):

* it cannot be opened for writing (a read-only folder or file system, permission denied, a file that is not a
  cache, a lock held past the busy timeout): :class:`CacheUnavailable`, one line with the reason and the fix; the run
  stops before any call is made (exit 2), since running uncached would pay for every call again and leave nothing to
  resume from, and that is the user's choice (``--no-cache``), not ours;
* a write fails once the run is under way (the disk fills up, an I/O error, a lock held too long): the result in
  hand is real, so the run goes on; the cache stops writing for the rest of the run (each further put would fail
  the same way, a lock after a busy timeout each) and :meth:`CallCache.problems` says, in one warning line, how many
  results were not stored and why. A read that fails is a miss, and reading stops the same way.
"""

from __future__ import annotations

import errno
import hmac
import os
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalglass.core.fingerprint import address_json
from evalglass.engine.produce.cachekey import CacheSecret, cache_secret
from evalglass.engine.produce.cachemode import CacheMode as CacheMode
from evalglass.engine.produce.cachewriter import GroupWriter
from evalglass.engine.runs.runfolder import make_dirs
from evalglass.errors import SetupError
from evalglass.lanes.callcache import EXTENDS, Hit, cache_key, stored_request_bytes

if TYPE_CHECKING:
    import sqlite3

SCHEMA_VERSION = "1"
#: What an entry's MAC covers besides its key and value: names this use of the secret and its layout.
_MAC_DOMAIN = b"evalglass.call-cache/1\0"


class EntryMac:
    """HMAC-SHA256 over (key, value) under one secret: the key's length first, so no two (key, value) pairs share a
    message. The keyed state is made once and copied per entry, which costs about a third of a one-shot
    ``hmac.digest`` (≈ 1 µs against 3 µs for a 400-byte answer)."""

    __slots__ = ("_keyed",)

    def __init__(self, secret: bytes) -> None:
        self._keyed = hmac.new(secret, _MAC_DOMAIN, "sha256")

    def __call__(self, key: str, value: bytes) -> bytes:
        mac = self._keyed.copy()
        encoded = key.encode()
        mac.update(len(encoded).to_bytes(4, "big") + encoded)
        mac.update(value)
        return mac.digest()


def entry_mac(secret: bytes, key: str, value: bytes) -> bytes:
    """The MAC an entry stored under ``secret`` carries (see :class:`EntryMac`)."""
    return EntryMac(secret)(key, value)


class CacheUnavailable(SetupError):
    """The call cache cannot be opened for writing: the run stops before its first call (exit 2)."""


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
        secret: CacheSecret | None = None,
    ) -> None:
        """``secret``: the key entries are vouched for with (default: :func:`cache_secret`, which may raise
        :class:`SetupError` in one line); unused, and never looked up, in ``off`` mode."""
        self.path = Path(path)
        self.mode = CacheMode(mode)
        self.store_requests = store_requests
        self.run = run
        self.attempt = os.urandom(8).hex()
        self._replayed: set[bytes] = set()
        #: Keys of entries found in the file whose MAC did not verify under this cache's secret (read as misses).
        self._unvouched: set[str] = set()
        self.secret: CacheSecret | None = None
        self._mac: EntryMac | None = None
        self.hits = 0
        self.misses = 0
        self._read_failure: str | None = None
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._writer: GroupWriter | None = None
        if self.mode is not CacheMode.OFF:
            self.secret = cache_secret(self.path) if secret is None else secret
            self._mac = EntryMac(self.secret.key)
            self._writer = GroupWriter(_open(self.path, busy_timeout))
            # Reads go through a connection of their own, so they never wait for a commit in progress.
            self._db = _open(self.path, busy_timeout)
            # A cache nobody closed still commits what it was given when the interpreter exits.
            weakref.finalize(self, self._writer.close)

    @property
    def writes(self) -> int:
        """Results committed so far (a put is counted once its group is committed)."""
        return 0 if self._writer is None else self._writer.written

    @property
    def unstored(self) -> int:
        """Results this run could not store (writing stops at the first failure)."""
        return 0 if self._writer is None else self._writer.unstored

    @property
    def unvouched(self) -> int:
        """Entries of the file this run found but did not trust (their MAC did not verify): each was a miss."""
        return len(self._unvouched)

    @property
    def _write_failure(self) -> str | None:
        return None if self._writer is None else self._writer.failure

    def get(self, key: str) -> Any | None:
        """The stored result for ``key``; None on a miss, in ``off`` and in ``refresh`` mode."""
        hit = self.fetch(key)
        return None if hit is None else hit.value

    def fetch(self, key: str) -> Hit | None:
        """As :meth:`get`, with the result's provenance (see the module's docstring)."""
        if self.mode is not CacheMode.USE or self._db is None or self._writer is None:
            return None
        with self._lock:
            # What was put but is not committed yet first: after this look the writer may commit and forget it,
            # and then the table has it. This process's own puts need no MAC check.
            payload = self._writer.pending.get(key)
            if payload is None and self._read_failure is None:
                payload = self._vouched(key)
            if payload is None:
                self.misses += 1
                return None
            self.hits += 1
            value = orjson.loads(payload)
            replayed = False
            if self._from_an_earlier_attempt(value):
                digest = bytes.fromhex(key) if len(key) == 64 else key.encode()
                replayed = digest not in self._replayed
                self._replayed.add(digest)
                if value.get("unvouched") is True:  # the interrupted attempt found this key unvouched
                    self._unvouched.add(key)
        return Hit(value, replayed)

    def _vouched(self, key: str) -> bytes | None:
        """The stored value of ``key`` when its MAC verifies under this cache's secret; None for no row, and for a
        row that is not vouched for (counted). Called with the lock held."""
        import sqlite3

        assert self._db is not None and self._mac is not None
        try:
            row = self._db.execute("SELECT value, mac FROM calls WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:  # a damaged file, an I/O error: this call is made, not read
            self._read_failure = str(exc)
            return None
        if row is None:
            return None
        value, mac = row
        if not isinstance(value, bytes):  # TEXT written by hand: no entry of ours
            value = str(value).encode()
        if isinstance(mac, bytes) and hmac.compare_digest(mac, self._mac(key, value)):
            return value
        self._unvouched.add(key)
        return None

    def _from_an_earlier_attempt(self, value: Any) -> bool:
        """Put by this run, in a process before this one (a run that was interrupted and is now resumed)."""
        return (
            self.run is not None
            and isinstance(value, dict)
            and value.get("run") == self.run
            and value.get("attempt") != self.attempt
        )

    def put(self, key: str, value: Any, *, kind: str, request: Any = None) -> bool:
        """Store a successful call's JSON result (committed within milliseconds, see the module's docstring);
        returns False when it will not be stored (``off`` mode, or writing failed earlier in this run: see
        :meth:`problems`). Raises TypeError for a value that is not JSON."""
        if self._writer is None or self._db is None or self._mac is None:
            return False
        if self.run is not None and isinstance(value, dict):
            value = {**value, "run": self.run, "attempt": self.attempt}
            if key in self._unvouched:
                value["unvouched"] = True
        payload = address_json(value)
        stored_request = stored_request_bytes(request) if (self.store_requests and request is not None) else None
        mac = self._mac(key, payload)
        return self._writer.add((key, kind, payload, stored_request, time.time(), mac))

    def flush(self) -> None:
        """Return once every result put so far is committed (or known not to be: see :meth:`problems`)."""
        if self._writer is not None:
            self._writer.flush()

    def problems(self, *, untrusted: bool = True) -> list[str]:
        """One warning line per way the cache failed during this run (none when it worked); it first waits for what
        was put to be committed, so its count is final. ``untrusted=False`` leaves out the line counting entries
        that were not vouched for: a run that opens several caches (one per variant) says that once, for all."""
        self.flush()
        found = []
        if self._unvouched and untrusted and self.secret is not None:
            found.append(untrusted_warning(self.path, len(self._unvouched), self.secret.source))
        if self._write_failure is not None:
            found.append(
                f"warning: {self.path}: the call cache could not be written ({self._write_failure}); "
                f"{self.unstored} result(s) of this run were not stored, so a re-run or --resume makes those calls "
                "again. This run's results are complete. Free space or fix the file's permissions, or run with "
                "--no-cache"
            )
        if self._read_failure is not None:
            found.append(
                f"warning: {self.path}: the call cache could not be read ({self._read_failure}); the calls it "
                "held were made again. This run's results are complete. Delete the file (it holds only cached "
                "calls), or run with --no-cache"
            )
        return found

    def __len__(self) -> int:
        if self._db is None:
            return 0
        self.flush()
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        """Commit what was put, then release both connections."""
        if self._writer is not None:
            self._writer.close()
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stored_request(db: sqlite3.Connection, key: str) -> bytes | None:
    """The request stored beside ``key``'s entry, whole (``address_json`` of it, as :func:`cache_key` hashed it):
    an agent step's link to the step before (see the module's docstring) followed back to the first step's whole
    request, the messages each link added appended in order. None when the entry, or a step it extends, holds no
    request (stored with ``store_requests`` off, or deleted), or a link does not fit what it extends (written by
    hand: the request column is not vouched for by the MAC, and nothing but inspection reads it)."""
    links: list[dict[str, Any]] = []
    seen: set[str] = set()
    while True:
        if key in seen:
            return None  # a cycle: no chain EvalGlass writes, since a key hashes every message before it
        seen.add(key)
        row = db.execute("SELECT request FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None or row[0] is None:
            return None
        try:
            request = orjson.loads(row[0])
        except orjson.JSONDecodeError:
            return None
        if not _is_link(request):
            break
        links.append(request)
        key = request[EXTENDS]
    if not links:
        return address_json(request)
    if not isinstance(request, dict) or not isinstance(messages := request.get("messages"), list):
        return None
    for link in reversed(links):
        if link["from"] != len(messages):
            return None
        messages.extend(link["added"])
    return address_json(request)


def _is_link(request: Any) -> bool:
    return (
        isinstance(request, dict)
        and request.keys() == {"added", EXTENDS, "from"}
        and isinstance(request["added"], list)
        and isinstance(request[EXTENDS], str)
        and type(request["from"]) is int
    )


def untrusted_warning(path: Path, count: int, source: str) -> str:
    """The one line that says how many entries of the cache at ``path`` were not vouched for by the key from
    ``source``."""
    return (
        f"warning: {path}: {count} cached answer(s) were not vouched for by this machine's cache key ({source}) and "
        "were not trusted: those calls were made again and their answers stored in their place. Entries from an "
        "older EvalGlass, made under another key, or written by hand are read this way (docs/caching.md); to share "
        "a cache between CI runs, set EVALGLASS_CACHE_KEY from a CI secret"
    )


def _open(path: Path, busy_timeout: float) -> sqlite3.Connection:
    """The cache's connection, ready to read and write; :class:`CacheUnavailable` when it cannot be."""
    import sqlite3  # only live runs open the cache; a recorded run imports this module for CacheMode alone

    try:
        return _connect(path, busy_timeout)
    except (OSError, sqlite3.Error, _NotACache) as exc:
        raise _unavailable(path, exc) from None


def _unavailable(path: Path, exc: Exception) -> CacheUnavailable:
    """Why the cache cannot be used, in words a user can act on (SQLite's own say little: "unable to open
    database file" is what a read-only folder gives)."""
    import sqlite3

    folder = path.parent
    code = exc.errno if isinstance(exc, OSError) else None
    without = "or run with --no-cache (every call is then made, and nothing is kept for a re-run or --resume)"
    if isinstance(exc, _NotACache) or (isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc)):
        return CacheUnavailable(
            f"this file is not an EvalGlass call cache ({exc})",
            where=str(path),
            fix=f"delete it (it holds only cached calls), {without}",
        )
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return CacheUnavailable(
            f"the call cache is locked by another process ({exc})",
            where=str(path),
            fix=f"wait for the other run to finish, {without}",
        )
    if code in (errno.EEXIST, errno.ENOTDIR):
        return CacheUnavailable(
            "the call cache's folder is a file, or under one", where=str(folder), fix=f"remove the file, {without}"
        )
    return CacheUnavailable(
        f"the call cache cannot be written: {_why_unwritable(path, exc)}",
        where=str(path),
        fix=f"make {folder.resolve()} (and the file, if it exists) writable, {without}",
    )


def _why_unwritable(path: Path, exc: Exception) -> str:
    """A read-only file system or a permission, checked on the file (or its folder) itself: SQLite reports both
    as "unable to open database file" or "attempt to write a readonly database"."""
    target = path if path.exists() else path.parent
    try:
        read_only = bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only or (isinstance(exc, OSError) and exc.errno == errno.EROFS):
        return "the file system is read-only"
    writable = os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))
    if not writable or (isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM)):
        return "permission denied"
    return exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)


class _NotACache(Exception):
    """A SQLite file with another schema: not ours to use."""


def _connect(path: Path, busy_timeout: float) -> sqlite3.Connection:
    import sqlite3

    make_dirs(path.parent)
    db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"cannot switch to WAL mode (got {mode})")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("BEGIN IMMEDIATE")  # one process at a time creates or migrates the tables
        try:
            db.execute(
                "CREATE TABLE IF NOT EXISTS calls ("
                " key TEXT PRIMARY KEY, kind TEXT NOT NULL, value BLOB NOT NULL, request BLOB, created REAL NOT NULL,"
                " mac BLOB"
                ") WITHOUT ROWID"
            )
            db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
            version = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()[0]
            if version != SCHEMA_VERSION:
                raise _NotACache(f"cache schema {version}, this EvalGlass expects {SCHEMA_VERSION}")
            # A cache from before entries carried a MAC: the column is added, and its entries (NULL MACs) are
            # misses, each asked once more and then stored with a MAC. The schema version stays, so an older
            # EvalGlass still opens the file (and writes entries this one will not trust).
            if "mac" not in {row[1] for row in db.execute("PRAGMA table_info(calls)")}:
                db.execute("ALTER TABLE calls ADD COLUMN mac BLOB")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    except BaseException:
        db.close()
        raise
    return db


if TYPE_CHECKING:  # mypy checks that the SQLite store is what a run's store must be (the port)
    from evalglass.lanes.callcache import RunCallStore

    def _is_a_run_store(cache: CallCache) -> RunCallStore:
        return cache


__all__ = [
    "CacheMode",
    "CacheUnavailable",
    "CallCache",
    "EntryMac",
    "Hit",
    "cache_key",
    "entry_mac",
    "stored_request",
    "untrusted_warning",
]
