"""One short text computed in a forked child while this process goes on with other work.

``preflight`` hashes the dataset for its gold fingerprint (about 0.15 s for 100,000 examples) while it reads the
ledger and fingerprints every gate (about as long for a 2,000-gate suite); the two need nothing from each other, so
on a machine with a free core the command's wall time is the longer of the two instead of their sum. CPU time is
unchanged (the same work, in two processes).

Limits, each falling back to computing the value here, in order, exactly as without a child (so an error is raised
from the same place with the same message, and a result never differs):

- no ``os.fork`` (not Linux), or other threads running (a fork copies only the calling thread, and a lock another
  thread holds stays held in the child; the CLI process has one thread, an embedding program may not);
- the child failing for any reason (the computation raising, a signal, a write error): it exits non-zero and this
  process computes the value itself, raising what the computation raises.

The child never returns into the caller's code: it writes the text to a pipe and leaves with ``os._exit``, so no
buffered output, ``atexit`` handler or ``finally`` of the caller runs twice. A caller that stops before asking for
the value (an error of its own) kills the child on the way out.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress


class _Pending:
    def __init__(self, compute: Callable[[], str] | None, pid: int | None, pipe: int | None) -> None:
        self._compute, self._pid, self._pipe = compute, pid, pipe
        self._value: str | None = None

    def value(self) -> str | None:
        """The text: the child's when it succeeded, else computed here; None when there is nothing to compute."""
        if self._value is None and self._compute is not None:
            self._value = self._collect()
        return self._value

    def _collect(self) -> str:
        assert self._compute is not None
        pid, pipe = self._pid, self._pipe
        self._pid = self._pipe = None
        if pid is None or pipe is None:
            return self._compute()
        with os.fdopen(pipe, "rb") as reader:
            data = reader.read()
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) == 0 and data:
            return data.decode("utf-8")
        return self._compute()

    def abandon(self) -> None:
        pid, pipe = self._pid, self._pipe
        self._pid = self._pipe = None
        if pipe is not None:
            os.close(pipe)
        if pid is not None:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform == "linux" and threading.active_count() == 1


@contextmanager
def computed_aside(compute: Callable[[], str] | None) -> Iterator[Callable[[], str | None]]:
    """Start ``compute`` in a child now; inside the block, the returned function gives its result (waiting for it),
    or None when ``compute`` is None (nothing to do, no child)."""
    if compute is None or not _can_fork():
        pending = _Pending(compute, None, None)
    else:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, hand the text over, leave without running anything of the caller's
            code = 1
            try:
                os.close(read)
                data = compute().encode("utf-8")
                while data:
                    data = data[os.write(write, data) :]
                code = 0
            except BaseException:  # any failure is the parent's to compute again and report
                pass
            finally:
                os._exit(code)
        os.close(write)
        pending = _Pending(compute, pid, read)
    try:
        yield pending.value
    finally:
        pending.abandon()
