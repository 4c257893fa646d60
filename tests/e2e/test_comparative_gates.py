"""Comparative gates through the real CLI: approval in the ledger, pass / fail / every block, verify, explain."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from tests.e2e.project import base_config, make_project
from tests.e2e.test_forgery import reseal_scores

GATE = {"metric": "exact", "compare_to": "main", "direction": "higher_is_better"}
SCORER = """\
def score(output):
    if output == "boom":
        raise RuntimeError("the scorer cannot read this output")
    return 1.0 if output == "a" else 0.0
"""


def rows_with(pattern, extra=None):
    """``pattern``: (baseline correct?, candidate correct?) per example; both outputs live in one dataset."""
    return [
        {"id": f"q{i:03d}", "expected": "a", "old": "a" if old else "b", "new": "a" if new else "b", **(extra or {})}
        for i, (old, new) in enumerate(pattern)
    ]


def setup(tmp_path, pattern, *, rule="point", margin=0.05, gate=None, extra_gate=None, metrics=None, rows=None):
    """A baseline run (field `old`) approved in the ledger, and a config whose candidate reads `new`; the dataset
    (one file holding both outputs) is validated gold."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    project = make_project(tmp_path, gates={})
    if metrics is not None:
        (project.evals / "scorer.py").write_text(SCORER)
    project.write_rows(rows if rows is not None else rows_with(pattern))
    more = {"metrics": metrics} if metrics is not None else {}
    project.write_config(base_config(gates={}, task={"type": "recorded", "field": "old"}, **more))
    assert project.run("--out", "runs/base").code == 0
    fingerprint = project.cli("compare", "runs/base", "runs/base", "--format", "json").json()["base"]["fingerprint"]
    gates = {"no-regression": {**GATE, "rule": rule, **(gate or {})}, **(extra_gate or {})}
    project.write_config(base_config(gates=gates, task={"type": "recorded", "field": "new"}, **more))
    probe = project.run("--out", "runs/probe", "--format", "json")
    assert probe.code in (0, 1), probe.err
    gate_fp = next(g for g in probe.json()["decision"]["gates"] if g["name"] == "no-regression")["fingerprint"]
    ledger = {
        "version": 1,
        "datasets": {"suite": {"validated_gold": True, "fingerprint": probe.json()["dataset"]["gold_fingerprint"]}},
        "baselines": {"main": {"run": "../runs/base", "fingerprint": fingerprint}},
        "gates": {"no-regression": {"active": True, "fingerprint": gate_fp, "margin": margin}},
    }
    project.write_ledger(ledger)
    return project, ledger


def gate_of(result, name="no-regression"):
    return next(g for g in result.json()["decision"]["gates"] if g["name"] == name)


def reasons(gate):
    return [reason["code"] for reason in gate["reasons"]]


NO_CHANGE = [(True, True)] * 40 + [(False, False)] * 10
BIG_DROP = [(True, True)] * 30 + [(True, False)] * 10 + [(False, False)] * 10


def test_no_change_passes_and_verifies(tmp_path):
    project, _ = setup(tmp_path, NO_CHANGE)
    result = project.run("--out", "runs/cand", "--format", "json")
    assert result.code == 0, result.err
    gate = gate_of(result)
    assert gate["outcome"] == "pass" and gate["value"] == 0.0 and gate["threshold"] == -0.05
    assert gate["comparison"]["baseline"] == "main" and gate["comparison"]["metric"]["pairs"]["included"] == 50
    verify = project.cli("verify", "runs/cand")
    assert verify.code == 0, verify.out
    assert "not covered by the digests" not in verify.out  # the baseline copies are listed artifacts
    # the baseline's files travel with the run, so verify needs nothing outside the run folder
    shutil.rmtree(tmp_path / "runs" / "base")
    assert project.cli("verify", "runs/cand").code == 0
    report = (tmp_path / "runs/cand/report.md").read_text()
    assert "against baseline `main`" in report and "regressed (0" in report


