"""The names a run with variants gives its metrics, and which column of a baseline run a comparative gate pairs with.

Plain string functions, kept apart from ``core.variants`` (which needs the statistics) so that the comparative gates
(``core.comparative``, imported by ``core.decide``) can use them without importing ``core.decide`` back.
"""

from __future__ import annotations

from collections.abc import Sequence

SEPARATOR = "@"


def variant_metric(metric: str, variant: str) -> str:
    """The name metric ``metric`` of variant ``variant`` has in the run's decision and scorecard."""
    return f"{metric}{SEPARATOR}{variant}"


def difference_metric(metric: str, variant: str, other: str) -> str:
    """The name of the per-example difference ``metric`` of ``variant`` minus ``metric`` of ``other`` (what a gate
    with ``compare_to_variant`` decides on)."""
    return variant_metric(metric, f"{variant}-vs-{other}")


def split_variant_metric(name: str) -> tuple[str, str] | None:
    """``(metric, variant)`` of a name made by :func:`variant_metric`; None for a plain metric name."""
    metric, separator, variant = name.rpartition(SEPARATOR)
    return (metric, variant) if separator else None


def declared_metric(name: str) -> str:
    """The declared metric a decided name measures: ``m`` for ``m``, ``m@variant`` and ``m@a-vs-b`` alike (variants
    change the task, never a metric's definition or its judge)."""
    parts = split_variant_metric(name)
    return name if parts is None else parts[0]


def baseline_column(name: str, variants: Sequence[str]) -> str | None:
    """The column of a baseline run that a comparative gate deciding on ``name`` (this run's ``metric``, or
    ``metric@variant`` in a run with variants) is paired with; ``variants``: the baseline's variants (empty: a run
    without). None when the baseline has no such column to offer, which the gate blocks on (``not_comparable``).

    A variant is compared with the baseline's variant of the same name, or with a baseline run without variants
    (whose one column is what that run's task measured, as a run without variants compares with it); never with
    another variant's column. A name without a variant in a baseline with variants is that baseline's column of the
    same name, which only a judge of its variants side by side has: a run without variants has no variant to pick
    in a baseline that has several (the caller finds no such column)."""
    if not variants:
        return declared_metric(name)
    parts = split_variant_metric(name)
    if parts is not None and parts[1] not in variants:
        return None
    return name


def baseline_candidates(name: str) -> tuple[str, ...]:
    """Every column :func:`baseline_column` may pick for ``name``, whichever kind of run the baseline is: what to
    load of it before its kind is known."""
    parts = split_variant_metric(name)
    return (name,) if parts is None else (name, parts[0])
