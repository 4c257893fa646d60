"""The authority ledger and how it resolves, per gate, into "may this gate decide?".

The ledger is a host-owned file; EvalGlass parses it (in ``engine``) into these models and never writes it. An
approval or a gold validation is bound to a fingerprint of what was approved: when the gate definition or the
dataset changes, the fingerprint no longer matches and the approval is stale rather than silently carried over.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, field_validator, model_validator

from evalglass.core.calendar import DateText, IsoDay, day_of_timestamp
from evalglass.core.endpoint import JudgeEndpoint, endpoint_differences, parse_judge_endpoint, shown_endpoint
from evalglass.core.fingerprint import Fingerprint, fingerprint_of
from evalglass.core.names import closest
from evalglass.core.variantnames import declared_metric

if TYPE_CHECKING:  # expiry's rules load with the first active approval (a run without gates has none)
    from evalglass.core.expiry import Dated

#: The folder (beside the config) holding each judge's calibration record, ``<judge>.json``.
CALIBRATIONS_DIR = "calibrations"

#: The ledger a config names by default, beside it: the only one a run reads without ``--ledger`` (a config, which
#: a pull request edits, never chooses its ledger: ``engine.spec.ledger.refuse_unpinned_ledger``).
DEFAULT_LEDGER = "authority.yaml"


class BlockReason(StrEnum):
    """Every reason code a gate's outcome carries. Authority reasons come first, measurement reasons after; every
    member blocks the gate except ``below_threshold``, the one reason of a gate that failed (see :attr:`blocks`)."""

    GATE_UNDECLARED = "gate_undeclared"
    POLICY_FORBIDDEN = "policy_forbidden"
    APPROVAL_UNBOUND = "approval_unbound"
    APPROVAL_STALE = "approval_stale"
    APPROVAL_EXPIRED = "approval_expired"
    GOLD_NOT_VALIDATED = "gold_not_validated"
    GOLD_STALE = "gold_stale"
    GOLD_EXPIRED = "gold_expired"
    #: A gate on an LLM judge (or jury) whose approval does not say where the judge is served (``judge_endpoint``).
    JUDGE_ENDPOINT_UNBOUND = "judge_endpoint_unbound"
    #: ... or says another endpoint than the config's: a moved judge is a new instrument until the host approves it.
    JUDGE_ENDPOINT_CHANGED = "judge_endpoint_changed"
    JUDGE_UNCALIBRATED = "judge_uncalibrated"
    CALIBRATION_EXPIRED = "calibration_expired"
    #: A judge's calibration record is not the one the ledger's ``judges:`` entry approves (``calibration``), or the
    #: entry approves none: the record is a file a pull request can write, so only the host's digest makes it count.
    CALIBRATION_UNAPPROVED = "calibration_unapproved"
    CHECK_NOT_PASSED = "check_not_passed"
    CHECK_UNBOUND = "check_unbound"
    #: Check gates and gates on a ``check`` metric: the command runs code (a test folder, a runner, a ``-m`` module)
    #: no declared input binds, and the ledger does not accept it (``require_binding: false``).
    CHECK_INPUTS_UNBOUND = "check_inputs_unbound"
    NO_APPROVED_THRESHOLD = "no_approved_threshold"
    NO_MEASURED_VALUE = "no_measured_value"
    INCOMPLETE_MEASUREMENT = "incomplete_measurement"
    BELOW_MIN_N = "below_min_n"
    INTERVAL_UNDEFINED = "interval_undefined"
    #: Comparative gates: the baseline run the ledger names cannot be read (or the ledger names none).
    BASELINE_MISSING = "baseline_missing"
    #: Comparative gates: the baseline run's files are not the ones the ledger approved (or it approved none).
    BASELINE_STALE = "baseline_stale"
    #: Comparative gates: the ledger's approval of the baseline is past its expires_on or max_age_days.
    BASELINE_EXPIRED = "baseline_expired"
    #: Comparative gates, a baseline approved as a source (newest signed run): the run found carries no signature.
    BASELINE_UNSIGNED = "baseline_unsigned"
    #: ... its signature does not verify, or it is signed by a key the ledger does not name.
    BASELINE_UNTRUSTED = "baseline_untrusted"
    #: ... its signature says it was made on another branch than the one the ledger follows.
    BASELINE_WRONG_BRANCH = "baseline_wrong_branch"
    #: ... it is a run of another suite (dataset name) than this run's.
    BASELINE_WRONG_SUITE = "baseline_wrong_suite"
    #: ... it started more than the source's ``max_age_days`` before this run.
    BASELINE_TOO_OLD = "baseline_too_old"
    #: Comparative gates: the two runs do not measure the same thing (metric definition, gold or example set).
    NOT_COMPARABLE = "not_comparable"
    #: Comparative gates: paired examples not measured validly in one of the runs (and not tolerated).
    INCOMPLETE_PAIRS = "incomplete_pairs"
    #: Interval rules (``lower_bound``): the interval at the gate's level straddles the threshold, so the data show
    #: neither that the gate is met nor that it is missed. Gather better evidence; nothing was shown to be short.
    UNDECIDED = "undecided"
    #: Not a block: the gate was validly measured and the compared value misses the approved threshold (FAIL).
    BELOW_THRESHOLD = "below_threshold"

    @property
    def blocks(self) -> bool:
        """Whether this reason makes a gate blocked (every reason but ``below_threshold``)."""
        return self is not BlockReason.BELOW_THRESHOLD


class Reason(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    code: BlockReason
    message: str


class GateApproval(BaseModel):
    """One gate's entry in the ledger."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    active: StrictBool = Field(
        description="Only an active gate can pass, fail or block; otherwise it is evidence only."
    )
    threshold: float | None = Field(
        default=None,
        strict=True,
        allow_inf_nan=False,
        description="The approved threshold the gate compares with: a finite number inside the metric's scale.",
    )
    require_binding: StrictBool | None = Field(
        default=None,
        # Absent when not given, so that the ledger a run record snapshots keeps its bytes (verify re-dumps it).
        exclude_if=lambda value: value is None,
        description="Check gates and gates on a `check` metric. Absent: the gate blocks (check_inputs_unbound) when "
        "the check's command runs code that neither its `inputs:` nor the gate's fingerprint binds (a test folder "
        "a runner discovers): a pull request could change that code and keep the approval. `true`: a check gate "
        "also blocks unless the check ran bound to the state the gate expects (`expect_state`; check_unbound). "
        "`false`: the host accepts both, and the gate decides with a note.",
    )
    margin: float | None = Field(
        default=None,
        ge=0,
        strict=True,
        allow_inf_nan=False,
        description="Comparative gates only: the largest drop from the baseline the host accepts (e.g. 0.02).",
    )
    fingerprint: Fingerprint | None = Field(
        default=None, description="Fingerprint of the gate + metric definition this approval is bound to."
    )
    judge_endpoint: JudgeEndpoint | None = Field(
        default=None,
        # Absent when not given, so that the ledger a run record snapshots keeps its bytes (verify re-dumps it).
        exclude_if=lambda value: value is None,
        description="Gates on an LLM judge or a jury: where the judge is served, as `evalglass explain` prints it "
        "('openai https://api.openai.com/v1'; a jury: one per member name). A judge served elsewhere, or an "
        "approval without it, blocks (judge_endpoint_changed, judge_endpoint_unbound).",
    )
    expires_on: IsoDay | None = Field(
        default=None,
        description="The last day this approval counts (YYYY-MM-DD); after it the gate blocks with approval_expired.",
    )
    definition: dict[str, Any] | None = Field(
        default=None,
        description="Optional: the canonical definition approved (as `explain` prints it). It must hash to "
        "`fingerprint`; when the approval goes stale, `explain` shows what changed, field by field.",
    )
    approved_by: str | None = None
    approved_on: DateText | None = Field(
        default=None, description="The day of approval (YYYY-MM-DD); the policy's max_age_days counts from it."
    )
    note: str | None = None

    @field_validator("judge_endpoint")
    @classmethod
    def _endpoint_canonical(cls, value: JudgeEndpoint | None) -> JudgeEndpoint | None:
        return None if value is None else parse_judge_endpoint(value)

    @model_validator(mode="after")
    def _definition_matches(self) -> "GateApproval":
        if self.definition is not None:
            if self.fingerprint is None:
                raise ValueError("an approval with a `definition` must also name its `fingerprint`")
            if fingerprint_of(self.definition) != self.fingerprint:
                raise ValueError(
                    "the `definition` does not hash to the approved `fingerprint`: paste both from the same "
                    "`evalglass explain` output"
                )
        return self


