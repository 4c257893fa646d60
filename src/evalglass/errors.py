"""Errors a user can cause, and the exit code each ends the process with.

Every error the project raises on purpose derives from :class:`EvalGlassError`: it knows the lines it prints on
stderr and its :class:`~evalglass.core.exitcodes.ExitCode`. The command line has one boundary (``cli``) that
catches these, prints them and exits with their code, so a module that finds bad input raises one of these and
never prints or exits itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when an exit code is asked for: `import evalglass.api` loads nothing of core
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

    from evalglass.core.exitcodes import ExitCode


def problem_message(error: ErrorDetails) -> str:
    """One pydantic problem's message as a user reads it: without pydantic's ``Value error, `` prefix."""
    return str(error["msg"]).removeprefix("Value error, ")


def first_problem(exc: ValidationError) -> str:
    """The first problem of a validation error (an artifact or record refused: one line is enough to say why)."""
    return problem_message(exc.errors()[0])


def first_problem_at(exc: ValidationError) -> tuple[str, str]:
    """The first problem's dotted location (``top level`` for none) and its message."""
    first = exc.errors()[0]
    return ".".join(str(part) for part in first["loc"]) or "top level", problem_message(first)


class EvalGlassError(Exception):
    """Base of every error the project raises on purpose. ``warnings``: what the command met before it stopped and
    must still say (a call cache whose entries were not trusted, a pointer that could not be moved), printed
    before the error's own lines."""

    warnings: tuple[str, ...] = ()

    @property
    def exit_code(self) -> ExitCode:
        """The code the process ends with when this error reaches the command line."""
        from evalglass.core.exitcodes import ExitCode

        return ExitCode.SETUP

    def stderr_lines(self) -> list[str]:
        """What the command line prints on stderr for this error, one entry per line."""
        return [*self.warnings, str(self)]


class SetupError(EvalGlassError):
    """The run cannot complete (exit 2) and produces no quality verdict."""

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(self.line())

    def line(self) -> str:
        parts = [f"{self.where}: {self.what}" if self.where else self.what]
        if self.fix:
            parts.append(self.fix)
        return " — ".join(parts)

    def stderr_lines(self) -> list[str]:
        return [*self.warnings, f"error: {self.line()}"]


class OptionError(SetupError):
    """Options refused (a bad value, a combination that cannot work), naming each option as its caller spells it.

    The rule is written once, where the options are checked (``evalglass.api``); its text names options by key
    (``{resume}``). ``str(exc)`` spells them as the Python API does (``resume``, ``cache="off"``); the command
    line's error boundary spells them as its flags (``--resume``, ``--no-cache``) through :meth:`spelt`.
    """

    def __init__(self, what: str, *, fix: str | None = None, names: Mapping[str, str]) -> None:
        self.templates = (what, fix)
        super().__init__(what.format_map(names), fix=None if fix is None else fix.format_map(names))

    def spelt(self, names: Mapping[str, str]) -> SetupError:
        """The same error with every option named as ``names`` spells it."""
        what, fix = self.templates
        return SetupError(what.format_map(names), fix=None if fix is None else fix.format_map(names))


class SetupErrors(SetupError):
    """Several independent problems found at once (a config with more than one mistake): each on its own line."""

    def __init__(self, problems: Sequence[SetupError]) -> None:
        if not problems:
            raise ValueError("SetupErrors needs at least one problem")
        self.problems = tuple(problems)
        first = self.problems[0]
        super().__init__(first.what, where=first.where, fix=first.fix)

    def line(self) -> str:
        return "\n".join(problem.line() for problem in self.problems)

    def stderr_lines(self) -> list[str]:
        return [*self.warnings, *(line for problem in self.problems for line in problem.stderr_lines())]


class Interrupted(EvalGlassError):
    """Ctrl-C or SIGINT stopped the command: nothing was decided (exit 130)."""

    @property
    def exit_code(self) -> ExitCode:
        from evalglass.core.exitcodes import ExitCode

        return ExitCode.INTERRUPTED

    def __init__(self, message: str = "interrupted: no verdict was produced") -> None:
        super().__init__(message)


class LocatedValueError(ValueError):
    """A problem a pydantic validator finds with a part of the document below the model it validates.

    A model validator's error has no location of its own (pydantic puts it at the model), so a cross-reference
    problem (a gate naming an undeclared metric) would be reported at the model's first line. Raising this instead
    carries each problem's path (relative to the model), so the config error names the line of the key at fault.
    """

    def __init__(self, problems: Sequence[tuple[tuple[str | int, ...], str]]) -> None:
        if not problems:
            raise ValueError("LocatedValueError needs at least one problem")
        self.problems = tuple(problems)
        super().__init__(self.problems[0][1])
