"""What a check runs besides its target: the host code its command runs by name, and its declared ``inputs:``,
hashed for its gates' fingerprints; and what its command discovers that no input binds.

A check's gate is approved for one fingerprint; what the fingerprint covers is what a pull request cannot change
without making the approval stale. The check's declaration and the files inside the config folder its command
names literally are covered (``engine.spec.config``). What the command runs by name besides, wherever it lies, is
found here and bound (:func:`check_host_files`): what a named script imports, a ``-m`` module and ``-c`` code with
what they import, pytest's ``conftest.py`` and configuration, looked up where the child looks (its declared
``PYTHONPATH`` included). The code a test runner *discovers* is not on the command line: ``pytest tests`` names a
folder, ``python -m unittest discover`` names a tool, ``make test`` a runner. A check declares that code under
``inputs:`` (paths, globs, importable modules), hashed here; :func:`unbound_inputs` finds, by class, what the
command runs that no input covers, so ``explain``, ``preflight`` and the run can say so and ``require_binding``
can block on it:

* any word of the command that resolves (from the check's ``cwd``) to a folder inside the config folder;
* any module a Python interpreter is told to run (``-m X``) that is not host code (the project's own is bound);
* any word naming a program that discovers what it runs (:data:`RUNNERS`: test runners, build tools, package
  managers' ``test`` scripts).
* any word naming a script of the project other than a Python one (``sh run.sh``, a ``#!`` line, a ``Makefile``):
  its bytes are bound, what it runs in turn is not read (:func:`_other_scripts`).

A folder is covered by an input at or above it (a glob counts by its literal folder), or by the check's target.
A module is covered by a module input naming it or a package above it, or by any path input its files lie
under. A runner, and a module that is not the project's own code (``-m pytest``), reads what it finds: EvalGlass
cannot know which files that is, so any declared input covers it (the person declaring ``inputs:`` says what it
runs), as does a target holding the check's working folder.

Modules are found the way the check's interpreter would look them up (its working folder first, then its declared
``PYTHONPATH``, then this interpreter's ``sys.path``), without importing anything: importing host code while
fingerprinting would run it.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import os
import re
import shlex
import shutil
import stat
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path, PurePosixPath

from evalglass.core.fingerprint import fingerprint_of, fingerprint_of_bytes
from evalglass.errors import SetupError
from evalglass.lanes.checkspec import (
    UNBINDABLE_ENV,
    CheckConfigError,
    CheckSpec,
    CodeBinding,
    ModuleInput,
    resolve_within,
)
from evalglass.lanes.hostimports import (
    TooManyHostFiles,
    find_submodule,
    find_top_level,
    imported_host_files,
    installed_label,
    is_host_file,
    module_host_files,
    source_host_files,
)
from evalglass.lanes.targetstate import Budget, Ignore, TargetUnavailable, fingerprint_target

__all__ = [
    "INPUTS_MAX_BYTES",
    "INPUTS_MAX_FILES",
    "RUNNERS",
    "SKIPPED_FOLDERS",
    "InputProblem",
    "argv_file_hashes",
    "assigned_unbindable",
    "check_host_files",
    "code_change",
    "code_state",
    "command_words",
    "declared_python_path",
    "declared_unbound",
    "env_words",
    "find_module",
    "host_file_hashes",
    "input_hashes",
    "input_label",
    "split_words",
    "unbound_inputs",
]

#: What one check's inputs may hash between them. A test suite is code: a cap far above any suite's sources, low
#: enough that naming a data folder (or the whole project with its environments) is an error, not a slow start.
INPUTS_MAX_BYTES = 64 << 20
INPUTS_MAX_FILES = 20_000

#: Folders never part of an input: version control, tool caches that running a check rewrites, environments
#: (the machine's, like programs on PATH) and EvalGlass's own run folders. Excluded at any depth.
SKIPPED_FOLDERS = (
    ".git",
    ".hg",
    ".svn",
    ".evalglass",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".venv",
    "node_modules",
)

#: Programs that discover what they run (tests, build rules, package scripts) rather than being told on the
#: command line. Matched against every word's file name, so ``uv run pytest`` and ``npx jest`` count too.
RUNNERS = frozenset(
    {
        "pytest",
        "py.test",
        "unittest",
        "nose2",
        "trial",
        "behave",
        "tox",
        "nox",
        "hatch",
        "make",
        "gmake",
        "ninja",
        "cmake",
        "ctest",
        "bazel",
        "npm",
        "npx",
        "yarn",
        "pnpm",
        "bun",
        "deno",
        "jest",
        "vitest",
        "mocha",
        "go",
        "cargo",
        "mvn",
        "gradle",
        "gradlew",
        "dotnet",
        "rake",
        "rspec",
        "phpunit",
        "mix",
        "sbt",
    }
)

_WILDCARD = re.compile(r"[*?\[]")
_PYTHON = re.compile(r"^(?:\{python\}|python[0-9.]*|pypy[0-9.]*|py)$")
#: Interpreter options that take the next word as their argument (``-X dev``, ``-W error``).
_PYTHON_OPTIONS_WITH_ARGUMENT = frozenset({"-X", "-W", "--check-hash-based-pycs"})
_MODULE_PREFIX = "module:"


class InputProblem(CheckConfigError):
    """A declared input that cannot be hashed (missing, outside the config folder, too large): exit 2, at its
    ``inputs:`` entry (``index``)."""

    def __init__(self, index: int, message: str, fix: str) -> None:
        super().__init__(message)
        self.index = index
        self.fix = fix


def input_label(entry: str | ModuleInput) -> str:
    """How an input is named in the gate's fingerprint and in messages: the path or glob, or ``module:NAME``."""
    return entry if isinstance(entry, str) else _MODULE_PREFIX + entry.module


# ------------------------------------------------------------------------------------------------------------
# Hashing
# ------------------------------------------------------------------------------------------------------------


