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
process of its source's own (``metrics/hostscoring.py``; a gated metric's is its own, shared with no other metric),
a batch of examples per message, and each answer is checked here by ``hostrules.decoded``. A call whose worker ends
(``os._exit``, a crash, a signal) is an ``error`` score with code ``host_worker_lost``; the calls of its batch
answered before it keep their answers and the rest go to a fresh worker, each call made once. This module decides
what the function is given; what its answer comes to is decided where it is called
(``lanes.metricworker.call_metric``, in the worker); no host code runs here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.goldfields import record_without
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
from evalglass.metrics.hostrules import call_host
from evalglass.metrics.hostscoring import DEFAULT_TIMEOUT_S, metric_worker
from evalglass.metrics.invalid import invalid_answer


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
    timeout: float | None = Field(
        default=DEFAULT_TIMEOUT_S,
        gt=0,
        description="Seconds per call (60 by default; null: no limit). A call over it is an error score, "
        "code metric_timeout, and its worker process is replaced.",
    )

    data_files: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Files (relative to the config) the function reads when it runs: a gate on the metric binds "
        "their bytes as it binds the function's file; a gated metric may read no other file of the project.",
    )

    def value_scale(self) -> ScaleSpec | None:
        return self.scale

    def fingerprint_payload(self) -> dict[str, Any]:
        """With a declared scale, ``on_invalid_output`` decides what an answer the function never sees scores; host
        code has no version to bump when that rule changes, so the setting is always part of the definition."""
        payload = super().fingerprint_payload()
        # How long a call may take decides only whether it is an error, never a value: operational, as a lane's.
        payload.pop("timeout", None)
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
        own = ((base_dir / source).resolve(),) if is_file_reference(source) else ()
        return (*own, *((base_dir / path).resolve() for path in self.data_files or ()))

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

    def host_functions(self) -> tuple[str, ...]:
        return (self.function,)

    def build(self, context: BuildContext) -> Scorer:
        """The function runs in a worker process (``metrics/hostscoring.py``), never in this one: one example per
        message for ``one``, a whole batch per message for the batch path. With a cluster, every call is shipped and
        the cluster worker loads the function by its reference (the parameters are read in a local worker), unless
        a gate binds the metric (``bound_code``): a cluster worker could not hold its guard (``lanes.hostguard``)."""
        worker = metric_worker(self.function, context.base_dir, context.bound_code, context.name)
        index, wanted = worker.load(self.function, self.reference is not None)
        prepared = self._prepare(context, wanted)
        timeout = self.timeout
        if context.shipper is not None and context.bound_code is None:  # a guarded metric is never shipped
            del worker  # only its answer to the load was needed: the calls run on the cluster
            host = InProcessFunction(self.function, str(Path(context.base_dir).resolve()), wanted)

            def shipped_python_metric(example: Example) -> MetricResult:
                given = prepared(example)
                return host(given) if isinstance(given, dict) else given

            return Scorer(context.shipper.metric(context.name, shipped_python_metric))

        def python_metric(example: Example) -> MetricResult:
            given = prepared(example)
            if not isinstance(given, dict):
                return given
            return worker.score(index, {name: [given[name]] for name in wanted}, 1, timeout)[0]

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
                for position, result in zip(called, worker.score(index, columns, len(called), timeout), strict=True):
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
