"""Each lane type through `evalglass run`; faults never become 0.0; retries and limits hold."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, evalglass, numbers_in, questions


def test_chat_lane_and_judge_produce_scores_that_verify(project: LiveProject, server: FakeOpenAI) -> None:
    rows = [{"id": "a", "question": "grade=5 all good"}, {"id": "b", "question": "grade=2 meh"}]
    project.write(rows, metrics={"echoed": {"type": "contains", "reference": "question"}, "quality": project.judge()})
    result = project.run()
    assert result.code == 0, result.err
    card = json.loads(result.out)
    by_name = {metric["name"]: metric for metric in card["metrics"]}
    assert by_name["echoed"]["estimate"]["point"] == 1.0  # the echo server returned each question
    assert by_name["quality"]["estimate"]["point"] == 3.5  # judge answered 5 and 2
    scores = project.scores()
    assert [row["id"] for row in scores] == ["a", "b"]
    assert scores[0]["scores"]["quality"]["value"] == 5.0
    assert scores[0]["scores"]["quality"]["evidence"][0].startswith("judge_call:")
    assert server.request_count == 4  # 2 lane calls + 2 judge calls
    outputs = [json.loads(line) for line in (project.last_run() / "outputs.jsonl").read_text().splitlines()]
    assert outputs[0] == {
        "id": "a",
        "line": 1,
        "samples": [{"sample": 0, "output": "grade=5 all good", "attempts": 1}],
        "judges": {"quality": [{"label": 5, "rationale": "graded 5", "attempts": 1}]},
    }
    verified = evalglass("verify", str(project.last_run()), cwd=project.root)
    assert verified.code == 0, verified.out + verified.err


def test_python_lane(project: LiveProject) -> None:
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text(
        textwrap.dedent(
            """
            def answer(example):
                if example["question"].endswith("3"):
                    raise RuntimeError("cannot answer three")
                return example["question"].upper()
            """
        )
    )
    project.write(
        questions(5),
        task={"type": "python", "function": "app.py:answer"},
        metrics={"shout": {"type": "regex", "pattern": "^QUESTION \\d$"}},
    )
    result = project.run()
    assert result.code == 0, result.err
    scores = {row["id"]: row["scores"]["shout"] for row in project.scores()}
    assert scores["q000"] == 1.0
    assert scores["q003"]["status"] == "error"
    assert scores["q003"]["diagnostics"][0]["code"] == "task_raised"
    assert "cannot answer three" in scores["q003"]["diagnostics"][0]["message"]
    assert not (project.root / ".evalglass-cache.sqlite").exists()  # nothing caches: no cache file is made


def test_a_python_lane_with_cache_on_makes_the_cache(project: LiveProject) -> None:
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text("def answer(example):\n    return example['question']\n")
    project.write(questions(2), task={"type": "python", "function": "app.py:answer", "cache": True})
    assert project.run().code == 0
    assert (project.root / ".evalglass-cache.sqlite").exists()


def test_a_cached_python_lane_answers_again_when_a_module_it_imports_changes(project: LiveProject) -> None:
    """The cache keys the function by its file and the project's modules it imports (the evals folder is on
    ``sys.path`` for lanes): a changed helper is a miss, never the old code's answer replayed."""
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text("from helper import tone\n\n\ndef answer(example):\n    return tone()\n")
    (project.root / "helper.py").write_text("def tone():\n    return 'old'\n")
    project.write(
        questions(2),
        task={"type": "python", "function": "app.py:answer", "cache": True},
        metrics={"new": {"type": "regex", "pattern": "^new$"}},
    )
    assert project.run().code == 0
    assert [row["scores"]["new"] for row in project.scores()] == [0.0, 0.0]
    (project.root / "helper.py").write_text("def tone():\n    return 'new'\n")
    assert project.run().code == 0
    assert [row["scores"]["new"] for row in project.scores()] == [1.0, 1.0]


