"""How a run stops on a signal: SIGTERM is treated like SIGINT (Ctrl-C), and a live run shuts down cleanly.

Both end the run as interrupted: the folder keeps its manifest, finished calls are in the cache, one line says how
to resume, exit 130. In a live run the first signal cancels the run's main task, whose ``finally`` blocks close every
HTTP client and reap every process; a second signal while that happens is ignored (it used to abort the clean-up
half way and leave "Unclosed client session" warnings behind); a third raises ``KeyboardInterrupt`` at once, for a
clean-up that does not finish. Handlers are installed only in the main thread and restored afterwards.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # every run imports this module; only a live run needs asyncio
    import asyncio

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: The signal that raises KeyboardInterrupt even while a live run is shutting down.
_FORCE_AT = 3


def interrupt_inside(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C or a SIGTERM that a library turned into an error of its own: the
    ``KeyboardInterrupt`` in its cause or context, or (pydantic-core, which builds a model's validator lazily and
    reports what a Python callback raised as a ``SchemaError`` holding only its text) named in a ``SchemaError``'s
    message. Such a run was stopped, not broken: it ends as interrupted (exit 130, resumable), not as an internal
    error that removes its folder."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        if type(current).__name__ == "SchemaError" and "KeyboardInterrupt" in str(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def terminate_like_interrupt() -> Iterator[None]:
    """SIGTERM raises ``KeyboardInterrupt`` where SIGINT would (main thread only; the old handler comes back)."""
    if not _main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class LoopStopper:
    """The signal handling of a live run's event loop (see the module docstring)."""

    def __init__(self) -> None:
        self.signals = 0
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self) -> None:
        """Called first thing in the run's main coroutine: the task the first signal cancels."""
        import asyncio

        self._task = asyncio.current_task()
        self._loop = asyncio.get_running_loop()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        task, loop = self._task, self._loop
        if task is None or loop is None or self.signals >= _FORCE_AT:
            raise KeyboardInterrupt
        if self.signals == 1 and not task.done():
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wake the loop if it sleeps in select()

    def request_stop(self) -> None:
        """Stop the run as a first signal would, from any thread: a lost cluster stops it like Ctrl-C."""
        loop = self._loop
        if loop is None:
            return

        def stop() -> None:
            if self.signals == 0:
                self.signals = 1
                if self._task is not None and not self._task.done():
                    self._task.cancel()

        with contextlib.suppress(RuntimeError):  # the loop already closed: the run has ended anyway
            loop.call_soon_threadsafe(stop)

    @contextlib.contextmanager
    def installed(self) -> Iterator[LoopStopper]:
        if not _main_thread():
            yield self
            return
        previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._handle)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


__all__ = ["STOP_SIGNALS", "LoopStopper", "terminate_like_interrupt"]
