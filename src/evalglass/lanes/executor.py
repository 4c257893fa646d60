"""Where lane and judge calls run: one executor, one global concurrency limit, optional per-endpoint limits.

The interface is :class:`Executor`. Lanes and judges only ever call ``await executor.submit(fn, endpoint=...)`` for
one attempt of one call (a retry is a new submit, so a call waiting out its backoff holds no slot). The live run
keeps its own bounded window of example tasks (``engine/produce/liverun.py``), so every call reaches the executor
through ``submit``; ``executor.map(items, worker)`` (completion order, a bounded window of pending items) and
``executor.run(items, worker)`` (input order) drive a flat population, such as a judge's calibration. Nothing else
about the executor leaks into lanes or metrics.

:class:`AsyncioExecutor` is the implementation shipped today:

* a global concurrency limit (``asyncio.Semaphore``),
* per-endpoint concurrency limits, keyed by :attr:`EndpointLimit.key` and created on first use,
* an optional requests-per-minute limit, globally and/or per endpoint (:class:`TokenBucket`, clock injectable).

A slot is taken in this order: endpoint concurrency, endpoint rate, global concurrency, global rate. So a call
waiting for a busy or rate-limited endpoint holds no global slot and other endpoints keep flowing.

Shipping work elsewhere. ``fn`` is a closure over this process's state (clients, thread pools), so it always runs
here. A lane whose call can run in another process as well (a python or command lane: a plain function and
picklable arguments) also asks :attr:`Executor.offload`: when an executor has one (the Ray backend,
``engine.produce.raycluster``), the lane submits a coroutine that awaits ``offload.run(...)`` instead, under the same
limits. :class:`WorkLost` says the work could not be done there (its worker kept dying); :class:`ClusterLost`, a
``KeyboardInterrupt``, says the cluster itself is gone, and stops the run the way Ctrl-C does (resumable).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from evalglass.lanes.shipping import ClusterLost, WorkLost, base_dir_here

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - item
R = TypeVar("R")

Clock = Callable[[], float]
_EPSILON = 1e-9
Sleep = Callable[[float], Awaitable[None]]


class Offload(Protocol):
    """Runs a plain function with picklable arguments in another process (a cluster worker)."""

    async def run(self, key: str, fn: Callable[..., R], *args: Any, timeout: float | None = None) -> R:
        """``fn(*args)`` elsewhere; ``key`` chooses its resources (``task`` or a metric's name). Raises
        :class:`WorkLost`, :class:`ClusterLost`, or ``TimeoutError`` once ``timeout`` seconds have passed."""
        ...


@dataclass(frozen=True, slots=True)
class EndpointLimit:
    """Limits for one endpoint. ``key`` identifies it (by default the base URL); the first limit seen for a key
    wins unless the executor was constructed with an override for that key."""

    key: str
    concurrency: int | None = None
    rpm: float | None = None
    burst: int = 1

    def __post_init__(self) -> None:
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"endpoint {self.key!r}: concurrency must be >= 1")
        if self.rpm is not None and self.rpm <= 0:
            raise ValueError(f"endpoint {self.key!r}: rpm must be > 0")
        if self.burst < 1:
            raise ValueError(f"endpoint {self.key!r}: burst must be >= 1")


class TokenBucket:
    """``rpm`` requests per minute with at most ``burst`` back to back; waiters are served first come, first served.

    The bucket starts full. ``clock`` and ``sleep`` are injectable: a test can pass a fake clock whose sleep
    advances it.
    """

    def __init__(self, rpm: float, burst: int = 1, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep):
        if rpm <= 0:
            raise ValueError("rpm must be > 0")
        if burst < 1:
            raise ValueError("burst must be >= 1")
        self.rate = rpm / 60.0  # tokens per second
        self.capacity = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._sleep = sleep
        self._updated = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
        self._updated = now

    async def acquire(self) -> None:
        async with self._lock:
            self._refill()
            while self._tokens < 1.0 - _EPSILON:  # tolerance: float refills land a hair short of 1
                await self._sleep((1.0 - self._tokens) / self.rate)
                self._refill()
            self._tokens = max(0.0, self._tokens - 1.0)


@dataclass(slots=True)
class ExecutorStats:
    """Counts over the executor's lifetime. ``peak_in_flight`` is the most calls running at once."""

    submitted: int = 0
    completed: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0


class Executor(ABC):
    """Runs call attempts under limits. Subclasses implement :meth:`submit`; ``map``/``run`` build on it."""

    #: Pending items kept by :meth:`map` when no window is given: enough to keep every slot busy.
    default_window: int = 128
    #: Where shippable calls run instead of this process (None: here).
    offload: Offload | None = None
    #: Calls in flight at most (the global limit): how many workers a lane needs to keep every slot busy.
    concurrency: int = 16

    @abstractmethod
    async def submit(self, fn: Callable[[], Awaitable[T]], *, endpoint: EndpointLimit | None = None) -> T:
        """Run one attempt of one call once a slot (and a rate token) is free; return what ``fn`` returns."""

    async def map(
        self,
        items: Iterable[I] | AsyncIterable[I],
        worker: Callable[[I], Awaitable[R]],
        *,
        window: int | None = None,
    ) -> AsyncIterator[tuple[int, R]]:
        """Yield ``(index, worker(item))`` in completion order, with at most ``window`` items pending.

        The window bounds memory for large populations (items are pulled lazily from ``items``); concurrency of
        the calls themselves is bounded by the limits inside :meth:`submit`. A worker that raises stops the
        iteration and the exception propagates (lanes and judges return faults as values, so a raise is a bug);
        closing the iterator early cancels the pending workers.
        """
        limit = window or self.default_window
        if limit < 1:
            raise ValueError("window must be >= 1")
        done: asyncio.Queue[tuple[int, asyncio.Task[R]]] = asyncio.Queue()
        pending: set[asyncio.Task[R]] = set()
        source = _aiter(items)
        exhausted = False
        index = 0

        def start(item: I, position: int) -> None:
            task = asyncio.ensure_future(worker(item))
            pending.add(task)
            task.add_done_callback(lambda t: done.put_nowait((position, t)))

        try:
            while True:
                while not exhausted and len(pending) < limit:
                    try:
                        item = await anext(source)
                    except StopAsyncIteration:
                        exhausted = True
                        break
                    start(item, index)
                    index += 1
                if not pending:
                    return
                position, task = await done.get()
                pending.discard(task)
                yield position, task.result()
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    async def run(
        self,
        items: Iterable[I] | AsyncIterable[I],
        worker: Callable[[I], Awaitable[R]],
        *,
        window: int | None = None,
    ) -> list[R]:
        """Every ``worker(item)``, in input order."""
        results: dict[int, R] = {}
        async for position, result in self.map(items, worker, window=window):
            results[position] = result
        return [results[position] for position in range(len(results))]

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release backend resources (an asyncio executor has none; a Ray one would disconnect)."""


class AsyncioExecutor(Executor):
    """The in-process executor: asyncio semaphores and token buckets."""

    def __init__(
        self,
        concurrency: int = 16,
        *,
        rpm: float | None = None,
        burst: int = 1,
        endpoints: Mapping[str, EndpointLimit] | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.concurrency = concurrency
        self.default_window = max(2 * concurrency, 16)
        self._global = asyncio.Semaphore(concurrency)
        self._clock = clock
        self._sleep = sleep
        self._global_bucket = TokenBucket(rpm, burst, clock=clock, sleep=sleep) if rpm is not None else None
        self._overrides = dict(endpoints or {})
        self._endpoints: dict[str, tuple[asyncio.Semaphore | None, TokenBucket | None, EndpointLimit]] = {}
        self._endpoint_stats: dict[str, ExecutorStats] = {}
        self.stats = ExecutorStats()

    def endpoint_stats(self, key: str) -> ExecutorStats:
        return self._endpoint_stats.setdefault(key, ExecutorStats())

    def endpoint_limit(self, key: str) -> EndpointLimit | None:
        """The limit in force for ``key`` (None until the endpoint was first used or overridden)."""
        entry = self._endpoints.get(key)
        return entry[2] if entry else self._overrides.get(key)

    def _endpoint(self, limit: EndpointLimit) -> tuple[asyncio.Semaphore | None, TokenBucket | None, EndpointLimit]:
        entry = self._endpoints.get(limit.key)
        if entry is None:
            chosen = self._overrides.get(limit.key, limit)
            semaphore = asyncio.Semaphore(chosen.concurrency) if chosen.concurrency else None
            bucket = TokenBucket(chosen.rpm, chosen.burst, clock=self._clock, sleep=self._sleep) if chosen.rpm else None
            entry = (semaphore, bucket, chosen)
            self._endpoints[limit.key] = entry
        return entry

    async def submit(self, fn: Callable[[], Awaitable[T]], *, endpoint: EndpointLimit | None = None) -> T:
        self.stats.submitted += 1
        if endpoint is None:
            return await self._run_global(fn, None)
        semaphore, bucket, _ = self._endpoint(endpoint)
        stats = self.endpoint_stats(endpoint.key)
        if semaphore is None:
            if bucket is not None:
                await bucket.acquire()
            return await self._run_global(fn, stats)
        async with semaphore:
            if bucket is not None:
                await bucket.acquire()
            return await self._run_global(fn, stats)

    async def _run_global(self, fn: Callable[[], Awaitable[T]], endpoint_stats: ExecutorStats | None) -> T:
        async with self._global:
            if self._global_bucket is not None:
                await self._global_bucket.acquire()
            stats = self.stats
            stats.in_flight += 1
            if stats.in_flight > stats.peak_in_flight:
                stats.peak_in_flight = stats.in_flight
            if endpoint_stats is not None:
                endpoint_stats.submitted += 1
                endpoint_stats.in_flight += 1
                if endpoint_stats.in_flight > endpoint_stats.peak_in_flight:
                    endpoint_stats.peak_in_flight = endpoint_stats.in_flight
            try:
                return await fn()
            finally:
                stats.in_flight -= 1
                stats.completed += 1
                if endpoint_stats is not None:
                    endpoint_stats.in_flight -= 1
                    endpoint_stats.completed += 1


async def _aiter(items: Iterable[I] | AsyncIterable[I]) -> AsyncIterator[I]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


__all__ = [
    "AsyncioExecutor",
    "ClusterLost",
    "EndpointLimit",
    "Executor",
    "ExecutorStats",
    "Offload",
    "TokenBucket",
    "WorkLost",
    "base_dir_here",
]
