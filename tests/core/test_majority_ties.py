"""Where a ``majority`` tie between an example's samples goes: the side unfavourable to the gates' direction.

Before, every tie went to the lowest tied value: under a lower-is-better gate, the favourable side (a split vote read
as a win). The properties: under lower-is-better the reduced value is never more favourable than the old rule's, and
equal to it when there is no tie; under higher-is-better the two rules agree everywhere (the old rule was already
the unfavourable side there), which is why a run without a lower-is-better majority gate keeps its record's bytes.
Both through ``core.decide.per_example``, the one reduction every reader (decision, baselines, compare, variants) uses.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.columns import ScoreColumn
from evalglass.core.decide import RunShape, per_example
from evalglass.core.stats import Direction, Reducer, Ties

#: Per example, its samples: few distinct values, so ties are frequent.
SAMPLES = st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=1, max_size=6), min_size=1, max_size=10)


def _reduced(per: list[list[float]], ties: Ties) -> list[float]:
    column = ScoreColumn()
    rows: list[int] = []
    for example, samples in enumerate(per):
        for value in samples:
            column.append(value)
            rows.append(example)
    shape = RunShape(examples=len(per), example_of_row=np.array(rows, dtype=np.int64))
    return per_example(column, shape, Reducer.MAJORITY, None, ties=ties).values().tolist()


def _tied(samples: list[float]) -> bool:
    counts = Counter(samples).most_common()
    return len(counts) > 1 and counts[0][1] == counts[1][1]


@settings(max_examples=300, deadline=None)
@given(SAMPLES)
def test_under_lower_is_better_a_tie_is_never_read_more_favourably_than_the_old_rule(per: list[list[float]]) -> None:
    old = _reduced(per, Ties.LOW)  # every tie to the lowest value, whatever the direction
    new = _reduced(per, Ties.against(Direction.LOWER_IS_BETTER))
    for samples, before, now in zip(per, old, new, strict=True):
        assert now >= before  # lower is better: a higher value is never more favourable
        if not _tied(samples):
            assert now == before
        else:
            top = max(Counter(samples).values())
            assert now == max(v for v in samples if samples.count(v) == top)  # the highest tied value


@settings(max_examples=200, deadline=None)
@given(SAMPLES)
def test_under_higher_is_better_the_rule_is_the_old_one(per: list[list[float]]) -> None:
    assert _reduced(per, Ties.against(Direction.HIGHER_IS_BETTER)) == _reduced(per, Ties.LOW)


@pytest.mark.parametrize(
    ("direction", "expected"),
    [(Direction.HIGHER_IS_BETTER, Ties.LOW), (Direction.LOWER_IS_BETTER, Ties.HIGH), (None, Ties.LOW)],
)
def test_the_unfavourable_side_of_each_direction(direction: Direction | None, expected: Ties) -> None:
    assert Ties.against(direction) is expected


def test_a_split_vote_under_lower_is_better_is_the_bad_answer() -> None:
    """Two samples, one leak (1) and one clean (0): under lower-is-better the example counts as a leak."""
    assert _reduced([[1.0, 0.0], [0.0, 0.0]], Ties.against(Direction.LOWER_IS_BETTER)) == [1.0, 0.0]
    assert _reduced([[1.0, 0.0], [0.0, 0.0]], Ties.LOW) == [0.0, 0.0]
