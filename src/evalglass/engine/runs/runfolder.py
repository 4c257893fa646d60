"""The file-system side of a run folder: creating it, locking it, private partial files, and the one place where an
``OSError`` met while writing it becomes a one-line :class:`SetupError`.

- Directories are created one component at a time with an explicit mode (the umask can only narrow it): a run
  folder and everything under ``.evalglass/`` are private (0700), other parents of ``--out`` 0755.
- A run holds an exclusive ``flock`` on its folder's directory for as long as it writes there; a second run given
  the same folder is refused at once instead of interleaving with the first. The directory itself is locked, not a
  lock file in it, so the folder holds only the run's artifacts. (``flock`` is advisory and local: it does not
  protect a folder on a network file system shared by two machines.)
- A file being written is created under a name no one else can predict (``.NAME.<pid>.<random>.partial``) with
  ``O_EXCL | O_NOFOLLOW``: a file or symlink planted in the folder is never opened, followed or overwritten, and two
  writers never share one. It becomes ``NAME`` by an atomic rename.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import threading
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import IO

from evalglass.errors import SetupError

#: The run record's file name in a run folder (``artifacts.RUNRECORD_FILE``), here so that readers of earlier
#: runs' records need not import the artifacts' models and numpy behind them.
RUNRECORD_NAME = "runrecord.json"

#: A live run's lane outputs and judge labels: written by ``produce.liveoutputs`` (which may not import the
#: artifact writers), read by the reports; here, below both.
OUTPUTS_FILE = "outputs.jsonl"

FILE_MODE = 0o600
#: Run folders, ``.evalglass/`` and what is under it.
DIR_MODE = 0o700
#: Other folders created on the way to an ``--out`` folder.
PARENT_MODE = 0o755
STATE_DIR = Path(".evalglass")


def make_dirs(path: Path, mode: int = DIR_MODE) -> bool:
    """Create ``path`` and its missing parents; True when ``path`` itself was created by this call.

    ``path`` (and any missing folder under ``.evalglass/``) gets ``mode``; other missing parents get
    :data:`PARENT_MODE`.
    """
    missing: list[Path] = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    created = False
    for folder in reversed(missing):
        private = folder == path or STATE_DIR.name in folder.parts
        try:
            os.mkdir(folder, mode if private else PARENT_MODE)
        except FileExistsError:
            continue  # made by someone else meanwhile: theirs, not ours
        created = folder == path
    if not path.is_dir():
        raise FileExistsError(errno.EEXIST, "exists and is not a folder", str(path))
    return created


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (a directory) for the block; refuse at once if another run holds it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SetupError(
                "another evalglass run is writing to this folder",
                where=str(folder),
                fix="wait for it to finish, or give this run its own --out folder",
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


#: The name :func:`open_private` gives the partial file of ``NAME``: ``.NAME.<pid>.<8 hex digits>.partial``.
_PARTIAL_NAME = re.compile(r"\.(?P<final>.+)\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.partial")


def open_private(final: Path) -> tuple[Path, int]:
    """A new, private partial file beside ``final`` and a descriptor open for writing it."""
    partial = final.with_name(f".{final.name}.{os.getpid()}.{os.urandom(4).hex()}.partial")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except OSError as exc:
        raise naming(exc, final) from None
    return partial, fd


def naming(exc: OSError, final: Path) -> OSError:
    """``exc`` as the same error about ``final``: the partial file's name is ours, never one the user gave, so a
    line such as "nope/.y.jsonl.1234.ab12cd34.partial: No such file or directory" named a file no one asked for."""
    return type(exc)(exc.errno, exc.strerror, str(final)) if exc.errno is not None else exc


class PartialFile:
    """The one "partial file, then rename" writer: bytes go to a private partial file beside ``final``
    (:func:`open_private`), which :meth:`commit` flushes, fsyncs and renames to ``final`` (readers see the old file or
    the new one, never half of one) and :meth:`abort` removes.

    ``lazy``: the partial file is created by the first write, and a commit without any write publishes nothing (a
    file only some runs have, such as ``checks.jsonl``). Not thread-safe: a writer shared by threads locks around it.
    """

    def __init__(self, final: Path, *, buffering: int = -1, lazy: bool = False) -> None:
        self.final = final
        self.partial = final
        self._buffering = buffering
        self._handle: IO[bytes] | None = None
        if not lazy:
            self._open()

    def _open(self) -> IO[bytes]:
        self.partial, fd = open_private(self.final)
        self._handle = handle = os.fdopen(fd, "wb", buffering=self._buffering)
        return handle

    def write(self, data: bytes) -> None:
        handle = self._handle if self._handle is not None else self._open()
        handle.write(data)

    def commit(self) -> None:
        """Publish what was written (nothing, for a lazy file never written)."""
        self.sync()
        self.publish()

    def sync(self) -> None:
        """Flush what was written to the disk (the half of :meth:`commit` that waits for the device)."""
        handle = self._handle
        if handle is not None:
            handle.flush()
            os.fsync(handle.fileno())

    def publish(self) -> None:
        """Close and rename into place; only after :meth:`sync` (a crash must never leave ``final`` naming bytes the
        disk does not hold)."""
        handle = self._handle
        if handle is None:
            return
        handle.close()
        try:
            os.replace(self.partial, self.final)
        except OSError as exc:  # a folder at the final name, say: the partial file is removed by abort()
            raise naming(exc, self.final) from None

    def abort(self) -> None:
        if self._handle is None:
            return
        with contextlib.suppress(OSError):  # closing flushes, which fails again on a full disk
            self._handle.close()
        with contextlib.suppress(FileNotFoundError):
            self.partial.unlink()


def sweep_partials(folder: Path, finals: Collection[str]) -> int:
    """Remove from ``folder`` the partial files of the files named ``finals`` that writers killed before they could
    commit or abort (a SIGKILL) left behind; how many. Only regular files named exactly as :func:`open_private`
    names them, and none of this process's own. Call it holding the folder's lock (:func:`locked`), when no writer
    of that folder is alive."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0
    own = str(os.getpid())
    for entry in entries:
        found = _PARTIAL_NAME.fullmatch(entry.name)
        if found is None or found["final"] not in finals or found["pid"] == own:
            continue
        if not entry.is_file(follow_symlinks=False):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry.path)
            removed += 1
    return removed


