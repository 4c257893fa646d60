"""A thread pool whose workers never keep the process alive, and that replaces workers held by abandoned calls.

Host functions of a python lane are synchronous code the run cannot interrupt: a call that times out is abandoned,
not killed (Python threads cannot be killed). ``concurrent.futures.ThreadPoolExecutor`` joins its workers when the
interpreter exits, so one abandoned call that never returns would keep a finished run, or one stopped with Ctrl-C,
from ever exiting. These workers are daemon threads: the run exits when its own work is done, and an abandoned call
ends with the process.

An abandoned call still holds its thread. So that hung calls do not starve healthy ones, the pool may start one
extra thread for every abandoned call still running, up to ``max_abandoned`` of them (default
:data:`ABANDONED_PER_WORKER` per worker); :func:`call_in_thread` starts an example's clock only when a thread
picks its call up, so time spent queued never counts against it. Only when abandoned calls hold every thread the
pool may have (the cap is reached) does a call that cannot start within its timeout fail, as :class:`CallTimedOut`
with ``queued=True``, naming the abandoned calls as the cause; behind a live call it waits.

Limit: a daemon thread still running at exit is stopped wherever it is, so host code that must clean up (close a
file, flush a buffer) cannot rely on finishing after its call was abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from queue import SimpleQueue
from typing import Any, Generic, TypeVar

T = TypeVar("T")
A = TypeVar("A")
_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]

#: Extra threads allowed per worker for calls abandoned while still running (the cap on replacements).
ABANDONED_PER_WORKER = 4


class DaemonThreadPool(Executor):
    """At most ``workers`` daemon threads for live calls, plus one per abandoned call still running (at most
    ``max_abandoned``), started as work arrives while none is idle, reused afterwards."""

    def __init__(self, workers: int, name: str, *, max_abandoned: int | None = None) -> None:
        if workers < 1:
            raise ValueError("a pool needs at least one worker")
        self._workers = workers
        self._max_abandoned = ABANDONED_PER_WORKER * workers if max_abandoned is None else max_abandoned
        self._name = name
        self._queue: SimpleQueue[_Work | None] = SimpleQueue()
        # Under _lock, counters rather than a Semaphore (read without blocking). At most one is non-zero: ``_idle``
        # workers wait for a call no queued one is meant for, or ``_unserved`` queued calls have no worker coming
        # for them yet. A worker that finishes a call takes an unserved one before it counts itself idle: counted
        # idle after taking a call queued while none was, it would be idle twice, and a later call would wait
        # behind busy threads instead of starting the thread it may have.
        self._idle = 0
        self._unserved = 0
        self._threads: list[threading.Thread] = []
        self._abandoned: set[Future[Any]] = set()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def abandoned(self) -> int:
        """Calls given up on that still hold a thread."""
        with self._lock:
            return len(self._abandoned)

    @property
    def threads(self) -> int:
        with self._lock:
            return len(self._threads)

    def _limit(self) -> int:
        return self._workers + min(len(self._abandoned), self._max_abandoned)

    def saturated(self) -> bool:
        """True when abandoned calls hold every thread and the cap allows no other: a queued call may wait for ever.
        While one thread runs a live call, a queued call waits for it (that call ends, or is abandoned in its turn)."""
        with self._lock:
            return bool(self._abandoned) and len(self._abandoned) >= len(self._threads) >= self._limit()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a pool that was shut down")
            future: Future[Any] = Future()
            self._queue.put((future, fn, args, kwargs))
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self._limit():
                self._start_thread()
            else:
                self._unserved += 1
            return future

    def _start_thread(self) -> None:
        thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def abandon(self, future: Future[Any]) -> None:
        """The caller gave up on ``future``: if it is still running, its thread no longer counts as capacity, and
        a queued call gets a new thread (within the cap)."""
        with self._lock:
            if future.done() or not future.running():
                return
            self._abandoned.add(future)
            if not self._closed and self._unserved and len(self._threads) < self._limit():
                self._unserved -= 1
                self._start_thread()

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # the caller gets it through the future, as with any executor
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del item, fn, args, kwargs  # drop references before waiting for the next call
            with self._lock:
                self._abandoned.discard(future)
                if self._unserved:
                    self._unserved -= 1
                else:
                    self._idle += 1
            del future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking work; ``cancel_futures`` cancels calls not yet started. ``wait`` joins the workers, which
        waits for any call still running (a hung one too): the run itself never waits."""
        with self._lock:
            self._closed = True
            if cancel_futures:
                pending: list[_Work] = []
                while not self._queue.empty():
                    item = self._queue.get_nowait()
                    if item is not None:
                        pending.append(item)
                for future, *_ in pending:
                    future.cancel()
            for _ in self._threads:
                self._queue.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


