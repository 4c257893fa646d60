"""A trace of the trace-import reader is a trajectory: its output is read as a conversation, as recorded."""

from __future__ import annotations

from pathlib import Path

from evalglass.core.trajectory import Call, count_model_turns, read_calls, read_messages
from tests.traces.otel import recording, write_json
from tests.traces.test_otlp_reader import agent_trace, records


def test_an_agent_trace_reads_as_its_calls_and_messages(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        agent_trace(tracer)
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"))
    assert read_calls(record["output"]) == [Call("lookup_order", {"order": "A-17"})]
    assert count_model_turns(record["output"]) is None  # the trace's output holds the last model call's messages
    assert read_messages(record["input"]["messages"])[0]["parts"][0]["content"] == "Where is order A-17?"


def test_a_trace_ending_on_a_request_that_never_ran_adds_up(tmp_path: Path) -> None:
    """The last model call asks for a tool and the application stops (a step budget, a crash before the tool): the
    trace's ``tool_calls`` are the tool spans that ran, its messages the last call's, so the request that never ran
    is what happened, not a disagreement (a false red on production traces otherwise)."""
    import json

    with recording() as (tracer, finished):
        root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai"}
        with tracer.start_as_current_span("invoke_agent support", attributes=root):
            ran = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": json.dumps({"order": "A-17"}),
                "gen_ai.tool.call.result": json.dumps({"status": "shipped"}),
            }
            with tracer.start_as_current_span("execute_tool lookup_order", attributes=ran):
                pass
            asked = {"type": "tool_call", "id": "call_2", "name": "cancel_order", "arguments": {"order": "A-17"}}
            chat = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-test",
                "gen_ai.response.finish_reasons": ["tool_calls"],
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [asked]}]),
            }
            with tracer.start_as_current_span("chat gpt-test", attributes=chat):
                pass
        spans = finished()
    (record,) = records(write_json(spans, tmp_path / "t.jsonl"))
    output = record["output"]
    assert [call["name"] for call in output["tool_calls"]] == ["lookup_order"]  # the tool span that ran
    assert output["messages"][-1]["parts"][0]["name"] == "cancel_order"  # the last call's request
    assert read_calls(output) == [Call("lookup_order", {"order": "A-17"})]


def test_a_trace_whose_answered_call_is_not_among_its_tool_spans_does_not_add_up() -> None:
    import pytest

    from evalglass.core.trajectory import Inconsistent

    ran = [{"span_id": "a1", "id": "call_1", "name": "lookup_order", "arguments": {"order": "A-17"}}]
    messages = [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_9", "name": "refund", "arguments": {}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_9", "response": "ok"}]},
    ]
    with pytest.raises(Inconsistent):
        read_calls({"tool_calls": ran, "messages": messages})
    unanswered = [{"role": "assistant", "parts": [messages[0]["parts"][0]]}]
    assert read_calls({"tool_calls": ran, "messages": unanswered}) == [Call("lookup_order", {"order": "A-17"})]
    # A record whose calls are not tool spans counts every call its messages hold.
    with pytest.raises(Inconsistent):
        read_calls({"tool_calls": [{k: v for k, v in ran[0].items() if k != "span_id"}], "messages": unanswered})
