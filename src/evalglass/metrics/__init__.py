"""Every metric type (builtins, host Python metrics, checks, LLM judges): validated specs that build scorers.

The engine needs these names: :data:`AnyMetricSpec` / :data:`METRIC_TYPES` to validate ``metrics:`` entries,
:class:`~evalglass.metrics.base.BuildContext` to build any of them the same way (``spec.build(context)``, see
``metrics.base``), and :class:`MetricLoadError`, raised when a metric cannot be built (exit code 2).
"""

from evalglass.metrics.base import MetricFn, MetricResult, MetricSpec
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.registry import METRIC_SPEC_ADAPTER, METRIC_TYPES, AnyMetricSpec, parse_metric_spec

__all__ = [
    "METRIC_SPEC_ADAPTER",
    "METRIC_TYPES",
    "AnyMetricSpec",
    "MetricFn",
    "MetricLoadError",
    "MetricResult",
    "MetricSpec",
    "parse_metric_spec",
]