class CallTimedOut(Exception):
    """A call in a thread did not finish within its timeout (``queued``: it never started, every thread being held
    by abandoned calls)."""

    def __init__(self, timeout: float, *, queued: bool, abandoned: int = 0) -> None:
        self.timeout = timeout
        self.queued = queued
        self.abandoned = abandoned
        super().__init__(f"timed out after {timeout:g}s" + (" waiting for a free thread" if queued else ""))


class CallRaised(RuntimeError):
    """The call raised what cannot come back through an await as itself: ``StopIteration`` (an asyncio future
    refuses it, so the awaiting task would wait for ever, and a coroutine turns it into ``RuntimeError``) or
    ``asyncio.CancelledError`` (it would read as the awaiting task's own cancellation). ``raised`` (also the
    ``__cause__``) is what the call raised."""

    def __init__(self, raised: BaseException) -> None:
        self.raised = raised
        super().__init__(f"{type(raised).__name__}: {raised}" if str(raised) else type(raised).__name__)
        self.__cause__ = raised


#: What a call may raise that cannot cross into an asyncio future as itself (see :class:`CallRaised`).
_UNCROSSABLE = (StopIteration, asyncio.CancelledError)


def _crossing(fn: Callable[[], T]) -> T:
    """``fn()``, with what cannot cross into an asyncio future as itself raised as :class:`CallRaised`."""
    try:
        return fn()
    except _UNCROSSABLE as exc:
        raise CallRaised(exc) from exc


async def call_in_thread(pool: DaemonThreadPool, fn: Callable[[], T], timeout: float | None) -> T:
    """``fn()`` on one of ``pool``'s threads, with ``timeout`` counted from the moment a thread starts it.

    On expiry the call is abandoned (its thread replaced, see the module docstring) and :class:`CallTimedOut`
    raised. Whatever ``fn`` raises (``SystemExit`` included) is raised here, ``StopIteration`` and
    ``asyncio.CancelledError`` as :class:`CallRaised`. ``timeout=None``: no limit.

    One wake-up of the event loop per call (the thread hands its outcome back with one ``call_soon_threadsafe``)
    and, with a timeout, one timer that reads when the thread started the call: an agent makes a call like this per
    tool call, where a second wake-up to say the call started cost about as much CPU as the rest of the hand-off.
    """
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[T] = loop.create_future()
    clock = _CallClock()

    def deliver(value: Any, failure: BaseException | None) -> None:
        if not waiter.done():
            if failure is None:
                waiter.set_result(value)
            else:
                waiter.set_exception(failure)

    def run() -> None:
        since = clock.since = time.monotonic()
        try:
            value, failure = fn(), None
        except BaseException as exc:  # the caller gets it, as from any executor
            value, failure = None, CallRaised(exc) if isinstance(exc, _UNCROSSABLE) else exc
        clock.finished = True
        if timeout is not None and time.monotonic() - since > timeout:
            # It overran: timed out, whatever it came to. A loop kept busy past the deadline runs this hand-off
            # before the timer, so without this the outcome would depend on the loop's load, not the call's time.
            value, failure = None, CallTimedOut(timeout, queued=False)
        with contextlib.suppress(RuntimeError):  # the loop closed while the call ran: nobody is waiting
            loop.call_soon_threadsafe(deliver, value, failure)

    work: Future[None] = pool.submit(run)
    timer: asyncio.TimerHandle | None = None

    def check() -> None:
        """The timer: time the call out once it has run ``timeout`` since a thread started it; a call still queued
        fails only when abandoned calls hold every thread the pool may have."""
        nonlocal timer
        assert timeout is not None
        if waiter.done() or clock.finished:  # its outcome is on its way
            return
        if clock.since is None:
            if pool.saturated() and work.cancel():
                waiter.set_exception(CallTimedOut(timeout, queued=True, abandoned=pool.abandoned))
                return
            timer = loop.call_later(timeout, check)
            return
        left = clock.since + timeout - time.monotonic()
        if left > 0:
            timer = loop.call_later(left, check)
            return
        pool.abandon(work)
        waiter.set_exception(CallTimedOut(timeout, queued=False))

    if timeout is not None:
        timer = loop.call_later(timeout, check)
    try:
        return await waiter
    except asyncio.CancelledError:
        if not work.cancel():
            pool.abandon(work)
        raise
    finally:
        if timer is not None:
            timer.cancel()


