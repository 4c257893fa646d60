"""A python metric's worker process (lanes/metricworker.py, metrics/hostscoring.py), through the real command line:
a call over the metric's ``timeout`` is that example's ``metric_timeout`` error (never 0.0), its worker is replaced
and the rest of the batch is scored, each call made once; the worker imports neither ``evalglass.metrics`` nor
pydantic before host code does; ``timeout`` is not part of what an approval binds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalglass.core.exitcodes import ExitCode
from evalglass.core.score import Score
from evalglass.engine.spec.config import load_config
from tests.e2e.project import Project, make_project

#: Appends "<example id> <pid>" per call to calls.txt beside the project (a gated metric may not ask about, so not
#: append to, a file of the project its gate does not bind); ex-3's call never returns.
HANGS = """\
import os, time

def score(record):
    with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "calls.txt"), "a") as calls:
        calls.write(f"{record['id']} {os.getpid()}\\n")
    if record["id"] == "ex-3":
        while True:
            time.sleep(1)
    return 1.0
"""

#: 1.0 when the worker had loaded neither the metrics package nor pydantic when the function was called.
LIGHT = """\
import sys

def score(output):
    loaded = [name for name in ("pydantic", "evalglass.metrics") if name in sys.modules]
    return 0.0 if loaded else 1.0
"""


def _project(tmp_path: Path, source: str, **metric: Any) -> Project:
    project = make_project(
        tmp_path,
        metrics={"mine": {"type": "python", "function": "host.py:score", **metric}},
        gates={"quality": {"metric": "mine", "proposed_threshold": 0.5}},
    )
    (project.evals / "host.py").write_text(source)
    return project


def _scores(project: Project) -> dict[str, dict[str, Any]]:
    result = project.run("--format", "json", "--no-progress", "--no-history")
    assert result.code in (ExitCode.OK, ExitCode.FAILED), result
    folder = Path(result.json()["folder"])
    (block,) = [json.loads(line) for line in (folder / "scores.jsonl").read_text().splitlines()]
    return dict(zip(block["ids"], block["scores"]["mine"], strict=True))


def test_a_call_over_its_timeout_is_an_error_and_the_rest_of_the_batch_is_scored_once(tmp_path):
    project = _project(tmp_path, HANGS, timeout=0.5)
    scores = _scores(project)
    hung = scores.pop("ex-3")
    assert hung["status"] == "error" and hung.get("value") is None, hung
    (diagnostic,) = hung["diagnostics"]
    assert diagnostic["code"] == "metric_timeout", diagnostic
    assert diagnostic["message"] == "the metric function did not return within 0.5s", diagnostic
    assert list(scores.values()) == [1.0] * 7, scores  # a measured value is stored as the number
    calls = [line.split() for line in (project.root / "calls.txt").read_text().splitlines()]
    made = [example for example, _ in calls]
    assert sorted(made) == sorted(f"ex-{i}" for i in range(1, 9)), made  # each call made once
    pids = dict(calls)
    after = [pids[example] for example in made[made.index("ex-3") + 1 :]]
    assert after and pids["ex-3"] not in after, calls  # the calls after it went to a fresh worker


def test_the_worker_imports_neither_the_metrics_package_nor_pydantic(tmp_path):
    scores = _scores(_project(tmp_path, LIGHT))
    assert list(scores.values()) == [1.0] * 8, scores


def test_the_timeout_is_not_part_of_the_definition_an_approval_binds(tmp_path):
    def fingerprint(root: Path, **metric: Any) -> str:
        root.mkdir()
        project = _project(root, LIGHT, **metric)
        loaded = load_config(project.evals / "evalglass.yaml")
        return loaded.config.gate_fingerprint("quality", loaded.definition_files)

    plain = fingerprint(tmp_path / "plain")
    assert fingerprint(tmp_path / "short", timeout=0.5) == plain
    assert fingerprint(tmp_path / "none", timeout=None) == plain


def test_a_worker_whose_last_call_timed_out_is_replaced_before_the_next_call(tmp_path):
    """The watchdog ends the worker after a batch's last call runs past its timeout (the answer is then as long as
    the batch): the next call goes to a fresh worker, never to the ended one (which would make it
    ``host_worker_lost``)."""
    from evalglass.metrics.hostscoring import MetricWorker

    (tmp_path / "host.py").write_text(
        "import os, time\n\ndef score(output):\n    if output == 'hang':\n        time.sleep(60)\n"
        "    return float(os.getpid())\n"
    )
    worker = MetricWorker(tmp_path)
    index, wanted = worker.load("host.py:score", has_reference=False)
    assert wanted == ("output",)
    first, hung = worker.score(index, {"output": ["a", "hang"]}, 2, 0.3)
    (after,) = worker.score(index, {"output": ["b"]}, 1, 0.3)
    assert isinstance(hung, Score) and hung.diagnostics[0].code == "metric_timeout", hung
    assert type(first) is float and type(after) is float and after != first, (first, after)
