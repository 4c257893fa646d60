"""The Verdict Engine: per-gate outcomes in, one run verdict and one exit code out.

This is the only place a verdict is formed. Renderers display a :class:`VerdictPayload`; they never recompute it,
and the payload itself refuses to exist with a verdict, CI flag or exit code its gate list does not imply.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from pydantic import BaseModel, ConfigDict, model_validator

from evalglass.core.exitcodes import ExitCode
from evalglass.core.gates import GateResult, Outcome

PRECEDENCE: dict[Outcome, int] = {
    Outcome.INFORMATIONAL: 0,
    Outcome.PASS: 1,
    Outcome.FAIL: 2,
    Outcome.BLOCKED: 3,
}

EXIT_CODES: dict[Outcome, int] = {
    Outcome.INFORMATIONAL: int(ExitCode.OK),
    Outcome.PASS: int(ExitCode.OK),
    Outcome.FAIL: int(ExitCode.FAILED),
    Outcome.BLOCKED: int(ExitCode.FAILED),
}

MEANINGS: dict[Outcome, str] = {
    Outcome.INFORMATIONAL: (
        "No gate is active: these numbers are evidence only. Exit 0 here does not mean quality was checked."
    ),
    Outcome.PASS: "Every active gate measured its whole population and met its approved threshold.",
    Outcome.FAIL: "An active gate was validly measured and came in short of its approved threshold.",
    Outcome.BLOCKED: "An active gate could not be decided honestly; see its reasons. This fails CI.",
}


def verdict_of(outcomes: list[Outcome]) -> Outcome:
    """Highest-precedence outcome present; no gates at all is informational."""
    return max(outcomes, key=PRECEDENCE.__getitem__, default=Outcome.INFORMATIONAL)


class VerdictPayload(BaseModel):
    """The run's decision. Constructing or loading one with a friendlier verdict than its gates imply fails."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    gates: tuple[GateResult, ...]
    verdict: Outcome
    ci_should_fail: bool
    exit_code: int

    @model_validator(mode="after")
    def _rederive(self) -> "VerdictPayload":
        names = [gate.name for gate in self.gates]
        if len(set(names)) != len(names):
            raise ValueError("gate names must be unique in a verdict payload")
        expected = verdict_of([gate.outcome for gate in self.gates])
        if self.verdict is not expected:
            raise ValueError(f"verdict {self.verdict.value!r} contradicts the gates, which imply {expected.value!r}")
        if self.ci_should_fail != (expected in (Outcome.FAIL, Outcome.BLOCKED)):
            raise ValueError(f"ci_should_fail={self.ci_should_fail} contradicts verdict {expected.value!r}")
        if self.exit_code != EXIT_CODES[expected]:
            raise ValueError(f"exit_code {self.exit_code} contradicts verdict {expected.value!r}")
        return self

    @classmethod
    def decide(cls, gates: list[GateResult]) -> "VerdictPayload":
        verdict = verdict_of([gate.outcome for gate in gates])
        return cls(
            gates=tuple(gates),
            verdict=verdict,
            ci_should_fail=verdict in (Outcome.FAIL, Outcome.BLOCKED),
            exit_code=EXIT_CODES[verdict],
        )

    @property
    def meaning(self) -> str:
        return MEANINGS[self.verdict]

    def count(self, outcome: Outcome) -> int:
        return sum(1 for gate in self.gates if gate.outcome is outcome)
