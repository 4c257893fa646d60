"""The trace reader gives exactly what the reference reader gives, on generated span files.

``tests/traces/reference/`` holds the trace reader as it was before it was made faster (issue 31's speed target:
``otlpdataset``, ``otlpspans``, ``genaimap`` at the branch point, imports pointed at each other). The generated files
mix the three conventions, multi-span traces, content captured or not, attributes of the wrong type, spans without
ids, broken lines, late and repeated spans, selections and small windows: every example, malformed example, count
and one-line error must be the same, field for field.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example
from evalglass.engine.datasets.dataset import BadLine
from evalglass.engine.datasets.traces.otlpdataset import OtlpReader
from evalglass.engine.spec.tracespec import TraceOptions
from evalglass.errors import SetupError
from tests.traces.reference.otlpdataset import OtlpReader as ReferenceReader

TRACE_IDS = [f"{index:032x}" for index in range(1, 6)]
words = st.text(alphabet="abc xyz", min_size=0, max_size=8)


def rarely(odds: int) -> st.SearchStrategy[bool]:
    """True about once in ``odds + 1`` draws (not hypothesis's favourite, as a small integer would be)."""
    return st.sampled_from([False] * odds + [True])


def any_value(value: Any) -> dict[str, Any]:
    """An attribute value in the OTLP/JSON encoding."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(item) for item in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": any_value(v)} for k, v in value.items()]}}
    return {"stringValue": value}


def encoded(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in attributes.items()]


def messages_json(pairs: list[tuple[str, str]]) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in pairs])


# A fact attribute of the wrong type (finish reasons included): at most one per span (with two, the reference reported whichever its set of
# names gave first, which Python's string hashing varies from process to process).
FACT_NAMES = [
    "gen_ai.request.model",
    "llm.request.model_name",
    "gen_ai.response.model",
    "llm.model_name",
    "gen_ai.response.id",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
    "llm.token_count.prompt_details.cache_read",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "llm.token_count.prompt_details.cache_write",
]
TOKEN_NAMES = [name for name in FACT_NAMES if "token" in name]


@st.composite
def facts(draw: st.DrawFn) -> dict[str, Any]:
    chosen = draw(st.lists(st.sampled_from(FACT_NAMES), max_size=6, unique=True))
    found: dict[str, Any] = {}
    for name in chosen:
        found[name] = draw(st.integers(0, 500)) if name in TOKEN_NAMES else draw(st.sampled_from(["m1", "m2", "r-1"]))
    wrong = bool(chosen) and draw(rarely(5))
    if wrong:
        found[chosen[0]] = draw(st.sampled_from(["twelve", 3.5, 7.0, True, ["x"]]))
    if draw(st.booleans()):
        reasons = [["stop"], "length", []] if wrong else [["stop"], "length", [1], []]
        found["gen_ai.response.finish_reasons"] = draw(st.sampled_from(reasons))
    return found


@st.composite
def current(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    operation = draw(st.sampled_from(["chat", "chat", "execute_tool", "invoke_agent", "text_completion"]))
    attributes: dict[str, Any] = {"gen_ai.operation.name": operation, "gen_ai.provider.name": "openai"}
    if operation == "execute_tool":
        attributes["gen_ai.tool.name"] = draw(st.sampled_from(["track", "refund"]))
        attributes["gen_ai.tool.call.id"] = "call-1"
        if draw(st.booleans()):
            attributes["gen_ai.tool.call.arguments"] = draw(st.sampled_from(['{"id": 7}', "plain", "[1"]))
        if draw(st.booleans()):
            attributes["gen_ai.tool.call.result"] = draw(st.sampled_from(['{"ok": true}', "in transit"]))
    else:
        if draw(st.booleans()):
            attributes["gen_ai.input.messages"] = draw(
                st.one_of(
                    st.builds(lambda q: messages_json([("user", q)]), words),
                    st.sampled_from(["not json", "42", '[{"parts": []}]', '[{"role": "user", "parts": [1]}]']),
                    # A tool call (and its response) whose type is written with escapes: found in the messages
                    # although their text does not say "tool_call" as it is.
                    st.sampled_from(
                        [
                            '[{"role": "assistant", "parts": [{"type": "\\u0074ool_call", "id": "c1", "name": "t"}]}]',
                            '[{"role": "assistant", "parts": [{"type": "\\u0074ool_call", "id": "c1", "name": "t"}]}, '
                            '{"role": "tool", "parts": [{"type": "tool\\u005fcall_response", "id": "c1", "response": 1}]}]',
                        ]
                    ),
                )
            )
        if draw(st.booleans()):
            answer = draw(words)
            attributes["gen_ai.output.messages"] = json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [
                            {"type": "text", "content": answer},
                            *(
                                [{"type": "tool_call", "id": "c1", "name": "track", "arguments": {"id": 7}}]
                                * draw(st.integers(0, 1))
                            ),
                        ],
                        "finish_reason": "stop",
                    }
                ]
            )
        if draw(st.booleans()):
            attributes["gen_ai.system_instructions"] = draw(
                st.sampled_from(['[{"type": "text", "content": "Be brief."}]', '[{"content": "no type"}]'])
            )
        if draw(st.booleans()):
            attributes["gen_ai.tool.definitions"] = draw(
                st.sampled_from(
                    [
                        '[{"type": "function", "name": "track", "parameters": {"type": "object"}}]',
                        '[{"function": {"name": "refund", "description": "d", "parameters": "{\\"a\\": 1}"}}]',
                        '[{"nameless": 1}]',
                        '{"not": "a list"}',
                    ]
                )
            )
    attributes.update(draw(facts()))
    events: list[dict[str, Any]] = []
    if draw(rarely(4)):
        events.append(
            {
                "name": "gen_ai.client.inference.operation.details",
                "attributes": encoded({"gen_ai.output.messages": messages_json([("assistant", draw(words))])}),
            }
        )
    return attributes, events


@st.composite
def pre_1_36(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    attributes: dict[str, Any] = {"gen_ai.system": "openai"}
    if draw(st.booleans()):
        attributes["gen_ai.operation.name"] = "chat"
    events: list[dict[str, Any]] = []
    shape = draw(st.sampled_from(["events", "indexed", "json", "content-events", "none"]))
    if shape == "events":
        events.append({"name": "gen_ai.system.message", "attributes": encoded({"content": "Be brief."})})
        user = {"content": draw(words)} if draw(st.booleans()) else {}
        events.append({"name": "gen_ai.user.message", "attributes": encoded(user)})
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
        if draw(st.booleans()):
            choice["message"] = json.dumps({"role": "assistant", "content": draw(words)})
        events.append({"name": "gen_ai.choice", "attributes": encoded(choice)})
    elif shape == "indexed":
        attributes["gen_ai.prompt.0.role"] = "system"
        attributes["gen_ai.prompt.0.content"] = "Be brief."
        attributes["gen_ai.prompt.1.role"] = "user"
        if draw(st.booleans()):
            attributes["gen_ai.prompt.1.content"] = draw(words)
        attributes["gen_ai.completion.0.role"] = "assistant"
        attributes["gen_ai.completion.0.content"] = draw(words)
        attributes["gen_ai.completion.0.finish_reason"] = "stop"
        if draw(st.booleans()):
            attributes["llm.request.functions.0.name"] = "track"
            attributes["llm.request.functions.0.parameters"] = '{"type": "object"}'
    elif shape == "json":
        attributes["gen_ai.prompt"] = draw(
            st.sampled_from(['[{"role": "user", "content": "hi"}]', '{"role": "user", "content": "x"}', "plain", "[1]"])
        )
        attributes["gen_ai.completion"] = json.dumps([{"role": "assistant", "content": draw(words)}])
    elif shape == "content-events":
        events.append(
            {
                "name": "gen_ai.content.prompt",
                "attributes": encoded({"gen_ai.prompt": '[{"role": "user", "content": "q"}]'}),
            }
        )
        events.append({"name": "gen_ai.content.completion", "attributes": encoded({"gen_ai.completion": draw(words)})})
    attributes.update(draw(facts()))
    return attributes, events


@st.composite
def openinference(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kind = draw(st.sampled_from(["LLM", "LLM", "TOOL", "CHAIN", "AGENT"]))
    attributes: dict[str, Any] = {"openinference.span.kind": kind}
    if kind == "LLM":
        shape = draw(st.sampled_from(["indexed", "values", "structured", "none"]))
        if shape == "indexed":
            attributes["llm.input_messages.0.message.role"] = "system"
            attributes["llm.input_messages.0.message.content"] = "Be brief."
            attributes["llm.input_messages.1.message.role"] = "user"
            if draw(st.booleans()):
                attributes["llm.input_messages.1.message.content"] = draw(words)
            attributes["llm.output_messages.0.message.role"] = "assistant"
            if draw(st.booleans()):
                attributes["llm.output_messages.0.message.contents.0.message_content.type"] = "text"
                attributes["llm.output_messages.0.message.contents.0.message_content.text"] = draw(words)
            if draw(st.booleans()):
                attributes["llm.output_messages.0.message.tool_calls.0.tool_call.id"] = "c1"
                attributes["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] = "track"
                attributes["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"] = '{"id": 7}'
        elif shape == "values":
            attributes["input.value"] = draw(words)
            attributes["output.value"] = draw(st.one_of(words, st.just('{"a": 1}')))
        elif shape == "structured":
            attributes["llm.input_messages"] = draw(
                st.sampled_from(['[{"message": {"role": "user", "content": "q"}}]', '"text"', "[1]"])
            )
        if draw(st.booleans()):
            attributes["llm.tools.0.tool.json_schema"] = draw(
                st.sampled_from(['{"type": "function", "function": {"name": "track"}}', "not json", '{"x": 1}'])
            )
        if draw(st.booleans()):
            attributes["llm.finish_reason"] = "stop"
        attributes["llm.provider"] = "openai"
    elif kind == "TOOL":
        attributes["tool.name"] = "track"
        if draw(st.booleans()):
            attributes["input.value"] = '{"id": 7}'
        if draw(st.booleans()):
            attributes["output.value"] = "in transit"
    attributes.update(draw(facts()))
    return attributes, []


@st.composite
def span_files(draw: st.DrawFn) -> list[str]:
    """OTLP/JSON lines (and, now and then, a broken one)."""
    spans: list[dict[str, Any]] = []
    ids: dict[str, list[str]] = {}
    for number in range(draw(st.integers(1, 14))):
        trace = draw(st.sampled_from(TRACE_IDS))
        span_id = f"{max(number, 1):016x}" if draw(rarely(15)) else f"{number + 1:016x}"  # now and then twice
        convention = draw(st.sampled_from(["current", "current", "pre", "openinference", "plain"]))
        if convention == "current":
            attributes, events = draw(current())
        elif convention == "pre":
            attributes, events = draw(pre_1_36())
        elif convention == "openinference":
            attributes, events = draw(openinference())
        else:
            attributes, events = {"http.method": "GET"}, []
        if draw(st.booleans()):
            attributes["session.id"] = draw(st.sampled_from(["s1", "s2"]))
        error = draw(rarely(5))
        if error:
            if draw(st.booleans()):
                attributes["error.type"] = "timeout"
            else:
                events.append({"name": "exception", "attributes": encoded({"exception.type": "ValueError"})})
        start = draw(st.integers(1, 10**6))
        span: dict[str, Any] = {
            "traceId": trace,
            "spanId": span_id,
            "name": f"{convention} {number}",
            "startTimeUnixNano": str(10**18 + start),
            "endTimeUnixNano": str(10**18 + start + draw(st.integers(-5, 10**6))),
            "attributes": encoded(attributes),
            "status": {"code": 2, "message": "failed"} if error else {},
        }
        earlier = ids.get(trace, [])
        if earlier and draw(st.booleans()):
            span["parentSpanId"] = draw(st.sampled_from(earlier))
        if events:
            span["events"] = events
        odd = draw(st.sampled_from([-1] * 24 + list(range(11))))
        if odd == 0:
            span["traceId"] = ""
        elif odd == 1:
            span["traceId"] = base64.b64encode(bytes.fromhex(trace)).decode()
        elif odd == 2:
            span["traceId"] = trace.upper()
        elif odd == 3:
            span["startTimeUnixNano"] = "soon"
        elif odd == 4:
            span["startTimeUnixNano"] = 10**18 + start
        elif odd == 5:
            span["attributes"].append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "many"}})
        elif odd == 6:
            span["attributes"].append({"key": "weird", "value": {"otherValue": 1}})
        elif odd == 7:  # the span id off the reader's one-step check of both ids, each way
            span["spanId"] = ("ab" + span_id[2:]).upper()  # (the drawn ids are mostly digits)
        elif odd == 8:
            span["spanId"] = base64.b64encode(bytes.fromhex(span_id)).decode()
        elif odd == 9:
            span["spanId"] = "0" * 16
        elif odd == 10:
            span["traceId"] = trace[:31] + "g"
        ids.setdefault(trace, []).append(span_id)
        spans.append(span)
    lines: list[str] = []
    index = 0
    while index < len(spans):
        size = draw(st.integers(1, 4))
        chunk = spans[index : index + size]
        index += size
        resource = {"attributes": encoded({"service.name": "bot", "session.id": "from-resource"})}
        lines.append(
            json.dumps(
                {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "t"}, "spans": chunk}]}]}
            )
        )
        broken = draw(st.sampled_from([-1] * 22 + [0, 1, 2]))
        if broken == 0:
            lines.append("{not json")
        elif broken == 1:
            lines.append('{"resourceLogs": []}')
        elif broken == 2:
            lines.append("")
    return lines


options = st.builds(
    lambda unit, where, since, window, metadata, conventions: TraceOptions.model_validate(
        {
            "select": {"unit": unit, "where": where, **({"since": since} if since else {})},
            "mapping": {"metadata": metadata, "conventions": conventions},
            "window": window,
        }
    ),
    st.sampled_from(["trace", "span"]),
    st.sampled_from([{}, {}, {"session.id": "s1"}, {"gen_ai.provider.name": ["openai", "other"]}]),
    st.sampled_from([None, None, "2001-09-09T01:46:40.5+00:00"]),
    st.sampled_from([1, 2, 3, 10_000]),
    st.sampled_from([[], ["session.id"]]),
    st.sampled_from([["gen_ai", "gen_ai_pre_1_36", "openinference"], ["gen_ai"], ["openinference", "gen_ai_pre_1_36"]]),
)


def outcome(reader: Any) -> Any:
    """Everything a run reads from a reader: its items, its counts and fingerprint, or the one-line error."""
    try:
        items = [
            ("example", item.id, item.line, item.fields, item.output)
            if isinstance(item, Example)
            else ("bad", item.id, item.line, item.code, item.message)
            for item in reader
        ]
    except SetupError as exc:
        return ("error", str(exc), exc.where, exc.fix)
    return items, reader.examples, reader.bad_lines, reader.first_bad_lines, reader.fingerprint


def batched(reader: Any) -> Any:
    try:
        found = []
        for batch in reader.batches(size=3):
            if isinstance(batch, list):
                found.append(
                    [
                        ("bad", item.id, item.message)
                        if isinstance(item, BadLine)
                        else ("example", item.id, item.fields)
                        for item in batch
                    ]
                )
            else:
                found.append([("example", i, r) for i, r in zip(batch.ids, batch.records, strict=True)])
        return found
    except SetupError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=span_files(), chosen=options)
def test_the_reader_gives_what_the_reference_reader_gives(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], chosen: TraceOptions
) -> None:
    path: Path = tmp_path_factory.mktemp("equal") / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert strictly(outcome(OtlpReader(path, options=chosen))) == strictly(
        outcome(ReferenceReader(path, options=chosen))
    )
    assert strictly(batched(OtlpReader(path, options=chosen))) == strictly(
        batched(ReferenceReader(path, options=chosen))
    )


def strictly(found: Any) -> str:
    """What was read, type for type: ``==`` holds 1 == 1.0 == True and 0.0 == -0.0, ``repr`` tells them apart (the
    reader keeps an open trace's spans as JSON buffers and reads them back, which must give the same values)."""
    return repr(found)


# Attribute values of every kind OTLP/JSON encodes, as the exporters write them: 64-bit integers as text (and wider
# ones, which Python reads), floats at their edges, text with escapes and non-ASCII, arrays and key-value lists.
scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.sampled_from([2**64, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([-0.0, 5e-324, 1.7976931348623157e308, 0.1, 1e16]),
    st.text(max_size=6),
    st.sampled_from(['"quoted"\\', "\u2028\x00\x1f", "\U0001f600 é"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c d"]), inner, max_size=3)
    ),
    max_leaves=6,
)
DOUBLE_WORDS = ["NaN", "Infinity", "-Infinity"]


def any_value_kind(value: Any, as_double: bool) -> dict[str, Any]:
    """``any_value``, with a float that is whole written as an intValue or doubleValue as drawn."""
    if isinstance(value, float) and as_double:
        return {"doubleValue": value}
    return any_value(value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    drawn=st.lists(st.tuples(values, st.booleans(), st.sampled_from([None, *DOUBLE_WORDS])), min_size=1, max_size=6),
    window=st.sampled_from([1, 2, 10_000]),
    traces=st.integers(1, 3),
)
def test_every_kind_of_attribute_value_comes_back_as_it_was_read(
    tmp_path_factory: pytest.TempPathFactory,
    drawn: list[tuple[Any, bool, str | None]],
    window: int,
    traces: int,
) -> None:
    """Declared as metadata, each attribute is copied into the record as read: the same value and type as the
    reference reader gives, whether the span waited in the window (read back from its buffer) or not."""
    keys = [f"x.{index}" for index in range(len(drawn))]
    lines = []
    for index, (value, as_double, word) in enumerate(drawn):
        attributes = [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": messages_json([("user", "q")])}},
        ]
        for key, (other, double, _) in zip(keys, drawn, strict=True):
            attributes.append({"key": key, "value": any_value_kind(other, double)})
        if word is not None:
            attributes.append({"key": keys[0], "value": {"doubleValue": word}})
        span = {
            "traceId": TRACE_IDS[index % traces],
            "spanId": f"{index + 1:016x}",
            "name": "chat",
            "startTimeUnixNano": str(10**18 + index),
            "endTimeUnixNano": str(10**18 + index + 5),
            "attributes": attributes,
            "events": [{"name": "e", "attributes": attributes[2:]}],
            "status": {"code": 2 if as_double else 0, "message": str(value)[:10]},
        }
        resource = {"attributes": [{"key": "x.0", "value": any_value(value)}]}
        lines.append(json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}))
    path: Path = tmp_path_factory.mktemp("values") / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    chosen = TraceOptions.model_validate({"window": window, "mapping": {"metadata": keys}})
    assert strictly(outcome(OtlpReader(path, options=chosen))) == strictly(
        outcome(ReferenceReader(path, options=chosen))
    )


def test_real_sdk_files_give_what_the_reference_reader_gives(tmp_path: Path) -> None:
    """Spans made by the OpenTelemetry SDK and written by its own encoders (JSON lines and protobuf), with attributes
    of each type the SDK records, read with the default window (every span waits in it) and with a window of 1."""
    from tests.traces.otel import chat_span, recording, write_json, write_protobuf
    from tests.traces.test_otlp_reader import agent_trace

    typed = {
        "x.int": 2**63 - 1,
        "x.negative": -(2**63),
        "x.float": 0.1,
        "x.zero": -0.0,
        "x.tiny": 5e-324,
        "x.whole": 3.0,
        "x.bool": True,
        "x.text": 'quoted "\\" \u2028 \U0001f600',
        "x.ints": [1, 2**40],
        "x.floats": [1.5, -0.0],
        "x.bools": [False, True],
        "x.texts": ["a", ""],
    }
    with recording() as (tracer, finished):
        for index in range(30):
            chat_span(
                tracer, f"Question {index}?", f"Answer {index}.", system="Be brief", cache_read=index, extra=typed
            )
        chat_span(tracer, None, None, extra=typed)
        chat_span(tracer, "boom?", None, error="timeout")
        agent_trace(tracer)
        agent_trace(tracer, capture=False, fail_tool=True)
        spans = finished()
    metadata = [*typed, "service.name", "gen_ai.usage.input_tokens"]
    for path in (
        write_json(spans, tmp_path / "t.jsonl", per_line=7),
        write_protobuf(spans, tmp_path / "t.binpb", per_message=7),
    ):
        for window in (10_000, 1):
            for unit in ("trace", "span"):
                chosen = TraceOptions.model_validate(
                    {"window": window, "select": {"unit": unit}, "mapping": {"metadata": metadata}}
                )
                ours = outcome(OtlpReader(path, options=chosen))
                assert strictly(ours) == strictly(outcome(ReferenceReader(path, options=chosen)))
                examples = [item for item in ours[0] if item[0] == "example"]
                assert len(examples) == (34 if unit == "trace" else 36)  # each agent trace: two chat spans
                read = examples[0][3]["metadata"]
                assert read["x.int"] == 2**63 - 1 and read["x.zero"] == 0.0 and str(read["x.zero"]) == "-0.0"
                assert type(read["x.whole"]) is float and read["x.floats"] == [1.5, -0.0]