def input_hashes(spec: CheckSpec, base_dir: Path, leave_out: Collection[Path] = ()) -> dict[str, str]:
    """The fingerprint of each declared input, by :func:`input_label`. Folders are walked like a target (paths in
    byte order, links recorded by what they point to and never followed), leaving out :data:`SKIPPED_FOLDERS`,
    the bytecode Python checks against its source, and the files in ``leave_out`` (the ledger: an input holding
    it would change with every approval of the gate it binds). Raises :class:`InputProblem`."""
    root = base_dir.resolve()
    cwd = root / (spec.cwd or ".")
    path = declared_python_path(spec, cwd)
    budget = Budget(max_files=INPUTS_MAX_FILES, max_bytes=INPUTS_MAX_BYTES)
    left_out = {os.path.realpath(path) for path in leave_out}

    def ignore(full: str, relpath: str) -> bool:
        return _validated_bytecode(full, relpath) or (bool(left_out) and os.path.realpath(full) in left_out)

    hashes: dict[str, str] = {}
    for index, entry in enumerate(spec.inputs):
        label = input_label(entry)
        try:
            if isinstance(entry, ModuleInput):
                hashes[label] = _module_fingerprint(entry.module, cwd, path, budget, ignore)
            else:
                hashes[label] = _path_fingerprint(entry, root, budget, ignore)
        except TargetUnavailable as exc:
            raise InputProblem(
                index,
                f"input {label!r}: {exc}",
                f"name the code the command runs (at most {INPUTS_MAX_FILES:,} files and "
                f"{INPUTS_MAX_BYTES >> 20} MiB in all), e.g. a glob such as tests/**/*.py",
            ) from None
        except CheckConfigError as exc:
            raise InputProblem(index, f"input {label!r}: {exc}", _fix_for(entry)) from None
    return hashes


def _fix_for(entry: str | ModuleInput) -> str:
    if isinstance(entry, ModuleInput):
        return "name a module the check's interpreter can import from the check's cwd, or a path instead"
    return "name a file, folder or glob inside the config folder, relative to it"


def _split_glob(pattern: str) -> tuple[str, str | None]:
    """(the literal folder a glob starts from, the rest of it); (path, None) for a plain path."""
    parts = pattern.split("/")
    for at, part in enumerate(parts):
        if _WILDCARD.search(part):
            return "/".join(parts[:at]) or ".", "/".join(parts[at:])
    return pattern, None


def _path_fingerprint(entry: str, root: Path, budget: Budget, ignore: Ignore) -> str:
    literal, rest = _split_glob(entry)
    where = resolve_within(root, literal, "input")
    if rest is None:
        if not where.exists():
            raise CheckConfigError("no such file or folder")
        return fingerprint_target(where, (), SKIPPED_FOLDERS, budget=budget, ignore=ignore).fingerprint
    if not where.is_dir():
        raise CheckConfigError(f"the glob starts from {literal!r}, which is not a folder")
    state = fingerprint_target(where, (rest,), SKIPPED_FOLDERS, anchored=True, budget=budget, ignore=ignore)
    if state.files == 0 and state.links == 0:
        raise CheckConfigError("the glob matches no file; a glob that binds nothing binds no test code")
    return state.fingerprint


def _module_fingerprint(name: str, cwd: Path, path: Sequence[str], budget: Budget, ignore: Ignore) -> str:
    found = find_module(name, cwd, path)
    if found is None:
        raise CheckConfigError(f"no module {name!r} is importable from the check's cwd or this interpreter's path")
    locations = _module_files(found)
    if not locations:
        raise CheckConfigError(f"module {name!r} is built into the interpreter: it has no files to bind")
    states = [
        fingerprint_target(location, (), SKIPPED_FOLDERS, budget=budget, ignore=ignore).fingerprint
        for location in locations
    ]
    # A namespace package may have several folders; which order sys.path lists them in is the machine's.
    return states[0] if len(states) == 1 else fingerprint_of(sorted(states))


def _module_files(found: ModuleSpec) -> list[Path]:
    """The package's folders, or the module's file; empty for a built-in or frozen module."""
    if found.submodule_search_locations is not None:
        return [Path(location) for location in found.submodule_search_locations]
    if found.has_location and found.origin is not None:
        return [Path(found.origin)]
    return []


def _validated_bytecode(full: str, relpath: str) -> bool:
    """A ``__pycache__`` file Python checks against its source before using it (timestamp or checked-hash
    ``.pyc``): rewritten by every run, never run in place of a changed source, so not state. An unchecked-hash
    ``.pyc`` is run *instead* of its source, whatever the source says: it stays in the hash."""
    parts = relpath.split("/")
    if len(parts) < 2 or parts[-2] != "__pycache__" or not parts[-1].endswith(".pyc"):
        return False
    flags_of = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(full, flags_of)
    except OSError:
        return False  # hashed, and the walk reports what it cannot read
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        header = os.read(fd, 8)
    finally:
        os.close(fd)
    if len(header) < 8:
        return False
    flags = int.from_bytes(header[4:8], "little")
    hash_based, check_source = bool(flags & 0b01), bool(flags & 0b10)
    return flags <= 0b11 and (not hash_based or check_source)


def find_module(name: str, cwd: Path, path: Sequence[str] = ()) -> ModuleSpec | None:
    """Where ``name`` would be imported from by ``python -m`` in ``cwd``, found without importing it or any
    package above it (``importlib.util.find_spec`` imports the parents of a dotted name, running their code).

    The top-level name is looked up in ``cwd`` first, then in ``path`` (the check's declared ``PYTHONPATH``,
    :func:`declared_python_path`), then through this interpreter's finders (``sys.path``, editable installs); each
    further part inside the package found so far. Limit: a package that extends its ``__path__`` at import time is
    seen without the extension.
    """
    parts = name.split(".")
    found = find_top_level(parts[0], (str(cwd), *path))
    for depth in range(1, len(parts)):
        if found is None or found.submodule_search_locations is None:
            return None
        found = find_submodule(".".join(parts[: depth + 1]), list(found.submodule_search_locations))
    return found


