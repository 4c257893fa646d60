"""Krippendorff's alpha against the published worked example and the `krippendorff` package; the jury's rule."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.agreement import VoteTally
from evalglass.core.jury import JuryRule, Measurement, NoVerdict, agreeing_share, jury_verdict
from evalglass.core.stats.alpha import alpha_interval, krippendorff_alpha

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: 4 observers, 12 units, missing data.
EXAMPLE_C = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
VALUES = np.array([1.0, 2.0, 3.0, 4.0, 5.0])


def _counts(reliability: np.ndarray, values: np.ndarray = VALUES) -> np.ndarray:
    return np.stack([(reliability == value).sum(axis=0) for value in values], axis=1)


@pytest.mark.parametrize(
    ("measurement", "published"),
    [(Measurement.NOMINAL, 0.743), (Measurement.ORDINAL, 0.815), (Measurement.INTERVAL, 0.849)],
)
def test_published_worked_example(measurement: Measurement, published: float) -> None:
    assert krippendorff_alpha(_counts(EXAMPLE_C), VALUES, measurement) == pytest.approx(published, abs=5e-4)


ratings = st.lists(st.lists(st.one_of(st.none(), st.integers(1, 4)), min_size=3, max_size=3), min_size=2, max_size=25)


@settings(max_examples=80, deadline=None)
@given(ratings, st.sampled_from(list(Measurement)))
def test_alpha_matches_the_krippendorff_package(units: list[list[int | None]], measurement: Measurement) -> None:
    data = np.array([[NAN if r is None else r for r in unit] for unit in units], dtype=float).T
    values = np.array([1.0, 2.0, 3.0, 4.0])
    ours = krippendorff_alpha(_counts(data, values), values, measurement)
    try:
        theirs = krippendorff.alpha(reliability_data=data, level_of_measurement=measurement.value, value_domain=values)
    except ValueError:  # the package refuses data with one value only: alpha is undefined
        theirs = NAN
    if ours is None:
        assert theirs is None or np.isnan(theirs)
    else:
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_interval_is_seeded_and_brackets_the_point() -> None:
    counts = _counts(EXAMPLE_C)
    first = alpha_interval(counts, VALUES, Measurement.NOMINAL, seed=7, resamples=500)
    again = alpha_interval(counts, VALUES, Measurement.NOMINAL, seed=7, resamples=500)
    alpha, low, high, units = first
    assert first == again and units == 11
    assert low is not None and high is not None and alpha is not None
    assert low <= alpha <= high and low < high
    # more examples of the same kind narrow the interval
    wide_alpha, wide_low, wide_high, _ = alpha_interval(
        np.tile(counts, (20, 1)), VALUES, Measurement.NOMINAL, seed=7, resamples=500
    )
    assert wide_alpha == pytest.approx(alpha, abs=0.02)
    assert wide_high is not None and wide_low is not None and wide_high - wide_low < high - low


def test_perfect_and_no_pairable_units() -> None:
    perfect = _counts(np.array([[1, 2, 3, 4], [1, 2, 3, 4]], dtype=float))
    assert krippendorff_alpha(perfect, VALUES, Measurement.NOMINAL) == 1.0
    lonely = _counts(np.array([[1, NAN], [NAN, 2]], dtype=float))
    assert krippendorff_alpha(lonely, VALUES, Measurement.NOMINAL) is None
    assert alpha_interval(lonely, VALUES, Measurement.NOMINAL, seed=0)[1] is None


def test_vote_tally_counts_low_agreement_and_skips_missing_votes() -> None:
    tally = VoteTally(
        ("a", "b", "c"),
        (1, 2, 3),
        (1.0, 2.0, 3.0),
        measurement=Measurement.ORDINAL,
        low_agreement=0.5,
        seed=0,
        confidence=0.95,
    )
    tally.add("x", {"votes": {"a": 1, "b": 1, "c": 1}})
    tally.add("y", {"votes": {"a": 1, "b": 2, "c": None}})  # one pair, disagreeing
    tally.add("z", {"votes": {"a": 3, "b": None, "c": None}})  # not pairable: no agreement to judge
    found = tally.agreement()
    assert found.low_agreement_examples == 1 and found.low_agreement_ids == ("y",)
    assert found.alpha.units == 2


labels = st.sampled_from([1, 2, 3])
votes = st.lists(st.one_of(st.none(), labels), min_size=1, max_size=6)
VALUE_OF = {1: 1.0, 2: 2.0, 3: 3.0}


@given(votes, st.sampled_from(list(JuryRule)), st.integers(1, 6), st.randoms())
def test_verdict_ignores_order_and_missing_is_never_a_vote(
    cast: list[int | None], rule: JuryRule, quorum: int, random: object
) -> None:
    shuffled = list(cast)
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    verdict = jury_verdict(cast, VALUE_OF, rule, quorum)
    assert verdict == jury_verdict(shuffled, VALUE_OF, rule, quorum)
    present = [vote for vote in cast if vote is not None]
    assert verdict.voters == len(present)
    if len(present) < quorum:
        assert verdict.missing is NoVerdict.QUORUM and verdict.value is None
    if verdict.value is not None:
        assert min(present) <= verdict.value <= max(present)  # a missing judge never drags the value to 0
    if rule is JuryRule.UNANIMOUS and verdict.value is not None:
        assert len(set(present)) == 1
    if rule is JuryRule.MAJORITY and verdict.label is not None:
        counts = sorted((present.count(label) for label in set(present)), reverse=True)
        assert present.count(verdict.label) == counts[0] and (len(counts) == 1 or counts[1] < counts[0])


def test_rule_examples() -> None:
    assert jury_verdict([3, 3, 5], VALUE_OF, JuryRule.MAJORITY, 3).value == 3.0
    assert jury_verdict([1, 3, None], VALUE_OF, JuryRule.MAJORITY, 2).missing is NoVerdict.TIE
    mean = jury_verdict([1, 2, None], VALUE_OF, JuryRule.MEAN, 2)
    assert mean.value == 1.5 and mean.label == 1  # equally near 1 and 2: the lower category
    assert jury_verdict([2, 2, 3], VALUE_OF, JuryRule.UNANIMOUS, 1).missing is NoVerdict.DISAGREE


def test_agreeing_share() -> None:
    assert agreeing_share([1]) is None
    assert agreeing_share([1, 1, 2]) == pytest.approx(1 / 3)
    for cast in itertools.product([1, 2], repeat=4):
        share = agreeing_share(list(cast))
        assert share is not None and 0 <= share <= 1
