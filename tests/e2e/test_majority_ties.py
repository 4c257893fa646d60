"""A tie between a ``majority`` metric's samples goes to the side unfavourable to its gates (core/stats Ties.against).

Before, every tie went to the lowest tied value: under a lower-is-better gate (a leak rate) an example whose two
samples split one leak, one clean, counted as clean, and a suite of split votes passed. Through the real CLI, on real
files: recorded samples (two per example, declared), a gate on the leak rate approved by the host.

A run recorded by an EvalGlass from before the rule carries no ``majority_ties`` marker and was decided with the old
tie side: ``verify`` re-derives it so (it adds up) and decides it again under the current rules, which fail it; no
reader (which has not the scores) shows such a gate green.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.project import Project, base_config, make_project, validated_gold

GATE = "leaks"

#: Ten examples, two recorded samples each: four split votes (one leak, one clean), six clean.
SPLIT = [["LEAK", "fine"], ["fine", "LEAK"], ["LEAK", "fine"], ["fine", "LEAK"]]
ROWS = [
    {"id": f"q{i}", "forbidden": "LEAK", "output": samples}
    for i, samples in enumerate([*SPLIT, *[["fine", "fine"]] * 6])
]


def configure(project: Project, *, direction: str = "lower_is_better", extra_gate: bool = False) -> None:
    gates: dict[str, Any] = {GATE: {"metric": "leaked", "direction": direction, "proposed_threshold": 0.3}}
    if extra_gate:
        gates["found"] = {"metric": "leaked", "proposed_threshold": 0.3}
    project.write_config(
        base_config(
            task={"type": "recorded", "field": "output", "samples": True, "epochs": 2},
            metrics={"leaked": {"type": "exact_match", "reference": "forbidden", "reducer": "majority"}},
            gates=gates,
        )
    )


def approve(project: Project, threshold: float) -> None:
    (gate,) = json.loads(project.cli("preflight", "--format", "json").out)["gates"]
    entry = {"active": True, "threshold": threshold, "fingerprint": gate["fingerprint"]}
    project.write_ledger({"version": 1, "gates": {GATE: entry}, "datasets": validated_gold(project.evals)})


def project_of(tmp_path: Path, threshold: float = 0.3) -> Project:
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    configure(project)
    approve(project, threshold)
    return project


def gate_of(out: str) -> dict[str, Any]:
    return next(gate for gate in json.loads(out)["decision"]["gates"] if gate["name"] == GATE)


#: The EvalGlass from before the rule, as far as the rule goes: every tie to the lowest value whatever the direction.
BEFORE_THE_RULE = """\
import sys
from evalglass.core.stats import Ties
from evalglass.engine.spec.config import Config
from evalglass.cli import main