def declared_python_path(spec: CheckSpec, cwd: Path) -> tuple[str, ...]:
    """The folders the check's ``PYTHONPATH`` puts on a Python child's ``sys.path`` (after the script's folder or
    the working folder, before the interpreter's own path), resolved from the check's ``cwd`` as the child resolves
    them: the one its ``env:`` declares, and any the command itself assigns (``env PYTHONPATH=lib python x.py``,
    ``sh -c "PYTHONPATH=lib python x.py"``), each looked in (which one the child sees is the shell's business; the
    scan binds what any of them finds). A declared value replaces the inherited one; an inherited one is this
    process's too, so its folders are on the ``sys.path`` the scan falls back to. An entry holding ``{`` or ``$`` (a
    placeholder or a variable the scan does not expand) names no folder."""
    values = [spec.env["PYTHONPATH"]] if "PYTHONPATH" in spec.env else []
    values += [word.split("=", 1)[1] for word in command_words(spec) if word.startswith("PYTHONPATH=")]
    return tuple(
        dict.fromkeys(
            str((cwd / entry).resolve()) if entry else str(cwd)
            for value in values
            for entry in value.split(os.pathsep)
            if not any(char in entry for char in "{$\x00")
        )
    )


def assigned_unbindable(spec: CheckSpec) -> tuple[str, ...]:
    """The variables of ``lanes.checkspec.UNBINDABLE_ENV`` the command assigns itself (``PYTHONUSERBASE=x python
    ...``): refused in ``env:``, named unbound here (a word of a command has no line of its own to refuse it at)."""
    return tuple(
        dict.fromkeys(word.split("=", 1)[0] for word in command_words(spec) if word.split("=", 1)[0] in UNBINDABLE_ENV)
    )


# ------------------------------------------------------------------------------------------------------------
# What the command runs that no input binds
# ------------------------------------------------------------------------------------------------------------


def command_words(spec: CheckSpec) -> list[str]:
    """The command's words: argv elements (an element holding spaces, such as ``sh -c "pytest tests"``'s script,
    also split into its own words), or a shell string's words."""
    if isinstance(spec.command, str):
        return split_words(spec.command)
    words: list[str] = []
    for element in spec.command:
        words.append(element)
        if any(char.isspace() for char in element):
            words.extend(split_words(element))
    return words


def env_words(spec: CheckSpec) -> list[str]:
    """What the check's variables name, as words that may be paths: each value of its ``env:`` and each value the
    command assigns (``env LD_PRELOAD=./x.so cmd``), split at blanks, ``=`` and the path separator. A variable can
    make a program load a file as surely as its command line can (``LD_PRELOAD``, ``NODE_OPTIONS=--require
    ./setup.js``, ``BASH_ENV``, ``PYTEST_ADDOPTS=-p plugin``): a file one of them names is bound like a file the
    command names. ``PYTHONPATH`` is followed instead (:func:`declared_python_path`: its modules are bound)."""
    values = [value for name, value in spec.env.items() if name != "PYTHONPATH"]
    values += [
        word.split("=", 1)[1]
        for word in command_words(spec)
        if _ASSIGNMENT.match(word) and not word.startswith("PYTHONPATH=")
    ]
    return [
        part
        for value in values
        for word in split_words(value)
        for piece in word.split("=")
        for part in piece.split(os.pathsep)
        if part
    ]


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def split_words(text: str) -> list[str]:
    """A shell string's words as the shell would split them (quotes honoured, nothing expanded)."""
    try:
        return shlex.split(text)
    except ValueError:  # unbalanced quotes: the shell will refuse it too; take what splits plainly
        return text.split()


def unbound_inputs(spec: CheckSpec, base_dir: Path) -> tuple[str, ...]:
    """What the check's command runs that neither its ``inputs:`` nor its target binds, one phrase each in
    command order (``folder 'tests'``, ``module 'unittest' (-m)``, ``runner 'pytest'``); empty when everything
    it names is bound. What the command names that is host code is bound by :func:`check_host_files`, so only
    what is *discovered* is said here. Never raises: an input that cannot be resolved covers nothing."""
    root = base_dir.resolve()
    cwd = (root / (spec.cwd or ".")).resolve()
    path = declared_python_path(spec, cwd)
    words = command_words(spec)
    covering = _covering_paths(spec, root, cwd, path)
    module_inputs = [entry.module for entry in spec.inputs if isinstance(entry, ModuleInput)]
    # A runner (or a tool run with -m) reads what it finds: declared inputs say what that is, or a target holding the
    # working folder, as declared (what a reader of the run record re-derives: declared_unbound) and on disk.
    discovery_bound = bool(spec.inputs) or (
        target_holds_cwd(spec) and any(folder == cwd or folder in cwd.parents for folder in covering)
    )
    found: list[str] = []
    modules = dict(_python_modules(words))
    # A module's name is no folder's even when a package folder of that name lies in cwd: it is said as a module.
    for word in _path_words([word for at, word in enumerate(words) if at not in modules]):
        folder = _folder_named(word, cwd, root)
        if folder is not None and not _covered(folder, covering):
            outside = (
                "" if folder == root or root in folder.parents else " (outside the config folder: no input binds it)"
            )
            found.append(f"folder {_shown(folder, root)!r}{outside}")
    if not discovery_bound:
        found += [
            f"script {_shown(script, root)!r} (what it runs is not followed)"
            for script in _other_scripts(words, cwd, root)
        ]
    found += _named_unbound(
        spec, words, modules, discovery_bound, lambda module: _module_covered(module, cwd, path, module_inputs)
    )
    return tuple(dict.fromkeys(found))


def declared_unbound(spec: CheckSpec, host_code: Collection[str]) -> tuple[str, ...]:
    """What :func:`unbound_inputs` finds from the check's declaration alone, with no file system: what a reader of a
    run record can re-derive from its config snapshot and the labels of the host code the run hashed for the check
    (``host_code``: its ``code:CHECK`` definition files). Always a part of what :func:`unbound_inputs` finds in the
    folder the run read, so a record claiming less is refused, never an honest one:

    * the variables the command assigns (:func:`assigned_unbindable`): always unbound;
    * a check with no ``inputs:`` and no target: every runner the command names, and every ``-m`` module none of
      whose files is among ``host_code`` (the project's own module is hashed there).

    * a check with no ``inputs:`` whose target does not hold its working folder as declared
      (:func:`target_holds_cwd`): the same.

    Limit: the folders the command names need the files (``evalglass verify`` re-derives them when the config
    folder is at hand). A target that holds the working folder as declared but not on disk (a symbolic link inside
    the config folder) is unbound in the run and bound here: this claims less, never more."""
    words = command_words(spec)
    discovery_bound = bool(spec.inputs) or target_holds_cwd(spec)
    return tuple(
        dict.fromkeys(
            _named_unbound(
                spec, words, dict(_python_modules(words)), discovery_bound, lambda module: _labelled(module, host_code)
            )
        )
    )


