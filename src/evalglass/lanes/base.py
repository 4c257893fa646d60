"""What every lane type is: a :class:`TaskLane` built from its spec and a :class:`LaneContext`, and the pieces lane
types share (the call cache around a call keyed by the example's fields, the end of a failure's text).

Three lane types, declared under ``task:`` in ``evalglass.yaml`` and discriminated by ``type``, each in a module of
its own (lanes/registry.py names them all, :data:`~evalglass.lanes.registry.LANE_TYPES`):

* ``python`` (lanes/python_lane.py): a callable, ``module:function`` or ``path/to/file.py:function`` (sync or
  async), given the example's fields as a dict (and ``sample=`` when it accepts that keyword);
* ``command`` (lanes/command_lane.py): an argv list, the example's fields as JSON on stdin, stdout parsed as JSON or
  kept as text;
* ``chat`` (lanes/chat_lane.py): an OpenAI-compatible endpoint; a Jinja2 prompt template over the example's fields
  (StrictUndefined: a missing field fails that example with a clear diagnostic, it never renders as an empty
  string).

``epochs: K`` asks for K samples of every example (sample indexes ``0..K-1``). Every (example, sample) ends in a
:data:`~evalglass.lanes.ports.LaneOutcome`: a ``LaneOutput`` carrying the value, or a ``LaneFailure`` carrying a
diagnostic that the live run turns into ``error`` scores with :func:`~evalglass.lanes.ports.failure_score` for every
metric of that example. A lane never raises for a per-example problem; configuration problems raise
:class:`LaneConfigError` when the lane is built.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalglass.core.outputparse import DECLARED_JSON, read_stored_output, stored_output
from evalglass.core.redact import Redactor
from evalglass.lanes.callcache import CallStore, Hit, cache_key, through_cache
from evalglass.lanes.ports import MAX_DETAIL, Job, LaneColumn, LaneOutcome, LaneOutput
from evalglass.lanes.specs import LaneSpec

if TYPE_CHECKING:  # the chat client (openai SDK, aiohttp) is imported only when a chat lane is built
    from evalglass.core.usage import Price
    from evalglass.lanes.chatcall import TransportChoice
    from evalglass.lanes.executor import Executor
    from evalglass.lanes.retry import Retrier

#: The resources key of the task lane's shipped calls (``executor.overrides.task``).
TASK_RESOURCES = "task"


class LaneConfigError(ValueError):
    """A lane cannot be built: one line saying what and how to fix it."""


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
    policy and HTTP transport of model calls, whether async host functions are shipped to a cluster, and the
    config's prices (an agent's trajectory records its cost)."""

    base_dir: Path
    executor: Executor
    cache: CallStore | None = None
    env: Mapping[str, str] | None = None
    retrier: Retrier | None = None
    transport: TransportChoice = "auto"
    ship_async: bool = False
    prices: Mapping[str, Price] | None = None


def fields_key(cache: CallStore | None, fingerprint: str, fields: Mapping[str, Any], sample: int) -> str | None:
    """A python or command lane's cache key (its call is keyed by the example's fields); None without a cache."""
    return cache_key(fingerprint, {"fields": fields}, sample) if cache is not None else None


async def through_cache_by_fields(
    cache: CallStore | None, key: str | None, sample: int, kind: str, call: Callable[[], Awaitable[LaneOutcome]]
) -> LaneOutcome:
    """A python or command lane's call through the cache (the value is stored as ``{"value": output}``)."""
    if cache is None or key is None:
        return await call()

    def replay(hit: Hit) -> LaneOutcome | None:
        if isinstance(hit.value, dict) and "value" in hit.value:
            return LaneOutput(read_stored_output(hit.value, "value", DECLARED_JSON), sample, cached=True, call_id=key)
        return None

    def stored(outcome: LaneOutcome) -> dict[str, Any] | None:
        return stored_output(outcome.value, "value") if isinstance(outcome, LaneOutput) else None

    return await through_cache(cache, key, kind=kind, request=None, replay=replay, call=call, stored=stored)


def detail_tail(text: str, redactor: Redactor, limit: int = MAX_DETAIL) -> str:
    """The end of ``text``, redacted before it is cut."""
    return redactor.tail(text.strip(), limit + 1)


__all__ = [
    "DECLARED_JSON",
    "MAX_DETAIL",
    "TASK_RESOURCES",
    "LaneConfigError",
    "LaneContext",
    "TaskLane",
    "detail_tail",
    "fields_key",
    "through_cache_by_fields",
]
