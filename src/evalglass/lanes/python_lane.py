"""``type: python``: a host function as the task lane, sync or async, called with the example's fields.

A sync function's calls go to the lane's own daemon threads (one at a time, or in runs of calls sized to take about
:data:`CHUNK_BUDGET_S` when the live run hands the lane chunks); an async function is awaited on the run's loop. With
a cluster executor, each call is shipped (an async one only on request). Whatever the function raises, returns that
is not JSON, or takes longer than ``timeout`` is that example's :class:`~evalglass.lanes.ports.LaneFailure`; the
same call says the same thing in a lane thread and on a cluster worker (:func:`python_call`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from evalglass import redaction
from evalglass.core.fingerprint import content_address
from evalglass.core.redact import Redactor
from evalglass.lanes.base import (
    MAX_DETAIL,
    TASK_RESOURCES,
    LaneConfigError,
    LaneContext,
    TaskLane,
    fields_key,
    through_cache_by_fields,
)
from evalglass.lanes.callcache import CallStore
from evalglass.lanes.daemonpool import (
    CallTimedOut,
    DaemonThreadPool,
    call_each_in_thread,
    call_in_thread,
    call_with_each_in_thread,
)
from evalglass.lanes.executor import EndpointLimit, Executor, WorkLost
from evalglass.lanes.hostimports import code_digest
from evalglass.lanes.hostload import HostLoadError, host_source, load_function
from evalglass.lanes.ports import Job, LaneColumn, LaneFailure, LaneOutcome, LaneOutput
from evalglass.lanes.specs import PythonLaneSpec


class PythonLane(TaskLane):
    spec: PythonLaneSpec

    @classmethod
    def build(cls, spec: PythonLaneSpec, context: LaneContext) -> PythonLane:
        return cls(
            spec,
            base_dir=context.base_dir,
            executor=context.executor,
            cache=context.cache,
            ship_async=context.ship_async,
        )

    def __init__(
        self,
        spec: PythonLaneSpec,
        *,
        base_dir: Path,
        executor: Executor,
        cache: CallStore | None,
        ship_async: bool = False,
    ) -> None:
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        try:
            self.function = load_function(
                spec.function, base_dir, what="python lane", allow_async=True, search_base=True
            )
        except HostLoadError as exc:
            raise LaneConfigError(str(exc)) from None
        source = host_source(spec.function, base_dir)
        self.is_async = inspect.iscoroutinefunction(self.function)
        try:
            self.takes_sample = "sample" in inspect.signature(self.function).parameters
        except (TypeError, ValueError):
            self.takes_sample = False
        code_hash = code_digest(spec.function, base_dir, source)
        self.fingerprint = content_address({"type": "python", "function": spec.function, "source_sha256": code_hash})
        self.limit = EndpointLimit(key=f"python:{spec.function}", concurrency=spec.concurrency)
        self._threads: DaemonThreadPool | None = None
        #: Thread time one finished call took, on average (None until one finished): sizes the runs of calls.
        self._per_call: float | None = None
        #: An async function is I/O: it stays on the driver's event loop unless the executor is told to ship it.
        self.ship_async = ship_async
        #: The shipped call with the host function bound once: an executor that ships sends the function (pickled
        #: by value) with the call's definition, once, not with every call.
        self._shipped = functools.partial(shipped_python_call, self.function, spec.function)

    def _pool(self) -> DaemonThreadPool:
        if self._threads is None:
            # Daemon workers: an abandoned (timed-out) call can never keep the finished run from exiting.
            self._threads = DaemonThreadPool(self.spec.concurrency or 32, name="evalglass-python")
        return self._threads

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        key = fields_key(self.cache, self.fingerprint, fields, sample)
        kwargs = {"sample": sample} if self.takes_sample else {}
        argument = dict(fields)
        function, timeout, name = self.function, self.spec.timeout, self.spec.function
        offload = self.executor.offload

        async def shipped() -> LaneOutcome:
            assert offload is not None
            try:
                return await offload.run(TASK_RESOURCES, self._shipped, argument, kwargs, sample, timeout=timeout)
            except TimeoutError:
                return LaneFailure("task_timeout", f"{name} did not return within {timeout:g}s", sample)
            except WorkLost as exc:
                return LaneFailure("task_worker_lost", f"{name} could not run on the cluster: {exc}", sample)

        async def guarded() -> LaneOutcome:
            if self.is_async:
                return await self._awaited(lambda: function(argument, **kwargs), sample)
            try:
                called = await call_in_thread(
                    self._pool(), lambda: python_call(function, name, argument, kwargs, sample), timeout
                )
            except CallTimedOut as late:
                return self._late(late, sample)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # SystemExit, KeyboardInterrupt ... raised by host code: this example's error
                return _raised(name, exc, sample, function)
            if isinstance(called, LaneOutput | LaneFailure):
                return called
            return await self._awaited(lambda: called, sample)

        ships = offload is not None and (self.ship_async or not self.is_async)

        async def call() -> LaneOutcome:
            outcome = await self.executor.submit(shipped if ships else guarded, endpoint=self.limit)
            if key is not None and isinstance(outcome, LaneOutput):
                outcome = dataclasses.replace(outcome, call_id=key)
            return outcome

        return await through_cache_by_fields(self.cache, key, sample, "python", call)

    async def _awaited(self, start: Callable[[], Awaitable[Any]], sample: int) -> LaneOutcome:
        """What an awaitable the host function gave (an async function's coroutine) comes to, within the timeout."""
        value, failure = await self._awaited_value(start, sample)
        return failure if failure is not None else lane_value(value, self.spec.function, sample)

    async def _awaited_value(
        self, start: Callable[[], Awaitable[Any]], sample: int
    ) -> tuple[Any, None] | tuple[None, LaneFailure]:
        """:meth:`_awaited` before its value is checked to be JSON: (the value, None), or (None, why there is
        none)."""
        timeout, name = self.spec.timeout, self.spec.function
        scope: asyncio.Timeout | None = None
        try:
            if timeout is None:  # no clock to keep (asyncio.timeout(None) costs a scope per call for nothing)
                value = await start()
            else:
                async with asyncio.timeout(timeout) as scope:
                    value = await start()
        except TimeoutError as exc:
            if scope is not None and scope.expired():
                return None, LaneFailure("task_timeout", f"{name} did not return within {timeout:g}s", sample)
            return None, _raised(name, exc, sample, self.function)
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is None or task.cancelling():  # the run is stopping this example
                raise
            return None, _raised(name, exc, sample, self.function)  # raised by the host coroutine itself
        except BaseException as exc:  # SystemExit, KeyboardInterrupt ... raised by host code: this example's error
            return None, _raised(name, exc, sample, self.function)
        return value, None

    def _late(self, late: CallTimedOut, sample: int) -> LaneFailure:
        name, timeout = self.spec.function, self.spec.timeout or 0.0
        if late.queued:
            return LaneFailure(
                "task_worker_unavailable",
                f"{name} could not start within {timeout:g}s: {late.abandoned} abandoned (timed-out) calls "
                "still hold every thread the lane may use",
                sample,
            )
        return LaneFailure("task_timeout", f"{name} did not return within {timeout:g}s", sample)

    # ------------------------------------------------------------------ many calls at once (the live run's chunks)
    @property
    def chunked(self) -> bool:
        """Whether :meth:`produce_many` takes the chunked path: not with a cache (every call is looked up and
        stored on its own) nor a cluster (every call is shipped on its own)."""
        return self.cache is None and self.executor.offload is None

    async def produce_many(self, jobs: Sequence[Job]) -> list[LaneOutcome]:
        """Every job's outcome, in order, exactly as :meth:`produce` would give it, for less per call (see
        :meth:`_column`)."""
        if not self.chunked:
            return list(await asyncio.gather(*(self.produce(*job) for job in jobs)))
        samples = [sample for _, _, sample in jobs]
        column = await self._column([fields for _, fields, _ in jobs], samples)
        return column.outcomes(samples)

    async def produce_column(self, ids: Sequence[str], records: Sequence[Mapping[str, Any]], epochs: int) -> LaneColumn:
        if not self.chunked:
            return await super().produce_column(ids, records, epochs)
        if epochs == 1:
            return await self._column(records, None)
        fields = [record for record in records for _ in range(epochs)]
        return await self._column(fields, [sample for _ in records for sample in range(epochs)])

    async def _column(self, fields: Sequence[Mapping[str, Any]], samples: Sequence[int] | None) -> LaneColumn:
        """Call ``i`` of ``fields[i]`` (sample ``samples[i]``, every one 0 for None) for every ``i``, as a column.

        A sync function: the calls go to a lane thread in runs of as many as take about :data:`CHUNK_BUDGET_S`
        together (from the time calls have taken so far; one call per run until a call has finished), one
        hand-off and one executor slot per run, each call with its own timeout kept by a watchdog
        (:func:`call_each_in_thread`). Calls slower than the budget go one per run, so they run as concurrently
        as with :meth:`produce`. What the calls returned is checked to be JSON a run at a time (one
        ``orjson.dumps``; each value alone only when that fails, so every failure says what it says alone). An
        async function: a bounded set of worker coroutines awaits the calls, each through the executor, instead of
        a task per call.
        """
        values: list[Any] = [None] * len(fields)
        failures: dict[int, LaneFailure] = {}
        if self.is_async:
            await self._async_many(fields, samples, values, failures)
            return LaneColumn(values, failures)
        pending = list(range(len(fields)))
        submit, limit = self.executor.submit, self.limit
        while pending:
            # A run that proves slower than planned stops early (see _sync_run): what it left is split again by the
            # time calls take now, so a function that turns slow goes back to one call per thread.
            size = self._run_length(len(pending))
            runs = [pending[start : start + size] for start in range(0, len(pending), size)]
            made = [functools.partial(self._sync_run, fields, samples, run, values, failures) for run in runs]
            if len(made) == 1:
                done = [await submit(made[0], endpoint=limit)]
            else:
                done = await asyncio.gather(*(submit(run, endpoint=limit) for run in made))
            pending = []
            for run, finished in zip(runs, done, strict=True):
                pending.extend(run[finished:])  # ``finished`` is short of the run when it stopped early
        return LaneColumn(values, failures)

    def column_size(self) -> int:
        """As many sync calls as take about :data:`CHUNK_BUDGET_S` together (one hand-off to a lane thread, see
        :meth:`_column`), from the time calls took so far; 0 until one finished, and for an async function."""
        if self.is_async or not self.chunked:
            return 0
        return self._calls_per_budget()

    def _run_length(self, count: int) -> int:
        return max(1, min(count, self._calls_per_budget()))

    def _calls_per_budget(self) -> int:
        """How many calls take about :data:`CHUNK_BUDGET_S`, from the time calls took so far; 0 before any did."""
        if self._per_call is None:
            return 0
        return int(CHUNK_BUDGET_S / max(self._per_call, 1e-9))

    async def _sync_run(
        self,
        fields: Sequence[Mapping[str, Any]],
        samples: Sequence[int] | None,
        run: list[int],
        values: list[Any],
        failures: dict[int, LaneFailure],
    ) -> int:
        """The calls ``run`` names, on a lane thread, their outcomes put in ``values`` and ``failures``; how many
        were made (fewer than asked when the run proved slower than planned)."""
        function, name, pool, timeout = self.function, self.spec.function, self._pool(), self.spec.timeout
        # Ten times the planned time at most: a run of calls that turned slow stops and gives back the rest.
        budget = 10 * CHUNK_BUDGET_S if len(run) > 1 else None
        # The function gets a copy of each record, made here, so what it changes stays its own.
        contiguous = run[-1] - run[0] == len(run) - 1
        if self.takes_sample and samples is not None:
            calls = [
                functools.partial(python_value, function, name, {"sample": samples[i]}, samples[i], dict(fields[i]))
                for i in run
            ]
            called, elapsed = await call_each_in_thread(pool, calls, timeout, budget)
        else:
            records = fields[run[0] : run[-1] + 1] if contiguous else [fields[i] for i in run]
            call = functools.partial(python_value, function, name, _SAMPLE_0 if self.takes_sample else _NO_KWARGS, 0)
            called, elapsed = await call_with_each_in_thread(pool, call, list(map(dict, records)), timeout, budget)
        plain = _PLAIN_TYPES.issuperset(map(type, called))  # so no call timed out
        finished = len(called) if plain else sum(1 for value in called if type(value) is not CallTimedOut)
        if elapsed > 0 and finished == len(called):
            per_call = elapsed / finished
            self._per_call = per_call if self._per_call is None else 0.8 * self._per_call + 0.2 * per_call
        if len(called) == len(run) and contiguous and plain:
            values[run[0] : run[-1] + 1] = called  # the common case: every call returned a built-in JSON type
            self._check_json(run, values, failures, samples)
            return len(called)
        returned: list[int] = []  # the calls that returned a value, which must be JSON
        for index, value in zip(run, called, strict=False):  # fewer results: the budget was spent
            if type(value) is LaneFailure:
                failures[index] = value
            elif type(value) is CallTimedOut:
                failures[index] = self._late(value, samples[index] if samples is not None else 0)
            elif type(value) is _Returned:
                if not inspect.isawaitable(value.value):
                    values[index] = value.value
                    returned.append(index)
                    continue
                # a sync function that returned an awaitable
                sample = samples[index] if samples is not None else 0
                outcome = await self._awaited(functools.partial(_itself, value.value), sample)
                if isinstance(outcome, LaneOutput):
                    values[index] = outcome.value
                else:
                    failures[index] = outcome
            else:
                values[index] = value
                returned.append(index)
        self._check_json(returned, values, failures, samples)
        return len(called)

    def _check_json(
        self, indexes: list[int], values: list[Any], failures: dict[int, LaneFailure], samples: Sequence[int] | None
    ) -> None:
        """:func:`lane_value`'s check of each value ``indexes`` names, at once while every one is JSON."""
        try:
            orjson.dumps([values[index] for index in indexes])  # each value alone nests one level less
        except TypeError:
            name = self.spec.function
            for index in indexes:
                outcome = lane_value(values[index], name, samples[index] if samples is not None else 0)
                if isinstance(outcome, LaneFailure):
                    failures[index] = outcome
                    values[index] = None

    async def _async_many(
        self,
        fields: Sequence[Mapping[str, Any]],
        samples: Sequence[int] | None,
        values: list[Any],
        failures: dict[int, LaneFailure],
    ) -> None:
        positions = iter(range(len(fields)))  # shared by the workers: each takes the next job
        function, takes_sample, submit, limit = self.function, self.takes_sample, self.executor.submit, self.limit
        returned: list[int] = []  # the calls that returned a value, which must be JSON

        async def worker() -> None:
            for index in positions:
                sample = samples[index] if samples is not None else 0
                argument, kwargs = dict(fields[index]), ({"sample": sample} if takes_sample else _NO_KWARGS)
                start = functools.partial(function, argument, **kwargs)
                value, failure = await submit(functools.partial(self._awaited_value, start, sample), endpoint=limit)
                if failure is None:
                    values[index] = value
                    returned.append(index)
                else:
                    failures[index] = failure

        width = min(len(fields), self.spec.concurrency or self.executor.concurrency)
        if width <= 1:
            await worker()
        else:
            await asyncio.gather(*(worker() for _ in range(width)))
        self._check_json(returned, values, failures, samples)

    async def aclose(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None


#: How long one run of sync calls handed to a lane thread at once may take (from the time calls took so far).
CHUNK_BUDGET_S = 0.002


def _itself(value: Awaitable[Any]) -> Awaitable[Any]:
    return value


#: No keyword arguments: shared by every call of a function that takes no ``sample`` (``**`` copies it).
_NO_KWARGS: dict[str, Any] = {}
_SAMPLE_0: dict[str, Any] = {"sample": 0}
#: What a host function returns most often: built-in JSON types, which are never awaitable.
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None), list, dict})


