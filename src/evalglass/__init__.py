"""EvalGlass: evaluations of AI applications whose green means one specific, approved thing.

The public Python API is what ``__all__`` lists: one function per command of the command line, and the types they
return and raise (see docs/python-api.md)::

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

#: Where each public name lives: the functions (one per command of the command line) and the types they return or
#: raise. docs/python-api.md documents each; tests/test_api_docs.py holds that list, ``__all__`` below and
#: ``evalglass.api.__all__`` (the names living there) equal.
_HOMES = {
    **dict.fromkeys(
        (
            "CheckRun",
            "ExampleListing",
            "Explained",
            "ImportedRuns",
            "ReportWritten",
            "RunResult",
            "calibrate",
            "check",
            "compare",
            "explain",
            "export_otlp",
            "export_recorded",
            "import_runs",
            "init",
            "list_examples",
            "load_run",
            "preflight",
            "recorded_runs",
            "run",
            "schema",
            "verify",
            "write_report",
        ),
        "evalglass.api",
    ),
    "CalibrationOutcome": "evalglass.engine.jobs.calibrate",
    "Comparison": "evalglass.core.compare",
    "Exported": "evalglass.engine.explore.otlpexport",
    "HistoryEntry": "evalglass.history.query",
    "OptionError": "evalglass.errors",
    "Preflight": "evalglass.core.preflight",
    "RunInterrupted": "evalglass.engine.jobs.pipeline",
    "SetupError": "evalglass.errors",
    "VerifyReport": "evalglass.engine.jobs.verify",
}
# Written out for type checkers and linters (a computed list is invisible to them).
__all__ = [
    "CalibrationOutcome",
    "CheckRun",
    "Comparison",
    "ExampleListing",
    "Explained",
    "Exported",
    "HistoryEntry",
    "ImportedRuns",
    "OptionError",
    "Preflight",
    "ReportWritten",
    "RunInterrupted",
    "RunResult",
    "SetupError",
    "VerifyReport",
    "__version__",
    "calibrate",
    "check",
    "compare",
    "explain",
    "export_otlp",
    "export_recorded",
    "import_runs",
    "init",
    "list_examples",
    "load_run",
    "preflight",
    "recorded_runs",
    "run",
    "schema",
    "verify",
    "write_report",
]

if TYPE_CHECKING:
    from typing import Any

    from evalglass.api import (
        CheckRun,
        ExampleListing,
        Explained,
        ImportedRuns,
        ReportWritten,
        RunResult,
        calibrate,
        check,
        compare,
        explain,
        export_otlp,
        export_recorded,
        import_runs,
        init,
        list_examples,
        load_run,
        preflight,
        recorded_runs,
        run,
        schema,
        verify,
        write_report,
    )
    from evalglass.core.compare import Comparison
    from evalglass.core.preflight import Preflight
    from evalglass.engine.explore.otlpexport import Exported
    from evalglass.engine.jobs.calibrate import CalibrationOutcome
    from evalglass.engine.jobs.pipeline import RunInterrupted
    from evalglass.engine.jobs.verify import VerifyReport
    from evalglass.errors import OptionError, SetupError
    from evalglass.history.query import HistoryEntry


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
