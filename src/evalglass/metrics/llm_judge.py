"""``type: llm_judge``: the declaration of an LLM-judge metric and the fingerprint calibrations are bound to.

The judge itself (rendering, calling, parsing the answer) is asynchronous and lives in ``evalglass.lanes.judge``,
below metrics: ``build`` reads the rubric and hands the judge what only the metric knows (:class:`JudgeDefinition`:
the part of the output it grades, its reference, what an answer it cannot be shown scores, the fingerprint), with
the build context's executor and call cache (the live run's), so it needs a context that has an executor. What the
engine needs of a judge beyond its scorer, the spec declares like any metric's: it is ``calibrated`` (its
``calibration_subject`` and ``calibration_fingerprint``) and its calls spend a model's tokens (``tokens_model``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from evalglass.core.endpoint import serving_origin
from evalglass.core.example import Example
from evalglass.core.fieldpath import FieldPathError, get_path, parse_path
from evalglass.core.fingerprint import content_address
from evalglass.core.jsonvalue import is_json_value
from evalglass.core.outputshape import OutputShape
from evalglass.core.pairwise import Inconsistent, PairTally
from evalglass.core.score import Score
from evalglass.core.stats import UNIT_SCALE, ScaleSpec
from evalglass.errors import SetupError
from evalglass.lanes.judgespec import (
    DEFAULT_PAIRWISE_PROMPT,
    DEFAULT_PROMPT,
    DEFAULT_TRANSCRIPT_PROMPT,
    JudgeScale,
    TranscriptSpec,
)
from evalglass.lanes.specs import EndpointSpec, check_template
from evalglass.metrics.base import (
    ABSENT,
    AsyncScorer,
    BuildContext,
    CalibrationSubject,
    MetricSpec,
    measured_target,
    missing_reference,
    reference_getter,
    without_default_invalid_output,
)
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.invalid import invalid_answer, unreadable_answer
from evalglass.metrics.support import wrong_reference
from evalglass.metrics.versions import judge_parser_id
from evalglass.readers.userfiles import read_regular

if TYPE_CHECKING:
    from evalglass.lanes.judge import JudgeDefinition


class LlmJudgeSpec(MetricSpec, EndpointSpec):
    """``type: llm_judge`` under ``metrics:``."""

    summary: ClassVar[str] = "An LLM grades the output against a host-owned rubric on a declared scale."
    #: Each call waits on a model: judged concurrently, with the run's executor and cache.
    live: ClassVar[bool] = True
    #: A gate on a judge decides only while its agreement with human labels meets what the ledger requires.
    calibrated: ClassVar[bool] = True

    type: Literal["llm_judge"] = "llm_judge"
    rubric: str = Field(description="Path to the rubric file (relative to the evals folder); owned by the host.")
    scale: JudgeScale | None = Field(default=None, description="The answer scale (pointwise judges; required).")
    mode: Literal["pointwise", "pairwise"] = Field(
        default="pointwise",
        description="`pairwise`: compare the named outputs of `compare` two at a time, each pair in both orders.",
    )
    compare: dict[str, str] | None = Field(
        default=None,
        description="Pairwise: the compared outputs, name -> path in the graded output (the first is reported).",
    )
    compare_variants: list[str] | None = Field(
        default=None,
        description="Pairwise, in a run with `variants:`: the variants whose outputs for the same example are "
        "compared (instead of `compare`; the first is reported).",
    )
    inconsistent: Inconsistent | None = Field(
        default=None,
        description="Pairwise: what a verdict that flips with the order counts as, `tie` or `excluded` (required).",
    )
    prompt: str = Field(default=DEFAULT_PROMPT, description="Jinja2 template of the user message.")
    system: str | None = Field(default=None, description="Jinja2 template of a system message.")
    transcript: TranscriptSpec | None = Field(
        default=None,
        description="Show the judge the whole conversation as `{{ transcript }}` (default prompt: the transcript's).",
    )

    def output_read(self) -> OutputShape:
        """A judge shown the transcript reads a conversation; otherwise whatever the output is."""
        return OutputShape.TRAJECTORY if self.transcript is not None else OutputShape.ANY

    @model_validator(mode="before")
    @classmethod
    def _transcript_prompt(cls, data: Any) -> Any:
        """A judge of transcripts that declares no prompt is given the one that shows the transcript."""
        if isinstance(data, Mapping) and data.get("transcript") is not None and "prompt" not in data:
            return {**data, "prompt": DEFAULT_TRANSCRIPT_PROMPT}
        if isinstance(data, Mapping) and data.get("mode") == "pairwise" and "prompt" not in data:
            return {**data, "prompt": DEFAULT_PAIRWISE_PROMPT}
        return data

    @model_validator(mode="after")
    def _mode_fields(self) -> LlmJudgeSpec:
        if self.mode == "pointwise":
            if self.scale is None:
                raise ValueError("an llm_judge needs a scale (or `mode: pairwise` with `compare`)")
            if self.compare is not None or self.compare_variants is not None or self.inconsistent is not None:
                raise ValueError("compare, compare_variants and inconsistent apply only to `mode: pairwise`")
            return self
        if self.scale is not None or self.transcript is not None:
            raise ValueError("a pairwise judge answers which output is better: remove scale (and transcript)")
        if self.compare is not None and self.compare_variants is not None:
            raise ValueError(
                "a pairwise judge compares named outputs (`compare`) or variants (`compare_variants`), not both"
            )
        if self.compare_variants is not None and len(set(self.compare_variants)) != len(self.compare_variants):
            raise ValueError("compare_variants names a variant twice")
        compared = self.compared()
        if len(compared) < 2:
            raise ValueError(
                "a pairwise judge needs `compare` naming at least two outputs (name: path), or `compare_variants` "
                "naming at least two variants"
            )
        if "tie" in compared:
            raise ValueError("'tie' is an answer, not an output name: rename it")
        for name, path in compared.items():
            try:
                parse_path(path)
            except FieldPathError as exc:
                raise ValueError(f"compare.{name}: {exc}") from None
        if self.inconsistent is None:
            raise ValueError(
                "declare what a verdict that flips with the order counts as: `inconsistent: tie` or "
                "`inconsistent: excluded`"
            )
        return self

    @property
    def pairwise(self) -> bool:
        return self.mode == "pairwise"

    def compared(self) -> dict[str, str]:
        """Each compared output's name and its path in the graded output. Compared variants are read from one
        mapping, variant name -> that variant's output for the example (``engine.explore.variantoutputs``), so the
        judge has one way of reading what it compares."""
        if self.compare_variants is not None:
            return {name: f'["{name}"]' for name in self.compare_variants}
        return dict(self.compare or {})

    def answer_scale(self) -> JudgeScale:
        """The scale answers are read on: the declared one, or a pairwise judge's outcomes (an output's name, or
        ``tie``), on which it is calibrated."""
        if self.scale is not None:
            return self.scale
        return JudgeScale(labels=(*self.compared(), "tie"))

    def record_templates(self) -> dict[str, str]:
        found = {"prompt": self.prompt}
        if self.system is not None:
            found["system template"] = self.system
        return found

    def record_paths(self) -> dict[str, str]:
        if self.transcript is None or self.transcript.input is None:
            return {}
        return {"transcript input": self.transcript.input}

    @model_validator(mode="after")
    def _templates_compile(self) -> LlmJudgeSpec:
        check_template(self.prompt, where="judge prompt template")
        if self.system is not None:
            check_template(self.system, where="judge system template")
        return self

    def build_one(self, context: BuildContext) -> AsyncScorer:
        if context.executor is None:
            raise MetricLoadError(
                "llm_judge metrics are asynchronous: only a live run builds them, with its executor and call cache"
            )
        from evalglass.lanes.judge import Judge  # the openai SDK and aiohttp: only when a judge is built

        if self.pairwise:
            from evalglass.lanes.pairwise import PairwiseJudge

            return PairwiseJudge(self.judge_definition(context), executor=context.executor, cache=context.cache)
        return Judge(self.judge_definition(context), executor=context.executor, cache=context.cache)

    def judge_definition(self, context: BuildContext) -> JudgeDefinition:
        """What this metric's judge asks and how it grades, with the rubric read now (a rubric that cannot be read
        is a :class:`MetricLoadError`)."""
        from evalglass.lanes.judge import JudgeDefinition, PairwiseSetup

        try:
            rubric = read_regular((context.base_dir / self.rubric).resolve(), what="rubric")
        except SetupError as exc:
            raise MetricLoadError(f"llm_judge: {exc.line()}") from None
        try:
            text = rubric.decode("utf-8")
        except UnicodeDecodeError:
            raise MetricLoadError(f"llm_judge: rubric {self.rubric} is not UTF-8 text") from None
        return JudgeDefinition(
            endpoint=self,
            rubric=text,
            fingerprint=judge_fingerprint(self, rubric),
            scale=self.answer_scale(),
            prompt=self.prompt,
            system=self.system,
            target=measured_target(self),
            reference=reference_getter(self) if self.reference is not None else None,
            reference_problem=functools.partial(_reference_problem, self),
            invalid=invalid_answer(self, context),
            transcript=self.transcript,
            unreadable=unreadable_answer(self, context),
            pairwise=self._pairwise_setup(PairwiseSetup),
            output_fields=context.output_fields,
        )

    def _pairwise_setup(self, setup: Any) -> Any:
        compared = self.compared()
        if not compared or self.inconsistent is None:
            return None
        getters = tuple(_getter(parse_path(path)) for path in compared.values())
        return setup(names=tuple(compared), getters=getters, inconsistent=self.inconsistent)

    def judged_tally(self) -> PairTally | None:
        compared = self.compared()
        if not compared or self.inconsistent is None:
            return None
        return PairTally(tuple(compared), self.inconsistent, self.interval.level)

    def calibration_subject(self) -> CalibrationSubject:
        return CalibrationSubject(model=self.model, rubric=self.rubric, scale=self.answer_scale())

    def calibration_fingerprint(self, rubric_sha256: str) -> str:
        return judge_fingerprint_of(self, rubric_sha256)

    def judge_endpoint(self) -> str:
        return serving_origin(self.provider.value, self.base_url)

    def tokens_model(self) -> str | None:
        return self.model

    def key_variables(self) -> tuple[str, ...]:
        return (self.api_key_env,) if self.api_key_env else ()

    def referenced_files(self, base_dir: Path) -> tuple[Path, ...]:
        """The rubric: its bytes are part of what a gate approval (and a calibration) is bound to."""
        return ((base_dir / self.rubric).resolve(),)

    def value_scale(self) -> ScaleSpec | None:
        if self.scale is None:  # pairwise: 1 a win of the first output, 0.5 a tie, 0 a loss
            return UNIT_SCALE
        if self.scale.numeric:
            assert self.scale.min is not None and self.scale.max is not None
            return ScaleSpec(min=float(self.scale.min), max=float(self.scale.max))
        values = list(self.scale.label_values().values())
        low, high = min(values), max(values)
        return ScaleSpec(min=low, max=high) if low < high else None

    def fingerprint_payload(self) -> dict[str, Any]:
        """What a gate approval's fingerprint on this judge is bound to: its definition, not how it is reached
        (timeout, limits, retries, the key's variable). Where it is served (``base_url``, the API it speaks there:
        ``provider``) is bound too, but apart: by the approval's ``judge_endpoint`` (:meth:`judge_endpoint`), so
        that moving a judge's server is one reviewable ledger line rather than a new fingerprint. ``transcript``
        only when declared, so a judge without one keeps the fingerprint it was approved under."""
        excluded = {"description", "timeout", "concurrency", "rpm", "retry", "api_key_env", "base_url", "provider"}
        if self.transcript is None:
            excluded.add("transcript")
        if not self.pairwise:  # a pointwise judge keeps the fingerprint it had before pairwise judging existed
            excluded.update({"mode", "compare", "inconsistent"})
        if self.compare_variants is None:  # a judge of named outputs keeps the fingerprint it had before
            excluded.add("compare_variants")
        return without_default_invalid_output(self.model_dump(mode="json", exclude=excluded))


#: The rules that turn a judge's answer into a score (``lanes.judge.parse_judge_answer``). Changing them changes what a
#: calibration measured, so the name is part of the fingerprint; its version lives in ``metrics.versions``.
JUDGE_PARSER = judge_parser_id()
#: How a pairwise answer is read (``lanes.pairwise.parse_winner``) and two orders become one outcome.
PAIRWISE_PARSER = "pairwise_winner@1"


def _getter(path: Any) -> Any:
    return lambda output: get_path(output, path)


def judge_fingerprint(spec: LlmJudgeSpec, rubric_bytes: bytes) -> str:
    """The content address (:func:`evalglass.core.fingerprint.content_address`) of everything that changes what
    the judge answers (see :func:`judge_fingerprint_of`)."""
    return judge_fingerprint_of(spec, hashlib.sha256(rubric_bytes).hexdigest())


def judge_fingerprint_of(spec: LlmJudgeSpec, rubric_sha256: str) -> str:
    """The fingerprint from the rubric's hex SHA-256 (as a run record keeps it), for ``evalglass verify`` too.

    It covers what changes the judge's behaviour: the model, the rubric bytes, the prompt templates, the scale, every
    sampling parameter (temperature, top_p, max_tokens, seed, stop, json_mode), what is graded (``field``) and
    against what (``reference``), and the answer parser. How long it may take and how it is retried do not change
    what it says, and stay out. Where it is served (``provider``, ``base_url``) does, and is bound beside the
    fingerprint (:meth:`LlmJudgeSpec.judge_endpoint`: a calibration records it, a gate approval names it), so that
    a judge moved to another server keeps its fingerprint (and its calibrations' history) but not its authority.
    """
    payload = {
        "model": spec.model,
        "rubric_sha256": rubric_sha256.removeprefix("sha256:"),
        "prompt": spec.prompt,
        "system": spec.system,
        "scale": spec.scale.model_dump(mode="json") if spec.scale is not None else None,
        "sampling": spec.sampling(),
        "field": spec.field,
        "reference": spec.reference,
        "parser": JUDGE_PARSER,
    }
    if spec.pairwise:  # what is compared, how an answer is read, and what a flipped verdict counts as
        compared: dict[str, Any] = {
            "compare": spec.compare,
            "inconsistent": spec.inconsistent,
            "parser": PAIRWISE_PARSER,
        }
        if spec.compare_variants is not None:  # which variants' outputs (their definitions: the gate's `variants`)
            compared["compare_variants"] = spec.compare_variants
        payload["pairwise"] = compared
    if spec.transcript is not None:  # what the judge is shown (a judge without one keeps its fingerprint)
        payload["transcript"] = spec.transcript.model_dump(mode="json")
    return content_address(payload)


__all__ = ["JUDGE_PARSER", "LlmJudgeSpec", "judge_fingerprint", "judge_fingerprint_of"]


def _reference_problem(spec: LlmJudgeSpec, example: Example, reference: Any) -> Score | None:
    """Why the judge cannot be shown the example's reference, or None when it can: none in the record
    (``reference_missing``), or a value JSON cannot write (``llm_judge@4``, ``jury@3``: a NaN from a Parquet cell was
    shown as ``null``, a set failed the call): the gold's problem either way, and the judge is not called."""
    if reference is ABSENT:
        return missing_reference(spec, example)
    if type(reference) is not str and not is_json_value(reference):
        return wrong_reference(spec.type, "a JSON value (the judge is shown it as JSON)", reference)
    return None
