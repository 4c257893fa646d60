"""A python metric whose worker process ends mid-batch (metrics/hostscoring.py, lanes/metricworker.py, the answer log
of lanes/hostworker.py), with real worker processes: every call answered before the one that ended it keeps its
answer and is made exactly once (each call appends to a file), the call in flight is that example's
``host_worker_lost`` (or ``metric_timeout``) error and is not made again, and the rest of the batch is scored once, on
a fresh worker. Through the command line: the gate on the metric blocks and ``run`` exits 1, as a user sees it.
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.exitcodes import ExitCode
from evalglass.core.fingerprint import fingerprint_of_bytes
from evalglass.core.score import Score
from evalglass.lanes.hostworker import AnswerLog, LogWriter
from evalglass.metrics.hostscoring import MetricWorker
from tests.e2e.project import Project, approve_as_is, make_project

#: Appends "<example id> <pid>" per call to calls.txt, then ends its own process on ex-3 (``{ending}``: as a crash,
#: ``os._exit`` or the kernel's OOM killer would).
ENDS_ON_THE_THIRD = """\
import os, signal

def score(output, reference, example):
    # Beside the project (the config folder), not in it: a gated metric may not ask about (append to) a file of
    # the project its gate does not bind.
    with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "calls.txt"), "a") as calls:
        calls.write(f"{{example.id}} {{os.getpid()}}\\n")
    if example.id == "ex-3":
        {ending}
    return 1.0 if output == reference else 0.0
"""

ENDINGS = {
    "os._exit": ("os._exit(3)", "its worker process ended with exit code 3"),
    "SIGKILL": ("os.kill(os.getpid(), signal.SIGKILL)", "its worker process was killed by SIGKILL"),
    "segfault": ("import ctypes; ctypes.string_at(0)", "its worker process was killed by SIGSEGV"),
}


def _gated_project(tmp_path: Path, source: str) -> Project:
    project = make_project(
        tmp_path,
        metrics={"mine": {"type": "python", "function": "host.py:score", "reference": "expected"}},
        gates={"mine": {"metric": "mine", "proposed_threshold": 0.5}},
    )
    (project.evals / "host.py").write_text(source)
    approve_as_is(project, 0.5, ("mine",))
    return project


def _calls(folder: Path) -> list[tuple[str, str]]:
    return [(line.split()[0], line.split()[1]) for line in (folder / "calls.txt").read_text().splitlines()]


@pytest.mark.parametrize("route", sorted(ENDINGS))
def test_a_worker_that_ends_on_the_third_call_keeps_every_answer_before_it_and_makes_no_call_twice(tmp_path, route):
    ending, said = ENDINGS[route]
    project = _gated_project(tmp_path, ENDS_ON_THE_THIRD.format(ending=ending))
    result = project.run("--format", "json", "--no-progress", "--no-history", "--out", "run")
    assert result.code == ExitCode.FAILED, result  # exit 1: the gate blocks, the run completed
    card = result.json()
    (gate,) = card["decision"]["gates"]
    assert (card["decision"]["verdict"], gate["outcome"]) == ("blocked", "blocked"), card["decision"]
    scores: dict[str, Any] = {}
    for line in (project.root / "run" / "scores.jsonl").read_text().splitlines():
        block = json.loads(line)
        scores.update(zip(block["ids"], block["scores"]["mine"], strict=True))
    ended = scores.pop("ex-3")
    assert ended["status"] == "error" and ended.get("value") is None, ended  # never 0.0, never a pass
    (diagnostic,) = ended["diagnostics"]
    assert diagnostic["code"] == "host_worker_lost", diagnostic
    assert diagnostic["message"] == f"the metric function did not answer: {said}", diagnostic
    assert scores == {f"ex-{i}": 1.0 if i % 4 else 0.0 for i in (1, 2, 4, 5, 6, 7, 8)}, scores
    calls = _calls(project.root)
    made = [example for example, _ in calls]
    assert made == [f"ex-{i}" for i in range(1, 9)], made  # each call once, in order: none made again
    pids = dict(calls)
    assert pids["ex-1"] == pids["ex-2"] == pids["ex-3"], calls  # one batch on one worker until it ended
    assert {pids[f"ex-{i}"] for i in range(4, 9)} == {pids["ex-4"]} != {pids["ex-3"]}, calls  # then a fresh one
    assert project.cli("verify", "run").code == ExitCode.OK

    # What a user reads on the terminal, the same run again: the one error named, the gate blocked, exit 1.
    (project.root / "calls.txt").unlink()
    shown = project.run("--no-progress", "--no-history")
    assert shown.code == ExitCode.FAILED, shown
    assert "host_worker_lost ×1" in shown.out and "1 of 8 examples were not measured validly (1 error)" in shown.out
    assert "verdict: blocked  (exit 1)" in shown.out, shown.out
    assert [example for example, _ in _calls(project.root)] == [f"ex-{i}" for i in range(1, 9)]


#: Fast calls (an append each): hundreds of answers go by within a millisecond, so only an answer logged as its
#: call returns can be kept. Each call raises, so each answer carries a traceback and the log outgrows its first
#: megabyte. Call ``DIES`` ends the worker.
MANY = """\
import os

