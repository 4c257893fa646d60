"""Spans from an OTLP trace file, streamed: OTLP/JSON lines or length-prefixed OTLP protobuf, hashed as read.

Two encodings, told apart by the file's first byte (no OTLP file can start with the other's):

- **OTLP/JSON lines**: one ``TracesData`` / ``ExportTraceServiceRequest`` JSON object per line, as the
  OpenTelemetry file exporters (the SDK's and the collector's ``format: json``) write them. Parsed with orjson and
  read by the OTLP JSON encoding's rules (hex trace and span ids, 64-bit integers as strings, enums as numbers or
  names); protobuf's own JSON mapping (base64 ids) is accepted too.
- **OTLP protobuf**: messages each preceded by their length as a 4-byte big-endian integer (the collector's file
  exporter, ``format: proto``), or a file holding one bare ``ExportTraceServiceRequest`` (an OTLP/HTTP body).
  Decoded by the ``opentelemetry-proto`` package (the ``traces`` extra).

A span that cannot be read (no trace id, an attribute value whose encoding contradicts its type) is a
:class:`SpanProblem`, which the dataset counts as a malformed example at its line (JSON) or message (protobuf); a
file that cannot be read at all (truncated protobuf, a message or line over :data:`MAX_MESSAGE`) is one
:class:`~evalglass.errors.SetupError` naming the file and the byte or line.

Memory is bounded by one line or message at a time (at most :data:`MAX_MESSAGE` bytes), whatever the file's size.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from evalglass.engine.datasets.dataset import _HashingThread, _ignore, _lines, _LineTooLong, split_long_lines
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import (
    JsonRefused,
    MendedLines,
    loads_mending,
    not_json,
    text_start,
    wide_encoding,
    without_bom,
)
from evalglass.readers.jsonvalues import non_finite
from evalglass.readers.userfiles import open_regular, unreadable

#: The longest JSON line or protobuf message read: a longer one (or a file of zeros) stops the run there.
MAX_MESSAGE = 64 << 20
CHUNK = 1 << 20
#: ``dependencies.install_hint`` cannot tell which distribution of the ``opentelemetry`` namespace is meant.
TRACES_HINT = "install the traces extra: pip install 'evalglass[traces]'"
#: OTLP's status code for an error (``STATUS_CODE_ERROR``).
STATUS_ERROR = 2


@dataclass(slots=True)
class Span:
    """One span as the mapping reads it: ids as lowercase hex, times in Unix nanoseconds, attribute values as
    JSON values (arrays as lists, key-value lists as dicts, bytes as base64 text)."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: int
    end: int
    attributes: dict[str, Any]
    #: (name, attributes) of each span event, in order.
    events: list[tuple[str, dict[str, Any]]]
    error: bool
    status_message: str
    resource: dict[str, Any]
    #: The line (JSON) or message number (protobuf) the span was read from, 1-based.
    where: int


@dataclass(frozen=True, slots=True)
class SpanProblem:
    """A span (or a line) that cannot be read, at its line or message."""

    where: int
    message: str


class _Bad(Exception):
    pass


