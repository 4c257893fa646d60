"""Shared helpers for the check tests: commands are real subprocesses of the running interpreter."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from evalglass.lanes.checkrun import CheckSpec

PY = sys.executable


def py(code: str) -> list[str]:
    """argv running ``code`` with this interpreter (dedented, so tests can indent their scripts)."""
    return [PY, "-c", textwrap.dedent(code)]


def spec(code: str, **fields: Any) -> CheckSpec:
    return CheckSpec(command=py(code), **fields)


def exits(code: int, **fields: Any) -> CheckSpec:
    return spec(f"import sys; sys.exit({code})", **fields)


def process_gone(pid: int, within: float = 3.0) -> bool:
    """True once ``pid`` no longer runs (gone, or a zombie nobody has reaped yet)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = "?"
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def wait_for_file(path: Path, within: float = 3.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")
