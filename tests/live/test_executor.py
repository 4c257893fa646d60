"""One executor, a global limit, per-endpoint limits, a rate limiter; checked by what the server observes."""

from __future__ import annotations

import asyncio

import pytest

from evalglass.lanes.chat import ChatClient, ChatRequest, EndpointSpec
from evalglass.lanes.executor import AsyncioExecutor, EndpointLimit, Executor, TokenBucket
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import fast_retrier, run


def _spec(server: FakeOpenAI, **fields: object) -> EndpointSpec:
    return EndpointSpec(base_url=server.base_url, model="m", api_key_env=None, **fields)  # type: ignore[arg-type]


async def _call_many(executor: Executor, client: ChatClient, n: int) -> list[bool]:
    retrier = fast_retrier()

    async def one(i: int) -> bool:
        request = ChatRequest.build(client.spec, [("user", f"question {i}")])
        outcome = await client.call(request, executor=executor, retrier=retrier)
        return outcome.ok

    results = await executor.run(range(n), one)
    await client.aclose()
    return results


def test_the_global_limit_holds_at_the_server() -> None:
    with FakeOpenAI(latency=0.03) as server:

        async def go() -> tuple[list[bool], int]:
            executor = AsyncioExecutor(concurrency=5)
            results = await _call_many(executor, ChatClient(_spec(server)), 40)
            return results, executor.stats.peak_in_flight

        results, peak = run(go())
        assert all(results) and server.request_count == 40
        assert server.max_in_flight <= 5
        assert peak == 5  # the limit is also reached, not just respected


def test_a_per_endpoint_limit_holds_while_other_endpoints_use_the_global_budget() -> None:
    with FakeOpenAI(latency=0.03) as narrow, FakeOpenAI(latency=0.03) as wide:

        async def go() -> None:
            executor = AsyncioExecutor(concurrency=12)
            narrow_client = ChatClient(_spec(narrow, concurrency=2))
            wide_client = ChatClient(_spec(wide))
            await asyncio.gather(_call_many(executor, narrow_client, 20), _call_many(executor, wide_client, 60))
            assert executor.endpoint_stats(narrow.base_url).peak_in_flight == 2
            assert executor.stats.peak_in_flight <= 12

        run(go())
        assert narrow.max_in_flight <= 2 and narrow.request_count == 20
        assert wide.request_count == 60
        assert wide.max_in_flight > 2  # the narrow endpoint did not throttle the other one
        assert narrow.max_in_flight + wide.max_in_flight >= 10


def test_a_retry_waits_out_its_backoff_without_holding_a_slot(server: FakeOpenAI) -> None:
    """With one slot, a call sleeping before its retry lets another call through."""
    from evalglass.lanes.retry import Retrier, RetryPolicy

    async def go() -> None:
        executor = AsyncioExecutor(concurrency=1)
        client = ChatClient(_spec(server))
        retrier = Retrier(RetryPolicy(max_attempts=2, initial_delay=0.3), random=lambda: 1.0)

        async def ask(text: str, delay: float) -> bool:
            await asyncio.sleep(delay)
            request = ChatRequest.build(client.spec, [("user", text)])
            return (await client.call(request, executor=executor, retrier=retrier)).ok

        assert await asyncio.gather(ask("flaky [[behaviour:500,ok]]", 0), ask("steady", 0.05)) == [True, True]
        await client.aclose()

    run(go())
    assert [r.last_user_message for r in server.requests] == [
        "flaky [[behaviour:500,ok]]",
        "steady",
        "flaky [[behaviour:500,ok]]",
    ]


def test_map_yields_in_completion_order_with_a_bounded_window_and_run_keeps_input_order() -> None:
    async def go() -> None:
        executor = AsyncioExecutor(concurrency=8)
        started: list[int] = []
        live = 0
        peak = 0

        async def work(i: int) -> int:
            nonlocal live, peak
            started.append(i)
            live += 1
            peak = max(peak, live)
            await asyncio.sleep(0.02 if i % 2 else 0.001)
            live -= 1
            return i * i

        order = [index async for index, _ in executor.map(range(30), work, window=4)]
        assert sorted(order) == list(range(30)) and order != list(range(30))
        assert peak <= 4
        assert await executor.run(range(30), work) == [i * i for i in range(30)]

    run(go())


def test_map_accepts_an_async_source_and_propagates_a_worker_bug() -> None:
    async def go() -> None:
        executor = AsyncioExecutor(concurrency=2)

        async def source():  # type: ignore[no-untyped-def]
            for i in range(5):
                yield i

        async def double(i: int) -> int:
            return 2 * i

        assert await executor.run(source(), double) == [0, 2, 4, 6, 8]

        async def broken(i: int) -> int:
            if i == 3:
                raise RuntimeError("bug")
            await asyncio.sleep(0.01)
            return i

        with pytest.raises(RuntimeError, match="bug"):
            await executor.run(range(10), broken)

    run(go())


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def test_token_bucket_spaces_requests_at_the_declared_rate() -> None:
    clock = FakeClock()

    async def go() -> list[float]:
        bucket = TokenBucket(rpm=120, burst=1, clock=clock, sleep=clock.sleep)  # one every 0.5 s
        times = []
        for _ in range(5):
            await bucket.acquire()
            times.append(clock.now)
        return times

    assert run(go()) == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0])


def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    clock = FakeClock()

    async def go() -> list[float]:
        bucket = TokenBucket(rpm=60, burst=3, clock=clock, sleep=clock.sleep)
        times = []
        for _ in range(5):
            await bucket.acquire()
            times.append(clock.now)
        return times

    assert run(go()) == pytest.approx([0.0, 0.0, 0.0, 1.0, 2.0])


def test_executor_rpm_limits_calls_to_a_real_endpoint() -> None:
    clock = FakeClock()
    with FakeOpenAI() as server:

        async def go() -> None:
            executor = AsyncioExecutor(concurrency=8, clock=clock, sleep=clock.sleep)
            results = await _call_many(executor, ChatClient(_spec(server, rpm=600)), 11)  # 10 per second
            assert all(results)

        run(go())
        assert server.request_count == 11
        assert clock.now == pytest.approx(1.0)  # 1 immediate + 10 spaced 0.1 s apart


def test_global_rpm_and_endpoint_overrides() -> None:
    clock = FakeClock()

    async def go() -> None:
        executor = AsyncioExecutor(
            concurrency=4,
            rpm=60,
            clock=clock,
            sleep=clock.sleep,
            endpoints={"svc": EndpointLimit("svc", concurrency=1)},
        )

        async def nothing() -> int:
            return 1

        for _ in range(3):
            await executor.submit(nothing, endpoint=EndpointLimit("svc", concurrency=50))
        limit = executor.endpoint_limit("svc")
        assert limit is not None and limit.concurrency == 1  # the override wins over what the lane declared

    run(go())
    assert clock.now == pytest.approx(2.0)


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError):
        AsyncioExecutor(concurrency=0)
    with pytest.raises(ValueError):
        EndpointLimit("x", concurrency=0)
    with pytest.raises(ValueError):
        TokenBucket(rpm=0)
