"""`evalglass preflight` and `run --dry-run` through the real CLI: every gate's standing before anything runs."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from evalglass.metrics.versions import METRIC_VERSIONS
from tests.e2e.project import Project, make_project, run_cli


def day(offset: int) -> str:
    return (datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=offset)).isoformat()


HOST_METRIC = """\
import pathlib
pathlib.Path(__file__).with_name("ran.txt").write_text("a metric ran")

def score(output):
    return 1.0
"""


def suite(tmp_path) -> tuple[Project, dict[str, Any]]:
    """Four gates: approved (would decide), expired, stale, and one the ledger does not activate; and a host
    metric that leaves a file behind if it is ever imported."""
    project = make_project(
        tmp_path,
        metrics={
            "exact": {"type": "exact_match", "reference": "expected"},
            "host": {"type": "python", "function": "hostmetric.py:score"},
        },
        gates={
            "accuracy": {"metric": "exact"},
            "old": {"metric": "exact", "min_n": 2},
            "edited": {"metric": "exact", "min_n": 3},
            "evidence": {"metric": "host"},
        },
    )
    (project.evals / "hostmetric.py").write_text(HOST_METRIC)
    project.run()
    (project.evals / "ran.txt").unlink()
    prints = {name: project.gate_fingerprint(name) for name in ("accuracy", "old", "edited")}
    ledger = {
        "version": 1,
        "gates": {
            "accuracy": {"active": True, "threshold": 0.7, "fingerprint": prints["accuracy"], "expires_on": day(3)},
            "old": {"active": True, "threshold": 0.7, "fingerprint": prints["old"], "expires_on": day(-1)},
            "edited": {"active": True, "threshold": 0.7, "fingerprint": "sha256:" + "1" * 64},
        },
        "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
    }
    project.write_ledger(ledger)
    return project, ledger


def runs(project: Project) -> list[str]:
    folder = project.root / ".evalglass" / "runs"
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


def test_preflight_names_each_gates_standing_and_runs_nothing(tmp_path):
    project, _ = suite(tmp_path)
    before = runs(project)
    result = project.cli("preflight", "--format", "json")
    assert result.code == 1, result.err
    found = result.json()
    standings = {gate["name"]: gate["standing"] for gate in found["gates"]}
    assert standings == {"accuracy": "would_decide", "old": "blocked", "edited": "blocked", "evidence": "informational"}
    gates = {gate["name"]: gate for gate in found["gates"]}
    assert [r["code"] for r in gates["old"]["reasons"]] == ["approval_expired"]
    assert [r["code"] for r in gates["edited"]["reasons"]] == ["approval_stale"]
    assert all(reason["repair"] for gate in found["gates"] for reason in gate["reasons"])
    assert "3 days left" in gates["accuracy"]["notes"][0]
    assert gates["accuracy"]["evaluators"] == [f"exact_match@{METRIC_VERSIONS['exact_match']}"]
    # Nothing ran: no run folder, no host metric imported, no cache.
    assert runs(project) == before
    assert not (project.evals / "ran.txt").exists()
    assert not (project.evals / ".evalglass-cache.sqlite").exists()
    text = project.cli("preflight")
    assert text.code == 1
    assert "old  [BLOCKED now]" in text.out and "repair:" in text.out and "accuracy  [would decide]" in text.out
    assert "evidence  [informational]" in text.out and "exit 1" in text.out


def test_preflight_agrees_with_the_run(tmp_path):
    """What preflight says is blocked now is what the run blocks, with the same reasons."""
    project, _ = suite(tmp_path)
    found = {gate["name"]: gate for gate in project.cli("preflight", "--format", "json").json()["gates"]}
    card = project.run("--format", "json").json()
    for gate in card["decision"]["gates"]:
        expected = found[gate["name"]]
        if expected["standing"] == "blocked":
            assert gate["outcome"] == "blocked"
            assert [r["code"] for r in gate["reasons"]] == [r["code"] for r in expected["reasons"]]
        elif expected["standing"] == "informational":
            assert gate["outcome"] == "informational"
        else:
            assert gate["outcome"] in ("pass", "fail")
            assert gate["notes"] == expected["notes"]


def test_exit_0_when_every_active_gate_could_decide(tmp_path):
    project, ledger = suite(tmp_path)
    del ledger["gates"]["old"], ledger["gates"]["edited"]
    project.write_ledger(ledger)
    assert project.cli("preflight").code == 0
    dry = project.run("--dry-run", "--format", "json")
    assert dry.code == 0 and dry.json()["schema"] == "evalglass.preflight/1"
    assert not (project.evals / "ran.txt").exists()


def test_today_looks_ahead_only(tmp_path):
    project, ledger = suite(tmp_path)
    del ledger["gates"]["old"], ledger["gates"]["edited"]
    project.write_ledger(ledger)
    ahead = project.cli("preflight", "--today", day(4), "--format", "json")
    assert ahead.code == 1 and ahead.json()["today"] == day(4)
    assert [r["code"] for r in ahead.json()["gates"][0]["reasons"]] == ["approval_expired"]
    back = project.cli("preflight", "--today", day(-30))
    assert back.code == 2 and "never back" in back.err and back.out == ""
    bad = project.cli("preflight", "--today", "2026-02-30")
    assert bad.code == 2 and "28 days" in bad.err


def test_undeclared_and_unbound_and_uncalibrated_are_predicted(tmp_path):
    project = make_project(
        tmp_path,
        checks={"tests": {"command": ["true"], "target": {"path": "."}}},
        gates={"accuracy": {"metric": "exact"}, "suite-ok": {"check": "tests"}},
    )
    project.run()
    fingerprint = project.gate_fingerprint("suite-ok")
    project.write_ledger(
        {
            "version": 1,
            "gates": {
                "suite-ok": {"active": True, "fingerprint": fingerprint, "require_binding": True},
                "renamed": {"active": True, "threshold": 0.5, "fingerprint": "sha256:" + "2" * 64},
            },
        }
    )
    found = {gate["name"]: gate for gate in project.cli("preflight", "--format", "json").json()["gates"]}
    assert [r["code"] for r in found["suite-ok"]["reasons"]] == ["check_unbound"]
    assert [r["code"] for r in found["renamed"]["reasons"]] == ["gate_undeclared"]
    assert found["renamed"]["kind"] == "undeclared"
    card = project.run("--format", "json").json()
    outcome = {gate["name"]: [r["code"] for r in gate["reasons"]] for gate in card["decision"]["gates"]}
    assert outcome["suite-ok"] == ["check_unbound"] and outcome["renamed"] == ["gate_undeclared"]


@pytest.mark.parametrize(
    ("files", "args", "says"),
    [
        ({"evalglass.yaml": "version: 1\nmetrics: {}\ntreshold: 1\n"}, (), "evalglass.yaml"),
        ({"authority.yaml": "version: 1\ngates: {accuracy: {active: yes please}}\n"}, (), "authority.yaml:2"),
        ({}, ("--ledger", "elsewhere.yaml"), "pinned"),
        ({"data.jsonl": None}, (), "data.jsonl"),
        # Found while the dataset is hashed for its gold fingerprint.
        ({"data.jsonl": "DIRECTORY"}, (), "data.jsonl"),
        # Two problems: the ledger's is reported first (it is read before the dataset is hashed).
        ({"authority.yaml": "version: 1\ngates: {accuracy: {active: maybe}}\n", "data.jsonl": None}, (), "authority"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, files, args, says):
    project = make_project(tmp_path)
    for name, text in files.items():
        path = project.evals / name
        if text is None:
            path.unlink()
        elif text == "DIRECTORY":
            path.unlink()
            path.mkdir()
        else:
            path.write_text(text)
    for command in (("preflight", *args), ("run", "--dry-run", *args)):
        result = project.cli(*command)
        assert result.code == 2, (command, result.out, result.err)
        lines = result.err.strip().splitlines()  # one line per problem
        assert all(line.startswith("error:") for line in lines) and says in lines[0]
        assert "Traceback" not in result.err and result.out == ""


def test_dry_run_refuses_options_that_write(tmp_path):
    project = make_project(tmp_path)
    result = project.run("--dry-run", "--out", "x")
    assert result.code == 2 and "--out" in result.err


def test_json_is_one_document(tmp_path):
    project, _ = suite(tmp_path)
    result = project.cli("preflight", "--format", "json")
    assert json.loads(result.out)["exit_code"] == result.code == 1


def test_a_large_report_reaches_the_pipe_whole(tmp_path):
    """preflight ends without the interpreter's teardown (cli._exit_without_teardown): what it printed must still
    reach the reader whole, far beyond a pipe's buffer, in both formats."""
    gates = {f"g{index:04d}": {"metric": "exact", "min_n": index + 1} for index in range(1500)}
    project = make_project(tmp_path, metrics={"exact": {"type": "exact_match", "reference": "expected"}}, gates=gates)
    buffered = {"PYTHONUNBUFFERED": ""}  # as a CI runner may run it: stdout block-buffered into the pipe
    as_json = run_cli("preflight", "--format", "json", cwd=project.root, env=buffered)
    assert len(as_json.out) > 4 * 65536 and as_json.code == 0, (len(as_json.out), as_json.err)
    assert [gate["name"] for gate in json.loads(as_json.out)["gates"]] == sorted(gates)
    as_text = run_cli("preflight", cwd=project.root, env=buffered)
    assert as_text.code == 0 and as_text.out.rstrip().endswith("exit 0")
    assert sum(line.startswith("g") for line in as_text.out.splitlines()) == len(gates)
