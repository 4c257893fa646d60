"""The supervisor: work that runs host code happens in a forked child, and the outcome comes only from what that
child reports when it has finished.

Why. Host code runs inside EvalGlass's process (python metrics and lanes, anything a config points at), and some
ways of ending a process reach no exception handler: ``os._exit(0)``, ``exit(0)`` from C, a signal, a replaced
``sys.excepthook`` once the streams are gone. Before, such a function ended ``evalglass run`` with exit 0 and no
verdict: a green CI job that decided nothing. Now the process the shell (or CI) waits for is a small parent that
runs no host code: it forks first thing, waits for the child, and exits with the code the child *reported* after
its command finished. A child that ends without a report exits 2 with one line naming the host code that was
running (read from the page :mod:`evalglass.hostwatch` shares), or 130 when a stop signal had reached the
supervisor. The same fork serves ``evalglass.run()`` (:mod:`evalglass.engine.jobs.isolated`), which the pytest plugin
calls.

Signals. Parent and child are in one process group, so a terminal's Ctrl-C reaches both: the parent leaves it to
the child (which stops the run and reports 130). A stop signal sent to the parent alone (``kill PID``: SIGINT,
SIGTERM, SIGHUP) is passed on to the child, once: the parent tells the two apart by the signal's origin
(``sigtimedwait``'s ``si_code``). Where it cannot (no ``sigtimedwait``, as on macOS, or ``evalglass.run()`` called
from a thread other than the main one) it waits plainly: a Ctrl-C that reaches it is passed on (the child may see
it twice, which still stops the run), a second one kills the child. A parent that is killed takes the child with
it: the child watches a pipe whose other end only the parent holds.

Limits. The parent trusts the report, so code that sets out to impersonate EvalGlass from inside the child (writing
to the report pipe, editing the engine's objects, forging artifacts) is not stopped here; the ledger's approval of
the files a gate depends on is what answers that. A host thread left running after the report can still write.
"""

from __future__ import annotations

import gc
import mmap
import os
import signal
import sys

from evalglass import hostwatch

# The parent imports this module before it forks, and every page it fills then is shared with the child until one
# of them writes to it (copy on write): so only what the parent itself uses is imported here (no typing,
# dataclasses, contextlib or threading, which would cost the child a page fault per page it later touches).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

#: ``si_code`` of a signal the kernel sent (Linux): a terminal's Ctrl-C, which reached the child as well.
_SI_KERNEL = 0x80
#: Signals that stop a run (a terminal hangup too), and the parent's own signal of a child's end.
_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_WATCHED = {*_STOPS, signal.SIGCHLD}
#: A report is at most this long: it fits a pipe's buffer on every platform, so writing it never blocks.
REPORT_LIMIT = 8192

#: In a supervised child: where its report goes (None: not supervised, or already reported).
_report_fd: int | None = None
_supervised = False


def supervised() -> bool:
    """Whether this process is a supervised child (its work needs no second fork)."""
    return _supervised


def can_supervise() -> bool:
    return hasattr(os, "fork")


def report(data: bytes) -> bool:
    """Send this child's report to its supervisor, once; False when there is none to send to (unsupervised, already
    reported, or the pipe was closed by host code: the supervisor then says the child ended without one)."""
    global _report_fd
    fd, _report_fd = _report_fd, None
    if fd is None:
        return False
    try:
        view = memoryview(data[:REPORT_LIMIT])
        while view:
            view = view[os.write(fd, view) :]
        os.close(fd)
    except OSError:
        return False
    return True