def test_command_lane(project: LiveProject, tmp_path: Path) -> None:
    project.root.mkdir(parents=True)
    (project.root / "tool.py").write_text(
        textwrap.dedent(
            """
            import json, sys
            example = json.load(sys.stdin)
            if example["question"].endswith("1"):
                print("broken", file=sys.stderr)
                sys.exit(3)
            print(json.dumps({"answer": example["question"][::-1]}))
            """
        )
    )
    import sys

    project.write(
        questions(3),
        task={"type": "command", "argv": [sys.executable, "tool.py"], "output": "json"},
        metrics={"has_answer": {"type": "field_present", "fields": ["answer"]}},
    )
    result = project.run()
    assert result.code == 0, result.err
    scores = {row["id"]: row["scores"]["has_answer"] for row in project.scores()}
    assert scores["q000"] == 1.0 and scores["q002"] == 1.0
    assert scores["q001"]["status"] == "error"
    assert scores["q001"]["diagnostics"][0]["code"] == "task_exit_nonzero"


def test_epochs_store_a_list_per_metric_and_reduce(project: LiveProject, server: FakeOpenAI) -> None:
    rows = [{"id": "a", "question": "question a"}, {"id": "b", "question": "question b"}]
    prompt = "{% if sample_index == 1 and example_id == 'a' %}[[behaviour:500]] {% endif %}{{ question }}"
    project.write(
        rows,
        task=project.lane(epochs=3, prompt=prompt),
        metrics={"echoed": {"type": "contains", "reference": "question", "reducer": "mean"}},
    )
    result = project.run()
    assert result.code == 0, result.err
    scores = {row["id"]: row["scores"]["echoed"] for row in project.scores()}
    assert scores["b"] == [1.0, 1.0, 1.0]  # three samples, each scored
    a = scores["a"]
    assert a[0] == 1.0 and a[2] == 1.0  # in sample order, whatever the completion order
    assert a[1]["status"] == "error" and a[1]["diagnostics"][0]["code"] == "call_server_error"
    assert server.request_count == 6 + 2  # sample 1 of 'a' took 3 attempts
    card = json.loads(result.out)
    estimate = next(m for m in card["metrics"] if m["name"] == "echoed")["estimate"]
    assert estimate["samples"] == 6 and estimate["reducer"] == "mean"
    verified = evalglass("verify", str(project.last_run()), cwd=project.root)
    assert verified.code == 0, verified.out + verified.err


FAULTS = {
    "rate_limited": ("[[behaviour:429]] q", "call_rate_limited"),
    "server_error": ("[[behaviour:500]] q", "call_server_error"),
    "malformed": ("[[behaviour:malformed]] q", "call_malformed_response"),
    "dropped": ("[[behaviour:drop]] q", "call_connection"),
    "timeout": ("[[behaviour:hang]] q", "call_timeout"),
    "bad_request": ("[[behaviour:400]] q", "call_invalid_request"),
}


def test_no_fault_becomes_zero(project: LiveProject, server: FakeOpenAI) -> None:
    rows = [{"id": name, "question": question} for name, (question, _) in FAULTS.items()]
    rows.append({"id": "healthy", "question": "grade=3 fine"})
    project.write(
        rows,
        task=project.lane(timeout=0.5),
        metrics={"echoed": {"type": "contains", "reference": "question"}, "quality": project.judge(timeout=0.5)},
        gates={"g": {"metric": "echoed"}},
    )
    result = project.run()
    assert result.code == 0, result.err
    scores = {row["id"]: row["scores"] for row in project.scores()}
    for name, (_, code) in FAULTS.items():
        for metric in ("echoed", "quality"):
            score = scores[name][metric]
            assert score["status"] == "error", (name, metric, score)
            assert "value" not in score, (name, score)  # never 0.0
            assert score["diagnostics"][0]["code"] == code, (name, score)
    assert scores["healthy"]["echoed"] == 1.0 and scores["healthy"]["quality"]["value"] == 3.0
    outputs = {
        row["id"]: row for row in map(json.loads, (project.last_run() / "outputs.jsonl").read_text().splitlines())
    }
    assert outputs["server_error"]["samples"] == [
        {
            "sample": 0,
            "error": {
                "code": "call_server_error",
                "message": scores["server_error"]["echoed"]["diagnostics"][0]["message"].removeprefix(
                    "the task lane produced no output: "
                ),
            },
            "attempts": 3,
        }
    ]
    all_numbers = [n for row in scores.values() for score in row.values() for n in numbers_in(score)]
    assert all_numbers == [1.0, 3.0]
    prompts = [request.last_user_message for request in server.requests]
    assert prompts.count("[[behaviour:500]] q") == 3  # max_attempts
    assert prompts.count("[[behaviour:429]] q") == 3
    assert prompts.count("[[behaviour:400]] q") == 1  # permanent: not retried
    assert prompts.count("[[behaviour:malformed]] q") == 1


