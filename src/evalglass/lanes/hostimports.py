"""The host code a piece of host Python runs: the file a ``"package.module:name"`` reference resolves to, and the
project's own modules a host file imports, transitively, found without importing anything.

A gate on a ``python`` metric is approved for one fingerprint; what the fingerprint binds is what a pull request
cannot change without making the approval stale. The metric's own file is bound by its bytes
(``engine.spec.config``); what it runs besides is here:

* a module reference is resolved the way the run's import resolves it (``sys.meta_path``'s finders over this
  interpreter's ``sys.path``, editable installs included; each further part inside the package found so far), and
  the file it resolves to is bound with the ``__init__.py`` of each package above it (importing runs them too);
* every ``import`` and ``from ... import`` statement of a bound source file (at any depth: inside functions,
  ``try`` blocks and ``if`` branches alike, so a conditional import is bound whether or not it runs) is resolved the
  same way, relative imports against the importing module's package, and what resolves to host code is bound and
  scanned in turn.

Host code is every file that is not the machine's: the standard library, ``site-packages``/``dist-packages``
folders (installed third-party code, which a pull request changes only through a lock file the host reviews) and
EvalGlass's own package (whose behaviour is versioned, ``metrics.versions``). A project installed in editable mode
is host code wherever it lies, and so is one installed from the checkout (``pip install .``, a wheel built from
it): its files in ``site-packages`` are labelled ``<installed NAME>/path`` (:func:`installed_label`). Nothing is
imported: importing host code while fingerprinting would run it (and ``importlib.util.find_spec`` of a dotted name
imports its parents).

Who uses it: a python metric's gate (``imports``, ``engine.spec.config``), a python lane's or agent tool's cache key
(:func:`code_digest`), and a check's gate (``code``: ``lanes.checkinputs.check_host_files``), which passes the
folders the child process looks in first: a script's folder or the check's ``cwd``, then the ``PYTHONPATH`` the
check declares, so an import resolved through a declared path is bound like any other, inside the config folder or
outside it.

Closed, by class (each a way host code runs that a pull request could change with the approval left fresh): the
imports of a python metric's file or module, wherever they lie; of a checker script a check names, and that script
itself outside the config folder; of a module a check runs with ``-m`` (its ``__main__`` too) and of ``-c`` code; a
``sitecustomize``/``usercustomize`` and a ``PYTHONBREAKPOINT`` module a Python check's child loads through its path;
pytest's ``conftest.py`` (with its imports and its packages' ``__init__``) and configuration files from a pytest
check's ``cwd`` up to the repository's root, and its ``-p`` plugins. Variables that change what the child loads in
ways a scan cannot follow (``PYTHONHOME``, ``PYTHONPLATLIBDIR``, ``PYTHONSTARTUP``, ``PYTHONUSERBASE``) are refused
in a check's ``env:`` (``lanes.checkspec.UNBINDABLE_ENV``) and named unbound when its command assigns them.

Limits, said in docs/config.md and docs/checks.md: a dynamic import (``importlib.import_module(name)``,
``__import__``, ``exec``), a module a package's ``__init__`` adds to its ``__path__`` at import time, and data files
host code reads at run time are not found (a gated python metric's worker refuses to load them instead:
``lanes.hostguard``); a compiled extension is bound by its bytes, not by what it was built from; a name that
does not resolve where the scan looks is not bound: a path a check's command builds from variables
(``PYTHONPATH=$HOME/lib``) or sets in a script it runs, a Ray executor's ``runtime_env`` path, a ``python`` on
``PATH`` that is another interpreter than this one; ``.pth`` files in the machine's site folders are the machine's;
what pytest loads through installed entry points or a ``pytest_plugins`` built at run time, what it collects in a
hidden folder or an environment below the check's ``cwd`` (only when a bound configuration says so) and, for a
check without ``inputs:``, anything it discovers (unbound as a whole);
and what any other runner loads on its own.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import site
import subprocess
import sys
import sysconfig
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path

from evalglass.lanes.hostload import is_file_reference

__all__ = [
    "MAX_HOST_FILES",
    "TooManyHostFiles",
    "code_digest",
    "find_submodule",
    "find_top_level",
    "imported_host_files",
    "installed_code_names",
    "installed_folders",
    "installed_label",
    "installed_metadata_names",
    "installed_path",
    "installed_sites",
    "is_host_file",
    "module_host_files",
    "reference_host_files",
    "source_host_files",
]

#: How many files one reference may bind: far above a metric's helpers, a bound on a scan that wandered into a
#: whole application. Beyond it the scan stops with :class:`TooManyHostFiles`: binding part of what runs would be
#: a gap no one sees.
MAX_HOST_FILES = 5_000


#: Seconds ``git ls-files`` may take to list a work tree's tracked files.
GIT_TIMEOUT_S = 30.0


class TooManyHostFiles(ValueError):
    """Host code imports more of the project's files than :data:`MAX_HOST_FILES`."""


