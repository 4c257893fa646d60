"""The vocabulary an LLM judge is declared in: its answer scale and its default prompt.

They sit in lanes, below metrics: the ``llm_judge`` metric's spec (metrics/llm_judge.py) is made of them, and the
judge that runs it (lanes/judge.py) reads its answers on the scale, so both import them downwards. Validated config
only: no template engine and no client at import.
"""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, ConfigDict, model_validator

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


__all__ = ["DEFAULT_PROMPT", "JudgeScale"]
