"""The call cache's secret: the key every cache entry's MAC is made and checked with (docs/caching.md).

Why a secret: the cache file sits in the project (``<config folder>/.evalglass-cache.sqlite``), where a pull request
can commit one. Without a check, its entries would replay as the approved judge's answers, or as the live lane's
outputs, and turn a run green without a single real call. Each entry therefore carries an HMAC-SHA256 over its key
and value under a key that never lives in the repository, and an entry whose MAC does not verify is a miss
(:mod:`evalglass.engine.produce.cache`). Where the key comes from, first that applies:

* ``EVALGLASS_CACHE_KEY`` in the environment (any non-empty text; a CI secret, so that CI jobs can share a cache
  through their cache store): the HMAC key is the SHA-256 of the text, so any length or alphabet serves;
* else a per-user key file, ``$XDG_CACHE_HOME/evalglass/cache-key`` (``~/.cache/evalglass/cache-key`` when
  ``XDG_CACHE_HOME`` is unset or not absolute), made on first use: 32 random bytes as hex, mode 0600, in a folder
  made 0700.

A key file that would lie inside the project (the git work tree holding the cache, or the cache's folder when there
is none: say ``XDG_CACHE_HOME`` points into the checkout) is refused in one line, since a pull request could then
commit the key along with the cache.

Limits: the key is as secret as the account and the CI secret store that hold it. Host code the run executes (a
python lane, a metric) runs as the same user with the same environment and could read it, as it could read
``EVALGLASS_SIGNING_KEY``; that is the supervisor's stated limit too (code that sets out to impersonate the engine
from inside the run is outside what is guarded). What this closes is a *file* a pull request commits.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalglass.errors import SetupError
from evalglass.lanes.projectstate import CACHE_NAME, project_root
from evalglass.readers.userfiles import read_regular

if TYPE_CHECKING:
    from evalglass.engine.spec.config import LoadedConfig

KEY_ENV = "EVALGLASS_CACHE_KEY"
#: The call cache's file, in the config's folder.
CACHE_FILE = CACHE_NAME
KEY_FILE = "cache-key"
#: Distinguishes this use of the environment's text from any other the same text may have.
_ENV_DOMAIN = b"evalglass.cache-key/1\0"
_WITHOUT = "or run with --no-cache"


def cache_path(loaded: LoadedConfig) -> Path:
    """The run's call cache: :data:`CACHE_FILE` in the config's folder."""
    return loaded.base_dir / CACHE_FILE


@dataclass(frozen=True, slots=True)
class CacheSecret:
    """The HMAC key (32 bytes) and where it came from (``EVALGLASS_CACHE_KEY`` or the key file's path), which
    messages name; never the key itself."""

    key: bytes
    source: str

    def __repr__(self) -> str:  # the key never reaches a log or a traceback's locals through repr
        return f"CacheSecret(source={self.source!r})"


def cache_secret(cache_path: Path, environ: Mapping[str, str] | None = None) -> CacheSecret:
    """The key for the cache at ``cache_path``: ``EVALGLASS_CACHE_KEY``, else the per-user key file (made on first
    use). :class:`SetupError` (one line, exit 2) when the key file is inside the project, unreadable or not a key."""
    env = os.environ if environ is None else environ
    text = env.get(KEY_ENV, "").strip()
    if text:
        return CacheSecret(hashlib.sha256(_ENV_DOMAIN + text.encode()).digest(), KEY_ENV)
    path = key_file_path(env)
    project = project_root(cache_path.parent)
    if _inside(path, project):
        raise SetupError(
            f"the call cache's key file would be inside the project ({project}), where a pull request could commit it",
            where=str(path),
            fix=f"set XDG_CACHE_HOME to a folder outside the project, set {KEY_ENV}, {_WITHOUT}",
        )
    return CacheSecret(_read_or_create(path), str(path))


def key_file_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/evalglass/cache-key``, else ``~/.cache/evalglass/cache-key`` (the XDG base directory rule:
    a relative ``XDG_CACHE_HOME`` is ignored)."""
    xdg = environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    else:
        home = environ.get("HOME") or os.path.expanduser("~")
        if not home or not os.path.isabs(home):
            raise SetupError(
                "no folder for the call cache's key file (neither XDG_CACHE_HOME nor HOME is an absolute path)",
                fix=f"set {KEY_ENV} (a CI secret) or XDG_CACHE_HOME, {_WITHOUT}",
            )
        base = Path(home) / ".cache"
    return base / "evalglass" / KEY_FILE


def _inside(path: Path, folder: Path) -> bool:
    """``path`` (resolved through symlinks, as far as it exists) is ``folder`` or under it."""
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def _read_or_create(path: Path) -> bytes:
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _unusable(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        _create(path)
        return _read(path)
    except OSError as exc:
        raise _unusable(path, f"cannot be created ({exc.strerror or exc})") from None


def _read(path: Path) -> bytes:
    # Only a regular file (readers.userfiles): a FIFO in the key file's place hung every run that reads the key.
    if not os.path.lexists(path):
        raise FileNotFoundError(path)
    raw = read_regular(
        path,
        what="the call cache's key file",
        limit=1 << 20,
        other_fix=f"delete it (a new key is made), set {KEY_ENV}, {_WITHOUT}",
    )
    text = raw.decode("ascii", errors="replace").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise _unusable(path, "is not an EvalGlass cache key (64 hex digits)")
    return key


def _create(path: Path) -> None:
    """Write a new random key at ``path``, 0600, without ever replacing one another process made meanwhile: the key
    is written whole to a private temporary file, then hard-linked into place (which fails if the name exists), so
    no reader sees a half-written key and two first runs at once agree on one key."""
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = folder / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}.partial"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            os.fchmod(handle.fileno(), 0o600)  # whatever the umask
            handle.write(secrets.token_hex(32) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process made the key first: theirs is the one
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            # A file system without hard links: create the name exclusively and copy the key in. A reader racing
            # this first write may see it empty and fail once ("not a key"); a rerun reads the finished file.
            with contextlib.suppress(FileExistsError):
                final = os.open(path, flags, 0o600)
                with os.fdopen(final, "w", encoding="ascii") as handle:
                    handle.write(temporary.read_text(encoding="ascii"))
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def _unusable(path: Path, why: str) -> SetupError:
    return SetupError(
        f"the call cache's key file {why}",
        where=str(path),
        fix=f"delete it (a new key is made; entries stored under the old one are then asked again), set {KEY_ENV}, "
        f"{_WITHOUT}",
    )


__all__ = ["CACHE_FILE", "KEY_ENV", "KEY_FILE", "CacheSecret", "cache_secret", "key_file_path", "project_root"]