class SpanFile:
    """Iterate once over a trace file's spans; afterwards ``fingerprint`` is the SHA-256 of its bytes."""

    def __init__(
        self, path: Path, *, hash_bytes: bool = True, max_message: int = MAX_MESSAGE, packed: bool = False
    ) -> None:
        self.path = path
        self._hash = hashlib.sha256() if hash_bytes else None
        self._max = max_message
        #: JSON spans come as a PackedSpan (see ``pack``), without a Span: the dataset packs every span it
        #: reads, and a Span made only to be packed is work per span for nothing. Protobuf spans stay Spans.
        self._packed = packed
        #: "json" or "protobuf", once the first byte was read.
        self.encoding: str | None = None
        #: What one unit of ``where`` is called in messages.
        self.unit = "line"
        #: The JSON lines read with lone surrogate escapes as U+FFFD, for the run's warnings.
        self.mended = MendedLines(str(path))

    @property
    def sha256_hex(self) -> str:
        if self._hash is None:
            raise RuntimeError("this span file was opened with hash_bytes=False")
        return self._hash.hexdigest()

    def __iter__(self) -> Iterator[Span | SpanProblem | PackedSpan]:
        for group in self.groups():
            yield from group

    def groups(self) -> Iterator[list[Span | SpanProblem | PackedSpan]]:
        """The spans one JSON line or protobuf message holds, a list at a time: the reader's loop takes them without
        a generator resumed per span."""
        handle = open_regular(self.path, what="trace file", missing_fix="fix `dataset.path` in the config")
        hashing = contextlib.nullcontext(_ignore) if self._hash is None else _HashingThread(self._hash.update)
        with handle, hashing as update:
            try:
                start = handle.read(HEAD)
                handle.seek(0)
                kind = file_kind(start, self._max)
                if kind == "json":
                    self.encoding = "json"
                    yield from self._json(handle, update)
                elif kind == "wide":
                    text_start(start, what="trace file", where=str(self.path))  # raises: the JSONL readers' line
                else:
                    self.encoding = "protobuf"
                    self.unit = "message"
                    yield from self._protobuf(handle, update, start[:1])
            except OSError as exc:
                raise unreadable(self.path, "trace file", exc) from None

    # -- OTLP/JSON lines ------------------------------------------------------------------------------------------

    def _json(
        self, handle: BinaryIO, update: Callable[[bytes], None]
    ) -> Iterator[list[Span | SpanProblem | PackedSpan]]:
        number = 0
        packed = self._packed
        try:
            for lines, _ in _lines(
                handle, update, CHUNK, self._max, split_long_lines, what="trace file", where=str(self.path)
            ):
                for raw in lines:
                    number += 1
                    if not raw.strip():
                        continue
                    try:
                        document = loads_mending(raw, self.mended, number)
                    except orjson.JSONDecodeError as exc:
                        yield [SpanProblem(number, not_json(raw, exc))]
                        continue
                    except JsonRefused as exc:  # only a line read again for its lone surrogates is checked so
                        yield [SpanProblem(number, str(exc))]
                        continue
                    yield _json_document(document, number, packed)
                    del document
        except _LineTooLong:
            raise SetupError(
                f"line is longer than {self._max:,} bytes",
                where=f"{self.path}:{number + 1}",
                fix="an OTLP/JSON trace file holds one JSON object per line, as the file exporters write it",
            ) from None

    # -- OTLP protobuf --------------------------------------------------------------------------------------------

    def _protobuf(
        self, handle: BinaryIO, update: Callable[[bytes], None], first: bytes
    ) -> Iterator[list[Span | SpanProblem | PackedSpan]]:
        request_type = _request_type(self.path)
        if first == b"\x0a":
            # A bare ExportTraceServiceRequest (its first field, resource_spans, has tag 0x0a): a length prefix
            # starting with 0x0a would announce more than MAX_MESSAGE bytes, so the two cannot be confused.
            data = _read_exactly(handle, self._max + 1)
            update(data)
            if len(data) > self._max:
                raise SetupError(
                    f"a single OTLP protobuf message larger than {self._max:,} bytes",
                    where=str(self.path),
                    fix="write traces with the collector's file exporter (format: proto), which frames each batch",
                )
            yield self._message(request_type, data, 1, 0)
            return
        offset = 0
        number = 0
        while True:
            prefix = _read_exactly(handle, 4)
            update(prefix)
            if not prefix:
                return
            number += 1
            if len(prefix) < 4:
                raise self._truncated(number, offset, f"its 4-byte length prefix has {len(prefix)}")
            size = int.from_bytes(prefix, "big")
            if size == 0 or size > self._max:
                what = "empty" if size == 0 else f"announced as {size:,} bytes, over the {self._max:,}-byte limit"
                raise SetupError(
                    f"protobuf message {number} at byte {offset:,} is {what}: this is not a length-prefixed OTLP "
                    "protobuf trace file",
                    where=f"{self.path}:byte {offset:,}",
                    fix="export traces as OTLP/JSON lines or with the collector's file exporter (format: proto)",
                )
            data = _read_exactly(handle, size)
            update(data)
            if len(data) < size:
                raise self._truncated(number, offset, f"it announces {size:,} bytes and {len(data):,} follow")
            yield self._message(request_type, data, number, offset)
            offset += 4 + size

    def _truncated(self, number: int, offset: int, why: str) -> SetupError:
        return SetupError(
            f"protobuf message {number} at byte {offset:,} is truncated ({why})",
            where=f"{self.path}:byte {offset:,}",
            fix="the file was cut short (a copy or an export that did not finish); export it again",
        )

    def _message(
        self, request_type: Any, data: bytes, number: int, offset: int
    ) -> list[Span | SpanProblem | PackedSpan]:
        from google.protobuf.message import DecodeError

        try:
            request = request_type.FromString(data)
        except DecodeError as exc:
            raise SetupError(
                f"protobuf message {number} at byte {offset:,} is not an OTLP trace export ({exc})",
                where=f"{self.path}:byte {offset:,}",
                fix="the file is damaged or is not OTLP protobuf traces; export it again",
            ) from None
        return list(_proto_request(request, number))


