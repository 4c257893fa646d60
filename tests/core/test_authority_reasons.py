"""Every reason and note the ledger can give one gate, word for word: the message is what a host reads to know what
to renew, re-date, calibrate or approve, so a changed word is a changed reason. One scenario per branch of
``resolve_authority`` and ``_judge_reasons``, each held against the full resolved authority."""

from __future__ import annotations

import pytest

from evalglass.core.authority import (
    AgreementInterval,
    BaselineApproval,
    CalibrationRecord,
    DatasetValidation,
    GateApproval,
    GateIdentity,
    JudgeRequirement,
    JudgeStanding,
    Ledger,
    Policy,
    decided_judge,
    resolve_authority,
)

FP = "sha256:" + "1" * 64
OLD = "sha256:" + "9" * 64
DATA = "sha256:" + "2" * 64
JFP = "sha256:" + "a" * 64
TODAY = "2026-06-10"


def cal(fp=JFP, low=0.9, created="2026-05-01T10:00:00+00:00", agreed=190, n=200):
    return CalibrationRecord(
        judge="j",
        judge_fingerprint=fp,
        created_at=created,
        tool_version="0",
        model="x",
        rubric="r",
        labels_file="l.jsonl",
        labels_sha256="0" * 64,
        n=n,
        excluded=0,
        categories=(0, 1),
        confusion=((agreed, 0), (n - agreed, 0)),
        agreed=agreed,
        agreement=agreed / n,
        agreement_interval=AgreementInterval(low=low, high=0.97, confidence=0.95),
        kappa=None,
        ordinal=False,
    )


def ident(**kw):
    base = dict(name="g", fingerprint=FP, dataset="d", dataset_fingerprint=DATA, needs_gold=False)
    base.update(kw)
    return GateIdentity(**base)


def appr(**kw):
    base = dict(active=True, threshold=0.8, fingerprint=FP)
    base.update(kw)
    return GateApproval(**base)


