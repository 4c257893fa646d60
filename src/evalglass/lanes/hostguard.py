"""What a gated ``python`` metric's worker may load: the files its gate binds, and the machine's, nothing else.

Why. A gate on a python metric binds the metric's file and the project modules it imports *by statement*
(``lanes.hostimports``, read, not run). Code can load more than its statements say: ``importlib.import_module``,
``__import__``, ``exec(open(path).read())``, ``runpy``, a data file it reads, a ``.pyc`` in a ``__pycache__``
folder a checkout holds (Python runs it instead of the source beside it; an unchecked-hash one is never compared with
that source), a compiled extension or a library loaded with ``ctypes``, a program it starts. A pull request could
change any of them and leave the approval fresh, so each could let unbound code decide the gated metric's values.

Rule. The worker of a metric that a gate declares holds, from before the metric's module loads, an audit hook
(``sys.addaudithook``: it cannot be removed, by design of the standard library) that watches what the process
loads from the *project* (the repository holding the config folder: the first folder at or above it holding
``.git``, else the config folder; and the project installed from the checkout, ``pip install .``, wherever its
``site-packages`` lies: its distribution's files, ``hostimports.installed_code_names``): a file
opened for reading (``open``, ``io.open_code``, ``os.open``: every import of source, ``runpy``, ``exec`` of a file's
text, data files), an extension module or ``ctypes`` library, a hard link or rename of a project file to elsewhere,
or a symbolic link made to one.
A project file the gate does not bind is refused (``PermissionError``, which import machinery and readers such as
``linecache`` treat as an unreadable file) and remembered; a cached ``.pyc`` (``__pycache__``) is answered as absent,
so a bound module is always compiled from its bound source. Starting a program
(``subprocess``, ``os.system``, ``os.exec*``, ``os.posix_spawn``) is refused outright: what a child process loads
cannot be watched. Files outside the project (the standard library, installed packages, EvalGlass, ``/etc``) are
the machine's.

What only *asks* about a project file is refused the same way where an audit event says so: a folder's listing
(``os.listdir``, ``os.scandir``: ``os.walk``, ``pathlib``, ``pkgutil``) may name only bound files and the folders on
their way; a glob (whose literal parts ``os.stat`` tests) may match only those; an ``os.open`` relative to a folder's
descriptor is checked against each folder the process holds open. So that honest code does not trip it, the worker's
import system searches the project's folders (and the ``site-packages`` an installed copy lies in) by name, never by
listing them, refusing an unbound module it finds (``find_spec`` that only asks included), and ``importlib.metadata``
finds no distribution in a project folder. These adjustments can be undone by host code; undone, the listing they
spared is refused: nothing rests on them. The installed copy's metadata that the project's text decides (its
version: ``hostimports.installed_metadata_names``) is refused: no gate can bind it.

Once anything was refused, every later call of the worker answers an ``error`` score with code
``host_unbound_code`` naming the first file refused and how to bind it (an ``import`` statement in a bound file, or
the metric's ``data_files:``), even when host code caught the refusal: a gate on the metric then blocks
(``incomplete_measurement``), never decides on what the code did instead.

Limits (stated in docs/config.md): the worker is a process of the same user, not a sandbox. What the gate binds is
read at config load; a bound Python source compiles only from those bytes (:func:`_held_sources`), but a data
file rewritten between then and its reading is not seen here. A question that raises no audit
event is not seen: ``os.stat``, ``os.access``, ``os.readlink`` and what is built on them (``os.path.exists``),
system calls through ``ctypes``; wrapping them would not hold (a fresh copy of ``posix``, ``ctypes``'s libc). Code
the gate binds decides what the project's files (bound ones) and the examples make it do, ``exec`` of a text it is
given included. A module loaded before the hook (``sitecustomize`` through the evalglass process's own
``PYTHONPATH``, the machine's ``.pth`` files) is the environment's, outside any pull request; a module of the
project found already loaded when the worker starts is refused all the same (:func:`install`). A gated metric is
never shipped to a cluster (``executor: ray``: ``Config.guarded_metrics``): a cluster worker process runs many tasks
and this hook cannot be taken off it, so the metric is scored on the driver, in this guarded worker.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import sysconfig
import threading
from collections.abc import Collection, Iterator
from importlib.machinery import FileFinder, ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

from evalglass.lanes.hostimports import (
    installed_code_names,
    installed_folders,
    installed_label,
    installed_metadata_names,
    installed_sites,
    is_host_file,
)

#: The code of a call answered after the worker refused unbound project code.
UNBOUND_CODE = "host_unbound_code"

#: What a gated metric's worker is guarded by (``install``): the project's folder, and the files its gate binds with
#: their fingerprints as the config loaded them (``sha256:`` and the hex digest of the bytes).
BoundCode = tuple[str, tuple[tuple[str, str], ...]]

_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile", "pty.spawn"}
)
_PLAIN = frozenset({str, bytes, int, bool, type(None)})
_LISTING_EVENTS = frozenset({"os.listdir", "os.scandir"})
_GLOB_EVENTS = frozenset({"glob.glob/2", "pathlib.Path.glob", "pathlib.Path.rglob"})
#: Every event the hook acts on: any other is passed over with one set lookup.
_WATCHED = frozenset({"open", "import", "ctypes.dlopen", "os.link", "os.rename", "os.symlink"}) | (
    _PROCESS_EVENTS | _LISTING_EVENTS | _GLOB_EVENTS
)


def _machine_prefixes() -> tuple[str, ...]:
    """The folders of the standard library and installed packages, as paths name them and resolved."""
    folders = [sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    named = [folder for folder in folders if folder]
    return tuple({os.path.join(form, "") for folder in named for form in (folder, os.path.realpath(folder))})


_MACHINE = _machine_prefixes()


class Guard:
    """The worker's rule: ``root`` the project, ``bound`` the files the gate binds (resolved)."""

    def __init__(self, root: Path, bound: Collection[Path]) -> None:
        self.root = root
        self.bound = frozenset(bound)
        #: The folders on the way to a bound file: their names are the bound files', so listing one that holds
        #: nothing else tells host code nothing the gate did not bind.
        self.holds = frozenset(folder for path in self.bound for folder in path.parents)
        self._root = str(root)
        self._inside = os.path.join(self._root, "")
        #: The project installed from the checkout (``pip install .``: ``hostimports.installed_label``), read now,
        #: before the hook: a copy of the project wherever its ``site-packages`` lies, watched like the folder: its
        #: code, the metadata its text decides (``METADATA``: its version...), and its folders (listed).
        self._folders = installed_folders()
        self._installed = installed_code_names() | installed_metadata_names() | self._folders
        self.sites = installed_sites()
        self.refused: list[str] = []
        #: Per thread: a check in progress on this thread (a hook must not recurse: the checks list folders and
        #: run globs); another thread's does not exempt this one's events.
        self._local = threading.local()

    # The hook runs on every audited event of the process: one set lookup for the events it does not watch.
    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _WATCHED or getattr(self._local, "checking", False):
            return
        # A path-like object's own ``__fspath__`` is host code: called here, before the check begins, so what it
        # does is watched like the rest (the event carries the object, not the path the call converted it to).
        plain = tuple(
            os.fspath(arg) if type(arg) not in _PLAIN and hasattr(type(arg), "__fspath__") else arg for arg in args
        )
        with self.checking():
            self._watch(event, plain)

    @contextlib.contextmanager
    def checking(self) -> Iterator[None]:
        """A check in progress on this thread: what it does (resolve, list, glob, ``git ls-files``) raises events
        that are not watched again. Only the guard's own code runs inside."""
        self._local.checking = True
        try:
            yield
        finally:
            self._local.checking = False

    def _watch(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            if not _reads(mode, flags):
                return
            if mode is None and isinstance(path, (str, bytes)) and not os.path.isabs(path):
                self._check_relative(path)  # ``os.open``: relative to the working folder, or to a folder's descriptor
            else:
                self._check(path, "reads")
        elif event in _LISTING_EVENTS:
            self._check_listing(args[0])
        elif event in _GLOB_EVENTS:
            self._check_glob(event, args)
        elif event == "import":
            if args[1] is not None:  # an extension module's file
                self._check(args[1], "loads")
        elif event == "ctypes.dlopen":
            if args[0] is not None and "/" in os.fsdecode(args[0]):  # a bare name is the dynamic loader's lookup
                self._check(args[0], "loads")
        elif event in {"os.link", "os.rename"}:
            self._check(args[0], "links")
        elif event == "os.symlink":
            # A link made where paths are not resolved (a folder of the machine's: ``project_path``) would reach
            # the project's file unseen: what the link names is checked as it is made.
            self._check(_link_target(*args), "links")
        elif event in _PROCESS_EVENTS:
            self._refuse(
                "a program",
                f"it starts a program ({event}): what a process it starts loads cannot be bound; run it as a check "
                "(a `check` metric whose `inputs:` bind its code)",
            )

    def project_path(self, name: Any) -> Path | None:
        """``name`` resolved (from the working folder, links followed) when it is a file or folder of the project
        or of its installed copy (host code: ``hostimports.is_host_file``), else None."""
        if isinstance(name, int) or name is None:
            return None
        try:
            text = os.fsdecode(name)
            named = os.path.abspath(text)
            if named not in self._installed and named.startswith(_MACHINE):
                return None  # the standard library's or an installed package's (no system call to say so)
            full = os.path.realpath(text)
        except (OSError, TypeError, ValueError):
            return None
        if full in self._folders:
            return Path(full)
        if full != self._root and not full.startswith(self._inside) and full not in self._installed:
            return None  # the machine's, or elsewhere: one string test for nearly every event
        path = Path(full)
        return path if is_host_file(path) else None

    def _check(self, name: Any, how: str) -> None:
        path = self.project_path(name)
        # A folder of the project opened as a file is refused too: a later ``os.open(name, dir_fd=...)`` names its
        # file relative to it (:meth:`_check_relative` finds it by the descriptors open, this stops it first).
        if path is None or path in self.bound:
            return
        shown = self._shown(path)
        if path.suffix == ".pyc" and path.parent.name == "__pycache__":
            # A bound module is compiled from its bound source: the import system reads the source when its cached
            # bytecode cannot be read. Answered as absent, whether it is there or not (nothing unbound ran, and its
            # presence says nothing), so not remembered.
            raise FileNotFoundError(errno.ENOENT, f"{shown}: a gated python metric runs its modules from source")
        if ".dist-info/" in shown or ".egg-info/" in shown:
            how_to = (
                "the installed project's metadata (its version, requirements, file list) is not the gate's to bind; "
                "read what the metric needs from a bound file"
            )
        elif path.suffix == ".py":
            how_to = (
                "import it with an `import` statement in the metric's file or a module it imports (read, not run: "
                "any branch binds it)"
            )
        else:
            how_to = "list it under the metric's `data_files:`"
        self._refuse(shown, f"it {how} {shown}, which the gate does not bind; {how_to}, then re-approve")

    def _check_relative(self, name: str | bytes) -> None:
        """An ``os.open`` of a relative name: the audit event does not say whether it is relative to the working
        folder or to a folder's descriptor (``dir_fd=``), so it is checked against each that holds the name: a
        project file reached through a descriptor of a folder outside the project (its parent, ``/``) is refused,
        and a name found under none of them opens nothing."""
        text = os.fsdecode(name)
        try:
            working = [os.getcwd()]
        except OSError:  # the working folder was removed: a relative name cannot be found in it
            working = []
        for folder in (*working, *_open_folders()):
            candidate = os.path.join(folder, text)
            if os.path.lexists(candidate):
                self._check(candidate, "reads")

    def _check_listing(self, name: Any) -> None:
        """``os.listdir``/``os.scandir`` (``os.walk``, ``glob``, ``pathlib``'s ``iterdir``, ``pkgutil``...): a
        listing of a project folder says what it holds, so it may list only what the gate binds (bound files, and
        the folders on their way). A descriptor names its folder through ``/proc/self/fd``."""
        if name is None:
            name = "."
        elif isinstance(name, int):
            name = _descriptor_path(name)
        folder = self.project_path(name)
        if folder is None:
            return
        try:
            entries = os.listdir(folder)
        except OSError:
            return  # not a folder, or unreadable: the listing fails on its own
        unbound = sorted(entry for entry in entries if not self._known(folder / entry))
        if unbound:
            self._refuse_listing(folder, unbound)

    def _check_glob(self, event: str, args: tuple[Any, ...]) -> None:
        """A glob answers exactly its matches (its literal parts are tested with ``os.stat``, which raises no event,
        so the folders it lists are not all it asks about): the same glob is run here, and it may match only what
        the gate binds."""
        import glob

        base: Path | None
        if event == "glob.glob/2":
            pattern, recursive, root_dir, dir_fd = args
            found = glob.glob(pattern, root_dir=root_dir, dir_fd=dir_fd, recursive=recursive, include_hidden=True)
            start = os.fsdecode(root_dir) if root_dir is not None else _descriptor_path(dir_fd) or ""
            matches: Iterator[Any] = (os.path.join(start, os.fsdecode(match)) for match in found)
            base = None
        else:
            folder, pattern = args
            base = Path(folder)  # a string here (the hook's plain arguments): no method of host code's runs
            matches = iter(list(base.glob(pattern) if event == "pathlib.Path.glob" else base.rglob(pattern)))
        for match in matches:
            path = self.project_path(match)
            if path is not None and not self._known(path):
                self._refuse_listing(self.project_path(base) or path.parent, [path.name], glob=True)

    def finds_in(self, folder: str) -> bool:
        """Whether the import system's finder for ``folder`` must not list it: a folder of the project, or the
        ``site-packages`` its installed copy lies in (its top-level modules' names are the pull request's)."""
        if not os.path.isdir(folder):
            return False
        return self.project_path(folder) is not None or os.path.realpath(folder) in self.sites

    def may_hold(self, folder: str) -> bool:
        """Whether a namespace package's ``folder`` may be found: not the project's, or on the way to bound code."""
        path = self.project_path(folder)
        return path is None or path in self.holds

    def _known(self, path: Path) -> bool:
        return path in self.bound or path in self.holds

    def _refuse_listing(self, folder: Path, unbound: list[str], *, glob: bool = False) -> None:
        shown = self._shown(folder)
        listed = ", ".join(unbound[:3]) + (f" and {len(unbound) - 3} more" if len(unbound) > 3 else "")
        what = "globs" if glob else "lists the folder"
        self._refuse(
            shown,
            f"it {what} {shown}, which holds {listed} that the gate does not bind; list every file it may find under "
            "the metric's `data_files:` (or move what it must not find out of that folder), then re-approve",
        )

    def _shown(self, path: Path) -> str:
        return installed_label(path) or (os.path.relpath(path, self.root) if path != self.root else ".")

    def _refuse(self, what: str, message: str) -> None:
        if not self.refused:
            self.refused.append(message)
        raise PermissionError(f"{what}: refused to a gated python metric: {message}")

    def answer(self) -> list[Any] | None:
        """What every call answers once something was refused (an ``error`` answer: ``lanes/metricworker.py``);
        None while nothing was."""
        if not self.refused:
            return None
        return ["error", UNBOUND_CODE, f"the metric's code is not all bound by its gate: {self.refused[0]}", None]


def _reads(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str):
        return "r" in mode or "+" in mode
    return not isinstance(flags, int) or flags & (os.O_WRONLY | os.O_RDWR) != os.O_WRONLY


def _link_target(target: Any, link: Any, dir_fd: Any) -> str | None:
    """What ``os.symlink(target, link, dir_fd=...)`` makes ``link`` name: a relative ``target`` is relative to the
    link's folder (None when a descriptor's folder cannot be said)."""
    try:
        named, made = os.fsdecode(target), os.fsdecode(link)
    except TypeError:
        return None
    if not os.path.isabs(named) and not os.path.isabs(made) and dir_fd is not None:
        folder = _descriptor_path(dir_fd)
        if folder is None:
            return None
        made = os.path.join(folder, made)
    return os.path.join(os.path.dirname(os.path.abspath(made)), named)


def _descriptor_path(descriptor: Any) -> str | None:
    """The folder or file an open descriptor names (Linux's ``/proc``; None elsewhere, or when it cannot say)."""
    if not isinstance(descriptor, int):
        return None
    try:
        return os.readlink(f"/proc/self/fd/{descriptor}")
    except OSError:
        return None


def _open_folders() -> list[str]:
    """The folders this process holds open descriptors of (each a possible ``dir_fd=``), by ``/proc/self/fd``."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    found = (_descriptor_path(int(name)) for name in names if name.isdigit())
    return [path for path in found if path is not None and path.startswith("/") and os.path.isdir(path)]


class _Anything(frozenset[str]):
    """A ``FileFinder`` cache that holds every name: the finder then tests each file it may import by name
    (``os.stat``) and never lists the folder."""

    def __contains__(self, item: object) -> bool:
        return True


_ANYTHING = _Anything()


def _project_finders(guard: Guard) -> None:
    """The import system finds modules in the project's folders without listing them (a ``FileFinder`` lists each
    folder on ``sys.path`` and keeps the names: host code could read them from ``sys.path_importer_cache``), and
    finds nothing there the gate does not bind: a module file it does not bind is refused when found (a
    ``find_spec`` that only asks is refused as an import is), a folder that holds no bound file is no namespace
    package. Host code may take these finders off (``sys.path_hooks``): the import system's own finder then lists
    the folder, which the hook refuses. Nothing here is trusted to hold, only to keep honest code off the hook."""
    from importlib._bootstrap_external import _get_supported_file_loaders  # type: ignore[attr-defined]

    loaders = _get_supported_file_loaders()

    class ProjectFinder(FileFinder):
        def _fill_cache(self) -> None:
            self._path_cache = self._relaxed_path_cache = _ANYTHING

        def find_spec(self, fullname: str, target: ModuleType | None = None) -> ModuleSpec | None:
            spec = super().find_spec(fullname, target)
            if spec is None:
                return None
            with guard.checking():
                if spec.origin is not None and spec.has_location:
                    guard._check(spec.origin, "imports")
                    return spec
                unbound = [folder for folder in spec.submodule_search_locations or () if not guard.may_hold(folder)]
                return None if unbound else spec

    def hook(path: str) -> FileFinder:
        with guard.checking():
            if not guard.finds_in(path):
                raise ImportError("not a folder of the project")
        return ProjectFinder(path, *loaders)

    sys.path_hooks.insert(0, hook)
    for entry in [entry for entry in sys.path_importer_cache if guard.finds_in(entry or ".")]:
        del sys.path_importer_cache[entry]  # a finder made before, with its listing: made again, by the hook above


def _unlisted_metadata(guard: Guard) -> None:
    """``importlib.metadata`` finds no distribution in a project folder on ``sys.path`` (it lists every folder there
    for any lookup: pydantic's plugin search, on each model class it builds): the project's metadata is the pull
    request's text, not the gate's. So does the ``importlib_metadata`` backport, once imported. Taken off by host
    code, the listing is refused."""
    import importlib.metadata as metadata  # loaded already: the guard read the installed distributions with it

    _unlisted(guard, metadata)
    metadata.FastPath.__new__.cache_clear()  # type: ignore[attr-defined]  # what the guard's reading listed
    backport = sys.modules.get("importlib_metadata")
    if backport is not None:
        _unlisted(guard, backport)
        backport.FastPath.__new__.cache_clear()
    else:
        sys.meta_path.insert(0, _Backport(guard))


def _unlisted(guard: Guard, module: ModuleType) -> None:
    """``module.FastPath`` (``importlib.metadata``'s, or the backport's) lists no project folder."""
    original = module.FastPath.children

    def children(self: Any) -> Any:
        with guard.checking():
            project = guard.project_path(self.root or ".") is not None
        return [] if project else original(self)

    module.FastPath.children = children


class _Backport:
    """Patches the ``importlib_metadata`` backport as it is imported (:func:`_unlisted`); finds nothing itself."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname != "importlib_metadata":
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        exec_module = getattr(loader, "exec_module", None)
        if loader is None or exec_module is None:
            return spec
        guard = self.guard

        def run(module: ModuleType) -> None:
            exec_module(module)
            _unlisted(guard, module)

        loader.exec_module = run  # type: ignore[method-assign]
        return spec


def install(root: str, bound: Collection[tuple[str, str]]) -> Guard:
    """Put the rule in force in this worker, before any host code loads (it cannot be taken back). A project
    module already loaded that the gate does not bind (through the environment: a ``sitecustomize`` on the
    evalglass process's ``PYTHONPATH``) counts as refused. ``bound``: each bound file with its fingerprint as the
    config loaded it (:func:`_held_sources`)."""
    guard = Guard(Path(root), [Path(path) for path, _ in bound])
    _held_sources(guard, dict(bound))
    sys.dont_write_bytecode = True  # nothing written into the project's __pycache__ folders: they are not read
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str):
            with contextlib.suppress(PermissionError):
                guard._check(name, "loaded (before the worker started)")
    _project_finders(guard)
    _unlisted_metadata(guard)
    sys.addaudithook(guard.hook)
    return guard