#: How much of a trace file's start :func:`file_kind` reads.
HEAD = 64 << 10
#: Bytes no JSON text holds raw (JSON allows only tab, LF and CR of the control characters, as whitespace); every
#: OTLP protobuf span holds one, the 0x10 length of its trace id.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def file_kind(start: bytes, limit: int) -> str:
    """``"json"``, ``"protobuf"`` or ``"wide"`` (JSON text in UTF-16 or UTF-32) for a trace file starting with
    ``start`` (its first :data:`HEAD` bytes), whose protobuf messages are at most ``limit`` bytes.

    A length-prefixed protobuf file starts with a byte of 0 to 4 (no message is over 64 MiB); a bare
    ``ExportTraceServiceRequest`` with 0x0a, the tag of its first field. JSON lines start with ``{`` or whitespace,
    after an optional UTF-8 byte order mark; so only a file starting with a line feed is both: it is JSON when its
    first non-blank byte is ``{`` (or it is blank) and its start holds no raw control byte (every protobuf span's
    trace id is preceded by one, 0x10). Limit: a bare request whose first 64 KiB hold no span and happen to read so
    is taken for JSON.

    Text in UTF-16 or UTF-32 (:func:`~evalglass.readers.jsonsource.wide_encoding`) would otherwise be decoded as
    protobuf and refused with a message about lengths: it is told by its start, unless that start is also a
    well-framed first protobuf message (a 4-byte length within ``limit`` followed by the 0x0a tag: the UTF-32BE
    byte order mark announces 65,279 bytes, but UTF-32 text has 0 where the tag would be)."""
    text = without_bom(start)
    first = text[:1]
    if first == b"{" or (first.isspace() and first != b"\n"):
        return "json"
    if first == b"\n" and text.lstrip(b" \t\r\n")[:1] in (b"{", b"") and _CONTROL.search(text) is None:
        return "json"  # JSON lines, or blank lines only (an empty export, as before)
    if wide_encoding(start) is None:
        return "protobuf"
    framed = 0 < int.from_bytes(start[:4], "big") <= limit and start[4:5] == b"\n"
    # A bare request whose first resource is empty (0x0a 0x00) reads as UTF-16LE only when followed by text.
    bare = first == b"\n" and start[3:4] != b"\x00"
    return "protobuf" if framed or bare else "wide"


def _read_exactly(handle: BinaryIO, size: int) -> bytes:
    """Up to ``size`` bytes, fewer only at the end of the file (a raw read may return less than asked)."""
    data = handle.read(size)
    if data is None or len(data) >= size or not data:
        return data or b""
    pieces = [data]
    got = len(data)
    while got < size:
        more = handle.read(size - got)
        if not more:
            break
        pieces.append(more)
        got += len(more)
    return b"".join(pieces)


def _request_type(path: Path) -> Any:
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise SetupError(
            "reading OTLP protobuf traces needs the opentelemetry-proto package", where=str(path), fix=TRACES_HINT
        ) from None
    return ExportTraceServiceRequest


# -- JSON decoding ------------------------------------------------------------------------------------------------


def _json_document(document: Any, number: int, packed: bool = False) -> list[Span | SpanProblem | PackedSpan]:
    if type(document) is not dict or "resourceSpans" not in document:
        if type(document) is dict and ("resourceLogs" in document or "resourceMetrics" in document):
            return [SpanProblem(number, "holds logs or metrics, not traces")]
        return [SpanProblem(number, "is not an OTLP traces object (no resourceSpans)")]
    found: list[Span | SpanProblem | PackedSpan] = []
    try:
        for resource_spans in document["resourceSpans"] or ():
            resource = _json_attributes((resource_spans.get("resource") or {}).get("attributes"))
            for scope_spans in resource_spans.get("scopeSpans") or ():
                for raw in scope_spans.get("spans") or ():
                    try:
                        if packed:
                            trace_id, fields = _json_fields(raw, number)
                            found.append((trace_id, pack(fields, trace_id, resource), resource))
                        else:
                            found.append(_json_span(raw, resource, number))
                    except _Bad as exc:
                        found.append(SpanProblem(number, f"{_span_label(raw)}: {exc}"))
    except (_Bad, AttributeError, TypeError) as exc:
        found.append(SpanProblem(number, f"is not a well-formed OTLP traces object ({exc})"))
    return found