def target_holds_cwd(spec: CheckSpec) -> bool:
    """Whether the check's declared target is its declared working folder or a folder above it, read from the
    declaration alone (both are relative to the config folder, without ``..``: ``checkspec`` refuses anything
    else), so a reader of a run record derives it exactly as the run did. The run also asks it of the resolved
    paths (:func:`unbound_inputs`): a target binds what a runner discovers only when both say so."""
    if spec.target is None or spec.target.path is None:
        return False
    target, cwd = PurePosixPath(spec.target.path), PurePosixPath(spec.cwd or ".")
    return target == cwd or target in cwd.parents


def _named_unbound(
    spec: CheckSpec,
    words: Sequence[str],
    modules: dict[int, str],
    discovery_bound: bool,
    host_module: Callable[[str], bool],
) -> list[str]:
    """The modules, runners and variables the command names that no input binds (``host_module``: whether a module
    is the project's own code, which :func:`check_host_files` binds)."""
    found = [
        f"module {module!r} (-m)" for module in modules.values() if not discovery_bound and not host_module(module)
    ]
    for at, word in enumerate(words):
        runner = None if at in modules else _runner(word)  # `-m pytest` is said once, as a module
        if runner is not None and not discovery_bound:
            found.append(f"runner {runner!r}")
    # What Python loads under these is beyond any binding: no input covers it.
    found += [f"variable {name!r} (set in the command)" for name in assigned_unbindable(spec)]
    return found


def _labelled(module: str, host_code: Collection[str]) -> bool:
    """Whether a file of ``module`` (its ``.py``, its package's ``__init__.py`` or ``__main__.py``) is among the
    labels of the host code a run hashed (paths from the config folder)."""
    stem = module.replace(".", "/")
    ends = (f"{stem}.py", f"{stem}/__init__.py", f"{stem}/__main__.py")
    return any(label == end or label.endswith("/" + end) for label in host_code for end in ends)


#: The files pytest reads on its own from the folder it starts in and the folders above it: its configuration
#: (which decides what is collected, which plugins load, which options apply) and ``conftest.py`` (code it runs),
#: each with the text that makes pytest read it (None: always read). A shared file without pytest's section is not
#: pytest's configuration (a dependency bump in ``pyproject.toml`` does not make a check's approval stale); adding
#: the section adds the file to what is bound, which changes the fingerprint too. Every name pytest looks for
#: (``_pytest.config.findpaths.CONFIG_LOADERS_BY_NAME``: pytest 9 reads ``pytest.toml`` and ``.pytest.toml`` first)
#: is here; tests/checks/test_check_inputs.py holds this list to the installed pytest's.
PYTEST_IMPLICIT: dict[str, bytes | None] = {
    "conftest.py": None,
    "pytest.toml": None,
    ".pytest.toml": None,
    "pytest.ini": None,
    ".pytest.ini": None,
    "pyproject.toml": b"[tool.pytest",
    "tox.ini": b"[pytest]",
    "setup.cfg": b"[tool:pytest]",
}


def check_host_files(spec: CheckSpec, base_dir: Path) -> tuple[Path, ...]:
    """The host code (``lanes.hostimports.is_host_file``) the check's command runs by name, besides the files
    inside the config folder its words name (hashed as such, ``engine.spec.config``): hashed into its gates'
    fingerprints, wherever the files lie.

    * a Python script the command names (``.py``, or a ``#!`` line naming Python): the script itself when it lies
      outside the config folder, and the host modules it imports, transitively, found as ``python script.py``
      finds them (its folder first, then the declared ``PYTHONPATH``, then this interpreter's path);
    * a module run with ``-m`` (its file, its packages' ``__init__``, a package's ``__main__``) and inline code run
      with ``-c``, with what they import, found from the check's ``cwd``;
    * when the command runs Python: the ``sitecustomize``/``usercustomize`` module the child's ``site`` imports
      through that path, and the module ``PYTHONBREAKPOINT`` names;
    * when it runs pytest: the ``conftest.py`` and configuration files (:data:`PYTEST_IMPLICIT`) in its ``cwd`` and
      each folder above it up to the repository's root (the first folder holding ``.git``; without one, the config
      folder), for a check with ``inputs:``, every file pytest collects below it that no input holds
      (:func:`_collected_below`), what those files import, and each plugin named with ``-p``.

    Raises ``TooManyHostFiles`` when one scan reaches more than ``MAX_HOST_FILES`` of the project's files.
    """
    root = base_dir.resolve()
    cwd = (root / (spec.cwd or ".")).resolve()
    path = declared_python_path(spec, cwd)
    words = command_words(spec)
    from_cwd = (str(cwd), *path)
    found: dict[Path, None] = {}
    for word in [*_path_words(words), *env_words(spec)]:
        # A file outside the config folder named by a relative path (`bash ../tools/check.sh`): the project's. A file
        # inside it is hashed as a named file already (:func:`argv_file_hashes`).
        named = _relative_target(word, cwd, root)
        if named is not None and named.is_file() and not named.is_relative_to(root):
            found[named] = None
    scripts = list(_scripts(_path_words(words), cwd, root))
    for script in scripts:
        if not script.is_relative_to(root):
            found[script] = None
        found.update(dict.fromkeys(imported_host_files(script, (str(script.parent), *path))))
    runs = list(_python_runs(words))
    for _, option, value in runs:
        if option == "-c":
            found.update(dict.fromkeys(source_host_files(value, from_cwd)))
        else:
            found.update(dict.fromkeys(module_host_files(value, from_cwd)))
            found.update(dict.fromkeys(module_host_files(f"{value}.__main__", from_cwd)))
    if scripts or runs or any(_PYTHON.match(os.path.basename(word)) for word in words):
        firsts = [*([str(cwd)] if runs else []), *(str(script.parent) for script in scripts), *path]
        for first in dict.fromkeys(firsts):
            found.update(dict.fromkeys(_shadowing(Path(first))))
        for name in ("sitecustomize", "usercustomize"):
            found.update(dict.fromkeys(module_host_files(name, path)))
        breakpoint_hook = spec.env.get("PYTHONBREAKPOINT", "")
        if breakpoint_hook not in {"", "0"} and "." in breakpoint_hook:
            found.update(dict.fromkeys(module_host_files(breakpoint_hook.rpartition(".")[0], from_cwd)))
    if any(value == "pytest" for _, option, value in runs if option == "-m") or any(
        _runner(word) in {"pytest", "py.test"} for word in words
    ):
        found.update(dict.fromkeys(_pytest_files(spec, words, cwd, root, path)))
    if spec.inputs and any(value == "unittest" for _, option, value in runs if option == "-m"):
        found.update(dict.fromkeys(_unittest_files(spec, words, cwd, root, path)))
    return tuple(file for file in found if is_host_file(file))


