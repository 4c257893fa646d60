"""Every verdict and every blocking condition, through the real CLI, with its exit code."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.project import DEFAULT_ROWS, Project, base_config, make_project


def approve(project: Project, *, threshold: float | None = 0.7, gold: bool = True, **entry: Any) -> dict[str, Any]:
    """Build the ledger a host would write after reading `explain`."""
    project.run()
    gate = {
        "active": True,
        "threshold": threshold,
        "fingerprint": project.gate_fingerprint("accuracy"),
        **entry,
    }
    ledger: dict[str, Any] = {"version": 1, "gates": {"accuracy": gate}}
    if gold:
        ledger["datasets"] = {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}}
    return ledger


def outcome(project: Project) -> tuple[int, dict[str, Any]]:
    result = project.run("--format", "json")
    card = result.json()
    return result.code, card


def test_no_active_gate_is_informational_exit_0(tmp_path):
    project = make_project(tmp_path)
    code, card = outcome(project)
    assert (code, card["decision"]["verdict"], card["decision"]["ci_should_fail"]) == (
        0,
        "informational",
        False,
    )
    text = project.run()
    assert "does not mean quality was checked" in text.out.replace("\n", " ")


def test_approved_gate_that_meets_its_threshold_passes_exit_0(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.7))
    code, card = outcome(project)
    assert (code, card["decision"]["verdict"]) == (0, "pass")
    assert card["decision"]["gates"][0]["compared"] == 0.75


def test_approved_gate_below_its_threshold_fails_exit_1(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.8))
    code, card = outcome(project)
    assert (code, card["decision"]["verdict"], card["decision"]["ci_should_fail"]) == (1, "fail", True)


def test_blocked_outranks_fail_and_pass(tmp_path):
    project = make_project(
        tmp_path,
        gates={
            "accuracy": {"metric": "exact"},
            "strict": {"metric": "exact"},
            "broken": {"metric": "exact", "direction": "lower_is_better"},
        },
    )
    project.run()
    fps = {name: project.gate_fingerprint(name) for name in ("accuracy", "strict", "broken")}
    data_fp = project.dataset_fingerprint()
    project.write_ledger(
        {
            "gates": {
                "accuracy": {"active": True, "threshold": 0.5, "fingerprint": fps["accuracy"]},
                "strict": {"active": True, "threshold": 0.9, "fingerprint": fps["strict"]},
                "broken": {"active": True, "threshold": 0.5, "fingerprint": "sha256:" + "0" * 64},
            },
            "datasets": {"suite": {"validated_gold": True, "fingerprint": data_fp}},
        }
    )
    code, card = outcome(project)
    outcomes = {gate["name"]: gate["outcome"] for gate in card["decision"]["gates"]}
    assert outcomes == {"accuracy": "pass", "strict": "fail", "broken": "blocked"}
    assert (code, card["decision"]["verdict"]) == (1, "blocked")


BLOCKING = [
    ("policy_forbidden", lambda p: {**approve(p), "policy": {"forbid_gates": ["accuracy"]}}),
    ("approval_stale", lambda p: approve(p, fingerprint="sha256:" + "1" * 64)),
    ("approval_unbound", lambda p: {**approve(p), "gates": {"accuracy": {"active": True, "threshold": 0.7}}}),
    ("gold_not_validated", lambda p: approve(p, gold=False)),
    (
        "gold_stale",
        lambda p: {
            **approve(p),
            "datasets": {"suite": {"validated_gold": True, "fingerprint": "sha256:" + "0" * 64}},
        },
    ),
    ("no_approved_threshold", lambda p: approve(p, threshold=None)),
]


@pytest.mark.parametrize(("reason", "ledger"), BLOCKING, ids=[row[0] for row in BLOCKING])
def test_authority_blocks_exit_1(tmp_path, reason, ledger):
    project = make_project(tmp_path)
    project.write_ledger(ledger(project))
    code, card = outcome(project)
    gate = card["decision"]["gates"][0]
    assert (code, card["decision"]["verdict"], gate["outcome"]) == (1, "blocked", "blocked")
    assert reason in {r["code"] for r in gate["reasons"]}


def test_changed_metric_definition_makes_the_approval_stale(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project))
    assert outcome(project)[0] == 0
    project.write_config(
        {
            **base_config(),
            "metrics": {"exact": {"type": "exact_match", "reference": "expected", "normalize": {"case": True}}},
        }
    )
    code, card = outcome(project)
    assert code == 1
    assert [r["code"] for r in card["decision"]["gates"][0]["reasons"]] == ["approval_stale"]


def test_changed_dataset_makes_the_gold_validation_stale(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project))
    rows = [{"id": "ex-1", "expected": "yes", "output": "yes"}]
    project.write_rows(rows)
    code, card = outcome(project)
    assert code == 1
    assert [r["code"] for r in card["decision"]["gates"][0]["reasons"]] == ["gold_stale"]


def test_nothing_measured_blocks_with_no_measured_value(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project))
    project.write_rows([{"id": "a", "expected": "x"}, {"id": "b", "expected": "y"}])  # no outputs at all
    # the dataset changed, so validate it again as the host would
    ledger = approve(project)
    project.write_ledger(ledger)
    code, card = outcome(project)
    codes = {r["code"] for r in card["decision"]["gates"][0]["reasons"]}
    assert code == 1 and {"no_measured_value", "incomplete_measurement"} <= codes


def test_an_excluded_example_blocks_with_incomplete_measurement(tmp_path):
    project = make_project(tmp_path)
    rows = [*DEFAULT_ROWS, {"id": "nogold", "output": "yes"}]
    project.write_rows(rows)
    project.write_ledger(approve(project))
    code, card = outcome(project)
    gate = card["decision"]["gates"][0]
    assert code == 1 and [r["code"] for r in gate["reasons"]] == ["incomplete_measurement"]
    assert card["metrics"][0]["population"]["excluded_by_status"] == {"non_evaluable": 1}


def test_tolerated_non_evaluable_does_not_block(tmp_path):
    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "tolerate": ["non_evaluable"]}})
    rows = [*DEFAULT_ROWS, {"id": "nogold", "output": "yes"}]
    project.write_rows(rows)
    project.write_ledger(approve(project))
    code, card = outcome(project)
    assert (code, card["decision"]["verdict"]) == (0, "pass")


@pytest.mark.parametrize(
    ("ledger", "verdict", "code"),
    [
        (lambda p: {"version": 1}, "informational", 10),
        (lambda p: approve(p, threshold=0.7), "pass", 0),
        (lambda p: approve(p, threshold=0.9), "fail", 1),
        (lambda p: approve(p, gold=False), "blocked", 11),
    ],
    ids=["informational", "pass", "fail", "blocked"],
)
def test_verdict_exit_codes_give_each_verdict_its_own_exit_status(tmp_path, ledger, verdict, code):
    """What the GitHub action reads its `verdict` output from: the process's exit status, not a file."""
    project = make_project(tmp_path)
    project.write_ledger(ledger(project))
    done = project.run("--verdict-exit-codes", "--format", "json")
    assert (done.code, done.json()["decision"]["verdict"]) == (code, verdict), done.err
    assert project.run("--format", "json").code == (1 if verdict in ("fail", "blocked") else 0)


def test_verdict_exit_codes_are_refused_with_a_dry_run_which_decides_nothing(tmp_path):
    project = make_project(tmp_path)
    done = project.run("--dry-run", "--verdict-exit-codes")
    assert done.code == 2 and "--verdict-exit-codes" in done.err and "Traceback" not in done.err, done.err
