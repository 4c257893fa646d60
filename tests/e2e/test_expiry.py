"""Approvals and gold validations that expire, through the real CLI: blocked after the date, warned before it,
shown by every renderer and re-derived by `verify` on the run's own date.

`run` decides on the date of its own `created_at` (UTC), so these tests write dates relative to today's UTC date.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from tests.e2e.project import Project, make_project


def day(offset: int) -> str:
    return (datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=offset)).isoformat()


_PRINTS: dict[str, tuple[str, str]] = {}


def ledger(project: Project, gate: dict[str, Any] | None = None, gold: dict[str, Any] | None = None, **top: Any):
    """The ledger a host writes from `explain` (fingerprints taken once, while nothing is approved yet)."""
    if str(project.root) not in _PRINTS:
        project.run()
        _PRINTS[str(project.root)] = (project.gate_fingerprint("accuracy"), project.dataset_fingerprint())
    gate_fp, data_fp = _PRINTS[str(project.root)]
    return {
        "version": 1,
        **top,
        "gates": {
            "accuracy": {
                "active": True,
                "threshold": 0.7,
                "fingerprint": gate_fp,
                **(gate or {}),
            }
        },
        "datasets": {"suite": {"validated_gold": True, "fingerprint": data_fp, **(gold or {})}},
    }


def gate_of(project: Project) -> tuple[int, dict[str, Any]]:
    result = project.run("--format", "json")
    return result.code, result.json()["decision"]["gates"][0]


def codes(gate: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in gate["reasons"]]


def test_an_approval_past_its_expires_on_blocks_everywhere_and_verifies(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(ledger(project, gate={"expires_on": day(-1)}))
    code, gate = gate_of(project)
    assert (code, gate["outcome"], codes(gate)) == (1, "blocked", ["approval_expired"])
    assert day(-1) in gate["reasons"][0]["message"] and "renews it" in gate["reasons"][0]["message"]
    text = project.run()
    assert text.code == 1 and "approval_expired" in text.out
    run = project.last_run()
    assert "approval_expired" in (run / "report.md").read_text()
    explained = project.cli("explain", "accuracy")
    assert "approval_expired" in explained.out and "re-reviews the gate and renews the entry" in explained.out
    assert "Ledger entry to write" in explained.out
    verified = project.cli("verify", str(run))
    assert verified.code == 0, verified.out + verified.err


def test_the_last_day_still_counts(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(ledger(project, gate={"expires_on": day(0)}))
    code, gate = gate_of(project)
    assert (code, gate["outcome"]) == (0, "pass")
    assert any("today is its last day" in note for note in gate["notes"])


def test_an_approval_about_to_expire_passes_with_a_warning_in_every_renderer(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(ledger(project, gate={"expires_on": day(5)}))
    code, gate = gate_of(project)
    assert (code, gate["outcome"]) == (0, "pass")
    (note,) = gate["notes"]
    assert note.startswith("expiring:") and day(5) in note and "5 days left" in note
    text = project.run()
    assert text.code == 0 and "expiring" in text.out
    last = project.last_run()
    assert "expiring" in (last / "report.md").read_text()
    assert "note: expiring" in project.cli("explain", "accuracy").out
    assert project.cli("report").code == 0
    html = next(iter([*last.glob("report.html"), *project.root.glob("report-*.html")])).read_text()
    assert "expiring" in html
    # Beyond the warning window (14 days by default) nothing is said; the policy can widen it.
    project.write_ledger(ledger(project, gate={"expires_on": day(20)}))
    assert gate_of(project)[1]["notes"] == []
    project.write_ledger(ledger(project, gate={"expires_on": day(20)}, policy={"expiry_warning_days": 30}))
    assert "20 days left" in gate_of(project)[1]["notes"][0]


def test_max_age_days_counts_from_approved_on_and_validated_on(tmp_path):
    project = make_project(tmp_path)
    policy = {"max_age_days": 30}
    fresh = ledger(project, gate={"approved_on": day(-3)}, gold={"validated_on": day(-3)}, policy=policy)
    project.write_ledger(fresh)
    assert gate_of(project)[0] == 0
    old = ledger(project, gate={"approved_on": day(-31)}, gold={"validated_on": day(-40)}, policy=policy)
    project.write_ledger(old)
    code, gate = gate_of(project)
    assert (code, codes(gate)) == (1, ["approval_expired", "gold_expired"])
    assert "max_age_days 30" in gate["reasons"][0]["message"]
    entry = project.cli("explain", "accuracy").out
    assert "approved_on:" in entry and "validated_on:" in entry  # the entry to write must be dated


def test_an_undated_approval_under_max_age_days_counts_as_expired(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(ledger(project, gold={"validated_on": day(0)}, policy={"max_age_days": 365}))
    code, gate = gate_of(project)
    assert (code, codes(gate)) == (1, ["approval_expired"])
    assert "no approved_on date" in gate["reasons"][0]["message"]


def test_unquoted_yaml_dates_are_dates(tmp_path):
    project = make_project(tmp_path)
    entry = ledger(project)
    fingerprint = entry["gates"]["accuracy"]["fingerprint"]
    data = entry["datasets"]["suite"]["fingerprint"]
    project.write_ledger(
        f"version: 1\npolicy:\n  max_age_days: 10\ngates:\n  accuracy:\n    active: true\n    threshold: 0.7\n"
        f'    fingerprint: "{fingerprint}"\n    approved_on: {day(-11)}\n'
        f'datasets:\n  suite:\n    validated_gold: true\n    fingerprint: "{data}"\n'
        f"    expires_on: {day(30)}\n    validated_on: {day(-1)}\n"
    )
    code, gate = gate_of(project)
    assert (code, codes(gate)) == (1, ["approval_expired"])


@pytest.mark.parametrize(
    ("entry", "policy", "where", "says"),
    [
        ({"expires_on": "2026-02-30"}, {}, ":6", "month 2 of 2026 has 28 days"),
        ({"expires_on": "soon"}, {}, ":6", "YYYY-MM-DD"),
        ({"approved_on": "last week"}, {"max_age_days": 30}, ":8", "max_age_days counts from this day"),
        ({"expire_on": "2030-01-01"}, {}, ":6", "did you mean 'expires_on'"),
    ],
)
def test_bad_dates_are_one_line_naming_the_ledger_line(tmp_path, entry, policy, where, says):
    project = make_project(tmp_path)
    project.run()
    fingerprint = project.gate_fingerprint("accuracy")
    body: dict[str, Any] = {"version": 1}
    if policy:
        body["policy"] = policy
    body["gates"] = {"accuracy": {"active": True, "fingerprint": fingerprint, **entry}}
    project.write_ledger(body)
    result = project.run()
    assert result.code == 2, result.out
    (line,) = result.err.strip().splitlines()
    assert "authority.yaml" + where in line and says in line and "Traceback" not in result.err


@pytest.mark.parametrize("value", [0, -5, "30", 1.5, True])
def test_max_age_days_must_be_a_positive_whole_number(tmp_path, value):
    project = make_project(tmp_path)
    project.write_ledger({"version": 1, "policy": {"max_age_days": value}})
    result = project.run()
    assert result.code == 2 and "max_age_days" in result.err and "Traceback" not in result.err


def test_verify_decides_on_the_run_date_not_the_day_it_runs(tmp_path):
    """A run that passed before an approval expired still verifies afterwards: it decided on its own day. Editing
    the recorded day to one after the expiry is a finding, because the gate would then have blocked."""
    project = make_project(tmp_path)
    project.write_ledger(ledger(project, gate={"expires_on": day(3)}))
    assert project.run().code == 0
    run = project.last_run()
    for name in ("runrecord.json", "scorecard.json"):
        path = run / name
        data = json.loads(path.read_text())
        data["created_at"] = day(10) + data["created_at"][10:]
        path.write_text(json.dumps(data, indent=2))
    verified = project.cli("verify", str(run))
    assert verified.code == 1
    assert "approval_expired" in verified.out + verified.err


def test_a_baseline_approval_expires_like_any_other(tmp_path):
    from tests.e2e.test_comparative_gates import NO_CHANGE, gate_of, reasons, setup

    project, approved = setup(tmp_path, NO_CHANGE)
    approved["baselines"]["main"]["expires_on"] = day(-1)
    project.write_ledger(approved)
    result = project.run("--out", "runs/cand", "--format", "json")
    gate = gate_of(result)
    assert (result.code, reasons(gate)) == (1, ["baseline_expired"])
    assert "baseline 'main'" in gate["reasons"][0]["message"]
    assert project.cli("verify", "runs/cand").code == 0
    assert "renews its `baselines:` entry" in project.cli("explain", "no-regression", "--run", "runs/cand").out
    # Under max_age_days the baseline's approved_on counts; within the warning window it passes with a note.
    approved["baselines"]["main"].pop("expires_on")
    approved["baselines"]["main"]["approved_on"] = day(-25)
    approved["gates"]["no-regression"]["approved_on"] = day(0)
    approved["datasets"]["suite"]["validated_on"] = day(0)
    approved["policy"] = {"max_age_days": 30}
    project.write_ledger(approved)
    gate = gate_of(project.run("--format", "json"))
    assert gate["outcome"] == "pass" and any("baseline 'main'" in note for note in gate["notes"])
