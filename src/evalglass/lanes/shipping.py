"""What shipping work to another process (a cluster worker) shares across layers, without importing asyncio: the two
ways it can fail, and where the evals folder is on a worker.

The executor that ships is ``engine.produce.raycluster``; lanes reach it through ``Executor.offload``, metrics through
the runners the engine gives them.
"""

from __future__ import annotations

import os
from pathlib import Path


class WorkLost(Exception):
    """Shipped work produced no result: the processes running it kept dying (retries exhausted), or the cluster
    refused it. The message is stable (no process or node ids), so a rerun records the same error."""


class ClusterLost(KeyboardInterrupt):
    """The connection to the cluster is gone. A ``KeyboardInterrupt``: no example is scored from it (metric guards
    catch ``Exception`` only) and the run stops as on Ctrl-C, resumable with ``--resume``."""


_abandoned: list[str] = []


def abandon_connection(reason: str) -> None:
    """Note that this process keeps a connection to a cluster that is gone (see :func:`connection_abandoned`)."""
    _abandoned.append(reason)


def connection_abandoned() -> bool:
    """Whether this process holds a connection to a lost cluster. Its client's threads are then still trying to
    reach the head, and letting the interpreter tear its modules down under them can crash the process (Ray 2.x
    dies with SIGSEGV on a loaded machine) after the run has already stopped cleanly: such a process must end with
    ``os._exit`` once its output is flushed (the CLI's error boundary does)."""
    return bool(_abandoned)


#: Set by the cluster backend (through the runtime environment) on workers that run in a shipped copy of the evals
#: folder: its value is the driver's path of that folder.
SHIPPED_BASE_ENV = "EVALGLASS_SHIPPED_BASE_DIR"


def base_dir_here(driver_base: str | os.PathLike[str]) -> Path:
    """The evals folder as this process sees it: on a worker given a copy of it (``runtime_env: {working_dir: .}``)
    the worker's current folder, anywhere else the driver's path (the same machine, or a shared file system)."""
    if os.environ.get(SHIPPED_BASE_ENV) == str(driver_base):
        return Path.cwd()
    return Path(driver_base)


__all__ = [
    "SHIPPED_BASE_ENV",
    "ClusterLost",
    "WorkLost",
    "abandon_connection",
    "base_dir_here",
    "connection_abandoned",
]
