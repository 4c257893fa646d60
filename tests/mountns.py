"""Real read-only folders and full disks for tests that run as root.

Root writes through permission bits, so ``chmod 0555`` proves nothing here. Instead the CLI runs in a private mount
namespace (``unshare --mount``; util-linux makes its mounts private by default, so nothing reaches the host's
namespace and nothing needs undoing): a read-only bind mount of a folder or file gives ``EROFS`` for every write, as a
read-only checkout or volume does, and a small tmpfs fills up for real (``ENOSPC``). The command ``cd``s into its
folder after mounting, since a working folder entered before the mount still refers to the writable one below it.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


@functools.cache
def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = "mount -t tmpfs -o size=4k tmpfs /mnt && mount -o remount,ro /mnt"
    return subprocess.run(["unshare", "--mount", "sh", "-c", probe], capture_output=True, timeout=30).returncode == 0


def need_mounts() -> None:
    if not _can_mount():
        pytest.skip("needs `unshare --mount` and mount (root, CAP_SYS_ADMIN) for a real read-only file system")


def read_only(path: Path) -> str:
    """Shell that makes ``path`` (a folder or a file) read-only inside the namespace."""
    quoted = shlex.quote(str(path))
    return f"mount --bind {quoted} {quoted} && mount -o remount,bind,ro {quoted}"


def small_disk(folder: Path, size: str) -> str:
    """Shell that puts ``folder``'s current contents on a tmpfs of ``size`` (e.g. ``300k``) mounted over it."""
    quoted, copy = shlex.quote(str(folder)), shlex.quote(str(folder) + ".contents")
    return f"cp -a {quoted} {copy} && mount -t tmpfs -o size={size} tmpfs {quoted} && cp -a {copy}/. {quoted}/"


def evalglass_in_namespace(
    setup: Sequence[str], *args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 120
) -> Result:
    """``python -m evalglass ARGS`` in ``cwd``, after the ``setup`` shell steps, in a private mount namespace."""
    need_mounts()
    command = " ".join(shlex.quote(part) for part in (sys.executable, "-m", "evalglass", *args))
    script = " && ".join([*setup, f"cd {shlex.quote(str(cwd))}", f"exec {command}"])
    proc = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)