_EVALGLASS = Path(__file__).resolve().parents[1]


@cache
def _machine_roots() -> tuple[Path, ...]:
    """The folders whose files are the machine's, not the project's."""
    found: list[str] = []
    paths = sysconfig.get_paths()
    found += [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    found += getattr(site, "getsitepackages", list)()  # absent from old virtualenvs' site module
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if isinstance(user, str):
        found.append(user)
    roots = {Path(folder).resolve() for folder in found if folder}
    roots.add(_EVALGLASS)
    return tuple(sorted(roots))


@dataclass(frozen=True)
class _LocalInstalls:
    """:func:`_local_installs`' answer: each file (resolved) with its label, each label with its file, and the names
    of the files outside the distributions' metadata folders as this interpreter's path names them and resolved."""

    labels: dict[Path, str]
    paths: dict[str, Path]
    code_names: frozenset[str]
    metadata_names: frozenset[str]
    folders: frozenset[str]
    sites: frozenset[str]


@cache
def _local_installs() -> _LocalInstalls:
    """The files of distributions installed from a local folder or file (PEP 610: a ``direct_url.json`` whose URL is
    ``file:``, as ``pip install .`` or a wheel built from the checkout writes), each with a label that names the
    distribution and the file within it (the same on every machine, wherever its ``site-packages`` lies). Such files
    are the project's own code copied into ``site-packages``: a pull request changes them by changing the checkout,
    not through a lock file anyone reviews. An editable install is left out: its code stays in the project, where it
    is found as host code already (its ``site-packages`` part is a finder naming this machine's paths). Read once a
    process, and only for a file of the machine's (:func:`is_host_file`), or by a gated metric's worker before its
    guard is in force (``lanes.hostguard``: the installed copy is watched there too)."""
    import importlib.metadata

    found: dict[Path, str] = {}
    names: set[str] = set()
    metadata: set[str] = set()
    folders: set[str] = set()
    sites: set[str] = set()
    for dist in importlib.metadata.distributions():
        try:
            text = dist.read_text("direct_url.json")
            direct = json.loads(text) if text else None
        except (OSError, ValueError):
            continue
        if not isinstance(direct, dict) or not str(direct.get("url", "")).startswith("file:"):
            continue
        info = direct.get("dir_info")
        if isinstance(info, dict) and info.get("editable"):
            continue
        name = dist.metadata["Name"] or "unknown"
        for file in dist.files or ():
            located = str(dist.locate_file(file))
            resolved = Path(located).resolve()
            found[resolved] = f"<installed {name}>/{file.as_posix()}"
            forms = {os.path.abspath(located), str(resolved)}
            if not file.parts[0].endswith((".dist-info", ".egg-info")):
                names.update(forms)
                # the folders of the copy (``site-packages/NAME``...), and ``site-packages`` itself apart
                for depth in range(1, len(file.parts)):
                    folders.update(str(Path(form).parents[depth - 1]) for form in forms)
                sites.update(str(Path(form).parents[len(file.parts) - 1]) for form in forms)
            elif file.name not in _INSTALLER_METADATA:
                metadata.update(forms)
    return _LocalInstalls(
        found,
        {label: path for path, label in found.items()},
        frozenset(names),
        frozenset(metadata),
        frozenset(folders),
        frozenset(sites),
    )


#: The files of an installed distribution's metadata folder that the project's text does not decide: the installer
#: writes them (PEP 610's ``direct_url.json``, ``INSTALLER``, ``REQUESTED``), and ``entry_points.txt``, which
#: ``importlib.metadata.entry_points()`` (pydantic's plugin lookup, on every model class it builds) reads of every
#: distribution, so refusing it would block any metric using pydantic (what an entry point *names* is loaded under
#: the guard like any other import: its names and values are a limit, docs/config.md).
_INSTALLER_METADATA = frozenset({"direct_url.json", "INSTALLER", "REQUESTED", "entry_points.txt"})


def installed_label(path: Path) -> str | None:
    """The label of a file of the project installed from the checkout (:func:`_local_installs`), else None."""
    return _local_installs().labels.get(path.resolve())


def installed_path(label: str) -> Path | None:
    """The file (resolved) an :func:`installed_label` names in this interpreter's environment, else None."""
    return _local_installs().paths.get(label)


def installed_metadata_names() -> frozenset[str]:
    """The metadata files of the project installed from the checkout whose text the project decides (its
    ``METADATA``: version, requirements; ``RECORD``; ``top_level.txt``...), named as :func:`installed_code_names`
    names files; what the installer writes, and ``entry_points.txt``, are left out (:data:`_INSTALLER_METADATA`)."""
    return _local_installs().metadata_names


def installed_folders() -> frozenset[str]:
    """The folders of the project installed from the checkout that hold its code (``site-packages/NAME`` and below,
    not ``site-packages``), named as :func:`installed_code_names` names files."""
    return _local_installs().folders


def installed_sites() -> frozenset[str]:
    """The folders the project installed from the checkout was installed into (its ``site-packages``), named as
    :func:`installed_code_names` names files: they hold its top-level modules beside the machine's."""
    return _local_installs().sites


def installed_code_names() -> frozenset[str]:
    """The files of the project installed from the checkout that are its code and data, not its distribution's
    metadata (``.dist-info``: ``importlib.metadata`` reads every distribution's, for any package's lookup), each
    named as this interpreter's path names it and resolved: a string test needs no system call."""
    return _local_installs().code_names


@lru_cache(maxsize=65_536)
def is_host_file(path: Path) -> bool:
    """True for a file a pull request to the project can change: not the standard library's, not installed in a
    ``site-packages``/``dist-packages`` folder (unless installed from the checkout itself, :func:`_local_installs`,
    or committed to it, :func:`_committed`), not EvalGlass's own. (Where a path lies does not change while a
    process runs: remembered.)"""
    resolved = path.resolve()
    if any(resolved.is_relative_to(root) for root in _machine_roots()):
        return resolved in _local_installs().labels
    if any(part in {"site-packages", "dist-packages"} for part in resolved.parts):
        # another environment's, unless installed from the checkout or committed to it
        return resolved in _local_installs().labels or _committed(resolved)
    return True


def _committed(resolved: Path) -> bool:
    """Whether git tracks ``resolved`` in the work tree holding it: a file a pull request commits is the project's
    wherever it lies, so a helper moved into a folder named ``site-packages`` (imported through a symlink, or a
    check's declared ``PYTHONPATH``) is bound like any other. (CI's environments are made by installing, never
    committed.)"""
    root = _work_tree(resolved.parent)
    return root is not None and resolved in _tracked_files(root)


def committed_below(folder: Path) -> frozenset[Path]:
    """The files git tracks below ``folder`` (resolved) in the work tree holding it, and the folders on their way
    below it: what a pull request puts there (empty when ``git`` cannot say)."""
    root = _work_tree(folder)
    if root is None:
        return frozenset()
    files = [path for path in _tracked_files(root) if path.is_relative_to(folder) and path != folder]
    return frozenset(files) | frozenset(
        parent for path in files for parent in path.parents if parent.is_relative_to(folder) and parent != folder
    )


@lru_cache(maxsize=4_096)
def _work_tree(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (a work tree's root), or None."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


@cache
def _tracked_files(root: Path) -> frozenset[Path]:
    """Every file git tracks in the work tree at ``root`` (empty when ``git`` cannot say: a limit, stated in
    docs/config.md)."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    if done.returncode != 0:
        return frozenset()
    return frozenset(root / os.fsdecode(name) for name in done.stdout.split(b"\0") if name)


def reference_host_files(reference: str, base_dir: Path, *, search_base: bool = False) -> tuple[Path, ...]:
    """The host files a ``"file.py:name"`` or ``"package.module:name"`` reference runs besides a named file itself:
    for a module, the file it resolves to and its packages' ``__init__`` files; for both, the host modules they
    import, transitively. ``search_base`` looks in ``base_dir`` first, as a run that puts it on ``sys.path`` does
    (python lanes)."""
    source = reference.rpartition(":")[0]
    first = (str(base_dir.resolve()),) if search_base else ()
    if is_file_reference(source):
        own = (base_dir / source).resolve()
        return tuple(path for path in _closure([(own, "")], first) if path != own)
    return module_host_files(source, first)


def code_digest(reference: str, base_dir: Path, source: Path | None) -> str | None:
    """The hex SHA-256 a call cache keys host code by (a python lane's function, an agent's tool): of ``source``,
    the file the reference was loaded from, alone when it imports no host code (the key it always had), else of it
    with every host file it imports, so a changed helper is a cache miss, never an answer of the old code replayed.
    The reference was loaded with ``base_dir`` first on ``sys.path``, and is scanned so. A function importing more
    than :data:`MAX_HOST_FILES` of the project's files (a lane is the application, and may be large) gets a key no
    cache entry has: it is called again, never answered by code it may not be."""
    if source is None:
        return None
    own = hashlib.sha256(source.read_bytes()).hexdigest()
    root = base_dir.resolve()
    imported: dict[str, str] = {}
    try:
        found = reference_host_files(reference, base_dir, search_base=True)
    except TooManyHostFiles:
        return hashlib.sha256(own.encode() + os.urandom(16)).hexdigest()
    for path in found:
        if path == source.resolve():
            continue
        try:
            imported[os.path.relpath(path, root)] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            continue  # gone since it was found: not part of what ran
    if not imported:
        return own
    text = json.dumps({"source": own, "imports": imported}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def module_host_files(name: str, first: Sequence[str] = ()) -> tuple[Path, ...]:
    """The host files importing module ``name`` runs: its own and its packages' (when they are host code), and
    what they import, transitively."""
    return _closure(list(_chain(name, first)), first)


def imported_host_files(path: Path, first: Sequence[str] = ()) -> tuple[Path, ...]:
    """The host modules a standalone source file (a script run by path, a metric loaded from its file) imports,
    transitively; ``first``: folders looked in before ``sys.path`` (a script's own folder). A script without the
    ``.py`` suffix (run through its ``#!`` line) is read all the same: its suffix says nothing about its text."""
    own = path.resolve()
    if own.suffix == ".py":
        start = [(own, "")]
    else:
        start = [found for name in dict.fromkeys(_imports(own, "")) for found in _chain(name, first)]
    return tuple(found for found in _closure(start, first) if found != own)


def source_host_files(source: str, first: Sequence[str] = ()) -> tuple[Path, ...]:
    """The host modules inline code (``python -c CODE``) imports, transitively; ``first``: folders looked in before
    ``sys.path`` (the working folder, as ``-c`` puts it first)."""
    names = dict.fromkeys(_source_imports(source.encode(), "<string>", ""))
    return _closure([found for name in names for found in _chain(name, first)], first)


def _closure(start: list[tuple[Path, str]], first: Sequence[str]) -> tuple[Path, ...]:
    """Every host file reachable from ``start`` (file, the package its relative imports resolve against)."""
    seen: dict[Path, None] = {}
    chains: dict[str, list[tuple[Path, str]]] = {}  # a name many files import is looked up once
    pending = list(start)
    while pending:
        path, package = pending.pop()
        if path in seen:
            continue
        if len(seen) >= MAX_HOST_FILES:
            raise TooManyHostFiles(
                f"it imports more than {MAX_HOST_FILES:,} of the project's files (through {path}), more than a gate "
                "can bind; import less of the project from host code a gate relies on"
            )
        seen[path] = None
        if path.suffix != ".py":
            continue  # a compiled extension: bound by its bytes, nothing to read imports from
        for name in _imports(path, package):
            if name not in chains:
                chains[name] = list(_chain(name, first))
            pending.extend(chains[name])
    return tuple(seen)


def _imports(path: Path, package: str) -> Iterator[str]:
    """The absolute names every import statement of ``path`` asks for; for ``from m import x``, ``m`` and ``m.x``
    (``x`` may be a submodule). A file that cannot be read or parsed imports nothing here (loading it fails with
    its own error)."""
    try:
        source = path.read_bytes()
    except OSError:
        return
    yield from _source_imports(source, str(path), package)


def _source_imports(source: bytes, filename: str, package: str) -> Iterator[str]:
    """:func:`_imports` of source text; nothing for text that does not parse."""
    if b"import" not in source:
        return
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError):
        return
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            if base is None:
                continue
            if base:
                yield base
            yield from (f"{base}.{alias.name}" if base else alias.name for alias in node.names if alias.name != "*")


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included (a function's, a class's, a ``try``'s, a ``match`` case's): an import
    is a statement, so expressions, the bulk of a module's tree, are never walked."""
    pending = list(reversed(body))
    while pending:
        node = pending.pop()
        yield node
        nested: list[ast.stmt] = []
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list):
                nested += [item for item in value if isinstance(item, ast.stmt)]
        for holder in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            nested += holder.body
        pending.extend(reversed(nested))


def _absolute(module: str, level: int, package: str) -> str | None:
    """A ``from`` import's module as an absolute name; None when it cannot resolve (a relative import in a file
    run as a standalone module, as the run itself would fail to)."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level > len(parts):
        return None
    anchor = parts[: len(parts) - level + 1]
    return ".".join([*anchor, module] if module else anchor)


def _chain(name: str, first: Sequence[str]) -> Iterator[tuple[Path, str]]:
    """The host files importing ``name`` executes, outermost package first, each with the package its own
    relative imports resolve against. Stops at the first part that is not found or not host code."""
    parts = name.split(".")
    found = find_top_level(parts[0], first)
    for depth in range(1, len(parts) + 1):
        if found is None:
            return
        origin = found.origin if found.has_location else None
        is_package = found.submodule_search_locations is not None
        if origin is not None:
            path = Path(origin)
            if not path.is_file() or not is_host_file(path):
                return
            yield path, ".".join(parts[:depth]) if is_package else ".".join(parts[: depth - 1])
        if depth == len(parts) or not is_package:
            return
        locations = list(found.submodule_search_locations or ())
        found = find_submodule(".".join(parts[: depth + 1]), locations)


def find_submodule(name: str, locations: Sequence[str]) -> ModuleSpec | None:
    """Where dotted ``name`` is found in its package's folders ``locations``, without importing anything. A namespace
    package inside a namespace package looks its parent up in ``sys.modules``, where it is not (nothing is
    imported): not found then, rather than a traceback."""
    try:
        return PathFinder.find_spec(name, list(locations))
    except KeyError:
        return None


def find_top_level(name: str, first: Sequence[str]) -> ModuleSpec | None:
    """Where ``import name`` finds a top-level module: ``first`` (folders put before ``sys.path``), then the
    interpreter's finders in their order (builtins, frozen modules, editable installs' finders, ``sys.path``)."""
    if first:
        found = PathFinder.find_spec(name, list(first))
        if found is not None:
            return found
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        try:
            found = find_spec(name, None)
        except Exception:  # a third-party finder's fault is no reason to fail a run: not found through it
            continue
        if isinstance(found, ModuleSpec):
            return found
    return None
