"""Host code and lanes never take the run down: what one example's code does is that example's outcome.

Through the real CLI: unserialisable outputs, ``sys.exit`` and ``KeyboardInterrupt`` raised by host code, hung
sync calls next to healthy ones, a command that leaves a background child holding its stdout, SIGTERM, and a
double Ctrl-C.
"""

from __future__ import annotations

import json
import signal
import textwrap

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, kill, questions, start, wait_until

UNSERIALISABLE = """
    class Thing:
        pass

    def answer(example):
        kind = example["kind"]
        if kind == "int_keys":
            return {1: "a"}
        if kind == "huge":
            return 2 ** 70
        if kind == "cycle":
            loop = [1]
            loop.append(loop)
            return loop
        if kind == "set":
            return {"a", "b"}
        if kind == "object":
            return Thing()
        if kind == "struct":
            return {"fine": [1, 2.5, None, True, "x"]}
        return kind
"""


def test_an_output_that_is_not_json_is_that_examples_wrong_answer_and_outputs_are_byte_identical(
    project: LiveProject,
) -> None:
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text(textwrap.dedent(UNSERIALISABLE))
    kinds = ["int_keys", "huge", "cycle", "set", "object", "struct", "fine"]
    project.write(
        [{"id": kind, "kind": kind} for kind in kinds],
        task={"type": "python", "function": "app.py:answer"},
        metrics={"present": {"type": "regex", "pattern": "."}},
    )
    first = project.run("--out", "first")
    second = project.run("--out", "second")
    assert first.code == 0 and second.code == 0, first.err
    scores = {row["id"]: row["scores"]["present"] for row in project.scores(project.root / "first")}
    for kind in kinds[:-2]:  # the system's answer, not JSON: its wrong answer, measured (no longer an error)
        assert (scores[kind]["status"], scores[kind]["value"]) == ("scored", 0.0), kind
        assert scores[kind]["diagnostics"][0]["code"] == "output_not_json", kind
    assert scores["struct"]["diagnostics"][0]["code"] == "wrong_type"  # a JSON object: measured (regex wants text)
    assert scores["fine"] == 1.0
    outputs = (project.root / "first" / "outputs.jsonl").read_bytes()
    assert outputs == (project.root / "second" / "outputs.jsonl").read_bytes()
    assert b" at 0x" not in outputs  # never a repr with a memory address
    rows = [json.loads(line) for line in outputs.splitlines()]
    assert rows[-2]["samples"][0]["output"] == {"fine": [1, 2.5, None, True, "x"]}
    assert rows[0]["samples"][0]["output"] == "{1: 'a'}" and "Dict key must be str" in rows[0]["samples"][0]["not_json"]
    assert rows[3]["samples"][0]["output"] == "{'a', 'b'}"  # a set's items sorted: the same bytes every run


EXITING = """
    import sys

    def answer(example):
        if example["kind"] == "exit":
            sys.exit(3)
        if example["kind"] == "interrupt":
            raise KeyboardInterrupt
        return example["kind"]

    async def answer_async(example):
        if example["kind"] == "exit":
            sys.exit(3)
        if example["kind"] == "interrupt":
            raise KeyboardInterrupt
        return example["kind"]
"""


def test_sys_exit_and_keyboard_interrupt_in_host_code_are_that_examples_error(project: LiveProject) -> None:
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text(textwrap.dedent(EXITING))
    rows = [{"id": kind, "kind": kind} for kind in ("exit", "fine", "interrupt", "also")]
    for function in ("app.py:answer", "app.py:answer_async"):
        project.write(
            rows,
            task={"type": "python", "function": function},
            metrics={"echoed": {"type": "contains", "reference": "kind"}},
        )
        result = project.run()
        assert result.code == 0, result.err  # a documented code: host code never chooses the exit code
        scores = {row["id"]: row["scores"]["echoed"] for row in project.scores()}
        assert scores["fine"] == 1.0 and scores["also"] == 1.0
        for kind, raised in (("exit", "SystemExit"), ("interrupt", "KeyboardInterrupt")):
            diagnostic = scores[kind]["diagnostics"][0]
            assert diagnostic["code"] == "task_raised" and raised in diagnostic["message"], function
        assert "Task exception was never retrieved" not in result.err
        assert "Traceback" not in result.err


