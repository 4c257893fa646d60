"""The automatic method choice, overrides, the one-sided gate bound and the package's import cost."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from evalglass.core.stats import (
    Direction,
    Method,
    Sides,
    Statistic,
    choose_method,
    clopper_pearson,
    confidence_interval,
    one_sided_bound,
    student_t,
    wilson,
)

BINARY = np.array([1.0, 0.0, 1.0, 1.0])
CONTINUOUS = np.array([0.3, 0.9, 0.55, 0.7])


def test_automatic_choice() -> None:
    assert choose_method(BINARY) is Method.WILSON
    assert choose_method(CONTINUOUS) is Method.STUDENT_T
    assert choose_method(BINARY, clustered=True) is Method.CLUSTER_T
    assert choose_method(CONTINUOUS, statistic=Statistic.MEDIAN) is Method.BOOTSTRAP_BCA


def test_overrides_are_checked() -> None:
    assert choose_method(BINARY, override="clopper_pearson") is Method.CLOPPER_PEARSON
    assert choose_method(BINARY, override="student_t") is Method.STUDENT_T
    with pytest.raises(ValueError, match="binary"):
        choose_method(CONTINUOUS, override="wilson")
    with pytest.raises(ValueError, match="ignore them"):
        choose_method(BINARY, clustered=True, override="wilson")
    with pytest.raises(ValueError, match="needs cluster ids"):
        choose_method(BINARY, override="cluster_t")
    with pytest.raises(ValueError, match="known methods"):
        choose_method(BINARY, override="wald")
    with pytest.raises(ValueError, match="other statistics"):
        choose_method(CONTINUOUS, statistic=Statistic.MEDIAN, override="student_t")
    with pytest.raises(ValueError, match="only the mean"):
        choose_method(CONTINUOUS, clustered=True, statistic=Statistic.MEDIAN)


def test_dispatch_equals_direct_calls() -> None:
    assert confidence_interval(BINARY, level=0.9) == wilson(3, 4, level=0.9)
    assert confidence_interval(BINARY, method=Method.CLOPPER_PEARSON) == clopper_pearson(3, 4)
    assert confidence_interval(CONTINUOUS, sides=Sides.UPPER) == student_t(CONTINUOUS, sides=Sides.UPPER)
    assert confidence_interval([]) is None


def test_one_sided_bound_takes_the_unfavourable_side() -> None:
    higher = one_sided_bound(BINARY, direction=Direction.HIGHER_IS_BETTER, level=0.95)
    lower = one_sided_bound(CONTINUOUS, direction="lower_is_better", level=0.95)
    assert higher is not None and higher.sides is Sides.LOWER and higher.high is None
    assert higher.bound(Direction.HIGHER_IS_BETTER) == pytest.approx(wilson(3, 4, level=0.9).low)  # type: ignore[union-attr]
    assert lower is not None and lower.sides is Sides.UPPER and lower.low is None
    assert lower.bound("lower_is_better") == pytest.approx(student_t(CONTINUOUS, level=0.9).high)  # type: ignore[union-attr]
    assert one_sided_bound([], direction=Direction.HIGHER_IS_BETTER) is None
    single = one_sided_bound([0.4], direction=Direction.HIGHER_IS_BETTER)
    assert single is not None and single.bound(Direction.HIGHER_IS_BETTER) is None and not single.defined


def test_importing_the_package_does_not_import_scipy() -> None:
    code = "import sys, evalglass.core.stats; assert 'scipy' not in sys.modules, 'scipy imported eagerly'"
    subprocess.run([sys.executable, "-c", code], check=True)
