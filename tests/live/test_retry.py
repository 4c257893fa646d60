"""Retry policy: transient faults retried with backoff + full jitter, Retry-After honoured, permanent faults not."""

from __future__ import annotations

import time

import pytest

from evalglass.lanes.chat import ChatClient, ChatRequest, EndpointSpec
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.retry import Fault, FaultKind, Ok, Retrier, RetryPolicy
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import FakeSleep, run


def _script(*results: Ok[str] | Fault):  # type: ignore[no-untyped-def]
    calls: list[int] = []

    async def attempt(number: int) -> Ok[str] | Fault:
        calls.append(number)
        return results[min(number, len(results)) - 1]

    return attempt, calls


def test_backoff_is_exponential_with_full_jitter_and_capped() -> None:
    sleep = FakeSleep()
    retrier = Retrier(
        RetryPolicy(max_attempts=5, initial_delay=1.0, multiplier=2.0, max_delay=5.0), sleep=sleep, random=lambda: 0.5
    )
    attempt, calls = _script(Fault(FaultKind.SERVER_ERROR, "boom", 503))
    outcome = run(retrier.run(attempt))
    assert calls == [1, 2, 3, 4, 5]
    assert sleep.delays == [0.5, 1.0, 2.0, 2.5]  # 0.5 x min(5, 1, 2, 4, 8)
    assert [a.delay_before_next for a in outcome.attempts] == [0.5, 1.0, 2.0, 2.5, None]
    assert not outcome.ok and outcome.fault is not None
    assert outcome.fault.kind is FaultKind.SERVER_ERROR and "gave up after 5 attempts" in outcome.fault.message


def test_jitter_uses_the_injected_random() -> None:
    retrier = Retrier(RetryPolicy(initial_delay=2.0), random=lambda: 0.0)
    assert retrier.delay_for(Fault(FaultKind.TIMEOUT, "t"), 1) == 0.0
    retrier = Retrier(RetryPolicy(initial_delay=2.0), random=lambda: 0.999)
    assert retrier.delay_for(Fault(FaultKind.TIMEOUT, "t"), 3) == pytest.approx(0.999 * 8.0)


def test_retry_after_is_a_floor_and_too_long_a_wait_ends_the_call() -> None:
    retrier = Retrier(RetryPolicy(initial_delay=0.1, max_retry_after=10), random=lambda: 1.0)
    assert retrier.delay_for(Fault(FaultKind.RATE_LIMITED, "429", 429, retry_after=3.0), 1) == 3.0
    assert retrier.delay_for(Fault(FaultKind.RATE_LIMITED, "429", 429, retry_after=0.01), 1) == 0.1
    assert retrier.delay_for(Fault(FaultKind.RATE_LIMITED, "429", 429, retry_after=60), 1) is None
    sleep = FakeSleep()
    attempt, calls = _script(Fault(FaultKind.RATE_LIMITED, "slow down", 429, retry_after=60))
    outcome = run(Retrier(RetryPolicy(max_retry_after=10), sleep=sleep).run(attempt))
    assert calls == [1] and sleep.delays == []
    assert outcome.fault is not None and "exceeds max_retry_after" in outcome.fault.message


@pytest.mark.parametrize(
    "kind", [FaultKind.INVALID_REQUEST, FaultKind.CLIENT_ERROR, FaultKind.CONFIGURATION, FaultKind.MALFORMED_RESPONSE]
)
def test_permanent_faults_are_not_retried(kind: FaultKind) -> None:
    sleep = FakeSleep()
    attempt, calls = _script(Fault(kind, "no"))
    outcome = run(Retrier(RetryPolicy(max_attempts=5), sleep=sleep).run(attempt))
    assert calls == [1] and sleep.delays == [] and len(outcome.attempts) == 1
    assert outcome.fault is not None and outcome.fault.kind is kind


