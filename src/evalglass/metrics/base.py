"""What every metric is: a declared spec (validated config) that builds a scorer from a :class:`BuildContext`.

The one contract, the same for every metric type: ``spec.build(context)`` returns the metric's scorer, in one of
two shapes, each for a reason the other cannot serve:

* a :class:`Scorer`, for every metric that scores in this process (builtins, host functions, per-example checks):
  ``one`` scores an Example, returning a :class:`~evalglass.core.score.Score` or a bare finite float as shorthand
  for scored+valid, and ``batch``, when the type has a batch path, scores a whole
  :class:`~evalglass.core.example.ExampleBatch` in one call. It is synchronous because a recorded run has no event
  loop and scores up to millions of rows: a coroutine per row would cost more than most builtins' whole work;
* an :class:`AsyncScorer`, for a metric that calls a model (``llm_judge``, declared ``live``): its call is network
  I/O that the live run's event loop awaits concurrently with every other call, and it returns what the model said
  beside the score (label, rationale, the call's usage), which the run records in ``outputs.jsonl`` and its token
  counts.

The engine calls nothing else: it never tests which type a metric is, nor which shape a sync metric was built with
(a metric without a batch path is a :class:`Scorer` whose ``batch`` is None).

A metric never returns 0.0 for a measurement it could not make: it returns a Score with status and diagnostic
instead. An answer it cannot read (not JSON, or without the field it reads) is not such a case: it is a measurement
of the answer (:mod:`evalglass.metrics.invalid`). Each type implements :meth:`MetricSpec.build_one` (its
per-example scorer, from what the context gives it) and, optionally, :meth:`MetricSpec.build_batch` (one call over
a batch, as parallel lists, that returns example for example exactly what the per-example function returns). The
engine never asks which type a spec is: what it needs to know beyond the scorer (runs concurrently, calls a model,
can be shipped to a cluster, runs a declared check, is calibrated against human labels, spends a model's tokens)
the spec says through the class attributes and methods below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalglass.core.endpoint import JudgeEndpoint
from evalglass.core.estimate import IntervalSpec
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT, FieldPathError, get_path, parse_path, value_getter, values_getter
from evalglass.core.fingerprint import as_set
from evalglass.core.outputparse import UnparsedOutput
from evalglass.core.outputshape import OutputShape
from evalglass.core.score import Score
from evalglass.core.stats import UNIT_SCALE, Direction, Reducer, ScaleSpec

if TYPE_CHECKING:
    from evalglass.core.checks import CheckResult
    from evalglass.lanes.callcache import CallStore
    from evalglass.lanes.checkspec import CheckSpec
    from evalglass.lanes.executor import Executor
    from evalglass.lanes.hostguard import BoundCode
    from evalglass.lanes.judge import JudgeResult
    from evalglass.lanes.judgespec import JudgeScale

MetricResult = float | Score
MetricFn = Callable[[Example], MetricResult]
#: A batch path: every example's result, in order; None (or a raise) sends the batch to the per-example function.
BatchMetricFn = Callable[[ExampleBatch], list[MetricResult] | None]
#: Where a per-example check's record goes (``checks.jsonl``); called from the threads checks run on.
CheckSink = Callable[["CheckResult"], None]
#: Runs a per-example check: ``(spec, base_dir, output, check_id=, example_id=) -> CheckResult``. By default
#: ``lanes.checkrun.run_example_check`` in this process; a cluster executor passes one that ships the call.
CheckRunner = Callable[..., "CheckResult"]


class JudgedTally(Protocol):
    """Counts a metric's judge notes, read from ``outputs.jsonl`` in dataset order, into scorecard fields."""

    def add(self, example_id: str, note: Mapping[str, Any]) -> None: ...

    def summary_fields(self) -> dict[str, BaseModel]: ...


@runtime_checkable
class AsyncScorer(Protocol):
    """The scorer of a metric that calls a model, and the port the live run drives judges through: awaited per
    sample row in the live run's event loop (which its clients belong to), and closed when the run ends. ``judge``
    returns the judged result (its ``score``, what the model said, the call's usage), which the live run records
    beside the score."""

    async def judge(self, example: Example) -> JudgeResult: ...

    async def aclose(self) -> None: ...


