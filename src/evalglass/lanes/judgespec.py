"""The vocabulary an LLM judge is declared in: its answer scale, its default prompt, and what a judge of transcripts
is shown (``transcript:``).

They sit in lanes, below metrics: the ``llm_judge`` metric's spec (metrics/llm_judge.py) is made of them, and the
judge that runs it (lanes/judge.py) reads its answers on the scale, so both import them downwards. Validated config
only: no template engine and no client at import.
"""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

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


DEFAULT_PAIRWISE_PROMPT = """\
You are comparing two outputs of an AI system for the same input, against a rubric.

# Rubric
{{ rubric }}

# Example
{{ example | json }}
{% if reference is defined %}
# Reference answer
{{ reference }}
{% endif %}
# Output A
{{ output_a }}

# Output B
{{ output_b }}

Which output is better? Answer with one JSON object and nothing else:
{"winner": "A" or "B" or "tie", "rationale": "<one or two sentences>"}
"""

DEFAULT_TRANSCRIPT_PROMPT = """\
You are grading what an AI agent did, against a rubric.

# Rubric
{{ rubric }}

# Example
{{ example | json }}
{% if reference is defined %}
# Reference
{{ reference }}
{% endif %}
# Transcript to grade
{{ transcript }}

Answer with one JSON object and nothing else:
{"score": <{{ scale }}>, "rationale": "<one or two sentences>"}
"""

#: One line per part: ``[role]`` opens a message, ``-> name(arguments)`` is a tool call (the text the model sent when
#: it was not JSON), ``<- result`` its result, ``<- error: ...`` a tool's failure, ``(kind)`` any other part (an
#: image, a reasoning block) so that nothing the agent did is silently left out.
DEFAULT_TRANSCRIPT_TEMPLATE = """\
{% for message in messages %}[{{ message.role }}]
{% for part in message.parts %}{% if part.type == "text" %}{{ part.content if part.content is defined }}
{% elif part.type == "tool_call" %}-> {{ part.name }}(\
{% if part.invalid_arguments is defined %}{{ part.invalid_arguments }}\
{% elif part.arguments is defined %}{{ part.arguments | json }}{% endif %})
{% elif part.type == "tool_call_response" %}<- \
{% if part.error is defined and part.error and not (part.response is string and part.response.startswith("error")) %}\
error: {% endif %}\
{% if part.response is string %}{{ part.response }}\
{% elif part.response is defined %}{{ part.response | json }}{% endif %}
{% else %}({{ part.type if part.type is defined else "part" }})
{% endif %}{% endfor %}{% endfor %}"""


class TranscriptSpec(BaseModel):
    """``transcript:`` on an ``llm_judge``: the judge is shown the whole conversation (``{{ transcript }}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    template: str = Field(
        default=DEFAULT_TRANSCRIPT_TEMPLATE,
        description="Jinja2 template over `messages` (EvalGlass's {role, parts}) that renders the transcript.",
    )
    max_chars: int = Field(
        default=20_000,
        ge=200,
        description="The budget: a longer transcript keeps its beginning and end, the cut noted (transcript_cut).",
    )
    input: str | None = Field(
        default=None,
        description="Record path of input messages to put first (a trace record's `input.messages`).",
    )

    @model_validator(mode="after")
    def _template_compiles(self) -> TranscriptSpec:
        from evalglass.lanes.specs import check_template

        check_template(self.template, where="transcript template")
        return self


__all__ = [
    "DEFAULT_PAIRWISE_PROMPT",
    "DEFAULT_PROMPT",
    "DEFAULT_TRANSCRIPT_PROMPT",
    "DEFAULT_TRANSCRIPT_TEMPLATE",
    "JudgeScale",
    "TranscriptSpec",
]
