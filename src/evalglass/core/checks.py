"""Bound command checks, the pure half: exit-code policy, outcomes, the result record and what it maps to.

A check is a declared command run against a target whose state was fingerprinted before the command started.
Its result is one of four outcomes, each with its own repair:

=============  ==========================  ===================  ==========  =====================
outcome        repair                      as a score           as a gate   ``evalglass check``
=============  ==========================  ===================  ==========  =====================
PASS           accept the work             scored 1.0, valid    pass        exit 0
FAIL           investigate the work        scored 0.0, valid    fail        exit 1
INCONCLUSIVE   gather better evidence      non_evaluable        blocked     exit 3
ERROR          repair the measurement      error                blocked     exit 4
=============  ==========================  ===================  ==========  =====================

Exit 2 stays reserved for "could not run at all" (bad configuration), as everywhere else in EvalGlass.

Nothing here touches files, clocks or processes: the runner (``evalglass.lanes.checkrun``) observes the world
and hands the facts to :class:`CheckResult`, which refuses any combination of facts that cannot be true
together.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import math
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalglass.core.exitcodes import ExitCode
from evalglass.core.fingerprint import fingerprint_of
from evalglass.core.score import Diagnostic, Score, Status, Validity

__all__ = [
    "CHECK_EXIT_CODES",
    "CHECK_REPAIRS",
    "DEFAULT_POLICY_ID",
    "BindingStatus",
    "CheckOutcome",
    "CheckReason",
    "CheckResult",
    "ExitCodePolicy",
    "Repair",
    "check_exit_code",
    "combined_outcome",
    "policy_id_conflicts",
    "to_score",
]


class CheckOutcome(StrEnum):
    """What a check established. INCONCLUSIVE and ERROR are never FAIL: they need different repairs."""

    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    ERROR = "ERROR"


class Repair(StrEnum):
    """What a person should do next, one per outcome."""

    ACCEPT_WORK = "accept the work"
    INVESTIGATE_WORK = "investigate the work"
    GATHER_EVIDENCE = "gather better evidence"
    REPAIR_MEASUREMENT = "repair the measurement"


#: The kind of repair each check outcome calls for (a CheckResult records it as ``repair``); not the texts that
#: say how to clear a blocked gate (``report.repairs.BLOCK_REASON_FIXES``).
CHECK_REPAIRS: Mapping[CheckOutcome, Repair] = MappingProxyType(
    {
        CheckOutcome.PASS: Repair.ACCEPT_WORK,
        CheckOutcome.FAIL: Repair.INVESTIGATE_WORK,
        CheckOutcome.INCONCLUSIVE: Repair.GATHER_EVIDENCE,
        CheckOutcome.ERROR: Repair.REPAIR_MEASUREMENT,
    }
)

#: Exit codes of a standalone ``evalglass check`` run. ``ExitCode.SETUP`` (2) is not here on purpose: it means the
#: run could not happen at all (bad configuration), which is not an outcome of any check.
CHECK_EXIT_CODES: Mapping[CheckOutcome, int] = MappingProxyType(
    {
        CheckOutcome.PASS: int(ExitCode.OK),
        CheckOutcome.FAIL: int(ExitCode.FAILED),
        CheckOutcome.INCONCLUSIVE: int(ExitCode.CHECK_INCONCLUSIVE),
        CheckOutcome.ERROR: int(ExitCode.CHECK_ERROR),
    }
)

#: Severity order used to combine several checks into one standalone exit code: the worst outcome wins.
_SEVERITY: Mapping[CheckOutcome, int] = MappingProxyType(
    {CheckOutcome.PASS: 0, CheckOutcome.FAIL: 1, CheckOutcome.INCONCLUSIVE: 2, CheckOutcome.ERROR: 3}
)


class BindingStatus(StrEnum):
    """How the target's observed state relates to the state the request named."""

    BOUND = "bound"  # an expected fingerprint was requested and the observed one matched it
    UNBOUND = "unbound"  # no fingerprint was requested (the observed one, if any, is still recorded)
    MISMATCH = "mismatch"  # the observed state is not the requested one: nothing may be measured
    UNAVAILABLE = "unavailable"  # the target could not be read: nothing may be measured

    @property
    def permits_command(self) -> bool:
        """Only a bound or unbound target lets the command start."""
        return self in (BindingStatus.BOUND, BindingStatus.UNBOUND)


