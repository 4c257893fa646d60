"""The ``evalglass`` program (console script and ``python -m evalglass``): the command line in a supervised child.

It forks before anything else is imported (``evalglass.supervisor``): the parent, which never imports the command
line nor runs host code, ends with the exit code the child reports once its command has finished, or with 2 (130
when a stop signal reached it) and one line naming the host code that was running when the child died without a
report. ``evalglass.cli.main`` called in a process of one's own (tests, embedding) is not supervised.
"""

from __future__ import annotations

import os
import signal

from evalglass import supervisor
from evalglass.core.exitcodes import ExitCode

TYPE_CHECKING = False  # imported before the fork: no typing (evalglass/supervisor.py, the note at its imports)
if TYPE_CHECKING:
    from typing import NoReturn


def main() -> None:
    if supervisor.can_supervise():
        # SIGCHLD ignored (inherited through exec) would let the kernel reap the child before its end is seen.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        supervision = supervisor.fork(main_thread=True)
        if supervision is not None:
            _end_as(supervision.wait())
    _run_command()


def _end_as(ending: supervisor.Ending) -> NoReturn:
    """The parent's exit: the child's reported code (and a line it could not print itself), or 2 / 130 with one
    line saying what happened."""
    code, line = supervisor.reported_exit(ending.report)
    if code is None:
        code = ExitCode.INTERRUPTED if ending.stopped else ExitCode.SETUP
        line = ("interrupted: " if ending.stopped else "error: ") + ending.died()
    if line:
        try:  # noqa: SIM105  (no contextlib before the fork)
            os.write(2, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
    os._exit(code)


def _run_command() -> NoReturn:
    """The command line, then its exit code reported (``cli`` reports itself before the exits that skip this)."""
    from evalglass.cli import main as command

    unprinted = ""
    try:
        command()  # click's standalone mode ends every command with SystemExit
        code = 0
    except SystemExit as done:
        code = _exit_status(done.code)
        if isinstance(done.code, str):  # what Python would have printed for it
            unprinted = done.code
    except KeyboardInterrupt:
        code, unprinted = ExitCode.INTERRUPTED, "interrupted: no verdict was produced"
    except BaseException as exc:  # the error boundary's own printing failed (host code closed its stderr)
        from evalglass import redaction

        code = ExitCode.SETUP
        unprinted = redaction.current().text(f"error: internal error: {type(exc).__name__}: {exc}")
    supervisor.report_exit(code, unprinted)
    raise SystemExit(code)


def _exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` ends a process with (a message is printed by Python and ends it with 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    return 1


if __name__ == "__main__":  # pragma: no cover
    main()
