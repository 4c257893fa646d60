"""The port the live run drives lanes through (typing.Protocol), so the engine names what it needs of them and
nothing else: no ``Any`` on the live path, and another lane (a cluster-shipped one, a recorded replay) plugs in by
having these methods. Judges' port is :class:`evalglass.metrics.base.AsyncScorer` (what an ``llm_judge`` metric
builds); the executor's, :class:`evalglass.lanes.executor.Executor`; the call cache's,
:class:`evalglass.lanes.callcache.CallStore`.

Only names are imported here (under ``TYPE_CHECKING``): the engine imports this module without the live extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from evalglass.lanes.task import Job, LaneColumn, LaneOutcome


class Lane(Protocol):
    """Produces the output of one (example, sample), or of many at once; never raises for a per-example problem."""

    fingerprint: str

    @property
    def chunked(self) -> bool:
        """Whether :meth:`produce_many` costs less per call than :meth:`produce` (then the run hands it chunks)."""
        ...

    def column_size(self) -> int:
        """How many calls :meth:`produce_column` best takes at once (the run gathers batches up to that); 0: no
        more than a batch."""
        ...

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome: ...

    async def produce_many(self, jobs: Sequence[Job]) -> list[LaneOutcome]: ...

    async def produce_column(self, ids: Sequence[str], records: Sequence[Mapping[str, Any]], epochs: int) -> LaneColumn:
        """Every example's samples (call ``i``: example ``i // epochs``, sample ``i % epochs``) as a column, for a
        chunked lane, whose outputs carry nothing but their value."""
        ...

    async def aclose(self) -> None: ...


__all__ = ["Lane"]