Config.tie_side = lambda self, metric, unfavourable=True: Ties.LOW
sys.argv = ["evalglass", *sys.argv[1:]]
main()
"""


def run_before_the_rule(project: Project) -> tuple[int, Path]:
    """``evalglass run`` as an EvalGlass from before the rule ran it: the old tie side, and no marker written (the
    record resealed as it wrote it: unsigned digests)."""
    done = subprocess.run(
        [sys.executable, "-c", BEFORE_THE_RULE, "run", "--format", "json"],
        cwd=project.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    folder = project.last_run()
    path = folder / "runrecord.json"
    record = json.loads(path.read_text())
    assert record.pop("majority_ties") == "unfavourable"  # this EvalGlass writes it; the older one did not
    from evalglass.core.runrecord import RunRecord
    from evalglass.engine.runs.artifacts import model_bytes

    path.write_bytes(model_bytes(RunRecord.model_validate(record).model_dump(mode="json")))
    digests = json.loads((folder / "digests.json").read_text())
    digests["files"]["runrecord.json"] = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    (folder / "digests.json").write_text(json.dumps(digests))
    return done.returncode, folder


def test_split_votes_under_a_lower_is_better_gate_fail_where_they_passed(tmp_path: Path) -> None:
    project = project_of(tmp_path)
    code, old = run_before_the_rule(project)
    was = gate_of((old / "scorecard.json").read_text())
    assert (code, was["outcome"], was["value"]) == (0, "pass", 0.0)  # every split vote read as clean: green

    now = project.run("--format", "json")
    gate = gate_of(now.out)
    assert (now.code, gate["outcome"], gate["value"]) == (1, "fail", 0.4)  # each split vote is a leak
    assert [reason["code"] for reason in gate["reasons"]] == ["below_threshold"]
    assert json.loads((project.last_run() / "runrecord.json").read_text())["majority_ties"] == "unfavourable"
    assert project.cli("verify", str(project.last_run())).code == 0


def test_a_run_green_before_the_rule_is_not_verified_or_shown_green(tmp_path: Path) -> None:
    project = project_of(tmp_path)
    _, folder = run_before_the_rule(project)
    verified = project.cli("verify", str(folder))
    assert verified.code == 1, verified.out
    (finding,) = [line for line in verified.out.splitlines() if line.startswith("  runrecord.")]
    assert finding.startswith(
        "  runrecord.majority_ties: recorded 'the run record says it was decided before a tie between the samples of a "
        "majority metric went to the side unfavourable to its gates"
    )
    assert f"under the current rules gate '{GATE}' is fail; re-run `evalglass run`" in finding
    assert "scorecard" not in verified.out  # re-derived under the rules it claims, it adds up
    for command in (("view", str(folder)), ("explain", GATE, "--run", str(folder)), ("report", str(folder))):
        shown = project.cli(*command)
        assert shown.code == 2, shown.out + shown.err
        assert "runrecord.majority_ties" in shown.err and "cannot be decided without the scores" in shown.err
        assert "Traceback" not in shown.err


def test_an_old_run_green_under_the_current_rule_too_verifies(tmp_path: Path) -> None:
    """Threshold 0.5: the split votes (0.4) pass under both rules. `verify`, which reads the scores, says so; a reader
    without them cannot tell, and says to verify."""
    project = project_of(tmp_path, threshold=0.5)
    code, folder = run_before_the_rule(project)
    assert code == 0
    verified = project.cli("verify", str(folder))
    assert verified.code == 0, verified.out
    shown = project.cli("view", str(folder))
    assert shown.code == 2 and "`evalglass verify` re-derives it" in shown.err, shown.err


def test_under_higher_is_better_nothing_changes_and_the_record_keeps_its_bytes(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    configure(project, direction="higher_is_better")
    result = project.run("--format", "json")
    assert gate_of(result.out)["value"] == 0.0  # a split vote still goes low: the unfavourable side here
    assert "majority_ties" not in json.loads((project.last_run() / "runrecord.json").read_text())


def test_gates_that_disagree_on_a_majority_metrics_direction_are_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    configure(project, extra_gate=True)
    result = project.run()
    assert result.code == 2
    assert "evalglass.yaml" in result.err and "metric 'leaked' reduces its samples by majority" in result.err
    assert "gate 'leaks': lower_is_better, gate 'found': higher_is_better" in result.err
    assert "Traceback" not in result.err


def test_an_approval_made_under_the_old_tie_side_is_stale_and_says_so(tmp_path: Path) -> None:
    """The tie side is named in a lower-is-better gate's approval (`majority_ties@2`); an approval made before it
    (its fingerprint without it: version 1 was never named) reads as stale, naming the change."""
    from evalglass.engine.spec.config import load_config

    project = project_of(tmp_path)
    loaded = load_config(project.evals / "evalglass.yaml")
    current = loaded.config.gate_evaluators(GATE)
    assert current["rule:majority_ties"] == 2
    before = {key: version for key, version in current.items() if key != "rule:majority_ties"}
    old = loaded.config.gate_fingerprint(GATE, loaded.definition_files, versions=before)
    entry = {"active": True, "threshold": 0.3, "fingerprint": old}
    project.write_ledger({"version": 1, "gates": {GATE: entry}, "datasets": validated_gold(project.evals)})
    result = project.run("--format", "json")
    gate = gate_of(result.out)
    assert (result.code, gate["outcome"], [r["code"] for r in gate["reasons"]]) == (1, "blocked", ["approval_stale"])
    assert "majority_ties@1 → majority_ties@2" in gate["reasons"][0]["message"]
    # Under higher-is-better nothing changed: the rule is not named, and such approvals stand.
    configure(project, direction="higher_is_better")
    assert "rule:majority_ties" not in load_config(project.evals / "evalglass.yaml").config.gate_evaluators(GATE)


def test_a_record_whose_gates_disagree_on_a_majority_metric_does_not_verify(tmp_path: Path) -> None:
    """A config loaded before the rule with two gates of opposite directions on a majority metric: `verify` validates
    the recorded source as the current rules read a config file, and names the refusal."""
    project = project_of(tmp_path)
    assert project.run().code == 1
    folder = project.last_run()
    path = folder / "runrecord.json"
    record = json.loads(path.read_text())
    record["config_source"] = record["config_source"].replace(
        "gates:\n", "gates:\n  found:\n    metric: leaked\n    proposed_threshold: 0.3\n", 1
    )
    assert "found:" in record["config_source"]
    path.write_text(json.dumps(record))
    verified = project.cli("verify", str(folder))
    assert verified.code == 1
    assert "runrecord.config_source: recorded '<does not parse>'" in verified.out
    assert "metric 'leaked' reduces its samples by majority and its gates disagree" in verified.out
