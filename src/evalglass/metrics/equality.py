"""Equality metrics: ``exact_match`` against one gold value and ``enum`` against a set of allowed values.

Both compare with JSON semantics (see :mod:`evalglass.core.jsonvalue`): ``true`` is not ``1``, ``1`` is
``1.0``, object key order is irrelevant. Text normalisation applies only when both sides are strings. Both read text
against a number or a boolean as the value it spells (``"42"`` is ``42``; :func:`_spelt`, one rule for the two).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import Field, JsonValue, model_validator

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.jsonvalue import NotJsonError, json_key
from evalglass.core.outputshape import OutputShape
from evalglass.core.score import Score
from evalglass.core.textcase import caseless
from evalglass.core.uniform import all_of_type
from evalglass.metrics.base import (
    ABSENT,
    BatchMetricFn,
    BuildContext,
    MetricFn,
    MetricResult,
    MetricSpec,
    measured_target,
    missing_reference,
    reference_getter,
)
from evalglass.metrics.invalid import InvalidAnswer, WrongAnswer, invalid_answer, wrong_answer
from evalglass.metrics.normalize import NormalizeOptions, Normalizer, build_normalizer, is_identity
from evalglass.metrics.support import (
    NoReferenceSpec,
    json_type_name,
    scored_with_note,
    wrong_reference,
    wrong_type,
)

Comparer = Callable[[Any], MetricResult]


class ExactMatchSpec(MetricSpec):
    """Equality with the record's ``reference`` or a literal ``expected`` value (exactly one of the two).

    ``expected: null`` is a real expectation (the output must be JSON null); leaving ``expected`` out is not.
    """

    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.ANSWER

    summary: ClassVar[str] = "1.0 when the output (or field) equals the reference or expected value, else 0.0."
    binary: ClassVar[bool] = True

    type: Literal["exact_match"] = "exact_match"
    expected: JsonValue = Field(default=None, description="Literal value to compare with; omit with 'reference'.")
    normalize: NormalizeOptions = Field(default_factory=NormalizeOptions)

    @model_validator(mode="after")
    def _one_source(self) -> ExactMatchSpec:
        if ("expected" in self.model_fields_set) == (self.reference is not None):
            raise ValueError(
                "exact_match needs exactly one of 'reference' (a path in the record) or 'expected' (a literal value)"
            )
        return self

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        wrong = wrong_answer(self, context)
        normalizer = build_normalizer(self.normalize)
        if self.reference is None:
            return self._build_literal(target, invalid, _comparer(self.expected, normalizer, wrong))
        gold = reference_getter(self)

        def exact_match_reference(example: Example) -> MetricResult:
            reference = gold(example)
            if reference is ABSENT:
                return missing_reference(self, example)
            value = target(example)
            if value is ABSENT:
                return invalid(example)
            if type(value) is str and type(reference) is str:
                return 1.0 if normalizer(value) == normalizer(reference) else 0.0
            return _comparer(reference, normalizer, wrong)(value)

        return exact_match_reference

    def build_batch(self, one: MetricFn) -> BatchMetricFn | None:
        """Two strings compare in the loop (after normalising); every other case is ``one``'s."""
        if self.reference is None:
            return self._literal_batch(one)
        normalizer = build_normalizer(self.normalize)
        identity = is_identity(normalizer)

        def exact_match_reference_batch(batch: ExampleBatch) -> list[MetricResult]:
            values = batch.output_values(self.field)
            golds = batch.record_values(self.reference)
            if all_of_type(values, str) and all_of_type(golds, str):
                if identity:
                    return [1.0 if value == gold else 0.0 for value, gold in zip(values, golds, strict=True)]
                return [
                    1.0 if normalizer(value) == normalizer(gold) else 0.0
                    for value, gold in zip(values, golds, strict=True)
                ]
            if identity:
                return [
                    (1.0 if value == gold else 0.0)
                    if type(value) is str and type(gold) is str
                    else one(batch.example(index))
                    for index, (value, gold) in enumerate(zip(values, golds, strict=True))
                ]
            return [
                (1.0 if normalizer(value) == normalizer(gold) else 0.0)
                if type(value) is str and type(gold) is str
                else one(batch.example(index))
                for index, (value, gold) in enumerate(zip(values, golds, strict=True))
            ]

        return exact_match_reference_batch

    def _literal_batch(self, one: MetricFn) -> BatchMetricFn | None:
        if not isinstance(self.expected, str):
            return None
        normalizer = build_normalizer(self.normalize)
        gold = normalizer(self.expected)

        def exact_match_batch(batch: ExampleBatch) -> list[MetricResult]:
            values = batch.output_values(self.field)
            if all_of_type(values, str):
                return [1.0 if normalizer(value) == gold else 0.0 for value in values]
            return [
                (1.0 if normalizer(value) == gold else 0.0) if type(value) is str else one(batch.example(index))
                for index, value in enumerate(values)
            ]

        return exact_match_batch

    def _build_literal(self, target: Callable[[Example], Any], invalid: InvalidAnswer, compare: Comparer) -> MetricFn:
        def exact_match(example: Example) -> MetricResult:
            value = target(example)
            if value is ABSENT:
                return invalid(example)
            return compare(value)

        return exact_match


