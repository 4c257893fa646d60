"""Epoch reducers against brute-force per-example Python."""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import combinations
from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.stats import Reducer, Ties, pass_at_k, reduce_samples

# (example id, value) pairs; ids are arbitrary integers and arrive in any order.
samples = st.lists(st.tuples(st.integers(-5, 5), st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0])), min_size=1, max_size=60)
binary_samples = st.lists(st.tuples(st.integers(0, 6), st.sampled_from([0.0, 1.0])), min_size=1, max_size=60)


def grouped(pairs: list[tuple[int, float]]) -> dict[int, list[float]]:
    groups: dict[int, list[float]] = defaultdict(list)
    for example, value in pairs:
        groups[example].append(value)
    return dict(sorted(groups.items()))


def run(pairs: list[tuple[int, float]], reducer: Reducer, **kwargs: object) -> dict[int, float]:
    result = reduce_samples([p[0] for p in pairs], [p[1] for p in pairs], reducer, **kwargs)  # type: ignore[arg-type]
    assert list(result.examples) == sorted({p[0] for p in pairs})
    assert list(result.samples) == [len(v) for v in grouped(pairs).values()]
    return dict(zip(result.examples.tolist(), result.values.tolist(), strict=True))


@given(samples)
def test_mean_max_min(pairs: list[tuple[int, float]]) -> None:
    groups = grouped(pairs)
    assert run(pairs, Reducer.MEAN) == pytest.approx({k: sum(v) / len(v) for k, v in groups.items()})
    assert run(pairs, Reducer.MAX) == {k: max(v) for k, v in groups.items()}
    assert run(pairs, Reducer.MIN) == {k: min(v) for k, v in groups.items()}


@given(samples)
def test_majority_breaks_ties_by_the_declared_rule(pairs: list[tuple[int, float]]) -> None:
    def mode(values: list[float], pick: type[min] | type[max]) -> float:  # type: ignore[valid-type]
        counts = Counter(values)
        top = max(counts.values())
        return pick(v for v, c in counts.items() if c == top)  # type: ignore[operator,no-any-return]

    groups = grouped(pairs)
    assert run(pairs, Reducer.MAJORITY) == {k: mode(v, min) for k, v in groups.items()}
    assert run(pairs, Reducer.MAJORITY, ties=Ties.HIGH) == {k: mode(v, max) for k, v in groups.items()}


def test_majority_split_vote_goes_to_the_unfavourable_side() -> None:
    examples, values = [1, 1, 2, 2, 2], [1.0, 0.0, 1.0, 1.0, 0.0]
    low = reduce_samples(examples, values, "majority")
    high = reduce_samples(examples, values, "majority", ties="high")
    assert low.values.tolist() == [0.0, 1.0] and high.values.tolist() == [1.0, 1.0]


def brute_pass_at_k(values: list[float], k: int) -> float:
    subsets = list(combinations(values, k))
    return sum(max(s) for s in subsets) / len(subsets)


@given(binary_samples, st.integers(1, 4))
def test_pass_at_k_is_the_average_over_all_k_subsets(pairs: list[tuple[int, float]], k: int) -> None:
    groups = grouped(pairs)
    if min(len(v) for v in groups.values()) < k:
        with pytest.raises(ValueError, match="at least"):
            run(pairs, Reducer.PASS_AT_K, k=k)
        return
    assert run(pairs, Reducer.PASS_AT_K, k=k) == pytest.approx(
        {e: brute_pass_at_k(v, k) for e, v in groups.items()}, abs=1e-12
    )
    assert run(pairs, Reducer.AT_LEAST_K, k=k) == {e: float(sum(v) >= k) for e, v in groups.items()}


def test_pass_at_k_is_stable_for_large_sample_counts() -> None:
    # C(1000, 100) overflows float64; the product form in logs does not.
    n = np.array([1000, 1000, 1000, 200])
    c = np.array([0, 1, 950, 3])
    expected = [0.0, 0.1, 1.0, 1 - comb(197, 100) / comb(200, 100)]
    assert pass_at_k(n, c, 100) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert pass_at_k(np.array([5]), np.array([5]), 5)[0] == 1.0
    assert pass_at_k(np.array([5]), np.array([1]), 1)[0] == pytest.approx(0.2, rel=1e-15)
    assert str(pass_at_k(np.array([5]), np.array([0]), 2)[0]) == "0.0"  # not -0.0


def test_pass_at_k_of_one_is_the_mean() -> None:
    examples = np.repeat(np.arange(1000), 7)
    values = (np.random.default_rng(0).random(7000) < 0.3).astype(float)
    assert reduce_samples(examples, values, "pass_at_k", k=1).values == pytest.approx(
        reduce_samples(examples, values, "mean").values, rel=1e-12
    )


def test_errors_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="positive integer k"):
        reduce_samples([1], [1.0], "pass_at_k")
    with pytest.raises(ValueError, match="takes no k"):
        reduce_samples([1], [1.0], "mean", k=2)
    with pytest.raises(ValueError, match="binary"):
        reduce_samples([1, 1], [1.0, 0.5], "at_least_k", k=1)
    with pytest.raises(ValueError, match=r"1 example\(s\) have fewer \(ids 7\)"):
        reduce_samples([7, 8, 8], [1.0, 1.0, 0.0], "pass_at_k", k=2)
    with pytest.raises(ValueError, match="integers"):
        reduce_samples([0.5], [1.0], "mean")
    with pytest.raises(ValueError):
        reduce_samples([1], [1.0], "median")


def test_no_samples_reduce_to_no_examples() -> None:
    result = reduce_samples(np.empty(0, np.int64), np.empty(0), "majority")
    assert result.examples.size == result.values.size == result.samples.size == 0
