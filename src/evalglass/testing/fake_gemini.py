"""A small, real Gemini API server for tests and benchmarks: ``POST /v1beta/models/{model}:generateContent``.

The same server as :class:`~evalglass.testing.fake_openai.FakeOpenAI` (its steps, scripts, directives, recording and
concurrency), speaking the Gemini API's wire format:

* it refuses what the real API refuses, whatever the step: no ``x-goog-api-key`` (403 ``PERMISSION_DENIED``), a
  body without ``contents`` (400 ``INVALID_ARGUMENT``), a ``functionResponse`` whose name is not a
  ``functionCall`` of the model turn before it, or whose ``response`` is not an object, and a turn after a model
  turn's calls that does not hold as many responses as there were calls (400);
* errors have the API's shape, ``{"error": {"code", "message", "status", "details"}}``: ``429`` is
  ``RESOURCE_EXHAUSTED`` (``429:S`` says to wait S seconds in a ``google.rpc.RetryInfo`` detail, not a header, as
  the real API does), ``503`` ``UNAVAILABLE``, ``500`` ``INTERNAL`` ...;
* an answer has one candidate with ``text`` and ``functionCall`` parts, ``finishReason: STOP`` and
  ``usageMetadata``: words stand for tokens, ``promptTokenCount`` counts every input word, of which ``cache_read``
  are reported as ``cachedContentTokenCount``.

``turns`` scripts tool calls as for :class:`~evalglass.testing.fake_openai.FakeOpenAI` (a mapping from the
conversation's first user message to its turns, or a callable given the request body); call ids are
``call_<turn>_<k>`` (``turn``: the model turns the request holds). A script's ``finish_reason`` is sent as the
``finishReason`` (``MAX_TOKENS``, ``SAFETY`` ...; default ``STOP``).

Run it as a process::

    python -m evalglass.testing.fake_gemini --port 0
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from evalglass.testing.fake_openai import FakeOpenAI, RecordedRequest, Turn, serve_from_command_line

Turns = Callable[[dict[str, Any]], Turn | None] | Mapping[str, Any]

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _texts(content: Any) -> list[str]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [str(p["text"]) for p in parts if isinstance(p, dict) and "text" in p] if isinstance(parts, list) else []


class FakeGemini(FakeOpenAI):
    """A Gemini API server on 127.0.0.1."""

    def __init__(
        self,
        *,
        turns: Turns | None = None,
        cache_read: int = 0,
        **options: Any,
    ) -> None:
        """``options``: :class:`FakeOpenAI`'s (host, port, latency, reply, default, record)."""
        super().__init__(turns=turns, **options)
        self.cache_read = cache_read

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1beta"

    def _prompt_of(self, body: Any) -> str:
        contents: Any = body.get("contents") if isinstance(body, dict) else None
        for content in reversed(contents if isinstance(contents, list) else []):
            if isinstance(content, dict) and content.get("role", "user") == "user":
                texts = _texts(content)
                if texts:
                    return "".join(texts)
        return ""

    def _first_prompt(self, body: dict[str, Any]) -> str:
        for content in body.get("contents") or ():
            if isinstance(content, dict) and content.get("role", "user") == "user":
                return "".join(_texts(content))
        return ""

    def _model_turns(self, body: dict[str, Any]) -> int:
        return sum(1 for c in body.get("contents") or () if isinstance(c, dict) and c.get("role") == "model")

    def _is_call(self, method: str, path: str) -> bool:
        return method == "POST" and "/models/" in path and path.endswith(":generateContent")

    def _key_of(self, record: RecordedRequest) -> str:
        return record.headers.get("x-goog-api-key", "")

    def _refusal(self, record: RecordedRequest, body: Any) -> tuple[int, str] | None:
        if not record.headers.get("x-goog-api-key"):
            return 403, "Method doesn't allow unregistered callers"
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            return 400, "contents is not specified"
        called: list[str] = []
        for index, content in enumerate(body["contents"]):
            parts = content.get("parts") if isinstance(content, dict) else None
            parts = [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
            responses = sum(isinstance(p.get("functionResponse"), dict) for p in parts)
            if called and responses != len(called):
                return 400, (
                    f"contents[{index}]: the number of function response parts ({responses}) must equal the number "
                    f"of function call parts of the function call turn ({len(called)})"
                )
            for part in parts:
                response = part.get("functionResponse")
                if isinstance(response, dict):
                    if response.get("name") not in called:
                        return 400, f"contents[{index}]: function response {response.get('name')!r} has no call"
                    if not isinstance(response.get("response"), dict):
                        return 400, f"contents[{index}]: function response must be an object"
            called = (
                [str(p["functionCall"].get("name")) for p in parts if isinstance(p.get("functionCall"), dict)]
                if content.get("role") == "model"
                else []
            )
        return None

    def _broken_answer(self) -> bytes:
        return b'{"candidates": [{"content": {"parts": [{"te'

    def _error_answer(self, status: int, message: str, retry_after: str) -> tuple[bytes, dict[str, str]]:
        error: dict[str, Any] = {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}
        if retry_after:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after}s"}]
        return orjson.dumps({"error": error}), {}

    def _answer(self, record: RecordedRequest, body: dict[str, Any]) -> bytes:
        turn, position = self._scripted(body)
        finish = "STOP"
        if turn is None or isinstance(turn, str):
            text = self._reply_text(body, record.last_user_message) if turn is None else turn
            parts: list[dict[str, Any]] = [{"text": text}]
        else:
            parts = [{"text": turn["content"]}] if turn.get("content") else []
            parts.extend(
                {"functionCall": {"id": f"call_{position}_{k}", "name": call["name"], "args": call["arguments"]}}
                for k, call in enumerate(turn.get("tool_calls") or ())
            )
            finish = str(turn.get("finish_reason", finish))
        words = sum(len(text.split()) for content in body["contents"] for text in _texts(content))
        words += sum(len(text.split()) for text in _texts(body.get("systemInstruction")))
        output = sum(
            len(p["text"].split()) if "text" in p else len(orjson.dumps(p["functionCall"]["args"]).split()) + 1
            for p in parts
        )
        usage: dict[str, Any] = {
            "promptTokenCount": words,
            "candidatesTokenCount": output,
            "totalTokenCount": words + output,
        }
        if self.cache_read:
            usage["cachedContentTokenCount"] = min(self.cache_read, words)
        model = record.path.rsplit("/models/", 1)[-1].removesuffix(":generateContent")
        payload = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": f"fake-{record.index}",
        }
        return orjson.dumps(payload)


__all__ = ["FakeGemini"]


if __name__ == "__main__":
    sys.exit(serve_from_command_line(FakeGemini))
