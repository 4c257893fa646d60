"""Inter-judge agreement as a run reports it: Krippendorff's alpha with its interval, and the examples a jury split
on. The numbers are computed in ``core.stats.alpha`` (numpy, imported only when a jury's agreement is computed);
this module holds the values and the tally the votes are counted into, as ``outputs.jsonl`` is read.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.jury import Measurement, agreeing_share


class AlphaInterval(BaseModel):
    """Krippendorff's alpha of a jury over a run, with its percentile bootstrap interval over examples."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    alpha: float | None = Field(description="None when undefined: no pairable example, or no variation at all.")
    low: float | None
    high: float | None
    confidence: float
    measurement: Measurement
    units: int = Field(ge=0, description="Examples with at least two usable judge answers (pairable).")
    method: str = "bootstrap_percentile"
    resamples: int
    seed: int


#: Low-agreement examples named in a scorecard at most (all of them are counted).
SHOWN_LOW = 20


class JuryAgreement(BaseModel):
    """What a jury's judges agreed on over a run: alpha with its interval, and the examples they split on."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    judges: tuple[str, ...]
    alpha: AlphaInterval
    low_agreement: float = Field(description="An example whose share of agreeing judge pairs is below this is low.")
    low_agreement_examples: int = Field(ge=0)
    low_agreement_ids: tuple[str, ...] = Field(default=(), description=f"The first {SHOWN_LOW} of them, by line.")


class VoteTally:
    """Per-example votes of a jury as they are read (``outputs.jsonl`` in dataset order), then its agreement.
    One row of counts per sample row; memory is ``rows x categories`` small integers."""

    def __init__(
        self, judges: tuple[str, ...], categories: tuple[int | str, ...], values: tuple[float, ...], **how: Any
    ) -> None:
        self.judges = judges
        self.index = {category: position for position, category in enumerate(categories)}
        self.values = values
        self.measurement: Measurement = how["measurement"]
        self.low_agreement: float = how["low_agreement"]
        self.seed: int = how["seed"]
        self.confidence: float = how["confidence"]
        self.rows: list[list[int]] = []
        self.low: list[str] = []
        self.low_count = 0

    def add(self, example_id: str, note: Mapping[str, Any]) -> None:
        """One sample's judge note (``outputs.jsonl``); a note without votes (no judge was asked) counts nothing."""
        votes = note.get("votes")
        if not isinstance(votes, Mapping):
            return
        row = [0] * len(self.index)
        cast = [vote for vote in (votes.get(judge) for judge in self.judges) if vote in self.index]
        for vote in cast:
            row[self.index[vote]] += 1
        self.rows.append(row)
        share = agreeing_share(cast)
        if share is not None and share < self.low_agreement:
            self.low_count += 1
            if len(self.low) < SHOWN_LOW and example_id not in self.low:
                self.low.append(example_id)

    def summary_fields(self) -> dict[str, BaseModel]:
        """What the scorecard reports beside the metric."""
        return {"agreement": self.agreement()}

    def agreement(self) -> JuryAgreement:
        import numpy as np

        from evalglass.core.stats.alpha import alpha_interval

        counts = np.asarray(self.rows, dtype=np.int64).reshape(-1, len(self.index))
        order = np.argsort(self.values, kind="stable")
        resamples = 2000
        alpha, low, high, units = alpha_interval(
            counts[:, order],
            np.asarray(self.values)[order],
            self.measurement,
            seed=self.seed,
            confidence=self.confidence,
            resamples=resamples,
        )
        interval = AlphaInterval(
            alpha=alpha,
            low=low,
            high=high,
            confidence=self.confidence,
            measurement=self.measurement,
            units=units,
            resamples=resamples,
            seed=self.seed,
        )
        return JuryAgreement(
            judges=self.judges,
            alpha=interval,
            low_agreement=self.low_agreement,
            low_agreement_examples=self.low_count,
            low_agreement_ids=tuple(self.low),
        )


__all__ = [
    "SHOWN_LOW",
    "AlphaInterval",
    "JuryAgreement",
    "Measurement",
    "VoteTally",
]
