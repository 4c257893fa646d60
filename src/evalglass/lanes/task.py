"""Task lanes: how each example's output is produced when the dataset does not already record it.

Three lane types, declared under ``task:`` in ``evalglass.yaml`` and discriminated by ``type``:

* ``python``: a callable, ``module:function`` or ``path/to/file.py:function`` (sync or async), given the example's
  fields as a dict (and ``sample=`` when it accepts that keyword);
* ``command``: an argv list, the example's fields as JSON on stdin, stdout parsed as JSON or kept as text;
* ``chat``: an OpenAI-compatible endpoint; a Jinja2 prompt template over the example's fields (StrictUndefined:
  a missing field fails that example with a clear diagnostic, it never renders as an empty string).

``epochs: K`` asks for K samples of every example (sample indexes ``0..K-1``). Every (example, sample) ends in a
:data:`LaneOutcome`: a :class:`LaneOutput` carrying the value, or a :class:`LaneFailure` carrying a diagnostic that
the pipeline turns into ``error`` scores with :func:`failure_score` for every metric of that example. A lane never
raises for a per-example problem; configuration problems raise :class:`LaneConfigError` when the lane is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import inspect
import os
import traceback
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalglass import redaction
from evalglass.core.fingerprint import content_address
from evalglass.core.redact import Redactor
from evalglass.core.score import Score, Status
from evalglass.lanes.callcache import CallStore, Hit, cache_key, through_cache
from evalglass.lanes.childwatch import pidfd_watcher
from evalglass.lanes.daemonpool import (
    CallTimedOut,
    DaemonThreadPool,
    call_each_in_thread,
    call_in_thread,
    call_with_each_in_thread,
)
from evalglass.lanes.executor import EndpointLimit, Executor, Offload, WorkLost, base_dir_here
from evalglass.lanes.procgroup import kill_group
from evalglass.lanes.retry import Attempt, Retrier
from evalglass.lanes.specs import (
    OPERATIONAL_FIELDS,
    ChatLaneSpec,
    CommandLaneSpec,
    LaneSpec,
    MessageTemplate,
    PythonLaneSpec,
    TaskSpec,
)
from evalglass.lanes.templating import TemplateFailure, compile_template, render, template_context
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.hostload import host_source, load_function

if TYPE_CHECKING:  # the chat client (openai SDK, aiohttp) is imported only when a chat lane is built
    from evalglass.lanes.chat import TransportChoice, Usage

_MAX_DETAIL = 2000


class LaneConfigError(ValueError):
    """A lane cannot be built: one line saying what and how to fix it."""


# ---------------------------------------------------------------------- outcomes
@dataclass(frozen=True, slots=True)
class LaneOutput:
    """What the system under test produced for one (example, sample)."""

    value: Any
    sample: int
    cached: bool = False
    attempts: tuple[Attempt, ...] = ()
    usage: Usage | None = None
    call_id: str | None = None
    #: Attempts the call took (0: the lane does not retry). A cached call keeps the count it was made with.
    tries: int = 0
    #: A cached answer this same run got before it was interrupted (counted as the run's own call).
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class LaneFailure:
    """No output for one (example, sample), and why. ``code`` is a diagnostic code (snake_case)."""

    code: str
    message: str
    sample: int
    detail: str | None = None
    attempts: tuple[Attempt, ...] = ()
    call_id: str | None = None
    tries: int = 0


LaneOutcome = LaneOutput | LaneFailure
#: One call a lane is asked for: (example id, the example's fields, sample index).
Job = tuple[str, Mapping[str, Any], int]


@dataclass(frozen=True, slots=True)
class LaneColumn:
    """The outcomes of many calls as a column, with no object per call: ``values[i]`` is call ``i``'s output,
    unless ``failures`` holds ``i`` (then ``values[i]`` is None and the failure says why).

    Only for outputs that carry nothing but their value (no cache, usage, retries or call id): what a chunked lane
    (:attr:`TaskLane.chunked`) produces. :meth:`of` refuses outcomes that carry more, so nothing is dropped."""

    values: list[Any]
    failures: dict[int, LaneFailure]

    @classmethod
    def of(cls, outcomes: Sequence[LaneOutcome]) -> LaneColumn:
        values: list[Any] = []
        failures: dict[int, LaneFailure] = {}
        for index, outcome in enumerate(outcomes):
            if isinstance(outcome, LaneFailure):
                failures[index] = outcome
                values.append(None)
                continue
            if (
                outcome.cached
                or outcome.attempts
                or outcome.usage is not None
                or outcome.call_id is not None
                or outcome.tries
                or outcome.replayed
            ):
                raise ValueError("an output that carries more than its value does not fit in a LaneColumn")
            values.append(outcome.value)
        return cls(values, failures)

    def outcomes(self, samples: Sequence[int]) -> list[LaneOutcome]:
        """One outcome per call (``samples``: each call's sample index), as :meth:`TaskLane.produce` gives them."""
        failures = self.failures
        return [
            failures.get(index) or LaneOutput(value, sample)
            for index, (value, sample) in enumerate(zip(self.values, samples, strict=True))
        ]


def failure_score(failure: LaneFailure) -> Score:
    """The ``error`` score every metric of the example gets when its lane failed: no value, the lane's reason."""
    evidence = (f"lane_call:{failure.call_id}",) if failure.call_id else ()
    return Score.unmeasured(
        Status.ERROR,
        failure.code,
        f"the task lane produced no output: {failure.message}",
        failure.detail,
        evidence=evidence,
    )


# ---------------------------------------------------------------------- lanes
class TaskLane(ABC):
    """A built lane: ``produce`` one (example, sample) at a time; the live run starts one task per example and
    every call goes through the executor's ``submit``."""

    spec: LaneSpec
    fingerprint: str

    @classmethod
    @abstractmethod
    def build(cls, spec: Any, context: LaneContext) -> TaskLane:
        """The lane for ``spec`` (this class's spec type), from what ``context`` gives every lane type."""

    @abstractmethod
    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        """Never raises for a per-example problem."""

    @property
    def chunked(self) -> bool:
        """Whether :meth:`produce_many` does less per call than :meth:`produce` (the live run then hands it
        chunks of examples)."""
        return False

    def column_size(self) -> int:
        """How many calls :meth:`produce_column` best takes at once (the live run gathers batches of examples up
        to that); 0: no more than a batch."""
        return 0

    async def produce_many(self, jobs: Sequence[Job]) -> list[LaneOutcome]:
        """Every job's outcome, in order; the same outcomes as :meth:`produce` one by one."""
        return list(await asyncio.gather(*(self.produce(*job) for job in jobs)))

    async def produce_column(self, ids: Sequence[str], records: Sequence[Mapping[str, Any]], epochs: int) -> LaneColumn:
        """:meth:`produce_many` of every (example, sample), example by example and sample by sample within one
        (call ``i`` is example ``i // epochs``, sample ``i % epochs``), as a column. Only for a chunked lane (see
        :class:`LaneColumn`)."""
        jobs = [
            (example_id, fields, sample)
            for example_id, fields in zip(ids, records, strict=True)
            for sample in range(epochs)
        ]
        return LaneColumn.of(await self.produce_many(jobs))

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass


@dataclass(frozen=True)
class LaneContext:
    """Everything building a lane may use, filled the same way for every lane type: the config's folder (relative
    paths resolve against it), the run's executor and call cache, the environment secrets come from, the retry
    policy and HTTP transport of model calls, and whether async host functions are shipped to a cluster."""

    base_dir: Path
    executor: Executor
    cache: CallStore | None = None
    env: Mapping[str, str] | None = None
    retrier: Retrier | None = None
    transport: TransportChoice = "auto"
    ship_async: bool = False


def build_lane(
    spec: LaneSpec,
    *,
    base_dir: Path,
    executor: Executor,
    cache: CallStore | None = None,
    env: Mapping[str, str] | None = None,
    retrier: Retrier | None = None,
    transport: TransportChoice = "auto",
    ship_async: bool = False,
) -> TaskLane:
    """Build a lane: the class :data:`LANE_TYPES` names for the spec's ``type``, through its ``build(spec,
    context)``. Raises :class:`LaneConfigError` when the function, file or template cannot be used."""
    context = LaneContext(base_dir, executor, cache, env, retrier, transport, ship_async)
    return LANE_TYPES[spec.type].build(spec, context)


def _fields_key(cache: CallStore | None, fingerprint: str, fields: Mapping[str, Any], sample: int) -> str | None:
    """A python or command lane's cache key (its call is keyed by the example's fields); None without a cache."""
    return cache_key(fingerprint, {"fields": fields}, sample) if cache is not None else None


async def _through_cache(
    cache: CallStore | None, key: str | None, sample: int, kind: str, call: Callable[[], Awaitable[LaneOutcome]]
) -> LaneOutcome:
    """A python or command lane's call through the cache (the value is stored as ``{"value": output}``)."""
    if cache is None or key is None:
        return await call()

    def replay(hit: Hit) -> LaneOutcome | None:
        if isinstance(hit.value, dict) and "value" in hit.value:
            return LaneOutput(hit.value["value"], sample, cached=True, call_id=key)
        return None

    def stored(outcome: LaneOutcome) -> dict[str, Any] | None:
        return {"value": outcome.value} if isinstance(outcome, LaneOutput) else None

    return await through_cache(cache, key, kind=kind, request=None, replay=replay, call=call, stored=stored)


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
        except MetricLoadError as exc:
            raise LaneConfigError(str(exc)) from None
        source = host_source(spec.function, base_dir)
        self.is_async = inspect.iscoroutinefunction(self.function)
        try:
            self.takes_sample = "sample" in inspect.signature(self.function).parameters
        except (TypeError, ValueError):
            self.takes_sample = False
        code_hash = hashlib.sha256(source.read_bytes()).hexdigest() if source is not None else None
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
        key = _fields_key(self.cache, self.fingerprint, fields, sample)
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

        return await _through_cache(self.cache, key, sample, "python", call)

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
        except asyncio.CancelledError:
            raise
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


#: The resources key of the task lane's shipped calls (``executor.overrides.task``).
TASK_RESOURCES = "task"
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


class CommandLane(TaskLane):
    spec: CommandLaneSpec

    @classmethod
    def build(cls, spec: CommandLaneSpec, context: LaneContext) -> CommandLane:
        return cls(spec, base_dir=context.base_dir, executor=context.executor, cache=context.cache, env=context.env)

    def __init__(
        self,
        spec: CommandLaneSpec,
        *,
        base_dir: Path,
        executor: Executor,
        cache: CallStore | None,
        env: Mapping[str, str] | None,
    ) -> None:
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        self.base_dir = base_dir
        self.cwd = (base_dir / spec.cwd).resolve() if spec.cwd else base_dir.resolve()
        if not self.cwd.is_dir():
            raise LaneConfigError(f"command lane: cwd {spec.cwd} is not a directory (looked for {self.cwd})")
        self.base_env = dict(os.environ if env is None else env)
        # Built once: what the command is given (EVALGLASS_EXAMPLE_ID and EVALGLASS_SAMPLE are no secrets).
        self.redactor = redaction.current({**self.base_env, **spec.env})
        program = self.cwd / spec.argv[0]
        program_hash = hashlib.sha256(program.read_bytes()).hexdigest() if program.is_file() else None
        self.fingerprint = content_address(
            {
                "type": "command",
                "argv": list(spec.argv),
                "output": spec.output,
                "cwd": spec.cwd,
                "env": spec.env,
                "program_sha256": program_hash,
            }
        )
        self.limit = EndpointLimit(key=f"command:{spec.argv[0]}", concurrency=spec.concurrency)
        #: The shipped call with the spec and the (absolute) evals folder bound once (see PythonLane._shipped).
        self._shipped = functools.partial(shipped_command_call, spec, str(base_dir.resolve()))
        #: While the lane is open, a process's exit reaches the loop through a pidfd, not a thread per process
        #: (lanes/childwatch.py: Python 3.11 only; 3.12 does so by default).
        self.release_watcher = pidfd_watcher()

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        key = _fields_key(self.cache, self.fingerprint, fields, sample)
        offload = self.executor.offload

        async def call() -> LaneOutcome:
            if offload is None:
                return await self.executor.submit(lambda: self._run(example_id, fields, sample), endpoint=self.limit)
            return await self.executor.submit(
                lambda: self._run_shipped(offload, example_id, fields, sample), endpoint=self.limit
            )

        return await _through_cache(self.cache, key, sample, "command", call)

    async def aclose(self) -> None:
        self.release_watcher()

    async def _run_shipped(
        self, offload: Offload, example_id: str, fields: Mapping[str, Any], sample: int
    ) -> LaneOutcome:
        """The command on a cluster worker; the worker enforces the timeout and kills the process group."""
        try:
            return await offload.run(TASK_RESOURCES, self._shipped, example_id, dict(fields), sample)
        except WorkLost as exc:
            return LaneFailure("task_worker_lost", f"{self.spec.argv[0]} could not run on the cluster: {exc}", sample)

    async def _run(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        spec = self.spec
        try:
            stdin = orjson.dumps(dict(fields))
        except TypeError as exc:
            return LaneFailure("task_input_unserialisable", f"example {example_id} is not JSON: {exc}", sample)
        env = {**self.base_env, **spec.env, "EVALGLASS_EXAMPLE_ID": example_id, "EVALGLASS_SAMPLE": str(sample)}
        redactor = self.redactor
        # stdout and stderr are pipes of the lane's own, read on the loop (_PipeReader), not asyncio's: a process
        # the command started in a session of its own can hold them long after the command exited, and the lane
        # closes them when it is done instead of leaving a transport open past the event loop.
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            process = await asyncio.create_subprocess_exec(
                *spec.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=out_write,
                stderr=err_write,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
            )
        except BaseException as exc:  # not started (or cancelled while starting): nothing will read the pipes
            os.close(out_read)
            os.close(err_read)
            if not isinstance(exc, OSError):
                raise
            return LaneFailure("task_spawn_failed", redactor.text(f"cannot start {spec.argv[0]!r}: {exc}"), sample)
        finally:
            os.close(out_write)
            os.close(err_write)
        loop = asyncio.get_running_loop()
        readers = (_PipeReader(loop, out_read), _PipeReader(loop, err_read))
        try:
            # The answer is ready when the command exits, not when its pipes close: a background child it left
            # behind (`sleep 5 &`) may hold them open much longer (the process's transport has only stdin, which
            # _feed closes, so its wait ends at the exit).
            async with asyncio.timeout(spec.timeout):
                await _feed(process, stdin)
                await process.wait()
        except TimeoutError:
            await _reap(process, readers, drain=0.0)
            return LaneFailure(
                "task_timeout", f"{spec.argv[0]} did not finish within {spec.timeout:g}s (killed)", sample
            )
        except BaseException:
            kill_group(process.pid)
            for reader in readers:
                reader.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):  # reap it, so no transport outlives the loop
                await asyncio.wait_for(process.wait(), _REAP_S)
            raise
        await _reap(process, readers, drain=_DRAIN_S)
        stdout, stderr = bytes(readers[0].data), bytes(readers[1].data)
        if process.returncode != 0:
            return LaneFailure(
                "task_exit_nonzero",
                f"{spec.argv[0]} exited with code {process.returncode}",
                sample,
                detail=_tail(stderr.decode("utf-8", "replace"), redactor) or None,
            )
        text = stdout.decode("utf-8", "replace")
        if spec.output == "text":
            return LaneOutput(text.rstrip("\r\n"), sample)
        try:
            return LaneOutput(orjson.loads(text), sample)
        except orjson.JSONDecodeError as exc:
            return LaneFailure(
                "task_output_unparseable",
                f"{spec.argv[0]} printed something that is not JSON ({exc})",
                sample,
                detail=_tail(text, redactor) or "(empty output)",
            )


def shipped_command_call(
    spec: CommandLaneSpec, base_dir: str, example_id: str, fields: dict[str, Any], sample: int
) -> LaneOutcome:
    """One command-lane call on a cluster worker: the lane built here (the command runs with the worker's own
    environment, where its secrets are) and run on an event loop of the worker's own."""
    from evalglass.lanes.executor import AsyncioExecutor

    try:
        lane = CommandLane(spec, base_dir=base_dir_here(base_dir), executor=AsyncioExecutor(), cache=None, env=None)
    except LaneConfigError as exc:
        return LaneFailure("task_worker_setup", f"the command lane cannot run on this worker: {exc}", sample)
    try:
        return asyncio.run(lane._run(example_id, fields, sample))
    finally:
        lane.release_watcher()


#: After a command exits, how long its pipes may stay open (a background child holding them) before its process
#: group is killed and what was read so far is the output.
_DRAIN_S = 0.25
#: After the group is killed, how long a pipe may stay open still: only a process outside the group (one the
#: command started in a session of its own) can hold it now, and the lane does not wait for what it may write.
_ORPHAN_S = 0.05
#: How long a cancelled call waits for its killed process to be reaped.
_REAP_S = 2.0
#: How much one read of an output pipe takes (asyncio's pipe transports read 256 KiB at a time too).
_READ_SIZE = 1 << 18


class _PipeReader:
    """One of a command's output pipes, read on the event loop into :attr:`data` until it ends (:attr:`ended`)
    or the lane closes it: :meth:`close` reads what is already in the pipe first, then closes the descriptor, so
    nothing of it outlives the call."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.data = bytearray()
        self.ended: asyncio.Future[None] = loop.create_future()
        self._loop = loop
        self._fd = fd
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self._fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self.data += chunk
        else:
            self.close()

    def close(self) -> None:
        fd = self._fd
        if fd < 0:
            return
        self._fd = -1
        self._loop.remove_reader(fd)
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, _READ_SIZE):
                self.data += chunk
        os.close(fd)
        if not self.ended.done():
            self.ended.set_result(None)


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    """Write the example to stdin and close it; a command that exits without reading it is not an error."""
    stdin = process.stdin
    assert stdin is not None
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stdin.close()


async def _reap(process: asyncio.subprocess.Process, readers: tuple[_PipeReader, ...], drain: float) -> None:
    """Let the pipes end (up to ``drain`` seconds), kill whatever is left of the process group and wait for the
    process; a pipe still open after a short grace is held by a process outside the group, and is closed without
    waiting for it (what was written so far is kept). Nothing of the call outlives it, or the event loop."""
    ends = [reader.ended for reader in readers]
    if drain > 0:
        await asyncio.wait(ends, timeout=drain)
    kill_group(process.pid)
    await process.wait()
    if not all(end.done() for end in ends):
        await asyncio.wait(ends, timeout=_ORPHAN_S)
    for reader in readers:
        reader.close()


class ChatLane(TaskLane):
    spec: ChatLaneSpec

    @classmethod
    def build(cls, spec: ChatLaneSpec, context: LaneContext) -> ChatLane:
        return cls(
            spec,
            executor=context.executor,
            cache=context.cache,
            env=context.env,
            retrier=context.retrier,
            transport=context.transport,
        )

    def __init__(
        self,
        spec: ChatLaneSpec,
        *,
        executor: Executor,
        cache: CallStore | None,
        env: Mapping[str, str] | None,
        retrier: Retrier | None,
        transport: TransportChoice,
    ) -> None:
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        self.templates = [(role, compile_template(source)) for role, source in spec.message_templates()]
        self.retrier = retrier or Retrier(spec.retry)
        from evalglass.lanes import chat

        self._chat = chat
        self.client = chat.ChatClient(spec, env=env, transport=transport)
        self.fingerprint = content_address(chat_lane_definition(spec))

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        context = template_context(fields, example_id, sample)
        messages: list[tuple[str, str]] = []
        try:
            for role, template in self.templates:
                messages.append((role, render(template, context, what=f"the {role} prompt", example_id=example_id)))
        except TemplateFailure as failure:
            return LaneFailure(failure.code, failure.message, sample)
        request = self._chat.ChatRequest.build(self.spec, messages)
        key = cache_key(self.fingerprint, request.body(), sample)
        made = await self._chat.answer(
            self.client,
            request,
            key=key,
            cache=self.cache,
            kind="chat",
            executor=self.executor,
            retrier=self.retrier,
        )
        reply, cached, attempts, tries, replayed = made.reply, made.cached, made.attempts, made.tries, made.replayed
        if reply is None:
            fault = made.fault
            assert fault is not None
            return LaneFailure(fault.code, fault.message, sample, fault.detail, attempts, key, tries)
        if self.spec.output == "text":
            return LaneOutput(reply.content, sample, cached, attempts, reply.usage, key, tries, replayed)
        try:
            value = orjson.loads(reply.content)
        except orjson.JSONDecodeError as exc:
            return LaneFailure(
                "task_output_unparseable",
                f"the endpoint answered text that is not JSON ({exc})",
                sample,
                _tail(reply.content, redaction.current()),
                attempts,
                key,
                tries,
            )
        return LaneOutput(value, sample, cached, attempts, reply.usage, key, tries, replayed)

    async def aclose(self) -> None:
        await self.client.aclose()


def chat_lane_definition(spec: ChatLaneSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json", exclude=set(OPERATIONAL_FIELDS))


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
        detail=redactor.tail(text, _MAX_DETAIL + 1),
    )


def _one_line(exc: BaseException, redactor: Redactor) -> str:
    text = redactor.text(str(exc)).strip().splitlines()
    return redactor.head(text[0] if text else "", 300, "")


def _tail(text: str, redactor: Redactor, limit: int = _MAX_DETAIL) -> str:
    """The end of ``text``, redacted before it is cut."""
    return redactor.tail(text.strip(), limit + 1)


#: The lane class of each ``task.type``: the one line a new lane type adds here (its spec joins ``LaneSpec`` in
#: lanes/specs.py, which the config's ``task:`` union takes whole).
LANE_TYPES: dict[str, type[TaskLane]] = {"python": PythonLane, "command": CommandLane, "chat": ChatLane}


__all__ = [
    "LANE_TYPES",
    "OPERATIONAL_FIELDS",
    "ChatLane",
    "ChatLaneSpec",
    "CommandLane",
    "CommandLaneSpec",
    "LaneConfigError",
    "LaneContext",
    "LaneFailure",
    "LaneOutcome",
    "LaneOutput",
    "MessageTemplate",
    "PythonLane",
    "PythonLaneSpec",
    "TaskLane",
    "TaskSpec",
    "TemplateFailure",
    "build_lane",
    "compile_template",
    "failure_score",
    "load_function",
    "render",
    "template_context",
]
