"""What ``evalglass preflight`` found for each gate: the values the engine computes and the renderers show."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from evalglass.core.authority import Reason
from evalglass.core.exitcodes import ExitCode

if TYPE_CHECKING:  # a preflight without comparative gates imports no statistics
    from evalglass.core.compare import UnchangedForecast


class Standing(StrEnum):
    """What a gate would be if the suite ran now."""

    INFORMATIONAL = "informational"
    WOULD_DECIDE = "would_decide"
    BLOCKED = "blocked"


@dataclass(frozen=True)
class GatePreview:
    name: str
    subject: str
    kind: str  # metric, check, comparative, undeclared
    standing: Standing
    fingerprint: str
    threshold: float | None = None
    margin: float | None = None
    reasons: tuple[Reason, ...] = ()
    notes: tuple[str, ...] = ()
    evaluators: tuple[str, ...] = ()
    #: Comparative gates whose baseline the ledger lists: what an unchanged candidate would meet at the margin
    #: (the approved one, else the proposed one), from the baseline's own spread.
    forecast: UnchangedForecast | None = None


@dataclass(frozen=True)
class Preflight:
    config_path: str
    ledger_path: str
    today: str
    dataset: str
    dataset_fingerprint: str | None
    gates: tuple[GatePreview, ...]

    @property
    def blocked(self) -> list[GatePreview]:
        return [gate for gate in self.gates if gate.standing is Standing.BLOCKED]

    @property
    def exit_code(self) -> ExitCode:
        """0 when every active gate could decide, 1 when any would be blocked (a setup error is 2, raised)."""
        return ExitCode.FAILED if self.blocked else ExitCode.OK