class Scorer:
    """What a metric that scores in this process is built into, whatever its type: the one shape the engine calls
    for it (see the module docstring for why a model-calling metric has the other, :class:`AsyncScorer`).

    ``one`` scores an example. ``batch``, when the type has a batch path, scores a whole batch in one call and
    returns, example for example, the very result ``one`` returns; when it returns None, raises or miscounts, the
    engine scores that batch with ``one``, so a batch path can never change an outcome. None: no batch path.
    Calling the scorer scores one example."""

    __slots__ = ("batch", "one")

    def __init__(self, one: MetricFn, batch: BatchMetricFn | None = None) -> None:
        self.one = one
        self.batch = batch

    def __call__(self, example: Example) -> MetricResult:
        return self.one(example)


#: What ``MetricSpec.build`` returns: a :class:`Scorer`, or an :class:`AsyncScorer` for a ``live`` metric.
AnyScorer = Scorer | AsyncScorer


class MetricShipper(Protocol):
    """A cluster executor, as a metric that can be shipped (:attr:`MetricSpec.shippable`) sees it: every call of
    the built function, or every per-example check, runs as a task there."""

    def metric(self, name: str, function: MetricFn) -> MetricFn: ...

    def check_runner(self, name: str) -> CheckRunner: ...


class OnInvalidOutput(StrEnum):
    """What a metric does with an answer it cannot read (not JSON under ``task.parse: json``, or without the field
    the metric reads): ``worst`` scores it the worst value of the metric's scale, a measured failure of the system
    under test; ``exclude`` leaves it out of the value, as a measurement that does not exist."""

    WORST = "worst"
    EXCLUDE = "exclude"


@dataclass(frozen=True)
class BuildContext:
    """Everything building a metric may use, filled by the engine the same way for every metric type.

    Redaction is not in it on purpose: a scorer redacts through ``evalglass.redaction.current()`` when it runs, so
    a call shipped to a cluster worker is redacted with the worker's redactor (secrets the driver never saw)."""

    #: The config's folder: relative paths in a spec (schemas, host modules, rubrics) resolve against it.
    base_dir: Path
    #: The metric's name under ``metrics:`` (a shipped call is named by it).
    name: str = ""
    #: The checks the config declares (``checks:``), for a metric that runs one per example.
    checks: Mapping[str, CheckSpec] = field(default_factory=dict)
    #: Where per-example check records go; None: nowhere.
    check_sink: CheckSink | None = None
    #: A live run's executor and call cache (a metric that calls a model needs the executor); None elsewhere.
    executor: Executor | None = None
    cache: CallStore | None = None
    #: The cluster a shippable metric's calls run on; None: this process.
    shipper: MetricShipper | None = None
    #: Which way the metric improves (the direction of the gates on it): which end of its scale an answer it cannot
    #: read scores under ``on_invalid_output: worst``. None when its gates disagree: no end is the worst.
    direction: Direction | None = Direction.HIGHER_IS_BETTER
    #: The record's fields holding a recorded output of some variant (the run's ``gold_excluded_fields``): a judge
    #: is shown the record without them, as gold sees it (``core.goldfields.record_without``), and the output it
    #: grades as ``output`` only.
    output_fields: tuple[str, ...] = ()
    #: The record's fields host code scoring this task (a ``python`` metric) is not shown: every other variant's
    #: recorded output (``Config.others_output_fields``). Its own answer stays; gold binds the rest.
    others_outputs: tuple[str, ...] = ()
    #: For a metric a gate declares: the project's folder (the repository holding the config folder) and the files
    #: the gate binds, which alone of the project's files its host code may load (``lanes.hostguard``). None:
    #: an ungated metric, whose code nothing binds.
    bound_code: BoundCode | None = None


@dataclass(frozen=True)
class CalibrationSubject:
    """What a calibration record names for a metric calibrated against human labels (a judge): the model that
    answers, its rubric (a path relative to the config's folder, whose bytes the calibration is bound to) and the
    scale the labels are on."""

    model: str
    rubric: str
    scale: JudgeScale


