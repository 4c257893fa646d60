"""What to do about each reason a gate can be blocked for: the repair every report prints beside the reason.

Its own module so the preflight report, which prints a repair for every blocked gate, imports no run artifacts.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalglass.core.authority import BlockReason
from evalglass.core.tables import total

#: What to do about each reason a gate carries. Total over BlockReason (checked when the module loads).
BLOCK_REASON_FIXES: Mapping[BlockReason, str] = total(
    BlockReason,
    {
        BlockReason.GATE_UNDECLARED: (
            "The ledger approves a gate the config no longer declares (renamed or deleted). Declare it again, or "
            "have the host retire the approval with `active: false`."
        ),
        BlockReason.POLICY_FORBIDDEN: "The host's policy in the ledger forbids this gate; only the host can lift that.",
        BlockReason.APPROVAL_UNBOUND: "Bind the approval to the current definition by writing its fingerprint.",
        BlockReason.APPROVAL_STALE: (
            "The gate or its metric changed after approval, or an evaluator it depends on has a new version "
            "(the reason names it). Review the change, then re-approve with the new fingerprint."
        ),
        BlockReason.APPROVAL_EXPIRED: (
            "The approval is past its expiry (its `expires_on`, or the policy's `max_age_days` from `approved_on`). "
            "The host re-reviews the gate and renews the entry: a new `expires_on` or `approved_on`."
        ),
        BlockReason.GOLD_EXPIRED: (
            "The gold validation is past its expiry (`expires_on`, or `max_age_days` from `validated_on`). The host "
            "reviews the reference answers again and renews the `datasets:` entry."
        ),
        BlockReason.CALIBRATION_EXPIRED: (
            "The judge's calibration is past its expiry (the `judges:` entry's `expires_on`, or `max_age_days` from "
            "the calibration's date). Calibrate again (`evalglass calibrate`), then the host renews the entry."
        ),
        BlockReason.CALIBRATION_UNAPPROVED: (
            "The judge's calibration record is a file a pull request can write: the host reviews the record (its "
            "agreement, its labels file, who changed it) and approves it by its fingerprint, `calibration:` under the "
            "`judges:` entry (`evalglass calibrate` and `explain` print the line). An edited record needs approving "
            "again."
        ),
        BlockReason.GOLD_NOT_VALIDATED: (
            "The gate stands on the dataset's gold: the reference answers its metric compares with, or the examples "
            "it measures (their ids and inputs). Review them, then mark the dataset as validated gold."
        ),
        BlockReason.GOLD_STALE: "The dataset changed after it was validated. Review it, then re-validate it.",
        BlockReason.JUDGE_ENDPOINT_UNBOUND: (
            "Review the server the judge is served from, then add `judge_endpoint:` to the gate's approval "
            "(`evalglass explain` prints it)."
        ),
        BlockReason.JUDGE_ENDPOINT_CHANGED: (
            "Point the judge back at the approved server, or have the host review the new one and approve it "
            "(`judge_endpoint:` in the gate's approval)."
        ),
        BlockReason.JUDGE_UNCALIBRATED: "Calibrate the judge against human labels (`evalglass calibrate`).",
        BlockReason.CHECK_NOT_PASSED: "The bound check did not reach a PASS or FAIL; repair what its outcome names.",
        BlockReason.CHECK_UNBOUND: (
            "The ledger requires this check to run bound to an approved target state; give the gate `expect_state:`."
        ),
        BlockReason.CHECK_INPUTS_UNBOUND: (
            "The ledger requires this check to bind the code it runs: list its test folders, globs or modules under "
            "the check's `inputs:`, then approve the gate's new fingerprint."
        ),
        BlockReason.NO_APPROVED_THRESHOLD: "Write the threshold you approve into the ledger entry.",
        BlockReason.NO_MEASURED_VALUE: (
            "No example was measured validly. Look at the metric's diagnostics: every score was excluded."
        ),
        BlockReason.INCOMPLETE_MEASUREMENT: (
            "Some examples were not measured. Fix their causes (see diagnostics), or, for non_evaluable, skipped or "
            "not_applicable exclusions you consider harmless, declare them under the gate's `tolerate:`."
        ),
        BlockReason.BELOW_MIN_N: "Too few examples were measured for this gate; add examples.",
        BlockReason.INTERVAL_UNDEFINED: (
            "The lower_bound rule needs a confidence bound, and none exists for so few values with this method; add "
            "examples (from at least 2 clusters when the interval is cluster-aware), or use the point rule, which "
            "the host must re-approve."
        ),
        BlockReason.BASELINE_MISSING: (
            "The host names the baseline in the ledger's `baselines:`: one run (`run:` its folder, relative to the "
            "ledger, or a reference such as main@latest, and its `fingerprint:`), or a branch to follow (`branch:`, "
            "`signed_by:`, `max_age_days:`). Make sure the run (or a signed run of that branch) can be read where "
            "this run looks: the folder, or the run history (`--db`, $EVALGLASS_DB)."
        ),
        BlockReason.BASELINE_UNSIGNED: (
            "The ledger follows only runs signed by the CI's key. Record a run of the branch from the job that holds "
            "the key (EVALGLASS_SIGNING_KEY); an unsigned run is never taken as the baseline."
        ),
        BlockReason.BASELINE_UNTRUSTED: (
            "The baseline run is signed by another key than the one the ledger names, or its signature does not hold "
            "(its files were edited after signing). Record a run signed by the approved key; if the CI's key "
            "changed, the host approves the new key's fingerprint (`signed_by:`)."
        ),
        BlockReason.BASELINE_WRONG_BRANCH: (
            "The baseline run was signed on another branch than the one the ledger follows. Record a signed run of "
            "that branch, or have the host change `branch:`."
        ),
        BlockReason.BASELINE_WRONG_SUITE: (
            "The baseline run is of another dataset (suite) than this run. Point the baseline at runs of this suite, "
            "or give each suite its own ledger."
        ),
        BlockReason.BASELINE_TOO_OLD: (
            "The newest trusted baseline run is older than the ledger's `max_age_days` allows. Record a new signed "
            "run of the branch (for example by re-running its CI job); the host may also raise `max_age_days`."
        ),
        BlockReason.BASELINE_EXPIRED: (
            "The baseline's approval is past its expiry (`expires_on`, or `max_age_days` from `approved_on`). The "
            "host reviews the baseline run again and renews its `baselines:` entry, or approves a newer run."
        ),
        BlockReason.BASELINE_STALE: (
            "The baseline's files are not the ones approved. If the change is intended, the host re-approves the "
            "baseline's current fingerprint; otherwise restore the approved run."
        ),
        BlockReason.NOT_COMPARABLE: (
            "The two runs do not measure the same thing. Re-run the baseline with the current definition and gold "
            "(and have it approved), or revert the change that made them differ."
        ),
        BlockReason.INCOMPLETE_PAIRS: (
            "Some paired examples were not measured validly in one of the runs. Fix their causes, or declare "
            "harmless non_evaluable, skipped or not_applicable exclusions under the gate's `tolerate:`."
        ),
        BlockReason.UNDECIDED: (
            "Gather better evidence: the interval straddles the threshold, so nothing was shown to be short (do not "
            "'fix' the system for this), nor shown to meet the gate. Add examples (the reason says about "
            "how many would decide at the observed effect), or samples per example where answers vary between runs; "
            "a wider margin or threshold is the host's decision in the ledger (docs/comparing-runs.md sizes a suite)."
        ),
        BlockReason.BELOW_THRESHOLD: (
            "The measurement is valid and falls short of the approved threshold: improve the system under test. "
            "Lowering the threshold is the host's decision, made in the ledger."
        ),
    },
)