class CheckReason(StrEnum):
    """Why a result is INCONCLUSIVE or ERROR. Values double as Score diagnostic codes."""

    DECLARED_INCONCLUSIVE = "declared_inconclusive"
    BINDING_MISMATCH = "binding_mismatch"
    TARGET_UNAVAILABLE = "target_unavailable"
    TARGET_MODIFIED = "target_modified"
    CODE_MODIFIED = "code_modified"
    PATH_ESCAPES_BASE = "path_escapes_base"
    CWD_UNAVAILABLE = "cwd_unavailable"
    COMMAND_NOT_FOUND = "command_not_found"
    PERMISSION_DENIED = "permission_denied"
    SPAWN_FAILED = "spawn_failed"
    TIMEOUT = "timeout"
    KILLED_BY_SIGNAL = "killed_by_signal"
    UNMAPPED_EXIT_CODE = "unmapped_exit_code"
    OUTPUT_UNUSABLE = "output_unusable"


#: Reasons that can only arise before the command starts. ``command_not_found`` and ``permission_denied`` come
#: from the spawn; they are in neither set because records written before the exit-code policy became the one
#: reader of exit codes carry them after a shell's exit 127/126, and such records must still load.
_PRE_START_REASONS = frozenset(
    {
        CheckReason.BINDING_MISMATCH,
        CheckReason.TARGET_UNAVAILABLE,
        CheckReason.PATH_ESCAPES_BASE,
        CheckReason.CWD_UNAVAILABLE,
        CheckReason.SPAWN_FAILED,
        CheckReason.OUTPUT_UNUSABLE,
    }
)
#: Reasons that need a command that really ran.
_POST_START_REASONS = frozenset(
    {
        CheckReason.DECLARED_INCONCLUSIVE,
        CheckReason.TARGET_MODIFIED,
        CheckReason.TIMEOUT,
        CheckReason.KILLED_BY_SIGNAL,
        CheckReason.UNMAPPED_EXIT_CODE,
    }
)

DEFAULT_POLICY_ID = "default"
_POLICY_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$"
_FINGERPRINT = r"^sha256:[0-9a-f]{64}$"
# ISO-8601 in UTC, as ``datetime.isoformat()`` writes it (``+00:00``) or with a ``Z``.
_UTC_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|\+00:00)$")


def _codes(value: Any, field: str) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"{field} must be a list of exit codes")
    out: set[int] = set()
    for code in value:
        if isinstance(code, bool) or not isinstance(code, int):
            raise ValueError(f"{field}: exit codes are integers, got {code!r}")
        if not 0 <= code <= 255:
            raise ValueError(f"{field}: exit code {code} is outside 0..255")
        out.add(code)
    return tuple(sorted(out))


class ExitCodePolicy(BaseModel):
    """How one command's exit code maps to an outcome, declared before it runs and recorded with its result.

    ``fail_codes=None`` keeps the ordinary reading: any code not declared pass or inconclusive is FAIL.
    Declaring ``fail_codes`` makes the policy total: a code in none of the three sets is then ERROR
    (``unmapped_exit_code``), never a guess. The id ``default`` is reserved for the default mapping (pass on
    0, fail otherwise); any other mapping must be named, and :attr:`fingerprint` pins the mapping so a reused
    id cannot hide a changed one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str = Field(default=DEFAULT_POLICY_ID, pattern=_POLICY_ID)
    pass_codes: tuple[int, ...] = (0,)
    inconclusive_codes: tuple[int, ...] = ()
    fail_codes: tuple[int, ...] | None = None

    @field_validator("pass_codes", "inconclusive_codes", mode="before")
    @classmethod
    def _normalise_codes(cls, value: Any, info: Any) -> tuple[int, ...]:
        return _codes(value, info.field_name)

    @field_validator("fail_codes", mode="before")
    @classmethod
    def _normalise_fail_codes(cls, value: Any) -> tuple[int, ...] | None:
        return None if value is None else _codes(value, "fail_codes")

    @model_validator(mode="after")
    def _disjoint(self) -> "ExitCodePolicy":
        if not self.pass_codes:
            raise ValueError("pass_codes must name at least one exit code, or the check could never pass")
        sets = {
            "pass_codes": set(self.pass_codes),
            "inconclusive_codes": set(self.inconclusive_codes),
            "fail_codes": set(self.fail_codes or ()),
        }
        names = list(sets)
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                both = sorted(sets[first] & sets[second])
                if both:
                    raise ValueError(
                        f"exit-code policy {self.id!r}: {both} appear in both {first} and {second}; "
                        "each code may map to one outcome only"
                    )
        if self.id == DEFAULT_POLICY_ID and self.canonical() != ExitCodePolicy._default_canonical():
            raise ValueError(
                f"the policy id {DEFAULT_POLICY_ID!r} is reserved for the default mapping (pass on 0, fail "
                "otherwise); give this mapping its own id, e.g. 'mytool-v1'"
            )
        return self

    @staticmethod
    def _default_canonical() -> dict[str, Any]:
        return {"fail_codes": None, "inconclusive_codes": [], "pass_codes": [0]}

    @property
    def total(self) -> bool:
        """A total policy declared its fail codes; an unmapped code is then ERROR."""
        return self.fail_codes is not None

    def canonical(self) -> dict[str, Any]:
        """The mapping alone (not the id), in a canonical form: what :attr:`fingerprint` hashes."""
        return {
            "fail_codes": None if self.fail_codes is None else list(self.fail_codes),
            "inconclusive_codes": list(self.inconclusive_codes),
            "pass_codes": list(self.pass_codes),
        }

    @property
    def fingerprint(self) -> str:
        """``sha256:`` of the mapping's canonical JSON. Same mapping ⇔ same fingerprint, whatever the id."""
        return fingerprint_of(self.canonical())

    def outcome_for(self, exit_code: int) -> CheckOutcome | None:
        """The declared outcome of ``exit_code``, or None when a total policy does not map it (→ ERROR)."""
        if exit_code in self.pass_codes:
            return CheckOutcome.PASS
        if exit_code in self.inconclusive_codes:
            return CheckOutcome.INCONCLUSIVE
        if self.fail_codes is None or exit_code in self.fail_codes:
            return CheckOutcome.FAIL
        return None

    def describe(self) -> str:
        """One line for reports, e.g. ``pytest-v1 pass=[0] inconclusive=[5] fail=[1, 2]``."""
        fail = "other" if self.fail_codes is None else list(self.fail_codes)
        return f"{self.id} pass={list(self.pass_codes)} inconclusive={list(self.inconclusive_codes)} fail={fail}"


