"""``python``: a metric written by the host as a plain Python function.

Calling rule. The function's parameters are filled by name from this fixed set, and only what it asks for is
passed:

* ``output``    - the measured target: the output, or the value at ``field`` inside it;
* ``record``    - the dataset record (a mapping; treat it as read-only), as gold binds it, with the task's own
  recorded output: in a run with variants, another variant's recorded output is not in it (gold leaves it out, so
  a metric reading it would decide on a value no approval binds);
* ``reference`` - the value at the spec's ``reference`` path (only when the spec sets one);
* ``example``   - the whole :class:`~evalglass.core.example.Example` (id, line, sample...), its record as above.

A ``**kwargs`` parameter receives all of them. Any other parameter needs a default, or loading fails.

Before the call. A record without the ``reference`` is ``non_evaluable`` and the function is not called. Nor is it
for an answer it cannot be given (text ``task.parse: json`` could not parse, an output without ``field``): that is
a wrong answer, scored by ``metrics.invalid`` at the worst end of the declared ``scale`` (left out when there is no
scale to have an end). Every other answer is the function's to judge, a bad one included.

Return rule. A finite ``int``/``float`` (scored, valid), a :class:`~evalglass.core.score.Score` (any legal
state), or ``(None, "reason")`` to decline (``non_evaluable``, code ``host_declined``). Anything else,
including ``bool``, NaN, infinity, a string and a bare ``None`` (usually a forgotten ``return``), is an
``error`` score with code ``host_bad_return``. An exception (or ``sys.exit``) inside the function is an
``error`` score with code ``host_raised``; it never stops the run and never becomes 0.0. ``KeyboardInterrupt``
still stops the run.

Where it runs. Never in this process, which measures and decides: the function is loaded and called in a worker
process of its source's own (``metrics/hostscoring.py``), a batch of examples per message, and each answer is checked
here by :func:`interpret` as a return value is. A call whose worker ends (``os._exit``, a crash, a signal) is an
``error`` score with code ``host_worker_lost``. This module decides what the function is given and what its answer
comes to (:func:`call_host`, run in the worker); no host code runs here.
"""

from __future__ import annotations

import inspect
import math
import numbers
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from evalglass import redaction
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.goldfields import record_without
from evalglass.core.score import Score, score_violation
from evalglass.core.stats import ScaleSpec
from evalglass.lanes.hostimports import reference_host_files
from evalglass.lanes.hostload import HostFunction, is_file_reference, load_function, split_reference
from evalglass.metrics.base import (
    ABSENT,
    BuildContext,
    MetricFn,
    MetricResult,
    MetricSpec,
    Scorer,
    measured_target,
    missing_reference,
    reference_getter,
)
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.hostscoring import metric_worker
from evalglass.metrics.invalid import invalid_answer
from evalglass.metrics.support import one_line, preview

ARGUMENT_NAMES = ("output", "record", "reference", "example")
_TRACEBACK_CHARS = 2000
_RETURN_HINT = "return a finite number, a Score, or (None, 'reason') to decline"


