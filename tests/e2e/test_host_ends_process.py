"""Host code that ends its process never ends a run green (issue 26, evalglass/supervisor.py).

A pull request edits an approved gate's host function so that it ends the process: before, `evalglass run` then
exited 0 with no verdict (a green CI job that decided nothing, and the stale approval never reported). Every route
is tried in a python metric and in a python lane, through the real command line: each ends only the worker process
it runs in (lanes/hostworker.py, metrics/hostscoring.py), and the call is that example's failure, never a pass; or,
where the process survives it, the run decides as usual (here: blocked, the approval is stale) with its output
intact. What still runs in the deciding process (a check command that kills it) ends the run, which exits 2 with one
line naming what was running.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalglass.core.exitcodes import ExitCode
from evalglass.engine.spec.config import load_config
from tests.e2e.project import CliResult, Project, make_project, validated_gold

#: Each way host code can end its process, as the body a function runs once.
ENDS_PROCESS = {
    "os._exit": "os._exit(0)",
    "posix._exit": "import posix; posix._exit(0)",
    "ctypes exit": "import ctypes; ctypes.CDLL(None).exit(0)",
    "SIGKILL": "import signal; os.kill(os.getpid(), signal.SIGKILL)",
}
#: Ways that leave the process running but break what the command line ends with: its streams, its last resort
#: (the boundary's own error escaping to a replaced excepthook that exits 0 used to end the run green).
BREAKS_STREAMS = {
    "closed fd 1 and 2": "os.close(1); os.close(2)",
    "closed sys streams": "sys.stdout.close(); sys.stderr.close()",
    "excepthook": "sys.excepthook = lambda *exc: os._exit(0); os.close(2); sys.stdout = None",
}
HOW = {"SIGKILL": "was killed by SIGKILL"}

METRIC = "import os, sys\n\ndef score(output):\n{body}\n    return 1.0\n"
LANE = (
    "import os, sys\n\ndef answer(fields):\n    if fields['id'] == 'ex-1':\n{body}\n        return 'wrong'\n"
    "    return fields['expected']\n"
)


def _project(tmp_path: Path, host: str) -> Project:
    """A gate approved on the host function's reviewed version, which the pull request then edits: a python
    metric's gate passes (its approval goes stale with the edit), a python lane's fails (7 of 8 answers are right,
    9 of 10 are asked for; the lane is the system under test, which no approval binds)."""
    if host == "metric":
        project = make_project(
            tmp_path,
            metrics={"mine": {"type": "python", "function": "host.py:score"}},
            gates={"accuracy": {"metric": "mine", "proposed_threshold": 0.5}},
        )
        (project.evals / "host.py").write_text(METRIC.format(body=""))
    else:
        project = make_project(
            tmp_path,
            task={"type": "python", "function": "host.py:answer"},
            metrics={"answered": {"type": "regex", "pattern": "^(yes|no)$"}},
            gates={"accuracy": {"metric": "answered", "proposed_threshold": 0.9}},
        )
        (project.evals / "host.py").write_text(LANE.format(body=""))
    loaded = load_config(project.evals / "evalglass.yaml")
    fingerprint = loaded.config.gate_fingerprint("accuracy", loaded.definition_files)
    threshold = 0.5 if host == "metric" else 0.9
    project.write_ledger(
        {
            "version": 1,
            "gates": {"accuracy": {"active": True, "threshold": threshold, "fingerprint": fingerprint}},
            "datasets": validated_gold(project.evals),
        }
    )
    return project


def _edit(project: Project, host: str, body: str) -> None:
    template = METRIC if host == "metric" else LANE
    indent = "    " if host == "metric" else "        "
    (project.evals / "host.py").write_text(template.format(body=textwrap.indent(body, indent)))


def _run(project: Project) -> CliResult:
    return project.run("--format", "json", "--no-progress", "--no-history")


def _edited_run(tmp_path: Path, host: str, body: str) -> tuple[Project, CliResult]:
    project = _project(tmp_path, host)
    _edit(project, host, body)
    return project, _run(project)


@pytest.mark.parametrize("route", sorted(ENDS_PROCESS))
def test_a_metric_that_ends_its_process_ends_only_its_worker(tmp_path, route):
    """A python metric runs in a worker process (metrics/hostscoring.py): every call that ended its worker is that
    example's error, saying how (never 0.0, never a pass), and the run decides: blocked, nothing measured."""
    _, result = _edited_run(tmp_path, "metric", ENDS_PROCESS[route])
    assert result.code == ExitCode.FAILED, result
    card = result.json()
    (gate,) = card["decision"]["gates"]
    assert (card["decision"]["verdict"], gate["outcome"]) == ("blocked", "blocked")
    folder = Path(card["folder"])
    (block,) = [json.loads(line) for line in (folder / "scores.jsonl").read_text().splitlines()]
    how = "was killed by SIGKILL" if route == "SIGKILL" else "ended with exit code 0"
    for score in block["scores"]["mine"]:
        (diagnostic,) = score["diagnostics"]
        assert score["status"] == "error", score
        assert diagnostic["code"] == "host_worker_lost" and how in diagnostic["message"], diagnostic


