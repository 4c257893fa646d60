"""``type: llm_judge``: the declaration of an LLM-judge metric and the fingerprint calibrations are bound to.

The judge itself (rendering, calling, parsing the answer) is asynchronous and lives in ``evalglass.lanes.judge``:
``build`` makes one with the build context's executor and call cache (the live run's), so it needs a context that
has an executor.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalglass.core.fingerprint import content_address
from evalglass.core.stats import ScaleSpec
from evalglass.lanes.specs import EndpointSpec, check_template
from evalglass.metrics.base import AsyncScorer, BuildContext, MetricSpec, without_default_invalid_output
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.invalid import invalid_answer
from evalglass.metrics.versions import judge_parser_id

DEFAULT_PROMPT = """\
You are grading one output of an AI system against a rubric.

# Rubric
{{ rubric }}

# Example
{{ example | json }}
{% if reference is defined %}
# Reference answer
{{ reference }}
{% endif %}
# Output to grade
{{ output }}

Answer with one JSON object and nothing else:
{"score": <{{ scale }}>, "rationale": "<one or two sentences>"}
"""


class JudgeScale(BaseModel):
    """Integers ``min..max`` (``{min: 1, max: 5}``), or labels: a list (value = position, first is 0) or a
    mapping label → value. Numeric scales are ordinal; label scales are nominal unless ``ordered: true``."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    min: int | None = None
    max: int | None = None
    labels: tuple[str, ...] | dict[str, float] | None = None
    ordered: bool | None = None

    @model_validator(mode="after")
    def _one_form(self) -> JudgeScale:
        numeric = self.min is not None or self.max is not None
        if numeric == (self.labels is not None):
            raise ValueError("a scale is either {min, max} integers or a list/mapping of labels")
        if numeric:
            if self.min is None or self.max is None or self.min >= self.max:
                raise ValueError("a numeric scale needs integers min < max")
        else:
            assert self.labels is not None
            names = list(self.labels)
            if len(names) < 2 or len(set(names)) != len(names) or any(not name.strip() for name in names):
                raise ValueError("a label scale needs at least two distinct, non-empty labels")
            if isinstance(self.labels, dict) and any(not math.isfinite(v) for v in self.labels.values()):
                raise ValueError("label values must be finite numbers")
        return self

    @property
    def numeric(self) -> bool:
        return self.labels is None

    @property
    def ordinal(self) -> bool:
        return True if self.numeric else bool(self.ordered)

    def categories(self) -> tuple[int | str, ...]:
        if self.labels is None:
            assert self.min is not None and self.max is not None
            return tuple(range(self.min, self.max + 1))
        return tuple(self.labels)

    def label_values(self) -> dict[str, float]:
        if self.labels is None:
            return {}
        if isinstance(self.labels, dict):
            return dict(self.labels)
        return {label: float(index) for index, label in enumerate(self.labels)}

    def describe(self) -> str:
        if self.labels is None:
            return f"an integer from {self.min} to {self.max}"
        return "one of " + ", ".join(json.dumps(label) for label in self.labels)


class LlmJudgeSpec(MetricSpec, EndpointSpec):
    """``type: llm_judge`` under ``metrics:``."""

    summary: ClassVar[str] = "An LLM grades the output against a host-owned rubric on a declared scale."
    #: Each call waits on a model: judged concurrently, with the run's executor and cache.
    live: ClassVar[bool] = True

    type: Literal["llm_judge"] = "llm_judge"
    rubric: str = Field(description="Path to the rubric file (relative to the evals folder); owned by the host.")
    scale: JudgeScale
    prompt: str = Field(default=DEFAULT_PROMPT, description="Jinja2 template of the user message.")
    system: str | None = Field(default=None, description="Jinja2 template of a system message.")

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
        from evalglass.lanes.task import LaneConfigError

        try:
            return Judge(
                self,
                base_dir=context.base_dir,
                executor=context.executor,
                cache=context.cache,
                invalid=invalid_answer(self, context),
            )
        except LaneConfigError as exc:
            raise MetricLoadError(str(exc)) from None

    def referenced_files(self, base_dir: Path) -> tuple[Path, ...]:
        """The rubric: its bytes are part of what a gate approval (and a calibration) is bound to."""
        return ((base_dir / self.rubric).resolve(),)

    def value_scale(self) -> ScaleSpec | None:
        if self.scale.numeric:
            assert self.scale.min is not None and self.scale.max is not None
            return ScaleSpec(min=float(self.scale.min), max=float(self.scale.max))
        values = list(self.scale.label_values().values())
        low, high = min(values), max(values)
        return ScaleSpec(min=low, max=high) if low < high else None

    def fingerprint_payload(self) -> dict[str, Any]:
        """What a gate approval on this judge is bound to: its definition, not where it is served (``base_url``)
        nor how it is reached (timeout, limits, retries, the key's variable)."""
        return without_default_invalid_output(
            self.model_dump(
                mode="json",
                exclude={"description", "timeout", "concurrency", "rpm", "retry", "api_key_env", "base_url"},
            )
        )


#: The rules that turn a judge's answer into a score (``lanes.judge.parse_judge_answer``). Changing them changes what a
#: calibration measured, so the name is part of the fingerprint; its version lives in ``metrics.versions``.
JUDGE_PARSER = judge_parser_id()


def judge_fingerprint(spec: LlmJudgeSpec, rubric_bytes: bytes) -> str:
    """The content address (:func:`evalglass.core.fingerprint.content_address`) of everything that changes what
    the judge answers (see :func:`judge_fingerprint_of`)."""
    return judge_fingerprint_of(spec, hashlib.sha256(rubric_bytes).hexdigest())


def judge_fingerprint_of(spec: LlmJudgeSpec, rubric_sha256: str) -> str:
    """The fingerprint from the rubric's hex SHA-256 (as a run record keeps it), for ``evalglass verify`` too.

    It covers what changes the judge's behaviour: the model, the rubric bytes, the prompt templates, the scale, every
    sampling parameter (temperature, top_p, max_tokens, seed, stop, json_mode), what is graded (``field``) and
    against what (``reference``), and the answer parser. Where the judge is served (``base_url``), how long it may
    take and how it is retried do not change what it says, and stay out.
    """
    payload = {
        "model": spec.model,
        "rubric_sha256": rubric_sha256.removeprefix("sha256:"),
        "prompt": spec.prompt,
        "system": spec.system,
        "scale": spec.scale.model_dump(mode="json"),
        "sampling": spec.sampling(),
        "field": spec.field,
        "reference": spec.reference,
        "parser": JUDGE_PARSER,
    }
    return content_address(payload)


def judges_among(metrics: Mapping[str, MetricSpec]) -> dict[str, LlmJudgeSpec]:
    """The config's LLM judges, by metric name: what ``evalglass calibrate`` calibrates and a judge gate's standing
    is read for."""
    return {name: spec for name, spec in metrics.items() if isinstance(spec, LlmJudgeSpec)}


__all__ = [
    "DEFAULT_PROMPT",
    "JUDGE_PARSER",
    "JudgeScale",
    "LlmJudgeSpec",
    "judge_fingerprint",
    "judge_fingerprint_of",
    "judges_among",
]
