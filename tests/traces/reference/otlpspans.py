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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from evalglass.engine.datasets.dataset import _HashingThread, _ignore, _lines, _LineTooLong
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import not_json
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

    def __init__(self, path: Path, *, hash_bytes: bool = True, max_message: int = MAX_MESSAGE) -> None:
        self.path = path
        self._hash = hashlib.sha256() if hash_bytes else None
        self._max = max_message
        #: "json" or "protobuf", once the first byte was read.
        self.encoding: str | None = None
        #: What one unit of ``where`` is called in messages.
        self.unit = "line"

    @property
    def sha256_hex(self) -> str:
        if self._hash is None:
            raise RuntimeError("this span file was opened with hash_bytes=False")
        return self._hash.hexdigest()

    def __iter__(self) -> Iterator[Span | SpanProblem]:
        handle = open_regular(self.path, what="trace file", missing_fix="fix `dataset.path` in the config")
        hashing = contextlib.nullcontext(_ignore) if self._hash is None else _HashingThread(self._hash.update)
        with handle, hashing as update:
            try:
                first = handle.read(1)
                handle.seek(0)
                if first[:1] == b"{" or first[:1].isspace():
                    self.encoding = "json"
                    yield from self._json(handle, update)
                else:
                    self.encoding = "protobuf"
                    self.unit = "message"
                    yield from self._protobuf(handle, update, first)
            except OSError as exc:
                raise unreadable(self.path, "trace file", exc) from None

    # -- OTLP/JSON lines ------------------------------------------------------------------------------------------

    def _json(self, handle: BinaryIO, update: Callable[[bytes], None]) -> Iterator[Span | SpanProblem]:
        number = 0
        try:
            for lines, _ in _lines(handle, update, CHUNK, self._max, what="trace file", where=str(self.path)):
                for raw in lines:
                    number += 1
                    if not raw.strip():
                        continue
                    try:
                        document = orjson.loads(raw)
                    except orjson.JSONDecodeError as exc:
                        yield SpanProblem(number, not_json(raw, exc))
                        continue
                    yield from _json_document(document, number)
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
    ) -> Iterator[Span | SpanProblem]:
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
            yield from self._message(request_type, data, 1, 0)
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
            yield from self._message(request_type, data, number, offset)
            offset += 4 + size

    def _truncated(self, number: int, offset: int, why: str) -> SetupError:
        return SetupError(
            f"protobuf message {number} at byte {offset:,} is truncated ({why})",
            where=f"{self.path}:byte {offset:,}",
            fix="the file was cut short (a copy or an export that did not finish); export it again",
        )

    def _message(self, request_type: Any, data: bytes, number: int, offset: int) -> Iterator[Span | SpanProblem]:
        from google.protobuf.message import DecodeError

        try:
            request = request_type.FromString(data)
        except DecodeError as exc:
            raise SetupError(
                f"protobuf message {number} at byte {offset:,} is not an OTLP trace export ({exc})",
                where=f"{self.path}:byte {offset:,}",
                fix="the file is damaged or is not OTLP protobuf traces; export it again",
            ) from None
        yield from _proto_request(request, number)


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


def _json_document(document: Any, number: int) -> Iterator[Span | SpanProblem]:
    if type(document) is not dict or "resourceSpans" not in document:
        if type(document) is dict and ("resourceLogs" in document or "resourceMetrics" in document):
            yield SpanProblem(number, "holds logs or metrics, not traces")
        else:
            yield SpanProblem(number, "is not an OTLP traces object (no resourceSpans)")
        return
    try:
        for resource_spans in document["resourceSpans"] or ():
            resource = _json_attributes((resource_spans.get("resource") or {}).get("attributes"))
            for scope_spans in resource_spans.get("scopeSpans") or ():
                for raw in scope_spans.get("spans") or ():
                    try:
                        yield _json_span(raw, resource, number)
                    except _Bad as exc:
                        yield SpanProblem(number, f"{_span_label(raw)}: {exc}")
    except (_Bad, AttributeError, TypeError) as exc:
        yield SpanProblem(number, f"is not a well-formed OTLP traces object ({exc})")


def _span_label(raw: Any) -> str:
    name = raw.get("name") if type(raw) is dict else None
    return f"span {name!r}" if isinstance(name, str) else "a span"


def _json_span(raw: Any, resource: dict[str, Any], number: int) -> Span:
    if type(raw) is not dict:
        raise _Bad("is not an object")
    get = raw.get
    trace_id = get("traceId")
    # The common case (32 and 16 lowercase hex digits, as the exporters write them) is checked in one step.
    if not (type(trace_id) is str and len(trace_id) == 32 and _is_lower_hex(trace_id) and trace_id != _ZERO_TRACE):
        trace_id = _json_id(trace_id, "traceId", 16)
        if not trace_id:
            raise _Bad("has no trace id (traceId)")
    span_id = get("spanId")
    if not (type(span_id) is str and len(span_id) == 16 and _is_lower_hex(span_id) and span_id != _ZERO_SPAN):
        span_id = _json_id(span_id, "spanId", 8)
        if not span_id:
            raise _Bad("has no span id (spanId)")
    parent = get("parentSpanId")
    if parent is not None:
        parent = _json_id(parent, "parentSpanId", 8)
    name = get("name", "")
    if type(name) is not str:
        raise _Bad("name is not a string")
    status = get("status")
    code = status.get("code", 0) if type(status) is dict else 0
    events = get("events")
    return Span(
        trace_id,
        span_id,
        parent or "",
        name,
        _json_time(get("startTimeUnixNano"), "startTimeUnixNano"),
        _json_time(get("endTimeUnixNano"), "endTimeUnixNano"),
        _json_attributes(get("attributes")),
        [(str(event.get("name", "")), _json_attributes(event.get("attributes"))) for event in events] if events else [],
        code == STATUS_ERROR or code == "STATUS_CODE_ERROR",
        str(status.get("message", "")) if type(status) is dict else "",
        resource,
        number,
    )


_HEX = frozenset("0123456789abcdef")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def _is_lower_hex(text: str) -> bool:
    return _HEX.issuperset(text)


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
        # Text values (most of them) are taken inline; anything else is decoded (and checked) by _json_value.
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
            return int(inner)
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
                return int(inner)
    elif kind == "doubleValue":
        if type(inner) in (int, float):
            return float(inner)
        if inner in ("NaN", "Infinity", "-Infinity"):
            return float(inner)  # kept as the float it is, as a Parquet cell's NaN is (never null)
    elif kind == "arrayValue":
        if type(inner) is dict:
            values = inner.get("values") or ()
            return [_json_value(item, key) if type(item) is dict else _refuse(key, kind) for item in values]
    elif kind == "kvlistValue":
        if type(inner) is dict:
            return _json_attributes(inner.get("values"))
    elif kind == "bytesValue":
        if type(inner) is str:
            return inner
    else:
        raise _Bad(f"attribute {key!r} has a value of unknown kind {kind!r}")
    return _refuse(key, kind)


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
        return value.double_value  # a NaN or an infinity kept as it is
    if kind == "array_value":
        return [_proto_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _proto_attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None
