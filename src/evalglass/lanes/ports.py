"""The port the live run drives lanes through (typing.Protocol), and the values that cross it, so the engine names
what it needs of lanes and nothing else: no ``Any`` on the live path, and another lane (a cluster-shipped one, a
recorded replay) plugs in by having these methods. The port owns its values: what a call produced
(:class:`LaneOutput`), why it produced nothing (:class:`LaneFailure`), many calls as a column (:class:`LaneColumn`);
the lane types (lanes/python_lane.py, command_lane.py, chat_lane.py) make them. Judges' port is
:class:`evalglass.metrics.base.AsyncScorer` (what an ``llm_judge`` metric builds); the executor's,
:class:`evalglass.lanes.executor.Executor`; the call cache's, :class:`evalglass.lanes.callcache.CallStore`.

Nothing of the live machinery is imported here but names (under ``TYPE_CHECKING``): the engine imports this module
without the live extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from evalglass.core.score import Score
    from evalglass.lanes.chatcall import Usage
    from evalglass.lanes.retry import Attempt


#: How much of a failure's text (a traceback, a command's stderr) its diagnostic keeps: the end of it. Here, not in
#: ``lanes/base.py``, because a host worker cuts a traceback to it and should not import pydantic to know it.
MAX_DETAIL = 2000


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
    #: An output made by several model calls (an agent's steps): each call's usage and whether it was answered
    #: from an earlier run's cache, for the token tally; None for an output of one call.
    model_calls: tuple[tuple[Any, bool], ...] | None = None
    #: The API's finish reason when it says the answer was cut off at its token limit (``core.finish.TRUNCATED``:
    #: ``length``, ``max_tokens``, ``MAX_TOKENS``); None for a complete answer, or a lane that does not say.
    truncated: str | None = None


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
    #: How many calls ``tries`` (their attempts) were spread over, when more than one call was made (an agent's
    #: trajectory failing after several model steps); None: one call. Without it, a trajectory failing after two
    #: steps of one attempt each read as one call retried once (``attempts: 2``), a retry that never happened.
    calls: int | None = None


LaneOutcome = LaneOutput | LaneFailure
#: One call a lane is asked for: (example id, the example's fields, sample index).
Job = tuple[str, Mapping[str, Any], int]


@dataclass(frozen=True, slots=True)
class LaneColumn:
    """The outcomes of many calls as a column, with no object per call: ``values[i]`` is call ``i``'s output,
    unless ``failures`` holds ``i`` (then ``values[i]`` is None and the failure says why).

    Only for outputs that carry nothing but their value (no cache, usage, retries or call id): what a chunked lane
    (:attr:`Lane.chunked`) produces. :meth:`of` refuses outcomes that carry more, so nothing is dropped."""

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
                or outcome.model_calls is not None
                or outcome.truncated is not None
            ):
                raise ValueError("an output that carries more than its value does not fit in a LaneColumn")
            values.append(outcome.value)
        return cls(values, failures)

    def outcomes(self, samples: Sequence[int]) -> list[LaneOutcome]:
        """One outcome per call (``samples``: each call's sample index), as :meth:`Lane.produce` gives them."""
        failures = self.failures
        return [
            failures.get(index) or LaneOutput(value, sample)
            for index, (value, sample) in enumerate(zip(self.values, samples, strict=True))
        ]


def failure_score(failure: LaneFailure) -> Score:
    """The ``error`` score every metric of the example gets when its lane failed: no value, the lane's reason."""
    # Imported here: a host worker's fork server imports this module for LaneFailure, and need not import pydantic.
    from evalglass.core.score import Score, Status

    evidence = (f"lane_call:{failure.call_id}",) if failure.call_id else ()
    return Score.unmeasured(
        Status.ERROR,
        failure.code,
        f"the task lane produced no output: {failure.message}",
        failure.detail,
        evidence=evidence,
    )


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


__all__ = ["Job", "Lane", "LaneColumn", "LaneFailure", "LaneOutcome", "LaneOutput", "failure_score"]