SCENARIOS = {
    "forbid_all": (ident(), Ledger(gates={"g": appr()}, policy=Policy(forbid_all_gating=True, forbid_gates=("g",)))),
    "forbid_named": (ident(), Ledger(gates={"g": appr()}, policy=Policy(forbid_gates=("other", "g")))),
    "forbid_other": (ident(), Ledger(gates={"g": appr()}, policy=Policy(forbid_gates=("other",)))),
    "unbound": (ident(), Ledger(gates={"g": appr(fingerprint=None)})),
    "stale": (ident(), Ledger(gates={"g": appr(fingerprint=OLD)})),
    "stale_cause": (ident(stale_cause="metric exact_match@1 is now @2"), Ledger(gates={"g": appr(fingerprint=OLD)})),
    "expired": (ident(), Ledger(gates={"g": appr(expires_on="2026-06-09")})),
    "last_day": (ident(), Ledger(gates={"g": appr(expires_on="2026-06-10")})),
    "max_age": (ident(), Ledger(gates={"g": appr(approved_on="2026-05-01")}, policy=Policy(max_age_days=30))),
    "undated": (ident(), Ledger(gates={"g": appr()}, policy=Policy(max_age_days=30))),
    "gold_undated": (
        ident(needs_gold=True),
        Ledger(
            gates={"g": appr(approved_on="2026-06-01")},
            datasets={"d": DatasetValidation(validated_gold=True, fingerprint=DATA)},
            policy=Policy(max_age_days=30),
        ),
    ),
    "gold_max_age": (
        ident(needs_gold=True),
        Ledger(
            gates={"g": appr(approved_on="2026-06-01")},
            datasets={"d": DatasetValidation(validated_gold=True, fingerprint=DATA, validated_on="2026-04-01")},
            policy=Policy(max_age_days=30),
        ),
    ),
    "gold_expired": (
        ident(needs_gold=True),
        Ledger(
            gates={"g": appr()},
            datasets={"d": DatasetValidation(validated_gold=True, fingerprint=DATA, expires_on="2026-06-01")},
        ),
    ),
    "gold_not_validated_no_expiry": (
        ident(needs_gold=True),
        Ledger(gates={"g": appr()}, datasets={"d": DatasetValidation(validated_gold=False, expires_on="2026-06-01")}),
    ),
    "gold_warning": (
        ident(needs_gold=True),
        Ledger(
            gates={"g": appr()},
            datasets={"d": DatasetValidation(validated_gold=True, fingerprint=DATA, expires_on="2026-06-12")},
        ),
    ),
    "no_threshold": (ident(), Ledger(gates={"g": appr(threshold=None)})),
    "margin_not_threshold": (ident(), Ledger(gates={"g": appr(threshold=None, margin=0.02)})),
    "check_no_threshold": (
        ident(needs_threshold=False),
        Ledger(gates={"g": appr(threshold=None, require_binding=True)}),
    ),
    "comparative_no_margin": (ident(comparative=True, baseline="main"), Ledger(gates={"g": appr()})),
    "comparative_no_margin_bare": (ident(comparative=True, baseline="main"), Ledger(gates={"g": appr(threshold=None)})),
    "comparative_margin": (
        ident(comparative=True, baseline="main"),
        Ledger(
            gates={"g": appr(threshold=None, margin=0.05)},
            baselines={"main": BaselineApproval(run="runs/main", fingerprint=FP, expires_on="2026-06-01")},
        ),
    ),
    "comparative_baseline_max_age": (
        ident(comparative=True, baseline="main"),
        Ledger(
            gates={"g": appr(threshold=None, margin=0.05, approved_on="2026-06-01")},
            baselines={"main": BaselineApproval(run="runs/main", approved_on="2026-04-20")},
            policy=Policy(max_age_days=30),
        ),
    ),
    "comparative_expiring_note": (
        ident(comparative=True, baseline="main"),
        Ledger(gates={"g": appr(threshold=None, margin=0.05, expires_on="2026-06-12")}),
    ),
    "check_threshold_ignored": (ident(needs_threshold=False), Ledger(gates={"g": appr(threshold=0.5)})),
    "comparative_baseline_undated": (
        ident(comparative=True, baseline="main"),
        Ledger(
            gates={"g": appr(threshold=None, margin=0.05, approved_on="2026-06-01")},
            baselines={"main": BaselineApproval(run="runs/main")},
            policy=Policy(max_age_days=30),
        ),
    ),
    "not_comparative_baseline_ignored": (
        ident(baseline="main"),
        Ledger(gates={"g": appr()}, baselines={"main": BaselineApproval(run="runs/main", expires_on="2026-06-01")}),
    ),
    "judge_nothing": (ident(judge=JudgeStanding(metric="j", fingerprint=JFP)), Ledger(gates={"g": appr()})),
    "judge_record_no_requirement": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal())),
        Ledger(gates={"g": appr()}),
    ),
    "judge_stale_no_requirement": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal(fp="sha256:" + "b" * 64))),
        Ledger(gates={"g": appr()}),
    ),
    "judge_no_record": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP)),
        Ledger(gates={"g": appr()}, judges={"j": JudgeRequirement(min_agreement=0.8)}),
    ),
    "judge_stale": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal(fp="sha256:" + "b" * 64))),
        Ledger(gates={"g": appr()}, judges={"j": JudgeRequirement(min_agreement=0.8)}),
    ),
    "judge_low": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal(low=0.79))),
        Ledger(
            gates={"g": appr()}, judges={"j": JudgeRequirement(min_agreement=0.8, calibration=cal(low=0.79).digest)}
        ),
    ),
    "judge_at_min": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal(low=0.8))),
        Ledger(gates={"g": appr()}, judges={"j": JudgeRequirement(min_agreement=0.8, calibration=cal(low=0.8).digest)}),
    ),
    # The ledger approves no record: the one found (whatever its numbers say) does not decide.
    "calibration_unpinned": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal(low=0.8))),
        Ledger(gates={"g": appr()}, judges={"j": JudgeRequirement(min_agreement=0.8)}),
    ),
    # The ledger approves another record (the approved one edited, or replaced): blocked, and a low agreement too.
    "calibration_other_pin": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal(low=0.79))),
        Ledger(gates={"g": appr()}, judges={"j": JudgeRequirement(min_agreement=0.8, calibration=cal(low=0.8).digest)}),
    ),
    # A run recorded before the ledger approved records is re-derived as it was decided: on the record found.
    "calibration_unpinned_earlier_run": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal(low=0.8), approved_record=False)),
        Ledger(gates={"g": appr()}, judges={"j": JudgeRequirement(min_agreement=0.8)}),
    ),
    # A stale record is not offered for approval: it must be calibrated again first.
    "calibration_stale_unpinned": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal(fp="sha256:" + "b" * 64))),
        Ledger(gates={"g": appr()}, judges={"j": JudgeRequirement(min_agreement=0.8, calibration=cal().digest)}),
    ),
    "judge_other_requirement": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal())),
        Ledger(gates={"g": appr()}, judges={"k": JudgeRequirement(min_agreement=0.8)}),
    ),
    "calibration_expired": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal())),
        Ledger(
            gates={"g": appr()},
            judges={"j": JudgeRequirement(min_agreement=0.8, expires_on="2026-06-01", calibration=cal().digest)},
        ),
    ),
    "calibration_max_age": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal())),
        Ledger(
            gates={"g": appr(approved_on="2026-06-01")},
            judges={"j": JudgeRequirement(min_agreement=0.8, calibration=cal().digest)},
            policy=Policy(max_age_days=30),
        ),
    ),
    "calibration_bad_date": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal(created="yesterday"))),
        Ledger(
            gates={"g": appr(approved_on="2026-06-01")},
            judges={"j": JudgeRequirement(min_agreement=0.8, calibration=cal(created="yesterday").digest)},
            policy=Policy(max_age_days=30),
        ),
    ),
    "calibration_no_requirement_no_expiry": (
        ident(judge=JudgeStanding(metric="j", fingerprint=JFP, calibration=cal())),
        Ledger(gates={"g": appr()}, policy=Policy(expiry_warning_days=0)),
    ),
}