class _CallClock:
    """When a thread started the call (``time.monotonic``; None while queued) and whether it has returned: written by
    the thread, read by the event loop's timer."""

    __slots__ = ("finished", "since")

    def __init__(self) -> None:
        self.since: float | None = None
        self.finished = False


class _Handoff(Generic[T]):
    """``fn()`` handed to a pool thread, as the event loop sees it: ``started`` once a thread picks it up (``before``
    runs on that thread first), ``result`` once it returns."""

    def __init__(self, pool: DaemonThreadPool, fn: Callable[[], T], before: Callable[[], None] | None = None) -> None:
        loop = asyncio.get_running_loop()
        started: asyncio.Future[None] = loop.create_future()
        self.pool, self.started = pool, started

        def mark_started() -> None:
            if not started.done():
                started.set_result(None)

        def run() -> T:
            if before is not None:
                before()
            with contextlib.suppress(RuntimeError):  # the loop closed while the call was queued: nobody is waiting
                loop.call_soon_threadsafe(mark_started)
            return _crossing(fn)

        self.work: Future[T] = pool.submit(run)
        self.result: asyncio.Future[T] = asyncio.wrap_future(self.work, loop=loop)

    async def started_within(self, timeout: float | None) -> bool:
        """Wait until a thread starts the work (or it is done); False, the work withdrawn, when it could not start
        within ``timeout`` because abandoned calls hold every thread the pool may have."""
        started, result = self.started, self.result
        while not started.done() and not result.done():
            waiting: set[asyncio.Future[Any]] = {started, result}
            await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if not started.done() and not result.done() and self.pool.saturated() and self.work.cancel():
                return False
        return True

    def give_up(self) -> None:
        """The caller stops waiting (cancelled): withdraw the work if it has not started, else abandon its thread."""
        if not self.work.cancel():
            self.pool.abandon(self.work)

    def close(self) -> None:
        if not self.result.done():
            self.result.cancel()  # the asyncio side only; the thread's future is abandoned or withdrawn
        if not self.started.done():
            self.started.cancel()
        self.result.add_done_callback(_consume)


class _Chunk:
    """Calls ``fn(argument)`` for each of ``arguments``, one after another on one thread. The thread publishes which
    call is running and since when, so the watchdog on the event loop can time that call out; ``stopped`` (set under
    ``lock``) tells the thread to drop the call it is in and run no more, so a call is either in ``results`` or
    timed out, never both."""

    __slots__ = ("arguments", "budget", "elapsed", "fn", "lock", "overran", "results", "since", "stopped", "timeout")

    def __init__(
        self, fn: Callable[[Any], Any], arguments: Sequence[Any], budget: float | None, timeout: float | None = None
    ) -> None:
        self.fn = fn
        self.arguments = arguments
        self.budget = budget
        self.timeout = timeout
        self.overran = False  # a call returned after its timeout before the watchdog saw it: timed out, not kept
        self.lock = threading.Lock()
        self.results: list[Any] = []
        self.since = 0.0  # when the running call started (time.monotonic)
        self.stopped = False
        self.elapsed = 0.0  # thread time spent in the calls that finished

    def run_unwatched(self) -> None:
        started = time.perf_counter()
        fn, results, budget = self.fn, self.results, self.budget
        for argument in self.arguments:
            if self.stopped:  # cancelled: the run is stopping
                return
            results.append(fn(argument))
            if budget is not None and time.perf_counter() - started > budget:
                break  # slower than the caller planned for: the rest go back to it
        self.elapsed = time.perf_counter() - started

    def run_watched(self) -> None:
        started = time.perf_counter()
        fn, lock, results, budget, timeout = self.fn, self.lock, self.results, self.budget, self.timeout
        for argument in self.arguments:
            with lock:
                if self.stopped:
                    return
                self.since = time.monotonic()
            value = fn(argument)
            with lock:
                if self.stopped:  # timed out (or cancelled) while running: the watchdog already answered for it
                    return
                if timeout is not None and time.monotonic() - self.since > timeout:
                    self.stopped = self.overran = True  # the watchdog lagged (a busy loop): the call's time decides
                    return
                results.append(value)
                # The next call's clock starts now at the latest: the watchdog never reads a finished call's start
                # as the next call's (it would time out a call that has barely begun).
                self.since = time.monotonic()
                if budget is not None and time.perf_counter() - started > budget:
                    self.stopped = True  # slower than the caller planned for: the rest go back to it
                    break
        self.elapsed = time.perf_counter() - started

    def stop_if_running(self, index: int) -> bool:
        """Stop the chunk if call ``index`` is still the one running; False when it has already finished."""
        with self.lock:
            if len(self.results) != index or self.stopped:
                return False
            self.stopped = True
            return True


