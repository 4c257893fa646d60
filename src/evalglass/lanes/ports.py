"""The ports the live run drives lanes and judges through (typing.Protocol), so the engine names what it needs of
them and nothing else: no ``Any`` on the live path, and another lane or judge (a cluster-shipped one, a recorded
replay) plugs in by having these methods. The executor's port is :class:`evalglass.lanes.executor.Executor`; the
call cache's, :class:`evalglass.lanes.callcache.CallStore`.

Only names are imported here (under ``TYPE_CHECKING``): the engine imports this module without the live extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from evalglass.core.example import Example
    from evalglass.lanes.judge import JudgeResult
    from evalglass.lanes.task import Job, LaneOutcome


class Lane(Protocol):
    """Produces the output of one (example, sample), or of many at once; never raises for a per-example problem."""

    fingerprint: str

    @property
    def chunked(self) -> bool:
        """Whether :meth:`produce_many` costs less per call than :meth:`produce` (then the run hands it chunks)."""
        ...

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome: ...

    async def produce_many(self, jobs: Sequence[Job]) -> list[LaneOutcome]: ...

    async def aclose(self) -> None: ...


class Grader(Protocol):
    """An LLM judge as the run uses it: one example's output graded; never raises for a per-example problem."""

    fingerprint: str

    async def judge(self, example: Example) -> JudgeResult: ...

    async def aclose(self) -> None: ...


__all__ = ["Grader", "Lane"]
