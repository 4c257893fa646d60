"""Which host code this process is running, kept where its supervisor can read it after the process has died.

A host function (a python metric or lane, a check command, anything a config points at) can end the process in ways
no exception handler sees: ``os._exit``, a signal, ``exit`` from C. The process that runs host code is supervised
(:mod:`evalglass.supervisor`), and when it dies without reporting a verdict the supervisor names what was running.
That name comes from here: each place that hands work to host code registers a label once (:func:`watch`) and
brackets each hand-off with :meth:`Watch.enter` / :meth:`Watch.leave`, which count the hand-offs in flight per
label in a page of memory shared with the supervisor. No system call: about 0.2 µs a hand-off, so the engine marks
batches and runs of calls, not examples.

**Engine code changed while host code could run** (:func:`freeze_engine_imports`). Host code runs in other
processes, but as the same user: it can rewrite any file the deciding process has not imported yet, and that process
imports modules lazily (the renderers, the CI annotations, the decision's rules, an installed library) after host code
ran. A python lane rewriting ``evalglass/report/terminal.py`` (or a module it imports) would run its code in the
process whose report is the exit code. So the first time this supervised process registers a place that hands work
to host code, it stops trusting files changed from then on: a module it imports later whose file (or package
folder's ``__init__``, or extension) had its inode changed since (``st_ctime``, which no unprivileged process can
set back, unlike ``st_mtime``) is refused (``ImportError``: the run ends with exit 2, naming the file), and a
bytecode cache written since is ignored (the module is compiled from its source, which was checked). Its data files
read as late (the HTML report's templates, script and style, through ``report.htmlpage``) are held the same way
(:func:`refuse_changed_data`): a template is code too. Limits: a file system that does not keep ``ctime`` is not
told apart; a library's own data read lazily (not EvalGlass's) is not watched, nor Alembic's history migrations,
which load outside the import system. A metadata-only change moves ``ctime`` too: a hard link made or removed to an
installed file while a run is in flight (uv installs packages as hard links to its cache; ``uv cache prune``
elsewhere) ends an honest run with exit 2, never a verdict.

Limits. Counts are changed by the thread that hands the work over (the run's main thread, which also runs a live
run's event loop), so host code on a lane's or a metric pool's threads is counted from its hand-off, and when a
live run's lane calls and metrics are in flight together, both are named. Where no supervisor shares a page (an
unsupervised process), nothing is recorded. At most :data:`SLOTS` labels are kept; later ones share the last.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import mmap
import os
import sys
import time
import types
from _thread import allocate_lock
from collections.abc import Sequence

#: Labels the shared page holds; the last is shared by any label beyond it.
SLOTS = 255
#: Bytes of a label's UTF-8 text kept (cut on a character boundary).
LABEL_BYTES = 224
SIZE = 1 << 16
#: The page: a count per slot (4 bytes each), then the slot entered last (1 + its index; 0: none), then the labels.
_LAST = SLOTS
_LABELS = 4 * (SLOTS + 1)
_OVERFLOW = "host code (more places than the supervisor keeps names for)"

#: The supervisor's parent imports this module before it forks: no ``threading`` (see evalglass/supervisor.py).
_lock = allocate_lock()
_labels: dict[str, int] = {}
_page: mmap.mmap | None = None
_counts: memoryview | None = None


class Watch:
    """One place that runs host code: count a hand-off in flight with ``with watch:`` or ``enter``/``leave``."""

    __slots__ = ("index", "label")

    def __init__(self, index: int, label: str) -> None:
        self.index = index
        self.label = label

    def enter(self) -> None:
        counts = _counts
        if counts is not None:
            index = self.index
            counts[index] += 1
            counts[_LAST] = index + 1

    def leave(self) -> None:
        counts = _counts
        if counts is not None and counts[self.index]:
            counts[self.index] -= 1

    def __enter__(self) -> Watch:
        self.enter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.leave()


def watch(label: str) -> Watch:
    """The :class:`Watch` of ``label`` (one per label, for the life of the process). In a supervised process, the
    first one freezes what the process may import (:func:`freeze_engine_imports`)."""
    if _page is not None and _frozen is None:
        freeze_engine_imports()
    with _lock:
        index = _labels.get(label)
        if index is None:
            index = min(len(_labels), SLOTS - 1)
            _labels[label] = index
            if _page is not None:
                _write_label(_page, index, label if index < SLOTS - 1 else _OVERFLOW)
    return Watch(index, label)


def shared_page() -> mmap.mmap:
    """A zeroed page that a process forked after this call shares with its parent (anonymous, ``MAP_SHARED``)."""
    return mmap.mmap(-1, SIZE)


def record_into(page: mmap.mmap) -> None:
    """From now on this process (a supervised child) counts into ``page``: labels registered so far are written
    to it at once, later ones when they are registered."""
    global _page, _counts
    with _lock:
        _page = page
        for label, index in _labels.items():
            _write_label(page, index, label if index < SLOTS - 1 else _OVERFLOW)
        _counts = memoryview(page).cast("I")[: SLOTS + 1]


def running_in(page: mmap.mmap) -> tuple[list[str], str | None]:
    """What a dead child's page says: the labels with hand-offs in flight, and the label entered last (None when
    host code was never entered). Read by the supervisor."""
    counts = memoryview(page).cast("I")
    in_flight = [_read_label(page, index) for index in range(SLOTS) if counts[index]]
    last = counts[_LAST]
    return [label for label in in_flight if label], (_read_label(page, last - 1) or None) if last else None


def _write_label(page: mmap.mmap, index: int, label: str) -> None:
    data = label.encode("utf-8", "replace")[:LABEL_BYTES].decode("utf-8", "ignore").encode()
    start = _LABELS + index * LABEL_BYTES
    page[start : start + LABEL_BYTES] = data.ljust(LABEL_BYTES, b"\0")


def _read_label(page: mmap.mmap, index: int) -> str:
    start = _LABELS + index * LABEL_BYTES
    return page[start : start + LABEL_BYTES].rstrip(b"\0").decode("utf-8", "replace")


#: Files whose inode changed up to this much before the freeze count as changed after it: the kernel stamps ``ctime``
#: from a clock that lags the wall clock by up to a tick (4-10 ms).
_CLOCK_SLACK_NS = 50_000_000


class EngineCodeChanged(ImportError):
    """A module the deciding process was about to import was changed while host code could run."""


class _SourceOnly(importlib.machinery.SourceFileLoader):
    """A module whose bytecode cache was written after the freeze: compiled from its (checked) source, and no cache
    written."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


