"""Retrying effectful calls: which faults are worth another attempt, how long to wait, and what happened.

A call is a function from the attempt number to either a value (:class:`Ok`) or a :class:`Fault`. Faults are data,
not exceptions, so a call that finally fails is an ordinary result the pipeline turns into ``error`` scores while
the run goes on. An attempt function that *raises* is treated as a permanent ``internal`` fault for the same reason.

Transient faults (by default: connection errors, timeouts, HTTP 429, HTTP 5xx) are retried with exponential
backoff and full jitter, ``delay = random() * min(max_delay, initial_delay * multiplier ** (n - 1))``; an HTTP 429
that carries ``Retry-After`` waits at least that long, and a ``Retry-After`` longer than ``max_retry_after`` ends the
call at once rather than stalling the run. Permanent faults (4xx other than 408/429, an invalid request, a missing
API key, a malformed answer) are not retried. Every attempt is recorded as an :class:`Attempt`.

``sleep``, ``random`` and ``clock`` are injectable so tests are fast and deterministic. :class:`FaultKind` and
:class:`RetryPolicy` are declared in ``specs`` with the rest of the config (loading a config needs no asyncio) and
are re-exported here.
"""

from __future__ import annotations

import asyncio
import random as _random
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from evalglass.lanes.specs import TRANSIENT_KINDS, FaultKind, RetryPolicy

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Fault:
    """One failed attempt, classified. ``message`` and ``detail`` never contain secrets (callers redact)."""

    kind: FaultKind
    message: str
    status: int | None = None
    retry_after: float | None = None
    detail: str | None = None

    @property
    def code(self) -> str:
        """Stable diagnostic code for scores: ``call_timeout``, ``call_rate_limited`` ..."""
        return f"call_{self.kind.value}"


@dataclass(frozen=True, slots=True)
class Ok(Generic[T]):
    value: T


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one attempt did. ``delay_before_next`` is None for the last attempt."""

    number: int
    outcome: str  # "ok" | the FaultKind value
    status: int | None
    message: str | None
    elapsed: float
    delay_before_next: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "outcome": self.outcome,
            "status": self.status,
            "message": self.message,
            "elapsed": round(self.elapsed, 6),
            "delay_before_next": None if self.delay_before_next is None else round(self.delay_before_next, 6),
        }


@dataclass(frozen=True, slots=True)
class CallOutcome(Generic[T]):
    """The end of a call: a value or the last fault, and every attempt that led there."""

    value: T | None
    fault: Fault | None
    attempts: tuple[Attempt, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.fault is None


AttemptFn = Callable[[int], Awaitable["Ok[T] | Fault"]]


class Retrier:
    """Runs calls under one :class:`RetryPolicy`; the clock, sleep and randomness are injectable."""

    def __init__(
        self,
        policy: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._random = random
        self._clock = clock

    def delay_for(self, fault: Fault, retry_number: int) -> float | None:
        """Seconds to wait before retry ``retry_number`` after ``fault``, or None when it must not be retried."""
        policy = self.policy
        if fault.kind not in policy.retry_on:
            return None
        jittered = self._random() * policy.backoff_ceiling(retry_number)
        if fault.retry_after is not None:
            if fault.retry_after > policy.max_retry_after:
                return None
            return max(fault.retry_after, jittered)
        return jittered

    async def run(self, attempt: Callable[[int], Awaitable[Ok[T] | Fault]]) -> CallOutcome[T]:
        """Call ``attempt(1)``, ``attempt(2)``, ... until a value, a permanent fault, or ``max_attempts``."""
        attempts: list[Attempt] = []
        number = 0
        while True:
            number += 1
            started = self._clock()
            try:
                result = await attempt(number)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug in the attempt function must not end the run
                result = Fault(
                    FaultKind.INTERNAL,
                    f"the call raised {type(exc).__name__}: {exc}",
                    detail="".join(traceback.format_exception(exc)[-5:]),
                )
            elapsed = self._clock() - started
            if isinstance(result, Ok):
                attempts.append(Attempt(number, "ok", None, None, elapsed))
                return CallOutcome(result.value, None, tuple(attempts))
            delay = self.delay_for(result, number) if number < self.policy.max_attempts else None
            attempts.append(Attempt(number, result.kind.value, result.status, result.message, elapsed, delay))
            if delay is None:
                return CallOutcome(None, _final(result, number, self.policy), tuple(attempts))
            if delay > 0:
                await self._sleep(delay)


def _final(fault: Fault, attempts: int, policy: RetryPolicy) -> Fault:
    """The fault a call ends with, its message saying whether retries were spent."""
    if fault.kind in policy.retry_on and attempts >= policy.max_attempts and attempts > 1:
        note = f" (gave up after {attempts} attempts)"
    elif fault.retry_after is not None and fault.retry_after > policy.max_retry_after:
        note = f" (Retry-After {fault.retry_after:g}s exceeds max_retry_after {policy.max_retry_after:g}s)"
    else:
        note = "" if attempts == 1 else f" (attempt {attempts})"
    if not note:
        return fault
    return Fault(fault.kind, fault.message + note, fault.status, fault.retry_after, fault.detail)


__all__ = [
    "TRANSIENT_KINDS",
    "Attempt",
    "AttemptFn",
    "CallOutcome",
    "Fault",
    "FaultKind",
    "Ok",
    "Retrier",
    "RetryPolicy",
]
