"""DaemonThreadPool: an executor like any other, whose workers never keep the process alive."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from evalglass.lanes.daemonpool import CallTimedOut, DaemonThreadPool, call_in_thread


def test_results_and_exceptions_come_back_through_the_future() -> None:
    pool = DaemonThreadPool(2, name="t")
    assert pool.submit(lambda a, b=0: a + b, 2, b=3).result(timeout=10) == 5
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(timeout=10)
    pool.shutdown()


def test_no_more_workers_than_allowed_and_idle_ones_are_reused() -> None:
    pool = DaemonThreadPool(3, name="t")
    release = threading.Event()
    running: set[str] = set()
    lock = threading.Lock()

    def block() -> str:
        with lock:
            running.add(threading.current_thread().name)
        release.wait(10)
        return threading.current_thread().name

    futures = [pool.submit(block) for _ in range(8)]
    deadline = time.monotonic() + 10
    while len(running) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)  # a fourth worker, were one started, would have shown up by now
    assert len(running) == 3
    release.set()
    names = {future.result(timeout=10) for future in futures}
    assert names == running and all(thread.daemon for thread in pool._threads)
    for _ in range(5):  # one call at a time: served by the idle workers, no new thread
        pool.submit(lambda: None).result(timeout=10)
    assert len(pool._threads) == 3
    pool.shutdown()


def test_shutdown_cancels_calls_not_started_and_refuses_new_ones() -> None:
    pool = DaemonThreadPool(1, name="t")
    release = threading.Event()
    started = pool.submit(release.wait, 10)
    waiting = pool.submit(lambda: "never")
    time.sleep(0.05)
    pool.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(CancelledError):
        waiting.result(timeout=10)
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: None)
    release.set()
    assert started.result(timeout=10) is True


def test_a_hung_call_does_not_keep_the_process_alive() -> None:
    script = textwrap.dedent(
        """
        import time
        from evalglass.lanes.daemonpool import CallTimedOut, DaemonThreadPool, call_in_thread
        pool = DaemonThreadPool(1, name="t")
        pool.submit(time.sleep, 60)
        time.sleep(0.1)
        pool.shutdown(wait=False)
        print("done")
        """
    )
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=50, check=True)
    assert done.stdout.strip() == "done"
    assert time.monotonic() - start < 30  # the sleeping call is abandoned with the process, not waited for


def _run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_an_abandoned_call_is_replaced_and_queued_time_never_counts() -> None:
    pool = DaemonThreadPool(1, name="t", max_abandoned=2)
    release = threading.Event()

    async def scenario() -> list[Any]:
        # The one worker hangs; its call is abandoned at its timeout and a replacement thread serves the next call.
        with pytest.raises(CallTimedOut) as hung:
            await call_in_thread(pool, lambda: release.wait(30), 0.2)
        assert not hung.value.queued and pool.abandoned == 1
        healthy = await call_in_thread(pool, lambda: "ok", 5)
        return [healthy, pool.threads]

    healthy, threads = _run(scenario())
    assert healthy == "ok" and threads == 2
    release.set()
    pool.shutdown()


def test_only_when_the_cap_is_reached_does_a_call_fail_for_want_of_a_thread() -> None:
    pool = DaemonThreadPool(1, name="t", max_abandoned=0)
    release = threading.Event()

    async def scenario() -> CallTimedOut:
        with pytest.raises(CallTimedOut):
            await call_in_thread(pool, lambda: release.wait(30), 0.2)
        with pytest.raises(CallTimedOut) as waiting:
            await call_in_thread(pool, lambda: "never started", 0.2)
        return waiting.value

    waited = _run(scenario())
    assert waited.queued and pool.threads == 1
    release.set()
    pool.shutdown()


def test_what_the_call_raises_comes_back_system_exit_included() -> None:
    pool = DaemonThreadPool(1, name="t")

    def leave() -> None:
        sys.exit(3)

    async def scenario() -> None:
        with pytest.raises(SystemExit):
            await call_in_thread(pool, leave, 5)

    _run(scenario())
    pool.shutdown()
