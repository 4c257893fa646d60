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
``site-packages`` lies: its distribution's files, not its metadata, ``hostimports.installed_code_names``): a file
opened for reading (``open``, ``io.open_code``, ``os.open``: every import of source, ``runpy``, ``exec`` of a file's
text, data files), an extension module or ``ctypes`` library, a hard link or rename of a project file to elsewhere.
A project file the gate does not bind is refused (``PermissionError``, which import machinery and readers such as
``linecache`` treat as an unreadable file) and remembered; a ``.pyc`` the gate does not bind is refused too, so a
bound module is always compiled from its bound source. Starting a program
(``subprocess``, ``os.system``, ``os.exec*``, ``os.posix_spawn``) is refused outright: what a child process loads
cannot be watched. Files outside the project (the standard library, installed packages, EvalGlass, ``/etc``) are
the machine's.

Once anything was refused, every later call of the worker answers an ``error`` score with code
``host_unbound_code`` naming the first file refused and how to bind it (an ``import`` statement in a bound file, or
the metric's ``data_files:``), even when host code caught the refusal: a gate on the metric then blocks
(``incomplete_measurement``), never decides on what the code did instead.

Limits (stated in docs/config.md): the worker is a process of the same user, not a sandbox. What the gate binds is
read at config load; a file rewritten between then and its loading is not seen here. Code the gate binds decides
what the project's files (bound ones) and the examples make it do, ``exec`` of a text it is given included. A
module loaded before the hook (``sitecustomize`` through the evalglass process's own ``PYTHONPATH``, the
machine's ``.pth`` files) is the environment's, outside any pull request; a module of the project found already
loaded when the worker starts is refused all the same (:func:`install`). A gated metric is never shipped to a
cluster (``executor: ray``: ``Config.guarded_metrics``): a cluster worker process runs many tasks and this hook cannot
be taken off it, so the metric is scored on the driver, in this guarded worker.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any

from evalglass.lanes.hostimports import installed_code_names, installed_label, is_host_file

#: The code of a call answered after the worker refused unbound project code.
UNBOUND_CODE = "host_unbound_code"

#: What a gated metric's worker is guarded by (``install``): the project's folder, and the files its gate binds.
BoundCode = tuple[str, tuple[str, ...]]

_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile", "pty.spawn"}
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
        self._root = str(root)
        self._inside = os.path.join(self._root, "")
        #: The project installed from the checkout (``pip install .``: ``hostimports.installed_label``), read now,
        #: before the hook: a copy of the project wherever its ``site-packages`` lies, watched like the folder.
        self._installed = installed_code_names()
        self.refused: list[str] = []
        #: Per thread: a check in progress on this thread (a hook must not recurse); another thread's does not
        #: exempt this one's events.
        self._local = threading.local()

    # The hook runs on every audited event of the process: one set lookup for the events it does not watch.
    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            if _reads(mode, flags):
                self._check(path, "reads")
        elif event == "import":
            if args[1] is not None:  # an extension module's file
                self._check(args[1], "loads")
        elif event == "ctypes.dlopen":
            if args[0] is not None and "/" in os.fsdecode(args[0]):  # a bare name is the dynamic loader's lookup
                self._check(args[0], "loads")
        elif event in {"os.link", "os.rename"}:
            self._check(args[0], "links")
        elif event in _PROCESS_EVENTS:
            self._refuse(
                "a program",
                f"it starts a program ({event}): what a process it starts loads cannot be bound; run it as a check "
                "(a `check` metric whose `inputs:` bind its code)",
            )

    def _check(self, name: Any, how: str) -> None:
        if getattr(self._local, "checking", False) or isinstance(name, int) or name is None:
            return
        self._local.checking = True  # resolving a path opens no file, but a hook must not recurse whatever it does
        try:
            try:
                text = os.fsdecode(name)
                named = os.path.abspath(text)
                if named not in self._installed and named.startswith(_MACHINE):
                    return  # the standard library's or an installed package's (no system call to say so)
                full = os.path.realpath(text)  # from the working folder, links followed
            except (OSError, TypeError, ValueError):
                return
            if full != self._root and not full.startswith(self._inside) and full not in self._installed:
                return  # the machine's, or elsewhere: one string test for nearly every event
            path = Path(full)
            # A folder of the project opened as a file is refused too: a later ``os.open(name, dir_fd=...)`` names its
            # file relative to it, and the audit event does not carry the folder.
            if path in self.bound or not is_host_file(path):
                return
            shown = installed_label(path) or (os.path.relpath(path, self.root) if path != self.root else ".")
            if path.suffix == ".pyc":
                # A bound module is compiled from its bound source: the import system reads the source when its
                # cached bytecode cannot be read. Not remembered: nothing unbound ran.
                raise PermissionError(f"{shown}: a gated python metric runs its modules from their source")
            how_to = (
                "import it with an `import` statement in the metric's file or a module it imports (read, not run: "
                "any branch binds it)"
                if path.suffix == ".py"
                else "list it under the metric's `data_files:`"
            )
            self._refuse(shown, f"it {how} {shown}, which the gate does not bind; {how_to}, then re-approve")
        finally:
            self._local.checking = False

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


def install(root: str, bound: Collection[str]) -> Guard:
    """Put the rule in force in this worker, before any host code loads (it cannot be taken back). A project
    module already loaded that the gate does not bind (through the environment: a ``sitecustomize`` on the
    evalglass process's ``PYTHONPATH``) counts as refused."""
    guard = Guard(Path(root), [Path(path) for path in bound])
    sys.dont_write_bytecode = True  # nothing written into the project's __pycache__ folders: they are not read
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str):
            with contextlib.suppress(PermissionError):
                guard._check(name, "loaded (before the worker started)")
    sys.addaudithook(guard.hook)
    return guard


__all__ = ["UNBOUND_CODE", "Guard", "install"]
