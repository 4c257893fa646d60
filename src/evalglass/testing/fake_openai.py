"""A small, real OpenAI-compatible HTTP server for tests and benchmarks (and the base of the native APIs' fakes,
``fake_anthropic`` and ``fake_gemini``, which change only the dialect: routes, bodies, error shapes).

It speaks just enough HTTP/1.1 (keep-alive, Content-Length and chunked request bodies) for the ``openai`` SDK to
talk to ``POST /v1/chat/completions``, runs on an asyncio loop (so many slow requests are served concurrently, not
one after another) and records every request it sees.

Use it in a test::

    with FakeOpenAI(latency=0.01) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        ...
        assert server.request_count == 3
        assert server.max_in_flight <= 8

Or as a process, for benchmarks::

    python -m evalglass.testing.fake_openai --port 0 --latency 0.05   # or fake_anthropic, fake_gemini
    # prints "listening on http://127.0.0.1:PORT/v1" (gemini: /v1beta) on its first stdout line

Behaviour per request
---------------------
Each request is answered by one *step*. The step is chosen, in this order, by

1. the server-wide script (``server.script("500", "ok")``): a FIFO queue consumed one step per request;
2. a directive in the last user message: ``[[behaviour:STEP,STEP,...]]``. The k-th request whose last user message
   is exactly the same text uses the k-th step; the last step repeats. ``[[behaviour:500,500,ok]]`` fails twice
   then answers, which is how retries are tested under concurrency;
3. ``default`` (``"ok"`` unless set).

Steps:

``ok``                answer after the server-wide ``latency``
``slow:SECONDS``      answer after SECONDS instead
``hang``              never answer (until the server stops); for client timeouts
``429`` / ``429:S``   HTTP 429, with ``Retry-After: S`` when S is given
``NNN``               any other HTTP status with an OpenAI-style JSON error body (``500``, ``400`` ...);
                      ``401`` quotes the bearer token back, as the real service does
``malformed``         HTTP 200, ``application/json``, body that is not JSON
``text:NNN``          HTTP NNN whose body is the reply text, not JSON (a proxy's or gateway's error page)
``drop``              read the request and close the connection without a response

The answer text comes from ``reply``: a callable given the parsed request body, a mapping from the last user message
(directives removed) to a reply, or by default an echo of that message (directives removed).

Tool calls (an agent's turns)
-----------------------------
``turns`` scripts what the model does in a conversation: a mapping from the conversation's *first* user message
(directives removed) to its turns, or a callable given the request body that returns a turn (None: answer as
above). The turn answered is the one at the position of the number of assistant messages the request already holds
(so it depends on the conversation, never on arrival order or on a counter: a resumed run gets the same answers);
past the end, the last turn repeats. A turn is text (the model answers and stops), or a mapping ``{"content":
..., "tool_calls": [{"name": ..., "arguments": ...}]}`` (``arguments`` a JSON value, sent as JSON text, or text
sent as it is, e.g. text that is not JSON), optionally with ``finish_reason`` and (OpenAI only) ``refusal``, the
text of a structured-outputs refusal. Call ids are ``call_<turn>_<k>``. The request's ``tools`` are not
checked: a script may call a tool the request does not offer. The Anthropic and Gemini fakes read the same scripts
(:meth:`FakeOpenAI._scripted`) from their own message shapes, and answer in them.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import orjson

Reply = Callable[[dict[str, Any]], str] | Mapping[str, str]
#: One scripted model turn: text, or ``{"content": ..., "tool_calls": [{"name": ..., "arguments": ...}]}``.
Turn = str | Mapping[str, Any]
Turns = Callable[[dict[str, Any]], Turn | None] | Mapping[str, Any]

_DIRECTIVE = re.compile(r"\[\[behaviour:([^\]]*)\]\]")
_STATUS = re.compile(r"^[1-5]\d\d$")
_MAX_HEAD = 64 * 1024


@dataclass(slots=True)
class RecordedRequest:
    """One request as the server saw it. ``status`` is None when the connection was dropped or never answered."""

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    step: str = ""
    status: int | None = None
    received_at: float = 0.0
    finished_at: float | None = None

    #: The text directives are read from (the server's dialect sets it).
    last_user_message: str = ""
    #: The body's bytes as sent (``body`` is what they parse to).
    raw: bytes = b""


def _last_user_message(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):  # content parts
                return "".join(
                    part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
                )
    return ""


def _first_user_message(body: dict[str, Any]) -> str:
    for message in body.get("messages") or ():
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


def _assistant_turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages") or () if isinstance(m, dict) and m.get("role") == "assistant")


def strip_directives(text: str) -> str:
    return _DIRECTIVE.sub("", text).strip()


def _validate_step(step: str) -> str:
    step = step.strip()
    kind, _, arg = step.partition(":")
    if kind in {"ok", "hang", "malformed", "drop"} and not arg:
        return step
    if kind == "slow":
        float(arg)
        return step
    if kind == "text" and _STATUS.match(arg):
        return step
    if _STATUS.match(kind):
        if arg and kind != "429":
            raise ValueError(f"only 429 takes an argument (Retry-After), got {step!r}")
        if arg:
            float(arg)
        return step
    raise ValueError(f"unknown fake-server step {step!r}")


class FakeOpenAI:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, on an ephemeral port by default."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        reply: Reply | None = None,
        default: str = "ok",
        record: bool = True,
        turns: Turns | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.latency = latency
        self.reply = reply
        #: The scripted turns (``turns``), read alike by every dialect (:meth:`_scripted`).
        self.scripted_turns = turns
        self.default = _validate_step(default)
        self.record = record
        self._lock = threading.Lock()
        self._script: deque[str] = deque()
        self._seen: dict[str, int] = {}
        self._requests: list[RecordedRequest] = []
        self._count = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._open: set[_Connection] = set()

    # ------------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        """Serve on a background thread; returns once the port is bound."""
        if self._thread is not None:
            raise RuntimeError("server already started")
        self._thread = threading.Thread(target=self._thread_main, name="fake-openai", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=10)
        if self._startup_error is not None:
            raise RuntimeError(f"fake server failed to start: {self._startup_error}") from self._startup_error
        if not self._ready.is_set():
            raise RuntimeError("fake server did not start within 10 s")
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None or self._stop is None:
            return
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _thread_main(self) -> None:
        try:
            asyncio.run(self.serve())
        except BaseException as exc:  # surfaced by start()
            self._startup_error = exc
            self._ready.set()

    async def serve(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve on the running loop until :meth:`stop` (or :meth:`request_stop`) is called."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._stop = asyncio.Event()
        server = await loop.create_server(lambda: _Connection(self), self.host, self.port, backlog=2048)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        if on_ready is not None:
            on_ready()
        try:
            await self._stop.wait()
        finally:
            server.close()
            for connection in list(self._open):
                connection.abort()
            await server.wait_closed()

    def request_stop(self) -> None:
        """Stop a server started with :meth:`serve` (call from the loop's thread, e.g. a signal handler)."""
        if self._stop is not None:
            self._stop.set()

    def close_connections(self) -> None:
        """Close every client connection from the server side (as a server does with idle keep-alives)."""
        if self._loop is None:
            return
        done = threading.Event()

        def close_all() -> None:
            for connection in list(self._open):
                if connection.transport is not None:
                    connection.transport.close()
            done.set()

        self._loop.call_soon_threadsafe(close_all)
        done.wait(timeout=5)

    # ------------------------------------------------------------------ scripting and inspection
    def script(self, *steps: str) -> None:
        """Queue steps that the next requests (in arrival order) will get, before any directive applies."""
        checked = [_validate_step(step) for step in steps]
        with self._lock:
            self._script.extend(checked)

    def reset(self) -> None:
        """Forget recorded requests, counters, the script and per-prompt step positions."""
        with self._lock:
            self._script.clear()
            self._seen.clear()
            self._requests.clear()
            self._count = 0
            self._max_in_flight = self._in_flight

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return self._count

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    # ------------------------------------------------------------------ request handling (loop thread)
    def _begin(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[RecordedRequest, Any]:
        try:
            body: Any = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        prompt = self._prompt_of(body)
        with self._lock:
            index = self._count
            self._count += 1
            self._in_flight += 1
            if self._in_flight > self._max_in_flight:
                self._max_in_flight = self._in_flight
            step = self._choose_step(prompt)
            record = RecordedRequest(
                index=index,
                method=method,
                path=path,
                headers=headers,
                body=body,
                step=step,
                received_at=time.monotonic(),
                last_user_message=prompt,
                raw=raw,
            )
            if self.record:
                self._requests.append(record)
        return record, body

    def _end(self, record: RecordedRequest, status: int | None) -> None:
        record.status = status
        record.finished_at = time.monotonic()
        with self._lock:
            self._in_flight -= 1

    def _choose_step(self, prompt: str) -> str:
        if self._script:
            return self._script.popleft()
        match = _DIRECTIVE.search(prompt)
        if match is None:
            return self.default
        steps = [part for part in (p.strip() for p in match.group(1).split(",")) if part]
        if not steps:
            return self.default
        position = self._seen.get(prompt, 0)
        self._seen[prompt] = position + 1
        try:
            return _validate_step(steps[min(position, len(steps) - 1)])
        except ValueError:
            return "400"

    def _plan(self, record: RecordedRequest, body: Any) -> tuple[float | None, int, bytes, dict[str, str]]:
        """How to answer: (delay, or None for drop/hang; status; payload; extra headers). The steps are the same for
        every wire format; the routes, the bodies and the error shapes are the dialect's (the methods below, which
        a fake of another API overrides)."""
        method, path, step = record.method, record.path.rstrip("/"), record.step
        if method == "GET" and path.endswith("/models"):
            models = {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]}
            return 0.0, 200, orjson.dumps(models), {}
        if not self._is_call(method, path):
            return 0.0, 404, *self._error_answer(404, f"no route {method} {record.path}", "")
        refused = self._refusal(record, body)
        if refused is not None:
            return 0.0, refused[0], *self._error_answer(refused[0], refused[1], "")
        kind, _, arg = step.partition(":")
        if kind in {"drop", "hang"}:
            return None, 0, b"", {}
        if kind == "malformed":
            return self.latency, 200, self._broken_answer(), {}
        if kind == "text":
            return 0.0, int(arg), self._reply_text(body, record.last_user_message).encode(), {}
        if _STATUS.match(kind):
            status = int(kind)
            message = f"fake {status}"
            if status == 401:  # like the real service, quote the key back (clients must scrub it)
                message = f"Incorrect API key provided: {self._key_of(record)}."
            return 0.0, status, *self._error_answer(status, message, arg)
        delay = float(arg) if kind == "slow" else self.latency
        return delay, 200, self._answer(record, body), {}

    # ------------------------------------------------------------------ the dialect (chat completions)
    def _prompt_of(self, body: Any) -> str:
        """The text directives are read from and replies echo: the last user message."""
        return _last_user_message(body)

    def _is_call(self, method: str, path: str) -> bool:
        return method == "POST" and path.endswith("/chat/completions")

    def _refusal(self, record: RecordedRequest, body: Any) -> tuple[int, str] | None:
        """(status, message) for a request the real API would refuse whatever the step, else None."""
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return 400, "request body must be JSON with messages"
        return None

    def _key_of(self, record: RecordedRequest) -> str:
        return record.headers.get("authorization", "").removeprefix("Bearer ").strip()

    def _broken_answer(self) -> bytes:
        return b'{"id": "chatcmpl-broken", "choices": [{"mess'

    def _error_answer(self, status: int, message: str, retry_after: str) -> tuple[bytes, dict[str, str]]:
        """The error body of ``status`` and its headers (``retry_after``: the step's argument, seconds or '')."""
        code = "rate_limit_exceeded" if status == 429 else ("server_error" if status >= 500 else "invalid")
        return _error_body(message, code), ({"retry-after": retry_after} if retry_after else {})

    def _answer(self, record: RecordedRequest, body: dict[str, Any]) -> bytes:
        answer, finish = self._reply_message(body, record.last_user_message)
        prompt_tokens = sum(
            len(m["content"].split())
            for m in body["messages"]
            if isinstance(m, dict) and isinstance(m.get("content"), str)
        )
        completion_tokens = len((answer.get("content") or "").split()) + sum(
            len(call["function"]["arguments"].split()) + 1 for call in answer.get("tool_calls") or ()
        )
        payload = {
            "id": f"chatcmpl-fake-{record.index}",
            "object": "chat.completion",
            "created": 0,
            "model": str(body.get("model", "fake-model")),
            "choices": [{"index": 0, "message": answer, "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return orjson.dumps(payload)

    def _scripted(self, body: dict[str, Any]) -> tuple[Turn | None, int]:
        """The scripted turn that answers ``body`` (None: none is scripted) and its position: the model turns the
        conversation already holds, which call ids are made from."""
        position = self._model_turns(body)
        turns = self.scripted_turns
        if callable(turns):
            return turns(body), position
        if turns is not None:
            script = turns.get(strip_directives(self._first_prompt(body)))
            if script:
                return script[min(position, len(script) - 1)], position
        return None, position

    def _first_prompt(self, body: dict[str, Any]) -> str:
        """The conversation's first user message, which a mapping of scripts is keyed by."""
        return _first_user_message(body)

    def _model_turns(self, body: dict[str, Any]) -> int:
        return _assistant_turns(body)

    def _reply_message(self, body: dict[str, Any], prompt: str) -> tuple[dict[str, Any], str]:
        """The assistant message of an answer and its finish reason: a scripted turn, else the reply text."""
        turn, position = self._scripted(body)
        if turn is None:
            return {"role": "assistant", "content": self._reply_text(body, prompt)}, "stop"
        if isinstance(turn, str):
            return {"role": "assistant", "content": turn}, "stop"
        calls = [
            {
                "id": call.get("id", f"call_{position}_{k}"),
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call.get("arguments"), str)
                    else orjson.dumps(call.get("arguments", {})).decode(),
                },
            }
            for k, call in enumerate(turn.get("tool_calls") or ())
        ]
        message: dict[str, Any] = {"role": "assistant", "content": turn.get("content")}
        if turn.get("refusal") is not None:  # structured outputs' refusal: its text, with content null
            message["refusal"] = turn["refusal"]
        if calls:
            message["tool_calls"] = calls
        return message, "tool_calls" if calls else str(turn.get("finish_reason", "stop"))

    def _reply_text(self, body: dict[str, Any], prompt: str) -> str:
        reply = self.reply
        if reply is None:
            return strip_directives(prompt)
        if callable(reply):
            return reply(body)
        return reply.get(strip_directives(prompt), strip_directives(prompt))


class _Connection(asyncio.Protocol):
    """One client connection: HTTP/1.1 with keep-alive, one request at a time."""

    def __init__(self, server: FakeOpenAI) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.current: RecordedRequest | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.keep_alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server._open.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._open.discard(self)
        self.transport = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.current is not None:  # dropped, hung, or the client left (timeout, cancel) before an answer
            self.server._end(self.current, None)
            self.current = None

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._next()

    def _next(self) -> None:
        transport = self.transport
        if self.current is not None or transport is None:
            return
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > _MAX_HEAD:
                transport.abort()
            return
        request_line, *header_lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        try:
            method, target, version = request_line.split(" ", 2)
            body_start = end + 4
            if "chunked" in headers.get("transfer-encoding", "").lower():
                parsed = _dechunk(self.buffer, body_start)
                if parsed is None:
                    return
                raw, consumed = parsed
            else:
                length = int(headers.get("content-length", "0") or "0")
                if len(self.buffer) < body_start + length:
                    return
                raw, consumed = bytes(self.buffer[body_start : body_start + length]), body_start + length
        except ValueError:
            transport.abort()
            return
        del self.buffer[:consumed]
        self.keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        record, body = self.server._begin(method, target.split("?", 1)[0], headers, raw)
        self.current = record
        delay, status, payload, extra = self.server._plan(record, body)
        if delay is None:
            if record.step == "drop":
                transport.abort()  # connection_lost ends the record with status None
            return  # hang: never answered; ended when either side closes the connection
        response = _response(status, payload, record.index, extra)
        if delay > 0:
            self.timer = asyncio.get_running_loop().call_later(delay, self._send, status, response)
        else:
            self._send(status, response)

    def _send(self, status: int, response: bytes) -> None:
        self.timer = None
        record, self.current = self.current, None
        transport = self.transport
        if record is None:
            return
        if transport is None or transport.is_closing():
            self.server._end(record, None)
            return
        transport.write(response)
        self.server._end(record, status)
        if not self.keep_alive:
            transport.close()
        elif self.buffer:
            self._next()


def _dechunk(buffer: bytearray, start: int) -> tuple[bytes, int] | None:
    """The de-chunked body and the number of bytes consumed, or None when the body is not complete yet."""
    chunks: list[bytes] = []
    pos = start
    while True:
        line_end = buffer.find(b"\r\n", pos)
        if line_end < 0:
            return None
        size = int(bytes(buffer[pos:line_end]).split(b";", 1)[0].strip() or b"0", 16)
        pos = line_end + 2
        if size == 0:
            trailer_end = buffer.find(b"\r\n", pos)
            if trailer_end < 0:
                return None
            return b"".join(chunks), trailer_end + 2
        if len(buffer) < pos + size + 2:
            return None
        chunks.append(bytes(buffer[pos : pos + size]))
        pos += size + 2


def _response(status: int, payload: bytes, index: int, extra: Mapping[str, str]) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:  # a status the standard library does not name (Anthropic's 529)
        phrase = "Overloaded" if status == 529 else "Unknown"
    lines = [
        f"HTTP/1.1 {status} {phrase}",
        "content-type: application/json",
        f"content-length: {len(payload)}",
        f"x-request-id: fake-{index}",
    ]
    lines.extend(f"{name}: {value}" for name, value in extra.items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


def _error_body(message: str, code: str) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": "fake_error", "code": code, "param": None}})


def serve_from_command_line(kind: type[FakeOpenAI], argv: list[str] | None = None) -> int:
    """``python -m evalglass.testing.<fake>``: serve ``kind`` until SIGINT or SIGTERM, the base URL on the first line
    of stdout."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {kind.__module__}", description=f"{kind.__name__}: a fake model API server on loopback."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each successful answer")
    parser.add_argument("--default", default="ok", help="step for requests without a directive")
    parser.add_argument("--turns", default=None, help="a JSON file: first user message -> the model's turns")
    args = parser.parse_args(argv)
    options: dict[str, Any] = {}
    if args.turns is not None:
        with open(args.turns, "rb") as handle:
            options["turns"] = orjson.loads(handle.read())
    server = kind(host=args.host, port=args.port, latency=args.latency, default=args.default, record=False, **options)

    def ready() -> None:
        print(f"listening on {server.base_url}", flush=True)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, server.request_stop)
        await server.serve(on_ready=ready)

    asyncio.run(run())
    return 0


def main(argv: list[str] | None = None) -> int:
    return serve_from_command_line(FakeOpenAI, argv)


if __name__ == "__main__":
    sys.exit(main())
