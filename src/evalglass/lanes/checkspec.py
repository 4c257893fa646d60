"""Bound command checks, the declaration half: what ``checks:`` in ``evalglass.yaml`` holds, validated.

Loading a config needs these models, and only a run with checks needs the machinery that runs them
(``lanes.checkrun``: processes, signals, temporary folders, threads), which re-exports everything here.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from evalglass.core.checks import ExitCodePolicy
from evalglass.lanes.targetstate import PathSelector

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "DEFAULT_TIMEOUT",
    "TARGET_ENV",
    "TARGET_PLACEHOLDER",
    "CheckConfigError",
    "CheckSpec",
    "CodeBinding",
    "ModuleInput",
    "OutputRefused",
    "TargetSpec",
    "output_name",
    "path_problems",
    "resolve_within",
]

DEFAULT_TIMEOUT = 60.0
DEFAULT_OUTPUT_CAP = 64 * 1024
TARGET_PLACEHOLDER = "{target}"
TARGET_ENV = "EVALGLASS_TARGET"

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: Variables that change which code a Python child loads in ways the binding of a check's host code
#: (``lanes.checkinputs.check_host_files``) cannot follow: another standard library (``PYTHONHOME``,
#: ``PYTHONPLATLIBDIR``), another user site folder whose ``.pth`` files and ``usercustomize`` run at start
#: (``PYTHONUSERBASE``), a file run before an interactive prompt (``PYTHONSTARTUP``). Declared in the config, any of
#: them could make a pull request's code run under an approval that never bound it, so they are refused; set
#: outside EvalGlass they are the machine's. ``PYTHONPATH`` is followed instead (its modules are bound).
UNBINDABLE_ENV = ("PYTHONHOME", "PYTHONPLATLIBDIR", "PYTHONSTARTUP", "PYTHONUSERBASE")


class CheckConfigError(ValueError):
    """A check declaration or call that cannot be run at all (configuration mistake: exit 2)."""


class OutputRefused(ValueError):
    """An example output that cannot be materialised safely as files."""


def _relative(value: str, what: str) -> str:
    if not value or "\x00" in value or "\\" in value:
        raise ValueError(f"{what} {value!r} must be a non-empty relative POSIX path")
    path = PurePosixPath(value)
    if path.is_absolute():
        raise ValueError(f"{what} {value!r} must be relative to the config folder, not absolute")
    if ".." in path.parts:
        raise ValueError(f"{what} {value!r} must not contain '..': it may not leave the config folder")
    return value


def output_name(name: object) -> str:
    """A file name for example content: relative, normalised, no '.'/'..' segments, no empty segments."""
    if not isinstance(name, str) or not name or "\x00" in name or "\\" in name:
        raise OutputRefused(f"output file name {name!r} must be a non-empty relative POSIX path")
    if name.startswith("/") or name.endswith("/"):
        raise OutputRefused(f"output file name {name!r} must be a relative path to a file")
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise OutputRefused(f"output file name {name!r} may not contain empty, '.' or '..' segments")
    return name


class TargetSpec(BaseModel):
    """What a check is bound to: a file or folder (relative to the config folder), and which paths count.

    ``path`` is required for a standalone check and must be omitted for a per-example check, whose target is
    the temporary folder holding the example's output (``include``/``exclude`` still apply there).
    A bare string is shorthand for ``{path: <string>}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    path: str | None = Field(default=None, description="File or folder, relative to the config folder.")
    include: tuple[str, ...] = Field(default=(), description="Globs of paths that are part of the state.")
    exclude: tuple[str, ...] = Field(default=(), description="Globs of paths that are not (e.g. __pycache__).")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"path": value} if isinstance(value, str) else value

    @field_validator("path")
    @classmethod
    def _relative_path(cls, value: str | None) -> str | None:
        return None if value is None else _relative(value, "target")

    @field_validator("include", "exclude")
    @classmethod
    def _globs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            PathSelector.validate(pattern)
        return value


_MODULE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"


