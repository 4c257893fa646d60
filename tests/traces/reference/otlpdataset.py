"""An OTLP trace file as a dataset (``dataset: {format: otlp}``): the JSONL reader's interface over traces.

Spans stream from :mod:`~evalglass.engine.datasets.traces.otlpspans`; they are grouped by trace, a trace is complete once
``traces.window`` spans were read after its last one, and each complete trace gives its examples
(``traces.select``), each mapped to a record (:mod:`~evalglass.engine.datasets.traces.genaimap`). Memory holds the spans of the
traces still open (about ``window`` spans) and the ids of the traces recently completed, never the file.

An example's id is ``<trace id>:<span id>`` of the span it is rooted at, so re-exporting the same traces (in any
order, in any encoding) gives the same ids. Its ``line`` is the JSON line (or protobuf message) that span was read
from. A span that cannot be read, an attribute of the wrong type, or a span of a trace already evaluated is a
malformed example (``BadLine``), counted and scored as an error for every metric, as a malformed JSONL line is.

The dataset fingerprint is the SHA-256 of the file's bytes, as for every format.
"""

from __future__ import annotations

import gc
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from evalglass.collector import collector_paused
from evalglass.core.conversation import NOT_CAPTURED
from evalglass.core.example import MALFORMED_SHOWN, Example, ExampleBatch
from evalglass.core.fingerprint import PREFIX
from evalglass.engine.datasets.dataset import BATCH, BadLine, _unfreezing, field_getter
from evalglass.engine.spec.tracespec import TraceOptions
from evalglass.errors import SetupError
from tests.traces.reference.genaimap import (
    MappingProblem,
    convention_of,
    error_type,
    is_inference,
    is_tool,
    operation_of,
    span_content,
    text_of,
    tool_call_of,
    tool_calls_from_messages,
)
from tests.traces.reference.otlpspans import Span, SpanFile, SpanProblem

#: An example as the reader makes it: id, line, record, output.
Row = tuple[str, int, dict[str, Any], Any]
#: Completed traces remembered, as a multiple of the window: a span of one of them is late (or repeated), not the
#: start of a new trace. Beyond them a late span starts a trace of its own (an example rooted elsewhere).
RECENT_FACTOR = 4