def _span_label(raw: Any) -> str:
    name = raw.get("name") if type(raw) is dict else None
    return f"span {name!r}" if isinstance(name, str) else "a span"


#: A span as the dataset keeps it while its trace is open: its trace id, the span packed (see ``pack``) and its
#: resource.
PackedSpan = tuple[str, "bytes | Span", dict[str, Any]]
#: A span's fields but its trace id and resource, as ``pack`` writes them: span id, parent id, name, start, end,
#: attributes, events as (name, attributes), error, status message, where.
Fields = tuple[str, str, str, int, int, dict[str, Any], list[tuple[str, dict[str, Any]]], bool, str, int]


def span_of(trace_id: str, fields: Fields | list[Any], resource: dict[str, Any]) -> Span:
    """The Span of a span's fields (as ``_json_fields`` gives them or ``pack`` wrote them, read back)."""
    span_id, parent, name, start, end, attributes, events, error, message, where = fields
    return Span(
        trace_id,
        span_id,
        parent,
        name,
        start,
        end,
        attributes,
        [(event[0], event[1]) for event in events] if events else [],
        error,
        message,
        resource,
        where,
    )


def pack(fields: Fields, trace_id: str, resource: dict[str, Any]) -> bytes | Span:
    """A span's fields but its trace id and resource (shared by the spans of its batch) as one JSON buffer, or the
    span as a Span when a value cannot be written as JSON exactly (an integer beyond 64 bits).

    Why: the window holds about ``traces.window`` spans for as long as it takes to read that many more. As objects
    (the span, its attribute dict, a string per value) they are tens of thousands of small long-lived objects among
    which every later line's parse is allocated, and that scatter, not the work, was most of the import's time
    beyond its floor (BENCHMARKS.md, issue 31). One buffer a span is one allocation (outside the small-object pools
    once over 512 bytes, as a span with its content is); it is read back with orjson when the trace completes, with
    the same values (JSON holds each of them exactly: text, booleans, null, 64-bit integers and floats, which orjson
    writes as the shortest text that reads back the same; an array or key-value list nested deeper than orjson
    writes, 255 levels, keeps the span as it is too, and so does a NaN or an infinity, which orjson writes as null),
    so the examples do not change.
    """
    try:
        buffer = orjson.dumps(fields)
    except orjson.JSONEncodeError:
        return span_of(trace_id, fields, resource)
    if b"null" in buffer and non_finite(fields) is not None:
        return span_of(trace_id, fields, resource)  # a NaN or an infinity, which orjson writes as null
    # A copy of its exact size: orjson leaves its output in the buffer it wrote into, 4-8 KB whatever the length
    # (measured with tracemalloc, orjson 3.13), which for 10,000 waiting spans is 40 MB instead of 9.
    return memoryview(buffer).tobytes()


def _json_span(raw: Any, resource: dict[str, Any], number: int) -> Span:
    trace_id, fields = _json_fields(raw, number)
    return span_of(trace_id, fields, resource)


