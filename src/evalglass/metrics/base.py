"""What every metric is: a declared spec (validated config) that builds a function from an Example to a result.

A result is a :class:`~evalglass.core.score.Score`, or a bare finite float as shorthand for scored+valid (the hot
path for builtins on large datasets). A metric never returns 0.0 for a measurement it could not make: it returns a
Score with status and diagnostic instead.

A spec may also build a *batch* function (:meth:`MetricSpec.build_batch`): one call over an
:class:`~evalglass.core.example.ExampleBatch` (examples as parallel lists, no object per row) that returns, example
for example, exactly what the per-example function returns. Builtins use it to keep their common case in one tight
loop and hand anything unusual to the per-example function.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalglass.core.estimate import UNIT_SCALE, IntervalSpec, ScaleSpec
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT, FieldPathError, get_path, parse_path, value_getter, values_getter
from evalglass.core.score import Score
from evalglass.core.stats import Reducer

MetricResult = float | Score
MetricFn = Callable[[Example], MetricResult]
BatchMetricFn = Callable[[ExampleBatch], list[MetricResult]]


class MetricSpec(BaseModel):
    """Fields shared by every metric type. Subclasses add ``type: Literal[...]`` and their own parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    #: Human-readable summary of what a metric type measures; shown by ``evalglass explain``.
    summary: ClassVar[str] = ""
    #: True for metrics whose calls wait on something outside the process (a command, a model): the engine runs
    #: them concurrently across examples. Pure in-process metrics stay sequential, which is faster for them.
    parallel: ClassVar[bool] = False

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

    @property
    def uses_reference(self) -> bool:
        """Reference metrics compare with a gold field and may gate only on a validated dataset."""
        return self.reference is not None

    def build(self, base_dir: Path) -> MetricFn:
        """Compile the spec into a fast per-example function. ``base_dir`` resolves relative file paths."""
        raise NotImplementedError

    def build_batch(self, one: MetricFn) -> BatchMetricFn | None:
        """Optionally, a function scoring a whole batch, given the per-example function ``one`` this spec built.

        Its contract: for every example, in order, the very result ``one`` returns (equal floats, equal Scores).
        It may call ``one`` for any example it does not handle itself. If it raises, the engine scores that batch
        with ``one``, example by example, so a batch function can never change an outcome. None: no batch path.
        """
        return None

    def referenced_files(self, base_dir: Path) -> tuple[Path, ...]:
        """Files whose contents define this metric (a schema, a host module); approvals bind their hashes too."""
        return ()

    def value_scale(self) -> ScaleSpec | None:
        """The range this metric's values can take (builtins score in [0, 1]); None when unbounded."""
        return UNIT_SCALE

    def fingerprint_payload(self) -> dict[str, Any]:
        """The canonical definition an approval is bound to.

        Prose (``description``) and the interval settings are excluded: neither changes the value a point gate
        compares. A ``lower_bound`` gate adds the interval settings to its own fingerprint. The default reducer is
        left out so single-sample metrics keep the fingerprint they had before epochs existed.
        """
        payload = self.model_dump(mode="json", exclude={"description", "interval"}, exclude_none=True)
        if self.reducer is Reducer.MEAN:
            payload.pop("reducer")
        return payload


class BatchedMetric:
    """A metric function that can also score a batch at once; calling it scores one example."""

    __slots__ = ("batch", "one")

    def __init__(self, one: MetricFn, batch: BatchMetricFn) -> None:
        self.one = one
        self.batch = batch

    def __call__(self, example: Example) -> MetricResult:
        return self.one(example)


def build_with_batch(spec: MetricSpec, one: MetricFn) -> MetricFn:
    """``one``, or a :class:`BatchedMetric` around it when the spec has a batch path."""
    batch = spec.build_batch(one)
    return one if batch is None else BatchedMetric(one, batch)


def measured_target(spec: MetricSpec) -> Callable[[Example], Any]:
    """A getter for the part of the output the spec measures; returns ABSENT when the path is missing."""
    if spec.field is None:
        return lambda example: example.output
    path = parse_path(spec.field)
    return lambda example: get_path(example.output, path)


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


def missing_field(spec: MetricSpec, example: Example) -> Score:
    return Score.non_evaluable(
        "field_missing",
        f"the output of example {example.id} has no field '{spec.field}'",
    )


__all__ = [
    "ABSENT",
    "BatchMetricFn",
    "BatchedMetric",
    "MetricFn",
    "MetricResult",
    "MetricSpec",
    "build_with_batch",
    "measured_target",
    "missing_field",
    "missing_reference",
    "reference_getter",
    "value_getter",
    "values_getter",
]
