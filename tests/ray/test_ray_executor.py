"""`executor: {type: ray}` end to end, through the real CLI against a real local Ray cluster (tests/ray/conftest.py).

Few and small on purpose (each run connects to the cluster, which takes seconds): the same bytes as a local run on a
suite mixing python, command and check work; a worker killed mid-task (Ray retries it: every example scored once);
work that keeps dying (an `error` with its reason, never 0.0); a cluster lost mid-run (stops like Ctrl-C, `--resume`
finishes it to the same result).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.project import CliResult, run_cli
from tests.ray.conftest import LocalCluster, local_cluster, require_ray

LANE = """\
import os, time
from pathlib import Path

def answer(record):
    n = record["n"]
    log = os.environ.get("EG_CALL_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(f"{record['id']} {os.getpid()}\\n")
    if n == 5:
        raise ValueError("five is not allowed")
    hold = os.environ.get("EG_HOLD_DIR")
    if hold and n == 3:
        marker = Path(hold) / "ex-3.pid"
        try:
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            pass  # a retry: the first attempt's process was killed
        else:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            time.sleep(60)  # until the test kills this process
    if os.environ.get("EG_DIE_ON") == record["id"]:
        os.kill(os.getpid(), 9)
    delay = float(os.environ.get("EG_DELAY", "0"))
    time.sleep(delay)
    return {"text": "x" * n, "files": {"main.txt": str(n)}}
"""

COMMAND = """\
import json, sys
record = json.load(sys.stdin)
if record["n"] == 6:
    sys.exit(3)
print(json.dumps({"text": "y" * record["n"], "files": {"main.txt": str(record["n"])}}))
"""

METRIC = """\
def length(output):
    if len(output["text"]) == 7:
        raise RuntimeError("seven")
    return float(len(output["text"]))
"""

CHECKER = """\
import pathlib, sys
value = int((pathlib.Path(sys.argv[1]) / "main.txt").read_text())
sys.exit(0 if value % 2 == 0 else 1)
"""


def project(root: Path, task: dict[str, Any], executor: dict[str, Any], rows: int = 8) -> Path:
    """One evals folder with two configs that differ only in ``executor:``: ``evalglass.yaml`` (local) and
    ``ray.yaml`` (tracebacks name the host files' paths, so both runs must use the same folder)."""
    evals = root / "evals"
    evals.mkdir(parents=True)
    (evals / "lane.py").write_text(LANE)
    (evals / "command.py").write_text(COMMAND)
    (evals / "metric.py").write_text(METRIC)
    (evals / "checker.py").write_text(CHECKER)
    records = [{"id": f"ex-{n}", "n": n} for n in range(1, rows + 1)]
    if task["type"] == "recorded":  # outputs recorded in the dataset (the shape of patch-checking suites)
        records = [{**r, "output": {"text": "z" * r["n"], "files": {"main.txt": str(r["n"])}}} for r in records]
    (evals / "data.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    (evals / "authority.yaml").write_text("version: 1\n")
    config: dict[str, Any] = {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl"},
        "task": task,
        "metrics": {
            "length": {"type": "python", "function": "metric.py:length"},
            "even": {"type": "check", "check": "even", "field": "files"},
        },
        "checks": {"even": {"command": ["{python}", "checker.py", "{target}"]}},
    }
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (evals / "ray.yaml").write_text(yaml.safe_dump({**config, "executor": executor}, sort_keys=False))
    return root


RAY = ("--config", "evals/ray.yaml")


PYTHON_TASK = {"type": "python", "function": "lane.py:answer"}
COMMAND_TASK = {"type": "command", "argv": [sys.executable, "command.py"], "output": "json"}
RECORDED_TASK = {"type": "recorded", "field": "output"}


def run(root: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    return run_cli("run", "--no-progress", *args, cwd=root, env=env)


def scores_of(folder: Path) -> dict[str, Any]:
    """Per example id, per metric, ``[its score]`` (a block line holds one example in a live run, many otherwise)."""
    found: dict[str, Any] = {}
    for line in (folder / "scores.jsonl").open():
        block = json.loads(line)
        for index, example in enumerate(block["ids"]):
            found[example] = {name: [values[index]] for name, values in block["scores"].items()}
    return found


def ray_executor(cluster: LocalCluster, **extra: Any) -> dict[str, Any]:
    return {"type": "ray", "address": cluster.address, **extra}


@pytest.mark.parametrize(
    "task", [PYTHON_TASK, COMMAND_TASK, RECORDED_TASK], ids=["python-lane", "command-lane", "recorded"]
)
def test_a_ray_run_writes_the_bytes_a_local_run_writes(tmp_path: Path, ray_cluster: LocalCluster, task: dict) -> None:
    root = project(tmp_path, task, ray_executor(ray_cluster))
    assert run(root, "--out", "local").code == 0
    result = run(root, *RAY, "--out", "ray", env=ray_cluster.env)
    assert result.code == 0, result.err
    local, shipped = root / "local", root / "ray"
    names = ["scores.jsonl", "outputs.jsonl"] if task["type"] != "recorded" else ["scores.jsonl"]
    for name in names:
        assert (shipped / name).read_bytes() == (local / name).read_bytes(), name
    scores = scores_of(shipped)
    # The mix really happened: lane failures, a raising host metric, passing and failing checks.
    failed_lane = {"python": "ex-5", "command": "ex-6"}.get(task["type"])
    if failed_lane is not None:
        assert scores[failed_lane]["even"][0]["status"] == "error"
    assert scores["ex-7"]["length"][0]["diagnostics"][0]["code"] == "host_raised"
    assert scores["ex-2"]["even"][0]["value"] == 1.0 and scores["ex-3"]["even"][0]["value"] == 0.0
    # Checks ran bound on the workers: the fingerprint taken there is the one a local run takes.
    local_checks = {r["example_id"]: r for r in map(json.loads, (local / "checks.jsonl").open())}
    ray_checks = {r["example_id"]: r for r in map(json.loads, (shipped / "checks.jsonl").open())}
    assert ray_checks.keys() == local_checks.keys() and len(ray_checks) == (7 if failed_lane else 8)
    for example, record in ray_checks.items():
        assert record["binding"] == "bound"
        assert record["observed_fingerprint"] == record["requested_fingerprint"]
        assert record["requested_fingerprint"] == local_checks[example]["requested_fingerprint"]


def test_a_worker_killed_mid_task_is_retried_by_ray_and_every_example_is_scored_once(
    tmp_path: Path, ray_cluster: LocalCluster
) -> None:
    hold, calls = tmp_path / "hold", tmp_path / "calls.log"
    hold.mkdir()
    # Workers have their own environment: what the lane reads there comes through the runtime environment.
    settings = {"EG_HOLD_DIR": str(hold), "EG_CALL_LOG": str(calls)}
    root = project(tmp_path, PYTHON_TASK, ray_executor(ray_cluster, runtime_env={"env_vars": settings}))
    assert run(root, "--out", "local").code == 0
    calls.unlink(missing_ok=True)
    env = {**ray_cluster.env, "COLUMNS": "200"}
    process = subprocess.Popen(
        [sys.executable, "-m", "evalglass", "run", "--no-progress", *RAY, "--out", "ray"],
        cwd=root,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        marker = hold / "ex-3.pid"
        deadline = time.monotonic() + 90
        while not (marker.exists() and marker.read_text()):
            assert process.poll() is None and time.monotonic() < deadline, "ex-3 never started"
            time.sleep(0.1)
        os.kill(int(marker.read_text()), signal.SIGKILL)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err.decode()
    assert (root / "ray" / "scores.jsonl").read_bytes() == (root / "local" / "scores.jsonl").read_bytes()
    attempts = [line.split()[0] for line in calls.read_text().splitlines()]
    assert attempts.count("ex-3") == 2  # the killed attempt and Ray's retry
    assert sorted(set(attempts)) == sorted(f"ex-{n}" for n in range(1, 9))
    assert all(attempts.count(f"ex-{n}") == 1 for n in range(1, 9) if n != 3)


def test_work_that_keeps_dying_is_an_error_with_its_reason_never_a_score(
    tmp_path: Path, ray_cluster: LocalCluster
) -> None:
    executor = ray_executor(ray_cluster, max_retries=1, runtime_env={"env_vars": {"EG_DIE_ON": "ex-4"}})
    root = project(tmp_path, PYTHON_TASK, executor)
    result = run(root, *RAY, "--out", "out", env=ray_cluster.env)
    assert result.code == 0, result.err
    scores = scores_of(root / "out")
    for metric in ("length", "even"):
        (score,) = scores["ex-4"][metric]
        assert score["status"] == "error" and score.get("value") is None
        diagnostic = score["diagnostics"][0]
        assert diagnostic["code"] == "task_worker_lost"
        assert "died 2 time(s)" in diagnostic["message"] and "max_retries is 1" in diagnostic["message"]
    assert scores["ex-4"]["length"] != [0.0] and scores["ex-2"]["length"] == [2.0]
    card = json.loads((root / "out" / "scorecard.json").read_text())
    length = next(m for m in card["metrics"] if m["name"] == "length")
    assert length["population"]["included"] == 5  # ex-4 (lost), ex-5 (lane raised), ex-7 (metric raised): no zeros


def test_a_lost_cluster_stops_the_run_like_ctrl_c_and_resume_finishes_it(
    tmp_path: Path, ray_cluster: LocalCluster
) -> None:
    require_ray()
    hold, calls = tmp_path / "hold", tmp_path / "calls.log"
    hold.mkdir()
    # ex-3's first call holds its worker until the head is killed (an event, not a delay: a call is surely in flight
    # when the cluster goes); its call on resume finds the marker and returns at once.
    settings = {"EG_HOLD_DIR": str(hold), "EG_CALL_LOG": str(calls)}
    # No address in the config: the interrupted run reaches this test's own cluster and the resume the shared one,
    # both through RAY_ADDRESS (a killed head restarted on its port would cost a second cluster start).
    executor = {"type": "ray", "runtime_env": {"env_vars": settings}}
    root = project(tmp_path, {**PYTHON_TASK, "cache": True}, executor, rows=12)
    assert run(root, "--out", "local", "--no-cache").code == 0
    calls.unlink(missing_ok=True)
    with local_cluster(workers=0, head_cpus=2) as cluster:
        # This test's own cluster (it kills the head): one node.
        env = {**os.environ, **cluster.env, "RAY_ADDRESS": cluster.address, "COLUMNS": "200"}
        process = subprocess.Popen(
            [sys.executable, "-m", "evalglass", "run", "--no-progress", *RAY, "--out", "ray"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            marker = hold / "ex-3.pid"
            deadline = time.monotonic() + 90
            while not (marker.exists() and marker.read_text()):
                assert process.poll() is None and time.monotonic() < deadline, "ex-3 never started"
                time.sleep(0.1)
            cluster.stop()  # the head and everything on it, by the process group started for it
            _, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    message = err.decode()
    assert process.returncode == 130, message
    assert "lost the Ray cluster" in message and "--resume" in message and "Traceback" not in message
    assert not (root / "ray" / "scores.jsonl").exists()
    resumed = run(root, *RAY, "--resume", "ray", env={**ray_cluster.env, "RAY_ADDRESS": ray_cluster.address})
    assert resumed.code == 0, resumed.err
    assert (root / "ray" / "scores.jsonl").read_bytes() == (root / "local" / "scores.jsonl").read_bytes()
    # Outputs answered from the cache come back in canonical JSON (sorted keys), as on any resumed run.
    outputs = [(root / run / "outputs.jsonl").read_text().splitlines() for run in ("ray", "local")]
    assert [json.loads(line) for line in outputs[0]] == [json.loads(line) for line in outputs[1]]
    made = [line.split()[0] for line in calls.read_text().splitlines()]
    # Every example's call was made; a call in flight when the head died is made again on resume (the cache has
    # only finished ones), never more than that; ex-3 was in flight.
    assert sorted(set(made)) == sorted(f"ex-{n}" for n in range(1, 13)) and max(map(made.count, made)) <= 2
    assert made.count("ex-3") == 2
