"""Pairwise outcomes (mirror symmetry, position bias) and the Bradley–Terry fit (against a logistic regression)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.pairwise import (
    Inconsistent,
    Outcome,
    PairTally,
    Position,
    flipped,
    mirrored,
    pair_outcome,
)
from evalglass.core.stats.bradleyterry import bradley_terry, strength_covariance

positions = st.sampled_from(list(Position))
options = st.sampled_from(list(Inconsistent))


@given(positions, positions, options)
def test_swapping_a_and_b_mirrors_the_outcome(a_first: Position, b_first: Position, option: Inconsistent) -> None:
    # Swapping the outputs' roles swaps which prompt is which: the answer to "a first" becomes the answer to
    # "b first" of the swapped pair, and vice versa.
    assert pair_outcome(b_first, a_first, option) is mirrored(pair_outcome(a_first, b_first, option))
    assert flipped(a_first, b_first) == flipped(b_first, a_first)


@given(positions, positions, options)
def test_a_flipped_verdict_is_never_a_win(a_first: Position, b_first: Position, option: Inconsistent) -> None:
    outcome = pair_outcome(a_first, b_first, option)
    if flipped(a_first, b_first):
        assert outcome is (Outcome.TIE if option is Inconsistent.TIE else Outcome.EXCLUDED)
    else:
        assert outcome in (Outcome.A, Outcome.B, Outcome.TIE)


@given(st.lists(st.booleans(), min_size=1, max_size=30), options)
def test_a_judge_that_always_prefers_position_one(swaps: list[bool], option: Inconsistent) -> None:
    tally = PairTally(("x", "y"), option, 0.95)
    for swapped in swaps:
        outcome = pair_outcome(Position.FIRST, Position.FIRST, option)
        note = {"a": "x", "b": "y", "outcome": outcome.value, "flipped": True}
        if swapped:  # the same pair recorded the other way round counts the same
            note = {"a": "y", "b": "x", "outcome": mirrored(outcome).value, "flipped": True}
        tally.add("e", {"pairs": [note]})
    summary = tally.summary()
    (pair,) = summary.pairs
    assert summary.position_bias == 1.0 and pair.a_wins == 0 and pair.b_wins == 0 and pair.win_rate is None
    assert (pair.ties if option is Inconsistent.TIE else pair.excluded) == len(swaps)


def test_missing_answers_are_counted_apart() -> None:
    tally = PairTally(("x", "y"), Inconsistent.EXCLUDED, 0.95)
    tally.add("e", {"pairs": [{"a": "x", "b": "y", "outcome": None, "flipped": None}]})
    tally.add("f", {"pairs": [{"a": "x", "b": "y", "outcome": "a", "flipped": False}]})
    (pair,) = tally.summary().pairs
    assert pair.missing == 1 and pair.a_wins == 1 and pair.position_bias == 0.0


def test_bradley_terry_matches_a_logistic_regression() -> None:
    import statsmodels.api as sm

    wins = np.array([[0, 7, 8], [2, 0, 7], [1, 2, 0]], dtype=float)
    fitted = bradley_terry(wins)
    assert fitted is not None
    # the same model as a logistic regression: one row per game, x_i - x_j, the last output as reference
    rows, outcomes = [], []
    for i in range(3):
        for j in range(3):
            for _ in range(int(wins[i, j])):
                row = np.zeros(3)
                row[i], row[j] = 1.0, -1.0
                rows.append(row[:2])
                outcomes.append(1.0)
                rows.append(-row[:2])
                outcomes.append(0.0)
    model = sm.GLM(np.array(outcomes), np.array(rows), family=sm.families.Binomial()).fit()
    reference = np.append(model.params, 0.0)
    assert fitted == pytest.approx(reference - reference.mean(), abs=1e-6)
    # the Wald variance of a difference matches the regression's (each game counted twice there: halve it)
    covariance = strength_covariance(fitted, wins + wins.T)
    difference = covariance[0, 0] + covariance[2, 2] - 2 * covariance[0, 2]
    assert difference == pytest.approx(model.cov_params()[0, 0] * 2, rel=1e-4)


def test_no_fit_when_an_output_never_wins() -> None:
    assert bradley_terry(np.array([[0, 3, 2], [1, 0, 2], [0, 0, 0]], dtype=float)) is None


@given(st.permutations([0, 1, 2]))
def test_relabelling_outputs_permutes_strengths(order: list[int]) -> None:
    wins = np.array([[0, 5, 6], [3, 0, 4], [2, 3, 0]], dtype=float)
    base = bradley_terry(wins)
    permuted = bradley_terry(wins[np.ix_(order, order)])
    assert base is not None and permuted is not None
    assert permuted == pytest.approx(base[order], abs=1e-8)