class Ending:
    """How a supervised child ended: its report (None: it sent none), its wait status, whether a stop signal
    reached the supervisor meanwhile, and what host code its page says was running."""

    __slots__ = ("last", "report", "running", "status", "stopped")

    def __init__(
        self, report: bytes | None, status: int | None, stopped: bool, running: tuple[str, ...], last: str | None
    ) -> None:
        self.report = report
        self.status = status
        self.stopped = stopped
        self.running = running
        self.last = last

    def died(self) -> str:
        """What happened to a child that ended without a report, in one sentence (no ``error:`` prefix)."""
        how = _how(self.status)
        if self.running:
            were = "was" if len(self.running) == 1 else "were"
            return (
                f"nothing was decided: {' and '.join(self.running)} {were} running when the process {how} — host "
                "code must return or raise, never end the process (os._exit, exit from C, a signal); fix that "
                "function, or rerun if something outside killed the process"
            )
        after = f" (the last to run was {self.last})" if self.last else ""
        return (
            f"nothing was decided: the process {how} while no host code was running{after} — rerun; if it "
            "recurs, rerun with --debug and report it"
        )


def _how(status: int | None) -> str:
    if status is None:
        return "ended"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by {name}"
    if os.WIFEXITED(status):
        return f"exited with code {os.WEXITSTATUS(status)}"
    return "ended"


class Supervision:
    """The parent's side of one supervised child."""

    def __init__(self, pid: int, page: mmap.mmap, report_fd: int, alive_fd: int, mask: set[int] | None) -> None:
        self.pid = pid
        self._page = page
        self._report_fd = report_fd
        self._alive_fd = alive_fd
        self._mask = mask

    def wait(self) -> Ending:
        """Wait for the child to end (passing stop signals on, see the module docstring), then read its report."""
        stopped = False
        status: int | None = None
        page = self._page
        try:
            status, stopped = self._wait_signals() if self._mask is not None else self._wait_plain()
            data = self._read_report()
            running, last = hostwatch.running_in(page) if data is None else ([], None)
        finally:
            if self._mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
            if status is None and _reap(self.pid, block=False) is None:
                # The wait itself was interrupted (an exception in this process): the child must not go on alone.
                _quietly(os.kill, self.pid, signal.SIGKILL)
                _reap(self.pid, block=True)
            for fd in (self._report_fd, self._alive_fd):
                _quietly(os.close, fd)
            page.close()
        return Ending(data, status, stopped, tuple(dict.fromkeys(running)), last)

    def _wait_signals(self) -> tuple[int | None, bool]:
        stopped = False
        while True:
            status = _reap(self.pid, block=False)
            if status is not None:
                return (None if status < 0 else status), stopped
            # A bounded wait: where another thread of this process takes SIGCHLD, the poll still sees the end.
            info = signal.sigtimedwait(_WATCHED, 0.25)
            if info is None or info.si_signo == signal.SIGCHLD:
                continue
            stopped = True
            if info.si_code != _SI_KERNEL:  # sent to this process alone: the child has not seen it
                _quietly(os.kill, self.pid, info.si_signo)

    def _wait_plain(self) -> tuple[int | None, bool]:
        stopped = False
        interrupts = 0
        while True:
            try:
                status = _reap(self.pid, block=True)
                return (None if status is None or status < 0 else status), stopped
            except KeyboardInterrupt:
                # Ctrl-C in a caller without sigtimedwait: the child stops the run and reports it; a second one
                # ends the child at once.
                stopped = True
                interrupts += 1
                _quietly(os.kill, self.pid, signal.SIGINT if interrupts == 1 else signal.SIGKILL)

    def _read_report(self) -> bytes | None:
        """The report in the pipe, read without blocking: a process the child forked may still hold the pipe."""
        fd = self._report_fd
        os.set_blocking(fd, False)
        chunks: list[bytes] = []
        try:
            while chunk := os.read(fd, REPORT_LIMIT):
                chunks.append(chunk)
        except BlockingIOError:
            pass
        return b"".join(chunks) or None


def _reap(pid: int, *, block: bool) -> int | None:
    """The child's wait status once it has ended (None while it runs); -1 when it cannot be waited for (reaped
    elsewhere: SIGCHLD ignored in this process)."""
    try:
        done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        return -1
    return status if done else None


