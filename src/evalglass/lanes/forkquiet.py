"""Imported by the fork server alone (the first of ``hostworker._PRELOAD``), never by the deciding process.

``multiprocessing.forkserver`` forks a child per worker, which reads the worker's preparation data from the deciding
process; when that process stops at that moment (SIGTERM, Ctrl-C, SIGKILL while a worker starts), the read fails and
the child prints a standard-library traceback through ``sys.excepthook`` on the run's stderr, after the line that
says how to resume. A run never prints a traceback: here a pipe that closed says nothing (the deciding process
said what happened), and anything else in a child not yet running a worker is one line, as
``hostworker._ended_quietly`` says it for a worker. Set in the fork server, so every child inherits it."""

from __future__ import annotations

import sys
from types import TracebackType

#: What a pipe closed by the deciding process raises in a child reading from it.
_CLOSED = (EOFError, BrokenPipeError, ConnectionResetError)


def _quiet(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    if issubclass(kind, _CLOSED):
        return
    sys.stderr.write(f"evalglass: a host worker could not start: {kind.__name__}: {exc}\n")
    sys.stderr.flush()


sys.excepthook = _quiet
