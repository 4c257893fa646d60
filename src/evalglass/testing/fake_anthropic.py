"""A small, real Anthropic Messages API server for tests and benchmarks: ``POST /v1/messages``.

The same server as :class:`~evalglass.testing.fake_openai.FakeOpenAI` (its steps, scripts, directives, recording and
concurrency), speaking the Messages API's wire format:

* it refuses what the real API refuses, whatever the step: no ``x-api-key`` (401 ``authentication_error``), no
  ``anthropic-version`` (400), a body without ``model``, ``messages`` or an integer ``max_tokens`` (400), a
  ``tool_result`` whose ``tool_use_id`` names no ``tool_use`` block of the assistant message before it, and a
  ``tool_use`` whose result is not in the message right after it (400);
* errors have the API's shape, ``{"type": "error", "error": {"type": ..., "message": ...}}``, with the API's types
  (``429`` → ``rate_limit_error``, with ``retry-after`` for ``429:S``; ``529`` → ``overloaded_error``; ``500`` →
  ``api_error`` ...);
* an answer is a ``message`` with ``text`` and ``tool_use`` blocks, ``stop_reason`` (``end_turn``, ``tool_use``)
  and ``usage``: words stand for tokens, and ``cache_read`` / ``cache_write`` of every request's input words are
  reported as read from / written to the prompt cache (``input_tokens`` counts the rest, as the real API does).

``turns`` scripts tool calls as for :class:`~evalglass.testing.fake_openai.FakeOpenAI` (a mapping from the
conversation's first user message to its turns, or a callable given the request body): text, or ``{"content": ...,
"tool_calls": [{"name": ..., "arguments": {...}}]}``; call ids are ``toolu_<turn>_<k>`` (``turn``: the assistant
messages the request holds, so a resumed conversation gets the same ids). A script's ``finish_reason`` on a turn
without calls is sent as the ``stop_reason`` (``max_tokens``, ``refusal`` ...).

Run it as a process::

    python -m evalglass.testing.fake_anthropic --port 0
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from evalglass.testing.fake_openai import FakeOpenAI, RecordedRequest, Turn, serve_from_command_line

Turns = Callable[[dict[str, Any]], Turn | None] | Mapping[str, Any]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return []


class FakeAnthropic(FakeOpenAI):
    """An Anthropic Messages API server on 127.0.0.1."""

    def __init__(
        self,
        *,
        turns: Turns | None = None,
        cache_read: int = 0,
        cache_write: int = 0,
        **options: Any,
    ) -> None:
        """``options``: :class:`FakeOpenAI`'s (host, port, latency, reply, default, record)."""
        super().__init__(turns=turns, **options)
        self.cache_read = cache_read
        self.cache_write = cache_write

    def _prompt_of(self, body: Any) -> str:
        messages: Any = body.get("messages") if isinstance(body, dict) else None
        for message in reversed(messages if isinstance(messages, list) else []):
            if isinstance(message, dict) and message.get("role") == "user":
                texts = _texts(message.get("content"))
                if texts:
                    return "".join(texts)
        return ""

    def _first_prompt(self, body: dict[str, Any]) -> str:
        for message in body.get("messages") or ():
            if isinstance(message, dict) and message.get("role") == "user":
                return "".join(_texts(message.get("content")))
        return ""

    def _model_turns(self, body: dict[str, Any]) -> int:
        return sum(1 for m in body.get("messages") or () if isinstance(m, dict) and m.get("role") == "assistant")

    def _is_call(self, method: str, path: str) -> bool:
        return method == "POST" and path.endswith("/messages")

    def _key_of(self, record: RecordedRequest) -> str:
        return record.headers.get("x-api-key", "")

    def _refusal(self, record: RecordedRequest, body: Any) -> tuple[int, str] | None:
        if not record.headers.get("x-api-key"):
            return 401, "x-api-key header is required"
        if not record.headers.get("anthropic-version"):
            return 400, "anthropic-version header is required"
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body.get("model"):
            return 400, "model and messages are required"
        if type(body.get("max_tokens")) is not int:
            return 400, "max_tokens: Field required"
        offered: set[str] = set()
        for index, message in enumerate(body["messages"]):
            content = message.get("content") if isinstance(message, dict) else None
            blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
            answered = {str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"}
            for block in blocks:
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in offered:
                    return 400, (
                        f"messages.{index}: tool_result block(s) provided with tool_use_id "
                        f"{block.get('tool_use_id')!r} not found in the previous assistant message"
                    )
            if offered - answered:
                return 400, (
                    f"messages.{index}: tool_use ids were found without tool_result blocks immediately after: "
                    + ", ".join(sorted(offered - answered))
                )
            offered = {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
        return None

    def _broken_answer(self) -> bytes:
        return b'{"id": "msg_broken", "type": "message", "content": [{"ty'

    def _error_answer(self, status: int, message: str, retry_after: str) -> tuple[bytes, dict[str, str]]:
        kind = _ERROR_TYPES.get(status, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}
        return orjson.dumps(body), ({"retry-after": retry_after} if retry_after else {})

    def _answer(self, record: RecordedRequest, body: dict[str, Any]) -> bytes:
        turn, position = self._scripted(body)
        stop = "end_turn"
        if turn is None or isinstance(turn, str):
            text = self._reply_text(body, record.last_user_message) if turn is None else turn
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
        else:
            blocks = [{"type": "text", "text": turn["content"]}] if turn.get("content") else []
            for k, call in enumerate(turn.get("tool_calls") or ()):
                call_id = f"toolu_{position}_{k}"
                blocks.append({"type": "tool_use", "id": call_id, "name": call["name"], "input": call["arguments"]})
            stop = str(turn.get("finish_reason", stop))
        words = sum(len(text.split()) for m in body["messages"] for text in _texts(m.get("content")))
        words += len(str(body.get("system", "")).split())
        read, written = min(self.cache_read, words), min(self.cache_write, max(0, words - self.cache_read))
        usage: dict[str, Any] = {
            "input_tokens": words - read - written,
            "output_tokens": sum(
                len(b["text"].split()) if b["type"] == "text" else len(orjson.dumps(b["input"]).split()) + 1
                for b in blocks
            ),
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }
        calls = any(b["type"] == "tool_use" for b in blocks)
        payload = {
            "id": f"msg_fake_{record.index}",
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model")),
            "content": blocks,
            "stop_reason": "tool_use" if calls else stop,
            "stop_sequence": None,
            "usage": usage,
        }
        return orjson.dumps(payload)


__all__ = ["FakeAnthropic"]


if __name__ == "__main__":
    sys.exit(serve_from_command_line(FakeAnthropic))
