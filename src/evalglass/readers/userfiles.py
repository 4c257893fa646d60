"""Opening a file a user named (config, ledger, dataset, schema, rubric, host module, run artifact).

Only a regular file is read. A FIFO would block ``open`` until something writes to it, and ``/dev/zero`` or a
terminal never ends; a directory fails later with a confusing message. The file is opened non-blocking (so a FIFO
cannot hang the open), checked with ``fstat`` on the open descriptor (so nothing can swap it between the check and
the read), then switched back to blocking reads. Every ``OSError`` becomes one :class:`SetupError` line naming the
file and the fix.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from evalglass.errors import SetupError

#: Largest config, ledger or definition file read whole (a config with a 20 MB description is still far below).
MAX_WHOLE_FILE = 256 << 20


#: A file's identity as far as a change to it shows: (device, inode, size, ctime in ns), None when it cannot be
#: stat'ed. ``ctime`` moves with every write, rename over and ``utime``, and no unprivileged process can set it back
#: (unlike ``mtime``). It also moves on a metadata-only change (``chmod``, ``touch``, a hard link made or removed as
#: DVC, git-annex or uv's cache do, a checkout that writes the same bytes). A run holds the files it reads examples
#: from to it (a moved state makes it compare bytes: ``engine.jobs.pipeline.refuse_changed_inputs``) and a metric's
#: bound files (a moved state stops it: ``refuse_rewritten_definitions``).
FileState = tuple[int, int, int, int] | None


def file_state(path: Path) -> FileState:
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_dev, found.st_ino, found.st_size, found.st_ctime_ns)


def may_exist(path: Path) -> bool:
    """``path.exists()``, except that a path whose folder this user may not search counts as existing: Python's
    ``exists()`` raises ``PermissionError`` for it, which reached the user as an internal error. Opening it then
    says "permission denied" naming it (:func:`open_regular`), where a False would have said "not found"."""
    try:
        return path.exists()
    except PermissionError:
        return True


def open_regular(
    path: Path, *, what: str, missing_fix: str | None = None, buffering: int = 0, other_fix: str | None = None
) -> BinaryIO:
    """``path`` opened for binary reading (unbuffered unless ``buffering`` says otherwise), once it is known to be
    a regular file. ``missing_fix``: the fix a missing file's line names; ``other_fix``: a folder's, a FIFO's."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise unreadable(path, what, exc, missing_fix=missing_fix) from None
    except ValueError:  # a NUL byte in the path (from a pointer file, say): no such file can exist
        raise SetupError(f"{what} path holds a NUL byte", where=repr(str(path)), fix="check the path") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SetupError(
                f"{what} is {_kind(info.st_mode)}, not a regular file",
                where=str(path),
                fix=other_fix or f"point at the {_as_file(what)} itself",
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def read_regular(
    path: Path, *, what: str, limit: int = MAX_WHOLE_FILE, missing_fix: str | None = None, other_fix: str | None = None
) -> bytes:
    """The whole of a regular file of at most ``limit`` bytes."""
    with open_regular(path, what=what, missing_fix=missing_fix, other_fix=other_fix) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise unreadable(path, what, exc) from None
    if len(data) > limit:
        raise SetupError(
            f"{what} is larger than {limit >> 20} MiB", where=str(path), fix=f"point at the {_as_file(what)} itself"
        )
    return data


def read_pointer(path: Path, *, what: str, missing_fix: str, fix: str) -> Path:
    """The folder path a pointer file (``.evalglass/last-run``, ``last-started``) holds: one line of UTF-8 text.
    Anything else (empty, binary, a NUL byte) is one line naming the pointer, never a decoding error's traceback."""
    raw = read_regular(path, what=what, limit=1 << 16, missing_fix=missing_fix)
    text = pointer_text(raw)
    if text is None:
        raise SetupError(f"the {what} does not hold a folder path", where=str(path), fix=fix)
    return Path(text)


def pointer_text(raw: bytes) -> str | None:
    """A pointer file's path, or None when its bytes are no path (not UTF-8, empty, a NUL byte)."""
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    return text if text and "\x00" not in text else None


def unreadable(path: Path, what: str, exc: OSError, *, missing_fix: str | None = None) -> SetupError:
    """The one line for an ``OSError`` met reading ``path``."""
    if exc.errno == errno.ENOENT:
        return SetupError(f"{what} not found", where=str(path), fix=missing_fix or "check the path")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return SetupError(f"cannot read {what}: permission denied", where=str(path), fix="make it readable")
    if exc.errno == errno.EISDIR:
        return SetupError(f"{what} is a directory, not a file", where=str(path), fix=f"point at the {_as_file(what)}")
    if exc.errno == errno.ELOOP:
        return SetupError(
            f"cannot read {what}: its path goes round a loop of symbolic links",
            where=str(path),
            fix="point it at the file itself, or mend the links",
        )
    if exc.errno == errno.ENOTDIR:
        return SetupError(
            f"cannot read {what}: a part of its path is not a folder", where=str(path), fix="check the path"
        )
    return SetupError(f"cannot read {what}: {exc.strerror or exc}", where=str(path), fix="check the path")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _as_file(what: str) -> str:
    """``what`` as a file's name in a fix: "config file", "dataset file" (not "dataset file file")."""
    return what if what.endswith("file") else f"{what} file"
