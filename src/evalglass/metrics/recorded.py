"""``recorded_score``: a score another evaluation tool recorded for a sample, as EvalGlass evidence.

Another tool's results (``dataset.format: inspect | promptfoo | lm-eval | openai-evals``) come with its own
per-sample scores, which the readers put under each sample's ``scores.<scorer>`` as
``{value, passed, error, explanation}``. This metric maps one scorer's entry onto a Score by the rules every metric
follows:

- a number is the measurement (``scored``; ``invalid`` when it lies outside the declared ``scale``);
- a pass/fail (a boolean, or ``passed`` without a value) is 1.0 / 0.0;
- a label is its value in ``values``, whose default belongs to the format that wrote the score
  (:data:`FORMAT_LABELS`, filled in by the config so the map in effect is in the metric's fingerprint); else the
  worth the tool's own file records for it beside the label (OpenAI Evals' ``choice_scores``, as the ``score``
  each model-graded sample records); a label neither gives is an ``error`` (``recorded_score_unmapped``) naming
  the label and how to map it, never a guess (inspect's own ``value_to_float`` reads an unknown label as 0.0);
- **the tool's own failure to score** (its error, or no entry for this scorer, or a null value) is an ``error``
  (``recorded_score_error`` / ``recorded_score_missing``) carrying what the tool said: a missing measurement,
  never 0.0. A sample whose output the tool judged wrong is 0.0; a sample the tool could not judge is not;
- a score the sample never asked for (outside the ``declared`` list a reader records where the tool's file says
  which scores each sample declared: promptfoo's per-test assertions) is ``non_evaluable`` + ``not_applicable``
  (``recorded_score_not_declared``), which a gate may tolerate: an assertion on some tests only is not missing on
  the others (``recorded_score@3``; before, it was ``recorded_score_missing``, an error no ``tolerate`` cleared).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, Literal, Self

from pydantic import Field, model_validator

from evalglass.core.example import Example
from evalglass.core.score import Score
from evalglass.core.stats import UNIT_SCALE, ScaleSpec
from evalglass.metrics.base import ABSENT, BuildContext, MetricFn, MetricResult, measured_target
from evalglass.metrics.support import NoReferenceSpec, clip, json_type_name

#: A non-finite number as Python's ``json`` writes it, read as its text (``toolresults.load_json``): not a label.
NON_FINITE_TEXT = frozenset({"NaN", "Infinity", "-Infinity"})
#: inspect_ai's value labels (CORRECT, INCORRECT, PARTIAL, NOANSWER) and what its own ``value_to_float`` makes them.
#: NOANSWER is the *model's* refusal or lack of an answer, judged by the scorer (inspect counts it 0 in accuracy):
#: a judged outcome, not the scorer's failure (a scorer that failed leaves an error, which is never a number).
#: ``value_to_float``'s other readings (yes/no/true/false, numeric text, and 0.0 for anything else) are not taken
#: over: a label a scorer of the host's invents is declared under ``values``, never guessed.
INSPECT_LABELS: Mapping[str, float] = MappingProxyType({"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0})
#: The labels each format's files record, and their worth, as the tool itself reads them. promptfoo and lm-eval
#: record numbers and pass/fail only; OpenAI Evals' model-graded evals record the eval's own choice strings, worth
#: what the eval's ``choice_scores`` makes them, which the log holds only as the ``score`` beside each choice (the
#: reader passes it on as the entry's ``worth``); a format not listed (EvalGlass's own JSONL/CSV/Parquet) has none.
FORMAT_LABELS: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {"inspect": INSPECT_LABELS, "promptfoo": {}, "lm-eval": {}, "openai-evals": {}}
)


def format_labels(dataset_format: str | None) -> dict[str, float]:
    """The label map ``recorded_score`` uses by default on a dataset of ``dataset_format``."""
    return dict(FORMAT_LABELS.get(dataset_format or "", {}))


class RecordedScoreSpec(NoReferenceSpec):
    """One scorer's per-sample score as another tool recorded it."""

    deterministic: ClassVar[bool] = True

    summary: ClassVar[str] = "The score another tool recorded for the sample (its error or absence is not a 0.0)."

    type: Literal["recorded_score"] = "recorded_score"
    scorer: str = Field(
        min_length=1,
        description="The tool's name for the score: an inspect scorer, a promptfoo assertion (or `promptfoo` for "
        "the test's overall result), an lm-eval metric, an OpenAI Evals metric.",
    )
    key: str | None = Field(
        default=None, description="For a score whose value is an object (inspect's dict scores): the key to read."
    )
    values: dict[str, float] | None = Field(
        default=None,
        description="What each text label is worth (default: the labels of the format that wrote the score: "
        "inspect's C=1, I=0, P=0.5, N=0; none for the others; docs/metrics.md#recorded_score).",
    )
    scale: ScaleSpec = Field(
        default=UNIT_SCALE, description="The range the tool's values lie in; a value outside is scored invalid."
    )

    @model_validator(mode="after")
    def _finite_values(self) -> RecordedScoreSpec:
        for label, value in (self.values or {}).items():
            if not math.isfinite(value):
                raise ValueError(f"values: {label!r} must be a finite number")
        return self

    def for_format(self, dataset_format: str | None) -> Self:
        """Without ``values``: the labels of the format that wrote the score (:data:`FORMAT_LABELS`), so the map in
        effect is part of the fingerprint (an approval is bound to what each label was worth when it was made)."""
        if self.values is not None:
            return self
        return self.model_copy(update={"values": format_labels(dataset_format)})

    def value_scale(self) -> ScaleSpec | None:
        return self.scale

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        scorer, key, scale = self.scorer, self.key, self.scale
        # Built outside a config (which fills in its format's map), a spec without ``values`` maps no label.
        labels = self.values or {}

        def recorded_score(example: Example) -> MetricResult:
            output = target(example)
            scores = output.get("scores") if isinstance(output, Mapping) else None
            entry = scores.get(scorer, ABSENT) if isinstance(scores, Mapping) else ABSENT
            where = f"example {example.id} (sample {example.sample})"
            if entry is ABSENT or entry is None:
                failed = output.get("error") if isinstance(output, Mapping) else None
                if failed:
                    return Score.error(
                        "recorded_score_error", f"{where}: the sample failed in the tool: {clip(str(failed), 300)}"
                    )
                declared = output.get("declared") if isinstance(output, Mapping) else None
                if isinstance(declared, list) and scorer not in declared:
                    # Never asked for on this sample (a promptfoo assertion on other tests only): nothing was
                    # measured or lost, so not applicable, which a gate may tolerate; a declared score the file
                    # lacks stays the tool's error below.
                    asked = ", ".join(map(str, declared))
                    return Score.non_evaluable(
                        "recorded_score_not_declared",
                        f"{where}: the test declares no '{scorer}' assertion (its scores: {clip(asked, 200)}), so "
                        f"'{scorer}' does not apply to it; a gate decides on the tests that declare it when it "
                        "declares `tolerate: [not_applicable]`",
                    )
                return Score.error("recorded_score_missing", f"{where}: the tool recorded no '{scorer}' score")
            if not isinstance(entry, Mapping):
                return Score.error("recorded_score_malformed", f"{where}: the '{scorer}' score is not an object")
            error = entry.get("error")
            if error:
                return Score.error(
                    "recorded_score_error", f"{where}: the tool failed to score '{scorer}': {clip(str(error), 300)}"
                )
            value = entry.get("value")
            if key is not None:
                if not isinstance(value, Mapping) or key not in value:
                    return Score.error("recorded_score_missing", f"{where}: the '{scorer}' score has no key '{key}'")
                value = value[key]
            if value is None:
                passed = entry.get("passed")
                if type(passed) is bool:
                    return 1.0 if passed else 0.0
                return Score.error("recorded_score_missing", f"{where}: the tool recorded no value for '{scorer}'")
            if type(value) is bool:
                return 1.0 if value else 0.0
            if type(value) is str:
                mapped = labels.get(value)
                worth = entry.get("worth")
                if (
                    mapped is None
                    and isinstance(worth, int | float)
                    and not isinstance(worth, bool)
                    and math.isfinite(worth)
                ):
                    mapped = float(worth)  # the tool's own worth for the label, as its file records it
                if mapped is None and value in NON_FINITE_TEXT:
                    return Score.error(
                        "recorded_score_malformed", f"{where}: '{scorer}' is {value}, not a finite number"
                    )
                if mapped is None:
                    known = ", ".join(sorted(labels)) or "none"
                    return Score.error(
                        "recorded_score_unmapped",
                        f"{where}: '{scorer}' is the label {clip(value, 40)!r}, which `values` does not map "
                        f"(known: {known}) and the tool's file gives no worth for; declare what it is worth on the "
                        f"metric: `values: {{{clip(value, 40)!r}: <number>}}`",
                    )
                value = mapped
            if type(value) not in (int, float) or not math.isfinite(value):
                return Score.error(
                    "recorded_score_malformed",
                    f"{where}: '{scorer}' is {json_type_name(value)} {clip(repr(value), 60)}, not a number",
                )
            number = float(value)
            if not scale.min <= number <= scale.max:
                return Score.untrusted(
                    number,
                    "recorded_score_off_scale",
                    f"{where}: '{scorer}' is {number}, outside the declared scale [{scale.min}, {scale.max}]",
                )
            return number

        return recorded_score