class DatasetValidation(BaseModel):
    """Marks a dataset's reference fields as validated gold, bound to the dataset's contents."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    validated_gold: StrictBool
    fingerprint: Fingerprint | None = Field(default=None, description="Fingerprint of the dataset file's bytes.")
    expires_on: IsoDay | None = Field(
        default=None,
        description="The last day this validation counts (YYYY-MM-DD); after it reference gates block (gold_expired).",
    )
    validated_by: str | None = None
    validated_on: DateText | None = Field(
        default=None, description="The day of validation (YYYY-MM-DD); the policy's max_age_days counts from it."
    )
    note: str | None = None


class BaselineApproval(BaseModel):
    """The baseline comparative gates compare with, approved in one of two forms.

    Pinned: one finished run (``run``: a folder relative to the ledger, or a run reference), bound to its files by
    ``fingerprint``. As a source: the newest run of this suite on ``branch`` signed by the key whose fingerprint is
    ``signed_by``, at most ``max_age_days`` old, found in the run history (or in ``folder``, a folder of run
    folders); it follows the branch with no ledger edit per merge (core/baselinesource.py says what is trusted).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    run: str | None = Field(
        default=None,
        description="Pinned: the baseline's run folder, relative to the ledger file, or a run reference found in "
        "the run history (main@latest, a run id).",
    )
    fingerprint: Fingerprint | None = Field(
        default=None,
        description="Pinned: fingerprint of the run's runrecord.json and scores.jsonl as approved; any edit makes it "
        "stale.",
    )
    branch: str | None = Field(
        default=None,
        min_length=1,
        description="As a source: the branch whose newest signed run is the baseline (the branch its signature "
        "covers, never a database column).",
    )
    signed_by: Fingerprint | None = Field(
        default=None,
        description="As a source: the fingerprint of the Ed25519 public key the baseline run must be signed with "
        "(the CI's key; `evalglass verify RUN --key KEY.pub` prints it).",
    )
    max_age_days: int | None = Field(
        default=None,
        ge=1,
        le=36_500,
        strict=True,
        description="As a source: the oldest baseline run accepted, in days before the run that compares with it "
        "(baseline_too_old beyond).",
    )
    folder: str | None = Field(
        default=None,
        min_length=1,
        description="As a source, optional: a folder (relative to the ledger) holding run folders to choose from, "
        "instead of the run history.",
    )
    expires_on: IsoDay | None = Field(
        default=None,
        description="The last day this baseline approval counts (YYYY-MM-DD); after it comparative gates on it "
        "block (baseline_expired).",
    )
    approved_by: str | None = None
    approved_on: DateText | None = Field(
        default=None, description="The day of approval (YYYY-MM-DD); the policy's max_age_days counts from it."
    )
    note: str | None = None

    @property
    def is_source(self) -> bool:
        """Approved as a source (newest signed run of a branch) rather than as one pinned run."""
        return self.branch is not None

    @model_validator(mode="after")
    def _one_form(self) -> "BaselineApproval":
        source = {"branch": self.branch, "signed_by": self.signed_by, "max_age_days": self.max_age_days}
        given = [key for key, value in source.items() if value is not None]
        if self.run is not None:
            if given or self.folder is not None:
                extra = ", ".join([*given, *(["folder"] if self.folder is not None else [])])
                raise ValueError(
                    f"a baseline is pinned (`run`, `fingerprint`) or a source (`branch`, `signed_by`, "
                    f"`max_age_days`), not both: drop `run` or drop {extra}"
                )
            return self
        if self.fingerprint is not None:
            raise ValueError(
                "`fingerprint` pins one run: name it with `run` (a folder or a run reference such as main@latest)"
            )
        missing = [key for key, value in source.items() if value is None]
        if not given:
            raise ValueError(
                "name the baseline: `run` (and `fingerprint`) pins one run; `branch`, `signed_by` and "
                "`max_age_days` follow the newest signed run of a branch"
            )
        if missing:
            raise ValueError(
                f"a baseline that follows a branch needs `branch`, `signed_by` and `max_age_days`: add "
                f"{', '.join(f'`{key}`' for key in missing)}"
            )
        return self


