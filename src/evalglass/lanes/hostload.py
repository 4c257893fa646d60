"""Finding a host-written metric function from a ``"file.py:name"`` or ``"package.module:name"`` reference.

The one loader of host code: python metrics and python lanes both come through :func:`load_function` (it sits in
lanes, below metrics, so both import it downwards). Every failure raises :class:`HostLoadError` with one line saying
what failed, where, and how to fix it (a lane reports it as its config error, a metric as its load error). A file is
loaded as a standalone module (its directory is not added to ``sys.path``), once per file content and process:
metrics that share a file share its module-level state. A python lane's function is loaded only in host worker
processes (``lanes/hostworker.py``), an agent's host tools only in theirs (``lanes/hosttools.py``), and a python
metric's only in its own worker (``metrics/hostscoring.py``), never in the process that decides.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path
from stat import S_ISREG
from types import ModuleType
from typing import Any

from evalglass import redaction

HostFunction = Callable[..., Any]


class HostLoadError(ValueError):
    """Host code cannot be loaded: one line saying what failed, where, and how to fix it."""


_NOT_IDENTIFIER = re.compile(r"\W")
_LOADED: dict[tuple[Path, int, int], ModuleType] = {}


def split_reference(reference: str) -> tuple[str, str]:
    """``(source, function_name)``; raises ValueError on a malformed reference. Splits at the last ``:``."""
    source, sep, name = reference.rpartition(":")
    if not sep or not source.strip() or not name.isidentifier():
        raise ValueError(
            f"function {reference!r} must look like 'path/to/metrics.py:my_metric' or 'my_package.module:my_metric'"
        )
    return source, name


def is_file_reference(source: str) -> bool:
    """A source naming a ``.py`` file or containing a path separator is a file; anything else is a module."""
    return source.endswith(".py") or "/" in source or "\\" in source


def load_function(
    reference: str,
    base_dir: Path,
    *,
    what: str = "python metric",
    allow_async: bool = False,
    search_base: bool = False,
) -> HostFunction:
    """The callable named by ``reference``; relative file paths resolve against ``base_dir``.

    The one loader of host code (metrics and lanes in their worker processes, or on a cluster worker), so a file
    is one module per process whoever loads it first. ``what`` starts every message
    (``python metric``, ``python lane``). ``search_base`` puts ``base_dir`` on ``sys.path`` before a module
    reference is imported (lanes document that the evals folder is importable; metrics leave ``sys.path`` alone).
    The attribute may be dotted (``Class.method``).
    """
    source, _, attribute = reference.rpartition(":")
    if is_file_reference(source):
        path = (base_dir / source).resolve()
        module, where = _load_file(path, base_dir, what), str(path)
    else:
        if search_base:
            put_on_path(base_dir)
        module, where = _import_module(source, what), f"module {source}"
    function: Any = module
    for part in attribute.split("."):
        function = getattr(function, part, None)
        if function is None:
            raise HostLoadError(
                f"{what}: {where} has no function {attribute!r} (no attribute of that name){_available(module)}"
            )
    if not callable(function):
        raise HostLoadError(
            f"{what}: {where}:{attribute} is a {type(function).__name__}, not a function; point to a def"
        )
    if not allow_async and inspect.iscoroutinefunction(function):
        raise HostLoadError(f"{what}: {where}:{attribute} is async; metric functions must be plain 'def' functions")
    return function  # type: ignore[no-any-return]


def put_on_path(base_dir: Path) -> None:
    """The evals folder first on ``sys.path`` (once), as a lane that names a module documents it: imports nothing.
    A python lane does this in the deciding process too, though its function is loaded only in its workers, so a
    metric that imports a module beside the config finds it the same way."""
    if (base := str(base_dir.resolve())) not in sys.path:
        sys.path.insert(0, base)


def host_source(reference: str, base_dir: Path) -> Path | None:
    """The file that defines an already loaded ``reference`` (None for a module without one), for fingerprints."""
    source = reference.rpartition(":")[0]
    if is_file_reference(source):
        return (base_dir / source).resolve()
    file = getattr(sys.modules.get(source), "__file__", None)
    return Path(file) if file else None


def reported_source(reference: str, base_dir: Path, reported: str | None) -> Path | None:
    """The file a function's ``reference`` names (a file reference), or the one a host worker that imported it
    ``reported`` (a module reference): the deciding process never imports host code, so it cannot look it up."""
    if is_file_reference(reference.rpartition(":")[0]):
        return host_source(reference, base_dir)
    return Path(reported) if reported else None


def _available(module: ModuleType) -> str:
    names = sorted(
        attr for attr, value in vars(module).items() if inspect.isfunction(value) and not attr.startswith("_")
    )
    if not names:
        return "; it defines no public functions"
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f"; functions it defines: {shown}"


def _load_file(path: Path, base_dir: Path, what: str) -> ModuleType:
    try:
        stat = path.stat()
    except OSError:
        raise HostLoadError(
            f"{what}: file {path} not found: it does not exist, and file paths in 'function' are relative to {base_dir}"
        ) from None
    if not S_ISREG(stat.st_mode):  # a FIFO would block the import forever, a folder fails obscurely
        raise HostLoadError(f"{what}: {path} is not a regular file; point 'function' at a .py file")
    key = (path, stat.st_mtime_ns, stat.st_size)
    cached = _LOADED.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module_name = f"_evalglass_host_{_NOT_IDENTIFIER.sub('_', path.stem)}_{digest}"
    try:
        module = exec_file_as_module(path, module_name)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise _import_failure(str(path), exc, what) from None
    if module is None:
        raise HostLoadError(f"{what}: cannot load {path} as Python; give a .py file")
    _LOADED[key] = module
    return module


def exec_file_as_module(path: Path, module_name: str) -> ModuleType | None:
    """Run a ``.py`` file as the module ``module_name`` (registered in ``sys.modules`` so its own imports and
    pickling work); None when Python cannot load the path as source. Whatever the file raises propagates, and the
    half-made module is unregistered first."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _import_module(source: str, what: str) -> ModuleType:
    try:
        return importlib.import_module(source)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (source == exc.name or source.startswith(exc.name + ".")):
            raise HostLoadError(
                f"{what}: module {source!r} was not found, so it cannot import it; install it, add its folder to "
                "PYTHONPATH, or use the file form 'path/to/file.py:function'"
            ) from None
        raise _import_failure(f"module {source}", exc, what) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise _import_failure(f"module {source}", exc, what) from None


def _import_failure(where: str, exc: BaseException, what: str) -> HostLoadError:
    if isinstance(exc, SyntaxError):
        location = f"{exc.filename or where}:{exc.lineno}" if exc.lineno else where
        return HostLoadError(f"{what}: syntax error at {location}: {exc.msg}; fix the file")
    detail = redaction.current().head(" ".join(str(exc).split()), 300, "...") or "(no message)"
    return HostLoadError(
        f"{what}: importing {where} raised {type(exc).__name__}: {detail}; fix the module so it imports cleanly"
    )
