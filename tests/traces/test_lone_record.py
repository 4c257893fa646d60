"""``lone_record`` (the fast path for a trace of one current-convention span) gives what ``trace_record`` gives.

The reader maps a completed trace of one span without events through ``lone_record`` when the span's attribute names
put it in the current conventions; ``trace_record`` is the general mapping. For any span, both must give the same
record (type for type, key order included, so the records serialise to the same bytes) or the same
``MappingProblem``; ``lone_record`` must decline (None) exactly the spans ``convention_of`` does not read as
``gen_ai``. The spans are drawn from the equivalence test's strategies (three conventions, wrong-typed facts,
malformed messages, tool calls written with escapes), plus structured values, null values, error status and
metadata keys.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.engine.datasets.traces.genaimap import CONVENTIONS, GEN_AI, MappingProblem, convention_of
from evalglass.engine.datasets.traces.otlpdataset import lone_record, trace_record
from evalglass.engine.datasets.traces.otlpspans import Span
from tests.traces.test_reader_equivalence import current, openinference, pre_1_36

CONTENT_NAMES = [
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
]
STRUCTURED = [
    [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
    [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "t", "arguments": {"a": 1}}]}],
    [{"type": "text", "content": "Be brief."}],
    [{"name": "track", "parameters": {"type": "object"}}],
    {"role": "user"},
    [],
]


@st.composite
def spans(draw: st.DrawFn) -> Span:
    attributes, _ = draw(st.one_of(current(), current(), pre_1_36(), openinference()))
    # Content given structured (an array or key-value list) rather than as JSON text, or as a null value.
    for name in CONTENT_NAMES:
        if draw(st.integers(0, 5)) == 0:
            attributes[name] = draw(st.one_of(st.sampled_from(STRUCTURED), st.none()))
    if draw(st.integers(0, 4)) == 0:
        attributes[draw(st.sampled_from(["gen_ai.request.model", "gen_ai.usage.input_tokens"]))] = None
    if draw(st.integers(0, 4)) == 0:
        attributes["error.type"] = draw(st.sampled_from(["timeout", 500, None]))
    provider = draw(st.sampled_from(["keep", "drop", "system", "other", "number"]))
    if provider != "keep":
        attributes.pop("gen_ai.provider.name", None)
    if provider == "system":
        attributes["gen_ai.system"] = "anthropic"
    elif provider == "other":
        attributes["llm.provider"] = "gemini"
    elif provider == "number":
        attributes["gen_ai.provider.name"] = 3
    if draw(st.booleans()):
        attributes["gen_ai.operation.name"] = draw(st.sampled_from(["chat", 7, None]))
    names = list(attributes)
    order = draw(st.permutations(names))
    start = draw(st.sampled_from([0, 1_700_000_000_000_000_000]))
    return Span(
        trace_id="0" * 31 + "1",
        span_id="0" * 15 + "2",
        parent_id="",
        name=draw(st.sampled_from(["chat m", "tool"])),
        start=start,
        end=start + draw(st.integers(-5, 10**9)),
        attributes={name: attributes[name] for name in order},
        events=[],
        error=draw(st.booleans()),
        status_message="",
        resource={"service.name": "bot", "deployment": "prod"},
        where=1,
    )


def mapped(function: Any, *args: Any) -> Any:
    try:
        record = function(*args)
    except MappingProblem as exc:
        return ("problem", str(exc))
    return None if record is None else ("record", orjson.dumps(record), repr(record))


@settings(max_examples=400, deadline=None)
@given(span=spans(), metadata=st.sampled_from([(), ("deployment",), ("gen_ai.request.model", "absent")]))
def test_lone_record_gives_what_trace_record_gives(span: Span, metadata: tuple[str, ...]) -> None:
    fast = mapped(
        lone_record,
        span.trace_id,
        span.span_id,
        span.name,
        span.start,
        span.end,
        span.attributes,
        span.error,
        span.resource,
        metadata,
    )
    if convention_of(span, CONVENTIONS) != GEN_AI:
        assert fast is None
        return
    assert fast is not None
    assert fast == mapped(trace_record, span, GEN_AI, [span], {span.span_id: GEN_AI}, metadata)