class MetricSpec(BaseModel):
    """Fields shared by every metric type. Subclasses add ``type: Literal[...]`` and their own parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    #: Human-readable summary of what a metric type measures; shown by ``evalglass explain``.
    summary: ClassVar[str] = ""
    #: True for metrics that score 1 for a pass and 0 for a fail (the examples behind a number are then "fail =
    #: a value of 0" when no gate gives a threshold).
    binary: ClassVar[bool] = False
    #: True for metrics whose calls wait on something outside the process (a command, a model): the engine runs
    #: them concurrently across examples. Pure in-process metrics stay sequential, which is faster for them.
    parallel: ClassVar[bool] = False
    #: True for metrics that call a model: :meth:`build` needs the run's executor and returns an
    #: :class:`AsyncScorer`, so a config with one is a live run, which builds it inside its event loop.
    live: ClassVar[bool] = False
    #: True for metrics whose per-example calls a cluster executor ships (host code, commands): builtins cost less
    #: to compute than to ship, and model calls are I/O that stays on the driver.
    shippable: ClassVar[bool] = False
    #: True for metrics that measure the output (or its ``field``): on a dataset whose records may lack content
    #: (traces), such a metric is ``non_evaluable`` (``content_not_captured``) where the output was not captured.
    #: Host code receives the whole example and the record's ``not_captured`` list, and decides what it reads.
    measures_output: ClassVar[bool] = True
    #: The list fields this metric reads as a set (an ``enum``'s ``values``): their order and repeats are left out of
    #: the fingerprint (:func:`~evalglass.core.fingerprint.as_set`), so reordering one stales no approval.
    unordered: ClassVar[tuple[str, ...]] = ()
    #: True for metrics whose gates stand on their agreement with human labels (an LLM judge): ``evalglass
    #: calibrate NAME`` measures it on a labels file (the :meth:`calibration_subject`'s scale) with the scorer a live
    #: run builds, a run reads the record bound to :meth:`calibration_fingerprint`, and the ledger's ``judges:`` says
    #: what agreement the gates need. Such a metric is ``live``.
    calibrated: ClassVar[bool] = False
    #: True for a metric whose score is a function of the example (its record and output) and its definition files
    #: alone, computed in this process: no host code, command, model, clock or randomness. ``verify`` scores such a
    #: metric again from the outputs a run kept and compares every score (``engine.jobs.rescore``); any other
    #: metric's scores it can only check for consistency. False by default: a new type is re-scored only once it
    #: says so.
    deterministic: ClassVar[bool] = False
    #: What the metric reads from the whole output (no ``field``): ``answer`` (text, or a value parsed from it),
    #: ``trajectory`` (a conversation), ``any``. The config refuses a metric whose reading cannot meet what the task
    #: produces (``engine.spec.outputfields``): a text metric on an agent's trajectory scores nothing it means.
    reads: ClassVar[OutputShape] = OutputShape.ANY

    description: str | None = Field(default=None, description="What this metric tells you, in your words.")
    field: str | None = Field(
        default=None,
        description="Dotted path inside the output to measure (e.g. 'answer.value'); default: the whole output.",
    )
    reference: str | None = Field(
        default=None,
        description="Dotted path in the dataset record holding the gold value; makes this a reference metric.",
    )

    reducer: Reducer = Field(
        default=Reducer.MEAN,
        description="How several samples of one example become one score: mean, majority, max, min, pass_at_k, "
        "at_least_k.",
    )
    k: int | None = Field(default=None, ge=1, description="k for pass_at_k and at_least_k.")
    interval: IntervalSpec = Field(default_factory=IntervalSpec, description="How the confidence interval is computed.")
    on_invalid_output: OnInvalidOutput = Field(
        default=OnInvalidOutput.WORST,
        description="An answer the metric cannot read (not JSON under task.parse: json, without the field it reads, "
        "or of a type it cannot measure, such as null or '0.9' for numeric_bounds): 'worst' scores it the worst value "
        "of the metric's scale (a measured failure); 'exclude' leaves it out of the value (an error or non_evaluable "
        "score).",
    )

    @model_validator(mode="after")
    def _reducer_k(self) -> MetricSpec:
        if self.reducer.needs_k != (self.k is not None):
            raise ValueError(
                f"reducer {self.reducer.value} needs k"
                if self.reducer.needs_k
                else "k applies only to pass_at_k and at_least_k"
            )
        return self

    @field_validator("field", "reference")
    @classmethod
    def _valid_path(cls, path: str | None) -> str | None:
        if path is not None:
            try:
                parse_path(path)
            except FieldPathError as exc:
                raise ValueError(str(exc)) from None
        return path

    def output_read(self) -> OutputShape:
        """What this metric reads of the whole output (:attr:`reads`, unless its options say more: a judge shown a
        transcript reads a trajectory)."""
        return self.reads

    @property
    def uses_reference(self) -> bool:
        """Reference metrics compare with a gold field and may gate only on a validated dataset."""
        return self.reference is not None

    def build(self, context: BuildContext) -> AnyScorer:
        """The scorer, built once per run: the one way every metric type is built.

        Raises :class:`~evalglass.metrics.errors.MetricLoadError` (one line) when it cannot be built.
        """
        one = self.build_one(context)
        if isinstance(one, AsyncScorer):
            return one
        return Scorer(one, self.build_batch(one))

    def build_one(self, context: BuildContext) -> MetricFn | AsyncScorer:
        """This type's per-example scorer (see :meth:`build`, which adds the batch path)."""
        raise NotImplementedError

    def check_references(self) -> Mapping[str, str]:
        """The declared checks (under ``checks:``) this metric runs per example, each under the key of this spec
        that names it (so a broken reference is reported at that key)."""
        return {}

    def build_batch(self, one: MetricFn) -> BatchMetricFn | None:
        """Optionally, a function scoring a whole batch, given the per-example function ``one`` this spec built.

        Its contract: for every example, in order, the very result ``one`` returns (equal floats, equal Scores).
        It may call ``one`` for any example it does not handle itself. If it raises, the engine scores that batch
        with ``one``, example by example, so a batch function can never change an outcome. None: no batch path.
        """
        return None

    def for_format(self, dataset_format: str | None) -> Self:
        """This spec as it reads a dataset of ``dataset_format`` (``dataset.format``; None: by the file's extension),
        with any default that belongs to the format filled in, so the fingerprint binds it. The config calls it once;
        most metrics read every format alike and return themselves."""
        return self

    def record_templates(self) -> dict[str, str]:
        """The templates this metric renders with the example's record (a judge's prompt and system message), by
        what they are (``prompt``, ``system template``): the fields they read by name are inputs, which no recorded
        output may be (``core.goldfields``). None for a metric that renders none."""
        return {}

    def record_paths(self) -> dict[str, str]:
        """The record paths this metric reads by name outside a template (a judge's ``transcript.input``), by what
        they are: inputs too, like the fields :meth:`record_templates` read."""
        return {}

    def referenced_files(self, base_dir: Path) -> tuple[Path, ...]:
        """Files whose contents define this metric (a schema, a host module); approvals bind their hashes too."""
        return ()

    def imported_files(self, base_dir: Path) -> tuple[Path, ...]:
        """Host code the metric runs beyond :meth:`referenced_files`: the module a ``package.module`` reference
        resolves to and the project's modules the metric's code imports (``lanes.hostimports``); approvals bind
        their hashes too, under a key of their own so a metric that imports none keeps its fingerprint."""
        return ()

    def host_reference(self) -> str | None:
        """The host code this metric runs, as the config names it (``file.py:function``, a check's name), or None
        for a builtin: the name the supervisor gives when the process dies while the metric runs
        (evalglass/hostwatch.py)."""
        return None

    def host_functions(self) -> tuple[str, ...]:
        """The host Python functions this metric calls: they run in host worker processes, whose fork server a run
        starts early when there are any (a check runs a command, not a function here)."""
        return ()

    def value_scale(self) -> ScaleSpec | None:
        """The range this metric's values can take (builtins score in [0, 1]); None when unbounded."""
        return UNIT_SCALE

    def tokens_model(self) -> str | None:
        """The model whose tokens this metric's calls spend (a live run counts them, and prices them from
        ``prices:``), or None for a metric that calls no model."""
        return None

    def key_variables(self) -> tuple[str, ...]:
        """The environment variables holding the keys of the models this metric calls (secrets by declaration)."""
        return ()

    def judged_tally(self) -> JudgedTally | None:
        """For a metric whose judgement is made of several calls (a jury's votes, a pairwise judge's compared pairs):
        where what ``outputs.jsonl`` keeps of them is counted into what the scorecard reports beside the metric
        (agreement, position bias, win rates); None for every other metric."""
        return None

    def calibration_subject(self) -> CalibrationSubject:
        """What a calibration of this metric names and is measured on; only for a ``calibrated`` metric."""
        raise NotImplementedError(f"{type(self).__name__} is not calibrated")

    def calibration_fingerprint(self, rubric_sha256: str) -> str:
        """What a calibration of this metric (and so its standing in a run) is bound to, from the hex SHA-256 of its
        rubric's bytes, read now or as a run record keeps it (``verify``); only for a ``calibrated`` metric."""
        raise NotImplementedError(f"{type(self).__name__} is not calibrated")

    def judge_endpoint(self) -> JudgeEndpoint:
        """Where this metric's judge is served, canonical (``core.endpoint``): one text, or one per jury member. A
        gate approval binds it (``judge_endpoint``) and a calibration records it; only for a ``calibrated``
        metric."""
        raise NotImplementedError(f"{type(self).__name__} is not calibrated")

    def fingerprint_payload(self) -> dict[str, Any]:
        """The canonical definition an approval is bound to.

        Prose (``description``) and the interval settings are excluded: neither changes the value a point gate
        compares. A ``lower_bound`` gate adds the interval settings to its own fingerprint. The default reducer is
        left out so single-sample metrics keep the fingerprint they had before epochs existed.
        """
        payload = self.model_dump(mode="json", exclude={"description", "interval"}, exclude_none=True)
        if self.reducer is Reducer.MEAN:
            payload.pop("reducer")
        for name in self.unordered:
            if isinstance(payload.get(name), list):
                payload[name] = as_set(payload[name])
        return without_default_invalid_output(payload)

    def worst_value(self, direction: Direction) -> float | None:
        """The value an answer this metric cannot read scores (``on_invalid_output: worst``): the end of its scale
        that is worse in ``direction``; None without a scale (nothing is the worst of an unbounded range)."""
        scale = self.value_scale()
        if scale is None:
            return None
        return scale.min if direction is Direction.HIGHER_IS_BETTER else scale.max


