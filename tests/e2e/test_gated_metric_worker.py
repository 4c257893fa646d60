"""A gated python metric is scored in a worker of its own, which runs only the function its approval binds
(metrics/hostscoring.py), through the real command line.

The approved gate's metric reads a module-level table its module also exposes a mutator for. A pull request adds a
second metric naming that mutator in the same file, with a gate of its own that the ledger never approved (so the
metric is guarded and bound to the same files as the approved one). On main both metrics shared one worker: the
mutator ran first and the approved gate, which fails honestly (6 of 8 right, 0.75 against 0.9), passed, exit 0.
Now the approved metric's worker holds only its own function: its scores and its gate's failure are unchanged.
And an ungated metric whose module rewrites the gated metric's file as it loads (and puts it back before the run's
end) no longer decides it: the gated worker compiles a bound source only from the bytes the config hashed, whether
its import loads it or its code compiles it under its name (``runpy.run_path``, ``exec(compile(...))``). A bound
file read as data (``data_files:``), which no loader compares, is held by its state: rewritten and put back during
the run, its ctime moved, and the run ends with exit 2 naming it (so do the rewrites above, once the gated worker
has refused them).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.core.exitcodes import ExitCode
from tests.e2e.project import Project, approve_as_is, make_project, run_cli

#: An approved grader whose module exposes what changes the rule it scores by.
GRADERS = """\
class Table:
    def __init__(self):
        self.strict = True

    def relax(self, output):
        self.strict = False
        return 1.0

    def __call__(self, output):
        return self.relax(output)


obj = Table()


def relax(output):
    return obj.relax(output)


def score(output, reference):
    if not obj.strict:
        return 1.0
    return 1.0 if output == reference else 0.0
