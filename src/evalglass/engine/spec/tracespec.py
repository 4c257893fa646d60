"""``dataset.traces``: which spans of an OTLP trace file make an example, and how they map (docs/traces.md).

Everything here changes what the examples are, so everything here enters the gold fingerprint through the records
it produces (a changed selection or mapping makes a validated gold stale), and the dataset's own fingerprint stays
the file's bytes.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from datetime import UTC, datetime
from typing import Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from evalglass.errors import LocatedValueError

Convention = Literal["gen_ai", "gen_ai_pre_1_36", "openinference"]
AttributeValue = StrictStr | StrictBool | StrictInt | StrictFloat


class TraceSelection(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    unit: Literal["trace", "span"] = Field(
        default="trace",
        description="`trace`: one example per trace, rooted at its top-level GenAI span (each, when a trace has "
        "several side by side); `span`: one example per inference span (each model call).",
    )
    where: dict[str, AttributeValue | list[AttributeValue]] = Field(
        default_factory=dict,
        description="Attribute filters on the example's span (or its resource): the attribute must equal the "
        "value, or one of the listed values. All must hold.",
    )
    since: AwareDatetime | None = Field(default=None, description="Only spans that started at or after this time.")
    until: AwareDatetime | None = Field(default=None, description="Only spans that started before this time.")

    @model_validator(mode="after")
    def _a_window_that_can_hold_a_span(self) -> "TraceSelection":
        # `since` after `until` selects no span at all: every gate blocked on an empty dataset, for a typo.
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise LocatedValueError(
                [
                    (
                        ("until",),
                        f"{self.until.isoformat()} is not after since ({self.since.isoformat()}): "
                        "no span can be selected",
                    )
                ]
            )
        return self

    def since_ns(self) -> int | None:
        return _unix_nanos(self.since)

    def until_ns(self) -> int | None:
        return _unix_nanos(self.until)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _unix_nanos(moment: datetime | None) -> int | None:
    if moment is None:
        return None
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


class TraceMapping(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    conventions: tuple[Convention, ...] = Field(
        default=("gen_ai", "gen_ai_pre_1_36", "openinference"),
        min_length=1,
        description="The conventions read (each span is recognised by the attributes only its convention writes); "
        "a span in a convention not listed is not a GenAI span.",
    )
    metadata: tuple[str, ...] = Field(
        default=(),
        description="Attribute keys copied into each record's `metadata` (from the example's span, else its "
        "resource), e.g. `session.id` to cluster by conversation.",
    )


class TraceOptions(BaseModel):
    """How an OTLP trace file becomes examples."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    select: TraceSelection = Field(default_factory=TraceSelection)
    mapping: TraceMapping = Field(default_factory=TraceMapping)
    window: int = Field(
        default=10_000,
        ge=1,
        le=10_000_000,
        description="A trace is complete once this many spans were read after its last one (spans of one trace "
        "arrive close together in exported files); a span of a trace already evaluated is a malformed example. "
        "Memory holds at most about this many spans.",
    )
