"""Calibration numbers: worked examples computed by hand, cross-checked against statsmodels."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.calibration import (
    CalibrationError,
    calibrate,
    cohens_kappa,
    confusion_matrix,
    weighted_kappa,
    wilson_interval,
)


def _pairs(matrix: list[list[int]], categories: list[object]) -> tuple[list[object], list[object]]:
    human: list[object] = []
    judge: list[object] = []
    for i, row in enumerate(matrix):
        for j, count in enumerate(row):
            human += [categories[i]] * count
            judge += [categories[j]] * count
    order = list(range(len(human)))
    random.Random(7).shuffle(order)
    return [human[k] for k in order], [judge[k] for k in order]


def test_binary_worked_example() -> None:
    # rows = human, columns = judge:  [[20, 5], [10, 15]]   n = 50
    # agreement p_o = 35/50 = 0.70; marginals human (.5, .5), judge (.6, .4) -> p_e = .5*.6 + .5*.4 = 0.50
    # kappa = (0.70 - 0.50) / (1 - 0.50) = 0.40
    # Wilson 95 %: z = 1.959964, centre = (0.7 + z^2/100) / (1 + z^2/50) = 0.685731,
    #   half = z * sqrt(0.7*0.3/50 + z^2/10000) / (1 + z^2/50) = 0.123234  -> (0.562497, 0.808965)
    human, judge = _pairs([[20, 5], [10, 15]], ["fail", "pass"])
    report = calibrate(human, judge, categories=["fail", "pass"])
    assert report.n == 50 and report.excluded == 0 and report.agreed == 35
    assert report.confusion == ((20, 5), (10, 15))
    assert report.agreement == pytest.approx(0.70)
    assert report.kappa == pytest.approx(0.40)
    assert report.agreement_interval.low == pytest.approx(0.562497, abs=1e-5)
    assert report.agreement_interval.high == pytest.approx(0.808965, abs=1e-5)
    assert report.weighted_kappa_linear is None  # nominal scale: no weighting


def test_ordinal_worked_example() -> None:
    # rows = human, columns = judge over 1..3:  [[4,1,0],[1,3,1],[0,2,8]]   n = 20, p_o = 15/20 = 0.75
    # marginals r = (.25, .25, .5), c = (.25, .30, .45)
    # unweighted p_e = .0625 + .075 + .225 = .3625                  -> kappa = .3875/.6375 = 0.607843
    # linear weights (1, .5, 0): p_o = (15 + .5*5)/20 = .875; p_e = .5625  -> .3125/.4375 = 5/7
    # quadratic weights (1, .75, 0): p_o = (15 + .75*5)/20 = .9375; p_e = .6625 -> .275/.3375 = 22/27
    human, judge = _pairs([[4, 1, 0], [1, 3, 1], [0, 2, 8]], [1, 2, 3])
    report = calibrate(human, judge, categories=[1, 2, 3], ordinal=True)
    assert report.agreement == pytest.approx(0.75)
    assert report.kappa == pytest.approx(0.607843, abs=1e-6)
    assert report.weighted_kappa_linear == pytest.approx(5 / 7)
    assert report.weighted_kappa_quadratic == pytest.approx(22 / 27)


def test_agreement_against_statsmodels_on_random_tables() -> None:
    statsmodels = pytest.importorskip("statsmodels.stats.inter_rater")
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    import numpy as np

    rng = random.Random(11)
    for _ in range(30):
        k = rng.randint(2, 6)
        table = [[rng.randint(0, 9) + (15 if i == j else 0) for j in range(k)] for i in range(k)]
        human, judge = _pairs(table, list(range(k)))
        report = calibrate(human, judge, categories=list(range(k)), ordinal=True)
        array = np.array(table)
        assert report.kappa == pytest.approx(statsmodels.cohens_kappa(array).kappa, abs=1e-12)
        assert report.weighted_kappa_linear == pytest.approx(
            statsmodels.cohens_kappa(array, wt="linear").kappa, abs=1e-12
        )
        assert report.weighted_kappa_quadratic == pytest.approx(
            statsmodels.cohens_kappa(array, wt="quadratic").kappa, abs=1e-12
        )
        low, high = proportion.proportion_confint(report.agreed, report.n, alpha=0.05, method="wilson")
        assert (report.agreement_interval.low, report.agreement_interval.high) == pytest.approx((low, high), abs=1e-9)


def test_missing_judge_labels_are_excluded_and_counted_not_disagreements() -> None:
    report = calibrate([1, 2, 3, 3], [1, None, 3, None], categories=[1, 2, 3])
    assert report.n == 2 and report.excluded == 2 and report.agreement == 1.0


def test_undefined_kappa_is_none_not_a_number() -> None:
    report = calibrate(["pass"] * 5, ["pass"] * 5, categories=["fail", "pass"], ordinal=True)
    assert report.agreement == 1.0 and report.kappa is None and report.weighted_kappa_linear is None
    assert report.agreement_interval.high == 1.0 and report.agreement_interval.low < 1.0


def test_perfect_and_chance_level_agreement() -> None:
    assert cohens_kappa([[5, 0], [0, 5]]) == pytest.approx(1.0)
    assert cohens_kappa([[5, 5], [5, 5]]) == pytest.approx(0.0)
    assert cohens_kappa([[0, 5], [5, 0]]) == pytest.approx(-1.0)
    assert weighted_kappa([[3]], "linear") is None


def test_input_errors_are_explicit() -> None:
    with pytest.raises(CalibrationError, match="no pair"):
        calibrate([1, 2], [None, None])
    with pytest.raises(CalibrationError, match="not on the scale"):
        calibrate([1, 9], [1, 1], categories=[1, 2])
    with pytest.raises(CalibrationError, match="2 human labels but 1"):
        calibrate([1, 2], [1])
    with pytest.raises(CalibrationError, match="no human label"):
        calibrate([1, None], [1, 1])
    with pytest.raises(CalibrationError):
        wilson_interval(0, 0)
    with pytest.raises(CalibrationError):
        confusion_matrix([1], [1], [1, 1])


def test_report_serialises_with_its_fingerprint() -> None:
    report = calibrate([1, 2], [1, 2], judge_fingerprint="f" * 64)
    data = report.as_dict()
    assert data["judge_fingerprint"] == "f" * 64 and data["confusion"] == [[1, 0], [0, 1]]
    assert data["confusion_axes"] == {"rows": "human", "columns": "judge"}


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=500), st.data())
def test_wilson_interval_brackets_the_rate(n: int, data: st.DataObject) -> None:
    successes = data.draw(st.integers(min_value=0, max_value=n))
    interval = wilson_interval(successes, n)
    assert 0.0 <= interval.low <= successes / n <= interval.high <= 1.0