class _Frozen(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: every later import's file checked against the moment of the freeze."""

    def __init__(self, since_ns: int) -> None:
        self.since_ns = since_ns

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or not spec.has_location or not spec.origin:
            return spec
        if self._changed(spec.origin):
            raise EngineCodeChanged(
                f"{spec.origin} was changed while host code could run (this run imports it only now): a module "
                f"of the deciding process ({fullname}) is never loaded from a file changed after host code started; "
                "run again on an unchanged install and project"
            )
        cached = spec.cached
        if cached and isinstance(spec.loader, importlib.machinery.SourceFileLoader) and self._changed(cached):
            spec.loader = _SourceOnly(fullname, spec.origin)
        return spec

    def _changed(self, path: str) -> bool:
        try:
            return os.stat(path).st_ctime_ns >= self.since_ns - _CLOCK_SLACK_NS
        except OSError:
            return False  # absent: nothing to load from it (a cache not written yet)


_frozen: _Frozen | None = None


def freeze_engine_imports() -> None:
    """From now on this process imports no module from a file changed after this call (module docstring). Once per
    process: the first freeze's moment is the one that counts."""
    global _frozen
    with _lock:
        if _frozen is None:
            _frozen = _Frozen(time.time_ns())
            sys.meta_path.insert(0, _frozen)


def refuse_changed_data(path: str) -> None:
    """Raise :class:`EngineCodeChanged` when ``path``, a file of EvalGlass's own the deciding process has just read
    as data (the HTML report's templates, script and style), was changed after the freeze, as an import would be.
    Call it after reading: a ``ctime`` older than the freeze then proves the bytes read are the ones from before
    host code could start (a file replaced since has a new inode, and a new ``ctime``). Nothing is checked before
    a freeze (no host code ran in this process's run) or in an unsupervised process."""
    frozen = _frozen
    if frozen is not None and frozen._changed(path):
        raise EngineCodeChanged(
            f"{path} was changed while host code could run (this run reads it only now): a file the deciding "
            "process renders from is never read once changed after host code started; run again on an unchanged "
            "install and project"
        )


__all__ = [
    "LABEL_BYTES",
    "SIZE",
    "SLOTS",
    "EngineCodeChanged",
    "Watch",
    "freeze_engine_imports",
    "record_into",
    "refuse_changed_data",
    "running_in",
    "shared_page",
    "watch",
]
