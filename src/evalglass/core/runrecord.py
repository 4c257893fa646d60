"""Everything needed to re-derive a scorecard from the recorded scores (``evalglass verify``)."""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.authority import BlockReason, CalibrationRecord, Ledger
from evalglass.core.checks import CheckResult
from evalglass.core.endpoint import JudgeEndpoint
from evalglass.core.scorecard import DatasetSummary
from evalglass.core.usage import TokenUsage

RUNRECORD_SCHEMA: Final = "evalglass.runrecord/1"
SCORES_FILE = "scores.jsonl"
#: A run with variants: the folder holding one folder per variant (its scores, outputs and check records).
VARIANTS_DIR = "variants"
#: A run with variants and judges of them side by side (``compare_variants``): the folder of their scoring (the
#: graded outputs, scores, judge notes).
COMPARED_DIR = "compared"
#: Under ``COMPARED_DIR``: per example every compared variant's output by name, what those judges graded.
GRADED_FILE = "graded.jsonl"


class BaselineRecord(BaseModel):
    """A baseline a comparative gate compared with, as this run found it. Its files are copied into the run folder
    (``baselines/NAME/``) so ``verify`` re-derives the gate from the artifacts alone."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    location: str = Field(
        description="Where the ledger's entry pointed (the baseline's run folder), or where a source was searched."
    )
    problem: str | None = Field(
        default=None, description="Why it could not be read (or no run qualified); then nothing was copied."
    )
    problem_code: BlockReason | None = Field(
        default=None, description="The reason `problem` blocks with (absent: baseline_missing)."
    )
    fingerprint: str | None = Field(default=None, description="Its fingerprint as found (runrecord + scores).")
    run_id: str | None = None
    signed_by: str | None = Field(
        default=None, description="The fingerprint of the key that signed the baseline run, when its signature holds."
    )
    branch: str | None = Field(default=None, description="The git branch the baseline's signature covers.")
    skipped: tuple[str, ...] = Field(
        default=(), description="A baseline that follows a branch: the newer runs passed over, and why."
    )


#: Where a run keeps the outputs it scored: content-addressed, ``blobs/<SHA-256 of the file's bytes>.jsonl.gz``.
KEPT_OUTPUTS_PATTERN: Final = r"^blobs/[0-9a-f]{64}\.jsonl\.gz$"


class KeptOutputs(BaseModel):
    """The recorded outputs a run scored, kept in its folder so that every reader shows what was scored, never the
    outputs file as it is later (``engine.runs.keptoutputs``). They never decide anything: the scores do."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    format: Literal["evalglass.outputs/1"] = "evalglass.outputs/1"
    file: str = Field(
        pattern=KEPT_OUTPUTS_PATTERN,
        description="The kept file in the run folder, named by the SHA-256 of its bytes: gzip of JSON lines, one "
        "per block of scores.jsonl: {ids, outputs, absent: positions whose example had no output}.",
    )
    sha256: str = Field(description="`sha256:` and the hex SHA-256 of the file's (compressed) bytes.")
    examples: int = Field(ge=0, description="Dataset lines it holds an entry for: those of scores.jsonl, in order.")


def _no_earlier_files() -> list[dict[str, dict[str, str]]]:
    """``approved_files``' default. Not ``list`` itself: pydantic reads a default factory's signature when it builds
    the model, and a builtin's comes from its text signature, parsed with ``ast`` (the interpreter's first parse
    creates every AST node type: ~13 M instructions of a recorded run that parses nothing else)."""
    return []


def _older_rules_marker(default: str, *, description: str) -> Any:
    """A run record's field saying which rule decided it: absent (``default``) in records from before the rule, and in
    records the rule changes nothing for (which keep their bytes); ``core/recordrules.py`` reads every one."""
    return Field(default=default, exclude_if=lambda value: value == default, description=description)


class RunRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    schema_version: Literal["evalglass.runrecord/1"] = RUNRECORD_SCHEMA
    run_id: str
    created_at: str
    tool_version: str
    config_path: str
    config_fingerprint: str = Field(description="SHA-256 of the config file's bytes as read.")
    config_source: str | None = Field(
        default=None, description="The config file's text as read: it hashes to config_fingerprint (verify checks)."
    )
    config: dict[str, Any] = Field(
        description="The validated config as declared (unset defaults omitted; gate fingerprints pin semantics)."
    )
    ledger_path: str
    ledger_fingerprint: str = Field(description="SHA-256 of the ledger file's bytes as read.")
    ledger_source: str | None = Field(
        default=None,
        description="The ledger file's text as read: it hashes to ledger_fingerprint, and the ledger snapshot is "
        "what it parses to (verify checks both).",
    )
    ledger: Ledger = Field(description="The ledger as the run read it; the tool never writes the ledger file.")
    dataset: DatasetSummary
    gate_fingerprints: dict[str, str]
    definition_files: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Per metric, SHA-256 of the files that define it (schemas, host modules, a rubric); under "
        "`imports:METRIC`, of the host code a python metric runs besides (the module its import path resolves to, "
        "the project's modules it imports); under `check:NAME`, `code:NAME` and `inputs:NAME`, a check's named files, "
        "the host code its command runs by name and its inputs.",
    )
    approved_files: list[dict[str, dict[str, str]]] = Field(
        default_factory=_no_earlier_files,
        # Absent unless a stale approval's reason was named from an earlier run (records keep their bytes).
        exclude_if=lambda found: not found,
        description="The bound files' hashes (keyed as `definition_files`) an earlier run kept that named what "
        "changed since a stale approval without `definition:`: with them the gate's fingerprint is the approved one "
        "(verify checks that again, and re-derives the reason from them).",
    )
    check_results: dict[str, CheckResult] = Field(
        default_factory=dict, description="Full records of the standalone checks this run ran."
    )
    unbound_check_code: dict[str, dict[str, tuple[str, ...]]] = Field(
        default_factory=dict,
        # Absent for a run without a metric that runs a check (such records keep their bytes); its absence for a
        # metric that does is how a record from before the rule reads (core/recordrules.py).
        exclude_if=lambda found: not found,
        description="Per metric that runs a check per example (`check`, `final_state`), per check, what its command "
        "runs that no input binds (empty: everything is bound). A gate on the metric blocks on it "
        "(check_inputs_unbound) unless its ledger entry accepts unbound code (`require_binding: false`).",
    )
    gate_evaluators: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="Per gate, the builtin evaluators its outcome depended on and their versions, keyed as in its "
        "fingerprint (`metric:exact_match` -> 1, shown as exact_match@1); gates that depend on none are left out. "
        "Verify re-derives them from the config snapshot; an approval made under other versions is stale.",
    )
    judge_fingerprints: dict[str, str] = Field(
        default_factory=dict, description="Per llm_judge metric, the fingerprint of the judge the run used."
    )
    judge_endpoints: dict[str, JudgeEndpoint] = Field(
        default_factory=dict,
        # Absent for a run without judges (such records keep their bytes), and in records from before it was kept:
        # those were decided without the endpoint binding and are re-derived so; the current rules still decide
        # whether such a run is green (core/recordrules.py, the one reader of this marker and the two below).
        exclude_if=lambda found: not found,
        description="Per llm_judge or jury metric, where its judge was served (canonical: 'openai "
        "https://api.openai.com/v1'; a jury: per member), as gate approvals' judge_endpoint binds it.",
    )
    judge_gates: Literal["plain", "every"] = _older_rules_marker(
        "plain",
        # Absent for a run without judges and in records from before every gate on a judge needed its calibration:
        # those were decided so and are re-derived so (core/recordrules.py).
        description="Which gates on a judge stood on its calibration when the run decided: `every` gate whose subject "
        "is a judge (plain, comparative, on a variant, between variants); absent (`plain`): plain gates only, as "
        "runs recorded before that were decided.",
    )
    judge_calibrations: Literal["found", "approved"] = _older_rules_marker(
        "found",
        # Absent for a run without judges and in records from before the ledger approved calibration records: those
        # were decided on the record found and are re-derived so (core/recordrules.py).
        description="Which calibration records a gate on a judge could stand on when the run decided: `approved`, "
        "only the record whose fingerprint the ledger's `judges:` entry names (`calibration`); absent (`found`): "
        "whichever record was found, as runs recorded before that were decided.",
    )
    gold_gates: Literal["reference", "every"] = _older_rules_marker(
        "reference",
        # Absent for a run with no metric gate on a metric without a reference (the rule changes nothing there) and in
        # records from before every metric gate stood on the dataset's gold: those are re-derived so
        # (core/recordrules.py).
        description="Which gates stood on the dataset's validated gold when the run decided: `every` non-comparative "
        "metric gate (which examples it measures is approved too); absent (`reference`): only gates on a reference "
        "metric, as runs recorded before that were decided.",
    )
    sample_counts: Literal["unbound", "bound"] = _older_rules_marker(
        "unbound",
        # Absent for a run with no gate on a reducer that depends on the samples per example, and in records from
        # before the count was bound: those are re-derived so (core/recordrules.py).
        description="Whether the gate fingerprints bound how many samples each example is reduced from under a "
        "reducer that depends on it (max, min, majority, at_least_k): `bound`; absent (`unbound`): they did not, as "
        "runs recorded before that were decided.",
    )
    majority_ties: Literal["low", "unfavourable"] = _older_rules_marker(
        "low",
        # Absent for a run with no lower-is-better gate on a majority metric with samples (both rules break every tie
        # low there) and in records from before ties went to the unfavourable side: those are re-derived so
        # (core/recordrules.py).
        description="Where a tie between a `majority` metric's samples went when the run decided: `unfavourable`, "
        "the side unfavourable to its gates' direction (the highest tied value when lower is better); absent "
        "(`low`): always the lowest, as runs recorded before that were decided.",
    )
    baseline_counts: Literal["unchecked", "compared"] = _older_rules_marker(
        "unchecked",
        # Absent for a run with no comparative gate on a reducer that depends on the samples per example, and in
        # records from before the baseline's counts were compared: those are re-derived so (core/recordrules.py).
        description="Whether a comparative gate on a reducer that depends on the samples per example (max, min, "
        "majority, at_least_k) compared them with the baseline's, blocking `not_comparable` where they differ: "
        "`compared`; absent (`unchecked`): they were not, as runs recorded before that were decided.",
    )
    calibrations: dict[str, CalibrationRecord] = Field(
        default_factory=dict,
        description="Per llm_judge metric, the calibration record the run found (snapshot; verify decides on it).",
    )
    baselines: dict[str, BaselineRecord] = Field(
        default_factory=dict, description="Per baseline name, the baseline run the comparative gates compared with."
    )
    scores_file: str = SCORES_FILE
    scores_sha256: str
    variant_scores: dict[str, str] = Field(
        default_factory=dict,
        exclude_if=lambda found: not found,
        description="A run with variants: per variant, the SHA-256 of its scores file (`variants/NAME/scores.jsonl`; "
        "`scores_file` is the first variant's).",
    )
    variant_outputs: dict[str, str] = Field(
        default_factory=dict,
        # Absent for a run without a recorded variant reading its own outputs file, and in records from before runs
        # bound it: verify re-scores no such variant then (it names why), since nothing ties that file to the run.
        exclude_if=lambda found: not found,
        description="A run with variants: per recorded variant whose outputs are in their own file (the variant's "
        "`task.path`), the SHA-256 of that file's bytes as the run read them (a run with variants keeps no copy of "
        "its outputs); verify re-scores such a variant only from a file with this hash.",
    )
    compared_scores: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="A run with variants and a judge of them side by side (`compare_variants`): the SHA-256 of "
        "`compared/scores.jsonl`, that judge's scores.",
    )
    kept_outputs: KeptOutputs | None = Field(
        default=None,
        # Absent for a run that keeps none (a live lane's outputs are its outputs.jsonl): such records keep their bytes.
        exclude_if=lambda value: value is None,
        description="A recorded run: the outputs it scored, kept in its folder (view and the reports show these).",
    )
    usage: tuple[TokenUsage, ...] = Field(default=(), description="Tokens (and cost) per lane and judge (live runs).")
    untrusted_cache_entries: int = Field(
        default=0,
        ge=0,
        # Absent when there were none (records keep their bytes).
        exclude_if=lambda found: found == 0,
        description="Call-cache entries this run found whose MAC did not verify under the cache key (made under "
        "another key, by an older EvalGlass, or written into the file by hand): not trusted, each call made again "
        "and counted in `usage` as a call made now (docs/caching.md).",
    )
