"""`gold_difference`: when two runs are shown to be scored against the same gold."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.compare import OLD_GOLD_SCHEME, GoldOf, gold_difference

fingerprints = st.sampled_from(["sha256:a", "sha256:b", "sha256:c"])
golds = st.builds(GoldOf, st.none() | fingerprints, st.none() | fingerprints)


@given(golds, golds)
def test_the_same_gold_is_the_same_file_or_equal_gold_fingerprints_and_nothing_else(base, candidate) -> None:
    found = gold_difference(base, candidate, base_is="baseline", candidate_is="candidate")
    same_file = base.dataset_fingerprint is not None and base.dataset_fingerprint == candidate.dataset_fingerprint
    same_gold = base.gold_fingerprint is not None and base.gold_fingerprint == candidate.gold_fingerprint
    assert (found is None) == (same_file or same_gold)
    # symmetric in its decision
    assert (gold_difference(candidate, base, base_is="baseline", candidate_is="candidate") is None) == (found is None)


def test_the_message_says_which_side_took_no_gold_fingerprint() -> None:
    taken, not_taken = GoldOf("sha256:a", "sha256:g"), GoldOf("sha256:b", None)
    message = gold_difference(taken, not_taken, base_is="baseline", candidate_is="this run")
    assert message is not None and "(none recorded by: this run;" in message
    assert "baseline sha256:a, this run sha256:b" in message
    both = gold_difference(
        GoldOf("sha256:a", "sha256:g"), GoldOf("sha256:b", "sha256:h"), base_is="b", candidate_is="c"
    )
    assert both == "the dataset's gold differs (b sha256:g, c sha256:h)" + OLD_GOLD_SCHEME
