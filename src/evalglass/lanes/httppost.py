"""One JSON ``POST`` to a model API over aiohttp's keep-alive pool, every outcome a value.

What every model API client shares, whichever wire format it speaks: the session (its headers, no connection limit:
the executor is the limit), a timeout per attempt, dropped connections, and the classification of an HTTP status
into a :class:`~evalglass.lanes.retry.Fault` the retry policy understands (429 → rate limited, with its wait; 408 →
timeout; 5xx → server error; 400 → invalid request; other 4xx → client error). What differs per API (the URL, how
the key is sent, how its error body says why and how long to wait) is passed in: a provider's :data:`ErrorReader`
can reclassify an answer its API marks (Anthropic's ``overloaded_error``, a spend cap that no retry lifts) and give a
wait the body states (Gemini's ``RetryInfo``) when no header does.

Secrets: fault messages and body excerpts pass through the redactor before they are cut, so neither the key nor any
other secret of the environment reaches a record.
"""

from __future__ import annotations

import asyncio
import email.utils
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from evalglass.core.redact import Redactor
from evalglass.lanes.retry import Fault, FaultKind, Ok
from evalglass.lanes.specs import EndpointSpec

T = TypeVar("T")

_MAX_MESSAGE = 500


@dataclass(frozen=True, slots=True)
class ErrorSignal:
    """What an API's error body says: a message, a fault kind that overrides the status's (None: the status's), and
    a wait in seconds the body states (None: only the headers')."""

    message: str
    kind: FaultKind | None = None
    retry_after: float | None = None


#: A provider's reading of an error answer: (status, the body parsed as JSON, or None when it is not) → signal, or
#: None when the body says nothing the provider knows (its excerpt is quoted instead).
ErrorReader = Callable[[int, Any], ErrorSignal | None]


def status_kind(status: int) -> FaultKind:
    """The fault an HTTP error status means to the retry policy, whatever the API."""
    if status == 429:
        return FaultKind.RATE_LIMITED
    if status == 408:
        return FaultKind.TIMEOUT
    if status >= 500:
        return FaultKind.SERVER_ERROR
    if status == 400:
        return FaultKind.INVALID_REQUEST
    return FaultKind.CLIENT_ERROR


def status_fault(
    status: int, where: str, detail: str, retry_after: float | None, redactor: Redactor, kind: FaultKind | None = None
) -> Fault:
    """The fault of an HTTP error answer; the wait goes with the kinds that are retried after it."""
    message = redactor.head(f"HTTP {status} from {where}: {detail}", _MAX_MESSAGE)
    kind = kind or status_kind(status)
    waits = kind in (FaultKind.RATE_LIMITED, FaultKind.SERVER_ERROR)
    return Fault(kind, message, status, retry_after if waits else None)


def parse_retry_after(milliseconds: str | None, value: str | None, *, now: float) -> float | None:
    """Seconds to wait from ``Retry-After-Ms`` or ``Retry-After`` (delta-seconds or an HTTP date), else None."""
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000.0)
        except ValueError:
            pass
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def api_key_of(spec: EndpointSpec, env: Mapping[str, str]) -> tuple[str | None, Fault | None]:
    """The key from the variable the spec names, or the configuration fault every attempt then returns (nothing is
    sent); (None, None) for a keyless endpoint."""
    if spec.api_key_env is None:
        return None, None
    value = env.get(spec.api_key_env, "")
    if value:
        return value, None
    return None, Fault(
        FaultKind.CONFIGURATION,
        f"environment variable {spec.api_key_env} is not set: export it with the API key for "
        f"{spec.base_url}, or set api_key_env: null for a server that needs no key",
    )