def test_judge_faults_are_errors_not_zero(project: LiveProject) -> None:
    rows = [{"id": "junk", "question": "grade=junk"}, {"id": "off", "question": "grade=9"}]
    project.write(rows, metrics={"quality": project.judge()})
    assert project.run().code == 0
    scores = {row["id"]: row["scores"]["quality"] for row in project.scores()}
    assert scores["junk"]["status"] == "error" and scores["junk"]["diagnostics"][0]["code"] == "judge_unparseable"
    assert "value" not in scores["junk"]
    assert scores["off"]["status"] == "scored" and scores["off"]["validity"] == "invalid"


def test_retry_then_success_is_scored(project: LiveProject, server: FakeOpenAI) -> None:
    project.write(
        [{"id": "a", "question": "[[behaviour:500,429:0,ok]] q"}], metrics={"q": {"type": "regex", "pattern": "^q$"}}
    )
    assert project.run().code == 0
    assert project.scores()[0]["scores"]["q"] == 1.0
    assert server.request_count == 3


def test_concurrency_limits_hold(project: LiveProject, server: FakeOpenAI) -> None:
    server.latency = 0.02
    project.write(questions(40), concurrency={"max_in_flight": 3})
    assert project.run().code == 0
    assert server.request_count == 40
    assert 1 < server.max_in_flight <= 3

    server.reset()
    project.write(questions(40, "other"), task=project.lane(concurrency=2), concurrency={"max_in_flight": 16})
    assert project.run().code == 0
    assert 1 < server.max_in_flight <= 2


def test_endpoint_override_in_config_wins(project: LiveProject, server: FakeOpenAI) -> None:
    server.latency = 0.02
    project.write(
        questions(30),
        task=project.lane(concurrency=10),
        concurrency={"max_in_flight": 16, "endpoints": {project.base_url + "/": {"max_in_flight": 2}}},
    )
    assert project.run().code == 0
    assert 1 < server.max_in_flight <= 2


def test_config_errors_are_one_line(project: LiveProject) -> None:
    project.write(questions(1), task=project.lane(prompt="{{ question "))
    result = project.run()
    assert result.code == 2
    assert "Jinja2 syntax error" in result.err and "Traceback" not in result.err
    project.write(questions(1), concurrency={"max_inflight": 3})
    result = project.run()
    assert result.code == 2 and "max_inflight" in result.err
    project.write(
        questions(1),
        metrics={
            "q": {
                "type": "llm_judge",
                "rubric": "missing.md",
                "scale": {"min": 1, "max": 5},
                "base_url": project.base_url,
                "model": "m",
            }
        },
    )
    result = project.run()
    assert result.code == 2 and "missing.md" in result.err and "Traceback" not in result.err