class ModuleInput(BaseModel):
    """An input named as an importable module or package (``{module: mypkg.tests}``), found as the check's
    interpreter would find it, without importing it (``lanes.checkinputs``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    module: str = Field(pattern=_MODULE_NAME, description="A dotted module name, e.g. mypkg.tests.")


def _input_path(value: str) -> str:
    _relative(value, "input")
    if any(char in value for char in "*?["):
        PathSelector.validate(value)
    return value


def _input_kind(value: Any) -> str:
    return "module" if isinstance(value, dict | ModuleInput) else "path"


#: One entry of ``inputs:``: a path or glob relative to the config folder, or ``{module: NAME}``.
CheckInput = Annotated[
    Annotated[str, AfterValidator(_input_path), Tag("path")] | Annotated[ModuleInput, Tag("module")],
    Discriminator(_input_kind),
]


@dataclass(frozen=True)
class CodeBinding:
    """What the run hashed, when it loaded the config, of the code a check runs (label → SHA-256, labels from the
    config folder; ``engine.spec.config.definition_file_hashes``): the files its command names, the host code it
    runs by name, its declared ``inputs:``. The gate's approval is bound to exactly these bytes; the check runner
    hashes them again just before the command starts and just after it ends (``lanes.checkinputs.code_change``),
    so code rewritten while the run went on (by a lane, a python metric, any host code) is an ERROR naming the
    file, never a result measured by code no approval covers."""

    files: dict[str, str] = field(default_factory=dict)
    code: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    #: Paths from the config folder that ``inputs:`` never hash (the ledger).
    leave_out: tuple[str, ...] = ()


class CheckSpec(BaseModel):
    """One declared check, as it appears under ``checks:`` in ``evalglass.yaml`` (keyed by its name)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    #: Set on the run's copy only (:meth:`bound_to`); a copy travels to a cluster worker with it (pickled).
    _binding: CodeBinding | None = PrivateAttr(default=None)

    description: str | None = None
    command: tuple[str, ...] | str = Field(
        description="argv list, e.g. [python, -m, pytest, -q]. A single string only with shell: true."
    )
    shell: bool = Field(default=False, description="Run `command` (a string) through /bin/sh. Off by default.")
    cwd: str | None = Field(default=None, description="Working folder, relative to the config folder.")
    env: dict[str, str] = Field(default_factory=dict, description="Variables added to the inherited environment.")
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0, le=7 * 24 * 3600, description="Seconds; then ERROR.")
    target: TargetSpec | None = None
    writes_target: bool = Field(default=False, description="Allow the command to change its own target.")
    policy: ExitCodePolicy = Field(default_factory=ExitCodePolicy)
    inputs: tuple[CheckInput, ...] = Field(
        default=(),
        description="What the command runs besides its target (test folders, globs, {module: NAME}): hashed into "
        "its gates' fingerprints, so changing them makes an approval stale.",
    )
    output_file: str = Field(
        default="output.txt", description="Per-example: file name for an output that is a single string."
    )
    output_cap_bytes: int = Field(default=DEFAULT_OUTPUT_CAP, ge=0, le=1 << 30)

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @field_validator("inputs", mode="before")
    @classmethod
    def _inputs(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @field_validator("inputs")
    @classmethod
    def _inputs_once(cls, value: tuple[str | ModuleInput, ...]) -> tuple[str | ModuleInput, ...]:
        if len(set(value)) != len(value):
            raise ValueError("inputs lists an entry twice")
        return value

    @field_validator("cwd")
    @classmethod
    def _cwd(cls, value: str | None) -> str | None:
        return None if value is None else _relative(value, "cwd")

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _ENV_NAME.match(name):
                raise ValueError(f"env name {name!r} is not a valid variable name")
            if name == TARGET_ENV:
                raise ValueError(f"{TARGET_ENV} is set by EvalGlass to the target's path; it cannot be declared")
            if "\x00" in text:
                raise ValueError(f"env {name}: values cannot contain NUL")
            if name in UNBINDABLE_ENV:
                raise ValueError(
                    f"env {name} changes which code Python loads in a way EvalGlass cannot bind to the gate's "
                    "approval; remove it (put the code the check needs on PYTHONPATH, whose modules are bound)"
                )
        return value

    @field_validator("output_file")
    @classmethod
    def _output_file(cls, value: str) -> str:
        try:
            return output_name(value)
        except OutputRefused as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _command_form(self, info: ValidationInfo) -> "CheckSpec":
        if self.shell:
            if not isinstance(self.command, str) or not self.command.strip():
                raise ValueError("with shell: true, command must be one non-empty shell string")
            if TARGET_PLACEHOLDER in self.command:
                raise ValueError(
                    f"{TARGET_PLACEHOLDER} is substituted only in argv lists; in a shell string use "
                    f'"${TARGET_ENV}" (quoted) instead'
                )
        else:
            if isinstance(self.command, str):
                raise ValueError(
                    "command must be an argv list, e.g. [python, check.py]; a shell string needs shell: true"
                )
            if not self.command or not self.command[0]:
                raise ValueError("command must name a program as its first element")
        argv = (self.command,) if isinstance(self.command, str) else self.command
        if any("\x00" in part for part in argv):
            raise ValueError("command cannot contain NUL characters")
        base_dir = (info.context or {}).get("base_dir") if info is not None else None
        if base_dir is not None:
            problems = path_problems(self, Path(base_dir))
            if problems:
                raise ValueError(problems[0])
        return self

    @property
    def binding(self) -> CodeBinding | None:
        """The code state hashed at load that this check must still run as, if the run bound it."""
        return self._binding

    def bound_to(self, binding: CodeBinding) -> "CheckSpec":
        """A copy that runs only as ``binding`` (see :class:`CodeBinding`)."""
        copy = self.model_copy()
        copy._binding = binding
        return copy

    @property
    def argv(self) -> tuple[str, ...]:
        """The command as recorded: the argv template, or the one shell string."""
        return (self.command,) if isinstance(self.command, str) else self.command


def resolve_within(base: Path, relative: str, what: str) -> Path:
    """``base/relative`` resolved through links; CheckConfigError when it leaves ``base``."""
    root = base.resolve()
    resolved = (root / relative).resolve()
    if resolved != root and root not in resolved.parents:
        raise CheckConfigError(
            f"{what} {relative!r} resolves to {resolved}, outside the config folder {root}; "
            "checks may not reach outside it (check for '..' or a symbolic link)"
        )
    return resolved


def path_problems(spec: CheckSpec, base_dir: Path) -> list[str]:
    """Why ``cwd`` or ``target`` would leave ``base_dir`` (through ``..`` or links), one message each."""
    problems = []
    for what, relative in (("cwd", spec.cwd), ("target", spec.target.path if spec.target else None)):
        if relative is not None:
            try:
                resolve_within(base_dir, relative, what)
            except CheckConfigError as exc:
                problems.append(str(exc))
    return problems