HUNG = """
    import time

    def answer(example):
        if example["id"].startswith("hung"):
            time.sleep(12)
        return example["question"]
"""


def test_hung_sync_calls_do_not_starve_healthy_examples(project: LiveProject) -> None:
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text(textwrap.dedent(HUNG))
    rows = [{"id": "hung-1", "question": "a"}, {"id": "hung-2", "question": "b"}, *questions(10)]
    project.write(
        rows,
        task={"type": "python", "function": "app.py:answer", "timeout": 1, "concurrency": 2},
        metrics={"echoed": {"type": "contains", "reference": "question"}},
    )
    result = project.run()
    assert result.code == 0, result.err
    scores = {row["id"]: row["scores"]["echoed"] for row in project.scores()}
    assert {key for key, value in scores.items() if value == 1.0} == {f"q{i:03d}" for i in range(10)}
    for hung in ("hung-1", "hung-2"):
        assert scores[hung]["diagnostics"][0]["code"] == "task_timeout"


def test_a_command_leaving_a_background_child_answers_when_it_exits(project: LiveProject) -> None:
    # The child keeps stdout open for 60 s; the lane's timeout is 20 s: waiting for the pipe would be task_timeout.
    project.write(
        questions(3),
        task={"type": "command", "argv": ["sh", "-c", "sleep 60 & echo done"], "timeout": 20},
        metrics={"done": {"type": "regex", "pattern": "^done$"}},
    )
    result = project.run()
    assert result.code == 0, result.err
    assert [row["scores"]["done"] for row in project.scores()] == [1.0, 1.0, 1.0]
    assert "Event loop is closed" not in result.err and "Traceback" not in result.err


RESUMABLE = """
    import pathlib, time

    def answer(example):
        if example["question"].endswith(" 1") and not pathlib.Path("resumed.marker").exists():
            pathlib.Path("hung.marker").write_text("started")
            time.sleep(600)
        return example["question"]
"""


def test_sigterm_stops_the_run_like_ctrl_c_and_the_folder_resumes(project: LiveProject) -> None:
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text(textwrap.dedent(RESUMABLE))
    project.write(
        questions(3),
        task={"type": "python", "function": "app.py:answer", "timeout": 1200},
        metrics={"echoed": {"type": "contains", "reference": "question"}},
    )
    proc = start("run", "--no-progress", "--out", "stopped", cwd=project.root)
    wait_until(lambda: (project.root / "hung.marker").exists(), what="the hung call to start")
    code, _out, err = kill(proc, signal.SIGTERM)
    assert code == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "evalglass run --resume" in lines[0], err
    (project.root / "resumed.marker").write_text("go")
    resumed = project.run("--resume", "stopped")
    assert resumed.code == 0, resumed.err
    assert [row["scores"]["echoed"] for row in project.scores(project.root / "stopped")] == [1.0, 1.0, 1.0]


def test_a_double_ctrl_c_leaves_no_unclosed_session_warnings(project: LiveProject, server: FakeOpenAI) -> None:
    project.write([{"id": f"h{i}", "question": f"[[behaviour:hang]] q{i}"} for i in range(4)])
    proc = start("run", "--no-progress", cwd=project.root)
    wait_until(lambda: server.request_count >= 4, what="the calls to hang")
    proc.send_signal(signal.SIGINT)
    code, _out, err = kill(proc, signal.SIGINT)
    assert code == 130, err
    assert "Unclosed" not in err and "Traceback" not in err, err
    assert "evalglass run --resume" in err
