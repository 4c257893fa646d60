"""What a Ray worker runs for EvalGlass: every shipped call, wrapped so it redacts like the driver.

Imported on the workers (EvalGlass must be installed there, at the driver's version: ``RayCluster.connect`` checks).
Kept free of Ray itself: the functions are plain, and Ray only carries them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from evalglass import redaction
from evalglass.core.checks import CheckResult
from evalglass.lanes.checkspec import CheckSpec
from evalglass.lanes.shipping import base_dir_here
from evalglass.version import __version__


def bind(fn: Callable[..., Any], declared: Iterable[str]) -> Callable[..., Any]:
    """``fn`` as a Ray task body: ``fn`` travels once, with the task's definition, rather than with every call.

    On the worker, the names the config declares secret are declared again, and the call runs under a redactor
    built from the worker's own environment: a secret the worker holds is redacted from what it sends back, and
    cut only after that (the driver redacts again with its own secrets before anything is written)."""
    names = tuple(declared)

    def shipped(*args: Any) -> Any:
        redaction.declare(names)
        with redaction.installed():
            return fn(*args)

    return shipped


def version() -> str:
    """The EvalGlass version a worker runs (a different one could score differently)."""
    return __version__


def example_check(spec: CheckSpec, base_dir: str, output: object, check_id: str, example_id: str) -> CheckResult:
    """One per-example check on this worker: the output materialised in a private folder here, its fingerprint
    taken here and recorded (``lanes.checkrun.run_example_check``), so the binding rules hold as locally."""
    from evalglass.lanes.checkrun import run_example_check

    return run_example_check(spec, base_dir_here(base_dir), output, check_id=check_id, example_id=example_id)


def metric_call(name: str, function: Callable[[Any], Any], example: Any) -> Any:
    """A host metric's built function on one example; a raise is that example's ``error``, as on the driver."""
    try:
        return function(example)
    except Exception as exc:
        from evalglass.engine.produce.scoring import metric_raised

        return metric_raised(name, exc)


__all__ = ["bind", "example_check", "metric_call", "version"]