def _json_fields(raw: Any, number: int) -> tuple[str, Fields]:
    """A JSON span's trace id and its other fields but the resource (see ``Fields``)."""
    if type(raw) is not dict:
        raise _Bad("is not an object")
    get = raw.get
    trace_id = get("traceId")
    span_id = get("spanId")
    # The common case (32 and 16 lowercase hex digits, as the exporters write them) is checked in one step for both
    # (a regular expression's call costs more than its 48 characters); else each as before, in the same order.
    if not (
        type(trace_id) is str
        and type(span_id) is str
        and len(trace_id) == 32
        and _HEX_IDS(trace_id + span_id)
        and trace_id != _ZERO_TRACE
        and span_id != _ZERO_SPAN
    ):
        if not (type(trace_id) is str and _HEX_TRACE(trace_id) and trace_id != _ZERO_TRACE):
            trace_id = _json_id(trace_id, "traceId", 16)
            if not trace_id:
                raise _Bad("has no trace id (traceId)")
        if not (type(span_id) is str and _HEX_SPAN(span_id) and span_id != _ZERO_SPAN):
            span_id = _json_id(span_id, "spanId", 8)
            if not span_id:
                raise _Bad("has no span id (spanId)")
    parent = get("parentSpanId")
    if parent is not None and not (type(parent) is str and _HEX_SPAN(parent) and parent != _ZERO_SPAN):
        parent = _json_id(parent, "parentSpanId", 8)
    name = get("name", "")
    if type(name) is not str:
        raise _Bad("name is not a string")
    status = get("status")
    # Most spans' status is empty (unset): no code, no message.
    if status and type(status) is dict:
        code = status.get("code", 0)
        message = str(status.get("message", ""))
    else:
        code, message = 0, ""
    events = get("events")
    # Times are 64-bit integers written as text; anything else is checked by _json_time.
    start = get("startTimeUnixNano")
    end = get("endTimeUnixNano")
    return trace_id, (
        span_id,
        parent or "",
        name,
        int(start) if type(start) is str and start.isdecimal() else _json_time(start, "startTimeUnixNano"),
        int(end) if type(end) is str and end.isdecimal() else _json_time(end, "endTimeUnixNano"),
        _json_attributes(get("attributes")),
        [(str(event.get("name", "")), _json_attributes(event.get("attributes"))) for event in events] if events else [],
        code == STATUS_ERROR or code == "STATUS_CODE_ERROR",
        message,
        number,
    )


#: Whether a text is a trace or span id as the exporters write it (lowercase hex of its size): one regular
#: expression, cheaper than a set test over its characters.
_HEX_TRACE = re.compile("[0-9a-f]{32}").fullmatch
_HEX_SPAN = re.compile("[0-9a-f]{16}").fullmatch
_HEX_IDS = re.compile("[0-9a-f]{48}").fullmatch
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def _json_id(value: Any, key: str, size: int) -> str:
    """A trace or span id as lowercase hex ('' for none): OTLP/JSON writes hex; protobuf's JSON mapping, base64."""
    if value is None or value == "":
        return ""
    if type(value) is not str:
        raise _Bad(f"{key} is not a string")
    if len(value) == 2 * size:
        try:
            int(value, 16)
        except ValueError:
            raise _Bad(f"{key} {value!r} is not hex") from None
        text = value.lower()
    else:
        try:
            decoded = base64.b64decode(value, validate=True)
        except binascii.Error:
            raise _Bad(f"{key} {value!r} is neither {2 * size} hex digits nor base64") from None
        if len(decoded) != size:
            raise _Bad(f"{key} {value!r} is not {size} bytes")
        text = decoded.hex()
    return "" if text.count("0") == len(text) else text


def _json_time(value: Any, key: str) -> int:
    if value is None:
        return 0
    if type(value) is int:
        return value
    if type(value) is str:
        try:
            return int(value)
        except ValueError:
            pass
    raise _Bad(f"{key} is not an integer")


def _json_attributes(items: Any) -> dict[str, Any]:
    if not items:
        return {}
    try:
        # Text values (most of them), integers written as decimal text (the next most common: ASCII digits; other
        # scripts' are refused) and an array of one text (finish reasons) are taken inline; anything else is decoded
        # (and checked) by _json_value, which reads such an integer and such an array the same way.
        return {
            item["key"]: text
            if type(text := (value := item["value"]).get("stringValue")) is str
            else int(text)
            if type(text := value.get("intValue")) is str and text.isdecimal() and text.isascii()
            else [text]
            if len(value) == 1
            and type(inner := value.get("arrayValue")) is dict
            and type(values := inner.get("values")) is list
            and len(values) == 1
            and type(first := values[0]) is dict
            and len(first) == 1
            and type(text := first.get("stringValue")) is str
            else _json_value(value, item["key"])
            for item in items
        }
    except ValueError:
        # Decimal text too long for int() (over sys.get_int_max_str_digits()): _json_value refuses it, naming the key.
        return _json_attributes_each(items)
    except (AttributeError, KeyError, TypeError):
        raise _Bad("has an attribute that is not a {key, value} object") from None