def test_a_real_drop_fails_with_its_flips_everywhere(tmp_path):
    project, _ = setup(tmp_path, BIG_DROP)
    result = project.run("--out", "runs/cand", "--format", "json")
    assert result.code == 1
    gate = gate_of(result)
    assert gate["outcome"] == "fail" and [reason["code"] for reason in gate["reasons"]] == ["below_threshold"]
    assert "the paired difference -0.2 is below the approved threshold (needs ≥ -0.05)" in gate["reasons"][0]["message"]
    assert gate["value"] == pytest.approx(-10 / 50)
    metric = gate["comparison"]["metric"]
    assert metric["flips"]["regressed"] == [f"q{i:03d}" for i in range(30, 40)]
    assert metric["difference"]["interval"]["method"] == "newcombe_paired"
    text = project.run("--out", "runs/cand2")
    assert text.code == 1 and "≥ -0.05 (margin 0.05 vs baseline 'main')" in text.out
    report = (tmp_path / "runs/cand/report.md").read_text()
    assert "regressed (10" in report and "q030" in report
    assert project.cli("verify", "runs/cand").code == 0
    explained = project.cli("explain", "no-regression", "--run", "runs/cand")
    assert "is fail" in explained.out and "Flips" in explained.out and "q030" in explained.out


def test_lower_bound_leaves_undecided_a_lucky_small_sample_that_point_passes(tmp_path):
    small = [(True, True)] * 8 + [(True, False)] * 1 + [(False, True)] * 1
    point, _ = setup(tmp_path / "p", small, rule="point", margin=0.05)
    assert gate_of(point.run("--out", "runs/cand", "--format", "json"))["outcome"] == "pass"
    bound, _ = setup(tmp_path / "b", small, rule="lower_bound", margin=0.05)
    gate = gate_of(bound.run("--out", "runs/cand", "--format", "json"))
    assert gate["outcome"] == "blocked" and reasons(gate) == ["undecided"]
    assert gate["compared"] < -0.05 < gate["favourable_bound"] and gate["bound_method"] == "newcombe_paired"
    explained = bound.cli("explain", "no-regression", "--run", "runs/cand", "--format", "json").json()[0]
    power = next(line for line in explained["details"] if line.startswith("Power"))
    assert "cannot reliably detect" in power and "pairs" in power


def test_swapped_baseline_is_stale_and_missing_is_missing(tmp_path):
    project, ledger = setup(tmp_path, NO_CHANGE)
    scores = tmp_path / "runs/base/scores.jsonl"
    # a baseline quietly re-scored to look worse (so any candidate looks fine) no longer matches its approval
    scores.write_text(scores.read_text().replace("1.0", "0.0", 5))
    refused = project.run("--out", "runs/refused")  # the digest list says it is not the run's file
    assert refused.code == 2 and "baseline 'main' run does not add up: scores.jsonl" in refused.err, refused.err
    reseal_scores(tmp_path / "runs/base")  # made to add up again: still not the approved run
    gate = gate_of(project.run("--out", "runs/cand", "--format", "json"))
    assert gate["outcome"] == "blocked" and reasons(gate) == ["baseline_stale"]
    explained = project.cli("explain", "no-regression", "--run", "runs/cand")
    assert "baselines:" in explained.out and "fingerprint" in explained.out
    shutil.rmtree(tmp_path / "runs/base")
    gate = gate_of(project.run("--out", "runs/cand2", "--format", "json"))
    assert reasons(gate) == ["baseline_missing"] and "runs/base" in gate["reasons"][0]["message"]
    assert project.cli("verify", "runs/cand2").code == 0
    del ledger["baselines"]
    project.write_ledger(ledger)
    gate = gate_of(project.run("--out", "runs/cand3", "--format", "json"))
    assert reasons(gate) == ["baseline_missing"] and "names no baseline 'main'" in gate["reasons"][0]["message"]


