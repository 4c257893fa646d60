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
