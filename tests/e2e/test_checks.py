"""Bound checks through the CLI: the bundled four-situation example, `evalglass check`, and config refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evalglass.engine.runs.artifacts import score_rows
from tests.e2e.project import make_project, run_cli

MOVED_ORIGINAL = "sha256:063bb6f401e2a488ecc9b568e64b674964dc028a705ecdf3a17ac46610295886"
READY_STATE = "sha256:4a63a7827cc42638813c2bc9ab638222aeaeb17fe25ecb26d9991f1e487aff5f"


@pytest.fixture(scope="module")
def bound_checks_run(tmp_path_factory) -> tuple[int, dict, Path]:
    cwd = tmp_path_factory.mktemp("bound-checks")
    result = run_cli("run", "--example", "bound-checks", "--out", "out", "--format", "json", cwd=cwd)
    return result.code, result.json(), cwd


def test_the_four_situations_keep_four_outcomes(bound_checks_run):
    code, card, _ = bound_checks_run
    checks = {
        c["name"]: (c["outcome"], c["binding"], c["command_started"], c["exit_code"], c["repair"])
        for c in card["checks"]
    }
    assert checks == {
        "notes-ready": ("PASS", "bound", True, 0, "accept the work"),
        "notes-draft": ("FAIL", "bound", True, 1, "investigate the work"),
        "notes-binary": ("INCONCLUSIVE", "bound", True, 2, "gather better evidence"),
        "notes-moved": ("ERROR", "mismatch", False, None, "repair the measurement"),
    }
    gates = {g["name"]: g["outcome"] for g in card["decision"]["gates"]}
    assert gates == {"ready": "pass", "draft": "fail", "binary": "blocked", "moved": "blocked"}
    assert (code, card["decision"]["verdict"]) == (1, "blocked")


def test_the_policy_is_recorded_with_the_result(bound_checks_run):
    _, card, cwd = bound_checks_run
    binary = next(c for c in card["checks"] if c["name"] == "notes-binary")
    assert binary["policy_id"] == "marker-v1" and binary["reason"] == "declared_inconclusive"
    record = json.loads((cwd / "out" / "runrecord.json").read_text())
    full = record["check_results"]["notes-binary"]
    assert full["policy"]["inconclusive_codes"] == [2]
    assert full["policy_fingerprint"] == binary["policy_fingerprint"]
    moved = record["check_results"]["notes-moved"]
    assert moved["requested_fingerprint"] == MOVED_ORIGINAL and moved["observed_fingerprint"] != MOVED_ORIGINAL


def test_per_example_check_scores_keep_their_states(bound_checks_run):
    _, card, cwd = bound_checks_run
    population = card["metrics"][0]["population"]
    assert population["included"] == 2
    assert population["excluded_by_status"] == {"blocked": 1, "non_evaluable": 1}
    rows = list(score_rows(cwd / "out" / "scores.jsonl"))
    draft_scores = [row["scores"]["draft_clean"] for row in rows]
    assert draft_scores[0]["value"] == 1.0 and draft_scores[0]["evidence"] == ["check:draft-marker:2.4"]
    assert draft_scores[1]["value"] == 0.0 and draft_scores[1]["status"] == "scored"
    assert draft_scores[2]["status"] == "non_evaluable" and "value" not in draft_scores[2]
    records = [json.loads(line) for line in (cwd / "out" / "checks.jsonl").read_text().splitlines()]
    assert sorted(r["example_id"] for r in records) == ["2.4", "2.5", "2.6"]


def test_the_example_run_verifies(bound_checks_run):
    _, _, cwd = bound_checks_run
    assert run_cli("verify", "out", cwd=cwd).code == 0


@pytest.mark.parametrize(
    ("name", "code"), [("notes-ready", 0), ("notes-draft", 1), ("notes-binary", 3), ("notes-moved", 4)]
)
def test_evalglass_check_exit_codes(tmp_path, name, code):
    result = run_cli("check", name, "--example", "bound-checks", "--format", "json", cwd=tmp_path)
    assert result.code == code, result.err
    assert list(result.json()) == [name]


def test_evalglass_check_expect_state(tmp_path):
    bound = run_cli(
        "check",
        "notes-ready",
        "--example",
        "bound-checks",
        "--expect-state",
        READY_STATE,
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert bound.code == 0 and bound.json()["notes-ready"]["binding"] == "bound"
    moved = run_cli(
        "check",
        "notes-ready",
        "--example",
        "bound-checks",
        "--expect-state",
        "sha256:" + "0" * 64,
        "--format",
        "json",
        cwd=tmp_path,
    )
    record = moved.json()["notes-ready"]
    assert moved.code == 4 and record["binding"] == "mismatch" and record["command_started"] is False


def test_evalglass_check_worst_outcome_wins(tmp_path):
    assert run_cli("check", "--example", "bound-checks", cwd=tmp_path).code == 4


CHECKER = "import sys, pathlib; sys.exit(0 if 'ok' in pathlib.Path(sys.argv[1]).read_text() else 1)"


def _checked_project(tmp_path, **overrides):
    project = make_project(
        tmp_path,
        checks={"solution": {"command": ["{python}", "-c", CHECKER, "{target}/output.txt"], "timeout": 20}},
        metrics={"passes": {"type": "check", "check": "solution"}},
        gates={},
        **overrides,
    )
    project.write_rows([{"id": f"e{i}", "output": "ok" if i % 3 else "bad"} for i in range(12)])
    return project


def test_parallel_per_example_checks_equal_a_sequential_run(tmp_path):
    project = _checked_project(tmp_path, check_workers=1)
    assert project.run("--out", "seq").code == 0
    project.write_config({**yaml.safe_load((project.evals / "evalglass.yaml").read_text()), "check_workers": 6})
    assert project.run("--out", "par").code == 0
    sequential = (tmp_path / "seq" / "scores.jsonl").read_text()
    parallel = (tmp_path / "par" / "scores.jsonl").read_text()
    assert sequential == parallel
    card = json.loads((tmp_path / "par" / "scorecard.json").read_text())
    assert card["metrics"][0]["estimate"]["point"] == pytest.approx(8 / 12)


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"gates": {"g": {"check": "nope"}}}, "gate 'g' names check 'nope'"),
        ({"metrics": {"m": {"type": "check", "check": "nope"}}}, "metric 'm' names check 'nope'"),
        ({"gates": {"g": {"check": "solution"}}}, "runs per example"),
        (
            {"checks": {"solution": {"command": ["true"], "target": "../outside"}}},
            "target",
        ),
        (
            {"checks": {"solution": {"command": "echo hi"}}},
            "shell",
        ),
        (
            {
                "checks": {
                    "solution": {"command": ["true"], "policy": {"id": "p", "pass_codes": [0]}},
                    "other": {"command": ["true"], "policy": {"id": "p", "pass_codes": [0, 1]}},
                }
            },
            "two different mappings",
        ),
        (
            {
                "checks": {
                    "solution": {"command": ["true"], "policy": {"id": "p", "pass_codes": [0], "fail_codes": [0]}}
                }
            },
            "solution",
        ),
    ],
)
def test_check_config_errors_are_one_line_exit_2(tmp_path, overrides, needle):
    project = _checked_project(tmp_path)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    for key, value in overrides.items():
        config[key] = {**config.get(key, {}), **value} if key == "checks" else value
    project.write_config(config)
    result = project.run()
    assert result.code == 2 and "Traceback" not in result.err
    assert needle in result.err, result.err