def _unittest_files(
    spec: CheckSpec, words: Sequence[str], cwd: Path, root: Path, path: Sequence[str]
) -> Iterator[Path]:
    """What ``python -m unittest`` may import below its ``cwd`` and the folders its command names, for a check with
    ``inputs:``: test modules by its pattern (``test*.py``, or the ``-p``/``--pattern`` given) and packages'
    ``__init__.py``, with what they import, unless an input or the target holds them, as for pytest
    (:func:`_collected_below`): one a pull request adds beside the declared tests would run unbound."""
    pattern = "test*.py"
    for at, word in enumerate(words[:-1]):
        if word in {"-p", "--pattern"}:
            pattern = words[at + 1]
        elif word.startswith("--pattern="):
            pattern = word.split("=", 1)[1]
    stop = _repository_root(cwd) or root
    for found in _collected_below(spec, words, cwd, root, stop, patterns=("__init__.py", pattern), configs=False):
        yield found
        yield from imported_host_files(found, (str(found.parent), str(cwd), *path))


def _shadowing(folder: Path) -> Iterator[Path]:
    """The modules in ``folder`` (a folder a Python child looks in before the machine's: the ``cwd`` of ``-m`` or
    ``-c``, a script's own folder, a declared ``PYTHONPATH``) that hide a module of the machine's of the same name
    (``iniconfig.py``, ``json.py``): whatever installed code imports that name (pytest, the standard library) runs
    the project's file instead, which no scan of the project's own imports finds. Each is bound by its file (a
    package by its ``__init__.py``; a namespace folder never wins over a module found later)."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return
    resolved = folder.resolve()
    elsewhere = [entry for entry in sys.path if entry and Path(entry).resolve() != resolved]
    for entry in entries:
        if entry.is_file() and entry.suffix == ".py":
            name, file = entry.stem, entry
        elif entry.is_dir() and (entry / "__init__.py").is_file():
            name, file = entry.name, entry / "__init__.py"
        else:
            continue
        if not name.isidentifier() or name == "__main__":
            continue
        if name in sys.stdlib_module_names or PathFinder.find_spec(name, elsewhere) is not None:
            yield file


def _pytest_files(spec: CheckSpec, words: Sequence[str], cwd: Path, root: Path, path: Sequence[str]) -> Iterator[Path]:
    """What pytest reads besides the tests it collects (see :func:`check_host_files`)."""
    stop = _repository_root(cwd) or root
    folders = [cwd, *cwd.parents]
    options = [*words, *env_words(spec)]  # PYTEST_ADDOPTS is read as pytest's own command line
    configured: list[Path] = []
    for folder in folders[: folders.index(stop) + 1] if stop in folders else [cwd]:
        for name, section in PYTEST_IMPLICIT.items():
            candidate = folder / name
            if candidate.is_file() and (section is None or section in _read(candidate)):
                yield candidate
                if name == "conftest.py":
                    yield from _conftest_files(candidate, cwd, path)
                else:
                    configured.append(candidate)
    # Without inputs the discovery is unbound as a whole (``check_inputs_unbound``, or accepted so by the ledger);
    # with them, what pytest collects beyond them must not decide unseen.
    collected_files = list(_collected_below(spec, words, cwd, root, stop, options, configured)) if spec.inputs else []
    for collected in collected_files:
        yield collected
        if collected.name == "conftest.py":
            yield from _conftest_files(collected, cwd, path)
        elif collected.suffix == ".py":
            yield from imported_host_files(collected, (str(collected.parent), str(cwd), *path))
        else:
            configured.append(collected)
    for plugin in _plugins(options, configured):
        yield from module_host_files(plugin, (str(cwd), *path))


#: ``-p NAME`` / ``-pNAME`` in a pytest configuration's text (``addopts``): a plugin module pytest imports.
_PLUGIN_OPTION = re.compile(r"""(?:^|[\s"'\[,=])-p\s*["']?([A-Za-z_][\w.]*)""")


def _plugins(options: Sequence[str], configured: Sequence[Path]) -> Iterator[str]:
    """The plugin modules pytest is told to load: ``-p NAME`` in its command line or ``PYTEST_ADDOPTS``, and in the
    ``addopts`` of a configuration file it may read (the file is bound; the module it names must be too)."""
    for at, word in enumerate(options[:-1]):
        plugin = options[at + 1]
        if word == "-p" and not plugin.startswith("no:"):
            yield plugin
    for config in configured:
        yield from (name for name in _PLUGIN_OPTION.findall(_read(config).decode(errors="replace")) if name != "no")


def _every_module(options: Sequence[str], configured: Iterator[Path]) -> bool:
    """Whether pytest may collect test modules by other names than its defaults: a ``python_files`` setting in a
    configuration file it may read or on its command line (``-o python_files=...``). Then every ``.py`` file below
    is bound: which of them the setting selects is pytest's reading, and binding more is never a gap."""
    return any("python_files" in word for word in options) or any(b"python_files" in _read(c) for c in configured)


#: How many folders :func:`_collected_below` looks in at most before it stops with ``TooManyHostFiles``.
MAX_COLLECTED_FOLDERS = 20_000
#: The files pytest imports while it collects, by its defaults: test modules (``python_files``), the packages
#: holding them and ``conftest.py``. A bound configuration naming other ``python_files`` is a limit.
PYTEST_COLLECTED = ("conftest.py", "__init__.py", "test_*.py", "*_test.py")


def _collected_below(
    spec: CheckSpec,
    words: Sequence[str],
    cwd: Path,
    root: Path,
    stop: Path,
    options: Sequence[str] = (),
    configured: Sequence[Path] = (),
    *,
    patterns: Sequence[str] = PYTEST_COLLECTED,
    configs: bool = True,
) -> Iterator[Path]:
    """Each file pytest may import while it collects (:data:`PYTEST_COLLECTED`), and each configuration file it may
    read (:data:`PYTEST_IMPLICIT`: it looks from the folders its command names up, before its ``cwd``), below its
    ``cwd`` and below each folder of the repository its command names, that no input (a file, a folder or a glob)
    or the target binds already. What it imports runs in pytest's process: a ``conftest.py`` hook is not confined
    to its folder (``pytest_sessionfinish`` may set the session's exit status) and any module can end the process
    with 0 at exit, so one a pull request adds beside the bound tests decides the check as surely as a bound one (and
    a configuration file there, ``addopts = --collect-only``, runs none of them). Not looked in:
    :data:`SKIPPED_FOLDERS`, other hidden folders and environments (a folder with a ``pyvenv.cfg``), which pytest
    does not collect unless a bound configuration file says otherwise (a limit). When a configuration pytest may
    read (``configured``, or one found below) or its command line (``options``) sets ``python_files``, every
    ``.py`` file is taken (:func:`_every_module`)."""
    starts = [cwd]
    for word in _path_words(words):
        named = _folder_named(word, cwd, root)
        if named is not None and (named == stop or stop in named.parents):
            starts.append(named)
    covering: list[Path] = []
    globbed: set[Path] = set()
    for entry in spec.inputs:
        if isinstance(entry, str):
            literal, rest = _split_glob(entry)
            if rest is None:
                covering.append((root / literal).resolve())
            elif (root / literal).is_dir():
                globbed.update(found.resolve() for found in (root / literal).glob(rest))
    if spec.target is not None and spec.target.path is not None:
        covering.append((root / spec.target.path).resolve())
    seen: set[Path] = set()
    others: list[Path] = []  # .py files outside pytest's default patterns, bound when python_files is set
    below: list[Path] = []  # configuration files found below
    for start in dict.fromkeys(starts):
        for walked, subfolders, files in os.walk(start):
            here = Path(walked)
            if here in seen:
                subfolders[:] = []
                continue
            seen.add(here)
            if len(seen) > MAX_COLLECTED_FOLDERS:
                raise TooManyHostFiles(
                    f"more than {MAX_COLLECTED_FOLDERS:,} folders below {start} to look for what pytest collects"
                )
            subfolders[:] = sorted(
                name
                for name in subfolders
                if name not in SKIPPED_FOLDERS
                and not name.startswith(".")
                and not (here / name / "pyvenv.cfg").is_file()
                and not (here / name).is_symlink()
            )
            for name in sorted(files):
                found = here / name
                section = PYTEST_IMPLICIT.get(name, b"")
                configures = (
                    configs and name != "conftest.py" and (section is None or (section and section in _read(found)))
                )
                default = configures or any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
                if not default and not name.endswith(".py"):
                    continue
                if (here == cwd and name == "conftest.py") or found in globbed or _covered(found, covering):
                    continue  # cwd's conftest.py: bound with the folders above
                if not default:
                    others.append(found)
                    continue
                if configures:
                    below.append(found)
                yield found
    if others and _every_module(options, iter([*configured, *below])):
        yield from others


def _conftest_files(conftest: Path, cwd: Path, path: Sequence[str]) -> tuple[Path, ...]:
    """What importing a ``conftest.py`` runs, as pytest (``prepend`` import mode) imports it: in a folder holding
    ``__init__.py``, as a module of that package (each ``__init__.py`` above it runs, relative imports resolve), with
    the first folder above the package put first on ``sys.path``; otherwise with its own folder first."""
    base, parts = conftest.parent, ["conftest"]
    while (base / "__init__.py").is_file() and base.parent != base:
        parts.insert(0, base.name)
        base = base.parent
    first = (str(base), str(cwd), *path)
    own = imported_host_files(conftest, first) if len(parts) == 1 else module_host_files(".".join(parts), first)
    plugins = [found for name in _declared_plugins(conftest) for found in module_host_files(name, first)]
    return (*own, *plugins)


def _declared_plugins(conftest: Path) -> list[str]:
    """The modules a ``conftest.py`` names in ``pytest_plugins`` (a string, or a list or tuple of strings): pytest
    imports them, though no ``import`` statement names them."""
    try:
        tree = ast.parse(_read(conftest))
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign | ast.AugAssign)
            else []
        )
        if not any(isinstance(target, ast.Name) and target.id == "pytest_plugins" for target in targets):
            continue
        value = getattr(node, "value", None)
        items = value.elts if isinstance(value, ast.List | ast.Tuple | ast.Set) else [value]
        names += [item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return names


def _scripts(words: Iterator[str], cwd: Path, root: Path) -> Iterator[Path]:
    """The Python source files the command names: a ``.py`` word, or a file whose ``#!`` line names Python, where
    :func:`_relative_target` finds the project's. An absolute path outside the repository (``/usr/bin/pytest``) and
    a file in an environment (``../.venv/bin/pytest``, whose ``#!`` line holds the machine's interpreter path) are
    the machine's, as programs on ``PATH`` are."""
    for word in words:
        if not word.endswith(".py") and "/" not in word:
            continue  # a program looked up on PATH, not a file from cwd
        candidate = _relative_target(word, cwd, root, allow_absolute=True)
        if candidate is not None and candidate.is_file() and (word.endswith(".py") or _python_shebang(candidate)):
            yield candidate


#: Suffixes of programs other than Python's: what such a script runs in turn (``./tools/helper.sh``, a
#: ``require``) is not read, so a check naming one binds its bytes but not what it calls.
_SCRIPT_SUFFIXES = frozenset(
    {".sh", ".bash", ".zsh", ".ksh", ".fish", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua", ".mk"}
)


def _other_scripts(words: Sequence[str], cwd: Path, root: Path) -> Iterator[Path]:
    """The project's programs other than Python scripts that the command names (a ``#!`` line not naming Python,
    a script suffix, a ``Makefile``): each is bound by its bytes, but what it runs is discovery, unbound unless the
    check declares ``inputs:``. A data file the command names (``expected.json``) is none of them."""
    for word in _path_words(words):
        candidate = _relative_target(word, cwd, root, allow_absolute=True)
        if candidate is None or not candidate.is_file() or candidate.suffix == ".py":
            continue
        first = b""
        with contextlib.suppress(OSError), candidate.open("rb") as handle:
            first = handle.readline(256)
        scripted = candidate.suffix in _SCRIPT_SUFFIXES or candidate.name in {"Makefile", "makefile", "GNUmakefile"}
        shebang = first.startswith(b"#!")
        if (shebang or scripted) and not (shebang and b"python" in first):
            yield candidate


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _python_shebang(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _covering_paths(spec: CheckSpec, root: Path, cwd: Path, path: Sequence[str]) -> list[Path]:
    """The folders and files the inputs and the target bind (a glob by its literal folder; a module by its files)."""
    paths: list[Path] = []
    literals = [_split_glob(entry)[0] for entry in spec.inputs if isinstance(entry, str)]
    if spec.target is not None and spec.target.path is not None:
        literals.append(spec.target.path)
    for literal in literals:
        try:
            paths.append(resolve_within(root, literal, "input"))
        except CheckConfigError:
            continue
    for entry in spec.inputs:
        if isinstance(entry, ModuleInput):
            found = find_module(entry.module, cwd, path)
            if found is not None:
                paths.extend(location.resolve() for location in _module_files(found))
    return paths


def _covered(path: Path, covering: Sequence[Path]) -> bool:
    return any(bound == path or bound in path.parents for bound in covering)


def _path_words(words: Sequence[str]) -> Iterator[str]:
    """Words that could name a path: plain words, and the value of ``--option=value``."""
    for word in words:
        if word.startswith("-"):
            if "=" in word:
                yield word.split("=", 1)[1]
            continue
        yield word


def _folder_named(word: str, cwd: Path, root: Path) -> Path | None:
    """The folder a word names: inside the config folder, or outside it by a relative path (``../tests``: the
    project's, and no input can bind it); an absolute path or an environment folder is the machine's."""
    candidate = _relative_target(word, cwd, root, allow_absolute=True)
    if candidate is None or not candidate.is_dir():
        return None
    return candidate


def _relative_target(word: str, cwd: Path, root: Path, *, allow_absolute: bool = False) -> Path | None:
    """Where a word resolves from ``cwd``, when that can be the project's: inside the config folder (by any path
    when ``allow_absolute``), or outside it by a relative path, or by an absolute one inside the repository holding
    the config folder (a CI checkout's path is known in advance); not in an environment folder, and host code."""
    if not word or "{" in word or "\x00" in word:
        return None
    try:
        candidate = (cwd / word).resolve()
    except (OSError, RuntimeError):
        return None
    if candidate == root or root in candidate.parents:
        return candidate if allow_absolute or not os.path.isabs(word) else None
    if os.path.isabs(word):
        repository = _repository_root(cwd)
        if repository is None or not candidate.is_relative_to(repository):
            return None
    if any(part in SKIPPED_FOLDERS for part in candidate.parts):
        return None
    return candidate if is_host_file(candidate) else None


def _repository_root(cwd: Path) -> Path | None:
    """The first folder at or above ``cwd`` holding ``.git``: where the project's files end."""
    return next((folder for folder in (cwd, *cwd.parents) if (folder / ".git").exists()), None)


def _shown(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()


def _python_modules(words: Sequence[str]) -> Iterator[tuple[int, str]]:
    """(position, name) of each module a Python interpreter among the words is told to run with ``-m``."""
    for position, option, value in _python_runs(words):
        if option == "-m":
            yield position, value


def _python_runs(words: Sequence[str]) -> Iterator[tuple[int, str, str]]:
    """(position, ``-m`` or ``-c``, the module or the code) of each thing a Python interpreter among the words is
    told to run by name or inline."""
    for at, word in enumerate(words):
        if not _PYTHON.match(os.path.basename(word)):
            continue
        rest = enumerate(words[at + 1 :], start=at + 1)
        for position, option in rest:
            if option in {"-m", "-c"}:
                value = next(rest, None)
                if value is not None and value[1]:
                    yield value[0], option, value[1]
                break
            if option.startswith(("-m", "-c")) and not option.startswith("--"):
                yield position, option[:2], option[2:]
                break
            if option in _PYTHON_OPTIONS_WITH_ARGUMENT:
                next(rest, None)
                continue
            if not option.startswith("-"):
                break  # a script (hashed as a named file, its imports bound by check_host_files)


def _module_covered(module: str, cwd: Path, path: Sequence[str], module_inputs: Sequence[str]) -> bool:
    """A module of the project (host code) is bound by :func:`check_host_files`, a module input binds what it
    names; any other (``-m pytest``, a tool) reads what it finds, which declared inputs say
    (:func:`_named_unbound`)."""
    if any(module == named or module.startswith(named + ".") for named in module_inputs):
        return True
    found = find_module(module, cwd, path)
    if found is None:
        return False
    locations = _module_files(found)
    if found.origin in (None, "namespace"):
        # A namespace package has no file of its own: `-m` runs its `__main__.py`, bound when it has one; without
        # one there is nothing of the project's to bind (and nothing runs). Said unbound, as a reader re-derives it
        # from the host code the run hashed (:func:`declared_unbound`).
        locations = [main for location in locations if (main := location / "__main__.py").is_file()]
    return any(is_host_file(location) for location in locations)


def _runner(word: str) -> str | None:
    name = os.path.basename(word)
    name = name[:-4] if name.endswith(".exe") else name
    return name if name in RUNNERS else None


def host_file_hashes(paths: tuple[Path, ...], root: Path) -> dict[str, str]:
    """SHA-256 of each host file, labelled by its path from the config folder (``../src/app/util.py`` outside it):
    the same label on every checkout with the project's layout, so an approval made on one machine holds on CI."""
    from evalglass.readers.userfiles import read_regular

    hashes: dict[str, str] = {}
    for path in paths:
        try:
            data = read_regular(path, what="host module")
        except SetupError:
            continue  # gone since it was found: importing it fails the run with its own error
        label = installed_label(path) or Path(os.path.relpath(path, root)).as_posix()
        hashes[label] = fingerprint_of_bytes(data)
    return dict(sorted(hashes.items()))


def argv_file_hashes(check: CheckSpec, base_dir: Path) -> dict[str, str]:
    """SHA-256 of every file inside the config folder that the check's command names (a checker script, its data).

    Each argv element (each word of a shell command) is tried as a path from the check's working folder; what
    resolves to a regular file inside the config folder is hashed, so replacing the checker makes an approval of
    the gate stale. Programs found on PATH (python, pytest) and files outside the folder are not: they are the
    machine's, not the project's, and a check may not reach outside the config folder anyway.
    """
    root = base_dir.resolve()
    cwd = (root / (check.cwd or ".")).resolve()
    words = split_words(check.command) if isinstance(check.command, str) else list(check.command)
    words += env_words(check)
    files: dict[str, str] = {}
    for word in words:
        if not word or "{" in word or "\x00" in word:
            continue
        candidate = (cwd / word).resolve()
        if not candidate.is_relative_to(root) or candidate == root or not candidate.is_file():
            continue
        try:
            data = candidate.read_bytes()
        except OSError:
            continue
        files[candidate.relative_to(root).as_posix()] = fingerprint_of_bytes(data)
    return files


def program_hashes(argv: Sequence[str], cwd: str | None, env: dict[str, str], base_dir: Path) -> dict[str, str] | None:
    """The code a command runs, as a check's gate binds it: the files inside the config folder its argv names
    (:func:`argv_file_hashes`) and the host code it runs by name wherever it lies (:func:`check_host_files`: a
    script's imports, a ``-m`` module, files outside the folder a relative word names), and a Python program found
    on ``PATH`` with the host modules it imports (:func:`_path_program_files`), labelled by path. A
    ``command`` lane's call cache keys its answers by these (``lanes.command_lane``), so a changed program, or a
    module it imports, is asked again, never answered by the old program's outputs. None when the scan reaches more
    than ``MAX_HOST_FILES`` of the project's files (the caller then keys calls so that nothing answers them).
    Limits: a file the program opens at run time (data, a dynamically imported module), a compiled program's own
    code, and modules an install finds through an import hook (some editable installs) are not in it."""
    command = CheckSpec.model_construct(command=tuple(argv), cwd=cwd, env=dict(env))
    try:
        host = [*check_host_files(command, base_dir), *_path_program_files(argv[0], env)]
    except TooManyHostFiles:
        return None
    found = tuple(dict.fromkeys(path for path in host if is_host_file(path)))
    return dict(sorted({**argv_file_hashes(command, base_dir), **host_file_hashes(found, base_dir.resolve())}.items()))


def _path_program_files(program: str, env: dict[str, str]) -> list[Path]:
    """A program found on ``PATH`` that is a Python script (a console script an install of the project made,
    ``my-app``): itself and the host modules it imports (the project's code it runs), found as it finds them."""
    if "/" in program:
        return []  # named by path: a script the check scan finds already
    found = shutil.which(program, path=env.get("PATH", os.environ.get("PATH")))
    if found is None or not _python_shebang(Path(found)):
        return []
    script = Path(found).resolve()
    return [script, *imported_host_files(script, (str(script.parent),))]


def code_state(check: CheckSpec, base_dir: Path, leave_out: Collection[str] = ()) -> CodeBinding:
    """The code a check runs, hashed now, the way the config hashes it for its gates' fingerprints
    (``engine.spec.config.definition_file_hashes``, which calls this). Raises ``TooManyHostFiles`` and
    :class:`InputProblem` as the parts it hashes do."""
    root = base_dir.resolve()
    inputs = input_hashes(check, base_dir, leave_out=[base_dir / name for name in leave_out]) if check.inputs else {}
    return CodeBinding(
        files=argv_file_hashes(check, base_dir),
        code=host_file_hashes(check_host_files(check, base_dir), root),
        inputs=inputs,
        leave_out=tuple(leave_out),
    )


def code_change(check: CheckSpec, base_dir: Path) -> str | None:
    """Why the check may not run (or its result may not stand): which file of the code its run bound at load
    (:attr:`CheckSpec.binding`) is not those bytes now; None when every one is, or when nothing was bound.

    The file set is found again too, so code the command would now run that was not there at load (a new import, a
    ``sitecustomize.py`` put on its path) counts as a change. Limit: this compares states at two instants (before
    the command starts, after it ends); code rewritten and restored in between, while the command ran, is not seen.
    """
    bound = check.binding
    if bound is None:
        return None
    try:
        now = code_state(check, base_dir, bound.leave_out)
    except (InputProblem, ValueError) as exc:  # TooManyHostFiles is a ValueError
        return f"the code the check runs can no longer be hashed as it was at load: {exc}"
    for part, what in (("files", "file"), ("code", "host file"), ("inputs", "input")):
        before, after = getattr(bound, part), getattr(now, part)
        for label in sorted(before.keys() | after.keys()):
            if before.get(label) != after.get(label):
                change = "is gone" if label not in after else "appeared" if label not in before else "was rewritten"
                return (
                    f"{what} {label!r} {change} after the run hashed it at load: the check's approval binds the "
                    "bytes hashed then, so its result cannot stand"
                )
    return None
