"""The worked examples in docs/reading-the-numbers.md, recomputed: the page quotes these numbers."""

from __future__ import annotations

import numpy as np
import pytest

from evalglass.core.stats import (
    UNIT_SCALE,
    Direction,
    Note,
    Sides,
    bootstrap,
    clopper_pearson,
    cluster_bootstrap,
    confidence_interval,
    one_sided_bound,
    reduce_samples,
    required_n,
    sensitivity_bounds,
    student_t,
    wilson,
)

HIGHER = Direction.HIGHER_IS_BETTER


def r4(x: float | None) -> float:
    assert x is not None
    return round(x, 4)


def test_binary_gate_example() -> None:
    values = np.array([1.0] * 106 + [0.0] * 14)
    w, cp = wilson(106, 120), clopper_pearson(106, 120)
    bound = one_sided_bound(values, direction=HIGHER, level=0.95)
    assert w is not None and cp is not None and bound is not None
    assert (r4(w.point), r4(w.low), r4(w.high)) == (0.8833, 0.8137, 0.9292)
    assert (r4(cp.low), r4(cp.high)) == (0.8120, 0.9347)
    assert r4(bound.bound(HIGHER)) == 0.8265
    assert required_n(point=106 / 120, threshold=0.85, direction=HIGHER, binary=True) == 311


def test_continuous_gate_example() -> None:
    values = np.array([0.62, 0.71, 0.55, 0.80, 0.67, 0.74, 0.59, 0.91, 0.66, 0.70])
    t, boot = student_t(values), bootstrap(values, seed=42)
    bound = one_sided_bound(values, direction=HIGHER)
    assert t is not None and boot is not None and bound is not None
    assert (r4(t.point), r4(t.low), r4(t.high), r4(t.params["std_error"])) == (0.695, 0.6200, 0.7700, 0.0332)  # type: ignore[arg-type]
    assert (r4(boot.low), r4(boot.high)) == (0.6415, 0.7654)
    assert r4(bound.low) == 0.6342
    variance = float(values.var(ddof=1))
    assert round(variance, 4) == 0.0110
    assert required_n(point=float(values.mean()), threshold=0.65, direction=HIGHER, variance=variance) == 15


def test_edge_case_examples() -> None:
    assert r4(wilson(1, 1).low) == 0.2065  # type: ignore[union-attr]
    assert r4(wilson(60, 60).low) == 0.9398  # type: ignore[union-attr]
    assert r4(clopper_pearson(60, 60).low) == 0.9404  # type: ignore[union-attr]
    assert (r4(wilson(0, 10).high), r4(wilson(10, 10).low)) == (0.2775, 0.7225)  # type: ignore[union-attr]
    one_sided = clopper_pearson(60, 60, sides=Sides.LOWER)
    assert one_sided is not None and one_sided.low == pytest.approx(0.05 ** (1 / 60))


def test_sensitivity_example() -> None:
    bounds = sensitivity_bounds([1.0] * 104 + [0.0] * 12, excluded=4, scale=UNIT_SCALE, direction=HIGHER)
    assert bounds is not None and (r4(bounds.worst), r4(bounds.best)) == (0.8667, 0.9)


def test_epochs_example() -> None:
    examples = np.repeat([0, 1, 2, 3], 5)
    samples = np.array([1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0], dtype=float)
    expected = {
        "mean": [0.4, 0.0, 1.0, 0.2],
        "majority": [0.0, 0.0, 1.0, 0.0],
        "max": [1.0, 0.0, 1.0, 1.0],
        "pass_at_k": [0.7, 0.0, 1.0, 0.4],
        "at_least_k": [1.0, 0.0, 1.0, 0.0],
    }
    for reducer, values in expected.items():
        k = 2 if reducer in ("pass_at_k", "at_least_k") else None
        assert reduce_samples(examples, samples, reducer, k=k).values == pytest.approx(values, abs=1e-12)


def test_cluster_example() -> None:
    values = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1], dtype=float)
    ids = np.repeat(np.arange(6), 4)
    naive, robust = wilson(18, 24), confidence_interval(values, clusters=ids)
    boot = cluster_bootstrap(values, ids, seed=42)
    assert naive is not None and robust is not None and boot is not None
    assert (r4(naive.low), r4(naive.high)) == (0.5510, 0.8800)
    assert (r4(robust.low), robust.high, r4(robust.params["std_error"])) == (0.4626, 1.0, 0.1118)  # type: ignore[arg-type]
    assert (r4(boot.low), r4(boot.high)) == (0.4583, 0.9167)
    assert Note.FEW_CLUSTERS in robust.notes and Note.FEW_CLUSTERS in boot.notes
