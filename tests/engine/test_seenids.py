"""SeenIds (the live run's record of ids so far, one 8-byte hash each) says "maybe seen" exactly when a hash was
added before or repeats within the batch: never a miss (a repeated id always triggers the re-read that names it)
and, for distinct hashes, never a false alarm, however full its buckets get and however often it grows."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.engine.produce.seenids import WIDTH, SeenIds

#: Few distinct high bits, so that many hashes share a bucket: full buckets spill, and the table grows.
_crowded = st.builds(lambda high, low: (high << 56) | low, st.integers(0, 3), st.integers(0, 2**20))
_hashes = st.one_of(st.integers(-(2**63), 2**63 - 1), _crowded, st.sampled_from([0, 1, -1, 2**63 - 1, -(2**63)]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_hashes, max_size=300), max_size=12), st.integers(0, 5000))
def test_maybe_seen_exactly_when_a_hash_was_seen_or_repeats(batches: list[list[int]], expected: int) -> None:
    seen, before = SeenIds(expected=expected), set[int]()
    for batch in batches:
        repeats = len(set(batch)) != len(batch) or any(value in before for value in batch)
        # 0 marks an empty place in the table, where a 0 is kept as 1: the two may be taken for each other
        confused = bool({0, 1} & set(batch)) and bool({0, 1} & (before | set(batch)))
        assert seen.add(batch) == repeats or (confused and not repeats)
        before.update(batch)


def test_crowded_buckets_spill_and_grow_without_losing_a_hash() -> None:
    seen = SeenIds()
    crowded = [(7 << 58) | n for n in range(40 * WIDTH)]  # one bucket's worth of top bits, many times over
    spread = [n * 0x9E3779B97F4A7C15 % 2**63 for n in range(1, 20_000)]
    for start in range(0, len(spread), 256):
        assert not seen.add(spread[start : start + 256] + crowded[start // 64 : start // 64 + 4])
    assert all(seen.add([value]) for value in crowded[:300:7] + spread[::331])
    assert not seen.add([2**62 + 12345])


def test_a_hash_added_again_after_a_maybe_keeps_every_answer_exact() -> None:
    """The caller goes on after a "maybe" when re-reading finds no repeated id (two ids, one hash): the hash then
    takes one more place in the table. Its copies may fill its bucket; every other hash is still found, and no
    new one is taken for seen."""
    seen = SeenIds(expected=64)
    twice = 5 << 58  # every copy goes to one bucket
    neighbours = [twice + n for n in range(1, 3 * WIDTH)]  # the same bucket, spilled once it is full
    assert not seen.add([twice])
    for _ in range(2 * WIDTH):
        assert seen.add([twice])
    for value in neighbours:
        assert not seen.add([value])
    assert all(seen.add([value]) for value in [twice, *neighbours])
    assert not seen.add([twice + 10 * WIDTH])
    assert seen.add([twice + 10 * WIDTH, 7, 7])  # a repeat within one batch
