"""Python metrics never run in the process that measures and decides (metrics/hostscoring.py).

An ungated python metric is host code no approval binds, and a gated metric's module may load, dynamically, code
nothing binds. Run inside the deciding process, either could replace ``evalglass.core.gates.meets`` (or the gated
metric's function, in ``sys.modules``) and make ``evalglass run`` pass on a failing value. Through the real command
line: each attack now reaches only its own worker process, and the verdict is the honest one; a metric call that
ends or crashes its worker is that example's error, and the others are scored as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalglass.core.exitcodes import ExitCode
from tests.e2e.project import Project, approve_as_is, make_project

#: The gated metric: 6 of the 8 default rows answer the expected value (0.75, under the approved 0.9).
JUDGE = "def score(output, reference):\n    return 1.0 if output == reference else 0.0\n"

#: Replaces what decides, and the gated metric's function (by its module in ``sys.modules``, and every module
#: that has one named ``score``), in whatever process runs it.
PATCH = """\
import sys
import evalglass.core.gates as gates
import evalglass.core.gatespec as gatespec

def _always(*args, **kwargs):
    return True

def _patch():
    gates.meets = _always
    gatespec.meets = _always
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) and module.__file__.endswith("judge.py"):
            module.score = lambda *args, **kwargs: 1.0
            sys.modules[name] = type(sys)(name)
            sys.modules[name].score = module.score

_patch()
"""

UNGATED = PATCH + "\ndef spy(output):\n    _patch()\n    return 1.0\n"

#: A gated metric's module that loads unbound code at import: not an ``import`` statement, so not bound.
DYNAMIC = (
    "import importlib.util, pathlib\n"
    "_spec = importlib.util.spec_from_file_location('sneaky', pathlib.Path(__file__).with_name('sneaky.py'))\n"
    "_spec.loader.exec_module(importlib.util.module_from_spec(_spec))\n"
) + JUDGE


def _project(tmp_path: Path, judge: str, extra: dict[str, str]) -> Project:
    metrics = {
        "exact": {"type": "exact_match", "reference": "expected"},
        "mine": {"type": "python", "function": "judge.py:score", "reference": "expected"},
    }
    if "spy.py" in extra:
        metrics["spy"] = {"type": "python", "function": "spy.py:spy"}
    project = make_project(
        tmp_path,
        metrics=metrics,
        gates={
            "accuracy": {"metric": "exact", "proposed_threshold": 0.9},
            "mine": {"metric": "mine", "proposed_threshold": 0.9},
        },
    )
    (project.evals / "judge.py").write_text(judge)
    for name, source in extra.items():
        (project.evals / name).write_text(source)
    approve_as_is(project, 0.9, ("accuracy", "mine"))
    return project


@pytest.mark.parametrize(
    ("judge", "extra", "mine"),
    [(JUDGE, {"spy.py": UNGATED}, ("fail", 0.75)), (DYNAMIC, {"sneaky.py": PATCH}, ("blocked", None))],
    ids=["ungated-metric", "dynamic-import-in-gated-metric"],
)
def test_unbound_metric_code_that_replaces_what_decides_changes_nothing_the_run_decides(tmp_path, judge, extra, mine):
    """The gated metric's worker refuses the unbound module outright (tests/e2e/test_gated_metric_loads.py): its
    gate blocks; either way the other gate decides as it would have."""
    project = _project(tmp_path, judge, extra)
    result = project.run("--format", "json", "--no-progress", "--no-history")
    card = result.json()
    gates = {gate["name"]: (gate["outcome"], gate["compared"]) for gate in card["decision"]["gates"]}
    assert gates == {"accuracy": ("fail", 0.75), "mine": mine}, card["decision"]
    assert (card["decision"]["verdict"], result.code) == (mine[0], ExitCode.FAILED), result


ENDINGS = {
    "os._exit": ("import os; os._exit(3)", "ended with exit code 3"),
    "segfault": ("import ctypes; ctypes.string_at(0)", "killed by SIGSEGV"),
    "SIGKILL": ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL"),
}


@pytest.mark.parametrize("route", sorted(ENDINGS))
def test_a_metric_call_that_ends_its_worker_is_that_examples_error(tmp_path, route):
    body, said = ENDINGS[route]
    judge = (
        "calls = []\n"
        "def score(output, reference, example):\n"
        "    calls.append(example.id)\n"
        f"    if example.id == 'ex-2':\n        {body}\n"
        "    return 1.0 if output == reference else 0.0\n"
    )
    project = _project(tmp_path, judge, {})
    result = project.run("--format", "json", "--no-progress", "--no-history", "--out", "run")
    assert result.code == ExitCode.FAILED, result
    card = result.json()
    gates = {gate["name"]: gate for gate in card["decision"]["gates"]}
    assert (card["decision"]["verdict"], gates["mine"]["outcome"]) == ("blocked", "blocked"), card["decision"]
    scores = {}
    for line in (project.root / "run" / "scores.jsonl").read_text().splitlines():
        block = json.loads(line)
        scores.update(zip(block["ids"], block["scores"]["mine"], strict=True))
    failed = {key: value for key, value in scores.items() if type(value) is not float}
    assert list(failed) == ["ex-2"], scores
    assert failed["ex-2"]["status"] == "error"
    (diagnostic,) = failed["ex-2"]["diagnostics"]
    assert diagnostic["code"] == "host_worker_lost" and said in diagnostic["message"], diagnostic
    # the seven other calls were answered (by fresh workers after the one that ended), each as in process
    assert {key: value for key, value in scores.items() if key != "ex-2"} == {
        f"ex-{i}": 1.0 if i % 4 else 0.0 for i in (1, 3, 4, 5, 6, 7, 8)
    }
    verified = project.cli("verify", "run")
    assert verified.code == ExitCode.OK, verified