class JsonPoster:
    """A keep-alive session to one API. Create it inside the event loop that uses it; close it with ``aclose``."""

    def __init__(
        self,
        *,
        where: str,
        headers: Mapping[str, str],
        timeout: float,
        redactor: Redactor,
        clock: Callable[[], float],
        read_error: ErrorReader,
    ) -> None:
        self.where = where
        self._headers = dict(headers)
        self._timeout = timeout
        self._redactor = redactor
        self._clock = clock
        self._read_error = read_error
        self._session: Any = None  # aiohttp.ClientSession, opened on first use inside the running loop

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _open(self) -> Any:
        import aiohttp

        headers = {name: value for name, value in self._headers.items() if name.lower() != "content-length"}
        headers["Content-Type"] = "application/json"
        # aiohttp adds its own User-Agent unless one is set; asking it to skip one instead costs ~25 us of CPU per
        # request (its slow header path), so only when the caller sets none.
        has_agent = any(name.lower() == "user-agent" for name in headers)
        self._session = aiohttp.ClientSession(
            headers=headers,
            connector=aiohttp.TCPConnector(limit=0, ssl=True),
            skip_auto_headers=() if has_agent else ("User-Agent",),
            timeout=aiohttp.ClientTimeout(total=self._timeout),
            trust_env=False,
        )
        self._payload_error: type[Exception] = aiohttp.ClientPayloadError
        self._connection_errors: tuple[type[Exception], ...] = (
            aiohttp.ClientConnectionError,
            aiohttp.ClientResponseError,
            OSError,
        )
        return self._session

    async def post(
        self, url: str, body: Mapping[str, Any], parse: Callable[[bytes], T], *, data: bytes | None = None
    ) -> Ok[T] | Fault:
        """Exactly one request; ``parse`` reads a 2xx body and raises ValueError for one it cannot read. ``data``:
        ``orjson.dumps(body)`` when the caller has it already (an agent's step: ``modelstep._OpenAIWire``)."""
        session = self._session or self._open()
        status = 0
        content = b""
        headers: Any = None
        try:
            async with session.post(url, data=orjson.dumps(body) if data is None else data) as response:
                status = response.status
                content = await response.read()
                if status >= 400:
                    headers = response.headers
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            return Fault(FaultKind.TIMEOUT, f"no answer within {self._timeout:g}s from {self.where}")
        except self._payload_error as exc:
            return Fault(FaultKind.CONNECTION, self._redact(f"connection to {self.where} failed ({exc})"))
        except self._connection_errors as exc:
            return Fault(
                FaultKind.CONNECTION, self._redact(f"connection to {self.where} failed ({type(exc).__name__}: {exc})")
            )
        if headers is not None:
            return self.error_fault(status, headers, content)
        try:
            if not 200 <= status < 300:
                raise ValueError(f"unexpected HTTP status {status}")
            return Ok(parse(content))
        except ValueError as exc:
            return Fault(FaultKind.MALFORMED_RESPONSE, self._redact(str(exc)), status, None, self.excerpt(content))

    def error_fault(self, status: int, headers: Mapping[str, str], content: bytes) -> Fault:
        """The fault of an HTTP error answer, read by the API's own error reader."""
        try:
            body: Any = orjson.loads(content)
        except orjson.JSONDecodeError:
            body = None
        signal = self._read_error(status, body)
        waited = parse_retry_after(headers.get("retry-after-ms"), headers.get("retry-after"), now=self._clock())
        if signal is None:
            return status_fault(
                status, self.where, self.excerpt(content, 200) or f"HTTP {status}", waited, self._redactor
            )
        wait = waited if waited is not None else signal.retry_after
        return status_fault(status, self.where, signal.message, wait, self._redactor, signal.kind)

    def _redact(self, text: str) -> str:
        return self._redactor.head(text, _MAX_MESSAGE)

    def excerpt(self, raw: bytes, limit: int = 300) -> str:
        """The start of a body: the whole body is decoded and redacted first, then cut."""
        return self._redactor.head(raw.decode("utf-8", "replace"), limit)


__all__ = ["ErrorReader", "ErrorSignal", "JsonPoster", "api_key_of", "parse_retry_after", "status_fault", "status_kind"]
