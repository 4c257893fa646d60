"""Every metric type (builtins, host Python metrics, checks, LLM judges): validated specs that build scorers.

The engine needs these names: :data:`AnyMetricSpec` / :data:`METRIC_TYPES` to validate ``metrics:`` entries,
:class:`~evalglass.metrics.base.BuildContext` to build any of them the same way (``spec.build(context)``, see
``metrics.base``), and :class:`MetricLoadError`, raised when a metric cannot be built (exit code 2).

:data:`AnyMetricSpec`, :data:`METRIC_TYPES` and :data:`METRIC_SPEC_ADAPTER` name every type, so they import every
type's module: they are taken from ``metrics.registry`` when first asked for (PEP 562), not when this package loads.
"""

from typing import TYPE_CHECKING, Any

from evalglass.metrics.base import MetricFn, MetricResult, MetricSpec
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.registry import parse_metric_spec

if TYPE_CHECKING:
    from evalglass.metrics.registry import METRIC_SPEC_ADAPTER, METRIC_TYPES, AnyMetricSpec

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


def __getattr__(name: str) -> Any:
    if name in ("METRIC_SPEC_ADAPTER", "METRIC_TYPES", "AnyMetricSpec"):
        from evalglass.metrics import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
