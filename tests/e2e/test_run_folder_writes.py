"""Host code writing into the run's own folder while the run goes on (CLI end to end).

A lane, a python metric or a standalone check runs as the same user as the run, and the run folder is where it can
find it (``--out``, or the newest folder under ``.evalglass/runs``). What the run decides from must not be read back
from there unchecked: these tests rewrite the run's own files from a check's command (which runs after the scores
are written and before the gates are decided) and expect no verdict at all, never a green one.
"""

from __future__ import annotations

import sys

import yaml

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
