"""Holm-adjusted paired comparisons of every pair of variants, and the "indistinguishable at this n" groups."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from evalglass.core.stats.multiple import compare_variants, holm_alphas

NAMES = tuple("abcdef")


@st.composite
def variant_tables(draw: st.DrawFn) -> np.ndarray:
    k = draw(st.integers(2, 6))
    n = draw(st.integers(0, 40))
    binary = draw(st.booleans())
    elements = (
        st.sampled_from([0.0, 1.0, float("nan")]) if binary else st.one_of(st.floats(-5, 5), st.just(float("nan")))
    )
    table = draw(arrays(np.float64, (k, n), elements=elements))
    shift = draw(arrays(np.float64, (k, 1), elements=st.sampled_from([0.0, 0.5, 2.0])))
    return table + shift


@settings(max_examples=150, deadline=None)
@given(variant_tables())
def test_adjusted_intervals_contain_the_unadjusted_ones(table: np.ndarray) -> None:
    result = compare_variants("m", NAMES[: table.shape[0]], table)
    for pair in result.pairs:
        assert pair.level >= result.level - 1e-12
        if pair.low is None:
            assert pair.high is None and not pair.distinguishable
            continue
        assert pair.unadjusted_low is not None and pair.unadjusted_high is not None and pair.high is not None
        assert pair.low <= pair.unadjusted_low + 1e-9
        assert pair.high >= pair.unadjusted_high - 1e-9
        assert pair.difference is not None and pair.low - 1e-9 <= pair.difference <= pair.high + 1e-9


@settings(max_examples=150, deadline=None)
@given(variant_tables())
def test_distinguishable_exactly_when_the_adjusted_interval_excludes_zero(table: np.ndarray) -> None:
    result = compare_variants("m", NAMES[: table.shape[0]], table)
    for pair in result.pairs:
        if pair.low is None or pair.high is None:
            continue
        excludes_zero = pair.low > 0 or pair.high < 0
        # At the edge (an end within rounding of 0) either answer is exact arithmetic's; elsewhere they agree.
        if min(abs(pair.low), abs(pair.high)) > 1e-9:
            assert pair.distinguishable == excludes_zero, pair


@settings(max_examples=150, deadline=None)
@given(variant_tables())
def test_groups_are_consistent_with_the_adjusted_intervals(table: np.ndarray) -> None:
    names = NAMES[: table.shape[0]]
    result = compare_variants("m", names, table)
    apart = {frozenset((p.first, p.second)) for p in result.pairs if p.distinguishable}
    together = {frozenset((p.first, p.second)) for p in result.pairs if not p.distinguishable}
    shared: set[frozenset[str]] = set()
    for group in result.groups:
        for a in group:
            for b in group:
                if a != b:
                    assert frozenset((a, b)) not in apart
                    shared.add(frozenset((a, b)))
    assert together <= shared  # every indistinguishable pair shares a group
    assert {name for group in result.groups for name in group} == set(names)
    for group in result.groups:  # maximal: no other variant is indistinguishable from every member
        for other in set(names) - set(group):
            assert any(frozenset((other, member)) in apart for member in group)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 30), elements=st.floats(0, 1)), st.sampled_from([0.05, 0.1, 0.01]))
def test_holm_rejects_what_the_step_down_rule_rejects(p_values: np.ndarray, alpha: float) -> None:
    alphas, rejected = holm_alphas(p_values, alpha)
    m = p_values.size
    ordered = np.sort(p_values)
    expected = 0
    while expected < m and ordered[expected] <= alpha / (m - expected):
        expected += 1
    assert int(rejected.sum()) == expected
    assert np.all(alphas >= alpha / m - 1e-15) and np.all(alphas <= alpha + 1e-15)
    assert np.array_equal(rejected, p_values <= alphas)


def test_a_clear_winner_is_separated_and_two_equal_variants_are_grouped() -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(0.5, 0.2, 200)
    table = np.vstack([base + 0.3, base + rng.normal(0, 0.01, 200), base + rng.normal(0, 0.01, 200)])
    result = compare_variants("m", ("strong", "x", "y"), table)
    assert result.groups == (("strong",), ("x", "y")) or result.groups == (("strong",), ("y", "x"))
    by_pair = {(p.first, p.second): p for p in result.pairs}
    assert by_pair[("strong", "x")].distinguishable and not by_pair[("x", "y")].distinguishable
    # Three comparisons: the strongest is tested at alpha/3, Holm's first step.
    assert by_pair[("strong", "x")].level == pytest.approx(1 - 0.05 / 3) or by_pair[("strong", "y")].level == (
        pytest.approx(1 - 0.05 / 3)
    )


def test_holm_matches_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    # statsmodels' Holm calls gc.collect() on every call: over a test worker's heap that took up to 2 s a call in the
    # whole suite. Frozen, the objects that exist before the loop are left out of those collections.
    gc.freeze()
    try:
        for _ in range(50):
            p = rng.uniform(0, 0.08, rng.integers(1, 12))
            _, rejected = holm_alphas(p, 0.05)
            expected = multipletests(p, alpha=0.05, method="holm")[0]
            assert np.array_equal(rejected, expected)
    finally:
        gc.unfreeze()


def test_lower_is_better_orders_groups_the_other_way() -> None:
    table = np.vstack([np.full(30, 1.0) + np.linspace(0, 0.01, 30), np.full(30, 3.0) + np.linspace(0, 0.02, 30)])
    assert compare_variants("m", ("low", "high"), table, higher_is_better=False).groups == (("low",), ("high",))
    assert compare_variants("m", ("low", "high"), table).groups == (("high",), ("low",))


def test_a_few_pairs_that_all_moved_the_same_way_prove_nothing_many_do() -> None:
    few = compare_variants("m", ("a", "b"), np.array([[1.0, 1.0], [0.0, 0.0]])).pairs[0]
    assert not few.distinguishable and few.p_value == 0.5 and (few.low, few.high) == (0.0, 1.0)
    many = compare_variants("m", ("a", "b"), np.array([[1.0] * 12, [0.0] * 12])).pairs[0]
    assert many.distinguishable and many.p_value == pytest.approx(2 * 0.5**12) and (many.low, many.high) == (1.0, 1.0)