def test_a_baseline_without_a_fingerprint_or_a_gate_without_a_margin_blocks(tmp_path):
    project, ledger = setup(tmp_path, NO_CHANGE)
    ledger["baselines"]["main"]["fingerprint"] = None
    ledger["gates"]["no-regression"]["margin"] = None
    project.write_ledger(ledger)
    gate = gate_of(project.run("--out", "runs/cand", "--format", "json"))
    assert gate["outcome"] == "blocked"
    assert sorted(reasons(gate)) == ["baseline_stale", "no_approved_threshold"]
    assert "margin" in " ".join(r["message"] for r in gate["reasons"])


def test_the_ledger_refuses_a_threshold_on_a_comparative_gate_and_a_margin_elsewhere(tmp_path):
    project, ledger = setup(tmp_path, NO_CHANGE)
    ledger["gates"]["no-regression"]["threshold"] = 0.0  # a threshold is never reused as a margin
    project.write_ledger(ledger)
    result = project.run("--out", "runs/cand")
    assert result.code == 2 and "Traceback" not in result.err
    assert "authority.yaml:" in result.err and "replace `threshold` with `margin`" in result.err
    ledger["gates"]["no-regression"]["threshold"] = None
    ledger["gates"]["other"] = {"active": False, "margin": 0.1}
    project.write_config(
        base_config(
            gates={"no-regression": GATE, "other": {"metric": "exact", "proposed_threshold": 0.5}},
            task={"type": "recorded", "field": "new"},
        )
    )
    project.write_ledger(ledger)
    result = project.run("--out", "runs/cand2")
    assert result.code == 2 and "gate 'other' compares with no baseline" in result.err


def test_the_ledger_refuses_a_baseline_no_gate_compares_with(tmp_path):
    project, ledger = setup(tmp_path, NO_CHANGE)
    ledger["baselines"]["mian"] = dict(ledger["baselines"]["main"])
    project.write_ledger(ledger)
    result = project.run("--out", "runs/cand")
    assert result.code == 2 and "Traceback" not in result.err
    assert "baseline 'mian'" in result.err and "did you mean 'main'" in result.err


def test_changed_metric_definition_or_gold_is_not_comparable(tmp_path):
    project, ledger = setup(tmp_path, NO_CHANGE)
    config = base_config(
        gates={"no-regression": {**GATE, "rule": "point"}},
        task={"type": "recorded", "field": "new"},
        metrics={"exact": {"type": "exact_match", "reference": "expected", "normalize": {"case": True}}},
    )
    project.write_config(config)
    probe = project.run("--out", "runs/probe2", "--format", "json")
    ledger["gates"]["no-regression"]["fingerprint"] = gate_of(probe)["fingerprint"]
    project.write_ledger(ledger)
    gate = gate_of(project.run("--out", "runs/cand", "--format", "json"))
    assert reasons(gate) == ["not_comparable"] and "metric_definition" in gate["reasons"][0]["message"]
    # gold: an edited reference answer (the dataset changed, so the pairs are not against the same gold)
    project.write_config(
        base_config(gates={"no-regression": {**GATE, "rule": "point"}}, task={"type": "recorded", "field": "new"})
    )
    ledger["gates"]["no-regression"]["fingerprint"] = gate_of(project.run("--out", "runs/probe3", "--format", "json"))[
        "fingerprint"
    ]
    project.write_ledger(ledger)
    rows = rows_with(NO_CHANGE)
    rows[0]["expected"] = "b"
    project.write_rows(rows)
    gate = gate_of(project.run("--out", "runs/cand2", "--format", "json"))
    assert "not_comparable" in reasons(gate)
    assert any(r["message"].startswith("gold:") for r in gate["reasons"])