def _comparer(gold: Any, normalizer: Normalizer, wrong: WrongAnswer) -> Comparer:
    """A function comparing any value with ``gold``, with the gold side prepared once. A gold value JSON cannot hold
    is the reference's problem (``non_evaluable``); such an answer is the system's wrong answer (``wrong``)."""
    if isinstance(gold, str):
        normalized_gold = normalizer(gold)

        def against_text(value: Any) -> MetricResult:
            if isinstance(value, str):
                return 1.0 if normalizer(value) == normalized_gold else 0.0
            spelt = _spelt(gold, value, normalizer)
            return _type_mismatch(value, gold) if spelt is None else spelt

        return against_text

    try:
        gold_key = json_key(gold)
    except NotJsonError as exc:
        problem = wrong_reference("exact_match", "a JSON value", gold, hint=str(exc))
        return lambda value: problem

    def against_json(value: Any) -> MetricResult:
        if isinstance(value, str):
            spelt = _spelt(value, gold, normalizer)
            return _type_mismatch(value, gold) if spelt is None else spelt
        try:
            return 1.0 if json_key(value) == gold_key else 0.0
        except NotJsonError as exc:
            return wrong(wrong_type("exact_match", f"a JSON value ({exc})", value))

    return against_json


#: Text that spells a number: a plain decimal numeral (optional sign, digits, optionally a point and digits), ASCII
#: digits only, nothing around it but whitespace. The rule a judge's quoted score is read by (``lanes.judge``).
_DECIMAL = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?", re.ASCII)


def _spelt(text: str, other: Any, normalizer: Normalizer) -> float | None:
    """``text`` compared with a number or boolean ``other`` as the value it spells (``exact_match@5``), or None when
    ``other`` is neither or ``text`` spells no such value (then the types differ: :func:`_type_mismatch`).

    A system that answers in text says 42 as ``"42"``, and gold written as JSON says it as ``42``: the same answer,
    so the text is read as the number it spells, surrounding whitespace aside (``"42"``, ``" 42.0 "``; never
    ``"42 apples"``, ``"4e1"`` or ``"forty-two"``), and compared as numbers are (``42`` equals ``42.0``). A boolean
    is spelt ``true`` or ``false`` as JSON writes it, after the metric's ``normalize`` (``case: true`` reads
    ``"True"``). Either side may be the text."""
    if type(other) is bool:
        spelling = normalizer(text.strip())
        if spelling in (normalizer("true"), normalizer("false")):
            return 1.0 if (spelling == normalizer("true")) is other else 0.0
        return None
    if type(other) not in (int, float):
        return None
    stripped = text.strip()
    if not _DECIMAL.fullmatch(stripped):
        return None
    try:
        number = int(stripped) if "." not in stripped else float(stripped)
    except ValueError:  # more digits than Python converts (4,300): a number, and no JSON gold value equals it
        return 0.0
    return 1.0 if number == other else 0.0


def _type_mismatch(value: Any, gold: Any) -> Score:
    """0.0 with a note: text that spells no number or boolean never equals one, nor an object, a list or null, and
    saying so catches dataset slips."""
    return scored_with_note(
        0.0,
        "type_mismatch",
        f"output type {json_type_name(value)} vs expected type {json_type_name(gold)}: "
        "text equals a number or boolean only when it spells one (`42`, `true`), and never another type",
    )


class EnumSpec(NoReferenceSpec):
    """Membership in a closed set of allowed values, e.g. a classifier's label set."""

    unordered: ClassVar[tuple[str, ...]] = ("values",)
    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.ANSWER

    summary: ClassVar[str] = "1.0 when the output (or field) is one of the allowed values, else 0.0."
    binary: ClassVar[bool] = True

    type: Literal["enum"] = "enum"
    values: list[JsonValue] = Field(min_length=1, description="The allowed values (JSON equality).")
    case_sensitive: bool = Field(default=True, description="When false, strings compare case-folded.")

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        wrong = wrong_answer(self, context)
        fold = not self.case_sensitive
        allowed = frozenset(json_key(value, fold_case=fold) for value in self.values)
        spelt = self._spelling()

        def enum(example: Example) -> MetricResult:
            value = target(example)
            if value is ABSENT:
                return invalid(example)
            try:
                key = json_key(value, fold_case=fold)
            except NotJsonError as exc:
                return wrong(wrong_type("enum", f"a JSON value ({exc})", value))
            return 1.0 if key in allowed or spelt(value) else 0.0

        return enum

    def build_batch(self, one: MetricFn) -> BatchMetricFn | None:
        """Strings are looked up in the loop (a string's JSON key is ``("s", text)``); the rest is ``one``'s, and so
        is a string not found when a value is a number or a boolean (it may spell one)."""
        fold = not self.case_sensitive
        allowed_text = frozenset(
            key[1]
            for key in (json_key(value, fold_case=fold) for value in self.values)
            if isinstance(key, tuple) and key[0] == "s"
        )
        spells = any(type(value) in (bool, int, float) for value in self.values)

        def enum_batch(batch: ExampleBatch) -> list[MetricResult]:
            values = batch.output_values(self.field)
            results: list[MetricResult] = []
            for index, value in enumerate(values):
                if type(value) is str and (caseless(value) if fold else value) in allowed_text:
                    results.append(1.0)
                elif type(value) is str and not spells:
                    results.append(0.0)
                else:
                    results.append(one(batch.example(index)))
            return results

        return enum_batch

    def _spelling(self) -> Callable[[Any], bool]:
        """Whether an answer equals an allowed value as text read against a number or a boolean (``enum@5``, the
        rule of ``exact_match@5``, :func:`_spelt`): text answering a number or boolean value, or a number or boolean
        answering a text value. Case is ignored in ``true``/``false`` under ``case_sensitive: false``."""
        normalizer = build_normalizer(NormalizeOptions(case=not self.case_sensitive))
        scalars = tuple(value for value in self.values if type(value) in (bool, int, float))
        texts = tuple(value for value in self.values if isinstance(value, str))

        def spelt(value: Any) -> bool:
            if type(value) is str:
                return any(_spelt(value, other, normalizer) == 1.0 for other in scalars)
            if type(value) in (bool, int, float):
                return any(_spelt(text, value, normalizer) == 1.0 for text in texts)
            return False

        return spelt
