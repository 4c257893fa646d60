"""Who was measured: the population behind one metric's number.

Every expected example is accounted for: included in the math, excluded with its state and diagnostics, or
missing (a score that should exist and does not, counted as an error). Diagnostics are counted on included scores
too: a measured value can carry one (a wrong answer scored its metric's worst value, ``output_not_json``; which
schema rule failed), and the view says how many of each code are in the value.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ModelWrapValidatorHandler, computed_field, model_validator

from evalglass.core.columns import SCORED_VALID, STATES, ScoreColumn
from evalglass.core.score import Status, Validity

if TYPE_CHECKING:  # loading a scorecard (`evalglass view`) needs no numpy: it is imported where it is used
    import numpy as np
    import numpy.typing as npt

TOP_DIAGNOSTICS = 5
DERIVED = ("excluded_total", "excluded_by_status", "excluded_by_validity")


class StateCount(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    status: Status
    validity: Validity
    count: int = Field(ge=1)


class DiagnosticCount(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    code: str
    count: int = Field(ge=1)
    example: str = Field(description="One message with this code, so the report can show what it looks like.")
    included: int = Field(
        default=0,
        ge=0,
        description="How many of these scores are included in the value: measured (scored and valid) with this "
        "diagnostic, such as a wrong answer scored its metric's worst value; the rest are excluded.",
    )

    @model_validator(mode="after")
    def _included_within_count(self) -> DiagnosticCount:
        if self.included > self.count:
            raise ValueError(f"{self.included} included of {self.count} scores with diagnostic {self.code}")
        return self


class Population(BaseModel):
    """Counts that must add up: ``included + sum(excluded) + missing == expected``."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    expected: int = Field(ge=0)
    included: int = Field(ge=0)
    excluded: tuple[StateCount, ...] = ()
    missing: int = Field(default=0, ge=0)
    top_diagnostics: tuple[DiagnosticCount, ...] = ()

    @model_validator(mode="wrap")
    @classmethod
    def _derived_fields_match(cls, data: Any, handler: ModelWrapValidatorHandler[Population]) -> Population:
        """Artifacts carry the derived totals for readers; on load they must equal what the counts imply."""
        recorded: dict[str, Any] = {}
        if isinstance(data, dict):
            data = dict(data)
            recorded = {name: data.pop(name) for name in DERIVED if name in data}
        population = handler(data)
        for name, value in recorded.items():
            if getattr(population, name) != value:
                raise ValueError(f"{name} is {value!r} but the counts imply {getattr(population, name)!r}")
        return population

    @model_validator(mode="after")
    def _adds_up(self) -> Population:
        total = self.included + sum(item.count for item in self.excluded) + self.missing
        if total != self.expected:
            raise ValueError(
                f"population does not add up: included {self.included} + excluded + missing {self.missing} "
                f"= {total}, expected {self.expected}"
            )
        for item in self.excluded:
            if item.status is Status.SCORED and item.validity is Validity.VALID:
                raise ValueError("scored/valid scores are included, never excluded")
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def excluded_total(self) -> int:
        return sum(item.count for item in self.excluded) + self.missing

    @computed_field  # type: ignore[prop-decorator]
    @property
    def excluded_by_status(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for item in self.excluded:
            counts[item.status.value] += item.count
        if self.missing:
            counts["missing"] += self.missing
        return dict(sorted(counts.items()))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def excluded_by_validity(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for item in self.excluded:
            counts[item.validity.value] += item.count
        return dict(sorted(counts.items()))


def population_of(column: ScoreColumn, expected: int) -> Population:
    """Count a column's rows by measurement state; rows beyond ``len(column)`` up to ``expected`` are missing."""
    if len(column) > expected:
        raise ValueError(f"{len(column)} scores recorded for {expected} expected examples")
    return population_of_states(column.states(), expected, _top_diagnostics(column))


def population_of_states(
    states: npt.NDArray[np.uint8], expected: int, top_diagnostics: tuple[DiagnosticCount, ...] = ()
) -> Population:
    """Count state bytes (see ``columns.STATES``); ``expected`` beyond ``len(states)`` are missing."""
    import numpy as np

    by_state = np.bincount(states, minlength=len(STATES))
    excluded = tuple(
        StateCount(status=STATES[code][0], validity=STATES[code][1], count=int(count))
        for code, count in enumerate(by_state)
        if code != 0 and count
    )
    return Population(
        expected=expected,
        included=int(by_state[0]),
        excluded=excluded,
        missing=expected - len(states),
        top_diagnostics=top_diagnostics,
    )


def _top_diagnostics(column: ScoreColumn) -> tuple[DiagnosticCount, ...]:
    """The most frequent diagnostic codes of the column's rows, included and excluded alike, each with how many of
    its rows are included."""
    counts: dict[str, int] = {}
    included: dict[str, int] = {}
    examples: dict[str, str] = {}
    # The states as bytes: indexing them is a plain int, where a numpy array's element is a scalar object (this
    # loop visits every row with a diagnostic, 7,500 of the 10,000 rows of the replay benchmark's file).
    states = column.states().tobytes()
    for row, diagnostics in column.diagnostic_rows():
        measured = int(states[row] == SCORED_VALID)
        for diagnostic in diagnostics:
            code = diagnostic.code
            if code in counts:
                counts[code] += 1
                included[code] += measured
            else:
                counts[code], included[code], examples[code] = 1, measured, diagnostic.message
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:TOP_DIAGNOSTICS]
    return tuple(
        DiagnosticCount(code=code, count=count, example=examples[code], included=included[code])
        for code, count in ranked
    )