def policy_id_conflicts(policies: Iterable[ExitCodePolicy]) -> list[str]:
    """One message per policy id that is used with two different mappings (call this at config load)."""
    seen: dict[str, ExitCodePolicy] = {}
    problems: list[str] = []
    reported: set[str] = set()
    for policy in policies:
        first = seen.setdefault(policy.id, policy)
        if first.fingerprint != policy.fingerprint and policy.id not in reported:
            reported.add(policy.id)
            problems.append(
                f"exit-code policy id {policy.id!r} names two different mappings: "
                f"{first.describe()} and {policy.describe()}; give each mapping its own id"
            )
    return problems


class CheckResult(BaseModel):
    """Everything one run of one check established, and how. Refuses facts that cannot be true together.

    The record is self-describing: it carries the policy it was judged by (and that policy's fingerprint), the
    binding, the target fingerprints before and after, whether the command started at all, its exit code or
    the signal that ended it, capped tails of its output and the environment it saw with secrets redacted.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    check_id: str = Field(min_length=1)
    example_id: str | None = None
    outcome: CheckOutcome
    repair: Repair
    reason: CheckReason | None = None
    detail: str | None = None

    target: str | None = None
    binding: BindingStatus
    requested_fingerprint: str | None = Field(default=None, pattern=_FINGERPRINT)
    observed_fingerprint: str | None = Field(default=None, pattern=_FINGERPRINT)
    observed_after_fingerprint: str | None = Field(default=None, pattern=_FINGERPRINT)
    writes_target: bool = False

    command: tuple[str, ...] = Field(min_length=1)
    #: What the command runs that neither the check's ``inputs:`` nor its target binds (``folder 'tests'``,
    #: ``runner 'pytest'``), as the runner found it before the command started; left out of the record when empty,
    #: so records of checks that bind everything read as they always did.
    unbound_inputs: tuple[str, ...] = Field(default=(), exclude_if=lambda found: not found)
    shell: bool = False
    cwd: str = "."
    env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(gt=0)

    command_started: bool
    exit_code: int | None = None
    signal: int | None = Field(default=None, ge=1)

    policy: ExitCodePolicy
    policy_fingerprint: str = Field(pattern=_FINGERPRINT)

    started_at: str
    duration_s: float = Field(ge=0)

    output_cap_bytes: int = Field(ge=0)
    stdout_tail: str = ""
    stderr_tail: str = ""
    stdout_total_bytes: int = Field(default=0, ge=0)
    stderr_total_bytes: int = Field(default=0, ge=0)

    @field_validator("started_at")
    @classmethod
    def _utc_iso(cls, value: str) -> str:
        if not _UTC_TIMESTAMP.match(value):
            raise ValueError(f"started_at must be an ISO-8601 UTC timestamp, got {value!r}")
        return value

    @field_validator("duration_s", "timeout_s")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be finite")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "CheckResult":
        why = self._violation()
        if why is not None:
            raise ValueError(f"inconsistent check result for {self.check_id!r}: {why}")
        return self

    def _violation(self) -> str | None:
        outcome, binding, policy = self.outcome, self.binding, self.policy
        if self.repair is not CHECK_REPAIRS[outcome]:
            return f"{outcome.value} is repaired by {CHECK_REPAIRS[outcome].value!r}, not {self.repair.value!r}"
        if self.policy_fingerprint != policy.fingerprint:
            return "policy_fingerprint does not match the recorded policy"

        # Binding facts.
        requested, before = self.requested_fingerprint, self.observed_fingerprint
        if self.target is None and (requested, before, self.observed_after_fingerprint) != (None, None, None):
            return "a check without a target has no fingerprints"
        if binding is BindingStatus.BOUND and (requested is None or requested != before):
            return "bound requires a requested fingerprint equal to the observed one"
        if binding is BindingStatus.UNBOUND and requested is not None:
            return "unbound means no fingerprint was requested"
        if binding is BindingStatus.MISMATCH and (requested is None or before is None or requested == before):
            return "mismatch requires a requested and an observed fingerprint that differ"
        if binding is BindingStatus.UNAVAILABLE and before is not None:
            return "unavailable means the target could not be observed"
        if binding is not BindingStatus.UNAVAILABLE and self.target is not None and before is None:
            return f"{binding.value} requires an observed fingerprint of the target"
        if not binding.permits_command and (self.command_started or outcome is not CheckOutcome.ERROR):
            return f"binding {binding.value} forbids starting the command: the outcome is ERROR"
        if binding is BindingStatus.MISMATCH and self.reason is not CheckReason.BINDING_MISMATCH:
            return "a binding mismatch is recorded with reason binding_mismatch"
        if binding is BindingStatus.UNAVAILABLE and self.reason not in (
            CheckReason.TARGET_UNAVAILABLE,
            CheckReason.PATH_ESCAPES_BASE,
            CheckReason.OUTPUT_UNUSABLE,
        ):
            return "an unavailable target is recorded with reason target_unavailable"

        # Process facts.
        if self.exit_code is not None and self.signal is not None:
            return "a process ends with an exit code or a signal, not both"
        if not self.command_started:
            if self.exit_code is not None or self.signal is not None:
                return "a command that never started has no exit code or signal"
            if self.observed_after_fingerprint is not None:
                return "a command that never started has no after-fingerprint"
            if self.stdout_tail or self.stderr_tail or self.stdout_total_bytes or self.stderr_total_bytes:
                return "a command that never started produced no output"
        if self.exit_code is not None and not 0 <= self.exit_code <= 255:
            return f"exit code {self.exit_code} is outside 0..255"
        if self.output_cap_bytes and (
            len(self.stdout_tail.encode("utf-8", "surrogateescape")) > 4 * self.output_cap_bytes
            or len(self.stderr_tail.encode("utf-8", "surrogateescape")) > 4 * self.output_cap_bytes
        ):
            return "an output tail is longer than the cap allows"
        changed = (
            self.command_started
            and self.target is not None
            and self.observed_after_fingerprint != self.observed_fingerprint
        )

        # Outcome facts.
        if outcome in (CheckOutcome.PASS, CheckOutcome.FAIL):
            if self.reason is not None:
                return f"{outcome.value} carries no reason"
            if not self.command_started or self.exit_code is None:
                return f"{outcome.value} needs a command that ran to an exit code"
            if policy.outcome_for(self.exit_code) is not outcome:
                return f"exit code {self.exit_code} is not {outcome.value} under policy {policy.id!r}"
            if changed and not self.writes_target:
                return "the command changed its own target: the outcome is ERROR (target_modified)"
            return None
        if self.reason is None:
            return f"{outcome.value} must say why (reason)"
        if outcome is CheckOutcome.INCONCLUSIVE:
            if self.reason is not CheckReason.DECLARED_INCONCLUSIVE:
                return "INCONCLUSIVE comes only from an exit code the policy declares inconclusive"
            if self.exit_code is None or policy.outcome_for(self.exit_code) is not CheckOutcome.INCONCLUSIVE:
                return f"exit code {self.exit_code} is not declared inconclusive by policy {policy.id!r}"
            if changed and not self.writes_target:
                return "the command changed its own target: the outcome is ERROR (target_modified)"
            return None
        # ERROR
        if self.reason is CheckReason.DECLARED_INCONCLUSIVE:
            return "declared_inconclusive is an INCONCLUSIVE reason, not an ERROR one"
        if self.reason in _PRE_START_REASONS and self.command_started:
            return f"{self.reason.value} means the command never started"
        if self.reason in _POST_START_REASONS and not self.command_started:
            return f"{self.reason.value} needs a command that started"
        if self.reason is CheckReason.TARGET_MODIFIED and (not changed or self.writes_target):
            return "target_modified needs an after-fingerprint that differs, on a check that may not write"
        if self.reason is CheckReason.TIMEOUT and self.exit_code is not None:
            return "a timed-out command was killed: it has no exit code"
        if self.reason is CheckReason.KILLED_BY_SIGNAL and self.signal is None:
            return "killed_by_signal needs the signal"
        if self.reason is CheckReason.UNMAPPED_EXIT_CODE and (
            self.exit_code is None or policy.outcome_for(self.exit_code) is not None
        ):
            return "unmapped_exit_code needs an exit code the policy does not map"
        return None

    # Convenience views.
    @property
    def stdout_truncated(self) -> bool:
        return self.stdout_total_bytes > self.output_cap_bytes

    @property
    def stderr_truncated(self) -> bool:
        return self.stderr_total_bytes > self.output_cap_bytes

    @property
    def record_ref(self) -> str:
        """The evidence id scores cite: ``check:<check_id>`` or ``check:<check_id>:<example_id>``."""
        return f"check:{self.check_id}" + ("" if self.example_id is None else f":{self.example_id}")

    def summary(self) -> str:
        """One line for logs, e.g. ``lint: FAIL binding=bound -> investigate the work (exit 1)``."""
        what = f"exit {self.exit_code}" if self.exit_code is not None else "no exit code"
        if self.reason is not None:
            what = self.reason.value + (f": {self.detail}" if self.detail else "")
        head = f"{self.check_id}: {self.outcome.value} binding={self.binding.value}"
        return f"{head} -> {self.repair.value} ({what})"


def _message(result: CheckResult) -> str:
    base = f"check {result.check_id!r} {result.outcome.value}: {result.repair.value}"
    return base if result.detail is None else f"{base} ({result.detail})"


def to_score(result: CheckResult) -> Score:
    """PASS → scored 1.0 valid; FAIL → scored 0.0 valid; INCONCLUSIVE → non_evaluable; ERROR → error.

    INCONCLUSIVE and ERROR carry a diagnostic whose code is the result's reason; FAIL carries a
    ``check_failed`` diagnostic naming the exit code so reports can say why a 0 is a 0. Every score cites
    ``result.record_ref``.
    """
    evidence = (result.record_ref,)
    if result.outcome is CheckOutcome.PASS:
        return Score.measured(1.0, evidence=evidence)
    if result.outcome is CheckOutcome.FAIL:
        return Score(
            status=Status.SCORED,
            validity=Validity.VALID,
            value=0.0,
            diagnostics=(
                Diagnostic(
                    code="check_failed",
                    message=f"check {result.check_id!r} exited {result.exit_code}: {result.repair.value}",
                    detail=result.detail,
                ),
            ),
            evidence=evidence,
        )
    assert result.reason is not None  # guaranteed by CheckResult's own validation
    status = Status.NON_EVALUABLE if result.outcome is CheckOutcome.INCONCLUSIVE else Status.ERROR
    return Score.unmeasured(
        status,
        result.reason.value,
        _message(result),
        result.detail,
        validity=Validity.NOT_MEASURED,
        evidence=evidence,
    )


def combined_outcome(results: Iterable[CheckResult | CheckOutcome]) -> CheckOutcome:
    """The worst outcome among several checks: ERROR > INCONCLUSIVE > FAIL > PASS. Refuses an empty input."""
    outcomes = [r.outcome if isinstance(r, CheckResult) else r for r in results]
    if not outcomes:
        raise ValueError("no check results to combine: running zero checks establishes nothing")
    return max(outcomes, key=_SEVERITY.__getitem__)


def check_exit_code(results: Iterable[CheckResult | CheckOutcome]) -> int:
    """Exit code of a standalone ``evalglass check`` run: ``CHECK_EXIT_CODES`` of the worst outcome."""
    return CHECK_EXIT_CODES[combined_outcome(results)]


def check_code_key(check: str) -> str:
    """The ``definition_files`` key of the host code a check's command runs by name beyond the files it names inside
    the config folder (``lanes.checkinputs.check_host_files``: label → SHA-256). In this light module, so the config
    (and preflight, which loads no statistics) and a reader re-deriving a check's unbound code from a record share
    it without loading the scorecard."""
    return f"code:{check}"