@pytest.mark.parametrize("route", sorted(ENDS_PROCESS))
def test_a_lane_that_ends_its_process_ends_only_its_worker(tmp_path, route):
    """A python lane runs in worker processes (lanes/hostworker.py): the call that ended its worker is that
    example's failure, saying how, and the run decides on the rest: blocked, one example not measured."""
    _, result = _edited_run(tmp_path, "lane", ENDS_PROCESS[route])
    assert result.code == ExitCode.FAILED, result
    card = result.json()
    (gate,) = card["decision"]["gates"]
    assert (card["decision"]["verdict"], gate["outcome"], gate["n"]) == ("blocked", "blocked", 7)
    assert [reason["code"] for reason in gate["reasons"]] == ["incomplete_measurement"]
    folder = Path(card["folder"])
    (block,) = [json.loads(line) for line in (folder / "scores.jsonl").read_text().splitlines()]
    failed = dict(zip(block["ids"], block["scores"]["answered"], strict=True))["ex-1"]
    (diagnostic,) = failed["diagnostics"]
    how = "was killed by SIGKILL" if route == "SIGKILL" else "ended with exit code 0"
    assert diagnostic["code"] == "task_worker_lost" and how in diagnostic["message"], diagnostic


@pytest.mark.parametrize("host", ["metric", "lane"])
@pytest.mark.parametrize("route", sorted(BREAKS_STREAMS))
def test_host_code_that_breaks_the_streams_leaves_the_decision_and_its_output(tmp_path, host, route):
    _, result = _edited_run(tmp_path, host, BREAKS_STREAMS[route])
    assert result.code == ExitCode.FAILED, result
    card = json.loads(result.out)  # the whole of stdout is one JSON document
    (gate,) = card["decision"]["gates"]
    if host == "metric":
        assert (card["decision"]["verdict"], gate["outcome"]) == ("blocked", "blocked")
        assert "approval_stale" in [reason["code"] for reason in gate["reasons"]]
    else:
        assert (card["decision"]["verdict"], gate["compared"]) == ("fail", 0.875)


@pytest.mark.parametrize(("host", "verdict"), [("metric", "pass"), ("lane", "fail")])
def test_the_reviewed_function_decides_as_approved(tmp_path, host, verdict):
    """The control: the same project before the pull request's edit."""
    result = _run(_project(tmp_path, host))
    assert result.json()["decision"]["verdict"] == verdict, result
    assert result.code == (ExitCode.OK if verdict == "pass" else ExitCode.FAILED)


def test_host_code_ending_the_process_while_its_module_loads_is_named(tmp_path):
    project = _project(tmp_path, "metric")
    (project.evals / "host.py").write_text("import os\nos._exit(0)\n\ndef score(output):\n    return 1.0\n")
    result = _run(project)
    assert result.code == ExitCode.SETUP
    (line,) = result.err.strip().splitlines()
    assert "metric 'mine'" in line and "host.py:score" in line and "ended with exit code 0 while loading" in line


def test_a_check_command_that_kills_evalglass_is_exit_2_naming_the_check(tmp_path):
    project = make_project(
        tmp_path,
        checks={"suicide": {"command": ["sh", "-c", "kill -9 $PPID; sleep 5"], "target": "data.jsonl"}},
        gates={},
    )
    result = project.cli("check", "suicide", "--format", "json")
    assert result.code == ExitCode.SETUP, result
    assert result.out == ""
    (line,) = result.err.strip().splitlines()
    assert "check 'suicide' was running when the process was killed by SIGKILL" in line, line


def test_the_api_raises_instead_of_ending_its_caller(tmp_path):
    """`evalglass.run()` runs in a forked copy of the caller: the caller survives and gets a SetupError."""
    project = make_project(
        tmp_path,
        checks={"suicide": {"command": ["sh", "-c", "kill -9 $PPID; sleep 5"], "target": "data.jsonl"}},
        gates={"suicide": {"check": "suicide"}},
    )
    script = (
        "import evalglass\n"
        "try:\n"
        "    evalglass.run('evals/evalglass.yaml')\n"
        "except evalglass.SetupError as exc:\n"
        "    print('raised:', exc)\n"
        "print('the caller goes on')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=project.root, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert lines[-1] == "the caller goes on", (done.stdout, done.stderr)
    assert lines[0].startswith("raised: nothing was decided: check 'suicide' was running"), lines


def test_the_api_returns_what_the_run_wrote(tmp_path):
    project = _project(tmp_path, "metric")
    script = (
        "import evalglass\n"
        "result = evalglass.run('evals/evalglass.yaml', out='run')\n"
        "loaded = evalglass.load_run('run')\n"
        "assert (result.folder, result.scorecard) == (loaded.folder, loaded.scorecard), result\n"
        "print(result.verdict, result.exit_code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=project.root, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["pass", "0"], done.stderr