@dataclass(frozen=True, slots=True)
class _Returned:
    """A value of any type but :data:`_PLAIN_TYPES` a host function returned (an awaitable, a LaneFailure of its
    own making...), so it is never mistaken for what :func:`python_value` says about the call."""

    value: Any


def python_value(
    function: Callable[..., Any], name: str, kwargs: dict[str, Any], sample: int, argument: dict[str, Any]
) -> Any:
    """One call of a python-lane function: its value when of a built-in JSON type (not yet checked to be JSON: a
    list may hold a set), any other value wrapped in :class:`_Returned`, or the :class:`LaneFailure` of what it
    raised. The least a lane thread does per call (see :meth:`PythonLane._sync_run`)."""
    try:
        value = function(argument, **kwargs)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt ... raised by host code: this example's error
        return _raised(name, exc, sample, function)
    return value if type(value) in _PLAIN_TYPES else _Returned(value)


def python_call(
    function: Callable[..., Any], name: str, argument: dict[str, Any], kwargs: dict[str, Any], sample: int
) -> LaneOutcome | Awaitable[Any]:
    """One call of a python-lane function and what it produced, in whichever process runs it (a lane thread here,
    a cluster worker there), so both say exactly the same. An awaitable it returned is handed back unawaited."""
    called = python_value(function, name, kwargs, sample, argument)
    if type(called) is LaneFailure:
        return called
    value = called.value if type(called) is _Returned else called
    if inspect.isawaitable(value):
        return value
    return lane_value(value, name, sample)


