"""What the metric test files share: scoring one example with a config entry, and checking an unmeasured score."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalglass.core.example import Example
from evalglass.core.score import Score, Status, Validity
from evalglass.metrics import MetricResult, parse_metric_spec
from evalglass.metrics.base import BuildContext


def measure(config: dict[str, Any], output: Any, **record: Any) -> MetricResult:
    function = parse_metric_spec(config).build(BuildContext(Path(".")))
    return function(Example(id="ex-1", line=3, fields=record, output=output))


def assert_unmeasured(result: MetricResult, status: Status, code: str) -> Score:
    """A score with no value, the given status, and the given first diagnostic code."""
    assert isinstance(result, Score)
    assert result.status is status
    assert result.value is None
    assert result.diagnostics[0].code == code
    return result


def assert_worst(result: MetricResult, value: float, code: str) -> Score:
    """A wrong answer, measured: scored and valid at ``value`` (the worst of the scale), with the diagnostic."""
    assert isinstance(result, Score)
    assert result.status is Status.SCORED and result.validity is Validity.VALID
    assert result.value == value
    assert result.diagnostics[0].code == code
    return result
