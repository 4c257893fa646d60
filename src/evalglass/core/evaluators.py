"""Evaluator versions (``metric:exact_match`` → 1) as a person reads them, for preflight and ``explain``.

Its own module so that a preflight, which shows them for every gate, imports no run record (and so no numpy).
"""

from __future__ import annotations

from collections.abc import Mapping


def evaluator_labels(evaluators: Mapping[str, int]) -> tuple[str, ...]:
    """``{"metric:exact_match": 1, "interval:wilson": 1}`` as a person reads it: ``("exact_match@1", "wilson@1")``."""
    return tuple(f"{key.partition(':')[2]}@{version}" for key, version in evaluators.items())
