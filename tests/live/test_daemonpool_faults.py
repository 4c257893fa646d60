"""DaemonThreadPool and call_in_thread under faults: what a call raises that an asyncio future refuses, a queued call
behind a live one, a finished worker counted idle twice, the loop closing under running calls, and many concurrent
calls whose timers race their results (real threads, real event loops; the only clocks are generous bounds)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.lanes.daemonpool import (
    CallRaised,
    CallTimedOut,
    DaemonThreadPool,
    call_each_in_thread,
    call_in_thread,
)

#: Far beyond any call in these tests: reached only by a call that never comes back (the fault under test).
HUNG = 30.0


class Custom(BaseException):
    pass


@pytest.mark.parametrize("timeout", [None, 5.0])
@pytest.mark.parametrize("raised", [StopIteration("spent"), asyncio.CancelledError("host"), StopIteration()])
def test_what_a_future_refuses_comes_back_as_call_raised_never_a_hang(
    timeout: float | None, raised: BaseException
) -> None:
    """StopIteration cannot be set on an asyncio future (the thread's hand-off failed and the caller waited for
    ever); a CancelledError would read as the awaiting task's own cancellation."""
    pool = DaemonThreadPool(1, name="t")

    def fail() -> None:
        raise raised

    async def scenario() -> tuple[BaseException, BaseException]:
        with pytest.raises(CallRaised) as single:
            await asyncio.wait_for(call_in_thread(pool, fail, timeout), HUNG)
        with pytest.raises(CallRaised) as each:
            await asyncio.wait_for(call_each_in_thread(pool, [fail], timeout), HUNG)
        return single.value, each.value

    single, each = asyncio.run(scenario())
    assert single.raised is raised and single.__cause__ is raised and each.raised is raised
    assert type(raised).__name__ in str(single)
    pool.shutdown()


def test_a_queued_call_waits_for_a_live_thread_and_is_not_failed_for_want_of_one() -> None:
    """One abandoned call holds one thread of two (the cap): the other runs a live call. A call queued behind it
    waits for it, however long: only abandoned calls holding every thread fail a queued call."""
    pool = DaemonThreadPool(1, name="t", max_abandoned=1)
    hung, live_started, live_release = threading.Event(), threading.Event(), threading.Event()

    def live() -> str:
        live_started.set()
        live_release.wait(HUNG)
        return "live"

    async def scenario() -> tuple[str, str]:
        with pytest.raises(CallTimedOut):
            await call_in_thread(pool, lambda: hung.wait(HUNG), 0.2)
        assert pool.abandoned == 1
        running = asyncio.ensure_future(call_in_thread(pool, live, None))
        while not live_started.is_set():
            await asyncio.sleep(0.01)
        # The queued call's clock is checked at 0.3 s, long before the live call ends (1.5 s): it must go on waiting.
        asyncio.get_running_loop().call_later(1.5, live_release.set)
        queued = await call_in_thread(pool, lambda: "queued", 0.3)
        return await running, queued

    assert asyncio.run(scenario()) == ("live", "queued")
    assert pool.threads == 2
    hung.set()
    pool.shutdown()


def test_a_worker_that_took_a_queued_call_is_not_counted_idle() -> None:
    """A worker that finishes a call and takes one queued while none was idle is busy: a call submitted after its
    neighbour was abandoned gets the replacement thread, not a wait behind busy ones."""
    pool = DaemonThreadPool(2, name="t")
    release = threading.Event()
    c_started = threading.Event()
    a_release = threading.Event()
    a = pool.submit(a_release.wait, HUNG)
    b = pool.submit(release.wait, HUNG)

    def c() -> None:
        c_started.set()
        release.wait(HUNG)

    pool.submit(c)  # queued: both workers busy
    a_release.set()
    assert a.result(timeout=HUNG) is True
    assert c_started.wait(HUNG)  # A's worker took C
    pool.abandon(b)  # B's worker is replaced: the pool may have a third thread
    assert pool.submit(lambda: "served").result(timeout=HUNG) == "served"
    release.set()
    pool.shutdown()


