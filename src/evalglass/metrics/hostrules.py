"""The calling and return rules of a ``python`` metric (``metrics/host.py`` states them): what whatever the function
returns, or raises, comes to. The rules are applied where the function is called (``lanes/metricworker.py``: in a
metric's worker process, or on a cluster worker), without pydantic, to an answer that is JSON; :func:`decoded`, here,
turns an answer into a score and checks its shape, so the deciding process reads what a worker sends by the same
code as a call made in this process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalglass.core.score import Score
from evalglass.lanes.metricworker import call_metric

MetricResult = float | Score


def call_host(function: Callable[..., Any], arguments: dict[str, Any]) -> MetricResult:
    """One call of a host metric function in this process (a shipped metric, on a cluster worker) and what it comes
    to. ``KeyboardInterrupt`` propagates."""
    result = decoded(call_metric(function, arguments))
    assert result is not None  # an answer made here has its shape
    return result


def decoded(answer: Any) -> MetricResult | None:
    """An answer (``lanes/metricworker.py``) as a score, or None when it is not of an answer's shape (an answer
    from a worker runs next to code under test: it is checked, never trusted). A Score's fields are validated, its
    state by the Score's own validators."""
    if type(answer) is float:
        return answer  # JSON holds no NaN nor infinity, and an answer made here is finite
    try:
        if type(answer) is list:
            if len(answer) == 4 and answer[0] == "error" and type(answer[1]) is str and type(answer[2]) is str:
                if answer[3] is None or type(answer[3]) is str:
                    return Score.error(answer[1], answer[2], detail=answer[3])
            elif len(answer) == 2 and answer[0] == "declined" and type(answer[1]) is str:
                return Score.non_evaluable("host_declined", answer[1])
        elif type(answer) is dict:
            return Score.model_validate(answer)  # its validators refuse an illegal state
    except ValueError:  # pydantic's ValidationError among them: a code or message a score cannot hold
        return None
    return None