class PythonMetricSpec(MetricSpec):
    """A host function named ``"path/to/file.py:name"`` (relative to the config) or ``"pkg.mod:name"``."""

    summary: ClassVar[str] = "Whatever the host's Python function returns: a number, a Score, or a declined example."
    #: Host code may be slow or need the cluster's resources: a cluster executor runs each call as a task.
    shippable: ClassVar[bool] = True
    measures_output: ClassVar[bool] = False

    type: Literal["python"] = "python"
    function: str = Field(
        description="'path/to/file.py:function' (relative to the config) or 'package.module:function'."
    )
    scale: ScaleSpec | None = Field(
        default=None,
        description="The range the function's values can take, e.g. {min: 1, max: 5}; enables sensitivity bounds.",
    )

    def value_scale(self) -> ScaleSpec | None:
        return self.scale

    def fingerprint_payload(self) -> dict[str, Any]:
        """With a declared scale, ``on_invalid_output`` decides what an answer the function never sees scores; host
        code has no version to bump when that rule changes, so the setting is always part of the definition."""
        payload = super().fingerprint_payload()
        if self.scale is not None:
            payload["on_invalid_output"] = self.on_invalid_output.value
        return payload

    @field_validator("function")
    @classmethod
    def _reference_shape(cls, function: str) -> str:
        split_reference(function)
        return function

    def referenced_files(self, base_dir: Path) -> tuple[Path, ...]:
        """Files whose contents define this metric; an approval should also bind their hashes."""
        source, _ = split_reference(self.function)
        return ((base_dir / source).resolve(),) if is_file_reference(source) else ()

    def imported_files(self, base_dir: Path) -> tuple[Path, ...]:
        """The module a ``package.module:name`` reference resolves to, as the run's import finds it, and the host
        modules the metric's file or module imports, transitively. Metrics leave ``sys.path`` alone, but a python
        lane or agent tool named by module puts the config folder first on it once built (after the metrics), and
        an import the metric makes when called then resolves there: both lookups are bound (a file only one of
        them finds is bound too)."""
        plain = reference_host_files(self.function, base_dir)
        return tuple(dict.fromkeys((*plain, *reference_host_files(self.function, base_dir, search_base=True))))

    def host_reference(self) -> str | None:
        return self.function

    def build(self, context: BuildContext) -> Scorer:
        """The function runs in a worker process (``metrics/hostscoring.py``), never in this one: one example per
        message for ``one``, a whole batch per message for the batch path. With a cluster, every call is shipped and
        the cluster worker loads the function by its reference (the parameters are read in a local worker)."""
        worker = metric_worker(self.function, context.base_dir)
        index, wanted = worker.load(self.function, self.reference is not None)
        prepared = self._prepare(context, wanted)
        if context.shipper is not None:
            del worker  # only its answer to the load was needed: the calls run on the cluster
            host = InProcessFunction(self.function, str(context.base_dir), wanted)

            def shipped_python_metric(example: Example) -> MetricResult:
                given = prepared(example)
                return host(given) if isinstance(given, dict) else given

            return Scorer(context.shipper.metric(context.name, shipped_python_metric))

        def python_metric(example: Example) -> MetricResult:
            given = prepared(example)
            if not isinstance(given, dict):
                return given
            return worker.score(index, {name: [given[name]] for name in wanted}, 1)[0]

        def python_metric_batch(batch: ExampleBatch) -> list[MetricResult]:
            results: list[Any] = []
            columns: dict[str, list[Any]] = {name: [] for name in wanted}
            called: list[int] = []
            for example in batch.examples():
                given = prepared(example)
                if isinstance(given, dict):
                    called.append(len(results))
                    for name in wanted:
                        columns[name].append(given[name])
                results.append(given)
            if called:
                for position, result in zip(called, worker.score(index, columns, len(called)), strict=True):
                    results[position] = result
            return results

        return Scorer(python_metric, python_metric_batch)

    def build_one(self, context: BuildContext) -> MetricFn:
        return self.build(context).one

    def _prepare(
        self, context: BuildContext, wanted: tuple[str, ...]
    ) -> Callable[[Example], MetricResult | dict[str, Any]]:
        """What the function is given for an example (its arguments, by name), or the example's result when the
        function is not called (no reference, an answer it cannot be given): no host code runs here."""
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        gold = reference_getter(self) if self.reference is not None else None
        shown = shown_example(context.others_outputs)
        wants_example = "example" in wanted

        def prepared(example: Example) -> MetricResult | dict[str, Any]:
            reference: Any = None
            if gold is not None:
                reference = gold(example)
                if reference is ABSENT:
                    return missing_reference(self, example)
            output = target(example)
            if output is ABSENT:
                return invalid(example)
            example = shown(example)
            return {
                "output": output,
                "record": example.fields,
                "reference": reference,
                "example": example if wants_example else None,
            }

        return prepared


class InProcessFunction:
    """A python metric's function called in this process, loaded on its first call: what a cluster worker runs for
    a shipped metric (it pickles by reference, so the driver never imports the function)."""

    def __init__(self, reference: str, base_dir: str, wanted: tuple[str, ...]) -> None:
        self.reference, self.base_dir, self.wanted = reference, base_dir, wanted
        self._function: HostFunction | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "_function": None}

    def __call__(self, given: dict[str, Any]) -> MetricResult:
        from evalglass.lanes.shipping import base_dir_here

        if self._function is None:
            self._function = load_function(self.reference, base_dir_here(self.base_dir))
        return call_host(self._function, {name: given[name] for name in self.wanted})


def call_host(function: HostFunction, arguments: dict[str, Any]) -> MetricResult:
    """One call of a host metric function and what it comes to (the calling rule's return rule); the one place
    a python metric's function is called, in its worker process or on a cluster worker. ``KeyboardInterrupt``
    propagates."""
    try:
        result = function(**arguments)
    except (Exception, SystemExit) as exc:
        return raised(exc)
    return interpret(result)