def _json_attributes_each(items: Any) -> dict[str, Any]:
    """_json_attributes with every value but text decoded by _json_value (the same values; its errors)."""
    try:
        return {
            item["key"]: text
            if type(text := (value := item["value"]).get("stringValue")) is str
            else _json_value(value, item["key"])
            for item in items
        }
    except (AttributeError, KeyError, TypeError):
        raise _Bad("has an attribute that is not a {key, value} object") from None


def _json_value(value: dict[str, Any], key: str) -> Any:
    """An OTLP/JSON AnyValue as a JSON value; an encoding that contradicts its type is refused, naming the key."""
    inner = value.get("intValue")
    if type(inner) is str:  # the next most common: a 64-bit integer, written as text
        try:
            return _decimal(inner)
        except ValueError:
            return _refuse(key, "intValue")
    if not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "stringValue":
        if type(inner) is str:
            return inner
    elif kind == "boolValue":
        if type(inner) is bool:
            return inner
    elif kind == "intValue":
        if type(inner) is int:
            return inner
        if type(inner) is str:
            with contextlib.suppress(ValueError):
                return _decimal(inner)
    elif kind == "doubleValue":
        if type(inner) in (int, float):
            return float(inner)
        if inner in ("NaN", "Infinity", "-Infinity"):
            # OTLP/JSON's text for a double JSON cannot hold: kept as the float it is, as a Parquet cell's NaN is
            # (never null, which it is not): a metric reading it is told it is not JSON, the gold binds it as it is.
            return float(inner)
    elif kind == "arrayValue":
        if type(inner) is dict:
            found = []
            for item in inner.get("values") or ():
                if type(item) is not dict:
                    _refuse(key, kind)
                # An element that is only text (most arrays: finish reasons, stop sequences) is taken inline.
                found.append(
                    text if len(item) == 1 and type(text := item.get("stringValue")) is str else _json_value(item, key)
                )
            return found
    elif kind == "kvlistValue":
        if type(inner) is dict:
            return _json_attributes(inner.get("values"))
    elif kind == "bytesValue":
        if type(inner) is str:
            return inner
    else:
        raise _Bad(f"attribute {key!r} has a value of unknown kind {kind!r}")
    return _refuse(key, kind)


_DECIMAL = re.compile(r"-?[0-9]+").fullmatch


def _decimal(text: str) -> int:
    """An OTLP ``intValue`` written as text (JSON's way with 64-bit integers): ASCII decimal digits, else ValueError.
    ``int()`` alone also took ``"1_000"``, ``" 12 "`` and other scripts' digits (``"١٢"``), which no exporter writes,
    so a budget measured a count the file does not spell. (A wider integer than int64 is read, as Python reads it.)"""
    if _DECIMAL(text) is None:
        raise ValueError(text)
    return int(text)


def _refuse(key: str, kind: str) -> Any:
    raise _Bad(f"attribute {key!r}: its {kind} does not hold a value of that type")


# -- protobuf decoding --------------------------------------------------------------------------------------------


def _proto_request(request: Any, number: int) -> Iterator[Span | SpanProblem]:
    for resource_spans in request.resource_spans:
        resource = _proto_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for raw in scope_spans.spans:
                trace_id = raw.trace_id.hex()
                if not trace_id.strip("0"):
                    yield SpanProblem(number, f"span {raw.name!r}: has no trace id (trace_id)")
                    continue
                span_id = raw.span_id.hex()
                if not span_id.strip("0"):
                    yield SpanProblem(number, f"span {raw.name!r}: has no span id (span_id)")
                    continue
                if len(trace_id) != 32 or len(span_id) != 16:
                    yield SpanProblem(number, f"span {raw.name!r}: its trace or span id has the wrong length")
                    continue
                parent = raw.parent_span_id.hex()
                yield Span(
                    trace_id,
                    span_id,
                    parent if parent.strip("0") else "",
                    raw.name,
                    raw.start_time_unix_nano,
                    raw.end_time_unix_nano,
                    _proto_attributes(raw.attributes),
                    [(event.name, _proto_attributes(event.attributes)) for event in raw.events],
                    raw.status.code == STATUS_ERROR,
                    raw.status.message,
                    resource,
                    number,
                )


def _proto_attributes(items: Any) -> dict[str, Any]:
    return {item.key: _proto_value(item.value) for item in items}


def _proto_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value  # a NaN or an infinity kept as it is, as in OTLP/JSON (_json_value)
    if kind == "array_value":
        return [_proto_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _proto_attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None
