"""How asyncio learns that a command lane's process exited: a pidfd on the event loop, as from Python 3.12.

On Python 3.11 asyncio's default child watcher starts a thread per process to ``waitpid`` it and waits for that
thread to start: for a command that runs a millisecond or two, ≈ 1 ms of wall time and ≈ 0.3 ms of CPU per call
(benchmarks/bench_command_lane.py, BENCHMARKS.md). Python 3.12 uses ``PidfdChildWatcher`` by default wherever the
kernel allows ``pidfd_open`` (Linux 5.3+, not blocked by a seccomp policy): the exit is one readable file
descriptor on the loop, no thread. :func:`pidfd_watcher` makes that choice on 3.11 while a command lane is open
and puts back the previous watcher when the last one closes; on 3.12+, where pidfds cannot be used, and where
someone chose another watcher or event loop policy, it does nothing. The watcher is 3.12's (:class:`_PidfdWatcher`:
3.11's own ``PidfdChildWatcher`` is bound to one loop, 3.12's serves whichever loop is running), so subprocesses
other code starts on other loops meanwhile keep working.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_users = 0
_previous: Any = None


class _PidfdWatcher(asyncio.AbstractChildWatcher):
    """Python 3.12's ``PidfdChildWatcher``: the child's pidfd is watched by the loop that started it."""

    def __enter__(self) -> _PidfdWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def is_active(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def attach_loop(self, loop: Any) -> None:
        pass

    def add_child_handler(  # type: ignore[override]  # typeshed's variadic generics; the runtime contract is this
        self, pid: int, callback: Callable[..., object], *args: Any
    ) -> None:
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(pid)
        loop.add_reader(pidfd, self._do_wait, loop, pid, pidfd, callback, args)

    @staticmethod
    def _do_wait(
        loop: asyncio.AbstractEventLoop, pid: int, pidfd: int, callback: Callable[..., object], args: Any
    ) -> None:
        loop.remove_reader(pidfd)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # reaped elsewhere already: asyncio's own watchers report 255 as well
            returncode = 255
        else:
            returncode = os.waitstatus_to_exitcode(status)
        os.close(pidfd)
        callback(pid, returncode, *args)

    def remove_child_handler(self, pid: int) -> bool:
        return True  # asyncio never calls it; the reader goes when the child exits


def pidfd_usable() -> bool:
    """Whether this process may open pidfds (the check Python 3.12's asyncio makes)."""
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid(), 0))
    except OSError:  # an old kernel, or blocked by a security policy such as seccomp
        return False
    return True


def pidfd_watcher() -> Callable[[], None]:
    """Use asyncio's pidfd child watcher from now on (Python 3.11 only, where usable); returns the function that
    undoes it (idempotent). Nested uses count: the previous watcher comes back when the last one is undone."""
    global _users, _previous
    if sys.version_info >= (3, 12) or not pidfd_usable():
        return lambda: None
    with _lock, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if _users == 0:
            policy = asyncio.get_event_loop_policy()
            try:
                current = policy.get_child_watcher()
            except (AttributeError, NotImplementedError):  # a policy of another kind (uvloop's): its own business
                return lambda: None
            if type(current) is not asyncio.ThreadedChildWatcher:  # a watcher someone chose: theirs to keep
                return lambda: None
            _previous = current
            policy.set_child_watcher(_PidfdWatcher())
        _users += 1
    released = False

    def release() -> None:
        global _users, _previous
        nonlocal released
        with _lock, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if released:
                return
            released = True
            _users -= 1
            if _users == 0:
                asyncio.get_event_loop_policy().set_child_watcher(_previous)
                _previous = None

    return release


__all__ = ["pidfd_usable", "pidfd_watcher"]