def shown_example(hidden: tuple[str, ...]) -> Callable[[Example], Example]:
    """The example as host code scoring one task is given it: its record without ``hidden`` (another variant's
    recorded answers, which gold leaves out and a pull request re-records freely: ``core.goldfields.
    others_outputs``), from a copy; the example itself when nothing is hidden (a run without variants)."""
    if not hidden:
        return _same
    without = record_without(hidden)
    return lambda example: replace(example, fields=without(example.fields))


def _same(example: Example) -> Example:
    return example


def wanted_arguments(signature: inspect.Signature, where: str, *, has_reference: bool) -> tuple[str, ...]:
    """The argument names to pass, checked once at build time against the calling rule."""
    offered = tuple(name for name in ARGUMENT_NAMES if has_reference or name != "reference")
    wanted: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_KEYWORD:
            return offered
        if parameter.kind is parameter.VAR_POSITIONAL or parameter.default is not parameter.empty:
            if parameter.name in offered and parameter.kind is not parameter.POSITIONAL_ONLY:
                wanted.append(parameter.name)
            continue
        problem = _unfillable(parameter, has_reference)
        if problem:
            raise MetricLoadError(f"python metric: {where} {problem}")
        wanted.append(parameter.name)
    if not wanted:
        raise MetricLoadError(
            f"python metric: {where} takes none of {', '.join(ARGUMENT_NAMES)}; "
            "declare at least one, e.g. 'def metric(output)'"
        )
    return tuple(wanted)


def _unfillable(parameter: inspect.Parameter, has_reference: bool) -> str:
    """Why a required parameter cannot be given a value, or an empty string when it can."""
    name = parameter.name
    if parameter.kind is parameter.POSITIONAL_ONLY:
        return f"has positional-only parameter {name!r}, but arguments are passed by keyword; remove the '/'"
    if name not in ARGUMENT_NAMES:
        return (
            f"has parameter {name!r}, which cannot be filled: parameters are matched by name from "
            f"{', '.join(ARGUMENT_NAMES)}; rename it or give it a default"
        )
    if name == "reference" and not has_reference:
        return "takes 'reference' but the metric sets no 'reference:' path; add one or drop the parameter"
    return ""


def interpret(result: Any) -> MetricResult:
    """Turn whatever the host returned into a legal result, or an ``error`` saying what was wrong with it."""
    if type(result) is float and math.isfinite(result):
        return result
    if isinstance(result, Score):
        why = score_violation(result.status, result.validity, result.value, bool(result.diagnostics))
        return result if why is None else bad_return(f"returned an illegal Score ({why})", result)
    if isinstance(result, bool) or type(result).__name__ in {"bool", "bool_"}:
        return bad_return("returned a bool, which is not a measurement; return 1.0 or 0.0", result)
    if isinstance(result, numbers.Real):
        return _real(result)
    if isinstance(result, tuple) and len(result) == 2 and result[0] is None:
        reason = result[1]
        if isinstance(reason, str) and reason.strip():
            return Score.non_evaluable("host_declined", one_line(reason))
        return bad_return("declined without a reason; return (None, 'a non-empty reason')", result)
    if result is None:
        return bad_return(f"returned None (a missing 'return'?); {_RETURN_HINT}", result)
    return bad_return(f"returned a {type(result).__name__}; {_RETURN_HINT}", result)


def _real(result: numbers.Real) -> MetricResult:
    try:
        value = float(result)
    except (OverflowError, TypeError, ValueError):
        return bad_return("returned a number that does not fit a float", result)
    if not math.isfinite(value):
        return bad_return(f"returned {value!r}; a measurement must be finite", result)
    return value


def bad_return(message: str, result: Any) -> Score:
    return Score.error("host_bad_return", f"the metric function {message}", detail=preview(result))


def raised(exc: BaseException) -> Score:
    """``host_raised`` with the exception type and message, and the traceback tail as detail (both redacted
    before they are cut)."""
    redactor = redaction.current()
    said = redactor.text(str(exc))
    text = one_line(said)
    message = f"{type(exc).__name__}: {text}" if said.strip() else type(exc).__name__
    tail = "".join(traceback.format_exception(exc)[-6:]).strip()
    detail = redactor.tail(tail, _TRACEBACK_CHARS, "")
    return Score.error("host_raised", f"the metric function raised {message}", detail=detail)