"""


def _rewritten_while_running(name: str) -> str:
    """The line a run ends with (exit 2) when a bound file was rewritten during it and put back."""
    return f"{name} was written while the run ran (its ctime moved): what the gated metric read there is unknown"


def _project(tmp_path: Path) -> Project:
    project = make_project(
        tmp_path,
        metrics={"mine": {"type": "python", "function": "graders.py:score", "reference": "expected"}},
        gates={"mine": {"metric": "mine", "proposed_threshold": 0.9}},
    )
    (project.root / ".git").mkdir()  # the project is the repository
    (project.evals / "graders.py").write_text(GRADERS)
    approve_as_is(project, 0.9, ["mine"])  # approved as reviewed: 6 of 8 right, 0.75
    return project


def _run(project: Project, cwd: Path | None = None) -> tuple[int, dict[str, str], dict[str, list[Any]]]:
    """Exit code, each gate's outcome, each metric's scores in example order (the run made in ``cwd``: the
    project's folder unless given). A run stopped with exit 2 has no gate's outcome, ``{"stopped": its line}``, and
    no scores."""
    shutil.rmtree(project.root / "run", ignore_errors=True)
    argv = ("--format", "json", "--no-progress", "--no-history", "--out", str(project.root / "run"))
    result = project.run(*argv) if cwd is None else run_cli("run", *argv, cwd=cwd)
    assert result.code in (ExitCode.OK, ExitCode.FAILED, ExitCode.SETUP), result
    scores: dict[str, list[Any]] = {}
    if result.code == ExitCode.SETUP:  # nothing was decided, and no run folder is kept
        return result.code, {"stopped": result.err}, scores
    outcomes = {gate["name"]: gate["outcome"] for gate in result.json()["decision"]["gates"]}
    for line in (project.root / "run" / "scores.jsonl").read_text().splitlines():
        for metric, values in json.loads(line)["scores"].items():
            scores.setdefault(metric, []).extend(values)
    return result.code, outcomes, scores


@pytest.mark.parametrize("mutator", ["graders.py:relax", "graders.py:obj"], ids=["a function", "a callable object"])
def test_another_metric_naming_the_gated_metrics_file_cannot_change_its_scores(tmp_path, mutator):
    project = _project(tmp_path)
    honest_code, honest_outcomes, honest_scores = _run(project)
    assert (honest_code, honest_outcomes) == (ExitCode.FAILED, {"mine": "fail"})
    # The pull request: a metric naming the mutator, scored first, with a gate the ledger does not approve.
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"] = {"helper": {"type": "python", "function": mutator}, **config["metrics"]}
    config["gates"]["helper"] = {"metric": "helper", "proposed_threshold": 0.5}
    project.write_config(config)
    code, outcomes, scores = _run(project)
    assert outcomes["mine"] == "fail" and code == ExitCode.FAILED, outcomes  # on main: pass, exit 0
    assert scores["mine"] == honest_scores["mine"], scores["mine"]
    assert scores["helper"] == [1.0] * 8  # the other metric still ran, in a worker of its own


def test_a_gated_metrics_worker_is_its_own_and_loads_only_the_function_its_metric_names(tmp_path):
    from evalglass.metrics.errors import MetricLoadError
    from evalglass.metrics.hostscoring import metric_worker

    (tmp_path / "graders.py").write_text(GRADERS)
    guard = (str(tmp_path), ((str(tmp_path / "graders.py"), "sha256:0"),))
    gated = metric_worker("graders.py:score", tmp_path, guard, "mine")
    assert metric_worker("graders.py:score", tmp_path, guard, "mine") is gated  # the metric's own, built again
    assert metric_worker("graders.py:score", tmp_path, guard, "other") is not gated  # same function, other metric
    assert metric_worker("graders.py:relax", tmp_path, guard, "helper") is not gated
    assert metric_worker("graders.py:relax", tmp_path) is metric_worker("graders.py:score", tmp_path)  # ungated share
    with pytest.raises(MetricLoadError, match=r"graders.py:relax: cannot be loaded in the worker of the gated metric"):
        gated.load("graders.py:relax", has_reference=False)  # refused before any process starts


#: An ungated metric whose module, as its worker imports it, rewrites the gated metric's file to answer 1.0, and
#: whose first call puts the file back as reviewed (before the run's end hashes the definition files again).
REWRITES = """\
import pathlib
_graders = pathlib.Path(__file__).with_name("graders.py")
_reviewed = _graders.read_text()
_graders.write_text("def score(output, reference):\\n    return 1.0\\n")


def restore(output):
    _graders.write_text(_reviewed)
    return 1.0
"""


def test_an_ungated_metric_rewriting_the_gated_metrics_file_as_it_loads_cannot_decide_it(tmp_path):
    project = _project(tmp_path)
    (project.evals / "side.py").write_text(REWRITES)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"] = {"helper": {"type": "python", "function": "side.py:restore"}, **config["metrics"]}
    project.write_config(config)
    code, outcomes, _ = _run(project)
    # The run's end sees the file's ctime moved (the gated worker's own refusal: the test at the end).
    assert code == ExitCode.SETUP and _rewritten_while_running("graders.py") in outcomes["stopped"], outcomes
    # (on main: pass, exit 0; with the worker's guard alone: the gate blocked, exit 1)


#: An approved grader that runs its rules from a bound data file (``runpy.run_path``, ``exec(compile(...))``): the
#: source is compiled without the import system's loader.
RUNS_RULES = {
    "runpy": "import os, runpy\n_rules = runpy.run_path(os.path.join(os.path.dirname(__file__), 'rules.py'))\n",
    "compile": (
        "import os\n_path = os.path.join(os.path.dirname(__file__), 'rules.py')\n_rules = {}\n"
        "with open(_path) as _file:\n    exec(compile(_file.read(), _path, 'exec'), _rules)\n"
    ),
}
RULES = "def score(output, reference):\n    return 1.0 if output == reference else 0.0\n"
REWRITES_RULES = (
    REWRITES.replace('"graders.py"', '"rules.py"')
    .replace("read_text()", "read_bytes()")
    .replace('write_text("def', 'write_bytes(b"def')
    .replace("write_text(_reviewed)", "write_bytes(_reviewed)")
)


@pytest.mark.parametrize("how", sorted(RUNS_RULES))
def test_a_bound_source_compiled_without_an_import_is_held_to_its_hash_too(tmp_path, how):
    project = _project(tmp_path)
    # With Windows line ends: the text read in text mode (universal newlines) is still the bound file's.
    reviewed = RULES.replace("\n", "\r\n").encode()
    (project.evals / "rules.py").write_bytes(reviewed)
    (project.evals / "graders.py").write_text(
        RUNS_RULES[how] + "\n\ndef score(output, reference):\n    return _rules['score'](output, reference)\n"
    )
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"]["mine"]["data_files"] = ["rules.py"]
    project.write_config(config)
    approve_as_is(project, 0.9, ["mine"])
    honest_code, honest_outcomes, _ = _run(project)
    assert (honest_code, honest_outcomes) == (ExitCode.FAILED, {"mine": "fail"})
    # The pull request: an ungated metric whose module rewrites the rules as it loads, and puts them back.
    (project.evals / "side.py").write_text(REWRITES_RULES)
    config["metrics"] = {"helper": {"type": "python", "function": "side.py:restore"}, **config["metrics"]}
    project.write_config(config)
    code, outcomes, _ = _run(project)
    # The run's end sees the file's ctime moved (the gated worker's own refusal: the test at the end).
    assert code == ExitCode.SETUP and _rewritten_while_running("rules.py") in outcomes["stopped"], outcomes
    # (before: pass, exit 0; with the worker's guard alone: the gate blocked, exit 1)
    assert (project.evals / "rules.py").read_bytes() == reviewed  # put back: the run's end saw the reviewed file


def _compiled(source: str, tmp_path: Path) -> bytes:
    """A sourceless module's bytes (``helper.pyc`` beside no ``helper.py``), as ``py_compile`` writes them."""
    import py_compile

    (tmp_path / "compiled.py").write_text(source)
    py_compile.compile(str(tmp_path / "compiled.py"), cfile=str(tmp_path / "compiled.pyc"), doraise=True)
    return (tmp_path / "compiled.pyc").read_bytes()


def test_a_bound_sourceless_module_is_held_to_its_hash_too(tmp_path):
    """A module the gated file imports that the checkout holds as ``helper.pyc`` only is bound by its bytes and
    loaded by the sourceless loader (found on the working folder: the run is made in the config's folder): rewritten by an ungated metric's module as it loads (and put back), it is
    refused like a rewritten source."""
    honest = _compiled("def judge(output, reference):\n    return 1.0 if output == reference else 0.0\n", tmp_path)
    forged = _compiled("def judge(output, reference):\n    return 1.0\n", tmp_path)
    (tmp_path / "p").mkdir()
    project = _project(tmp_path / "p")
    (project.evals / "helper.pyc").write_bytes(honest)
    (project.evals / "graders.py").write_text(
        "import helper\n\n\ndef score(output, reference):\n    return helper.judge(output, reference)\n"
    )
    approve_as_is(project, 0.9, ["mine"])
    honest_code, honest_outcomes, _ = _run(project, project.evals)
    assert (honest_code, honest_outcomes) == (ExitCode.FAILED, {"mine": "fail"})
    side = REWRITES_RULES.replace('"rules.py"', '"helper.pyc"').replace(
        'b"def score(output, reference):\\n    return 1.0\\n"', repr(forged)
    )
    assert repr(forged) in side
    (project.evals / "side.py").write_text(side)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"] = {"helper": {"type": "python", "function": "side.py:restore"}, **config["metrics"]}
    project.write_config(config)
    code, outcomes, _ = _run(project, project.evals)
    # The run's end sees the file's ctime moved (the gated worker's own refusal: the test at the end).
    assert code == ExitCode.SETUP and _rewritten_while_running("helper.pyc") in outcomes["stopped"], outcomes
    # (before: pass, exit 0; with the worker's guard alone: the gate blocked, exit 1)
    assert (project.evals / "helper.pyc").read_bytes() == honest


#: An approved grader whose rule is data: a bound JSON file it reads as its module loads (``data_files:``), which
#: no loader of the worker compares with the hash the config took.
READS_DATA = """\
import json, os
_STRICT = json.load(open(os.path.join(os.path.dirname(__file__), "strict.json")))["strict"]


def score(output, reference):
    if not _STRICT:
        return 1.0
    return 1.0 if output == reference else 0.0
"""


def test_a_bound_data_file_rewritten_and_put_back_during_the_run_stops_it(tmp_path):
    """An ungated metric's module rewrites the gated metric's data file as it loads (before the gated module reads
    it) and puts it back in its first call: the bytes at the run's end are the hashed ones, but the file's ctime
    moved, so the run ends with exit 2 naming the file (before: the approved failing gate passed, exit 0)."""
    project = _project(tmp_path)
    (project.evals / "strict.json").write_text('{"strict": true}\n')
    (project.evals / "graders.py").write_text(READS_DATA)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"]["mine"]["data_files"] = ["strict.json"]
    project.write_config(config)
    approve_as_is(project, 0.9, ["mine"])
    honest_code, honest_outcomes, _ = _run(project)  # nothing touches the file: its ctime holds, the gate fails
    assert (honest_code, honest_outcomes) == (ExitCode.FAILED, {"mine": "fail"})
    reviewed = (project.evals / "strict.json").read_bytes()
    side = REWRITES_RULES.replace('"rules.py"', '"strict.json"').replace(
        'b"def score(output, reference):\\n    return 1.0\\n"', repr(b'{"strict": false}\n')
    )
    assert "strict.json" in side and "false" in side
    (project.evals / "side.py").write_text(side)
    config["metrics"] = {"helper": {"type": "python", "function": "side.py:restore"}, **config["metrics"]}
    project.write_config(config)
    result = project.run("--no-progress", "--no-history", "--out", str(project.root / "run2"))
    assert (project.evals / "strict.json").read_bytes() == reviewed  # put back: the bytes alone show nothing
    assert result.code == ExitCode.SETUP, result  # before: exit 0, the gate passed
    assert _rewritten_while_running("strict.json") in result.err, result.err
    assert "Traceback" not in result.err


#: Per way a gated metric's code reaches a bound source: the files as the checkout holds them (the reviewed ones)
#: and the bound file then found rewritten, with its forged bytes.
_REACHES: dict[str, tuple[dict[str, bytes], str, bytes]] = {
    "import": (
        {"graders.py": b"def score(output, reference):\n    return 1.0 if output == reference else 0.0\n"},
        "graders.py",
        b"def score(output, reference):\n    return 1.0\n",
    ),
    **{
        how: (
            {
                "rules.py": RULES.encode(),
                "graders.py": (
                    RUNS_RULES[how]
                    + "\n\ndef score(output, reference):\n    return _rules['score'](output, reference)\n"
                ).encode(),
            },
            "rules.py",
            b"def score(output, reference):\n    return 1.0\n",
        )
        for how in sorted(RUNS_RULES)
    },
}


@pytest.mark.parametrize("how", sorted(_REACHES))
def test_the_gated_worker_refuses_a_bound_source_rewritten_since_the_config_was_hashed(tmp_path, how):
    """What the gated worker does itself, under the run's end (which, since the bound files' states are held, stops
    a run in which one was rewritten with exit 2 before any score is kept): a bound source whose bytes are not the
    hashed ones, imported or compiled under its name, is refused, every call an error (``host_unbound_code``)."""
    from evalglass.core.fingerprint import fingerprint_of_bytes
    from evalglass.metrics.hostscoring import metric_worker

    reviewed, rewritten, forged = _REACHES[how]
    (tmp_path / ".git").mkdir()
    for name, data in reviewed.items():
        (tmp_path / name).write_bytes(data)
    guard = (str(tmp_path), tuple(sorted((str(tmp_path / n), fingerprint_of_bytes(d)) for n, d in reviewed.items())))
    (tmp_path / rewritten).write_bytes(forged)  # after the hash: as host code of the run would
    worker = metric_worker("graders.py:score", tmp_path, guard, "mine")
    index, wanted = worker.load("graders.py:score", True)
    columns = {"output": ["a"], "reference": ["b"]}
    (result,) = worker.score(index, {name: columns[name] for name in wanted}, 1)
    assert [item.code for item in result.diagnostics] == ["host_unbound_code"], result
    assert f"{rewritten} is not as the gate bound it" in result.diagnostics[0].message, result