def test_attempts_of_retried_calls_are_recorded_per_call_and_totalled_in_the_scorecard(
    project: LiveProject, server: FakeOpenAI
) -> None:
    rows = [
        {"id": "retried", "question": "[[behaviour:500,ok]] grade=4 after a retry"},
        {"id": "failed", "question": "[[behaviour:500]] never"},
        {"id": "plain", "question": "grade=5 at once"},
    ]
    project.write(rows, metrics={"echoed": {"type": "contains", "reference": "question"}, "quality": project.judge()})
    first = project.run("--out", "first")
    assert first.code == 0, first.err
    outputs = [json.loads(line) for line in (project.root / "first" / "outputs.jsonl").read_text().splitlines()]
    assert outputs[0]["samples"][0]["attempts"] == 2
    assert (
        outputs[1]["samples"][0]["attempts"] == 3 and outputs[1]["samples"][0]["error"]["code"] == "call_server_error"
    )
    assert outputs[2]["samples"][0]["attempts"] == 1
    # The judge's prompt quotes the question, directive included: its first attempt fails too.
    assert [row["judges"]["quality"][0]["attempts"] for row in (outputs[0], outputs[2])] == [2, 1]
    card = json.loads(first.out)
    # lane: 2 + 3 + 1 attempts for 3 calls; judges: 2 + 1 for 2 calls (the failed example has no output to judge)
    assert card["calls"] == {"calls": 5, "attempts": 9, "retries": 4}
    assert "evalglass: 5 calls, 4 retries" in first.err  # printed although --no-progress
    # A second run replays the calls from the cache: the same attempts recorded, the same totals, byte for byte.
    second = project.run("--out", "second")
    assert second.code == 0, second.err
    assert json.loads(second.out)["calls"] == card["calls"]
    assert (project.root / "second" / "outputs.jsonl").read_bytes() == (
        project.root / "first" / "outputs.jsonl"
    ).read_bytes()
    verified = evalglass("verify", "first", cwd=project.root)
    assert verified.code == 0, verified.out + verified.err


def test_a_lane_and_a_metric_in_one_file_share_no_state(project: LiveProject) -> None:
    """The lane's function runs in worker processes (lanes/hostworker.py), never beside the metric: what it keeps in
    its module never reaches the metric's copy (whose `SEEN` stays empty: every score 0.0). One copy shared would be
    a way for the system under test to change what measures it."""
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text(
        textwrap.dedent(
            """
            SEEN = set()

            def answer(example):
                SEEN.add(example["question"])
                return example["question"]

            def produced_here(output):
                return 1.0 if output in SEEN else 0.0
            """
        )
    )
    project.write(
        questions(3),
        task={"type": "python", "function": "app.py:answer"},
        metrics={"same_module": {"type": "python", "function": "app.py:produced_here"}},
    )
    result = project.run()
    assert result.code == 0, result.err
    assert [row["scores"]["same_module"] for row in project.scores()] == [0.0, 0.0, 0.0]


def test_a_command_whose_detached_child_keeps_stdout_open_ends_quietly(project: LiveProject, tmp_path: Path) -> None:
    """The command prints its answer and exits while a child it started in a session of its own (out of reach of
    the lane's process-group kill) holds stdout open for a minute: the answer counts, the lane does not wait for
    that child, and nothing is printed at exit (no transport left open past the event loop)."""
    pids = tmp_path / "detached.pids"
    project.root.mkdir(parents=True)
    (project.root / "tool.py").write_text(
        textwrap.dedent(
            f"""
            import json, subprocess, sys
            question = json.load(sys.stdin)["question"]
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
            with open({str(pids)!r}, "a") as pids:
                pids.write(f"{{child.pid}}\\n")
            print(question)
            """
        )
    )
    project.write(questions(3), task={"type": "command", "argv": [sys.executable, "tool.py"], "timeout": 30})
    try:
        started = time.monotonic()
        result = project.run()
        elapsed = time.monotonic() - started
    finally:
        for pid in pids.read_text().split() if pids.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    assert result.code == 0, result.err
    assert [line for line in result.err.splitlines() if not line.startswith("evalglass: 3 calls")] == []
    assert {row["id"]: row["scores"]["echoed"] for row in project.scores()} == {"q000": 1.0, "q001": 1.0, "q002": 1.0}
    assert elapsed < 30, elapsed  # far from the child's minute
