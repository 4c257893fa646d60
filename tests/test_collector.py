"""The collector during a live run's calls: tuned inside the block, the process's own settings back after it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from evalglass.collector import YOUNG_THRESHOLD, fewer_collections


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    # Objects frozen by an earlier test in this worker (an in-process CLI run freezes its imports) would make the
    # block leave the freeze to its owner, which is what the host-froze test checks, not what these check.
    gc.unfreeze()
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


def test_inside_the_block_the_young_generation_waits_longer_and_set_up_is_frozen() -> None:
    gc.set_threshold(700, 10, 10)
    made_before = [object() for _ in range(10)]
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.get_freeze_count() > len(made_before)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_restored_when_the_block_raises() -> None:
    gc.set_threshold(500, 7, 9)
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("the run failed")
    assert gc.get_threshold() == (500, 7, 9) and gc.get_freeze_count() == 0


def test_a_host_that_tuned_its_collector_keeps_its_settings() -> None:
    """Automatic collection switched off, a higher threshold, and objects the host froze itself are left alone."""
    for threshold in ((0, 10, 10), (50_000, 10, 10)):
        gc.set_threshold(*threshold)
        with fewer_collections():
            assert gc.get_threshold() == threshold
        assert gc.get_threshold() == threshold
    gc.set_threshold(700, 10, 10)
    gc.freeze()
    frozen = gc.get_freeze_count()
    with fewer_collections():
        pass
    assert gc.get_freeze_count() == frozen  # the host's frozen objects stay frozen
