"""Servers one test run shares across its xdist workers: a Ray cluster, a PostgreSQL server.

A session-scoped fixture starts a server once per *process*; under ``pytest -n 2`` that is once per worker, and on a
2-core machine a second Ray cluster costs as much as the tests that use it. (xdist's ``--dist loadgroup`` would pin
the tests that need a server to one worker, but with this pytest its groups are not honoured: tests of one group ran
on both workers when tried.) So the first worker that needs a server starts it, under a file lock, and records how to
reach it and how to stop it in a registry folder; the other workers read the record. The controlling process (the
one that started the workers, or the only process without xdist) created the registry in ``pytest_configure`` and
stops every recorded server in ``pytest_unconfigure``, after every worker is done with it.

Limits: a server is stopped by what its record says (commands to run, process groups to end), so a worker must
start servers in their own session (``start_new_session=True``) or through a daemonising tool (``pg_ctl``); a run
killed with SIGKILL leaves its servers behind, as a per-process fixture would.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REGISTRY_ENV = "EVALGLASS_TEST_SERVERS"


@dataclass(frozen=True)
class Started:
    """A server a worker started: what the tests need to reach it (``info``, JSON) and how to stop it."""

    info: dict[str, Any]
    stop_commands: list[list[str]] = field(default_factory=list)
    process_groups: list[int] = field(default_factory=list)
    #: How long a process group has to end after SIGTERM before it gets SIGKILL (0: SIGKILL at once).
    grace_s: float = 5.0
    remove: list[str] = field(default_factory=list)


def open_registry() -> Path | None:
    """Create the registry and publish it to the workers (their environment is copied from this process when they
    start); None when a registry already exists (a pytest run inside a test: its outer run owns the servers)."""
    if REGISTRY_ENV in os.environ:
        return None
    folder = Path(tempfile.mkdtemp(prefix="eg-test-servers-"))
    os.environ[REGISTRY_ENV] = str(folder)
    return folder


def shared_server(name: str, start: Callable[[], Started]) -> dict[str, Any]:
    """``info`` of the run's server ``name``: started by ``start`` in the first process that asks, read back by the
    others. A start that failed is recorded too, so every worker fails the same way instead of retrying it."""
    registry = os.environ.get(REGISTRY_ENV)
    if registry is None:
        raise RuntimeError(f"{REGISTRY_ENV} is not set: tests/conftest.py's pytest_configure opens the registry")
    folder = Path(registry)
    record = folder / f"{name}.json"
    with (folder / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists():
            data = json.loads(record.read_text())
            if "error" in data:
                raise RuntimeError(f"the shared {name} server did not start: {data['error']}")
            info: dict[str, Any] = data["info"]
            return info
        try:
            started = start()
        except Exception as exc:
            record.write_text(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
            raise
        record.write_text(json.dumps(asdict(started)))
        return started.info


def stop_servers(folder: Path) -> None:
    """Stop every server recorded in ``folder`` and remove it."""
    for record in sorted(folder.glob("*.json")):
        data = json.loads(record.read_text())
        for argv in data.get("stop_commands", []):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(argv, capture_output=True, timeout=60)
        for group in data.get("process_groups", []):
            end_process_group(group, data.get("grace_s", 5.0))
        for path in data.get("remove", []):
            shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)


def end_process_group(group: int, grace_s: float = 5.0) -> None:
    """SIGTERM to the group, SIGKILL to whatever of it is left after ``grace_s`` (at once when it is 0)."""
    if grace_s <= 0:
        kill_group(group)
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    kill_group(group)


def kill_group(group: int) -> None:
    """SIGKILL to every process of the group still there."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
