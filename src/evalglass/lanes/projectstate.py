"""The state of the project a host program runs in, as one fingerprint: what a cached answer of a ``command`` or
``python`` lane is keyed by besides the code it runs by name (docs/lanes.md, "The call cache").

Why the whole project: a program's answer depends on more than the code a scan can name (its script, what that
imports): a data file it opens, a prompt template, a compiled extension, a module an import hook finds. A pull
request may change any of them without touching the config; a cache restored from main's runs (the documented way
to share one: docs/caching.md) would then answer the pull request's program with main's answers, and a gate the
changed program fails would pass with none of its answers measured. No scan of what a program *might* open closes
that; binding every file of the project does: while one byte of the project differs, no earlier answer is served.

What is bound, in the project (the git work tree holding the config folder, else the config folder itself):

- **In a git work tree**: every tracked file by the blob the index holds (``git ls-files -s``), and every file that
  differs from it or that git does not ignore but does not track (``git status --untracked-files=all``) by its bytes
  now (or as deleted). Files git ignores are not bound: a pull request cannot change one (committing it makes it
  tracked); what CI builds into one (a compiled program) comes from tracked files, which are.
- **Elsewhere**: every file under the folder by its bytes, at most :data:`MAX_FILES` of them.

Left out: EvalGlass's own state, which every run changes (the call cache file and its journals, the ``.evalglass``
folder of runs), so that an unchanged project answers from the cache run after run. A run folder written elsewhere
in the project (``--out``) that git does not ignore is bound like any file: the next run asks again (put run
folders under ``.evalglass``, outside the project, or in ``.gitignore``).

None (the caller then keys its calls so that nothing answers them) when the state cannot be read whole: git fails
in a work tree, or a folder outside git holds more than :data:`MAX_FILES` files.

Limits: code and data outside the project (installed packages, the interpreter, the system's files, the network) are
not bound; a pull request changes them only through the project's files (a lock file, a CI workflow), which are.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

#: The call cache's file in the config folder, and the folder EvalGlass keeps its runs in: never bound.
CACHE_NAME = ".evalglass-cache.sqlite"
STATE_FOLDER = ".evalglass"
#: Files outside git hashed at most: beyond, the state is not read (None).
MAX_FILES = 20_000
_GIT_TIMEOUT = 120.0


def project_root(folder: Path) -> Path:
    """The git work tree holding ``folder`` (the nearest parent with ``.git``), else ``folder`` itself."""
    start = Path(os.path.realpath(folder))
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def project_state(folder: Path) -> str | None:
    """The fingerprint of the project holding ``folder`` (module docstring), or None when it cannot be read whole."""
    root = project_root(folder)
    if (root / ".git").exists():
        return _git_state(root)
    return _tree_state(root)


def _left_out(relative: str) -> bool:
    """EvalGlass's own state: the call cache (and its ``-wal``/``-shm``/``-journal`` files), the ``.evalglass``
    folder, wherever a config folder puts them in the project."""
    parts = relative.split("/")
    return parts[-1].startswith(CACHE_NAME) or STATE_FOLDER in parts[:-1]


def _git(root: Path, *args: str) -> bytes | None:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, env=env, timeout=_GIT_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _git_state(root: Path) -> str | None:
    tracked = _git(root, "ls-files", "-s", "-z")
    changed = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    if tracked is None or changed is None:
        return None
    digest = hashlib.sha256(b"evalglass.project-state/1\0git\0")
    for entry in tracked.split(b"\0"):
        # "<mode> <blob> <stage>\t<path>"
        _, _, path = entry.partition(b"\t")
        if entry and not _left_out(path.decode("utf-8", "surrogateescape")):
            digest.update(entry + b"\0")
    now: set[bytes] = set()
    for entry in changed.split(b"\0"):
        path = entry[3:]
        if len(entry) > 3 and not _left_out(path.decode("utf-8", "surrogateescape")):
            now.add(path)
    for path in sorted(now):
        digest.update(b"now\0" + path + b"\0" + _file_digest(root / os.fsdecode(path)) + b"\0")
    return "sha256:" + digest.hexdigest()


def _tree_state(root: Path) -> str | None:
    found: list[tuple[str, bytes]] = []
    for current, folders, files in os.walk(root, followlinks=False):
        base = Path(current)
        folders[:] = sorted(name for name in folders if name != STATE_FOLDER)
        for name in files:
            relative = (base / name).relative_to(root).as_posix()
            if _left_out(relative):
                continue
            if len(found) >= MAX_FILES:
                return None
            found.append((relative, _file_digest(base / name)))
        # A symlinked folder is bound by where it points, not followed (its files may lie outside the project).
        for name in folders:
            if (base / name).is_symlink():
                found.append(((base / name).relative_to(root).as_posix(), _file_digest(base / name)))
    digest = hashlib.sha256(b"evalglass.project-state/1\0tree\0")
    for relative, content in sorted(found):
        digest.update(relative.encode("utf-8", "surrogateescape") + b"\0" + content + b"\0")
    return "sha256:" + digest.hexdigest()


def _file_digest(path: Path) -> bytes:
    """A file's content hash; a symlink's target text; ``-`` for a path that is gone or cannot be read."""
    try:
        if path.is_symlink():
            return b"link:" + os.fsencode(os.readlink(path))
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest().encode()
    except OSError:
        return b"-"


__all__ = ["CACHE_NAME", "MAX_FILES", "project_root", "project_state"]