class Policy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    forbid_all_gating: StrictBool = Field(default=False, description="Freeze: every active gate blocks.")
    forbid_gates: tuple[str, ...] = Field(default=(), description="Gates that may not gate, by name.")
    max_age_days: int | None = Field(
        default=None,
        ge=1,
        le=36_500,
        strict=True,
        description="Approvals, gold validations and judge calibrations older than this many days (from "
        "approved_on, validated_on, the calibration's date) expire; an undated one counts as expired.",
    )
    expiry_warning_days: int = Field(
        default=14,
        ge=0,
        le=3650,
        strict=True,
        description="Warn (explain, reports, preflight) when an approval expires within this many days.",
    )


class JudgeRequirement(BaseModel):
    """What the host requires of an LLM judge before a gate on it may decide.

    ``min_agreement`` is compared with the *lower bound* of the calibration's agreement interval (95 % Wilson), not
    with the observed agreement: 9 of 10 labels agreeing is not evidence of 0.8 agreement, 180 of 200 is.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    min_agreement: float = Field(
        ge=0,
        le=1,
        strict=True,
        allow_inf_nan=False,
        description="Lowest acceptable lower bound of the judge's agreement with human labels.",
    )
    calibration: Fingerprint | None = Field(
        default=None,
        # Absent when not given, so that the ledger a run record snapshots keeps its bytes (verify re-dumps it).
        exclude_if=lambda value: value is None,
        description="The fingerprint of the calibration record the host reviewed and approves (as `evalglass "
        "calibrate` and `evalglass explain` print it). The record is a file a pull request can write: a gate on the "
        "judge decides only on the record with this fingerprint (calibration_unapproved otherwise, or without it).",
    )
    expires_on: IsoDay | None = Field(
        default=None,
        description="The last day the judge's calibration counts (YYYY-MM-DD); after it gates on the judge block "
        "(calibration_expired) until it is calibrated and approved again.",
    )
    approved_by: str | None = None
    approved_on: DateText | None = None
    note: str | None = None


def _empty_section(value: Any) -> Any:
    """A section written with nothing under it (``gates:`` alone, as `evalglass init` writes it so that entries
    can be pasted beneath) is YAML's null: it holds no entries."""
    return {} if value is None else value


