"""Progress of a live run: a bar on a terminal, a plain line every few seconds in CI logs.

Both read the same :class:`Counters`, which the live run updates as examples are written. Everything printed is
counts and durations: no prompt, output, URL or key ever reaches the progress output.

Every run imports this module (the CLI makes a reporter before it knows whether the run is live), so asyncio and
rich's progress bar are imported only once a live run starts reporting.
"""

from __future__ import annotations

import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from evalglass.core.score import Score


@dataclass
class Counters:
    """What the live run has done so far. ``done`` counts dataset lines written to ``scores.jsonl``."""

    total: int | None = None
    done: int = 0
    calls: int = 0
    cached: int = 0
    retries: int = 0
    lane_failures: int = 0
    judge_failures: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    in_flight: Callable[[], int] = lambda: 0

    def count_result(self, result: Any, times: int) -> None:
        status = result.status.value if isinstance(result, Score) else "scored"
        self.statuses[status] = self.statuses.get(status, 0) + times

    def by_status(self) -> str:
        order = ("scored", "error", "blocked", "non_evaluable", "skipped")
        return " ".join(f"{name} {self.statuses[name]}" for name in order if self.statuses.get(name))


class Reporter(ABC):
    """Shows :class:`Counters` while a live run is going. ``run`` is a task on the run's loop; ``close`` ends it."""

    interval: float = 1.0

    def __init__(self) -> None:
        self.counters = Counters()
        self.started = time.monotonic()

    @property
    def done(self) -> int:
        return self.counters.done

    async def run(self) -> None:
        import asyncio

        self.started = time.monotonic()
        while True:
            self.update()
            await asyncio.sleep(self.interval)

    def eta(self) -> float | None:
        counters = self.counters
        elapsed = time.monotonic() - self.started
        if counters.total is None or counters.done == 0 or elapsed <= 0:
            return None
        return max(0.0, (counters.total - counters.done) * elapsed / counters.done)

    @abstractmethod
    def update(self) -> None: ...

    def close(self) -> None:  # noqa: B027 - optional
        pass


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, seconds = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def summary_line(counters: Counters, eta: float | None) -> str:
    total = "?" if counters.total is None else str(counters.total)
    parts = [f"{counters.done}/{total} examples"]
    if counters.statuses:
        parts.append(f"scores: {counters.by_status()}")
    parts.append(f"calls {counters.calls} ({counters.cached} cached)")
    parts.append(f"in flight {counters.in_flight()}")
    parts.append(f"retries {counters.retries}")
    if counters.lane_failures or counters.judge_failures:
        parts.append(f"failed: lane {counters.lane_failures}, judge {counters.judge_failures}")
    parts.append(f"ETA {_duration(eta)}")
    return " · ".join(parts)


class PlainReporter(Reporter):
    """For logs (CI): one line to stderr every ``interval`` seconds, and a last one at the end."""

    def __init__(self, stream: TextIO | None = None, interval: float = 5.0) -> None:
        super().__init__()
        self.stream = stream or sys.stderr
        self.interval = interval
        self._first = True

    async def run(self) -> None:
        import asyncio

        self.started = time.monotonic()
        while True:
            await asyncio.sleep(self.interval)
            self.update()

    def update(self) -> None:
        print(f"evalglass: {summary_line(self.counters, self.eta())}", file=self.stream, flush=True)

    def close(self) -> None:
        elapsed = time.monotonic() - self.started
        counters = self.counters
        print(
            f"evalglass: scored {counters.done} examples in {elapsed:.2f}s "
            f"({counters.calls} calls, {counters.cached} from cache, {counters.retries} retries)",
            file=self.stream,
            flush=True,
        )


class RichReporter(Reporter):
    """A live bar on a terminal (stderr), redrawn a few times a second."""

    interval = 0.25

    def __init__(self) -> None:
        super().__init__()
        self.progress: Any = None  # a rich Progress, made on the first update
        self.task: Any = None

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("[bold]evalglass[/bold]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[detail]}"),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.progress.add_task("run", total=None, detail="")
        self.progress.start()

    def update(self) -> None:
        if self.progress is None:
            self._start()
        counters = self.counters
        detail = (
            f"{counters.by_status() or 'starting'} · in flight {counters.in_flight()} · "
            f"retries {counters.retries} · cached {counters.cached}"
        )
        self.progress.update(self.task, total=counters.total, completed=counters.done, detail=detail)

    def close(self) -> None:
        if self.progress is not None:
            self.update()
            self.progress.stop()


def reporter_for(stream: TextIO | None = None) -> Reporter:
    """A bar when stderr is a terminal, plain lines otherwise (CI, pipes, files)."""
    target = stream or sys.stderr
    if target.isatty():
        return RichReporter()
    return PlainReporter(target)


__all__ = ["Counters", "PlainReporter", "Reporter", "RichReporter", "reporter_for", "summary_line"]
