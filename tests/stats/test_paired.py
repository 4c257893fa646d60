"""Paired differences: checked against a published worked example, statsmodels and scipy, and by properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.contingency_tables import mcnemar

from evalglass.core.stats import (
    Method,
    Note,
    PairedTable,
    PairedTest,
    Sides,
    detectable_drop,
    mcnemar_exact,
    newcombe_paired,
    paired_difference,
    paired_table,
    pairs_to_detect,
)


def table(both: int, base_only: int, candidate_only: int, neither: int) -> PairedTable:
    return PairedTable(both=both, base_only=base_only, candidate_only=candidate_only, neither=neither)


def arrays(t: PairedTable) -> tuple[np.ndarray, np.ndarray]:
    """Binary arrays (baseline, candidate) with exactly the counts of ``t``."""
    base = np.array([1.0] * t.both + [1.0] * t.base_only + [0.0] * t.candidate_only + [0.0] * t.neither)
    cand = np.array([1.0] * t.both + [0.0] * t.base_only + [1.0] * t.candidate_only + [0.0] * t.neither)
    return base, cand


def test_newcombe_1998_worked_example() -> None:
    # Newcombe (1998), Stat Med 17:2635, Table II example (a): e=36, f=12, g=2, h=0, n=50; the difference of the
    # paired proportions is 0.2 and method 10 (hybrid score, no continuity correction) gives 0.0569 to 0.3404.
    interval = newcombe_paired(table(36, 2, 12, 0))
    assert interval is not None
    assert interval.method is Method.NEWCOMBE_PAIRED
    assert (round(interval.point, 4), round(interval.low or 0, 4), round(interval.high or 0, 4)) == (
        0.2,
        0.0569,
        0.3404,
    )


def test_phi_correction_applies_only_to_positive_association() -> None:
    # AD - BC = 36*0 - 2*12 < 0: phi is the plain (negative) correlation; with AD > BC it is shrunk by N/2.
    negative = newcombe_paired(table(36, 2, 12, 0))
    positive = newcombe_paired(table(40, 3, 5, 30))
    assert negative is not None and positive is not None
    assert negative.params["phi"] == pytest.approx(-24 / math.sqrt(38 * 12 * 48 * 2))
    assert positive.params["phi"] == pytest.approx((40 * 30 - 15 - 78 / 2) / math.sqrt(43 * 35 * 45 * 33))


@pytest.mark.parametrize(
    "counts", [(36, 2, 12, 0), (1, 7, 1, 12), (59, 6, 16, 80), (0, 0, 0, 5), (10, 0, 4, 0), (0, 3, 0, 0)]
)
def test_mcnemar_exact_matches_statsmodels(counts: tuple[int, int, int, int]) -> None:
    both, base_only, candidate_only, neither = counts
    expected = mcnemar([[both, base_only], [candidate_only, neither]], exact=True).pvalue
    assert mcnemar_exact(table(*counts)) == pytest.approx(expected, rel=1e-12)


def test_binary_pairs_use_newcombe_and_mcnemar() -> None:
    t = table(59, 6, 16, 80)
    base, cand = arrays(t)
    result = paired_difference(base, cand)
    assert result is not None
    assert result.test is PairedTest.MCNEMAR_EXACT
    assert result.table == t
    reference = newcombe_paired(t)
    assert reference is not None and result.interval.method is Method.NEWCOMBE_PAIRED
    assert (result.interval.low, result.interval.high) == pytest.approx((reference.low, reference.high), abs=1e-15)
    assert result.p_value == pytest.approx(mcnemar([[59, 6], [16, 80]], exact=True).pvalue)
    assert result.point == pytest.approx((16 - 6) / 161)
    assert (result.base, result.candidate) == pytest.approx((65 / 161, 75 / 161))


def test_continuous_pairs_use_the_paired_t() -> None:
    rng = np.random.default_rng(7)
    base = rng.uniform(0, 1, 40)
    cand = np.clip(base + rng.normal(0.03, 0.1, 40), 0, 1)
    result = paired_difference(base, cand)
    reference = scipy.stats.ttest_rel(cand, base)
    low, high = reference.confidence_interval(0.95)
    assert result is not None
    assert result.test is PairedTest.PAIRED_T
    assert result.interval.method is Method.STUDENT_T
    assert (result.interval.low, result.interval.high) == pytest.approx((low, high), rel=1e-9)
    assert result.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert result.std_error == pytest.approx(float(np.std(cand - base, ddof=1)) / math.sqrt(40))


def test_binary_differences_are_not_clipped_to_the_unit_range() -> None:
    # Differences of 0/1 values in {0, 1} only (nobody regressed) once tripped the single-run clip to [0, 1].
    base = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    cand = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    result = paired_difference(base, cand, method=Method.STUDENT_T)
    low, _ = scipy.stats.ttest_rel(cand, base).confidence_interval(0.95)
    assert result is not None and result.interval.low == pytest.approx(low)
    assert result.interval.low is not None and result.interval.low < 0


def test_paired_bootstrap_is_seeded_and_records_a_fallback() -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0, 1, 60)
    cand = base + rng.normal(-0.02, 0.05, 60)
    first = paired_difference(base, cand, method=Method.BOOTSTRAP_BCA, seed=11)
    again = paired_difference(base, cand, method=Method.BOOTSTRAP_BCA, seed=11)
    assert first is not None and first == again
    assert first.interval.method is Method.BOOTSTRAP_BCA and first.interval.params["seed"] == 11
    eighths = np.arange(40) / 8.0  # exact in binary: every difference is exactly 0.125
    shifted = paired_difference(eighths, eighths + 0.125, method=Method.BOOTSTRAP_BCA, seed=11)
    assert shifted is not None
    assert (shifted.interval.low, shifted.interval.high) == (0.125, 0.125)
    assert shifted.interval.method is Method.BOOTSTRAP_PERCENTILE
    assert {Note.ZERO_SPREAD, Note.BCA_FALLBACK} <= set(shifted.interval.notes)
    assert "jackknife" in str(shifted.interval.params["fallback_reason"])


def test_clustered_pairs_match_statsmodels_cr1() -> None:
    rng = np.random.default_rng(5)
    clusters = np.repeat(np.arange(25), 4)
    effect = rng.normal(0, 0.2, 25)[clusters]
    base = rng.uniform(0, 1, 100)
    cand = base + effect + rng.normal(0, 0.05, 100)
    result = paired_difference(base, cand, clusters=clusters)
    fit = OLS(cand - base, np.ones(100)).fit(cov_type="cluster", cov_kwds={"groups": clusters, "use_correction": True})
    assert result is not None
    assert result.test is PairedTest.CLUSTER_PAIRED_T
    assert result.interval.method is Method.CLUSTER_T and result.interval.clusters == 25
    assert result.std_error == pytest.approx(float(fit.bse[0]), rel=1e-9)
    half = scipy.stats.t.ppf(0.975, 24) * float(fit.bse[0])
    assert (result.interval.low, result.interval.high) == pytest.approx(
        (float(fit.params[0]) - half, float(fit.params[0]) + half), rel=1e-9
    )
    assert result.p_value == pytest.approx(2 * scipy.stats.t.sf(abs(fit.params[0] / fit.bse[0]), 24), rel=1e-9)
    boot = paired_difference(base, cand, clusters=clusters, method=Method.CLUSTER_BOOTSTRAP_BCA, seed=1)
    assert boot is not None and boot.interval.method.clustered


def test_overrides_that_cannot_apply_are_refused() -> None:
    base, cand = np.array([0.2, 0.4, 0.6]), np.array([0.3, 0.4, 0.5])
    with pytest.raises(ValueError, match="binary"):
        paired_difference(base, cand, method=Method.WILSON)
    with pytest.raises(ValueError, match="would ignore them"):
        paired_difference(base, cand, method=Method.STUDENT_T, clusters=np.array([1, 1, 2]))
    with pytest.raises(ValueError, match="needs cluster ids"):
        paired_difference(base, cand, method=Method.CLUSTER_T)
    with pytest.raises(ValueError, match="one baseline and one candidate"):
        paired_difference(base, cand[:2])
    assert paired_difference(np.empty(0), np.empty(0)) is None


counts = st.integers(min_value=0, max_value=60)


@settings(max_examples=200, deadline=None)
@given(counts, counts, counts, counts, st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_newcombe_properties(a: int, b: int, c: int, d: int, level: float) -> None:
    t = table(a, b, c, d)
    interval = newcombe_paired(t, level=level)
    if t.n == 0:
        assert interval is None
        return
    assert interval is not None and interval.low is not None and interval.high is not None
    assert -1.0 <= interval.low <= interval.point <= interval.high <= 1.0
    swapped = newcombe_paired(table(a, c, b, d), level=level)
    assert swapped is not None and swapped.low is not None and swapped.high is not None
    assert swapped.point == pytest.approx(-interval.point)
    assert (swapped.low, swapped.high) == pytest.approx((-interval.high, -interval.low), abs=1e-12)
    assert mcnemar_exact(t) == mcnemar_exact(table(a, c, b, d))
    lower = newcombe_paired(t, level=level, sides=Sides.LOWER)
    two = newcombe_paired(t, level=2 * level - 1)
    assert lower is not None and two is not None and lower.high is None
    assert lower.low == pytest.approx(two.low, abs=1e-12)
    wider = newcombe_paired(t, level=min(0.999, level + 0.005))
    assert wider is not None and wider.low is not None and wider.high is not None
    assert wider.low <= interval.low + 1e-12 and wider.high >= interval.high - 1e-12


values = st.lists(st.floats(min_value=-1, max_value=1, allow_nan=False), min_size=2, max_size=40)


@settings(max_examples=100, deadline=None)
@given(values, st.data())
def test_paired_difference_properties(base_list: list[float], data: st.DataObject) -> None:
    base = np.array(base_list)
    cand = np.array(data.draw(st.lists(st.floats(min_value=-1, max_value=1), min_size=base.size, max_size=base.size)))
    result = paired_difference(base, cand)
    swapped = paired_difference(cand, base)
    assert result is not None and swapped is not None
    interval = result.interval
    assert interval.low is not None and interval.high is not None
    assert interval.low <= result.point <= interval.high
    assert result.point == pytest.approx(result.candidate - result.base)
    assert swapped.point == pytest.approx(-result.point, abs=1e-12)
    assert swapped.interval.low == pytest.approx(-interval.high, abs=1e-9)
    assert swapped.p_value == pytest.approx(result.p_value)
    same = paired_difference(base, base)
    assert same is not None and same.point == 0.0 and same.p_value == 1.0


def test_paired_table_refuses_non_binary_values() -> None:
    with pytest.raises(ValueError, match="binary"):
        paired_table(np.array([0.5]), np.array([1.0]))


def test_power_statements_agree_with_each_other_and_with_a_textbook_case() -> None:
    # Two-sided 5% / 80% power would be (1.96 + 0.8416)^2; the gates are one-sided: (1.6449 + 0.8416)^2 = 6.18.
    assert pairs_to_detect(drop=0.1, std_dev=0.1, level=0.95) == 7
    assert pairs_to_detect(drop=0.02, std_dev=0.3, level=0.95) == 1392
    mde = detectable_drop(pairs=1392, std_dev=0.3, level=0.95)
    assert mde is not None and mde <= 0.02 < detectable_drop(pairs=1391, std_dev=0.3, level=0.95)  # type: ignore[operator]
    assert pairs_to_detect(drop=0.02, std_dev=0.0) is None and detectable_drop(pairs=30, std_dev=0.0) is None
    assert pairs_to_detect(drop=0.0, std_dev=0.3) is None


def test_a_single_run_cannot_use_the_paired_method() -> None:
    from evalglass.core.stats import confidence_interval

    with pytest.raises(ValueError, match="paired differences between two runs"):
        confidence_interval(np.array([1.0, 0.0, 1.0]), method="newcombe_paired")


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=3000), st.integers(min_value=0, max_value=3000))
def test_mcnemar_exact_matches_the_binomial_test_over_a_wide_range(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue
    assert mcnemar_exact(table(5, b, c, 5)) == pytest.approx(
        expected, rel=1e-9, abs=1e-250
    )  # scipy underflows to 0 below ~1e-300
