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

Any other question about a name (:meth:`Guard.ask`) follows one rule: refused when the name reaches, step by step
as the kernel takes it (links, ``..``, ``dir_fd=``, a descriptor through ``/proc/self/fd``), a file or folder of the
project or of its installed copy that is there and that the gate neither binds nor leads to; answered when it
reaches nothing there, so every run that decides sees the same project. The ``stat`` family raises no audit event:
it is wrapped in ``os`` and ``posix`` (:func:`_wrap_asking`); the audited calls whose error says whether a name is
there (``os.mkdir``, ``os.chmod``...) and a file opened for writing are asked through the hook. A listing of the
``site-packages`` the installed copy lies in may show none of its names the gate binds nothing in (its modules, its
``.dist-info`` folder), and a ``.pth`` file it ships (run at every start, before this hook) counts as refused.
Files the standard library opens in C with no ``open`` event are checked by their own means: ``sqlite3.connect``'s
event, and ``readline``'s file functions, wrapped when it loads (:func:`_wrap_file_modules`).

Once anything was refused, every later call of the worker answers an ``error`` score with code
``host_unbound_code`` naming the first file refused and how to bind it (an ``import`` statement in a bound file, or
the metric's ``data_files:``), even when host code caught the refusal: a gate on the metric then blocks
(``incomplete_measurement``), never decides on what the code did instead.

Limits (stated in docs/config.md): the worker is a process of the same user, not a sandbox. What the gate binds is
read at config load; a bound Python source compiles only from those bytes (:func:`_held_sources`), but a
data file rewritten between then and its reading is not seen here. Code that goes around the
interpreter is not seen, and cannot be from inside this process: system calls through ``ctypes`` or ``cffi``, a
write to ``/proc/self/mem``, the original ``os`` functions the wrappers hold (their ``__defaults__``, ``gc``). Nor
what says nothing of a name: a file system's free space (``os.statvfs`` of any folder on it), a bound folder's own
``stat`` (its link count grows with what it holds), inode numbers, timings. Code
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
import urllib.parse
from collections.abc import Collection, Iterator
from importlib.machinery import FileFinder, ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

from evalglass.lanes.hostimports import (
    committed_below,
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
#: Audited calls that name a path and whose answer or error (``ENOENT``, ``EEXIST``, ``ENOTDIR``...) says whether
#: it is there: each event's position of its ``dir_fd`` argument (None: it takes none; -1 in the event: not given).
_ASKING_EVENTS: dict[str, int | None] = {
    "os.chmod": 2,
    "os.chown": 3,
    "os.utime": 3,
    "os.remove": 1,
    "os.rmdir": 1,
    "os.mkdir": 2,
    "os.truncate": None,
    "os.chdir": None,
    "os.chflags": None,
    "os.getxattr": None,
    "os.listxattr": None,
    "os.setxattr": None,
    "os.removexattr": None,
}
#: The ``os`` functions that ask about a path or a descriptor and raise no audit event (the ``stat`` family, and
#: what fails on a name that is there): wrapped in ``os`` and ``posix`` (:func:`_wrap_asking`). Each takes the
#: path (or descriptor) first; ``dir_fd=`` where it is given.
_ASKING_FUNCTIONS = (
    "stat",
    "lstat",
    "fstat",
    "access",
    "statvfs",
    "fstatvfs",
    "readlink",
    "pathconf",
    "fpathconf",
    "mkfifo",
    "mknod",
    "chroot",
)
#: Every event the hook acts on: any other is passed over with one set lookup.
_WATCHED = frozenset(
    {"open", "import", "compile", "ctypes.dlopen", "os.link", "os.rename", "os.symlink", "sqlite3.connect"}
) | (_PROCESS_EVENTS | _LISTING_EVENTS | _GLOB_EVENTS | frozenset(_ASKING_EVENTS))
#: How many symbolic links a name may go through before the kernel answers ``ELOOP`` (Linux's ``MAXSYMLINKS``).
_MAX_LINKS = 40


def _machine_prefixes() -> tuple[str, ...]:
    """The folders of the standard library and installed packages, as paths name them and resolved."""
    folders = [sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    named = [folder for folder in folders if folder]
    return tuple({os.path.join(form, "") for folder in named for form in (folder, os.path.realpath(folder))})


_MACHINE = _machine_prefixes()


def _environment(root: str) -> tuple[frozenset[str], tuple[str, ...], frozenset[str]]:
    """The environment the worker runs in, where it lies in the project (a ``.venv`` in the checkout, made by
    installing: ``uv``, ``poetry`` in-project, ``python -m venv .venv`` in CI): the folders on the way to its
    ``site-packages`` and standard library (``.venv``, ``.venv/lib``: ``Path(__file__).resolve()`` of any installed
    library asks about each), its roots as prefixes (``bin/python``, ``pyvenv.cfg``), and what git tracks in them (the
    pull request's, asked about like any project file). Read before the hook (``git ls-files``)."""
    inside = os.path.join(root, "")
    roots = {os.path.realpath(folder) for folder in {sys.prefix, sys.exec_prefix}}
    roots = {folder for folder in roots if folder.startswith(inside)}
    ends = roots | {prefix.rstrip("/") for prefix in _MACHINE if prefix.startswith(inside)}
    on_the_way = {
        str(folder) for end in ends for folder in (Path(end), *Path(end).parents) if str(folder).startswith(inside)
    }
    committed = {str(path) for folder in roots for path in committed_below(Path(folder))}
    return frozenset(on_the_way), tuple(os.path.join(folder, "") for folder in sorted(roots)), frozenset(committed)


class Guard:
    """The worker's rule: ``root`` the project, ``bound`` the files the gate binds (resolved)."""

    def __init__(self, root: Path, bound: Collection[Path]) -> None:
        self.root = root
        self.bound = frozenset(bound)
        #: The folders on the way to a bound file: their names are the bound files', so listing one that holds
        #: nothing else tells host code nothing the gate did not bind.
        self.holds = frozenset(folder for path in self.bound for folder in path.parents)
        #: The same, as text: the walk of a name (:meth:`_ask_entry`) tests each step without making a ``Path``.
        self._known_text = frozenset(str(path) for path in self.bound | self.holds)
        self._root = str(root)
        self._inside = os.path.join(self._root, "")
        #: The project installed from the checkout (``pip install .``: ``hostimports.installed_label``), read now,
        #: before the hook: a copy of the project wherever its ``site-packages`` lies, watched like the folder: its
        #: code, the metadata its text decides (``METADATA``: its version...), and its folders (listed).
        self._folders = installed_folders()
        self._installed = installed_code_names() | installed_metadata_names() | self._folders
        self.sites = installed_sites()
        #: What the installed copy puts in each ``site-packages`` (its packages, modules, ``.pth`` files and its
        #: ``.dist-info`` folder, whose name holds its version): the pull request's names among the machine's.
        self._tops = frozenset(
            os.path.join(site, name[len(site) + 1 :].split("/")[0])
            for name in self._installed
            for site in self.sites
            if name.startswith(os.path.join(site, ""))
        )
        self._on_the_way, self._environment, self._committed = _environment(self._root)
        self.refused: list[str] = []
        #: Each bound file's fingerprint as the config hashed it (:func:`_held_sources`): what a compiled text that
        #: names one must be ("": a folder's name, compared with nothing).
        self.held: dict[str, str] = {}
        #: Bound modules as the import system found them (a link's name, ``helper.py -> vendor/helper.py``): the
        #: name a bound ``import`` statement reaches is answered when asked about (:meth:`_ask_entry`).
        self.found: set[str] = set()
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
                # A write says whether the name is there too (``O_EXCL``, ``O_WRONLY`` without ``O_CREAT``, then
                # ``fstat`` or ``lseek`` on what it opened): asked about like a ``stat``.
                self._ask_open(path, relative=mode is None)
                return
            if mode is None and isinstance(path, (str, bytes)) and not os.path.isabs(path):
                self._check_relative(path)  # ``os.open``: relative to the working folder, or to a folder's descriptor
            else:
                self._check(path, "reads")
        elif event == "sqlite3.connect":
            self._check_database(args[0])
        elif event in _ASKING_EVENTS:
            where = _ASKING_EVENTS[event]
            self.ask(args[0], args[where] if where is not None else None)
        elif event in _LISTING_EVENTS:
            self._check_listing(args[0])
        elif event in _GLOB_EVENTS:
            self._check_glob(event, args)
        elif event == "compile":
            self._check_compiled(args[0], args[1])
        elif event == "import":
            if args[1] is not None:  # an extension module's file
                self._check(args[1], "loads")
        elif event == "ctypes.dlopen":
            if args[0] is not None and "/" in os.fsdecode(args[0]):  # a bare name is the dynamic loader's lookup
                self._check(args[0], "loads")
        elif event in {"os.link", "os.rename"}:
            self._check(args[0], "links")
            self.ask(args[1], args[3])  # ``EEXIST``, ``ENOTEMPTY``: what is where it goes is asked about
        elif event == "os.symlink":
            # A link made where paths are not resolved (a folder of the machine's: ``project_path``) would reach
            # the project's file unseen: what the link names is checked as it is made.
            self._check(_link_target(*args), "links")
            self.ask(args[1], args[2])
        elif event in _PROCESS_EVENTS:
            self._refuse(
                "a program",
                f"it starts a program ({event}): what a process it starts loads cannot be bound; run it as a check "
                "(a `check` metric whose `inputs:` bind its code)",
            )

    def _check_compiled(self, source: Any, filename: Any) -> None:
        """A text compiled under a bound file's name (``runpy.run_path``, ``exec(compile(open(path).read(), path,
        ...))``, ``ast.parse``; an import's too, which :func:`_held_sources` checks as read) is that file's bytes as
        the config hashed them, or their text (a ``str`` read in text mode: any newline and a few encodings): the
        bytes compiled are compared, so no rewrite and restore around the read wins. A text compiled under another
        name (``exec(open(path).read())``: ``<string>``) is not the file's to compare: the limit docs/config.md
        states for data files."""
        if not self.held or not isinstance(filename, (str, bytes)):
            return
        name = os.fsdecode(filename)
        if name.startswith("<"):  # ``<string>``: ``exec``/``eval`` of a text (per example, maybe): no system call
            return
        path = self.project_path(name)
        expected = self.held.get(name) or (None if path is None else self.held.get(str(path)))
        if not expected:
            return
        if isinstance(source, str):
            data = source.encode("utf-8", "surrogatepass")
        elif isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
        else:
            return  # a tree its code built: no file's text
        # A text compiled from ``str`` arrives here as its UTF-8 bytes: its newlines may be another's than the file's.
        if _fingerprint(data) == expected or _text_of(path or Path(name), expected, data):
            return
        shown = self._shown(path or Path(os.path.realpath(name)))
        self._refuse(
            shown,
            f"{shown} is not as the gate bound it: the text compiled under its name is not the bytes the config "
            "hashed (rewritten by code of the run?); run again on the checkout as reviewed",
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
        self._refuse_unbound(path, how)

    def _refuse_unbound(self, path: Path, how: str) -> None:
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
        elif how == "asks about" and os.path.isdir(path):
            how_to = (
                "list the files the metric uses in it under the metric's `data_files:` (their folders are answered)"
            )
        elif path.suffix == ".py":
            how_to = (
                "import it with an `import` statement in the metric's file or a module it imports (read, not run: "
                "any branch binds it)"
            )
        else:
            how_to = "list it under the metric's `data_files:`"
        self._refuse(shown, f"it {how} {shown}, which the gate does not bind; {how_to}, then re-approve")

    def _check_database(self, database: Any) -> None:
        """``sqlite3.connect``: SQLite opens the file itself (no ``open`` event), so the name it is given is read
        here: as named, and as a ``file:`` URI's path (the event does not say whether ``uri=True``). A name that is
        not there (``:memory:``, a database it creates) is asked about, and so answered."""
        try:
            named = os.fsdecode(database)
        except TypeError:
            return
        candidates = [named]
        if named.startswith("file:"):
            candidates.append(urllib.parse.unquote(urllib.parse.urlsplit(named).path))
        for candidate in candidates:
            if candidate and os.path.lexists(candidate):
                self._check(candidate, "reads")
            elif candidate:
                self.ask(candidate)

    def ask(self, name: Any, dir_fd: Any = None) -> None:
        """A question about ``name`` that opens nothing (``os.stat`` and its family, ``os.access``, ``os.readlink``,
        what fails on a name that is there: ``os.mkdir``, ``os.chmod``...), or about a descriptor (an ``int``):
        refused when the name reaches a file or folder of the project that is there and the gate does not bind
        (nor is on the way to one), each step of the name checked as the kernel takes it, so a link or a folder
        on the way is asked about too. A name that reaches nothing there is answered: whether anything is there
        is then the same for every pull request that does not change what the gate binds (a name below a file,
        ``ENOTDIR``, is the file's). ``dir_fd=``: relative to that folder's descriptor."""
        if isinstance(name, bool):
            return
        if isinstance(name, int):
            named = _descriptor_path(name)
            if named is None or not named.startswith("/"):
                return  # a pipe, a socket, an anonymous file: no name of the project's
        else:
            try:
                named = os.fsdecode(name if name is not None else ".")
            except TypeError:
                return  # not a name: the call fails on its own
            if not os.path.isabs(named) and isinstance(dir_fd, int) and dir_fd >= 0:
                folder = _descriptor_path(dir_fd)
                if folder is None:
                    return
                named = os.path.join(folder, named)
        try:
            absolute = os.path.abspath(named)
        except OSError:  # the working folder was removed: a relative name reaches nothing
            return
        if absolute not in self._installed and absolute.startswith(_MACHINE) and ".." not in named:
            return  # the standard library's or an installed package's, as for reads (no system call to say so)
        # Not ``absolute``: ``..`` after a link is the link's target's parent, as the kernel takes it.
        self._ask_steps(named if os.path.isabs(named) else os.path.join(os.getcwd(), named), _MAX_LINKS)

    def _ask_steps(self, named: str, links: int) -> int:
        """Walk ``named`` (absolute) step by step as the kernel does, each entry there checked (:meth:`_ask_entry`)
        and each link followed through its own text; the links left to follow (0: the walk stopped)."""
        folder = "/"
        for part in named.split("/"):
            if part in {"", "."}:
                continue
            if part == "..":
                folder = os.path.dirname(folder)
                continue
            place = os.path.join(folder, part)
            if not os.path.lexists(place):
                return 0  # nothing there: below it neither
            self._ask_entry(place, folder)
            if os.path.islink(place):
                if links <= 0:
                    return 0
                text = os.readlink(place)
                links = self._ask_steps(text if os.path.isabs(text) else os.path.join(folder, text), links - 1)
                if links <= 0:
                    return 0
                folder = os.path.realpath(place)
            else:
                folder = place
        return links

    def _ask_entry(self, place: str, folder: str) -> None:
        """``place``, an entry that is there in the resolved ``folder``: refused when it is the project's and the
        gate does not bind it nor a file below it."""
        installed = place in self._installed or place in self._tops
        if not installed and not self._resolved_project(folder):
            return
        if place in self._known_text or place in self.found or place == self._root:
            return
        if not installed and self._environment_holds(place):
            return
        path = Path(place)
        if path.name == "__pycache__":
            # Bytecode is never run here (:meth:`_check`): answered as absent, not remembered.
            shown = self._shown(path)
            raise FileNotFoundError(errno.ENOENT, f"{shown}: a gated python metric runs its modules from source")
        if not os.path.islink(place) and not self._resolved_project(place) and not installed:
            return  # a folder in the project that is the machine's (a ``site-packages`` in its ``.venv``)
        self._refuse_unbound(path, "asks about")

    def _environment_holds(self, place: str) -> bool:
        """Whether ``place`` is the environment's (:func:`_environment`): a folder on the way to its ``site-packages``
        or standard library, or anything in it that the pull request does not commit there."""
        if place in self._on_the_way:
            return True
        return place.startswith(self._environment) and place not in self._committed

    def _resolved_project(self, full: str) -> bool:
        """:meth:`project_path`'s test for a name resolved already (the walk's folders): string tests, and
        ``is_host_file`` (remembered), no ``realpath`` again."""
        if full in self._folders or full in self._installed:
            return True
        if full != self._root and not full.startswith(self._inside):
            return False
        return is_host_file(Path(full))

    def _ask_open(self, name: Any, *, relative: bool) -> None:
        """A file opened for writing: asked about (:meth:`ask`); a relative ``os.open`` against each folder it may
        be relative to (:meth:`_check_relative`)."""
        if not relative or not isinstance(name, (str, bytes)) or os.path.isabs(name):
            self.ask(name)
            return
        for folder in self._relative_folders():
            self.ask(os.path.join(folder, os.fsdecode(name)))

    def _relative_folders(self) -> list[str]:
        try:
            working = [os.getcwd()]
        except OSError:  # the working folder was removed: a relative name cannot be found in it
            working = []
        return [*working, *_open_folders()]

    def _check_relative(self, name: str | bytes) -> None:
        """An ``os.open`` of a relative name: the audit event does not say whether it is relative to the working
        folder or to a folder's descriptor (``dir_fd=``), so it is checked against each that holds the name: a
        project file reached through a descriptor of a folder outside the project (its parent, ``/``) is refused,
        and a name found under none of them opens nothing."""
        text = os.fsdecode(name)
        for folder in self._relative_folders():
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
        if self._check_site_listing(name):
            return
        folder = self.project_path(name)
        if folder is None:
            return
        self.ask(name)  # a folder the gate binds nothing in, even an empty one: whether it is there is unbound
        try:
            entries = os.listdir(folder)
        except OSError:
            return  # not a folder, or unreadable: the listing fails on its own
        unbound = sorted(entry for entry in entries if not self._known(folder / entry))
        if unbound:
            self._refuse_listing(folder, unbound)

    def _check_site_listing(self, name: Any) -> bool:
        """A listing of a ``site-packages`` the project is installed in (``os.listdir``, ``pkgutil.iter_modules()``
        of every folder on ``sys.path``): it names what the installed copy puts there (a module the pull request
        adds, its ``.dist-info`` folder's version) beside the machine's, so it is refused when the gate binds
        nothing in one of those. Whether ``name`` is such a folder."""
        try:
            site = os.path.realpath(os.fsdecode(name)) if name is not None else None
        except (TypeError, ValueError):
            return False
        if site not in self.sites:
            return False
        try:
            entries = os.listdir(site)
        except OSError:
            return True
        unbound = sorted(entry for entry in entries if self._unbound_top(os.path.join(site, entry)))
        if unbound:
            self._refuse_listing(Path(site), unbound)
        return True

    def _unbound_top(self, place: str) -> bool:
        return place in self._tops and not self._known(Path(place))

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
            found = os.path.realpath(match)
            if self._unbound_top(found):
                self._refuse_listing(Path(os.path.dirname(found)), [os.path.basename(found)], glob=True)
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


def _fingerprint(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def _text_of(path: Path, expected: str, source: bytes) -> bool:
    """Whether ``source`` (a compiled text's UTF-8 bytes) is the text of the file at ``path`` as it is now, its bytes
    the ``expected`` ones, read in text mode (universal newlines) in an encoding a reader uses: the compiled text is
    then the bound file's."""
    import io
    import locale

    try:
        data = path.read_bytes()
    except OSError:
        return False
    if _fingerprint(data) != expected:
        return False
    for encoding in dict.fromkeys(("utf-8", "utf-8-sig", locale.getpreferredencoding(False), "latin-1")):
        try:
            text = io.TextIOWrapper(io.BytesIO(data), encoding=encoding, newline=None).read()
        except (UnicodeDecodeError, LookupError):
            continue
        if text.encode("utf-8", "surrogatepass") == source:
            return True
    return False


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
            with guard.checking():  # its tests of each name (``os.stat``) are the guard's: what it finds is checked
                spec = super().find_spec(fullname, target)
                if spec is None:
                    return None
                if spec.origin is not None and spec.has_location:
                    guard._check(spec.origin, "imports")
                    folder, name = os.path.split(spec.origin)
                    guard.found.add(
                        os.path.join(os.path.realpath(folder), name)
                    )  # as :meth:`Guard._ask_steps` names it
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
            if not project and os.path.realpath(self.root or ".") in guard.sites:
                # The installed copy's ``site-packages``, listed for distributions (``entry_points()``, any
                # package's version): each read of the project's metadata is checked as it is made.
                return original(self)
        return [] if project else original(self)

    module.FastPath.children = children
    mtime = getattr(module.FastPath, "mtime", None)
    if isinstance(mtime, property) and mtime.fget is not None:
        stat = mtime.fget

        def project_mtime(self: Any) -> Any:
            # Its lookup cache's key, from ``os.stat`` of each folder on ``sys.path``: a project folder that holds
            # nothing bound (a ``src`` on ``PYTHONPATH``) would be asked about, and its listing is empty anyway.
            with guard.checking():
                project = guard.project_path(self.root or ".") is not None
            return 0.0 if project else stat(self)

        module.FastPath.mtime = property(project_mtime)


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


def _wrap_asking(guard: Guard) -> None:
    """``os.stat`` and its family (:data:`_ASKING_FUNCTIONS`) ask :meth:`Guard.ask` first, in ``os`` and in
    ``posix`` (the import system's module: ``os.path``, ``pathlib``, ``shutil`` call them through ``os``). No audit
    event says they ran, so they are replaced: code that reaches the originals another way (the interpreter's
    internals, ``ctypes``) is not seen (the limit in docs/config.md). A path-like argument is turned into its path
    once, before the check, and the call is made with that path: its ``__fspath__`` cannot answer twice."""
    import posix

    local = guard._local
    for name in _ASKING_FUNCTIONS:
        original = getattr(os, name, None)
        if original is None:
            continue

        def asking(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            if not args:  # named by keyword (``path=``, ``fd=``): made positional, as the function takes it
                first = kwargs.pop("path", kwargs.pop("fd", None))
                args = (first,) if first is not None else ()
            if args:
                first = args[0]
                if type(first) not in _PLAIN and hasattr(type(first), "__fspath__"):
                    args = (os.fspath(first), *args[1:])
                if not getattr(local, "checking", False):
                    with guard.checking():
                        guard.ask(args[0], kwargs.get("dir_fd"))
            return _original(*args, **kwargs)

        asking.__name__ = asking.__qualname__ = name
        asking.__doc__ = original.__doc__
        setattr(os, name, asking)
        if getattr(posix, name, None) is original:
            setattr(posix, name, asking)
        for supports in ("supports_dir_fd", "supports_fd", "supports_follow_symlinks", "supports_effective_ids"):
            found: set[Any] = getattr(os, supports, set())
            if original in found:
                found.add(asking)


#: Standard-library extension modules that open a file in C, raising no audit event: their functions that read one
#: (checked like a read) and that write one (asked about), by module. Wrapped when the module loads.
_FILE_MODULES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "readline": (("read_history_file", "read_init_file"), ("write_history_file", "append_history_file")),
}


def _wrap_file_modules(guard: Guard) -> None:
    """``readline`` reads its history and init files itself: each file function of :data:`_FILE_MODULES` checks
    the name it is given first, once the module is loaded (now, or when host code imports it: a finder ahead of
    the others wraps what they load). Like :func:`_wrap_asking`, a wrapper host code can reach around (the
    extension's own copy, ``importlib`` of a fresh one) is not a rule, only what keeps honest code off the file."""

    def wrap(module: ModuleType) -> None:
        reads, writes = _FILE_MODULES[module.__name__]
        for name in (*reads, *writes):
            original = getattr(module, name, None)
            if original is None:
                continue
            position = 1 if name == "append_history_file" else 0  # ``append_history_file(nelements, filename)``

            def checked(*args: Any, _original: Any = original, _read: bool = name in reads, _at: int = position) -> Any:
                named = args[_at] if len(args) > _at else None
                if named is not None:
                    with guard.checking():
                        if _read:
                            guard._check(os.fsdecode(os.fspath(named)), "reads")
                        else:
                            guard.ask(os.fspath(named))
                return _original(*args)

            checked.__name__ = checked.__qualname__ = name
            checked.__doc__ = original.__doc__
            setattr(module, name, checked)

    class Wrapping:
        """A meta path finder: the spec the other finders give, its loader wrapping the module it executes."""

        @staticmethod
        def find_spec(fullname: str, path: Any = None, target: ModuleType | None = None) -> ModuleSpec | None:
            if fullname not in _FILE_MODULES:
                return None
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is Wrapping or find is None:
                    continue
                spec: ModuleSpec | None = find(fullname, path, target)
                if spec is not None and spec.loader is not None:
                    loader, execute = spec.loader, spec.loader.exec_module

                    def exec_module(module: ModuleType, _execute: Any = execute) -> None:
                        _execute(module)
                        wrap(module)

                    loader.exec_module = exec_module  # type: ignore[method-assign]
                    return spec
            return None

    for name in _FILE_MODULES:
        if name in sys.modules:
            wrap(sys.modules[name])
    sys.meta_path.insert(0, Wrapping)


def install(root: str, bound: Collection[tuple[str, str]]) -> Guard:
    """Put the rule in force in this worker, before any host code loads (it cannot be taken back). A project
    module already loaded that the gate does not bind (through the environment: a ``sitecustomize`` on the
    evalglass process's ``PYTHONPATH``) counts as refused. ``bound``: each bound file with its fingerprint as the
    config loaded it (:func:`_held_sources`)."""
    guard = Guard(Path(root), [Path(path) for path, _ in bound])
    guard.held = dict(bound)
    _held_sources(guard, guard.held)
    sys.dont_write_bytecode = True  # nothing written into the project's __pycache__ folders: they are not read
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str):
            with contextlib.suppress(PermissionError):
                guard._check(name, "loaded (before the worker started)")
    for name in sorted(guard._tops):
        if name.endswith(".pth"):
            # Python runs a ``.pth`` file's ``import`` lines at every start, in every process, before any guard:
            # the installed copy's is the pull request's code, and nothing here can bind it.
            guard.refused.append(
                f"the installed project puts {installed_label(Path(name)) or name} in site-packages, which Python "
                "runs at every start, before any rule can watch it; ship no .pth file (install in editable mode for "
                "development), then re-approve"
            )
            break
    _project_finders(guard)
    _unlisted_metadata(guard)
    _wrap_asking(guard)
    _wrap_file_modules(guard)
    sys.addaudithook(guard.hook)
    return guard


def _held_sources(guard: Guard, hashes: dict[str, str]) -> None:
    """Python source of a bound file compiles only from the bytes the config hashed (and a bound sourceless module
    loads only from them): the worker's file loaders hash what they read and refuse a bound file whose bytes are
    others (``host_unbound_code``). Why: other host code of the run that no gate binds (an ungated metric's module
    as its worker imports it, a lane) runs as the same user and could rewrite a bound file before this worker loads
    it (or loads it again, after a death) and restore it before the run's end, when the definition files are hashed
    again. The bytes compared are the bytes compiled, so no timing wins. A text compiled under a bound file's name
    without the loader (``runpy.run_path``, ``compile`` of its text) is compared by the hook
    (:meth:`Guard._check_compiled`). Limits: a ``data_files:`` file the function reads as data (or compiles under
    another name) is not compared, nor a bound compiled extension (``dlopen`` reads it, not Python)."""
    from importlib.machinery import SourceFileLoader, SourcelessFileLoader

    # The source loader's and the sourceless one's (a bound ``helper.pyc`` beside no source, loaded by its bytes: no
    # text is compiled, so the hook's compile check never sees it); both are ``FileLoader.get_data``.
    read = SourceFileLoader.get_data

    def get_data(self: Any, path: str) -> bytes:
        data = read(self, path)
        expected = hashes.get(path) or hashes.get(os.path.realpath(path))
        if expected and expected != _fingerprint(data):  # "": a folder's name
            shown = guard._shown(Path(os.path.realpath(path)))
            guard._refuse(
                shown,
                f"{shown} is not as the gate bound it: it changed after the config was loaded (rewritten by "
                "code of the run?); run again on the checkout as reviewed",
            )
        return data

    SourceFileLoader.get_data = get_data  # type: ignore[method-assign]
    SourcelessFileLoader.get_data = get_data  # type: ignore[method-assign]


__all__ = ["UNBOUND_CODE", "Guard", "install"]
