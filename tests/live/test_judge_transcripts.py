"""An llm_judge on whole trajectories: the transcript rendered by its declared template, cut to its declared budget
with the cut recorded on the score, an unreadable conversation never sent, and calibration against labels."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from evalglass.core.example import Example
from evalglass.core.score import Status, Validity
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.judge import Judge, JudgeResult, calibrate_judge, read_labels
from evalglass.lanes.ports import LaneOutput
from evalglass.lanes.registry import build_lane
from evalglass.lanes.transcript import MARKER, cut
from evalglass.metrics.base import BuildContext
from evalglass.metrics.llm_judge import LlmJudgeSpec, judge_fingerprint
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import KEY_ENV, fast_retrier, parse_task_spec, run

TRAJECTORY = [
    {"role": "user", "content": "Book a table for two"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "function": {"name": "book", "arguments": '{"people": 2}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "confirmed"},
    {"role": "assistant", "content": "Booked for two."},
]


@pytest.fixture
def evals(tmp_path: Path) -> Path:
    (tmp_path / "rubric.md").write_text("Score 5 when the agent booked what was asked.\n")
    return tmp_path


def spec(server: FakeOpenAI, **fields: Any) -> LlmJudgeSpec:
    return LlmJudgeSpec.model_validate(
        {
            "type": "llm_judge",
            "rubric": "rubric.md",
            "scale": {"min": 1, "max": 5},
            "base_url": server.base_url,
            "model": "judge-model",
            "api_key_env": "EVALGLASS_TEST_KEY",
            "transcript": {},
            **fields,
        }
    )


def grade_by_calls(body: dict[str, Any]) -> str:
    """The fake judge gives 5 when the transcript shows a booking for two, else 1."""
    prompt = body["messages"][-1]["content"]
    return orjson.dumps({"score": 5 if '-> book({"people":2})' in prompt else 1}).decode()


def judge_all(judge_spec: LlmJudgeSpec, evals: Path, examples: list[Example]) -> list[JudgeResult]:
    async def go() -> list[JudgeResult]:
        executor = AsyncioExecutor(4)
        judge = Judge(
            judge_spec.judge_definition(BuildContext(evals)), executor=executor, env=KEY_ENV, retrier=fast_retrier(2)
        )
        try:
            return await executor.run(examples, judge.judge)
        finally:
            await judge.aclose()

    return run(go())


def test_the_judge_reads_the_whole_transcript_by_its_template(evals: Path) -> None:
    wrong = [*TRAJECTORY[:1], {"role": "assistant", "content": "Booked."}]
    with FakeOpenAI(reply=grade_by_calls) as server:
        right, skipped = judge_all(spec(server), evals, [Example("a", 1, {}, TRAJECTORY), Example("b", 2, {}, wrong)])
        prompt = server.requests[0].body["messages"][-1]["content"]
    assert (right.score.value, skipped.score.value) == (5.0, 1.0)
    assert '[user]\nBook a table for two\n[assistant]\n-> book({"people":2})\n[tool]\n<- confirmed\n' in prompt
    assert "# Transcript to grade" in prompt and not right.score.diagnostics  # shown whole: nothing to note


def transcript_of(body: dict[str, Any]) -> str:
    prompt: str = body["messages"][-1]["content"]
    return prompt.split("# Transcript to grade\n", 1)[1].split("\n\nAnswer with", 1)[0]


def test_the_judge_reads_an_agent_lanes_trajectory_as_it_happened(evals: Path) -> None:
    """A real trajectory (the agent lane against scripted tool calls): every call, result and error in the order
    made, a tool that raised and arguments that are not JSON shown as the model was told them."""
    (evals / "tools.py").write_text(
        textwrap.dedent(
            """
            def weather(city: str) -> dict:
                if city == "Atlantis":
                    raise ValueError("no such city")
                return {"city": city, "celsius": 21}
            """
        )
    )
    turns = {
        "Weather in Paris?": [
            {
                "tool_calls": [
                    {"name": "weather", "arguments": {"city": "Paris"}},
                    {"name": "weather", "arguments": {"city": "Atlantis"}},
                ]
            },
            {"content": "Retrying.", "tool_calls": [{"name": "weather", "arguments": "{city"}]},
            "It is 21 degrees.",
        ]
    }
    lane_spec = {
        "type": "agent",
        "model": "agent-model",
        "api_key_env": None,
        "prompt": "{{ q }}",
        "tools": {"weather": "tools.py:weather"},
    }
    with FakeOpenAI(turns=turns) as agent_server:

        async def trajectory() -> Any:
            lane = build_lane(
                parse_task_spec({**lane_spec, "base_url": agent_server.base_url}),
                base_dir=evals,
                executor=AsyncioExecutor(2),
                env={},
            )
            try:
                return await lane.produce("a", {"q": "Weather in Paris?"}, 0)
            finally:
                await lane.aclose()

        outcome = run(trajectory())
    assert isinstance(outcome, LaneOutput), outcome
    with FakeOpenAI(reply=grade_by_calls) as server:
        judge_all(spec(server), evals, [Example("a", 1, {"q": "Weather in Paris?"}, outcome.value)])
        shown = transcript_of(server.requests[0].body)
    assert shown == (
        "[user]\nWeather in Paris?\n"
        '[assistant]\n-> weather({"city":"Paris"})\n-> weather({"city":"Atlantis"})\n'
        '[tool]\n<- {"city":"Paris","celsius":21}\n'
        "[tool]\n<- error: ValueError: no such city\n"
        "[assistant]\nRetrying.\n-> weather({city)\n"
        "[tool]\n<- error: the arguments are not JSON: {city\n"
        "[assistant]\nIt is 21 degrees.\n"
    )


def test_a_traces_transcript_has_its_input_its_tool_calls_and_its_last_answer(evals: Path) -> None:
    """A trace record's output holds the last model call's messages and every tool call: the judge is shown the
    declared input messages, then the calls with their results or errors, then the answer."""
    record = {
        "input": {"messages": [{"role": "user", "parts": [{"type": "text", "content": "Where is order A-17?"}]}]},
        "output": {
            "text": "Order A-17 has shipped.",
            "messages": [{"role": "assistant", "parts": [{"type": "text", "content": "Order A-17 has shipped."}]}],
            "tool_calls": [
                {"id": "call_1", "name": "lookup_order", "arguments": {"order": "A-17"}, "error_type": "TimeoutError"},
                {
                    "id": "call_2",
                    "name": "lookup_order",
                    "arguments": {"order": "A-17"},
                    "result": {"status": "shipped"},
                },
            ],
        },
    }
    with FakeOpenAI(reply=grade_by_calls) as server:
        judge_spec = spec(server, transcript={"input": "input.messages"})
        judge_all(judge_spec, evals, [Example("a", 1, record, record["output"])])
        shown = transcript_of(server.requests[0].body)
    assert shown == (
        "[user]\nWhere is order A-17?\n"
        '[assistant]\n-> lookup_order({"order":"A-17"})\n[tool]\n<- error: TimeoutError\n'
        '[assistant]\n-> lookup_order({"order":"A-17"})\n[tool]\n<- {"status":"shipped"}\n'
        "[assistant]\nOrder A-17 has shipped.\n"
    )


def test_a_transcript_over_its_budget_is_cut_and_the_score_says_so(evals: Path) -> None:
    chatty = [*TRAJECTORY, *[{"role": "assistant", "content": "more words " * 40}] * 10]
    with FakeOpenAI(reply=grade_by_calls) as server:
        (result,) = judge_all(spec(server, transcript={"max_chars": 500}), evals, [Example("a", 1, {}, chatty)])
        prompt = server.requests[0].body["messages"][-1]["content"]
    shown = prompt.split("# Transcript to grade\n", 1)[1].split("\n\nAnswer with", 1)[0]
    assert len(shown) <= 500 and re.search(r"\[\.\.\. [\d,]+ characters cut \.\.\.\]", shown)
    assert shown.startswith("[user]\nBook a table")  # the beginning kept (and the end)
    assert result.score.included and result.score.value == 5.0
    (note,) = result.score.diagnostics
    assert note.code == "transcript_cut" and "of the transcript's" in note.message


def test_an_unreadable_conversation_is_never_sent_and_scores_the_worst_grade(evals: Path) -> None:
    with FakeOpenAI(reply=grade_by_calls) as server:
        (result,) = judge_all(spec(server), evals, [Example("a", 1, {}, 42)])
        assert server.request_count == 0
    assert (result.score.status, result.score.validity, result.score.value) == (Status.SCORED, Validity.VALID, 1.0)
    assert result.score.diagnostics[0].code == "trajectory_unreadable"


def test_the_cut_keeps_both_ends_within_the_budget() -> None:
    for length in (201, 1000, 123_456):
        text = "".join(chr(97 + i % 26) for i in range(length))
        shown, made = cut(text, 200)
        assert len(shown) <= 200 and made is not None and made.length == length
        head, tail = shown.split(MARKER.format(count=length - made.kept))
        assert text.startswith(head) and text.endswith(tail) and len(head) + len(tail) == made.kept
    assert cut("short", 200) == ("short", None)


def test_what_the_judge_is_shown_is_part_of_its_fingerprint_and_a_plain_judge_keeps_its_own(evals: Path) -> None:
    with FakeOpenAI() as server:
        plain = spec(server, transcript=None)
        shown = spec(server)
        budget = spec(server, transcript={"max_chars": 1000})
    rubric = (evals / "rubric.md").read_bytes()
    prints = {judge_fingerprint(judge, rubric) for judge in (plain, shown, budget)}
    assert len(prints) == 3
    assert "transcript" not in plain.fingerprint_payload()  # approvals of judges without transcripts stay valid
    assert shown.prompt != plain.prompt  # the transcript prompt, unless one is declared


def test_a_transcript_judge_calibrates_against_labels_like_any_judge(evals: Path) -> None:
    lines = [
        {"id": "1", "output": TRAJECTORY, "label": 5},
        {"id": "2", "output": [*TRAJECTORY[:1], {"role": "assistant", "content": "Done."}], "label": 1},
        {"id": "3", "output": TRAJECTORY, "label": 4},
    ]
    labels = evals / "labels.jsonl"
    labels.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    with FakeOpenAI(reply=grade_by_calls) as server:
        judge_spec = spec(server)

        async def go() -> Any:
            executor = AsyncioExecutor(4)
            judge = Judge(judge_spec.judge_definition(BuildContext(evals)), executor=executor, env=KEY_ENV)
            try:
                calibrated = await calibrate_judge(
                    judge.judge,
                    read_labels(labels, judge_spec.scale),
                    scale=judge_spec.scale,
                    fingerprint=judge.fingerprint,
                    executor=executor,
                )
                return calibrated, judge.fingerprint
            finally:
                await judge.aclose()

        result, fingerprint = run(go())
    report = result.calibration
    assert report.n == 3 and report.agreed == 2 and report.judge_fingerprint == fingerprint


def test_a_declared_input_the_record_lacks_or_cannot_read_is_never_the_answer_s_fault(evals: Path) -> None:
    """The input messages are what the system was given: without them the transcript is not the declared one, so
    nothing is measured (and nothing sent), never a worst grade."""
    records = [{"input": {}}, {"input": {"messages": 7}}]
    with FakeOpenAI(reply=grade_by_calls) as server:
        missing, unreadable = judge_all(
            spec(server, transcript={"input": "input.messages"}),
            evals,
            [Example(str(n), n, record, TRAJECTORY) for n, record in enumerate(records)],
        )
        assert server.request_count == 0
    assert (missing.score.status, missing.score.diagnostics[0].code) == (
        Status.NON_EVALUABLE,
        "transcript_input_missing",
    )
    assert (unreadable.score.status, unreadable.score.diagnostics[0].code) == (
        Status.ERROR,
        "transcript_input_unreadable",
    )
