"""The state of a check's target — one file or one folder — as a single SHA-256 fingerprint.

The fingerprint is taken over a canonical walk of the target:

* entries are visited in the byte order of their relative POSIX paths, so the order in which the
  filesystem lists them does not matter;
* a regular file contributes its relative path, whether it is executable (any ``x`` bit; other mode
  bits, owners and timestamps are ignored), its size and the SHA-256 of its bytes;
* a symbolic link contributes its relative path and the string it points to. Links are never followed,
  so a link pointing outside the target cannot pull outside content in (a dangling link is fine);
* other special files (FIFOs, sockets, devices) contribute their path and kind only; they are never
  opened;
* folders contribute nothing by themselves (as in git): an empty folder does not change the state.

``include``/``exclude`` globs select entries by relative path. An entry is selected when it matches some
include pattern (or there are none) and no exclude pattern. A pattern matches an entry when it matches the
entry's path or the path of one of its parent folders (so ``build`` excludes everything under ``build/``),
and a pattern without ``/`` matches at any depth (``__pycache__`` excludes every ``__pycache__`` folder).
``*`` and ``?`` stay within one path segment, ``**`` spans segments and ``[...]`` is a character class.

A file target's fingerprint covers its bytes and executable bit, not its name. The target root itself may
be a link (it is resolved); anything the walk cannot read makes the whole target :class:`TargetUnavailable`.

A check's ``inputs:`` are fingerprinted by the same walk, with three additions: include globs may be *anchored*
(matched from the root, so ``*.py`` means the root's own ``.py`` files rather than any at depth), a :class:`Budget`
caps the files and bytes hashed (:class:`TargetTooLarge` past it, before the file that crosses it is read), and
``ignore`` leaves out files the caller knows are not state.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Budget",
    "Ignore",
    "PathSelector",
    "TargetState",
    "TargetTooLarge",
    "TargetUnavailable",
    "fingerprint_files",
    "fingerprint_target",
]

_VERSION = b"evalglass-target-v1\n"
_CHUNK = 1 << 20


class TargetUnavailable(Exception):
    """The target could not be read completely, so it has no fingerprint."""


class TargetTooLarge(TargetUnavailable):
    """The walk would hash more files or bytes than its :class:`Budget` allows."""


_MIB = 1 << 20


@dataclass
class Budget:
    """What one or several walks may hash between them. Each file is charged (by its size, from ``stat``) before
    it is read, so a budget of 64 MiB never reads a 10 GiB file to find out."""

    max_files: int
    max_bytes: int
    files: int = 0
    bytes: int = 0

    def charge(self, relpath: str, size: int) -> None:
        self.files += 1
        self.bytes += size
        if self.files > self.max_files:
            raise TargetTooLarge(f"more than {self.max_files:,} files to hash (at {relpath!r})")
        if self.bytes > self.max_bytes:
            raise TargetTooLarge(f"more than {self.max_bytes / _MIB:g} MiB to hash (at {relpath!r})")


@dataclass(frozen=True, slots=True)
class TargetState:
    """The observed state of a target."""

    fingerprint: str  # "sha256:<64 hex>"
    files: int
    links: int
    bytes: int


def _glob_regex(pattern: str, anchored: bool = False) -> re.Pattern[str]:
    if not anchored and "/" not in pattern.rstrip("/"):
        pattern = "**/" + pattern
    pattern = pattern.rstrip("/")
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 2 if pattern.startswith("[!", i) or pattern.startswith("[]", i) else i + 1)
            if end == -1:
                out.append(re.escape(char))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def _check_pattern(pattern: str) -> None:
    if not pattern or pattern.strip() != pattern:
        raise ValueError(f"glob {pattern!r} must be non-empty and have no surrounding spaces")
    if pattern.startswith("/") or "\\" in pattern or "\x00" in pattern:
        raise ValueError(f"glob {pattern!r} must be a relative POSIX pattern")
    if ".." in pattern.split("/"):
        raise ValueError(f"glob {pattern!r} must not contain '..'")


class PathSelector:
    """Which relative paths of a target are part of its state (see the module docstring for the rules).
    ``anchored``: include patterns match from the root only (exclude patterns keep matching at any depth)."""

    __slots__ = ("_exclude", "_include")

    def __init__(self, include: Iterable[str] = (), exclude: Iterable[str] = (), *, anchored: bool = False) -> None:
        include, exclude = list(include), list(exclude)
        for pattern in (*include, *exclude):
            _check_pattern(pattern)
        self._include = [_glob_regex(p, anchored) for p in include]
        self._exclude = [_glob_regex(p) for p in exclude]

    @staticmethod
    def validate(pattern: str) -> None:
        """Raise ValueError if ``pattern`` is not an acceptable include/exclude glob."""
        _check_pattern(pattern)

    @staticmethod
    def _hits(patterns: list[re.Pattern[str]], relpath: str) -> bool:
        parts = relpath.split("/")
        prefixes = ["/".join(parts[: k + 1]) for k in range(len(parts))]
        return any(p.fullmatch(prefix) for p in patterns for prefix in prefixes)

    def excludes_folder(self, relpath: str) -> bool:
        """Whether everything under folder ``relpath`` is excluded (lets the walk skip it)."""
        return self._hits(self._exclude, relpath)

    def selects(self, relpath: str) -> bool:
        if self._exclude and self._hits(self._exclude, relpath):
            return False
        return not self._include or self._hits(self._include, relpath)


def _u64(value: int) -> bytes:
    return struct.pack(">Q", value)


def _field(data: bytes) -> bytes:
    return _u64(len(data)) + data


class _Digest:
    """Accumulates entries in canonical order and produces the fingerprint."""

    def __init__(self, kind: bytes) -> None:
        self._entries: list[tuple[bytes, bytes]] = []
        self._kind = kind
        self.files = self.links = self.bytes = 0

    def file(self, relpath: bytes, executable: bool, size: int, content_digest: bytes) -> None:
        self.files += 1
        self.bytes += size
        self._entries.append((relpath, b"F" + (b"x" if executable else b"-") + _u64(size) + content_digest))

    def link(self, relpath: bytes, target: bytes) -> None:
        self.links += 1
        self._entries.append((relpath, b"L" + _field(target)))

    def special(self, relpath: bytes, kind: str) -> None:
        self._entries.append((relpath, b"S" + _field(kind.encode("ascii"))))

    def state(self) -> TargetState:
        hasher = hashlib.sha256(_VERSION + self._kind)
        for relpath, payload in sorted(self._entries):
            hasher.update(_field(relpath) + payload)
        return TargetState("sha256:" + hasher.hexdigest(), self.files, self.links, self.bytes)


def _is_executable(mode: int) -> bool:
    return bool(mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))


def _hash_regular_file(path: str, relpath: str) -> tuple[bool, int, bytes]:
    """(executable, size, sha256) of a regular file, opened without following a link or blocking on a FIFO."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise TargetUnavailable(f"cannot read {relpath!r}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TargetUnavailable(f"{relpath!r} changed while it was being read")
        hasher = hashlib.sha256()
        size = 0
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            size += len(chunk)
            hasher.update(chunk)
    except OSError as exc:
        raise TargetUnavailable(f"cannot read {relpath!r}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    return _is_executable(info.st_mode), size, hasher.digest()


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "other"


def _walk(root: str, prefix: str, selector: PathSelector) -> Iterator[tuple[str, str, os.DirEntry[str]]]:
    try:
        with os.scandir(root) as it:
            entries = list(it)
    except OSError as exc:
        raise TargetUnavailable(f"cannot list {prefix or '.'!r}: {exc.strerror or exc}") from exc
    for entry in entries:
        relpath = f"{prefix}/{entry.name}" if prefix else entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError as exc:
            raise TargetUnavailable(f"cannot inspect {relpath!r}: {exc.strerror or exc}") from exc
        if is_dir:
            if not selector.excludes_folder(relpath):
                yield from _walk(entry.path, relpath, selector)
        elif selector.selects(relpath):
            yield entry.path, relpath, entry


#: Whether to leave a regular file out of the state, given its full path and its relative path.
Ignore = Callable[[str, str], bool]


def fingerprint_target(
    path: str | os.PathLike[str],
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    *,
    anchored: bool = False,
    budget: Budget | None = None,
    ignore: Ignore | None = None,
) -> TargetState:
    """Observe the state of the file or folder at ``path``; raise :class:`TargetUnavailable` if unreadable (and
    :class:`TargetTooLarge` past ``budget``). ``anchored`` and ``ignore``: see the module docstring."""
    selector = PathSelector(include, exclude, anchored=anchored)
    root = Path(path)
    try:
        info = root.stat()  # the root may be a link: follow it (escapes are refused by the caller's config)
    except OSError as exc:
        raise TargetUnavailable(f"target {str(root)!r} cannot be read: {exc.strerror or exc}") from exc
    if stat.S_ISREG(info.st_mode):
        digest = _Digest(b"file\n")
        if budget is not None:
            budget.charge(root.name, info.st_size)
        executable, size, content = _hash_regular_file(str(root.resolve()), root.name)
        digest.file(b".", executable, size, content)
        return digest.state()
    if not stat.S_ISDIR(info.st_mode):
        raise TargetUnavailable(f"target {str(root)!r} is neither a file nor a folder")
    digest = _Digest(b"dir\n")
    for full, relpath, entry in _walk(str(root.resolve()), "", selector):
        encoded = os.fsencode(relpath)
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as exc:
            raise TargetUnavailable(f"cannot inspect {relpath!r}: {exc.strerror or exc}") from exc
        mode = info.st_mode
        if stat.S_ISREG(mode) and ignore is not None and ignore(full, relpath):
            continue
        if stat.S_ISLNK(mode):
            try:
                digest.link(encoded, os.fsencode(os.readlink(full)))
            except OSError as exc:
                raise TargetUnavailable(f"cannot read link {relpath!r}: {exc.strerror or exc}") from exc
        elif stat.S_ISREG(mode):
            if budget is not None:
                budget.charge(relpath, info.st_size)
            digest.file(encoded, *_hash_regular_file(full, relpath))
        else:
            digest.special(encoded, _special_kind(mode))
    return digest.state()


def fingerprint_files(
    files: Mapping[str, bytes],
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    executable: Iterable[str] = (),
) -> TargetState:
    """The fingerprint a folder holding exactly ``files`` (relative POSIX path → bytes) would have.

    Lets a caller compute the state it *expects* before writing files, then bind the written folder to it.
    Names in ``executable`` are taken as having an ``x`` bit; all others as not.
    """
    selector = PathSelector(include, exclude)
    runnable = set(executable)
    digest = _Digest(b"dir\n")
    for relpath, content in files.items():
        if selector.selects(relpath):
            digest.file(os.fsencode(relpath), relpath in runnable, len(content), hashlib.sha256(content).digest())
    return digest.state()