def test_success_after_transient_faults_records_every_attempt() -> None:
    attempt, calls = _script(
        Fault(FaultKind.CONNECTION, "reset"), Fault(FaultKind.RATE_LIMITED, "429", 429, 0.2), Ok("done")
    )
    outcome = run(Retrier(RetryPolicy(max_attempts=5), sleep=FakeSleep(), random=lambda: 0.0).run(attempt))
    assert outcome.ok and outcome.value == "done" and calls == [1, 2, 3]
    assert [(a.number, a.outcome, a.status) for a in outcome.attempts] == [
        (1, "connection", None),
        (2, "rate_limited", 429),
        (3, "ok", None),
    ]
    assert [a.delay_before_next for a in outcome.attempts] == [0.0, 0.2, None]


def test_an_attempt_that_raises_becomes_an_internal_fault_not_an_escaping_exception() -> None:
    async def attempt(number: int) -> Ok[str] | Fault:
        raise KeyError("oops")

    outcome = run(Retrier(RetryPolicy(max_attempts=3), sleep=FakeSleep()).run(attempt))
    assert outcome.fault is not None and outcome.fault.kind is FaultKind.INTERNAL
    assert len(outcome.attempts) == 1 and "KeyError" in outcome.fault.message


def test_policy_refuses_to_retry_permanent_kinds() -> None:
    with pytest.raises(ValueError, match="permanent"):
        RetryPolicy(retry_on=frozenset({FaultKind.INVALID_REQUEST}))
    assert (
        FaultKind.MALFORMED_RESPONSE
        in RetryPolicy(retry_on=frozenset({FaultKind.MALFORMED_RESPONSE, FaultKind.TIMEOUT})).retry_on
    )


# ------------------------------------------------------------------ against the real server
def _call(server: FakeOpenAI, text: str, retrier: Retrier, **spec: object):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        endpoint = EndpointSpec(base_url=server.base_url, model="m", api_key_env=None, **spec)  # type: ignore[arg-type]
        client = ChatClient(endpoint)
        try:
            return await client.call(
                ChatRequest.build(endpoint, [("user", text)]), executor=AsyncioExecutor(4), retrier=retrier
            )
        finally:
            await client.aclose()

    return run(go())


def test_429_with_retry_after_is_honoured_then_succeeds(server: FakeOpenAI) -> None:
    retrier = Retrier(RetryPolicy(max_attempts=3, initial_delay=0.0), random=lambda: 0.0)  # real sleep
    started = time.monotonic()
    outcome = _call(server, "hi [[behaviour:429:0.3,ok]]", retrier)
    elapsed = time.monotonic() - started
    assert outcome.ok and outcome.value is not None and outcome.value.content == "hi"
    assert server.request_count == 2
    gap = server.requests[1].received_at - server.requests[0].received_at
    assert gap >= 0.3 and elapsed >= 0.3
    assert outcome.attempts[0].delay_before_next == pytest.approx(0.3)


def test_429_exhausted_stops_at_max_attempts(server: FakeOpenAI) -> None:
    sleep = FakeSleep()
    outcome = _call(server, "[[behaviour:429:0.01]]", Retrier(RetryPolicy(max_attempts=4), sleep=sleep))
    assert server.request_count == 4 and len(sleep.delays) == 3
    assert outcome.fault is not None and outcome.fault.kind is FaultKind.RATE_LIMITED
    assert [a.status for a in outcome.attempts] == [429, 429, 429, 429]


def test_500_is_retried_and_400_is_not(server: FakeOpenAI) -> None:
    outcome = _call(server, "[[behaviour:500,503,ok]]", Retrier(RetryPolicy(max_attempts=5), sleep=FakeSleep()))
    assert outcome.ok and server.request_count == 3
    server.reset()
    outcome = _call(server, "[[behaviour:400]]", Retrier(RetryPolicy(max_attempts=5), sleep=FakeSleep()))
    assert server.request_count == 1
    assert outcome.fault is not None and outcome.fault.kind is FaultKind.INVALID_REQUEST and outcome.fault.status == 400


def test_timeouts_and_dropped_connections_are_retried(server: FakeOpenAI) -> None:
    outcome = _call(
        server, "[[behaviour:hang,drop,ok]]", Retrier(RetryPolicy(max_attempts=3), sleep=FakeSleep()), timeout=0.3
    )
    assert outcome.ok
    assert [a.outcome for a in outcome.attempts] == ["timeout", "connection", "ok"]
    assert server.request_count == 3