def test_the_loop_closing_while_calls_run_is_silent() -> None:
    """A call timed out, and one whose awaiting task was cancelled when the loop ended, both return after the loop
    closed: nothing raised, nothing logged, the process exits."""
    script = textwrap.dedent(
        """
        import asyncio, time
        from evalglass.lanes.daemonpool import CallTimedOut, DaemonThreadPool, call_in_thread
        pool = DaemonThreadPool(2, name="t")

        async def main():
            asyncio.ensure_future(call_in_thread(pool, lambda: time.sleep(0.5) or "late", None))
            try:
                await call_in_thread(pool, lambda: time.sleep(0.5) or "late", 0.05)
            except CallTimedOut:
                print("timed out")

        asyncio.run(main())
        time.sleep(1.0)
        print("done", pool.abandoned)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["timed", "out", "done", "0"]
    assert done.stderr == ""


@dataclass(frozen=True)
class Plan:
    """One call of the race: how long its body runs, what it ends with, its timeout, and whether its awaiting task
    is cancelled (after ``cancel_after`` seconds)."""

    seconds: float
    ends: str  # "value" or the name of what it raises
    timeout: float | None
    cancel_after: float | None


_RAISED: dict[str, type[BaseException]] = {
    "ValueError": ValueError,
    "SystemExit": SystemExit,
    "KeyboardInterrupt": KeyboardInterrupt,
    "Custom": Custom,
    "StopIteration": StopIteration,
    "CancelledError": asyncio.CancelledError,
}

plans = st.builds(
    Plan,
    seconds=st.sampled_from([0.0, 0.001, 0.01, 0.03, 0.06]),
    ends=st.sampled_from(["value", "value", "value", *_RAISED]),
    timeout=st.sampled_from([None, 0.005, 0.02, 0.04, 1.0]),
    cancel_after=st.sampled_from([None, None, None, 0.0, 0.01, 0.03]),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(plans, min_size=1, max_size=12),
    workers=st.integers(1, 3),
    max_abandoned=st.integers(0, 3),
)
def test_each_call_has_one_outcome_and_it_is_what_happened(calls: list[Plan], workers: int, max_abandoned: int) -> None:
    """However the timers, results and cancellations interleave: a value comes back only from a body that ran to its
    end; what a body raised comes back as itself (or as the cause of CallRaised); a call timed out after starting had
    started, one timed out while queued never runs; nothing is logged by the loop; no thread stays abandoned."""
    pool = DaemonThreadPool(workers, name="race", max_abandoned=max_abandoned)
    started: set[int] = set()
    finished: set[int] = set()
    raised: dict[int, BaseException] = {}
    lock = threading.Lock()

    def body(index: int, plan: Plan) -> Any:
        with lock:
            started.add(index)
        time.sleep(plan.seconds)
        with lock:
            finished.add(index)
        if plan.ends != "value":
            exc = _RAISED[plan.ends](f"call {index}")
            raised[index] = exc
            raise exc
        return ("token", index)

    async def one(index: int, plan: Plan) -> Any:
        try:
            return await call_in_thread(pool, lambda: body(index, plan), plan.timeout)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # SystemExit and the like are outcomes here
            return exc

    async def scenario() -> tuple[list[Any], list[Any]]:
        loop = asyncio.get_running_loop()
        logged: list[Any] = []
        loop.set_exception_handler(lambda _loop, context: logged.append(context))
        tasks = [asyncio.ensure_future(one(index, plan)) for index, plan in enumerate(calls)]
        for task, plan in zip(tasks, calls, strict=True):
            if plan.cancel_after is not None:
                loop.call_later(plan.cancel_after, task.cancel)
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), HUNG)
        return outcomes, logged

    outcomes, logged = asyncio.run(scenario())
    deadline = time.monotonic() + HUNG  # every body ends within 0.06 s of starting: let the abandoned ones end
    while pool.abandoned and time.monotonic() < deadline:
        time.sleep(0.01)
    assert logged == []
    assert pool.abandoned == 0
    assert pool.threads <= workers + max_abandoned
    for index, (plan, outcome) in enumerate(zip(calls, outcomes, strict=True)):
        if isinstance(outcome, tuple):
            assert outcome == ("token", index) and index in finished and plan.ends == "value"
        elif isinstance(outcome, CallTimedOut):
            assert plan.timeout is not None and outcome.timeout == plan.timeout
            if outcome.queued:
                assert index not in started  # withdrawn: it never runs
            else:
                assert index in started
        elif isinstance(outcome, asyncio.CancelledError):
            assert plan.cancel_after is not None  # only a cancelled task ends cancelled
        elif isinstance(outcome, CallRaised):
            assert outcome.raised is raised[index] and plan.ends in ("StopIteration", "CancelledError")
        else:
            assert outcome is raised[index] and type(outcome).__name__ == plan.ends
    pool.shutdown()


def test_a_call_that_overran_is_timed_out_even_when_a_busy_loop_reads_its_result_first() -> None:
    """The call's own time decides, not the loop's load: the loop is blocked past the call's deadline and past its
    end, so the hand-off is read before the timer; the call ran 0.3 s against a 0.1 s timeout, and is timed out.
    The watched chunk (call_each_in_thread) the same, and the calls after the late one are made."""
    pool = DaemonThreadPool(2, name="t")

    def late() -> str:
        time.sleep(0.3)
        return "late"

    async def scenario() -> tuple[Any, Any]:
        loop = asyncio.get_running_loop()
        loop.call_soon(time.sleep, 1.0)  # the loop is busy until well after the call returned
        try:
            single: Any = await call_in_thread(pool, late, 0.1)
        except CallTimedOut as exc:
            single = exc
        loop.call_soon(time.sleep, 1.0)
        each, _ = await call_each_in_thread(pool, [lambda: "first", late, lambda: "after"], 0.1)
        return single, each

    single, each = asyncio.run(scenario())
    assert isinstance(single, CallTimedOut) and not single.queued
    assert each[0] == "first" and isinstance(each[1], CallTimedOut) and each[2] == "after"
    pool.shutdown()