def shipped_python_call(
    function: Callable[..., Any], name: str, argument: dict[str, Any], kwargs: dict[str, Any], sample: int
) -> LaneOutcome:
    """:func:`python_call` on a cluster worker: an awaitable (an async function shipped on request) is run to its
    end on an event loop of the worker's own. The driver enforces the timeout."""
    called = python_call(function, name, argument, kwargs, sample)
    if isinstance(called, LaneOutput | LaneFailure):
        return called

    async def finish() -> Any:
        return await called

    try:
        value = asyncio.run(finish())
    except BaseException as exc:
        return _raised(name, exc, sample, function)
    return lane_value(value, name, sample)


def lane_value(value: Any, name: str, sample: int) -> LaneOutcome:
    """A host function's return value as an outcome: JSON, or a failure saying why it is not."""
    problem = json_problem(value)
    if problem is not None:
        return LaneFailure(
            "task_output_unserialisable",
            f"{name} returned a {type(value).__name__} that is not JSON ({problem}); return text, numbers, "
            "booleans, null, lists and mappings with text keys",
            sample,
        )
    return LaneOutput(value, sample)


def json_problem(value: Any) -> str | None:
    """Why ``value`` cannot be stored as JSON (a set, an object, a non-text key, an integer beyond 64 bits, a
    reference cycle), or None. An output is written to ``outputs.jsonl`` as JSON, never as a ``repr``."""
    try:
        orjson.dumps(value)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        return str(exc)
    return None


def _raised(name: str, exc: BaseException, sample: int, function: Callable[..., Any] | None = None) -> LaneFailure:
    """``task_raised``; the traceback starts at the host function's own frame, so what EvalGlass called it through
    (a lane thread, a cluster worker) is not in it and every executor records the same detail."""
    redactor = redaction.current()
    frames = exc.__traceback__
    code = getattr(function, "__code__", None)
    start = frames
    while start is not None and start.tb_frame.f_code is not code:
        start = start.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, start or frames)).strip()
    return LaneFailure(
        "task_raised",
        f"{name} raised {type(exc).__name__}: {_one_line(exc, redactor)}",
        sample,
        detail=redactor.tail(text, MAX_DETAIL + 1),
    )


def _one_line(exc: BaseException, redactor: Redactor) -> str:
    text = redactor.text(str(exc)).strip().splitlines()
    return redactor.head(text[0] if text else "", 300, "")


__all__ = ["CHUNK_BUDGET_S", "PythonLane", "json_problem", "lane_value", "python_call", "shipped_python_call"]