class Ledger(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    version: int = Field(default=1, ge=1, le=1)
    policy: Policy = Field(default_factory=Policy)
    gates: Annotated[
        dict[str, GateApproval], BeforeValidator(_empty_section, json_schema_input_type=dict[str, GateApproval] | None)
    ] = Field(default_factory=dict)
    datasets: Annotated[
        dict[str, DatasetValidation],
        BeforeValidator(_empty_section, json_schema_input_type=dict[str, DatasetValidation] | None),
    ] = Field(default_factory=dict)
    baselines: Annotated[
        dict[str, BaselineApproval],
        BeforeValidator(_empty_section, json_schema_input_type=dict[str, BaselineApproval] | None),
    ] = Field(
        default_factory=dict,
        description="Approved baselines (one pinned run, or the newest signed run of a branch), by the name a "
        "gate's `compare_to` uses.",
    )
    judges: Annotated[
        dict[str, JudgeRequirement],
        BeforeValidator(_empty_section, json_schema_input_type=dict[str, JudgeRequirement] | None),
    ] = Field(
        default_factory=dict,
        description="Per llm_judge metric, the calibration it needs before a gate on it may decide.",
    )


class AgreementInterval(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    low: float = Field(ge=0, le=1)
    high: float = Field(ge=0, le=1)
    confidence: float = Field(gt=0, lt=1)
    method: str = "wilson"


class CalibrationRecord(BaseModel):
    """A judge's agreement with human labels, bound to the judge's fingerprint (written by `evalglass calibrate`).

    It is evidence the tool writes, not an approval: whether it is good enough is the ledger's ``judges`` entry.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    schema_version: Literal["evalglass.calibration/1"] = "evalglass.calibration/1"
    judge: str = Field(description="The llm_judge metric's name.")
    judge_fingerprint: str = Field(
        description="What changes the judge's answers, hashed: model, rubric bytes, prompt templates, scale, sampling "
        "parameters, field, reference and answer parser."
    )
    judge_endpoint: JudgeEndpoint | None = Field(
        default=None,
        # Absent in records from before it was kept: run records that snapshot one keep their bytes.
        exclude_if=lambda value: value is None,
        description="Where the judge was served when it was calibrated (a jury: per member), in the canonical form "
        "a gate approval's judge_endpoint takes. A record without it (written before EvalGlass kept it) certifies "
        "no judge.",
    )
    created_at: str
    tool_version: str
    model: str
    rubric: str
    labels_file: str
    labels_sha256: str
    n: int = Field(ge=1, description="Pairs compared (a usable judge answer and a human label).")
    excluded: int = Field(ge=0, description="Pairs whose judge answer was unusable: not counted as disagreements.")
    categories: tuple[int | str, ...]
    confusion: tuple[tuple[int, ...], ...] = Field(description="Rows: human label; columns: judge label.")
    agreed: int = Field(ge=0)
    agreement: float = Field(ge=0, le=1)
    agreement_interval: AgreementInterval
    kappa: float | None
    weighted_kappa_linear: float | None = None
    weighted_kappa_quadratic: float | None = None
    ordinal: bool

    @model_validator(mode="after")
    def _consistent(self) -> "CalibrationRecord":
        k = len(self.categories)
        if len(self.confusion) != k or any(len(row) != k for row in self.confusion):
            raise ValueError("the confusion matrix must be square over the categories")
        if sum(map(sum, self.confusion)) != self.n or sum(self.confusion[i][i] for i in range(k)) != self.agreed:
            raise ValueError("n and agreed must match the confusion matrix")
        if abs(self.agreement - self.agreed / self.n) > 1e-12:
            raise ValueError("agreement must equal agreed / n")
        return self

    @property
    def digest(self) -> str:
        """The fingerprint a ledger's ``judges:`` entry approves this record by (``calibration``): the canonical
        JSON of the record as read, so re-formatting the file or reordering its keys keeps it, and any change of a
        value (an agreement, the labels file's hash, the judge it describes) does not. A run record snapshots the
        record whole, so ``verify`` recomputes it. Limit: a field added to this model later must be left out of the
        dump while it holds its default, or every approved record's digest would move."""
        return fingerprint_of(self.model_dump(mode="json"))


class JudgeStanding(BaseModel):
    """A judge metric as the run used it: its current fingerprint and the calibration record found for it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    metric: str
    fingerprint: str
    calibration: CalibrationRecord | None = None
    endpoint: JudgeEndpoint | None = Field(
        default=None,
        description="Where the judge is served (canonical; a jury: per member). None only for a run recorded before "
        "EvalGlass kept it, which was decided without the check and is re-derived so.",
    )
    approved_record: bool = Field(
        default=True,
        description="Whether the calibration record must be the one the ledger approves (its `calibration` "
        "fingerprint). False only to re-derive a run recorded before that (`RunRecord.judge_calibrations`), which "
        "was decided on the record found.",
    )


def gate_judge(standings: Mapping[str, JudgeStanding], subject: str) -> JudgeStanding | None:
    """The judge a gate on metric ``subject`` decides on, whatever the gate's kind: the metric's own standing, or
    for a gate on a variant's metric (``metric@variant``, a difference between variants ``metric@a-vs-b``) the
    declared metric's (variants change the task, never the judge). A plain gate, a comparative gate (on a baseline)
    and a gate on a variant all stand on the same calibration and endpoint; None when the metric calls no judge.
    The run, ``verify``, ``preflight`` and the readers' re-decision all find the judge here, so no kind of gate can
    reach a decision without the calibration a plain gate needs."""
    return standings.get(subject) or standings.get(declared_metric(subject))


def decided_judge(
    standings: Mapping[str, JudgeStanding], subject: str, *, comparative: bool, every: bool = True
) -> tuple[JudgeStanding | None, JudgeEndpoint | None]:
    """The judge standing a gate's authority checks (its calibration and endpoint), and where its judge is served
    when no standing is checked. ``every``: every gate on a judge stands on its calibration (:func:`gate_judge`);
    off only to re-derive a run recorded before that (``RunRecord.judge_gates``), decided with the calibration of
    plain gates only (a gate on the judge's own metric, not comparative), and the endpoint of any gate."""
    judge = gate_judge(standings, subject)
    if every or judge is None or (not comparative and subject in standings):
        return judge, None
    return None, judge.endpoint


class GateIdentity(BaseModel):
    """What authority resolution needs to know about a gate, computed from the config by the engine."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    fingerprint: str
    dataset: str
    dataset_fingerprint: str
    needs_gold: bool = Field(
        description="True when the gate stands on the dataset's validated gold: its metric compares with a reference "
        "field, or (:func:`stands_on_gold`) it measures the examples on a threshold, so which examples it measures "
        "is what the host approved."
    )
    uses_reference: bool = Field(default=True, description="True when the gate's metric compares with a reference.")
    needs_threshold: bool = Field(default=True, description="False for check gates, which pass only on PASS.")
    comparative: bool = Field(default=False, description="True for a gate on the difference from a baseline run.")
    baseline: str | None = Field(default=None, description="Comparative gates: the baseline's name (compare_to).")
    judge: JudgeStanding | None = Field(default=None, description="Set when the gate's metric is an LLM judge.")
    judge_endpoint: JudgeEndpoint | None = Field(
        default=None,
        description="Where the gate's judge is served (comparative gates too, which carry no calibration standing); "
        "None: the metric calls no judge, or the run was recorded before EvalGlass kept it.",
    )
    stale_cause: str | None = Field(
        default=None,
        description="Why the ledger's approval no longer matches, when the engine could tell (an evaluator's "
        "version changed); said in the approval_stale message.",
    )


class Authority(BaseModel):
    """The resolved standing of one gate: inactive, or active with an approved threshold and any blocks."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    active: bool
    threshold: float | None = None
    margin: float | None = Field(default=None, description="Comparative gates: the approved margin.")
    reasons: tuple[Reason, ...] = ()
    require_binding: bool = Field(default=False, description="Check gates: a result unbound to a state blocks.")
    accept_unbound_code: bool = Field(
        default=False,
        description="The ledger accepts a check whose command runs code no input binds (`require_binding: false`): "
        "a note, not a block.",
    )
    notes: tuple[str, ...] = Field(default=(), description="Warnings that do not block: approvals expiring soon.")

    @model_validator(mode="after")
    def _inactive_has_no_reasons(self) -> "Authority":
        if not self.active and (
            self.reasons
            or self.threshold is not None
            or self.margin is not None
            or self.require_binding
            or self.accept_unbound_code
            or self.notes
        ):
            raise ValueError("an inactive gate carries no threshold and no blocking reasons")
        return self


def resolve_authority(gate: GateIdentity, ledger: Ledger, *, today: str) -> Authority:
    """Resolve one gate against the ledger on the day ``today`` (YYYY-MM-DD, passed in: core/ has no clock).
    Every reason that holds is recorded, not just the first; approvals expiring soon add notes."""
    approval = ledger.gates.get(gate.name)
    if approval is None or not approval.active:
        return Authority(active=False)
    from evalglass.core.expiry import Dated

    reasons: list[Reason] = []
    notes: list[str] = []
    expiring = _Expiring(ledger.policy, today, reasons, notes)
    if ledger.policy.forbid_all_gating:
        reasons.append(Reason(code=BlockReason.POLICY_FORBIDDEN, message="the ledger's policy forbids all gating"))
    elif gate.name in ledger.policy.forbid_gates:
        reasons.append(
            Reason(code=BlockReason.POLICY_FORBIDDEN, message=f"the ledger's policy forbids gate '{gate.name}'")
        )
    if approval.fingerprint is None:
        reasons.append(
            Reason(
                code=BlockReason.APPROVAL_UNBOUND,
                message=f"the approval names no fingerprint; approve the current definition {gate.fingerprint}",
            )
        )
    elif approval.fingerprint != gate.fingerprint:
        what = gate.stale_cause or "the gate or metric definition changed since approval"
        reasons.append(
            Reason(
                code=BlockReason.APPROVAL_STALE,
                message=f"{what} (approved {approval.fingerprint}, now {gate.fingerprint})",
            )
        )
    if gate.judge_endpoint is not None:
        reasons.extend(_endpoint_reasons(gate.name, gate.judge_endpoint, approval.judge_endpoint))
    expiring.check(
        BlockReason.APPROVAL_EXPIRED,
        Dated(f"the approval of gate '{gate.name}'", approval.expires_on, approval.approved_on, "approved_on"),
    )
    if gate.needs_gold:
        validation = ledger.datasets.get(gate.dataset)
        reasons.extend(_gold_reasons(gate, validation))
        if validation is not None and validation.validated_gold:
            expiring.check(
                BlockReason.GOLD_EXPIRED,
                Dated(
                    f"the gold validation of dataset '{gate.dataset}'",
                    validation.expires_on,
                    validation.validated_on,
                    "validated_on",
                ),
            )
    if gate.judge is not None:
        requirement = ledger.judges.get(gate.judge.metric)
        reasons.extend(_judge_reasons(gate.judge, requirement))
        record = gate.judge.calibration
        if requirement is not None and record is not None:
            expiring.check(
                BlockReason.CALIBRATION_EXPIRED,
                Dated(
                    f"the calibration of judge '{gate.judge.metric}'",
                    requirement.expires_on,
                    _record_day(record.created_at),
                    "calibration date (its record's created_at)",
                ),
            )
    baseline = ledger.baselines.get(gate.baseline) if gate.comparative and gate.baseline is not None else None
    if baseline is not None:
        expiring.check(
            BlockReason.BASELINE_EXPIRED,
            Dated(
                f"the approval of baseline '{gate.baseline}'", baseline.expires_on, baseline.approved_on, "approved_on"
            ),
        )
    if gate.comparative:
        # A comparative gate decides on a difference: the host approves a margin, and a threshold (which would be
        # compared with a difference, not a value) is never silently reused as one.
        if approval.margin is None:
            why = " (comparative gates approve a `margin`, not a `threshold`)" if approval.threshold is not None else ""
            reasons.append(
                Reason(
                    code=BlockReason.NO_APPROVED_THRESHOLD,
                    message=f"the ledger activates this comparative gate without a margin{why}",
                )
            )
        return Authority(
            active=True,
            margin=approval.margin,
            reasons=tuple(reasons),
            accept_unbound_code=approval.require_binding is False,
            notes=tuple(notes),
        )
    if approval.threshold is None and gate.needs_threshold:
        reasons.append(
            Reason(
                code=BlockReason.NO_APPROVED_THRESHOLD,
                message="the ledger activates this gate without a threshold"
                + (" (a `margin` approves comparative gates only)" if approval.margin is not None else ""),
            )
        )
    threshold = approval.threshold if gate.needs_threshold else None
    return Authority(
        active=True,
        threshold=threshold,
        reasons=tuple(reasons),
        require_binding=approval.require_binding is True,
        accept_unbound_code=approval.require_binding is False,
        notes=tuple(notes),
    )


class _Expiring:
    """Adds the expiry reason (or the warning note) of each dated approval a gate relies on."""

    def __init__(self, policy: Policy, today: str, reasons: list[Reason], notes: list[str]) -> None:
        self.policy, self.today, self.reasons, self.notes = policy, today, reasons, notes

    def check(self, code: BlockReason, dated: "Dated") -> None:
        from evalglass.core.expiry import standing

        found = standing(
            dated,
            today=self.today,
            max_age_days=self.policy.max_age_days,
            warning_days=self.policy.expiry_warning_days,
        )
        if found.expired is not None:
            self.reasons.append(Reason(code=code, message=found.expired))
        elif found.warning is not None:
            self.notes.append(f"expiring: {found.warning}")


def _record_day(created_at: str) -> str | None:
    try:
        return day_of_timestamp(created_at)
    except ValueError:
        return None


def stands_on_gold(*, check: bool, uses_reference: bool, comparative: bool, examples_bound: bool = True) -> bool:
    """Whether a gate decides only on the dataset's gold as the ledger validated it (``datasets:``). A reference
    metric compares with the gold's answers. Any other metric gate decides a threshold on the examples it measures:
    which examples those are (their ids and inputs, all of gold but the recorded outputs) is as much what the host
    approved as the metric, or a pull request could drop the failing ones, or point ``dataset.path`` at a friendlier
    file, and turn the gate green with the ledger untouched. A comparative gate is bound to its baseline's examples
    instead (another example set is ``not_comparable``), and a check gate measures no examples. ``examples_bound``
    off re-derives a run recorded before the examples were bound (``core.recordrules``): then only reference metrics
    stood on gold."""
    if check:
        return False
    return uses_reference or (examples_bound and not comparative)


def declared_gate_authority(
    ledger: Ledger,
    *,
    today: str,
    name: str,
    fingerprint: str,
    check: bool,
    dataset: str,
    dataset_fingerprint: str,
    uses_reference: bool,
    judge: JudgeStanding | None = None,
    stale_cause: str | None = None,
    comparative: bool = False,
    baseline: str | None = None,
    judge_endpoint: JudgeEndpoint | None = None,
    unbound_code: Mapping[str, Collection[str]] | None = None,
    examples_bound: bool = True,
) -> Authority:
    """What the ledger says about one declared gate. The run, ``verify`` and the readers of a run all ask here.
    Whether it stands on the dataset's gold: :func:`stands_on_gold` (``examples_bound`` as there).
    ``judge_endpoint`` is where the gate's judge is served when no ``judge`` standing carries it (comparative
    gates); a standing's own endpoint wins. ``unbound_code``: a gate on a ``check`` metric, per check the metric
    runs per example, what its command runs that no input binds (:func:`with_unbound_code`)."""
    served = judge.endpoint if judge is not None and judge.endpoint is not None else judge_endpoint
    authority = resolve_authority(
        GateIdentity(
            name=name,
            fingerprint=fingerprint,
            dataset=dataset,
            dataset_fingerprint=dataset_fingerprint,
            needs_gold=stands_on_gold(
                check=check, uses_reference=uses_reference, comparative=comparative, examples_bound=examples_bound
            ),
            uses_reference=uses_reference,
            needs_threshold=not check,
            judge=None if check else judge,
            judge_endpoint=None if check else served,
            stale_cause=stale_cause,
            comparative=comparative,
            baseline=baseline,
        ),
        ledger,
        today=today,
    )
    return with_unbound_code(authority, unbound_code or {})


def with_unbound_code(authority: Authority, unbound: Mapping[str, Collection[str]]) -> Authority:
    """An active gate's authority once the checks it decides on are known to run code no input binds (``unbound``:
    per check, what is unbound; a check binding everything is left out or empty). That code is the measuring
    instrument, and a pull request can change it without making the approval stale, so by default the gate is
    blocked (``check_inputs_unbound``): a check whose code is not bound cannot earn green. The host who accepts that
    says so in the ledger (``require_binding: false``): then a note. A check gate's own result carries what its
    command left unbound; a gate on a ``check`` metric is given it here."""
    found = {check: tuple(what) for check, what in unbound.items() if what}
    if not authority.active or not found:
        return authority
    if authority.accept_unbound_code:
        said = tuple(unbound_inputs_text(check, what) for check, what in found.items())
        return authority.model_copy(update={"notes": (*authority.notes, *said)})
    blocks = tuple(check_inputs_unbound_reason(check, what) for check, what in found.items())
    return authority.model_copy(update={"reasons": (*authority.reasons, *blocks)})


def undeclared_active_gates(ledger: Ledger, declared: Collection[str]) -> list[str]:
    """Gates the ledger activates that the config does not declare, in ledger order.

    Renaming or deleting a gate in the config (a file any pull request may edit) must not make an approved gate
    disappear: each of these blocks the run until the host retires it (``active: false``) or the config declares
    it again.
    """
    known = frozenset(declared)  # a set: a 2,000-gate suite asked a list 2,000 times (4 million comparisons)
    return [name for name, approval in ledger.gates.items() if approval.active and name not in known]


def undeclared_reason(name: str, declared: Collection[str], where: str | None) -> Reason:
    at = f" ({where})" if where else ""
    match = closest(name, declared)
    hint = f" (did you mean '{match}'?)" if match is not None else ""
    return Reason(
        code=BlockReason.GATE_UNDECLARED,
        message=(
            f"the ledger activates gate '{name}'{at}, but the config declares no gate of that name{hint}; "
            "declare it again, or retire it in the ledger with `active: false`"
        ),
    )


def check_unbound_reason(check: str) -> Reason:
    """A check gate whose ledger entry requires a binding, on a check that runs unbound (no ``expect_state``)."""
    return Reason(
        code=BlockReason.CHECK_UNBOUND,
        message=(
            f"check '{check}' ran unbound (the gate names no expect_state) and the ledger requires "
            "a binding; add `expect_state:` to the gate with the state `evalglass check` prints"
        ),
    )


def unbound_inputs_text(check: str, unbound: Collection[str]) -> str:
    """What a check gate's note (or block) says when its command runs code that no input binds."""
    return (
        f"check '{check}' does not bind its test code: its command runs {', '.join(unbound)}, which no `inputs:` "
        "covers, so a change there leaves an approval standing"
    )


def check_inputs_unbound_reason(check: str, unbound: Collection[str]) -> Reason:
    """A gate on a check whose command runs unbound code, when the ledger does not accept it (``with_unbound_code``)."""
    return Reason(
        code=BlockReason.CHECK_INPUTS_UNBOUND,
        message=(
            f"{unbound_inputs_text(check, unbound)}; declare them under the check's `inputs:` and approve the new "
            "fingerprint (or accept unbound code: `require_binding: false` in the gate's ledger entry)"
        ),
    )


@dataclass(frozen=True)
class UndeclaredGate:
    """A gate the ledger activates and the config does not declare: what a run's blocked result and a preflight's
    blocked preview both show of it."""

    name: str
    threshold: float | None
    fingerprint: str
    reason: Reason


def undeclared_gates(ledger: Ledger, declared: Collection[str], where: Mapping[str, str]) -> list[UndeclaredGate]:
    """Every gate the ledger activates and the config does not declare, each blocking (``gate_undeclared``);
    ``where`` maps a gate's name to its ledger location, for the message."""
    return [
        UndeclaredGate(
            name=name,
            threshold=ledger.gates[name].threshold,
            fingerprint=ledger.gates[name].fingerprint or "",
            reason=undeclared_reason(name, declared, where.get(name)),
        )
        for name in undeclared_active_gates(ledger, declared)
    ]


def _gold_reasons(gate: GateIdentity, validation: DatasetValidation | None) -> list[Reason]:
    if validation is None or not validation.validated_gold:
        return [
            Reason(
                code=BlockReason.GOLD_NOT_VALIDATED,
                message=(
                    f"the metric compares with reference fields of dataset '{gate.dataset}', "
                    "which the ledger does not mark as validated gold"
                    if gate.uses_reference
                    else f"the gate measures the examples of dataset '{gate.dataset}' (their ids and inputs), "
                    "which the ledger does not mark as validated gold: which examples it measures is approved too"
                ),
            )
        ]
    if validation.fingerprint != gate.dataset_fingerprint:
        return [
            Reason(
                code=BlockReason.GOLD_STALE,
                message=(
                    f"dataset '{gate.dataset}' changed since it was validated "
                    f"(validated {validation.fingerprint}, now {gate.dataset_fingerprint}); a validation made "
                    "before the gold fingerprint stopped counting the examples' order (2026-12-05) is stale once "
                    "too: review the examples and paste the entry `evalglass explain` prints"
                ),
            )
        ]
    return []


def _endpoint_reasons(gate: str, served: JudgeEndpoint, approved: JudgeEndpoint | None) -> list[Reason]:
    """Why a gate's approval does not cover the server its judge is served from. The config says where a judge
    is served and a pull request may edit it: only the ledger's ``judge_endpoint`` makes the server part of what
    the host approved, so a judge pointed at another server (one that always answers "pass") cannot decide."""
    entry = _endpoint_entry(served)
    if approved is None:
        return [
            Reason(
                code=BlockReason.JUDGE_ENDPOINT_UNBOUND,
                message=f"the approval of gate '{gate}' does not say where its judge is served (now "
                f"{shown_endpoint(served)}); once you trust that server, add {entry} to the approval "
                f"(`evalglass explain {gate}` prints it)",
            )
        ]
    changes = endpoint_differences(approved, served)
    if not changes:
        return []
    return [
        Reason(
            code=BlockReason.JUDGE_ENDPOINT_CHANGED,
            message=f"the judge of gate '{gate}' is not served where the approval says: {'; '.join(changes)}; point "
            f"the judge back at the approved server, or have the host review the new one and approve {entry}",
        )
    ]


def _endpoint_entry(served: JudgeEndpoint) -> str:
    """The approval's line, as YAML a host can paste."""
    if isinstance(served, str):
        return f'`judge_endpoint: "{served}"`'
    return "`judge_endpoint: {" + ", ".join(f'{name}: "{text}"' for name, text in served.items()) + "}`"


def _judge_reasons(judge: JudgeStanding, requirement: JudgeRequirement | None) -> list[Reason]:
    """Why an LLM judge may not decide a gate yet; each message says what to run or write."""
    name = judge.metric
    calibrate = f"run `evalglass calibrate {name} --labels FILE.jsonl` with human-labelled examples"
    reasons: list[str] = []
    record = judge.calibration
    if requirement is None:
        reasons.append(
            f"the ledger has no `judges: {{{name}: {{min_agreement: ...}}}}` entry saying how well judge '{name}' "
            "must agree with human labels; add one to the ledger"
            + ("" if record is not None and record.judge_fingerprint == judge.fingerprint else f", and {calibrate}")
            + (
                f", approving the record found ({calibration_path_text(name)}) once reviewed: "
                f"`{calibration_line(record)}`"
                if record is not None and judge.approved_record and _describes(record, judge)
                else ""
            )
        )
    if record is None:
        if requirement is not None:
            reasons.append(f"judge '{name}' has no calibration record; {calibrate}")
    elif record.judge_fingerprint != judge.fingerprint:
        reasons.append(
            f"the calibration of judge '{name}' is stale: it describes judge {record.judge_fingerprint[:12]}…, but "
            f"the rubric, model, prompt, scale, sampling parameters, field or reference changed "
            f"(now {judge.fingerprint[:12]}…); {calibrate} again"
        )
    elif judge.endpoint is not None and record.judge_endpoint is None:
        reasons.append(
            f"the calibration record of judge '{name}' does not say which server it measured (it was written by an "
            f"EvalGlass that did not record it), so it cannot certify the judge served from "
            f"{shown_endpoint(judge.endpoint)}; {calibrate} again"
        )
    elif judge.endpoint is not None and (
        moved := endpoint_differences(record.judge_endpoint or "", judge.endpoint, bound="calibrated")
    ):
        reasons.append(
            f"the calibration of judge '{name}' measured another server: {'; '.join(moved)}; {calibrate} again "
            "against the server it is served from"
        )
    elif requirement is not None:
        low = record.agreement_interval.low
        if low < requirement.min_agreement:
            reasons.append(
                f"judge '{name}' agrees with human labels {record.agreement:.3f} "
                f"({record.agreed}/{record.n}, {record.agreement_interval.confidence:.0%} interval "
                f"{low:.3f}–{record.agreement_interval.high:.3f}); the interval's lower bound {low:.3f} is below the "
                f"ledger's min_agreement {requirement.min_agreement:g}: improve the rubric or add labels, then "
                "calibrate again"
            )
        found = [Reason(code=BlockReason.JUDGE_UNCALIBRATED, message=message) for message in reasons]
        if judge.approved_record:
            found.extend(_approval_reasons(record, requirement))
        return found
    return [Reason(code=BlockReason.JUDGE_UNCALIBRATED, message=message) for message in reasons]


def _describes(record: CalibrationRecord, judge: JudgeStanding) -> bool:
    """Whether ``record`` measured the judge as it is now, where it is served now (when the run knows where)."""
    if record.judge_fingerprint != judge.fingerprint:
        return False
    if judge.endpoint is None:
        return True
    return record.judge_endpoint is not None and not endpoint_differences(record.judge_endpoint, judge.endpoint)


def calibration_path_text(judge: str) -> str:
    """Where judge ``judge``'s calibration record is, relative to the config's folder (``evalglass calibrate``
    writes it there; the engine reads it from there)."""
    return f"{CALIBRATIONS_DIR}/{judge}.json"


def calibration_line(record: CalibrationRecord) -> str:
    """The ledger line that approves ``record``, to paste under its judge's ``judges:`` entry after review."""
    return f'calibration: "{record.digest}"'


def _approval_reasons(record: CalibrationRecord, requirement: JudgeRequirement) -> list[Reason]:
    """Why a current calibration record may not decide: the ledger does not approve this very record. The record
    is a file in the repository, so a pull request could write one with any agreement it likes; only the host's
    digest in the ledger (which no pull request changes) says which record was reviewed. Checked only on a record
    that describes the judge as it is now and where it is served: approving a stale record would be no advice."""
    digest = record.digest
    if requirement.calibration == digest:
        return []
    name = record.judge
    seen = (
        f"{calibration_path_text(name)} ({digest}, created {record.created_at}, agreement {record.agreed}/"
        f"{record.n} on labels {record.labels_file})"
    )
    review = f"have the host review it and add `{calibration_line(record)}` under the ledger's `judges: {name}:` entry"
    if requirement.calibration is None:
        message = (
            f"the ledger's entry for judge '{name}' approves no calibration record (no `calibration:`), so the "
            f"record found, {seen}, may be anyone's; {review} (`evalglass calibrate` and `explain` print it)"
        )
    else:
        message = (
            f"the calibration record of judge '{name}' is not the one the ledger approves "
            f"({requirement.calibration}): found {seen}; it was edited or replaced since approval. Restore the "
            f"approved record, or {review}"
        )
    return [Reason(code=BlockReason.CALIBRATION_UNAPPROVED, message=message)]