def score(output):
    with open(os.path.join(os.path.dirname(__file__), "calls.txt"), "a") as calls:
        calls.write(f"{{output}} {{os.getpid()}}\\n")
    if output == {dies}:
        os._exit(9)
    raise ValueError(f"{{output}} " + "x" * 1000)
"""


def test_a_long_batch_of_fast_calls_keeps_every_answer_made_before_its_worker_ended(tmp_path):
    count, dies = 900, 850
    (tmp_path / "host.py").write_text(MANY.format(dies=dies))
    worker = MetricWorker(tmp_path)
    index, _ = worker.load("host.py:score", has_reference=False)
    results = worker.score(index, {"output": list(range(count))}, count, None)
    made = [int(example) for example, _ in _calls(tmp_path)]
    assert made == list(range(count)), made[dies - 3 : dies + 3]  # each call exactly once
    assert len(results) == count
    for number, result in enumerate(results):
        assert isinstance(result, Score) and result.status.value == "error", (number, result)
        (diagnostic,) = result.diagnostics
        if number == dies:
            assert diagnostic.code == "host_worker_lost", diagnostic
            assert diagnostic.message.endswith("ended with exit code 9"), diagnostic
        else:
            said = f"the metric function raised ValueError: {number} x"
            assert diagnostic.code == "host_raised" and diagnostic.message.startswith(said), (number, result)


#: ex-3's call holds the interpreter (a loop in C), so its worker's watchdog cannot say it ran past its timeout.
HOLDS = """\
import os

def score(output, example):
    with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "calls.txt"), "a") as calls:  # beside the project
        calls.write(f"{example.id} {os.getpid()}\\n")
    if example.id == "ex-3":
        sum(range(10**13))
    return 1.0
