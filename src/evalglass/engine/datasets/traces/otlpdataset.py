"""An OTLP trace file as a dataset (``dataset: {format: otlp}``): the JSONL reader's interface over traces.

Spans stream from :mod:`~evalglass.engine.datasets.traces.otlpspans`; they are grouped by trace, a trace is complete
once ``traces.window`` spans were read after its last one, and each complete trace gives its examples
(``traces.select``), each mapped to a record (:mod:`~evalglass.engine.datasets.traces.genaimap`). Memory holds the spans
of the traces still open (about ``window`` spans) and the ids of the traces recently completed, never the file.

An example's id is ``<trace id>:<span id>`` of the span it is rooted at, so re-exporting the same traces (in any
order, in any encoding) gives the same ids. Its ``line`` is the JSON line (or protobuf message) that span was read
from. A span that cannot be read, an attribute of the wrong type, or a span of a trace already evaluated is a
malformed example (``BadLine``), counted and scored as an error for every metric, as a malformed JSONL line is.

The dataset fingerprint is the SHA-256 of the file's bytes, as for every format.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from evalglass.collector import collector_paused
from evalglass.core.example import MALFORMED_SHOWN, Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.fingerprint import PREFIX
from evalglass.core.notcaptured import NOT_CAPTURED
from evalglass.engine.datasets.dataset import BATCH, BadLine, _plain_key, _unfreezing, field_getter
from evalglass.engine.datasets.traces.genaimap import (
    GEN_AI,
    MENDS,
    MappingProblem,
    checked_messages,
    checked_parts,
    convention_of,
    error_type,
    facts,
    finish_reasons_of,
    is_inference,
    is_tool,
    name_plan,
    operation_of,
    span_content,
    structured_value,
    taken_mends,
    text_of,
    tool_call_of,
    tool_calls_from_messages,
    tool_definitions,
)
from evalglass.engine.datasets.traces.otlpspans import Span, SpanFile, SpanProblem, pack, span_of
from evalglass.engine.spec.tracespec import TraceOptions
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import MendedLines

#: An example as the reader makes it: id, line, record, output.
Row = tuple[str, int, dict[str, Any], Any]
#: Completed traces remembered, as a multiple of the window: a span of one of them is late (or repeated), not the
#: start of a new trace. Beyond them a late span starts a trace of its own (an example rooted elsewhere).
RECENT_FACTOR = 4


class OtlpReader:
    """Iterate once over the examples of a trace file; afterwards ``fingerprint`` is the SHA-256 of its bytes."""

    #: A ``doubleValue`` NaN or infinity is kept as the float it is.
    holds_non_finite = True

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
        self._spans = SpanFile(path, hash_bytes=hash_bytes, packed=True)
        self._id = field_getter(id_field)
        self._output = field_getter(output_field)
        # A plain key (the default) is read inline, without a call through the getter.
        self._id_key = _plain_key(id_field)
        self._output_key = _plain_key(output_field)
        self._allowed = options.mapping.conventions
        self._unit_span = options.select.unit == "span"
        self._where = options.select.where
        self._since = options.select.since_ns()
        self._until = options.select.until_ns()
        self._metadata = options.mapping.metadata
        self._filtered = bool(self._where) or self._since is not None or self._until is not None
        # A trace of one span (the commonest) may be mapped by lone_record, without a Span or a SpanContent.
        self._lone = GEN_AI in self._allowed and not self._unit_span and not self._filtered
        self.examples = 0
        self.bad_lines = 0
        self.first_bad_lines: list[int] = []
        self._problems_at: dict[int, int] = {}
        self._done = False

    def files(self) -> tuple[Path, ...]:
        """Every file the reader opens (the trace file alone)."""
        return (self.path,)

    @property
    def mended(self) -> MendedLines:
        """The trace lines read with lone surrogate escapes as U+FFFD, for the run's warnings."""
        return self._spans.mended

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
            if BadLine in map(type, chunk):
                yield [item if type(item) is BadLine else self._as_example(item) for item in chunk]  # type: ignore[arg-type]
                continue
            # The rows' four columns, transposed in C.
            ids, lines, records, outputs = map(list, zip(*chunk, strict=True))
            yield ExampleBatch(ids=ids, lines=lines, records=records, outputs=outputs)

    def __iter__(self) -> Iterator[Example | BadLine]:
        for item in self._items():
            yield item if type(item) is BadLine else self._as_example(item)  # type: ignore[arg-type]

    @staticmethod
    def _as_example(row: tuple[str, int, dict[str, Any], Any]) -> Example:
        return Example(id=row[0], line=row[1], fields=row[2], output=row[3])

    def _items(self) -> Iterator[Row | BadLine]:
        """Each example as (id, line, record, output), or the malformed example."""
        window = self._options.window
        # The open traces, each as one flat tuple (one span, the commonest) or list (see _unpacked): the number of
        # its last span, then each span packed (see otlpspans.pack) and its resource.
        pending: dict[str, tuple[Any, ...] | list[Any]] = {}
        # The trace of every span read, oldest first ("" for a late span); ``order[0]`` is span number ``front``. A
        # trace is complete when the entry of its last span leaves the window (those of its earlier spans are passed
        # over), so traces complete in the order of their last spans with nothing reordered per span.
        order: deque[str] = deque()
        front = 1
        # Completed traces: when each completed and where each of its spans was read (a repeat is refused), as one
        # string (see _completed); the oldest are forgotten first.
        recent: dict[str, str] = {}
        forget: deque[str] = deque()
        keep = RECENT_FACTOR * window
        lone = self._lone
        count = 0
        for group in self._spans.groups():
            for item in group:
                if isinstance(item, tuple):  # a JSON span, packed as read (see SpanFile)
                    trace, packed, resource = item
                elif isinstance(item, SpanProblem):
                    yield self._bad(item.where, "malformed_span", item.message)
                    continue
                else:  # a protobuf span
                    trace, packed, resource = item.trace_id, _pack(item), item.resource
                count += 1
                spans = pending.get(trace)
                if spans is None:
                    completed = recent.get(trace)
                    if completed is not None:
                        late = _unpacked_span(trace, packed, resource)
                        when, read_at = _completion(completed)
                        if late.span_id in read_at:
                            raise self._repeated(late, read_at[late.span_id])
                        order.append("")
                        yield self._bad(
                            late.where,
                            "late_span",
                            f"span {late.name!r} of trace {trace} arrived {count - when:,} spans after the trace was "
                            f"complete (traces.window is {window:,}); raise dataset.traces.window",
                        )
                        continue
                    pending[trace] = (count, packed, resource)
                elif isinstance(spans, tuple):
                    pending[trace] = [count, *spans[1:], packed, resource]
                else:
                    spans[0] = count
                    spans += (packed, resource)
                order.append(trace)
                ended = count - window
                while front <= ended:
                    oldest = order.popleft()
                    front += 1
                    entry = pending.get(oldest)
                    if entry is None or entry[0] != front - 1:
                        continue  # a span of a trace that has later ones, or a late span
                    del pending[oldest]
                    if len(entry) == 3:  # a trace of one span (the commonest): no list or dict of its spans
                        if lone and type(entry[1]) is bytes:
                            span_id, where, rows = self._lone_examples(oldest, entry[1], entry[2])
                        else:
                            one = _unpacked_span(oldest, entry[1], entry[2])
                            span_id, where, rows = one.span_id, one.where, self._examples([one])
                        recent[oldest] = f"{count} {span_id}:{where}"
                    else:
                        completed_spans = _unpacked(oldest, entry)
                        recent[oldest] = _completed(count, self._read_at(completed_spans))
                        rows = self._examples(completed_spans)
                    forget.append(oldest)
                    if len(recent) > keep:
                        del recent[forget.popleft()]
                    yield from rows
        for number, trace in enumerate(order, front):
            entry = pending.get(trace)
            if entry is not None and entry[0] == number:
                spans = _unpacked(trace, entry)
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
                or (self._filtered and not self._selected(span))
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
            fragments = _fragments(roots, by_id) if len(roots) > 1 else {}
            if _fragmented(fragments, by_id):
                # Selected when one of its tops is (the span its example would be rooted at cannot be told).
                return [self._partial(spans, by_id, roots, fragments)] if any(map(self._selected, roots)) else []
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

    def _partial(
        self, spans: list[Span], by_id: Mapping[str, Span], tops: list[Span], fragments: Mapping[str, str]
    ) -> BadLine:
        """The one malformed example (``partial_trace``) of a trace that lost spans between its examples' tops
        (:func:`_fragmented`). Read as several examples, each would be scored as a whole trace, when they may be the
        model calls of one agent whose span was dropped; so the trace is one example whose every metric is an
        ``error`` naming what is missing, never several that pass."""
        missing = sorted({parent for parent in fragments.values() if parent and parent not in by_id})
        first = min(spans, key=lambda span: span.where)
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return self._bad(
            first.where,
            "partial_trace",
            f"trace {first.trace_id} is partial: its {len(tops)} top-level GenAI spans are in {len(fragments)} "
            f"fragments, hanging from spans the file does not hold ({shown}), so whether they are one example or "
            "several cannot be told; export whole traces (a sampler or an exporter that drops spans?), or measure "
            "each model call alone (traces.select.unit: span)",
        )

    def _lone_examples(
        self, trace: str, packed: bytes, resource: dict[str, Any]
    ) -> tuple[str, int, list[Row | BadLine]]:
        """The span id, place and examples of a completed trace of one span, packed (see otlpspans.pack): mapped by
        lone_record when it can, without a Span; else as _examples maps it."""
        fields = orjson.loads(packed)
        span_id, _, name, start, end, attributes, events, error, _, where = fields
        if not events:
            try:
                record = lone_record(trace, span_id, name, start, end, attributes, error, resource, self._metadata)
            except MappingProblem as exc:
                return span_id, where, [self._malformed(where, trace, span_id, name, exc)]
            finally:
                if MENDS.found:
                    self._mended(where, trace, span_id, name)
            if record is not None:
                return span_id, where, [self._row(record, where)]
        return span_id, where, self._examples([span_of(trace, fields, resource)])

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
            return self._malformed(root.where, root.trace_id, root.span_id, root.name, exc)
        finally:
            if MENDS.found:
                self._mended(root.where, root.trace_id, root.span_id, root.name)
        return self._row(record, root.where)

    def _mended(self, where: int, trace: str, span_id: str, name: str) -> None:
        """Warnings for the attributes whose JSON text was read with lone surrogates as U+FFFD (see genaimap's
        ``MENDS``), at the example's place, naming its span. Limit: in a trace of several spans, the attribute may be
        on a span below the one named (the example's root)."""
        for key, count in taken_mends():
            place = f"{self.path}:{self._place(where)} (trace {trace} span {span_id} {name!r}, attribute {key})"
            self._spans.mended.add(place, count)

    def _row(self, record: dict[str, Any], where: int) -> Row:
        self.examples += 1
        id_key, output_key = self._id_key, self._output_key
        return (
            record.get(id_key, ABSENT) if id_key is not None else self._id(record),
            where,
            record,
            record.get(output_key, ABSENT) if output_key is not None else self._output(record),
        )

    def _malformed(self, where: int, trace: str, span_id: str, name: str, problem: MappingProblem) -> BadLine:
        return self._bad(where, "malformed_trace", f"trace {trace} span {span_id} ({name!r}): {problem}")

    def _bad(self, where: int, code: str, message: str) -> BadLine:
        self.examples += 1
        self.bad_lines += 1
        if len(self.first_bad_lines) < MALFORMED_SHOWN:
            self.first_bad_lines.append(where)
        seen = self._problems_at.get(where, 0)
        self._problems_at[where] = seen + 1
        return BadLine(
            id=f"line:{where}" if seen == 0 else f"line:{where}#{seen + 1}",
            line=where,
            code=code,
            message=f"{self.path}:{self._place(where)}: {message}",
        )

    def _place(self, where: int) -> str:
        return f"{where}" if self._spans.unit == "line" else f"{where} (protobuf message {where})"


