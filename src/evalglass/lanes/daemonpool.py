"""A thread pool whose workers never keep the process alive.

Host functions of a python lane are synchronous code the run cannot interrupt: a call that times out is abandoned,
not killed (Python threads cannot be killed). ``concurrent.futures.ThreadPoolExecutor`` joins its workers when the
interpreter exits, so one abandoned call that never returns would keep a finished run, or one stopped with Ctrl-C,
from ever exiting. These workers are daemon threads: the run exits when its own work is done, and an abandoned call
ends with the process.

Limit: a daemon thread still running at exit is stopped wherever it is, so host code that must clean up (close a
file, flush a buffer) cannot rely on finishing after its call was abandoned.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from queue import SimpleQueue
from typing import Any

_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonThreadPool(Executor):
    """At most ``workers`` daemon threads, started as work arrives while none is idle, reused afterwards."""

    def __init__(self, workers: int, name: str) -> None:
        if workers < 1:
            raise ValueError("a pool needs at least one worker")
        self._workers = workers
        self._name = name
        self._queue: SimpleQueue[_Work | None] = SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a pool that was shut down")
            future: Future[Any] = Future()
            self._queue.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._workers:
                thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)
            return future

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
            del item, future, fn, args, kwargs  # drop references before waiting for the next call
            self._idle.release()

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
