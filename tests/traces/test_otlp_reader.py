"""Traces as a dataset: spans made by the real OpenTelemetry SDK, written by its own OTLP encoders, read back."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.conversation import TraceRecord
from evalglass.core.example import Example
from evalglass.engine.datasets.dataset import BadLine
from evalglass.engine.datasets.traces.otlpdataset import OtlpReader
from evalglass.engine.spec.tracespec import TraceOptions
from evalglass.errors import SetupError
from tests.traces.otel import chat_span, messages, recording, write_json, write_protobuf


def read(path: Path, **options: Any) -> tuple[list[Example], list[BadLine], OtlpReader]:
    reader = OtlpReader(path, options=TraceOptions.model_validate(options))
    items = list(reader)
    return [i for i in items if isinstance(i, Example)], [i for i in items if isinstance(i, BadLine)], reader


def records(path: Path, **options: Any) -> list[dict[str, Any]]:
    examples, bad, _ = read(path, **options)
    assert not bad, bad
    return [dict(example.fields) for example in examples]


def agent_trace(tracer: Any, *, capture: bool = True, fail_tool: bool = False) -> None:
    """invoke_agent → chat (asks for a tool) → execute_tool → chat (answers), as an agent framework records it."""
    with tracer.start_as_current_span(
        "invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai"}
    ):
        first: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-test",
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 10,
            "gen_ai.usage.cache_read.input_tokens": 80,
            "gen_ai.response.finish_reasons": ["tool_calls"],
        }
        call = {"type": "tool_call", "id": "call_1", "name": "lookup_order", "arguments": {"order": "A-17"}}
        if capture:
            first["gen_ai.input.messages"] = messages(("user", "Where is order A-17?"))
            first["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": "You are support."}])
            first["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": [call]}])
            first["gen_ai.tool.definitions"] = json.dumps(
                [{"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}]
            )
        with tracer.start_as_current_span("chat gpt-test", attributes=first):
            pass
        tool: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup_order",
            "gen_ai.tool.call.id": "call_1",
        }
        if capture:
            tool["gen_ai.tool.call.arguments"] = json.dumps({"order": "A-17"})
            if not fail_tool:
                tool["gen_ai.tool.call.result"] = json.dumps({"status": "shipped"})
        if fail_tool:
            tool["error.type"] = "TimeoutError"
        with tracer.start_as_current_span("execute_tool lookup_order", attributes=tool):
            pass
        second: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-test",
            "gen_ai.response.model": "gpt-test-0613",
            "gen_ai.usage.input_tokens": 150,
            "gen_ai.usage.output_tokens": 20,
            "gen_ai.usage.cache_read.input_tokens": 100,
            "gen_ai.response.finish_reasons": ["stop"],
        }
        if capture:
            second["gen_ai.input.messages"] = json.dumps(
                [
                    {"role": "user", "parts": [{"type": "text", "content": "Where is order A-17?"}]},
                    {"role": "assistant", "parts": [call]},
                    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "shipped"}]},
                ]
            )
            second["gen_ai.output.messages"] = messages(("assistant", "Order A-17 has shipped."))
        with tracer.start_as_current_span("chat gpt-test", attributes=second):
            pass


def test_json_lines_and_protobuf_give_the_same_examples(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "What is 2+2?", "4", system="Be brief", cache_read=3)
        chat_span(tracer, None, None)
        chat_span(tracer, "boom?", None, error="timeout")
        agent_trace(tracer)
        spans = finished()
    from_json = records(write_json(spans, tmp_path / "t.jsonl", per_line=2))
    from_protobuf = records(write_protobuf(spans, tmp_path / "t.binpb", per_message=3))
    assert from_json == from_protobuf
    assert len(from_json) == 4
    for record in from_json:
        TraceRecord.model_validate(record)  # the declared shape
        assert record["id"] == f"{record['trace_id']}:{record['span_id']}"
        assert len(record["trace_id"]) == 32 and len(record["span_id"]) == 16


def test_a_simple_chat_span_maps_every_field(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "What is 2+2?", "4", system="Be brief", cache_read=3, output_tokens=7)
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"))
    assert record["input"]["messages"] == [{"role": "user", "parts": [{"type": "text", "content": "What is 2+2?"}]}]
    assert record["input"]["system_instructions"] == [{"type": "text", "content": "Be brief"}]
    assert record["input"]["model"] == "gpt-test"
    output = record["output"]
    assert output["text"] == "4"
    assert output["finish_reasons"] == ["stop"]
    assert output["model"] == "gpt-test-0613"
    assert output["usage"] == {"input_tokens": 12, "output_tokens": 7, "cache_read_input_tokens": 3}
    assert output["latency_ms"] == (spans[0].end_time - spans[0].start_time) / 1e6
    assert output["error_type"] is None
    assert record["provider"] == "openai" and record["operation"] == "chat" and record["convention"] == "gen_ai"
    assert record["not_captured"] == ["input.tool_definitions"]


def test_content_not_captured_is_absent_and_listed_never_empty(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, None, None)
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"))
    assert "messages" not in record["input"] and "system_instructions" not in record["input"]
    assert "text" not in record["output"] and "messages" not in record["output"]
    assert record["not_captured"] == [
        "input.messages",
        "input.system_instructions",
        "input.tool_definitions",
        "output.messages",
        "output.text",
        "output.tool_calls",  # read from the messages: unknown, not none
    ]
    assert "tool_calls" not in record["output"]
    assert '""' not in json.dumps(record)
    # facts that are not content are still there
    assert record["output"]["usage"] == {"input_tokens": 12, "output_tokens": 5}


def test_a_failed_call_has_no_output_and_says_why(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "boom?", None, error="timeout")
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"))
    assert record["output"]["error_type"] == "timeout"
    assert "text" not in record["output"]
    assert "output.text" not in record["not_captured"]  # nothing was produced: not a capture problem


def test_an_agent_trace_is_one_example_with_its_trajectory(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        agent_trace(tracer)
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"))
    root = next(span for span in spans if span.parent is None)
    assert record["span_id"] == format(root.context.span_id, "016x")
    assert record["operation"] == "invoke_agent"
    assert record["input"]["messages"][0]["parts"][0]["content"] == "Where is order A-17?"
    assert record["input"]["system_instructions"] == [{"type": "text", "content": "You are support."}]
    assert record["input"]["tool_definitions"] == [
        {"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}
    ]
    assert record["output"]["text"] == "Order A-17 has shipped."
    (call,) = record["output"]["tool_calls"]
    assert call["name"] == "lookup_order" and call["id"] == "call_1"
    assert call["arguments"] == {"order": "A-17"} and call["result"] == {"status": "shipped"}
    assert record["output"]["usage"] == {"input_tokens": 250, "output_tokens": 30, "cache_read_input_tokens": 180}
    assert record["output"]["finish_reasons"] == ["stop"]
    assert record["output"]["model"] == "gpt-test-0613"
    assert record["output"]["latency_ms"] == (root.end_time - root.start_time) / 1e6
    assert record["not_captured"] == []


def test_an_agent_trace_without_content_lists_the_tool_arguments_as_not_captured(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        agent_trace(tracer, capture=False, fail_tool=True)
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"))
    (call,) = record["output"]["tool_calls"]
    assert "arguments" not in call and "result" not in call and call["error_type"] == "TimeoutError"
    assert "output.tool_calls.arguments" in record["not_captured"]
    assert "output.tool_calls.result" not in record["not_captured"]  # the tool failed: there was no result


def test_one_example_per_inference_span_when_asked(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        agent_trace(tracer)
        spans = finished()
    found = records(write_json(spans, tmp_path / "t.jsonl"), select={"unit": "span"})
    assert [r["operation"] for r in found] == ["chat", "chat"]
    assert [r["output"].get("text") for r in found] == ["", "Order A-17 has shipped."]
    assert found[0]["output"]["tool_calls"] == [
        {"id": "call_1", "name": "lookup_order", "arguments": {"order": "A-17"}}
    ]


def test_filters_on_attributes_and_time(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "a", "A", model="small")
        chat_span(tracer, "b", "B", model="large")
        chat_span(tracer, "c", "C", model="large", extra={"app.tier": "gold"})
        spans = finished()
    path = write_json(spans, tmp_path / "t.jsonl")
    assert [r["output"]["text"] for r in records(path, select={"where": {"gen_ai.request.model": "large"}})] == [
        "B",
        "C",
    ]
    assert [
        r["output"]["text"]
        for r in records(path, select={"where": {"gen_ai.request.model": ["small", "large"], "app.tier": "gold"}})
    ] == ["C"]
    assert [r["output"]["text"] for r in records(path, select={"where": {"service.name": "support-bot"}})] == [
        "A",
        "B",
        "C",
    ]
    from datetime import UTC, datetime

    second = spans[1].start_time
    moment = datetime.fromtimestamp(second // 1000 / 1e6, tz=UTC)  # microseconds, at or before the second span
    after = [r["output"]["text"] for r in records(path, select={"since": moment.isoformat()})]
    before = [r["output"]["text"] for r in records(path, select={"until": moment.isoformat()})]
    assert after == ["B", "C"] and before == ["A"]


def test_metadata_copies_declared_attributes(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "a", "A", extra={"session.id": "s-1"})
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"), mapping={"metadata": ["session.id", "service.name"]})
    assert record["metadata"] == {"session.id": "s-1", "service.name": "support-bot"}


def test_ids_do_not_depend_on_the_order_spans_were_exported_in(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        for _ in range(3):
            agent_trace(tracer)
        spans = list(finished())
    in_order = records(write_json(spans, tmp_path / "a.jsonl"))
    shuffled = spans[:]
    random.Random(7).shuffle(shuffled)
    again = records(write_protobuf(shuffled, tmp_path / "b.binpb"))
    assert sorted(in_order, key=lambda r: r["id"]) == sorted(again, key=lambda r: r["id"])


def test_the_pre_1_36_conventions(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        attributes = {
            "gen_ai.system": "openai",
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-old",
            "gen_ai.usage.prompt_tokens": 9,
            "gen_ai.usage.completion_tokens": 4,
        }
        with tracer.start_as_current_span("chat gpt-old", attributes=attributes) as span:
            span.add_event("gen_ai.system.message", {"content": "Be kind."})
            span.add_event("gen_ai.user.message", {"content": "Hello?"})
            span.add_event(
                "gen_ai.choice",
                {"index": 0, "finish_reason": "stop", "message": json.dumps({"role": "assistant", "content": "Hi!"})},
            )
        indexed = {
            "gen_ai.system": "anthropic",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Ping",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Pong",
            "gen_ai.completion.0.finish_reason": "end_turn",
        }
        with tracer.start_as_current_span("anthropic.chat", attributes=indexed):
            pass
        with tracer.start_as_current_span("chat", attributes={"gen_ai.system": "openai"}) as span:
            span.add_event("gen_ai.user.message", {})  # content capture off: the event has no content
        spans = finished()
    events, flattened, uncaptured = records(write_protobuf(spans, tmp_path / "t.binpb"))
    assert events["convention"] == "gen_ai_pre_1_36" and events["provider"] == "openai"
    assert events["input"]["system_instructions"] == [{"type": "text", "content": "Be kind."}]
    assert events["input"]["messages"] == [{"role": "user", "parts": [{"type": "text", "content": "Hello?"}]}]
    assert events["output"]["text"] == "Hi!" and events["output"]["finish_reasons"] == ["stop"]
    assert events["output"]["usage"] == {"input_tokens": 9, "output_tokens": 4}
    assert flattened["input"]["messages"][0]["parts"] == [{"type": "text", "content": "Ping"}]
    assert flattened["output"]["text"] == "Pong" and flattened["output"]["finish_reasons"] == ["end_turn"]
    assert "input.messages" in uncaptured["not_captured"]


def test_openinference_attributes(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        with tracer.start_as_current_span(
            "agent", attributes={"openinference.span.kind": "CHAIN", "input.value": "Where is my order?"}
        ) as chain:
            llm = {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                "llm.provider": "openai",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "Be helpful.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": "Where is my order?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "t1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "track",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"id": 7}',
                "llm.token_count.prompt": 30,
                "llm.token_count.completion": 6,
                "llm.token_count.prompt_details.cache_read": 20,
                "llm.tools.0.tool.json_schema": json.dumps(
                    {"type": "function", "function": {"name": "track", "parameters": {"type": "object"}}}
                ),
            }
            with tracer.start_as_current_span("ChatCompletion", attributes=llm):
                pass
            tool = {
                "openinference.span.kind": "TOOL",
                "tool.name": "track",
                "input.value": '{"id": 7}',
                "output.value": "in transit",
            }
            with tracer.start_as_current_span("track", attributes=tool):
                pass
            chain.set_attribute("output.value", "It is in transit.")
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"))
    assert record["convention"] == "openinference" and record["operation"] == "chain"
    assert record["input"]["messages"] == [
        {"role": "user", "parts": [{"type": "text", "content": "Where is my order?"}]}
    ]
    assert record["output"]["text"] == "It is in transit."
    assert record["output"]["usage"] == {"input_tokens": 30, "output_tokens": 6, "cache_read_input_tokens": 20}
    assert record["output"]["tool_calls"][0]["arguments"] == {"id": 7}
    assert record["output"]["tool_calls"][0]["result"] == "in transit"
    assert record["input"]["tool_definitions"] == [
        {"type": "function", "name": "track", "parameters": {"type": "object"}}
    ]
    (llm_record,) = records(write_json(spans, tmp_path / "u.jsonl"), select={"unit": "span"})
    assert llm_record["input"]["system_instructions"] == [{"type": "text", "content": "Be helpful."}]
    assert llm_record["output"]["tool_calls"] == [{"id": "t1", "name": "track", "arguments": {"id": 7}}]
    assert llm_record["output"]["model"] == "gpt-4o"
    only_genai = records(write_json(spans, tmp_path / "v.jsonl"), mapping={"conventions": ["gen_ai"]})
    assert only_genai == []


texts = st.text(min_size=0, max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    calls=st.lists(
        st.tuples(st.one_of(st.none(), texts), st.one_of(st.none(), texts), st.integers(0, 10**12)),
        min_size=1,
        max_size=6,
    ),
    per=st.integers(1, 4),
)
def test_what_was_captured_comes_back_exactly_and_the_rest_is_listed(
    tmp_path_factory: pytest.TempPathFactory, calls: list[tuple[str | None, str | None, int]], per: int
) -> None:
    folder = tmp_path_factory.mktemp("prop")
    with recording() as (tracer, finished):
        for question, answer, tokens in calls:
            chat_span(tracer, question, answer, input_tokens=tokens)
        spans = finished()
    from_json = records(write_json(spans, folder / "t.jsonl", per_line=per))
    from_protobuf = records(write_protobuf(spans, folder / "t.binpb", per_message=per))
    assert from_json == from_protobuf
    for (question, answer, tokens), record in zip(calls, from_json, strict=True):
        TraceRecord.model_validate(record)
        assert record["output"]["usage"]["input_tokens"] == tokens
        if question is None:
            assert "messages" not in record["input"] and "input.messages" in record["not_captured"]
        else:
            assert record["input"]["messages"][0]["parts"][0]["content"] == question
        if answer is None:
            assert "text" not in record["output"] and "output.text" in record["not_captured"]
        else:
            assert record["output"]["text"] == answer and "output.text" not in record["not_captured"]


# -- bad input --------------------------------------------------------------------------------------------------------


def test_a_span_without_a_trace_id_is_a_malformed_example_at_its_line(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "a", "A")
        chat_span(tracer, "b", "B")
        spans = finished()
    path = write_json(spans, tmp_path / "t.jsonl")
    lines = path.read_text().splitlines()
    broken = json.loads(lines[1])
    broken["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = ""
    path.write_text("\n".join([lines[0], json.dumps(broken)]) + "\n")
    examples, bad, reader = read(path)
    assert [e.fields["output"]["text"] for e in examples] == ["A"]
    (line,) = bad
    assert line.code == "malformed_span" and line.line == 2
    assert line.message == f"{path}:2: span 'chat gpt-test': has no trace id (traceId)"
    assert reader.bad_lines == 1 and reader.first_bad_lines == [2] and reader.examples == 2


def test_an_attribute_of_the_wrong_type_is_a_malformed_example_naming_it(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "a", "A", input_tokens="twelve")
        chat_span(tracer, None, "B", extra={"gen_ai.input.messages": 42})
        chat_span(tracer, "c", "C")
        spans = finished()
    for path in (write_json(spans, tmp_path / "t.jsonl"), write_protobuf(spans, tmp_path / "t.binpb")):
        examples, bad, _ = read(path)
        assert [e.fields["output"]["text"] for e in examples] == ["C"]
        assert [b.code for b in bad] == ["malformed_trace", "malformed_trace"]
        assert "attribute gen_ai.usage.input_tokens must be an integer, got string 'twelve'" in bad[0].message
        assert "attribute gen_ai.input.messages must be a list of messages, got number" in bad[1].message
        assert bad[0].message.startswith(f"{path}:1")


def test_an_otlp_value_contradicting_its_type_is_a_malformed_span(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "a", "A")
        spans = finished()
    path = write_json(spans, tmp_path / "t.jsonl")
    text = path.read_text().replace('"intValue":"12"', '"intValue":"twelve"')
    path.write_text(text)
    _, (bad,), _ = read(path)
    assert bad.code == "malformed_span"
    assert "attribute 'gen_ai.usage.input_tokens': its intValue does not hold a value of that type" in bad.message


def test_a_truncated_protobuf_file_is_one_error_naming_the_byte(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        for index in range(3):
            chat_span(tracer, f"q{index}", f"a{index}")
        spans = finished()
    path = write_protobuf(spans, tmp_path / "t.binpb")
    data = path.read_bytes()
    first = int.from_bytes(data[:4], "big")
    path.write_bytes(data[:-10])
    with pytest.raises(SetupError) as caught:
        read(path)
    message = str(caught.value)
    assert "protobuf message 3 at byte" in message and "is truncated" in message and str(path) in message
    path.write_bytes(data[: 4 + first] + b"\x00\x00\x01\x00garbage")
    with pytest.raises(SetupError, match=r"protobuf message 2 at byte \d+ is truncated"):
        read(path)


def test_protobuf_that_is_not_otlp_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "t.binpb"
    path.write_bytes(b"\x00\x00\x00\x05\xff\xff\xff\xff\xff")
    with pytest.raises(SetupError, match="protobuf message 1 at byte 0 is not an OTLP trace export"):
        read(path)


def test_a_two_gigabyte_file_is_streamed_and_refused_at_its_first_unreadable_place(tmp_path: Path) -> None:
    """A sparse 2 GB file (real OTLP lines, then a hole of zeros): the reader never holds more than one line of
    at most 64 MiB, so it stops at the hole with the line number, instead of filling memory or reading 2 GB."""
    with recording() as (tracer, finished):
        chat_span(tracer, "a", "A")
        spans = finished()
    json_path = write_json(spans, tmp_path / "t.jsonl")
    proto_path = write_protobuf(spans, tmp_path / "t.binpb")
    for path in (json_path, proto_path):
        with path.open("r+b") as handle:
            handle.truncate(2 << 30)
        assert path.stat().st_size == 2 << 30
    with pytest.raises(SetupError) as caught:
        read(json_path)
    assert f"{json_path}:2" in str(caught.value) and "longer than 67,108,864 bytes" in str(caught.value)
    with pytest.raises(SetupError) as caught:
        read(proto_path)
    assert "protobuf message 2" in str(caught.value) and "is empty" in str(caught.value)


def test_a_span_arriving_after_its_trace_was_evaluated_is_a_malformed_example(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        agent_trace(tracer)
        chat_span(tracer, "x", "X")
        chat_span(tracer, "y", "Y")
        spans = list(finished())
    late = spans.pop(0)  # the agent's first chat span, exported after two other traces
    spans.append(late)
    path = write_json(spans, tmp_path / "t.jsonl")
    examples, bad, _ = read(path, window=2)
    (line,) = bad
    assert line.code == "late_span" and line.line == len(spans)
    assert "raise dataset.traces.window" in line.message
    examples, bad, _ = read(path, window=10)
    assert not bad and len(examples) == 3


def test_a_file_of_logs_is_not_traces(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"resourceLogs": []}\nnot json\n')
    _, bad, _ = read(path)
    assert bad[0].message == f"{path}:1: holds logs or metrics, not traces"
    assert bad[1].message.startswith(f"{path}:2: not valid JSON")


def test_the_selection_and_mapping_are_part_of_what_a_gate_approves() -> None:
    from evalglass.engine.spec.config import Config

    def fingerprint(traces: dict[str, Any] | None) -> str:
        dataset: dict[str, Any] = {"name": "t", "path": "t.jsonl", "format": "otlp"}
        if traces is not None:
            dataset["traces"] = traces
        config = Config.model_validate(
            {
                "dataset": dataset,
                "metrics": {"m": {"type": "contains", "field": "text", "value": "x"}},
                "gates": {"g": {"metric": "m"}},
            }
        )
        return config.gate_fingerprint("g")

    plain = fingerprint(None)
    assert fingerprint({}) == plain  # the defaults, written or not, are one definition
    assert fingerprint({"select": {"where": {"gen_ai.request.model": "gpt-4o"}}}) != plain
    assert fingerprint({"mapping": {"conventions": ["gen_ai"]}}) != plain
    assert fingerprint({"select": {"unit": "span"}}) != plain


def test_a_count_some_model_call_did_not_report_is_not_summed(tmp_path: Path) -> None:
    """An agent span's usage is the sum over its model calls only where every call reported the count: a call
    without an input count (or a cache count only one call reported) leaves that total out, never undercounted."""
    with recording() as (tracer, finished):
        root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai"}
        with tracer.start_as_current_span("invoke_agent support", attributes=root):
            chat_span(tracer, "Where is A-17?", None, input_tokens=100, output_tokens=10, cache_read=80)
            chat_span(tracer, "Where is A-17?", "Shipped.", input_tokens=None, output_tokens=20)
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"))
    assert record["output"]["usage"] == {"output_tokens": 30}
