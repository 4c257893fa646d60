"""``ExampleBatch.joined`` (the live run gathers consecutive batches into one hand-off to its lane) gives the rows
of its batches in order, each example exactly as its own batch gave it, sample indexes included."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.example import Example, ExampleBatch

_example = st.builds(
    Example,
    id=st.text(max_size=5),
    line=st.integers(1, 10_000),
    fields=st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    output=st.one_of(st.none(), st.text(max_size=5)),
    sample=st.integers(0, 3),
)


@given(st.lists(st.lists(_example, min_size=1, max_size=6), min_size=1, max_size=5))
def test_joined_batches_give_every_example_in_order(groups: list[list[Example]]) -> None:
    joined = ExampleBatch.joined([ExampleBatch.of(group) for group in groups])
    every = [example for group in groups for example in group]
    assert joined.examples() == every
    assert (joined.samples is None) == (not any(example.sample for example in every))
