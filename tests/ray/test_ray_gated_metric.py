"""A gated python metric under ``executor: ray`` is held to the rule a local run holds it to (lanes/hostguard.py).

A Ray worker process runs many tasks, and an audit hook cannot be removed: it cannot hold one gated metric's guard.
So a gated python metric is scored on the driver, in its guarded worker, whatever the executor; ungated ones ship.
Through the real CLI against the suite's one local Ray cluster (tests/ray/conftest.py): a gated metric that imports
an unbound project module by name, which a pull request rewrote to answer 1.0, blocks the gate (exit 1; on main it
was shipped unguarded and passed, exit 0), through the Python API too; the same metric with its code bound still passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from evalglass.core.exitcodes import ExitCode
from tests.e2e.project import Project, approve_as_is, make_project, run_cli
from tests.ray.conftest import LocalCluster

HONEST = "def grade(output, reference):\n    return 1.0 if output == reference else 0.0\n"
CHEAT = "def grade(output, reference):\n    return 1.0\n"
DYNAMIC = (
    "import importlib\ndef score(output, reference):\n"
    "    return importlib.import_module('rules').grade(output, reference)\n"
)
STATIC = "import rules\ndef score(output, reference):\n    return rules.grade(output, reference)\n"
BESIDE = "import pathlib as _p, sys as _s\n_s.path.insert(0, str(_p.Path(__file__).parent))\n"


def _project(tmp_path: Path, cluster: LocalCluster, judge: str, rows: list[dict[str, Any]] | None = None) -> Project:
    project = make_project(
        tmp_path,
        metrics={"mine": {"type": "python", "function": "judge.py:score", "reference": "expected"}},
        gates={"mine": {"metric": "mine", "proposed_threshold": 0.9}},
        executor={"type": "ray", "address": cluster.address},
    )
    (project.root / ".git").mkdir()
    (project.evals / "judge.py").write_text(BESIDE + judge)
    (project.evals / "rules.py").write_text(HONEST)
    if rows is not None:
        project.write_rows(rows)
    approve_as_is(project, 0.9, ["mine"])
    return project


def _run(project: Project, cluster: LocalCluster) -> tuple[str, int, list[dict[str, Any]]]:
    result = run_cli(
        "run", "--format", "json", "--no-progress", "--no-history", "--out", "run", cwd=project.root, env=cluster.env
    )
    (gate,) = result.json()["decision"]["gates"]
    diagnostics = [
        item
        for line in (project.root / "run" / "scores.jsonl").read_text().splitlines()
        for value in json.loads(line)["scores"]["mine"]
        if type(value) is dict
        for item in value["diagnostics"]
    ]
    return gate["outcome"], result.code, diagnostics


def test_a_gated_metric_under_ray_that_loads_unbound_code_blocks(tmp_path: Path, ray_cluster: LocalCluster) -> None:
    project = _project(tmp_path, ray_cluster, DYNAMIC)  # approved as reviewed: 6 of 8 right, 0.75
    (project.evals / "rules.py").write_text(CHEAT)  # the pull request: the approval binds no such file
    outcome, code, diagnostics = _run(project, ray_cluster)
    assert (outcome, code) == ("blocked", ExitCode.FAILED), diagnostics  # on main: shipped unguarded, pass, exit 0
    assert len(diagnostics) == 8 and {item["code"] for item in diagnostics} == {"host_unbound_code"}, diagnostics
    assert "rules.py, which the gate does not bind" in str(diagnostics[0]["message"])
    # The Python API (and the pytest plugin, which calls it) builds the metrics the same way: blocked too.
    script = "import evalglass; print(evalglass.run('evals/evalglass.yaml', out='api').verdict)"
    api = subprocess.run(
        [sys.executable, "-c", script], cwd=project.root, env=ray_cluster.env, capture_output=True, text=True
    )
    assert api.stdout.strip().splitlines()[-1:] == ["blocked"], api.stderr[-2000:]


def test_a_gated_metric_under_ray_whose_code_is_bound_still_passes(tmp_path: Path, ray_cluster: LocalCluster) -> None:
    rows = [{"id": f"ex-{i}", "expected": "yes", "output": "yes"} for i in range(1, 9)]
    project = _project(tmp_path, ray_cluster, STATIC, rows)
    assert _run(project, ray_cluster) == ("pass", ExitCode.OK, [])