def _pack(span: Span) -> bytes | Span:
    """A protobuf span packed as JSON spans are as they are read (see ``otlpspans.pack``)."""
    return pack(
        (
            span.span_id,
            span.parent_id,
            span.name,
            span.start,
            span.end,
            span.attributes,
            span.events,
            span.error,
            span.status_message,
            span.where,
        ),
        span.trace_id,
        span.resource,
    )


def _completed(when: int, read_at: dict[str, int]) -> str:
    """A completed trace as ``recent`` keeps it: ``"<when> <span id>:<where> ..."``, one object where a tuple, an
    integer and a dict of the span ids were four or more (tens of thousands of them are kept, see otlpspans.pack)."""
    if len(read_at) == 1:
        for span_id, where in read_at.items():
            return f"{when} {span_id}:{where}"
    return " ".join((str(when), *(f"{span_id}:{where}" for span_id, where in read_at.items())))


def _completion(text: str) -> tuple[int, dict[str, int]]:
    """What _completed wrote (span ids are hex: no spaces or colons in them)."""
    when, *places = text.split(" ")
    read_at: dict[str, int] = {}
    for place in places:
        span_id, _, where = place.partition(":")
        read_at[span_id] = int(where)
    return int(when), read_at


def _unpacked(trace: str, entry: tuple[Any, ...] | list[Any]) -> list[Span]:
    """The spans of an open trace's entry in ``pending``: ``(number of its last span, packed span, its resource)``
    for a trace of one span, ``[number of its last span, packed span, its resource, packed span, ...]`` for more: one
    or two objects where a list, a tuple per span and a dict of last numbers were."""
    return [_unpacked_span(trace, entry[index], entry[index + 1]) for index in range(1, len(entry), 2)]


