"""Task lanes: python callables, commands and chat endpoints; failures become error scores, never 0.0."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pydantic
import pytest

from evalglass.core.outputparse import UnparsedOutput
from evalglass.core.score import Status, Validity
from evalglass.lanes.base import DECLARED_JSON, LaneConfigError
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.ports import LaneFailure, LaneOutcome, LaneOutput, failure_score
from evalglass.lanes.registry import build_lane
from evalglass.lanes.specs import ChatLaneSpec
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import KEY_ENV, fast_retrier, parse_task_spec, run


def _produce(spec_data: dict[str, Any], base_dir: Path, examples: list[tuple[str, dict[str, Any]]], **kw: Any):  # type: ignore[no-untyped-def]
    spec = parse_task_spec(spec_data)

    async def go() -> list[LaneOutcome]:
        lane = build_lane(spec, base_dir=base_dir, executor=AsyncioExecutor(8), **kw)
        try:
            jobs = [(example_id, fields, sample) for example_id, fields in examples for sample in lane.spec.samples()]

            async def one(job: tuple[str, dict[str, Any], int]) -> LaneOutcome:
                return await lane.produce(*job)

            return await lane.executor.run(jobs, one)  # type: ignore[attr-defined,no-any-return]
        finally:
            await lane.aclose()

    return run(go())


def _assert_error_score(outcome: LaneOutcome, code: str) -> LaneFailure:
    assert isinstance(outcome, LaneFailure), outcome
    assert outcome.code == code, outcome
    score = failure_score(outcome)
    assert score.status is Status.ERROR and score.validity is Validity.NOT_MEASURED
    assert score.value is None  # never 0.0
    assert score.diagnostics[0].code == code
    return outcome


# ------------------------------------------------------------------ python
@pytest.fixture
def app(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(
        textwrap.dedent(
            """
            import asyncio, time

            def answer(example):
                return {"echo": example["q"].upper()}

            async def answer_async(example, sample):
                await asyncio.sleep(0.001)
                return f"{example['q']}#{sample}"

            def broken(example):
                raise ValueError("no answer for " + example["q"])

            def slow(example):
                time.sleep(1.0)
                return "late"
            """
        )
    )
    return tmp_path


def test_python_lane_file_function_sync(app: Path) -> None:
    (outcome,) = _produce({"type": "python", "function": "app.py:answer"}, app, [("e1", {"q": "hi"})])
    assert isinstance(outcome, LaneOutput) and outcome.value == {"echo": "HI"} and outcome.sample == 0


def test_python_lane_async_with_epochs_gets_each_sample_index(app: Path) -> None:
    outcomes = _produce({"type": "python", "function": "app.py:answer_async", "epochs": 3}, app, [("e1", {"q": "a"})])
    assert [o.value for o in outcomes if isinstance(o, LaneOutput)] == ["a#0", "a#1", "a#2"]
    assert [o.sample for o in outcomes] == [0, 1, 2]


def test_python_lane_module_reference(app: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (app / "mypkg").mkdir()
    (app / "mypkg" / "__init__.py").write_text("")
    (app / "mypkg" / "solve.py").write_text("def run(example):\n    return example['n'] * 2\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    (outcome,) = _produce({"type": "python", "function": "mypkg.solve:run"}, app, [("e", {"n": 21})])
    assert isinstance(outcome, LaneOutput) and outcome.value == 42


def test_python_lane_exception_becomes_an_error_score(app: Path) -> None:
    (outcome,) = _produce({"type": "python", "function": "app.py:broken"}, app, [("e1", {"q": "hi"})])
    failure = _assert_error_score(outcome, "task_raised")
    assert "ValueError: no answer for hi" in failure.message
    assert failure.detail is not None and "Traceback" in failure.detail


def test_python_lane_timeout(app: Path) -> None:
    (outcome,) = _produce({"type": "python", "function": "app.py:slow", "timeout": 0.1}, app, [("e1", {"q": "x"})])
    _assert_error_score(outcome, "task_timeout")


def test_python_lane_bad_references_fail_at_build_time(app: Path) -> None:
    for reference, match in [
        ("missing.py:f", "not found"),
        ("app.py:nope", "no attribute"),
        ("no_such_module_xyz:f", "cannot import"),
    ]:
        with pytest.raises(LaneConfigError, match=match):
            _produce({"type": "python", "function": reference}, app, [])
    with pytest.raises(pydantic.ValidationError):
        parse_task_spec({"type": "python", "function": "no-colon"})


# ------------------------------------------------------------------ command
SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    example = json.load(sys.stdin)
    mode = example.get("mode", "ok")
    if mode == "fail":
        print("bad things", file=sys.stderr); sys.exit(3)
    if mode == "sleep":
        time.sleep(5)
    if mode == "garbage":
        print("not json {"); sys.exit(0)
    print(json.dumps({"q": example["q"], "id": os.environ["EVALGLASS_EXAMPLE_ID"],
                      "sample": int(os.environ["EVALGLASS_SAMPLE"])}))
    """
)


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    (tmp_path / "tool.py").write_text(SCRIPT)
    return tmp_path


