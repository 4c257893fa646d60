"""``type: jury``: several LLM judges grade each example on one rubric and scale, combined by a declared rule.

Each member is exactly the ``llm_judge`` it would be alone (:meth:`JurySpec.member`): the jury's rubric, scale,
prompt and transcript with the member's endpoint and sampling (and, optionally, its own prompt or system template).
So a member is built, fingerprinted and called as that judge is (the run's executor, call cache and retries), and
the jury's fingerprint is made of its members' fingerprints, its rule and its quorum: changing any one judge
changes it. The rule (``core.jury``) says how votes become a value; agreement between the judges over the run is
Krippendorff's alpha with a bootstrap interval (``core.agreement``), computed from the votes ``outputs.jsonl`` keeps.

Limits: one rubric and one scale for the whole jury (alpha compares answers on one scale); tokens are priced only
when every member uses the same model (the run's usage has one model per source).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from evalglass.core.agreement import VoteTally
from evalglass.core.endpoint import serving_origin
from evalglass.core.fingerprint import content_address
from evalglass.core.jury import JuryRule, Measurement
from evalglass.core.outputshape import OutputShape
from evalglass.core.stats import ScaleSpec
from evalglass.lanes.judgespec import DEFAULT_PROMPT, DEFAULT_TRANSCRIPT_PROMPT, JudgeScale, TranscriptSpec
from evalglass.lanes.specs import EndpointSpec, check_template
from evalglass.metrics.base import AsyncScorer, BuildContext, CalibrationSubject, MetricSpec
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.llm_judge import LlmJudgeSpec, judge_fingerprint_of


class JuryMember(EndpointSpec):
    """One judge of a jury: its endpoint, model and sampling; a prompt or system template of its own if it needs
    one (the jury's otherwise)."""

    prompt: str | None = Field(default=None, description="This judge's user template (default: the jury's).")
    system: str | None = Field(default=None, description="This judge's system template (default: the jury's).")


class JurySpec(MetricSpec):
    """``type: jury`` under ``metrics:``."""

    summary: ClassVar[str] = "Several LLM judges grade the output on one rubric; a declared rule combines them."
    live: ClassVar[bool] = True
    calibrated: ClassVar[bool] = True

    type: Literal["jury"] = "jury"
    rubric: str = Field(description="Path to the rubric file (relative to the evals folder); owned by the host.")
    scale: JudgeScale
    rule: JuryRule = Field(description="How the judges' votes become one value: majority, mean or unanimous.")
    quorum: int | None = Field(
        default=None, ge=1, description="Votes needed for a verdict (default: every judge must answer)."
    )
    low_agreement: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="An example whose share of agreeing judge pairs is below this is listed as low agreement.",
    )
    judges: dict[str, JuryMember] = Field(description="The judges, by name (at least two).")
    prompt: str = Field(default=DEFAULT_PROMPT, description="Jinja2 template of the user message.")
    system: str | None = Field(default=None, description="Jinja2 template of a system message.")
    transcript: TranscriptSpec | None = None

    def output_read(self) -> OutputShape:
        """A judge shown the transcript reads a conversation; otherwise whatever the output is."""
        return OutputShape.TRAJECTORY if self.transcript is not None else OutputShape.ANY

    @model_validator(mode="before")
    @classmethod
    def _transcript_prompt(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("transcript") is not None and "prompt" not in data:
            return {**data, "prompt": DEFAULT_TRANSCRIPT_PROMPT}
        return data

    def record_templates(self) -> dict[str, str]:
        found = {"prompt": self.prompt}
        if self.system is not None:
            found["system template"] = self.system
        for name, member in self.judges.items():
            if member.prompt is not None:
                found[f"judge '{name}' prompt"] = member.prompt
            if member.system is not None:
                found[f"judge '{name}' system template"] = member.system
        return found

    def record_paths(self) -> dict[str, str]:
        if self.transcript is None or self.transcript.input is None:
            return {}
        return {"transcript input": self.transcript.input}

    @model_validator(mode="after")
    def _a_jury(self) -> JurySpec:
        if len(self.judges) < 2:
            raise ValueError("a jury needs at least two judges (one judge is an llm_judge)")
        if self.quorum is not None and self.quorum > len(self.judges):
            raise ValueError(f"quorum {self.quorum} is more than the {len(self.judges)} judges")
        check_template(self.prompt, where="jury prompt template")
        if self.system is not None:
            check_template(self.system, where="jury system template")
        return self

    @property
    def needed(self) -> int:
        """The votes a verdict needs."""
        return self.quorum if self.quorum is not None else len(self.judges)

    def member(self, name: str) -> LlmJudgeSpec:
        """Judge ``name`` as the ``llm_judge`` it is: the jury's definition with its endpoint."""
        own = self.judges[name]
        endpoint = own.model_dump(exclude={"prompt", "system"})
        return LlmJudgeSpec.model_validate(
            {
                **endpoint,
                "rubric": self.rubric,
                "scale": self.scale,
                "prompt": own.prompt if own.prompt is not None else self.prompt,
                "system": own.system if own.system is not None else self.system,
                "transcript": self.transcript,
                "field": self.field,
                "reference": self.reference,
                "on_invalid_output": self.on_invalid_output,
            }
        )

    def build_one(self, context: BuildContext) -> AsyncScorer:
        if context.executor is None:
            raise MetricLoadError("jury metrics call models: only a live run builds them, with its executor")
        from evalglass.lanes.judge import Judge
        from evalglass.lanes.jury import Jury, JuryDefinition

        definitions = {name: self.member(name).judge_definition(context) for name in self.judges}
        members = {
            name: Judge(definition, executor=context.executor, cache=context.cache)
            for name, definition in definitions.items()
        }
        definition = JuryDefinition(
            rule=self.rule,
            quorum=self.needed,
            values=dict(self._values()),
            low_agreement=self.low_agreement,
        )
        return Jury(definition, members)

    def _values(self) -> dict[int | str, float]:
        if self.scale.numeric:
            return {category: float(category) for category in self.scale.categories()}
        return {label: value for label, value in self.scale.label_values().items()}

    def judged_tally(self) -> VoteTally:
        """Where the run's votes (``outputs.jsonl``) are counted into the jury's agreement."""
        values = self._values()
        if self.scale.numeric:
            measurement = Measurement.INTERVAL if self.rule is JuryRule.MEAN else Measurement.ORDINAL
        else:
            measurement = Measurement.ORDINAL if self.scale.ordinal else Measurement.NOMINAL
        return VoteTally(
            tuple(self.judges),
            tuple(values),
            tuple(values.values()),
            measurement=measurement,
            low_agreement=self.low_agreement,
            seed=self.interval.seed,
            confidence=self.interval.level,
        )

    def calibration_subject(self) -> CalibrationSubject:
        models = ", ".join(f"{name}={member.model}" for name, member in self.judges.items())
        return CalibrationSubject(model=f"jury ({self.rule.value}: {models})", rubric=self.rubric, scale=self.scale)

    def calibration_fingerprint(self, rubric_sha256: str) -> str:
        return content_address(
            {
                "jury": self.rule.value,
                "quorum": self.needed,
                "judges": {name: judge_fingerprint_of(self.member(name), rubric_sha256) for name in self.judges},
            }
        )

    def judge_endpoint(self) -> dict[str, str]:
        """Each member's serving endpoint, by its name: moving any one judge of the jury moves the jury."""
        return {name: serving_origin(member.provider.value, member.base_url) for name, member in self.judges.items()}

    def tokens_model(self) -> str | None:
        models = {member.model for member in self.judges.values()}
        return models.pop() if len(models) == 1 else None

    def key_variables(self) -> tuple[str, ...]:
        return tuple(member.api_key_env for member in self.judges.values() if member.api_key_env)

    def referenced_files(self, base_dir: Path) -> tuple[Path, ...]:
        return ((base_dir / self.rubric).resolve(),)

    def value_scale(self) -> ScaleSpec | None:
        return self.member(next(iter(self.judges))).value_scale()

    def fingerprint_payload(self) -> dict[str, Any]:
        """The rule, the quorum as it takes effect, and each judge's own gate payload (what the ``llm_judge`` it is
        would be approved under); ``low_agreement`` only names examples, it changes no value."""
        payload = super().fingerprint_payload()
        payload.pop("low_agreement", None)
        payload.pop("quorum", None)
        for shared in ("rubric", "scale", "prompt", "system", "transcript", "field", "reference", "on_invalid_output"):
            payload.pop(shared, None)
        payload["quorum"] = self.needed
        payload["judges"] = {name: _member_payload(self.member(name)) for name in self.judges}
        return payload


def _member_payload(judge: LlmJudgeSpec) -> dict[str, Any]:
    """A member's gate payload without the metric settings a member does not have (the jury's apply)."""
    payload = judge.fingerprint_payload()
    for own in ("reducer", "k", "interval"):
        payload.pop(own, None)
    return payload


__all__ = ["JuryMember", "JurySpec"]