def _unpacked_span(trace: str, item: bytes | Span, resource: dict[str, Any]) -> Span:
    """One span as otlpspans.pack left it (and its resource), read back."""
    if type(item) is not bytes:
        return item  # type: ignore[return-value]
    return span_of(trace, orjson.loads(item), resource)


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


def _fragmented(fragments: Mapping[str, str], by_id: Mapping[str, Span]) -> bool:
    """Whether a trace's top-level GenAI spans lie in two or more fragments (spans linked by parent ids the file
    holds; ``fragments``: :func:`_fragments` of them) and some fragment hangs from a span the file does not hold:
    its root, or a span between, was lost. Tops
    under one span of the file (side by side under a request's span, even one whose own parent is in another
    service's file) are one fragment: several examples, as always; so are fragments each rooted in the file."""
    return len(fragments) > 1 and any(parent and parent not in by_id for parent in fragments.values())


def _fragments(tops: list[Span], by_id: Mapping[str, Span]) -> dict[str, str]:
    """The fragments holding ``tops``: each one's top span id, and the parent id it hangs from ("" for a root).
    Parent ids that loop (no exporter writes them) are one fragment, keyed "" and hanging from nothing."""
    found: dict[str, str] = {}
    for span in tops:
        top, seen = span, {span.span_id}
        while (parent := by_id.get(top.parent_id)) is not None and parent.span_id not in seen:
            top = parent
            seen.add(top.span_id)
        if parent is not None:  # a loop
            found[""] = ""
        else:
            found[top.span_id] = top.parent_id
    return found


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
        # Read from messages the instrumentation did not capture, the calls are unknown, not none: absent and
        # listed, so a metric on them is content_not_captured, never a trajectory without a call.
        not_captured.add("output.tool_calls")
    elif alone and content.tool_call_free:
        output["tool_calls"] = []  # what tool_calls_from_messages finds in messages without a tool call part
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

    get = root.attributes.get
    # The first of these names the span has gives the provider (its value even if not text); one look-up when it
    # is the first.
    provider = get("gen_ai.provider.name", _NO_VALUE)
    if provider is _NO_VALUE:
        provider = get("gen_ai.system", _NO_VALUE)
        if provider is _NO_VALUE:
            provider = get("llm.provider")
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
        "metadata": {key: get(key, root.resource.get(key)) for key in metadata_keys} if metadata_keys else {},
        NOT_CAPTURED: sorted(not_captured) if not_captured else [],
    }
    return record