def test_command_lane_json_output_with_example_on_stdin(tool: Path) -> None:
    spec = {"type": "command", "argv": [sys.executable, "tool.py"], "output": "json", "epochs": 2}
    outcomes = _produce(spec, tool, [("ex-1", {"q": "hello"})])
    assert [o.value for o in outcomes if isinstance(o, LaneOutput)] == [
        {"q": "hello", "id": "ex-1", "sample": 0},
        {"q": "hello", "id": "ex-1", "sample": 1},
    ]


def test_command_lane_text_output(tool: Path) -> None:
    spec = {"type": "command", "argv": [sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"]}
    (outcome,) = _produce(spec, tool, [("e", {"q": "x"})])
    assert isinstance(outcome, LaneOutput) and outcome.value == '{"Q":"X"}'


@pytest.mark.parametrize(
    ("mode", "code"),
    [("fail", "task_exit_nonzero"), ("sleep", "task_timeout")],
)
def test_command_lane_failures(tool: Path, mode: str, code: str) -> None:
    spec = {"type": "command", "argv": [sys.executable, "tool.py"], "output": "json", "timeout": 1.0}
    (outcome,) = _produce(spec, tool, [("e", {"q": "x", "mode": mode})])
    failure = _assert_error_score(outcome, code)
    if mode == "fail":
        assert failure.detail == "bad things"


def test_a_command_printing_what_is_not_json_answered_wrong_not_failed(tool: Path) -> None:
    """Printed text that is not JSON is the system's answer (scored as the metrics say), not a lane failure."""
    spec = {"type": "command", "argv": [sys.executable, "tool.py"], "output": "json", "timeout": 1.0}
    (outcome,) = _produce(spec, tool, [("e", {"q": "x", "mode": "garbage"})])
    assert isinstance(outcome, LaneOutput) and type(outcome.value) is UnparsedOutput, outcome
    assert outcome.value.text == "not json {\n" and outcome.value.declared == DECLARED_JSON


def test_command_lane_spawn_failure(tool: Path) -> None:
    (outcome,) = _produce({"type": "command", "argv": ["./definitely-not-here"]}, tool, [("e", {"q": "x"})])
    _assert_error_score(outcome, "task_spawn_failed")


# ------------------------------------------------------------------ chat
def _chat_spec(server: FakeOpenAI, **fields: Any) -> dict[str, Any]:
    return {"type": "chat", "base_url": server.base_url, "model": "m", "api_key_env": "EVALGLASS_TEST_KEY", **fields}


def test_chat_lane_renders_the_template_over_example_fields(server: FakeOpenAI, tmp_path: Path) -> None:
    spec = _chat_spec(
        server,
        system="You answer {{ language }} questions.",
        prompt="Q{{ sample_index }}: {{ question }} (id {{ example_id }}, {{ example.meta.tag }})",
        epochs=2,
        temperature=0.7,
    )
    outcomes = _produce(
        spec, tmp_path, [("e1", {"question": "2+2?", "language": "math", "meta": {"tag": "t"}})], env=KEY_ENV
    )
    assert [o.value for o in outcomes if isinstance(o, LaneOutput)] == [
        "Q0: 2+2? (id e1, t)",
        "Q1: 2+2? (id e1, t)",
    ]
    assert server.requests[0].body["messages"][0] == {"role": "system", "content": "You answer math questions."}
    assert all(isinstance(o, LaneOutput) and o.usage is not None and o.call_id for o in outcomes)


def test_a_missing_template_field_fails_that_example_only(server: FakeOpenAI, tmp_path: Path) -> None:
    spec = _chat_spec(server, prompt="Answer: {{ question }}")
    ok, missing = _produce(spec, tmp_path, [("e1", {"question": "hi"}), ("e2", {"other": 1})], env=KEY_ENV)
    assert isinstance(ok, LaneOutput) and ok.value == "Answer: hi"
    failure = _assert_error_score(missing, "template_field_missing")
    assert "e2" in failure.message and "question" in failure.message
    assert server.request_count == 1  # nothing was sent for the broken example


def test_chat_lane_json_output(server: FakeOpenAI, tmp_path: Path) -> None:
    spec = _chat_spec(server, prompt="{{ payload }}", output="json")
    good, bad = _produce(spec, tmp_path, [("a", {"payload": '{"x": 1}'}), ("b", {"payload": "not json"})], env=KEY_ENV)
    assert isinstance(good, LaneOutput) and good.value == {"x": 1}
    assert isinstance(bad, LaneOutput) and bad.value == UnparsedOutput("not json", bad.value.message, DECLARED_JSON)
    assert bad.value.message and bad.usage is not None and bad.call_id  # an answer: counted, cached


@pytest.mark.parametrize(
    ("step", "code"),
    [
        ("429:0.01", "call_rate_limited"),
        ("500", "call_server_error"),
        ("malformed", "call_malformed_response"),
        ("drop", "call_connection"),
        ("hang", "call_timeout"),
        ("400", "call_invalid_request"),
    ],
)
def test_every_chat_fault_ends_as_an_error_score_and_the_run_goes_on(
    server: FakeOpenAI, tmp_path: Path, step: str, code: str
) -> None:
    spec = _chat_spec(server, prompt="{{ q }}", timeout=0.3, retry={"max_attempts": 2})
    bad, good = _produce(
        spec,
        tmp_path,
        [("bad", {"q": f"x [[behaviour:{step}]]"}), ("good", {"q": "fine"})],
        env=KEY_ENV,
        retrier=fast_retrier(2),
    )
    failure = _assert_error_score(bad, code)
    expected_attempts = 1 if step in {"malformed", "400"} else 2
    assert len(failure.attempts) == expected_attempts
    assert failure_score(failure).evidence == (f"lane_call:{failure.call_id}",)
    assert isinstance(good, LaneOutput) and good.value == "fine"


def test_spec_validation_is_strict() -> None:
    with pytest.raises(pydantic.ValidationError):
        parse_task_spec({"type": "chat", "base_url": "http://x/v1", "model": "m", "prompt": "p", "tempreature": 1})
    with pytest.raises(pydantic.ValidationError, match="exactly one"):
        ChatLaneSpec(type="chat", base_url="http://x/v1", model="m")
    with pytest.raises(pydantic.ValidationError, match="syntax error"):
        parse_task_spec({"type": "chat", "base_url": "http://x/v1", "model": "m", "prompt": "{{ unclosed"})
    with pytest.raises(pydantic.ValidationError):
        parse_task_spec({"type": "shell", "argv": ["x"]})
    spec = parse_task_spec(
        {"type": "chat", "base_url": "http://x/v1", "model": "m", "messages": [{"role": "user", "content": "{{ q }}"}]}
    )
    assert isinstance(spec, ChatLaneSpec) and list(spec.samples()) == [0]