"""


def test_a_call_that_holds_its_worker_past_the_batch_limit_is_its_timeout_and_no_call_is_made_twice(tmp_path):
    """The deciding process's backstop (the calls' timeouts together, and a second) kills the worker: the call it
    was making is ``metric_timeout``, the answers before it are kept, the calls after it go to a fresh worker."""
    project = make_project(
        tmp_path,
        metrics={"mine": {"type": "python", "function": "host.py:score", "timeout": 0.2}},
        gates={"quality": {"metric": "mine", "proposed_threshold": 0.5}},
    )
    (project.evals / "host.py").write_text(HOLDS)
    result = project.run("--format", "json", "--no-progress", "--no-history", "--out", "run")
    assert result.code in (ExitCode.OK, ExitCode.FAILED), result
    (block,) = [json.loads(line) for line in (project.root / "run" / "scores.jsonl").read_text().splitlines()]
    scores = dict(zip(block["ids"], block["scores"]["mine"], strict=True))
    held = scores.pop("ex-3")
    assert held["status"] == "error" and held["diagnostics"][0]["code"] == "metric_timeout", held
    assert list(scores.values()) == [1.0] * 7, scores
    made = [example for example, _ in _calls(project.root)]
    assert made == [f"ex-{i}" for i in range(1, 9)], made


_ANSWERS = st.lists(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.lists(st.one_of(st.none(), st.text(string.printable, max_size=3000)), max_size=4),
        st.dictionaries(st.text(max_size=5), st.text(max_size=40), max_size=3),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(first=_ANSWERS, second=_ANSWERS)
def test_the_answer_log_reads_back_what_was_written_since_it_was_cleared(first, second):
    """Written as a worker writes it (a map of the log's file, growing as needed), the log reads back the answers
    of the batch since the last clear, in order, never an earlier batch's; a line cut short is not read."""
    import orjson

    log = AnswerLog()
    try:
        fd = log.given().fd
        assert log.read() is None  # no worker has sized it: nothing started
        writer = LogWriter(os.dup(fd))
        for batch in (first, second):
            log.clear()
            writer.begin()
            for answer in batch:
                writer.add(orjson.dumps(answer, option=orjson.OPT_APPEND_NEWLINE))
            assert log.read() == batch
        if second:  # the map holds a line its end never covered: a worker ended mid-copy
            end = writer.end
            writer.map[end : end + 5] = b"[1, 2"
            assert log.read() == second
        log.clear()
        assert log.read() is None  # not started: no call of the batch was made
        writer.begin()
        assert log.read() == []
    finally:
        log.close()


#: Reads a file its gate does not bind on call 2 (refused; the code carries on), then ends its worker on call 4.
REFUSED_THEN_ENDS = """\
import os

def score(output):
    if output == 2:
        try:
            open(os.path.join(os.path.dirname(__file__), "unbound.txt")).read()
        except PermissionError:
            pass
    if output == 4:
        os._exit(5)
    return 1.0
"""


def test_a_gated_worker_that_refused_code_and_then_ended_answers_the_refusal_for_its_whole_batch(tmp_path):
    """As the batch's own answer would have said had the worker lived (``lanes.hostguard``): no call's value
    stands once unbound code was refused, the ones logged before the refusal included."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "unbound.txt").write_text("not bound\n")
    (tmp_path / "host.py").write_text(REFUSED_THEN_ENDS)
    bound = ((str(tmp_path / "host.py"), fingerprint_of_bytes(REFUSED_THEN_ENDS.encode())),)
    worker = MetricWorker(tmp_path, (str(tmp_path), bound))
    index, _ = worker.load("host.py:score", has_reference=False)
    results = worker.score(index, {"output": list(range(8))}, 8, None)
    assert len(results) == 8
    for result in results:
        assert isinstance(result, Score) and result.status.value == "error", results
        (diagnostic,) = result.diagnostics
        assert diagnostic.code == "host_unbound_code" and "unbound.txt" in diagnostic.message, diagnostic
    (after,) = worker.score(index, {"output": [7]}, 1, None)  # a fresh worker, which has refused nothing
    assert after == 1.0


#: Ends its worker a moment after the first batch, while it waits for the next.
ENDS_WHILE_IDLE = """\
import os, threading

def score(output):
    with open(os.path.join(os.path.dirname(__file__), "calls.txt"), "a") as calls:
        calls.write(f"{output} {os.getpid()}\\n")
    if output == 0:
        threading.Timer(0.2, os._exit, (4,)).start()
    return 1.0
"""


def test_a_worker_that_ended_between_batches_loses_no_call_of_the_next(tmp_path):
    """The next batch finds its worker gone before it started a call: every call goes to a fresh worker, made once,
    and none is marked lost (no call was in flight)."""
    import time

    (tmp_path / "host.py").write_text(ENDS_WHILE_IDLE)
    worker = MetricWorker(tmp_path)
    index, _ = worker.load("host.py:score", has_reference=False)
    assert worker.score(index, {"output": [0, 1]}, 2, None) == [1.0, 1.0]
    ended = worker._process.worker
    assert ended is not None
    ended.process.join(10)  # it ended on its own, idle
    assert ended.process.exitcode == 4
    time.sleep(0.1)
    assert worker.score(index, {"output": [2, 3, 4]}, 3, None) == [1.0, 1.0, 1.0]
    calls = _calls(tmp_path)
    assert [int(number) for number, _ in calls] == [0, 1, 2, 3, 4], calls
    assert calls[2][1] != calls[0][1], calls


#: Ends its worker on an output "die" (as ``os._exit`` or a signal), else answers the output's length.
DIES_ON_DEMAND = """\
import os, signal

def score(output):
    with open(os.path.join(os.path.dirname(__file__), "calls.txt"), "a") as calls:
        calls.write(f"{output} {os.getpid()}\\n")
    if output.startswith("die"):
        if output.endswith("kill"):
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(7)
    return float(len(output))
"""


@pytest.fixture(scope="module")
def dying_worker(tmp_path_factory: pytest.TempPathFactory) -> tuple[MetricWorker, int, Path]:
    folder = tmp_path_factory.mktemp("dies")
    (folder / "host.py").write_text(DIES_ON_DEMAND)
    worker = MetricWorker(folder)
    index, _ = worker.load("host.py:score", has_reference=False)
    return worker, index, folder


@settings(max_examples=12, deadline=None)
@given(
    outputs=st.lists(st.sampled_from(["a", "bb", "ccc", "die", "die-kill"]), min_size=1, max_size=12),
)
def test_whatever_calls_of_a_batch_end_their_worker_every_other_call_is_answered_once(dying_worker, outputs):
    """Any batch, any calls in it ending their worker (none, one, several, in a row): each of those is its own
    ``host_worker_lost``, every other call its value, and every call of the batch is made exactly once, in order."""
    worker, index, folder = dying_worker
    (folder / "calls.txt").write_text("")
    results = worker.score(index, {"output": outputs}, len(outputs), None)
    assert len(results) == len(outputs)
    for output, result in zip(outputs, results, strict=True):
        if output.startswith("die"):
            assert isinstance(result, Score) and result.diagnostics[0].code == "host_worker_lost", (outputs, results)
            said = "killed by SIGKILL" if output.endswith("kill") else "ended with exit code 7"
            assert result.diagnostics[0].message.endswith(said), result
        else:
            assert result == float(len(output)), (outputs, results)
    assert [output for output, _ in _calls(folder)] == outputs