@contextlib.contextmanager
def atomically(final: Path) -> Iterator[PartialFile]:
    """A :class:`PartialFile` for the block: committed when the block ends, aborted when it raises."""
    file = PartialFile(final)
    try:
        yield file
        file.commit()
    except BaseException:
        file.abort()
        raise


def commit_together(files: Sequence[PartialFile]) -> None:
    """Commit ``files`` as :meth:`PartialFile.commit` would one after another, but with their fsyncs waited for
    at once: each is still on the disk before it is renamed, and the renames still happen in the order given (a
    reader sees the later files only with the earlier ones), while the device is asked to flush once for all of them
    (the kernel joins fsyncs that overlap into one journal commit; one after another, each waited 2-16 ms here).
    Any failure aborts every file not yet renamed and raises the first ``OSError`` met."""
    failures: list[BaseException] = []

    def sync(file: PartialFile) -> None:
        try:
            file.sync()
        except BaseException as exc:  # re-raised below, in the caller's thread
            failures.append(exc)

    started: list[threading.Thread] = []
    try:
        for file in files[1:]:
            thread = threading.Thread(target=sync, args=(file,), name="evalglass-fsync")
            thread.start()
            started.append(thread)
        if files:
            sync(files[0])
    except BaseException as exc:  # a thread that could not start: the files are aborted below
        failures.append(exc)
    finally:
        for thread in started:
            thread.join()
    if failures:
        for file in files:
            file.abort()
        raise failures[0]
    for index, file in enumerate(files):
        try:
            file.publish()
        except BaseException:
            for later in files[index:]:
                later.abort()
            raise


def write_atomic(path: Path, data: bytes) -> None:
    """Readers see the old file or the new one, never half of one."""
    with atomically(path) as file:
        file.write(data)


@contextlib.contextmanager
def writing(folder: Path) -> Iterator[None]:
    """Turn an ``OSError`` raised while a run writes its folder (or reads what it needs) into one line naming the
    file and the fix. Errors of the user's own code (host metrics, lanes, checks) never reach here: they are that
    example's ``error``."""
    try:
        yield
    except OSError as exc:
        raise write_error(folder, exc) from None


def write_error(folder: Path, exc: OSError) -> SetupError:
    name = exc.filename if exc.filename is not None else folder
    where = str(name)
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        return SetupError(
            "no space left on the device while writing the run's artifacts",
            where=where,
            fix="free some space, or write the run elsewhere with --out",
        )
    if code == errno.EFBIG:
        return SetupError(
            "a run artifact grew beyond the file-size limit (ulimit -f)",
            where=where,
            fix="raise the limit, or write the run elsewhere with --out",
        )
    if code in (errno.EROFS, errno.EACCES, errno.EPERM):
        reason = "the file system is read-only" if code == errno.EROFS else "permission denied"
        return SetupError(
            f"cannot write here: {reason}",
            where=where,
            fix="run from a writable folder, or give --out a writable folder",
        )
    if code in (errno.EEXIST, errno.ENOTDIR):
        return SetupError(
            "the run folder (or a folder on its path) is a file",
            where=where,
            fix="give --out a folder path that is not, and is not under, a file",
        )
    if code == errno.EISDIR:
        return SetupError(
            "a folder is in the way of a run artifact", where=where, fix="remove it, or write the run elsewhere"
        )
    return SetupError(f"cannot write the run's artifacts: {exc.strerror or exc}", where=where)