def without_default_invalid_output(payload: dict[str, Any]) -> dict[str, Any]:
    """A fingerprint payload without ``on_invalid_output`` at its default: the default's change of behaviour is
    carried by the builtin types' versions (``metrics.versions``), so a definition that does not set it keeps the
    fingerprint a baseline run was recorded under; setting ``exclude`` is a different definition."""
    if payload.get("on_invalid_output") == OnInvalidOutput.WORST.value:
        payload.pop("on_invalid_output")
    return payload


def measured_target(spec: MetricSpec) -> Callable[[Example], Any]:
    """A getter for the part of the output the spec measures; ABSENT when the path is missing, or when the output
    is text ``task.parse: json`` could not parse (it has no parts to measure)."""
    if spec.field is None:
        return _parsed_output
    path = parse_path(spec.field)
    return lambda example: get_path(example.output, path)


def _parsed_output(example: Example) -> Any:
    output = example.output
    return ABSENT if type(output) is UnparsedOutput else output


def reference_getter(spec: MetricSpec) -> Callable[[Example], Any]:
    """A getter for the gold value; returns ABSENT when the record has no reference."""
    if spec.reference is None:
        raise ValueError("reference_getter needs a spec with a reference path")
    path = parse_path(spec.reference)
    return lambda example: get_path(example.fields, path)


def missing_reference(spec: MetricSpec, example: Example) -> Score:
    return Score.non_evaluable(
        "reference_missing",
        f"example {example.id} has no reference at '{spec.reference}'",
    )


__all__ = [
    "ABSENT",
    "AnyScorer",
    "AsyncScorer",
    "BatchMetricFn",
    "BuildContext",
    "CalibrationSubject",
    "CheckRunner",
    "CheckSink",
    "MetricFn",
    "MetricResult",
    "MetricShipper",
    "MetricSpec",
    "OnInvalidOutput",
    "Scorer",
    "measured_target",
    "missing_reference",
    "reference_getter",
    "value_getter",
    "values_getter",
]
