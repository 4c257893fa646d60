"""Builtin metrics and host Python metrics: validated specs that build per-example scoring functions.

The engine needs three names: :data:`AnyMetricSpec` / :data:`METRIC_TYPES` to validate ``metrics:`` entries,
and :class:`MetricLoadError`, raised by ``spec.build(base_dir)`` when a metric cannot be built (exit code 2).
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