_NO_VALUE = object()
#: What checked_messages gives for messages not captured.
_NO_MESSAGES: tuple[None, bool] = (None, False)
_INPUT = "gen_ai.input.messages"
_OUTPUT = "gen_ai.output.messages"
_SYSTEM = "gen_ai.system_instructions"
_TOOLS = "gen_ai.tool.definitions"


def lone_record(
    trace_id: str,
    span_id: str,
    name: str,
    start: int,
    end: int,
    attributes: dict[str, Any],
    error: bool,
    resource: dict[str, Any],
    metadata_keys: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    """What trace_record gives for a trace of one span without events whose attribute names put it in the current
    conventions (``convention_of``: ``gen_ai``), or None for any other span. The commonest trace, mapped in one
    function from the span's fields, without a Span, a SpanContent or the branches for several spans; held to
    trace_record by tests/traces/test_lone_record.py (hypothesis: every record and every MappingProblem the same)."""
    plan = name_plan(attributes)
    if not plan[2]:
        return None
    request_model, response_model, response_id, usage, reasons = facts(attributes, plan)
    get = attributes.get
    # What _current reads, in its order (the first wrong-typed one is the problem reported); each value looked up
    # once (_NO_VALUE: absent, which a null value is not).
    input_value = get(_INPUT, _NO_VALUE)
    output_value = get(_OUTPUT, _NO_VALUE)
    messages, calls = checked_messages(input_value, _INPUT) if input_value is not _NO_VALUE else _NO_MESSAGES
    out_messages, out_calls = checked_messages(output_value, _OUTPUT) if output_value is not _NO_VALUE else _NO_MESSAGES
    system = checked_parts(get(_SYSTEM), _SYSTEM) if _SYSTEM in attributes else None
    tools = tool_definitions(structured_value(get(_TOOLS), _TOOLS), _TOOLS) if _TOOLS in attributes else None
    if reasons is None and out_messages:
        reasons = finish_reasons_of(out_messages)
    error_value = get("error.type")
    error_kind = str(error_value) if error_value is not None else "_OTHER" if error else None  # error_type()
    # not_captured is built in sorted order.
    not_captured: list[str] = []
    if messages is not None:
        inputs: dict[str, Any] = {"messages": messages, "system_instructions": system if system is not None else []}
    elif system is not None:
        not_captured.append("input.messages")
        inputs = {"system_instructions": system}
    else:
        not_captured += ("input.messages", "input.system_instructions")
        inputs = {}
    if tools is None:
        not_captured.append("input.tool_definitions")
    else:
        inputs["tool_definitions"] = tools
    inputs["model"] = request_model
    # The calls are read from the messages: unknown (None: absent and listed, as in trace_record) when the
    # instrumentation did not capture them; none when no part of them is a tool_call (see checked_messages).
    tool_calls = (
        None
        if messages is None or (out_messages is None and error_kind is None)
        else tool_calls_from_messages([*messages, *(out_messages or ())])
        if calls or out_calls
        else []
    )
    if reasons is None:
        reasons = []
    latency = (end - start) / 1e6 if end >= start > 0 else None
    # One dict display (the output's keys in trace_record's order) rather than a key at a time.
    output = {
        "text": text_of(out_messages[-1]) if out_messages else "",
        "messages": out_messages,
        "tool_calls": tool_calls,
        "finish_reasons": reasons,
        "model": response_model,
        "response_id": response_id,
        "usage": usage,
        "latency_ms": latency,
        "error_type": error_kind,
    }
    if out_messages is None:  # not captured: absent (the keys after them keep their order)
        del output["text"], output["messages"]
        if error_kind is None:
            not_captured += ("output.messages", "output.text")
    if tool_calls is None:
        del output["tool_calls"]
        not_captured.append("output.tool_calls")
    provider = get("gen_ai.provider.name", _NO_VALUE)
    if provider is _NO_VALUE:
        provider = get("gen_ai.system", _NO_VALUE)
        if provider is _NO_VALUE:
            provider = get("llm.provider")
    operation = get("gen_ai.operation.name")
    return {
        "id": f"{trace_id}:{span_id}",
        "trace_id": trace_id,
        "span_id": span_id,
        "name": name,
        "operation": operation if isinstance(operation, str) else None,
        "provider": provider if isinstance(provider, str) else None,
        "start_time_unix_nano": start,
        "convention": GEN_AI,
        "input": inputs,
        "output": output,
        "metadata": {key: get(key, resource.get(key)) for key in metadata_keys} if metadata_keys else {},
        NOT_CAPTURED: not_captured,
    }


def _summed(usages: list[dict[str, int]]) -> dict[str, int]:
    """Each count summed over the model calls, kept only when every call reported it: a sum over the calls that did
    would undercount (a budget passing on tokens never measured); left out, a metric reading it is ``not_recorded``."""
    total: dict[str, int] = {}
    for usage in usages:
        for key, value in usage.items():
            total[key] = total.get(key, 0) + value
    return {key: value for key, value in total.items() if all(key in usage for usage in usages)}


__all__ = ["OtlpReader", "trace_record"]