class OtlpReader:
    """Iterate once over the examples of a trace file; afterwards ``fingerprint`` is the SHA-256 of its bytes."""

    def __init__(
        self,
        path: Path,
        *,
        options: TraceOptions,
        id_field: str = "id",
        output_field: str = "output",
        hash_bytes: bool = True,
    ) -> None:
        self.path = path
        self._options = options
        self._spans = SpanFile(path, hash_bytes=hash_bytes)
        self._id = field_getter(id_field)
        self._output = field_getter(output_field)
        self._allowed = options.mapping.conventions
        self._unit_span = options.select.unit == "span"
        self._where = options.select.where
        self._since = options.select.since_ns()
        self._until = options.select.until_ns()
        self._metadata = options.mapping.metadata
        self.examples = 0
        self.bad_lines = 0
        self.first_bad_lines: list[int] = []
        self._problems_at: dict[int, int] = {}
        self._done = False

    @property
    def fingerprint(self) -> str:
        if not self._done:
            raise RuntimeError("the dataset fingerprint is known only after the whole file was read")
        return PREFIX + self._spans.sha256_hex

    def batches(self, size: int = BATCH) -> Iterator[ExampleBatch | list[Example | BadLine]]:
        """The examples ``size`` at a time: an :class:`ExampleBatch` (no object per example), or the list of what
        iterating gives when the batch holds a malformed example. The collector is paused while a batch is made:
        spans and records hold no reference cycles, and its passes over the open traces cost as much as the
        parsing (BENCHMARKS.md, issue 31); what a batch leaves alive is frozen out of them until the stream ends."""
        items = self._items()
        with _unfreezing():
            yield from self._batches(items, size)

    def _batches(self, items: Iterator[Row | BadLine], size: int) -> Iterator[ExampleBatch | list[Example | BadLine]]:
        while True:
            with collector_paused():
                chunk = list(islice(items, size))
                # Everything alive now (the open traces, this batch) is out of the collector's passes until the
                # stream ends, as the JSONL reader does with what is alive when it starts: otherwise the passes
                # that follow each batch walk every open span again (about 40 % of the import, BENCHMARKS.md).
                gc.freeze()
            if not chunk:
                return
            if any(type(item) is BadLine for item in chunk):
                yield [item if type(item) is BadLine else self._as_example(item) for item in chunk]  # type: ignore[arg-type]
                continue
            rows: list[tuple[str, int, dict[str, Any], Any]] = chunk  # type: ignore[assignment]
            yield ExampleBatch(
                ids=[row[0] for row in rows],
                lines=[row[1] for row in rows],
                records=[row[2] for row in rows],
                outputs=[row[3] for row in rows],
            )

    def __iter__(self) -> Iterator[Example | BadLine]:
        for item in self._items():
            yield item if type(item) is BadLine else self._as_example(item)  # type: ignore[arg-type]

    @staticmethod
    def _as_example(row: tuple[str, int, dict[str, Any], Any]) -> Example:
        return Example(id=row[0], line=row[1], fields=row[2], output=row[3])

    def _items(self) -> Iterator[Row | BadLine]:
        """Each example as (id, line, record, output), or the malformed example."""
        window = self._options.window
        pending: OrderedDict[str, list[Span]] = OrderedDict()
        last: dict[str, int] = {}
        # Completed traces: when each completed, and where each of its spans was read (a repeat is refused).
        recent: OrderedDict[str, tuple[int, dict[str, int]]] = OrderedDict()
        keep = RECENT_FACTOR * window
        count = 0
        for item in self._spans:
            if type(item) is SpanProblem:
                yield self._bad(item.where, "malformed_span", item.message)
                continue
            assert isinstance(item, Span)
            count += 1
            trace = item.trace_id
            spans = pending.get(trace)
            if spans is None:
                completed = recent.get(trace)
                if completed is not None:
                    when, read_at = completed
                    if item.span_id in read_at:
                        raise self._repeated(item, read_at[item.span_id])
                    yield self._bad(
                        item.where,
                        "late_span",
                        f"span {item.name!r} of trace {trace} arrived {count - when:,} spans after the trace was "
                        f"complete (traces.window is {window:,}); raise dataset.traces.window",
                    )
                    continue
                pending[trace] = [item]
            else:
                spans.append(item)
                pending.move_to_end(trace)
            last[trace] = count
            while True:
                oldest = next(iter(pending))
                if last[oldest] > count - window:
                    break
                del last[oldest]
                completed_spans = pending.pop(oldest)
                recent[oldest] = (count, self._read_at(completed_spans))
                if len(recent) > keep:
                    recent.popitem(last=False)
                yield from self._examples(completed_spans)
        for spans in pending.values():
            self._read_at(spans)
            yield from self._examples(spans)
        self._done = True

    def _read_at(self, spans: list[Span]) -> dict[str, int]:
        """Where each span of a trace was read; a span read twice stops the run (the same id twice)."""
        if len(spans) == 1:
            return {spans[0].span_id: spans[0].where}
        found: dict[str, int] = {}
        for span in spans:
            if span.span_id in found:
                raise self._repeated(span, found[span.span_id])
            found[span.span_id] = span.where
        return found

    def _repeated(self, span: Span, first: int) -> SetupError:
        unit = self._spans.unit
        return SetupError(
            f"span {span.span_id} of trace {span.trace_id} ({span.name!r}) was already read at {unit} {first}: the "
            "same span twice would make two examples with one id",
            where=f"{self.path}:{span.where}",
            fix="remove the repeated spans (a file that holds the same export twice?)",
        )

    # -- one trace ----------------------------------------------------------------------------------------------

    def _examples(self, spans: list[Span]) -> list[Row | BadLine]:
        """A list, not a generator: most traces are one span and give one example, for which a generator object
        per trace is pure overhead on the import's hot loop."""
        allowed = self._allowed
        if len(spans) == 1:
            span = spans[0]
            convention = convention_of(span, allowed)
            if (
                convention is None
                or (self._unit_span and not is_inference(span, convention))
                or not self._selected(span)
            ):
                return []
            return [self._example(span, convention, spans, {span.span_id: convention})]
        found: list[Row | BadLine] = []
        conventions = {span.span_id: convention_of(span, allowed) for span in spans}
        if self._unit_span:
            roots = [span for span in spans if (c := conventions[span.span_id]) is not None and is_inference(span, c)]
        else:
            by_id = {span.span_id: span for span in spans}
            roots = [
                span
                for span in spans
                if conventions[span.span_id] is not None and not _has_genai_ancestor(span, by_id, conventions)
            ]
            # Added with the reader's rule (2026-12-05): tops in two or more fragments, one hanging from a span the
            # file lacks, are one `partial_trace` example (written apart from the reader's, as a check of it).
            hanging: dict[str, str] = {}
            for root in roots:
                chain = [root]
                while chain[-1].parent_id in by_id and by_id[chain[-1].parent_id] not in chain:
                    chain.append(by_id[chain[-1].parent_id])
                looped = chain[-1].parent_id in by_id
                hanging["" if looped else chain[-1].span_id] = "" if looped else chain[-1].parent_id
            lost = sorted({parent for parent in hanging.values() if parent and parent not in by_id})
            if len(roots) > 1 and len(hanging) > 1 and lost:
                if not [root for root in roots if self._selected(root)]:
                    return []
                first = sorted(spans, key=lambda span: span.where)[0]
                listed = ", ".join(lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
                message = (
                    f"trace {first.trace_id} is partial: its {len(roots)} top-level GenAI spans are in "
                    f"{len(hanging)} fragments, hanging from spans the file does not hold ({listed}), so whether "
                    "they are one example or several cannot be told; export whole traces (a sampler or an exporter "
                    "that drops spans?), or measure each model call alone (traces.select.unit: span)"
                )
                return [self._bad(first.where, "partial_trace", message)]
        roots.sort(key=_start)
        children: dict[str, list[Span]] | None = None
        for root in roots:
            if not self._selected(root):
                continue
            if self._unit_span:
                subtree = [root]
            else:
                if children is None:
                    children = {}
                    for span in spans:
                        children.setdefault(span.parent_id, []).append(span)
                subtree = _subtree(root, children)
            found.append(self._example(root, str(conventions[root.span_id]), subtree, conventions))
        return found

    def _selected(self, span: Span) -> bool:
        if self._since is not None and span.start < self._since:
            return False
        if self._until is not None and span.start >= self._until:
            return False
        for key, wanted in self._where.items():
            value = span.attributes.get(key, span.resource.get(key))
            if value is None or (value not in wanted if isinstance(wanted, list) else value != wanted):
                return False
            if type(value) is bool and not isinstance(wanted, list) and type(wanted) is not bool:
                return False
        return True

    def _example(
        self, root: Span, convention: str, subtree: list[Span], conventions: Mapping[str, str | None]
    ) -> Row | BadLine:
        try:
            record = trace_record(root, convention, subtree, conventions, self._metadata)
        except MappingProblem as exc:
            return self._bad(
                root.where, "malformed_trace", f"trace {root.trace_id} span {root.span_id} ({root.name!r}): {exc}"
            )
        self.examples += 1
        return (self._id(record), root.where, record, self._output(record))

    def _bad(self, where: int, code: str, message: str) -> BadLine:
        self.examples += 1
        self.bad_lines += 1
        if len(self.first_bad_lines) < MALFORMED_SHOWN:
            self.first_bad_lines.append(where)
        seen = self._problems_at.get(where, 0)
        self._problems_at[where] = seen + 1
        place = f"{where}" if self._spans.unit == "line" else f"{where} (protobuf message {where})"
        return BadLine(
            id=f"line:{where}" if seen == 0 else f"line:{where}#{seen + 1}",
            line=where,
            code=code,
            message=f"{self.path}:{place}: {message}",
        )


def _start(span: Span) -> int:
    return span.start


def _has_genai_ancestor(span: Span, by_id: Mapping[str, Span], conventions: Mapping[str, str | None]) -> bool:
    parent = by_id.get(span.parent_id)
    steps = 0
    while parent is not None and steps < len(by_id):
        if conventions[parent.span_id] is not None:
            return True
        parent = by_id.get(parent.parent_id)
        steps += 1
    return False


def _subtree(root: Span, children: Mapping[str, list[Span]]) -> list[Span]:
    found = [root]
    seen = {root.span_id}
    index = 0
    while index < len(found):
        for child in children.get(found[index].span_id, ()):
            if child.span_id not in seen:
                seen.add(child.span_id)
                found.append(child)
        index += 1
    found.sort(key=_start)
    return found


# -- the record ------------------------------------------------------------------------------------------------------


def trace_record(
    root: Span,
    convention: str,
    subtree: list[Span],
    conventions: Mapping[str, str | None],
    metadata_keys: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The record (``core.conversation.TraceRecord``'s shape) of the example rooted at ``root``."""
    content = span_content(root, convention)
    alone = len(subtree) == 1  # the common case: a trace of one model call
    inference = (
        []
        if alone
        else [
            span
            for span in subtree
            if span is not root and (c := conventions.get(span.span_id)) is not None and is_inference(span, c)
        ]
    )
    first = final = None
    if inference:
        first = span_content(inference[0], str(conventions[inference[0].span_id]))
        final = first if len(inference) == 1 else span_content(inference[-1], str(conventions[inference[-1].span_id]))
    not_captured: set[str] = set()

    inputs: dict[str, Any] = {}
    messages = content.input_messages if content.input_messages is not None or first is None else first.input_messages
    system = content.system_instructions
    if system is None and content.input_messages is None and first is not None:
        system = first.system_instructions
    tools = (
        content.tool_definitions if content.tool_definitions is not None or first is None else first.tool_definitions
    )
    if messages is None:
        not_captured.add("input.messages")
        if system is None:
            not_captured.add("input.system_instructions")
    else:
        inputs["messages"] = messages
    if system is not None:
        inputs["system_instructions"] = system
    elif messages is not None:
        inputs["system_instructions"] = []
    if tools is None:
        not_captured.add("input.tool_definitions")
    else:
        inputs["tool_definitions"] = tools
    inputs["model"] = (
        content.request_model if content.request_model is not None or first is None else first.request_model
    )

    error = error_type(root)
    output: dict[str, Any] = {}
    out_messages = (
        content.output_messages if content.output_messages is not None or final is None else final.output_messages
    )
    if out_messages is not None:
        output["text"] = text_of(out_messages[-1]) if out_messages else ""
        output["messages"] = out_messages
    elif error is None:
        not_captured.update(("output.text", "output.messages"))
    tool_spans = (
        []
        if alone
        else [span for span in subtree if (c := conventions.get(span.span_id)) is not None and is_tool(span, c)]
    )
    # Without tool spans the calls are read from the conversation: the output's, after the input of the model call
    # that wrote it (the last one's input holds every turn before it; the trace's input is the first call's).
    said = final.input_messages if final is not None and content.output_messages is None else messages
    if tool_spans:
        output["tool_calls"] = [tool_call_of(span, str(conventions[span.span_id]), not_captured) for span in tool_spans]
    elif said is None or (out_messages is None and error is None):
        # The one deliberate change since the copy (falsered): calls read from messages that were not captured
        # are unknown, not none.
        not_captured.add("output.tool_calls")
    else:
        history = [*said, *(out_messages or ())]
        output["tool_calls"] = tool_calls_from_messages(history)
    reasons = content.finish_reasons if content.finish_reasons is not None or final is None else final.finish_reasons
    output["finish_reasons"] = reasons if reasons is not None else []
    output["model"] = (
        content.response_model if content.response_model is not None or final is None else final.response_model
    )
    output["response_id"] = (
        content.response_id if content.response_id is not None or final is None else final.response_id
    )
    usage = content.usage
    if not usage and inference:
        usage = _summed([span_content(span, str(conventions[span.span_id])).usage for span in inference])
    output["usage"] = usage
    output["latency_ms"] = (root.end - root.start) / 1e6 if root.end >= root.start > 0 else None
    output["error_type"] = error

    attributes = root.attributes
    provider = attributes.get("gen_ai.provider.name", attributes.get("gen_ai.system", attributes.get("llm.provider")))
    record: dict[str, Any] = {
        "id": f"{root.trace_id}:{root.span_id}",
        "trace_id": root.trace_id,
        "span_id": root.span_id,
        "name": root.name,
        "operation": operation_of(root, convention),
        "provider": provider if isinstance(provider, str) else None,
        "start_time_unix_nano": root.start,
        "convention": convention,
        "input": inputs,
        "output": output,
        "metadata": {key: attributes.get(key, root.resource.get(key)) for key in metadata_keys},
        NOT_CAPTURED: sorted(not_captured),
    }
    return record


def _summed(usages: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for usage in usages:
        for key, value in usage.items():
            total[key] = total.get(key, 0) + value
    # A count only when every model call reported it: a partial sum would undercount.
    return {key: value for key, value in total.items() if all(key in usage for usage in usages)}


__all__ = ["OtlpReader", "trace_record"]