def fork(*, main_thread: bool) -> Supervision | None:
    """Fork a supervised child: the parent gets its :class:`Supervision`, the child None (it is now
    :func:`supervised`, counts its host code into the shared page and dies with its parent). ``main_thread``:
    whether the caller is its process's main thread (the one that takes signals), where the parent waits by
    ``sigtimedwait``."""
    page = hostwatch.shared_page()
    report_read, report_write = os.pipe()
    alive_read, alive_write = os.pipe()
    mask: set[int] | None = None
    if main_thread and hasattr(signal, "sigtimedwait"):
        # Blocked before the fork, so that no stop signal or child's end is missed before the wait begins.
        mask = set(signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED))
    _flush_standard_streams()  # what is buffered now must not be written by both processes
    # What is alive now (the interpreter, this module's imports, the caller's objects) is left out of the
    # collector's passes in both processes, so that the child's collections do not write to, and so copy, every
    # page it shares with the parent (Python's advice for forking: docs of gc.freeze).
    gc.freeze()
    try:
        pid = os.fork()
    except BaseException:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for fd in (report_read, report_write, alive_read, alive_write):
            os.close(fd)
        page.close()
        raise
    if pid == 0:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(report_read)
        os.close(alive_write)
        _become_child(report_write, alive_read, page)
        return None
    os.close(report_write)
    os.close(alive_read)
    return Supervision(pid, page, report_read, alive_write, mask)


def _become_child(report_fd: int, alive_fd: int, page: mmap.mmap) -> None:
    global _report_fd, _supervised
    _report_fd, _supervised = report_fd, True
    hostwatch.record_into(page)

    def die_with_parent() -> None:
        try:
            ended = os.read(alive_fd, 1) == b""  # only the parent holds the other end: it has ended
        except OSError:
            return
        if ended:
            os.kill(os.getpid(), signal.SIGKILL)

    import threading  # here, not in the parent: see the note at the imports

    threading.Thread(target=die_with_parent, name="evalglass-supervised", daemon=True).start()


def report_exit(code: int, unprinted: str = "") -> None:
    """Report the command's exit code (and a line its own stderr could not take); unsupervised, print the line."""
    if not report(b"%d\n" % code + unprinted.encode("utf-8", "replace")) and unprinted:
        _quietly(os.write, 2, (unprinted + "\n").encode("utf-8", "replace"))


def reported_exit(data: bytes | None) -> tuple[int | None, str]:
    """What :func:`report_exit` sent: the exit code (None: no report, or not one of these) and the line to print."""
    if data is None:
        return None, ""
    head, _, rest = data.partition(b"\n")
    try:
        code = int(head)
    except ValueError:
        return None, ""
    return code, rest.decode("utf-8", "replace")


def in_child(work: Callable[[], bytes], failed: Callable[[BaseException], bytes]) -> NoReturn:
    """The end of a forked child's life: report what ``work`` returns (or what ``failed`` makes of what it raised)
    and end the process without running the caller's clean-up (its ``atexit``, its test session's teardown)."""
    try:
        try:
            data = work()
        except BaseException as exc:
            data = failed(exc)
        report(data)
    finally:
        _flush_standard_streams()
        os._exit(0)


def _flush_standard_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105  (no contextlib before the fork)
            stream.flush()
        except Exception:
            pass


def _quietly(action: Callable[..., object], *args: object) -> None:
    """``action(*args)``; an ``OSError`` (a process or descriptor already gone) is nothing to act on."""
    try:  # noqa: SIM105  (no contextlib before the fork)
        action(*args)
    except OSError:
        pass


__all__ = [
    "REPORT_LIMIT",
    "Ending",
    "Supervision",
    "can_supervise",
    "fork",
    "in_child",
    "report",
    "report_exit",
    "reported_exit",
    "supervised",
]
