"""Real OpenTelemetry spans for the trace-import tests: made by the SDK in this process, written by its own OTLP
encoders (the JSON file exporter's lines, and the protobuf encoder framed as the collector's file exporter frames
it). Nothing here writes OTLP by hand."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, Tracer


@contextmanager
def recording(service: str = "support-bot") -> Iterator[tuple[Tracer, Callable[[], Sequence[ReadableSpan]]]]:
    """A tracer whose finished spans are kept in memory (in the order they ended, as an exporter gets them)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    try:
        yield provider.get_tracer("evalglass.tests"), memory.get_finished_spans
    finally:
        provider.shutdown()


def write_json(spans: Sequence[ReadableSpan], path: Path, *, per_line: int = 1) -> Path:
    """OTLP/JSON lines as the SDK's file exporter writes them (one export call per ``per_line`` spans)."""
    stream = io.StringIO()
    exporter = FileSpanExporter(stream=stream)
    for start in range(0, len(spans), per_line):
        exporter.export(spans[start : start + per_line])
    path.write_text(stream.getvalue())
    return path


def write_protobuf(spans: Sequence[ReadableSpan], path: Path, *, per_message: int = 1) -> Path:
    """OTLP protobuf messages from the SDK's encoder, each preceded by its 4-byte big-endian length (the framing of
    the collector's file exporter, ``format: proto``)."""
    with path.open("wb") as handle:
        for start in range(0, len(spans), per_message):
            data = encode_spans(spans[start : start + per_message]).SerializeToString()
            handle.write(len(data).to_bytes(4, "big") + data)
    return path


def messages(*pairs: tuple[str, str]) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in pairs])


def chat_span(
    tracer: Tracer,
    question: str | None,
    answer: str | None,
    *,
    model: str = "gpt-test",
    input_tokens: Any = 12,
    output_tokens: int = 5,
    cache_read: int | None = None,
    system: str | None = None,
    finish: str = "stop",
    error: str | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """One inference span in the current GenAI conventions; ``None`` content is left out (capture off)."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": model,
        "gen_ai.response.model": model + "-0613",
        "gen_ai.response.id": "chatcmpl-" + str(abs(hash(question)) % 10_000),
        "gen_ai.response.finish_reasons": [finish],
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        **(extra or {}),
    }
    if cache_read is not None:
        attributes["gen_ai.usage.cache_read.input_tokens"] = cache_read
    if question is not None:
        attributes["gen_ai.input.messages"] = messages(("user", question))
    if answer is not None:
        attributes["gen_ai.output.messages"] = json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": finish}]
        )
    if system is not None:
        attributes["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": system}])
    if error is not None:
        attributes["error.type"] = error
    with tracer.start_as_current_span(f"chat {model}", attributes=attributes) as span:
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