async def call_each_in_thread(
    pool: DaemonThreadPool, fns: Sequence[Callable[[], T]], timeout: float | None, budget: float | None = None
) -> tuple[list[T | CallTimedOut], float]:
    """Each of ``fns`` called in turn on one of ``pool``'s threads: :func:`call_with_each_in_thread` of
    ``fn()``."""
    return await call_with_each_in_thread(pool, operator.call, fns, timeout, budget)


async def call_with_each_in_thread(
    pool: DaemonThreadPool,
    fn: Callable[[A], T],
    arguments: Sequence[A],
    timeout: float | None,
    budget: float | None = None,
) -> tuple[list[T | CallTimedOut], float]:
    """``fn(argument)`` for each of ``arguments`` in turn on one of ``pool``'s threads (one hand-off for them all,
    not one per call, and no callable made per call), each with ``timeout`` counted from the moment the thread
    starts that call: :func:`call_in_thread` for a run of cheap calls. Returns one result per call, in order (a
    :class:`CallTimedOut` for a call that timed out or could not start), and the thread time the finished calls
    took. With a ``budget`` (seconds), the thread takes no further call once the calls so far took longer: then
    fewer results than calls come back, and the caller decides what to do with the rest (run them more widely:
    they are slower than it planned for).

    A watchdog on the event loop keeps each call's deadline: when a call overruns, it is abandoned with its thread
    (replaced as in :func:`call_in_thread`) and the calls after it go on in a new hand-off. ``fn`` must not raise
    (a call's outcome is its value); if it does, that is raised here, and the calls after it are not made.
    """
    results: list[T | CallTimedOut] = []
    elapsed = 0.0
    remaining = arguments
    while remaining:
        chunk = _Chunk(fn, remaining, budget, timeout)
        late = await _run_chunk(pool, chunk, timeout)
        results.extend(chunk.results)
        elapsed += chunk.elapsed
        if late is None:  # every call made, or the budget spent
            break
        results.append(late)
        remaining = remaining[len(chunk.results) + 1 :]
    return results, elapsed


async def _run_chunk(pool: DaemonThreadPool, chunk: _Chunk, timeout: float | None) -> CallTimedOut | None:
    """Run ``chunk`` on a thread; None when every call finished, else why the next one did not (its results hold
    the calls before it)."""
    if timeout is None:
        work = pool.submit(_crossing, chunk.run_unwatched)
        result = asyncio.wrap_future(work, loop=asyncio.get_running_loop())
        try:
            await result
        except asyncio.CancelledError:
            chunk.stopped = True
            if not work.cancel():
                pool.abandon(work)
            result.add_done_callback(_consume)
            raise
        return None

    def mark() -> None:  # before the loop hears of the start, so the first deadline it reads is never 0
        chunk.since = time.monotonic()

    handoff: _Handoff[None] = _Handoff(pool, chunk.run_watched, before=mark)
    result = handoff.result
    try:
        if not await handoff.started_within(timeout):
            return CallTimedOut(timeout, queued=True, abandoned=pool.abandoned)
        while not result.done():
            with chunk.lock:
                index, since, stopped = len(chunk.results), chunk.since, chunk.stopped
            if index == len(chunk.arguments) or stopped:  # every call done or the budget spent: the thread returns
                await asyncio.wait({result})
                break
            left = since + timeout - time.monotonic()
            if left <= 0:
                if chunk.stop_if_running(index):
                    pool.abandon(handoff.work)
                    return CallTimedOut(timeout, queued=False)
                continue  # it finished just now: watch the next call
            await asyncio.wait({result}, timeout=left)
        result.result()  # a call that raised: raised here
        return CallTimedOut(timeout, queued=False) if chunk.overran else None
    except asyncio.CancelledError:
        chunk.stopped = True
        handoff.give_up()
        raise
    finally:
        handoff.close()


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's outcome so asyncio never reports an exception nobody asked for."""
    if not future.cancelled():
        future.exception()
