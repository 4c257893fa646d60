"""Every exit code EvalGlass can end with, in one place.

The verdict engine, the standalone check runner and the command line's error boundary all take their codes from
here, so a code means the same thing whichever command returns it and no second definition can drift. Host code
cannot add to this set: a ``sys.exit(3)`` inside a host metric is that example's error, not the process's code.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What the process's exit status says. Only these ever leave the process."""

    #: Informational or pass (`run`); PASS (`check`); success for every other command.
    OK = 0
    #: An active gate failed or blocked (`run`); a check FAILED (`check`); `verify` found an edited field.
    FAILED = 1
    #: The command could not complete (bad config, bad input, internal error): no verdict exists. `--debug` adds a
    #: traceback and never changes this.
    SETUP = 2
    #: `check` only: the worst check was INCONCLUSIVE.
    CHECK_INCONCLUSIVE = 3
    #: `check` only: the worst check was an ERROR (the measurement itself failed).
    CHECK_ERROR = 4
    #: `run --verdict-exit-codes` only: the verdict is informational (no active gate); 0 stays pass.
    VERDICT_INFORMATIONAL = 10
    #: `run --verdict-exit-codes` only: the verdict is blocked; 1 stays fail.
    VERDICT_BLOCKED = 11
    #: Interrupted (Ctrl-C, SIGINT): nothing was decided; a run can be resumed.
    INTERRUPTED = 130


def verdict_exit_code(verdict: str) -> ExitCode:
    """The code of ``run --verdict-exit-codes``: one per verdict, so a caller learns the verdict from the process's
    exit status, which nothing the run started can change afterwards (a file in the run folder, a left-behind process
    can rewrite). ``verdict`` is the decision's (``informational``, ``pass``, ``fail``, ``blocked``), as text: this
    module is imported before the supervisor forks, so it imports nothing of the engine's (``core.gates``)."""
    return {
        "informational": ExitCode.VERDICT_INFORMATIONAL,
        "pass": ExitCode.OK,
        "fail": ExitCode.FAILED,
        "blocked": ExitCode.VERDICT_BLOCKED,
    }[verdict]