def _held_sources(guard: Guard, hashes: dict[str, str]) -> None:
    """Python source of a bound file compiles only from the bytes the config hashed: the worker's source loader
    hashes what it read and refuses a bound file whose bytes are others (``host_unbound_code``). Why: other host code
    of the run that no gate binds (an ungated metric's module as its worker imports it, a lane) runs as the same
    user and could rewrite a bound file before this worker loads it (or loads it again, after a death) and restore
    it before the run's end, when the definition files are hashed again. The bytes compared are the bytes compiled,
    so no timing wins. Limit: a ``data_files:`` file the function reads itself is not compared here."""
    import hashlib
    from importlib.machinery import SourceFileLoader

    read = SourceFileLoader.get_data

    def get_data(self: SourceFileLoader, path: str) -> bytes:
        data = read(self, path)
        expected = hashes.get(path) or hashes.get(os.path.realpath(path))
        if expected is not None and expected != "sha256:" + hashlib.sha256(data).hexdigest():
            shown = guard._shown(Path(os.path.realpath(path)))
            guard._refuse(
                shown,
                f"{shown} is not as the gate bound it: it changed after the config was loaded (rewritten by "
                "code of the run?); run again on the checkout as reviewed",
            )
        return data

    SourceFileLoader.get_data = get_data  # type: ignore[method-assign,assignment]


__all__ = ["UNBOUND_CODE", "Guard", "install"]
