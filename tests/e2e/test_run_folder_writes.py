"""Host code writing into the run's own folder while the run goes on (CLI end to end).

A lane, a python metric or a standalone check runs as the same user as the run, and the run folder is where it can
find it (``--out``, or the newest folder under ``.evalglass/runs``). What the run decides from must not be read back
from there unchecked: these tests rewrite the run's own files from a check's command (which runs after the scores
are written and before the gates are decided) and expect no verdict at all, never a green one.
"""

from __future__ import annotations

import sys

import yaml

from tests.e2e.project import base_config, make_project
from tests.e2e.test_comparative_gates import gate_of, reasons, setup

#: A standalone check's command that re-pairs the run's answers with the baseline's: in the newest scores.jsonl of
#: the project, each example that scored 0 takes the id of one the baseline also got wrong. Every id stays, so the
#: pairing is complete and the point difference the same; only the paired interval narrows.
REPAIR_IDS = r"""
import json, pathlib
root = pathlib.Path(__file__).resolve().parent.parent
target = max(root.rglob("scores.jsonl"), key=lambda path: path.stat().st_mtime_ns)
baseline = {row["id"]: row["old"] for row in map(json.loads, (root / "evals" / "data.jsonl").read_text().splitlines())}
blocks = []
for line in target.read_bytes().splitlines():
    block = json.loads(line)
    wrong = [i for i in block["ids"] if baseline[i] != "a"]
    right = [i for i in block["ids"] if baseline[i] == "a"]
    block["ids"] = [wrong.pop() if value == 0.0 and wrong else right.pop() for value in block["scores"]["exact"]]
    blocks.append(json.dumps(block, separators=(",", ":")))
target.write_text("\n".join(blocks) + "\n")
"""


def test_a_check_re_pairing_the_runs_own_scores_decides_nothing(tmp_path):
    # 20 regressions and 20 improvements in 200: the difference is 0, its 90% bound under -0.05: undecided.
    pattern = [(True, True)] * 160 + [(True, False)] * 20 + [(False, True)] * 20
    project, _ = setup(tmp_path, pattern, rule="lower_bound", margin=0.05)
    honest = project.run("--out", "runs/honest", "--format", "json")
    assert honest.code == 1 and reasons(gate_of(honest)) == ["undecided"], honest.err
    # The pull request adds an ungated check (no ledger entry) whose command rewrites the run's scores.jsonl.
    (project.evals / "tidy.py").write_text(REPAIR_IDS)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["checks"] = {"tidy": {"command": [sys.executable, "tidy.py"], "target": "tidy.py"}}
    project.write_config(config)
    result = project.run("--out", "runs/cand", "--format", "json")
    # Before: the decision read the shuffled ids back, found no discordant pair and passed the gate (exit 0).
    assert result.code == 2, result.out
    assert "the run's own scores file changed while the run went on" in result.err
    assert "runs/cand/scores.jsonl" in result.err and "Traceback" not in result.err
    assert not (tmp_path / "runs" / "cand").exists()  # nothing decided, nothing left to upload as a verdict


#: A standalone check's command that rewrites the per-example checks' records of the newest run (`checks.jsonl` is
#: committed when scoring ends, before the standalone checks run): every FAIL reads as a PASS.
REWRITE_RECORDS = r"""
import pathlib
root = pathlib.Path(__file__).resolve().parent.parent
target = max(root.rglob("checks.jsonl"), key=lambda path: path.stat().st_mtime_ns)
target.write_text(target.read_text().replace('"outcome":"FAIL"', '"outcome":"PASS"'))
"""

#: The per-example checker: the answer passes when it says "a".
CHECKER = """
import pathlib, sys
sys.exit(0 if pathlib.Path(sys.argv[1]).read_text().strip() == "a" else 1)
"""


def test_a_check_rewriting_the_runs_check_records_leaves_a_folder_that_does_not_add_up(tmp_path):
    project = make_project(tmp_path, gates={})
    project.write_rows([{"id": f"q{i}", "expected": "a", "answer": "a" if i % 2 else "b"} for i in range(6)])
    (project.evals / "checker.py").write_text(CHECKER)
    (project.evals / "tidy.py").write_text(REWRITE_RECORDS)
    checks = {
        "says-a": {"command": [sys.executable, "checker.py", "{target}/output.txt"]},
        "tidy": {"command": [sys.executable, "tidy.py"], "target": "tidy.py"},
    }
    metrics = {"says_a": {"type": "check", "check": "says-a"}}
    task = {"type": "recorded", "field": "answer"}
    project.write_config(base_config(gates={}, task=task, metrics=metrics, checks=checks))
    result = project.run("--out", "runs/one")
    assert result.code == 0, result.err
    records = (tmp_path / "runs/one/checks.jsonl").read_text()
    assert '"outcome":"FAIL"' not in records  # the command rewrote them before the run listed its files
    # Before: digests.json listed the rewritten records as found, and every reader showed them as the run's.
    shown = project.cli("view", "runs/one")
    assert shown.code == 2 and "checks.jsonl is not the file digests.json lists" in shown.err, shown.err
    verified = project.cli("verify", "runs/one")
    assert verified.code == 1 and "checks.jsonl" in verified.out, verified.out
