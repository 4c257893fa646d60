"""EvalGlass: evaluations of AI applications whose green means one specific, approved thing.

The public Python API is what ``__all__`` lists (see docs/python-api.md)::

    import evalglass

    result = evalglass.run("evals/evalglass.yaml")
    result.verdict, result.exit_code, result.gates, result.metrics, result.folder

Everything else is private. ``import evalglass`` loads nothing heavy: each name below is imported the first time it
is used (``tests/test_lazy_imports.py`` pins this, because the CLI and the pytest plugin import this package).
"""

from __future__ import annotations

from evalglass.version import __version__

# Not `typing.TYPE_CHECKING`: importing typing is most of what `import evalglass` would cost (type checkers treat
# a module-level TYPE_CHECKING = False as their own flag).
TYPE_CHECKING = False

__all__ = [
    "RunInterrupted",
    "RunResult",
    "SetupError",
    "VerifyReport",
    "__version__",
    "load_run",
    "run",
    "verify",
]

if TYPE_CHECKING:
    from typing import Any

    from evalglass.api import RunResult, load_run, run, verify
    from evalglass.engine.pipeline import RunInterrupted
    from evalglass.engine.verify import VerifyReport
    from evalglass.errors import SetupError

_HOMES = {
    "RunResult": "evalglass.api",
    "load_run": "evalglass.api",
    "run": "evalglass.api",
    "verify": "evalglass.api",
    "SetupError": "evalglass.errors",
    "RunInterrupted": "evalglass.engine.pipeline",
    "VerifyReport": "evalglass.engine.verify",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'evalglass' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