def test_incomplete_pairs_block_unless_tolerated(tmp_path):
    rows = rows_with(NO_CHANGE)
    rows[3]["new"] = "boom"  # the candidate's score errors on one example: excluded, never 0
    metrics = {"exact": {"type": "python", "function": "scorer.py:score"}}
    project, _ = setup(tmp_path, NO_CHANGE, metrics=metrics, rows=rows)
    gate = gate_of(project.run("--out", "runs/cand", "--format", "json"))
    assert reasons(gate) == ["incomplete_pairs"]
    assert "1 of 50 paired examples" in gate["reasons"][0]["message"]
    assert gate["comparison"]["metric"]["pairs"]["excluded_by_status"] == {"error": 1}
    assert project.cli("verify", "runs/cand").code == 0


def test_the_approval_binds_compare_to(tmp_path):
    project, ledger = setup(tmp_path, NO_CHANGE)
    ledger["baselines"] = {"other": ledger["baselines"]["main"]}  # the ledger lists only names a gate uses
    project.write_ledger(ledger)
    # a pull request pointing the gate at another baseline name changes the gate's fingerprint: stale approval
    project.write_config(
        base_config(gates={"no-regression": {**GATE, "compare_to": "other"}}, task={"type": "recorded", "field": "new"})
    )
    gate = gate_of(project.run("--out", "runs/cand", "--format", "json"))
    assert "approval_stale" in reasons(gate)


def test_config_refuses_a_threshold_on_a_comparative_gate(tmp_path):
    project = make_project(tmp_path)
    project.write_config(base_config(gates={"g": {**GATE, "proposed_threshold": 0.8}}))
    result = project.run()
    assert result.code == 2 and "proposed_margin" in result.err and "Traceback" not in result.err


def test_schema_and_ledger_accept_the_new_keys(tmp_path):
    project, _ = setup(tmp_path, NO_CHANGE)
    schema = project.cli("schema", "ledger").json()
    assert "baselines" in schema["properties"]
    assert yaml.safe_load((project.evals / "authority.yaml").read_text())["baselines"]["main"]["run"] == "../runs/base"
    record = json.loads((tmp_path / "runs/probe/runrecord.json").read_text())
    assert "baselines" in record


def test_verify_catches_an_edited_baseline_copy(tmp_path):
    project, _ = setup(tmp_path, BIG_DROP)
    assert project.run("--out", "runs/cand").code == 1
    copy = tmp_path / "runs/cand/baselines/main/scores.jsonl"
    # make the baseline look as bad as the candidate, so that a re-derivation would pass the gate
    copy.write_text(copy.read_text().replace("1.0", "0.0"))
    result = project.cli("verify", "runs/cand", "--format", "json")
    assert result.code == 1
    fields = {item["field"] for item in result.json()["findings"]}
    assert any("no-regression" in field for field in fields)
    # the copy is an artifact the digests cover, so the edit is also named as a file
    assert "file baselines/main/scores.jsonl" in fields
    # the re-derived gate is blocked (the copy no longer matches the approved fingerprint), never a pass
    assert any(item["derived"] == "blocked" for item in result.json()["findings"])


def test_before_approval_the_power_statement_uses_the_proposed_margin(tmp_path):
    project, ledger = setup(tmp_path, NO_CHANGE[:20] + BIG_DROP[30:40], gate={"proposed_margin": 0.02})
    ledger["gates"]["no-regression"]["active"] = False
    project.write_ledger(ledger)
    result = project.run("--out", "runs/cand", "--format", "json")
    gate = gate_of(result)
    assert result.code == 0 and gate["outcome"] == "informational"
    assert gate["comparison"]["power_margin"] == 0.02 and gate["comparison"]["required_pairs"] > 30
    explained = project.cli("explain", "no-regression", "--run", "runs/cand").out
    assert "proposed margin (0.02)" in explained and "cannot reliably detect" in explained
    assert "margin: 0.02" in explained  # the ledger entry to write proposes it