EXPECTED: dict[str, dict] = {
    "forbid_all": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [("policy_forbidden", "the ledger's policy forbids all gating")],
        "notes": [],
    },
    "forbid_named": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [("policy_forbidden", "the ledger's policy forbids gate 'g'")],
        "notes": [],
    },
    "forbid_other": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [],
        "notes": [],
    },
    "unbound": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "approval_unbound",
                "the approval names no fingerprint; approve the current definition "
                "sha256:1111111111111111111111111111111111111111111111111111111111111111",
            )
        ],
        "notes": [],
    },
    "stale": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "approval_stale",
                "the gate or metric definition changed since approval (approved "
                "sha256:9999999999999999999999999999999999999999999999999999999999999999, now "
                "sha256:1111111111111111111111111111111111111111111111111111111111111111)",
            )
        ],
        "notes": [],
    },
    "stale_cause": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "approval_stale",
                "metric exact_match@1 is now @2 (approved "
                "sha256:9999999999999999999999999999999999999999999999999999999999999999, now "
                "sha256:1111111111111111111111111111111111111111111111111111111111111111)",
            )
        ],
        "notes": [],
    },
    "expired": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "approval_expired",
                "the approval of gate 'g' counted through 2026-06-09 (expires_on 2026-06-09) and today "
                "is 2026-06-10; the host re-reviews it and renews it in the ledger",
            )
        ],
        "notes": [],
    },
    "last_day": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [],
        "notes": [
            "expiring: the approval of gate 'g' counts through 2026-06-10 (expires_on 2026-06-10): "
            "today is its last day; re-review it before then"
        ],
    },
    "max_age": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "approval_expired",
                "the approval of gate 'g' counted through 2026-05-31 (approved_on 2026-05-01 + "
                "max_age_days 30) and today is 2026-06-10; the host re-reviews it and renews it in the "
                "ledger",
            )
        ],
        "notes": [],
    },
    "undated": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "approval_expired",
                "the approval of gate 'g' has no approved_on date, so its age under the ledger policy's "
                "max_age_days 30 is unknown; the host re-reviews it and dates it (approved_on: "
                "YYYY-MM-DD)",
            )
        ],
        "notes": [],
    },
    "gold_undated": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "gold_expired",
                "the gold validation of dataset 'd' has no validated_on date, so its age under the "
                "ledger policy's max_age_days 30 is unknown; the host re-reviews it and dates it "
                "(validated_on: YYYY-MM-DD)",
            )
        ],
        "notes": [],
    },
    "gold_max_age": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "gold_expired",
                "the gold validation of dataset 'd' counted through 2026-05-01 (validated_on "
                "2026-04-01 + max_age_days 30) and today is 2026-06-10; the host re-reviews it and "
                "renews it in the ledger",
            )
        ],
        "notes": [],
    },
    "gold_expired": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "gold_expired",
                "the gold validation of dataset 'd' counted through 2026-06-01 (expires_on "
                "2026-06-01) and today is 2026-06-10; the host re-reviews it and renews it in the "
                "ledger",
            )
        ],
        "notes": [],
    },
    "gold_not_validated_no_expiry": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "gold_not_validated",
                "the metric compares with reference fields of dataset 'd', which "
                "the ledger does not mark as validated gold",
            )
        ],
        "notes": [],
    },
    "gold_warning": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [],
        "notes": [
            "expiring: the gold validation of dataset 'd' counts through 2026-06-12 (expires_on "
            "2026-06-12): 2 days left; re-review it before then"
        ],
    },
    "no_threshold": {
        "active": True,
        "threshold": None,
        "margin": None,
        "require_binding": False,
        "reasons": [("no_approved_threshold", "the ledger activates this gate without a threshold")],
        "notes": [],
    },
    "margin_not_threshold": {
        "active": True,
        "threshold": None,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "no_approved_threshold",
                "the ledger activates this gate without a threshold (a `margin` approves comparative gates only)",
            )
        ],
        "notes": [],
    },
    "check_no_threshold": {
        "active": True,
        "threshold": None,
        "margin": None,
        "require_binding": True,
        "reasons": [],
        "notes": [],
    },
    "comparative_no_margin": {
        "active": True,
        "threshold": None,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "no_approved_threshold",
                "the ledger activates this comparative gate without a margin (comparative "
                "gates approve a `margin`, not a `threshold`)",
            )
        ],
        "notes": [],
    },
    "comparative_no_margin_bare": {
        "active": True,
        "threshold": None,
        "margin": None,
        "require_binding": False,
        "reasons": [("no_approved_threshold", "the ledger activates this comparative gate without a margin")],
        "notes": [],
    },
    "comparative_margin": {
        "active": True,
        "threshold": None,
        "margin": 0.05,
        "require_binding": False,
        "reasons": [
            (
                "baseline_expired",
                "the approval of baseline 'main' counted through 2026-06-01 (expires_on "
                "2026-06-01) and today is 2026-06-10; the host re-reviews it and renews it in "
                "the ledger",
            )
        ],
        "notes": [],
    },
    "comparative_baseline_max_age": {
        "active": True,
        "threshold": None,
        "margin": 0.05,
        "require_binding": False,
        "reasons": [
            (
                "baseline_expired",
                "the approval of baseline 'main' counted through 2026-05-20 "
                "(approved_on 2026-04-20 + max_age_days 30) and today is "
                "2026-06-10; the host re-reviews it and renews it in the ledger",
            )
        ],
        "notes": [],
    },
    "comparative_expiring_note": {
        "active": True,
        "threshold": None,
        "margin": 0.05,
        "require_binding": False,
        "reasons": [],
        "notes": [
            "expiring: the approval of gate 'g' counts through 2026-06-12 (expires_on "
            "2026-06-12): 2 days left; re-review it before then"
        ],
    },
    "check_threshold_ignored": {
        "active": True,
        "threshold": None,
        "margin": None,
        "require_binding": False,
        "reasons": [],
        "notes": [],
    },
    "comparative_baseline_undated": {
        "active": True,
        "threshold": None,
        "margin": 0.05,
        "require_binding": False,
        "reasons": [
            (
                "baseline_expired",
                "the approval of baseline 'main' has no approved_on date, so its "
                "age under the ledger policy's max_age_days 30 is unknown; the host "
                "re-reviews it and dates it (approved_on: YYYY-MM-DD)",
            )
        ],
        "notes": [],
    },
    "not_comparative_baseline_ignored": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [],
        "notes": [],
    },
    "judge_nothing": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "the ledger has no `judges: {j: {min_agreement: ...}}` entry saying how well judge "
                "'j' must agree with human labels; add one to the ledger, and run `evalglass "
                "calibrate j --labels FILE.jsonl` with human-labelled examples",
            )
        ],
        "notes": [],
    },
    "judge_record_no_requirement": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "the ledger has no `judges: {j: {min_agreement: ...}}` entry saying "
                "how well judge 'j' must agree with human labels; add one to the "
                "ledger, approving the record found (calibrations/j.json) once reviewed: "
                '`calibration: "sha256:c25a0602061900737f44f818b3fdade48463f5fadc91a60e1aaee1e2a23f2c50"`',
            )
        ],
        "notes": [],
    },
    "judge_stale_no_requirement": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "the ledger has no `judges: {j: {min_agreement: ...}}` entry saying "
                "how well judge 'j' must agree with human labels; add one to the "
                "ledger, and run `evalglass calibrate j --labels FILE.jsonl` with "
                "human-labelled examples",
            ),
            (
                "judge_uncalibrated",
                "the calibration of judge 'j' is stale: it describes judge "
                "sha256:bbbbb…, but the rubric, model, prompt, scale, sampling "
                "parameters, field or reference changed (now sha256:aaaaa…); run "
                "`evalglass calibrate j --labels FILE.jsonl` with human-labelled "
                "examples again",
            ),
        ],
        "notes": [],
    },
    "judge_no_record": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "judge 'j' has no calibration record; run `evalglass calibrate j --labels "
                "FILE.jsonl` with human-labelled examples",
            )
        ],
        "notes": [],
    },
    "judge_stale": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "the calibration of judge 'j' is stale: it describes judge sha256:bbbbb…, but the "
                "rubric, model, prompt, scale, sampling parameters, field or reference changed (now "
                "sha256:aaaaa…); run `evalglass calibrate j --labels FILE.jsonl` with human-labelled "
                "examples again",
            )
        ],
        "notes": [],
    },
    "judge_low": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "judge 'j' agrees with human labels 0.950 (190/200, 95% interval 0.790–0.970); the "
                "interval's lower bound 0.790 is below the ledger's min_agreement 0.8: improve the "
                "rubric or add labels, then calibrate again",
            )
        ],
        "notes": [],
    },
    "judge_at_min": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [],
        "notes": [],
    },
    # The digests are written out: an approved record's digest must never move under a new EvalGlass.
    "calibration_unpinned": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "calibration_unapproved",
                "the ledger's entry for judge 'j' approves no calibration record (no `calibration:`), so the "
                "record found, calibrations/j.json (sha256:61f41e7e68e896b7fa899373ed7d0e6b21321bd6669dd468e61217bf304e703f, "
                "created 2026-05-01T10:00:00+00:00, agreement 190/200 on labels l.jsonl), may be anyone's; have "
                'the host review it and add `calibration: "sha256:61f41e7e68e896b7fa899373ed7d0e6b21321bd6669dd468e61217bf304e703f"` '
                "under the ledger's `judges: j:` entry (`evalglass calibrate` and `explain` print it)",
            )
        ],
        "notes": [],
    },
    "calibration_other_pin": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "judge 'j' agrees with human labels 0.950 (190/200, 95% interval 0.790–0.970); the "
                "interval's lower bound 0.790 is below the ledger's min_agreement 0.8: improve the "
                "rubric or add labels, then calibrate again",
            ),
            (
                "calibration_unapproved",
                "the calibration record of judge 'j' is not the one the ledger approves "
                "(sha256:61f41e7e68e896b7fa899373ed7d0e6b21321bd6669dd468e61217bf304e703f): found calibrations/j.json "
                "(sha256:6861a5c718cf7e8e7b71917643969927cf66ac14df56795614ae8086cfdabda7, created 2026-05-01T10:00:00+00:00, "
                "agreement 190/200 on labels l.jsonl); it was edited or replaced since approval. Restore the "
                "approved record, or have the host review it and add "
                '`calibration: "sha256:6861a5c718cf7e8e7b71917643969927cf66ac14df56795614ae8086cfdabda7"` under the '
                "ledger's `judges: j:` entry",
            ),
        ],
        "notes": [],
    },
    "calibration_unpinned_earlier_run": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [],
        "notes": [],
    },
    "calibration_stale_unpinned": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "the calibration of judge 'j' is stale: it describes judge sha256:bbbbb…, but the rubric, model, "
                "prompt, scale, sampling parameters, field or reference changed (now sha256:aaaaa…); run "
                "`evalglass calibrate j --labels FILE.jsonl` with human-labelled examples again",
            )
        ],
        "notes": [],
    },
    "judge_other_requirement": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "the ledger has no `judges: {j: {min_agreement: ...}}` entry saying how "
                "well judge 'j' must agree with human labels; add one to the ledger, approving the record found (calibrations/j.json) once reviewed: "
                '`calibration: "sha256:c25a0602061900737f44f818b3fdade48463f5fadc91a60e1aaee1e2a23f2c50"`',
            )
        ],
        "notes": [],
    },
    "calibration_expired": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "calibration_expired",
                "the calibration of judge 'j' counted through 2026-06-01 (expires_on "
                "2026-06-01) and today is 2026-06-10; the host re-reviews it and renews it "
                "in the ledger",
            )
        ],
        "notes": [],
    },
    "calibration_max_age": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "calibration_expired",
                "the calibration of judge 'j' counted through 2026-05-31 (calibration date "
                "(its record's created_at) 2026-05-01 + max_age_days 30) and today is "
                "2026-06-10; the host re-reviews it and renews it in the ledger",
            )
        ],
        "notes": [],
    },
    "calibration_bad_date": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "calibration_expired",
                "the calibration of judge 'j' has no calibration date (its record's "
                "created_at) date, so its age under the ledger policy's max_age_days 30 is "
                "unknown; the host re-reviews it and dates it (calibration date (its "
                "record's created_at): YYYY-MM-DD)",
            )
        ],
        "notes": [],
    },
    "calibration_no_requirement_no_expiry": {
        "active": True,
        "threshold": 0.8,
        "margin": None,
        "require_binding": False,
        "reasons": [
            (
                "judge_uncalibrated",
                "the ledger has no `judges: {j: {min_agreement: ...}}` "
                "entry saying how well judge 'j' must agree with human "
                "labels; add one to the ledger, approving the record found (calibrations/j.json) once reviewed: "
                '`calibration: "sha256:c25a0602061900737f44f818b3fdade48463f5fadc91a60e1aaee1e2a23f2c50"`',
            )
        ],
        "notes": [],
    },
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_ledger_gives_each_gate_exactly_these_reasons_and_notes(name: str) -> None:
    gate, ledger = SCENARIOS[name]
    found = resolve_authority(gate, ledger, today=TODAY)
    assert {
        "active": found.active,
        "threshold": found.threshold,
        "margin": found.margin,
        "require_binding": found.require_binding,
        "reasons": [(reason.code.value, reason.message) for reason in found.reasons],
        "notes": list(found.notes),
    } == EXPECTED[name]


def test_every_scenario_has_its_expectation() -> None:
    assert set(SCENARIOS) == set(EXPECTED)


@pytest.mark.parametrize("comparative", [False, True])
@pytest.mark.parametrize("subject", ["j", "j@a", "j@a-vs-b"])
def test_every_gate_on_a_judge_stands_on_its_calibration_and_an_earlier_run_is_rederived_as_decided(
    subject: str, comparative: bool
) -> None:
    standing = JudgeStanding(metric="j", fingerprint=JFP, endpoint="openai http://127.0.0.1:1/v1")
    standings = {"j": standing}
    assert decided_judge(standings, subject, comparative=comparative) == (standing, None)
    assert decided_judge(standings, "other", comparative=comparative) == (None, None)
    # A run recorded before: a plain gate on the judge's own metric stood on it, any other only on its endpoint.
    earlier = decided_judge(standings, subject, comparative=comparative, every=False)
    plain = subject == "j" and not comparative
    assert earlier == ((standing, None) if plain else (None, standing.endpoint))
