"""Host code no approval binds never runs in the process that measures and decides (lanes/hostworker.py).

A python lane's function is the system under test: a pull request edits it freely. Before, it ran inside the
deciding process, and a lane that replaced ``evalglass.core.gates.meets`` (and ``gatespec.meets``) made
``evalglass run`` print ``verdict: pass`` on a measured value of 0. Through the real command line: the same attack
(and one on a python metric's function) now reaches only the worker that runs the lane, and the verdict is the
honest one; a lane that ends its worker, crashes it or hangs is that call's failure, and the run decides on the
rest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalglass.core.exitcodes import ExitCode
from tests.e2e.project import Project, approve_as_is, make_project

#: Replaces what decides, and a python metric's function, in whatever process imports it.
ATTACK = """\
import sys
import evalglass.core.gates as gates
import evalglass.core.gatespec as gatespec

def _always(*args, **kwargs):
    return True

gates.meets = _always
gatespec.meets = _always
for module in list(sys.modules.values()):
    if getattr(module, "__file__", None) and module.__file__.endswith("judge.py"):
        module.score = lambda *args, **kwargs: 1.0

def answer(fields):
    return "wrong"
"""

METRIC = "def score(output, reference):\n    return 1.0 if output == reference else 0.0\n"


def _project(tmp_path: Path, app: str) -> Project:
    project = make_project(
        tmp_path,
        task={"type": "python", "function": "app.py:answer", "timeout": 5},
        metrics={
            "exact": {"type": "exact_match", "reference": "expected"},
            "mine": {"type": "python", "function": "judge.py:score", "reference": "expected"},
        },
        gates={
            "accuracy": {"metric": "exact", "proposed_threshold": 0.7},
            "mine": {"metric": "mine", "proposed_threshold": 0.7},
        },
    )
    (project.evals / "judge.py").write_text(METRIC)
    (project.evals / "app.py").write_text(app)
    approve_as_is(project, 0.7, ("accuracy", "mine"))
    return project


def test_a_lane_that_replaces_what_decides_changes_nothing_the_run_decides(tmp_path):
    project = _project(tmp_path, ATTACK)
    result = project.run("--format", "json", "--no-progress", "--no-history")
    card = result.json()
    gates = {gate["name"]: (gate["outcome"], gate["compared"]) for gate in card["decision"]["gates"]}
    assert gates == {"accuracy": ("fail", 0.0), "mine": ("fail", 0.0)}, card["decision"]
    assert (card["decision"]["verdict"], result.code) == ("fail", ExitCode.FAILED), result


ENDINGS = {
    "os._exit": ("import os; os._exit(0)", "task_worker_lost", "ended with exit code 0"),
    "segfault": ("import ctypes; ctypes.string_at(0)", "task_worker_lost", "killed by SIGSEGV"),
    "hang": ("import time; time.sleep(600)", "task_timeout", "did not return within 5s"),
}


@pytest.mark.parametrize("route", sorted(ENDINGS))
def test_a_lane_call_that_ends_or_hangs_its_worker_is_that_calls_failure(tmp_path, route):
    body, code, said = ENDINGS[route]
    app = f"def answer(fields):\n    if fields['id'] == 'ex-2':\n        {body}\n    return fields['expected']\n"
    project = _project(tmp_path, app)
    result = project.run("--format", "json", "--no-progress", "--no-history", "--out", "run")
    assert result.code in (ExitCode.OK, ExitCode.FAILED), result
    card = result.json()
    gates = {gate["name"]: gate for gate in card["decision"]["gates"]}
    assert gates["accuracy"]["value"] == 1.0, gates  # the seven other calls were answered, by fresh workers
    scores = {}
    for line in (project.root / "run" / "scores.jsonl").read_text().splitlines():
        block = json.loads(line)
        scores.update(zip(block["ids"], block["scores"]["exact"], strict=True))
    failed = {key: value for key, value in scores.items() if type(value) is not float}
    assert list(failed) == ["ex-2"], scores
    (diagnostic,) = failed["ex-2"]["diagnostics"]
    assert diagnostic["code"] == code and said in diagnostic["message"], diagnostic
    verified = project.cli("verify", "run")
    assert verified.code == ExitCode.OK, verified
