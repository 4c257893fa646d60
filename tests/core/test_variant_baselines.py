"""Which baseline column a comparative gate pairs with (``core.variantnames.baseline_column``), and what a gate is told
when the baseline has none (``core.comparative.comparability_reasons``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.authority import BlockReason
from evalglass.core.comparative import BaselineRun, ComparativeInputs, comparability_reasons
from evalglass.core.variantnames import baseline_candidates, baseline_column, split_variant_metric, variant_metric

NAMES = st.from_regex(r"[a-z][a-z0-9_.-]{0,6}", fullmatch=True)


@pytest.mark.parametrize(
    ("gated", "baseline_variants", "column"),
    [
        ("exact", (), "exact"),  # no variants on either side: as before
        ("exact@b", (), "exact"),  # a variant against a run without variants: its one column
        ("exact@b", ("a", "b"), "exact@b"),  # the baseline's variant of the same name
        ("exact@b", ("a", "c"), None),  # never another variant's column
        # the baseline's column of that name, which only a judge of its variants side by side has (a plain metric's
        # columns are all `m@v`: the run finds none, and the gate blocks as not_comparable)
        ("exact", ("a", "b"), "exact"),
        ("exact@b-c", ("b", "c"), None),  # the variant is everything after the last '@'
    ],
)
def test_the_column_a_gate_is_paired_with(gated: str, baseline_variants: tuple[str, ...], column: str | None) -> None:
    assert baseline_column(gated, baseline_variants) == column
    if column is not None:
        assert column in baseline_candidates(gated)


@given(
    metric=NAMES,
    variant=st.one_of(st.none(), NAMES),
    baseline_variants=st.lists(NAMES, max_size=5, unique=True),
)
def test_a_variant_is_never_paired_with_another_variants_column(
    metric: str, variant: str | None, baseline_variants: list[str]
) -> None:
    gated = metric if variant is None else variant_metric(metric, variant)
    column = baseline_column(gated, baseline_variants)
    if not baseline_variants:
        assert column == metric  # a run without variants stands for whatever the gate's variant is compared with
    elif variant is None:
        assert column == gated  # only ever the baseline's column of the very same name
    elif variant not in baseline_variants:
        assert column is None
    else:
        assert column == gated and split_variant_metric(column) == (metric, variant)
    assert column is None or column in baseline_candidates(gated)


def _missing(gated: str, baseline_variants: tuple[str, ...]) -> list[str]:
    found = BaselineRun(name="main", location="runs/main", fingerprint="sha256:x", variants=baseline_variants)
    inputs = ComparativeInputs(
        ids=np.array([], dtype=np.str_), gold_fingerprint=None, definitions={gated: "d"}, baselines={}
    )
    reasons = comparability_reasons("main", gated, found, inputs)
    assert [reason.code for reason in reasons] == [BlockReason.NOT_COMPARABLE]
    return [reason.message for reason in reasons]


def test_a_baseline_without_the_column_says_what_it_has() -> None:
    assert _missing("exact", ()) == ["metric_missing: baseline 'main' has no metric 'exact'"]
    assert _missing("exact@b", ()) == ["metric_missing: baseline 'main' has no metric 'exact'"]
    (message,) = _missing("exact@b", ("a", "c"))
    assert "has no variant 'b' (its variants: a, c)" in message
    (message,) = _missing("exact", ("a", "c"))
    assert "is a run with variants (a, c)" in message and "no variant to be compared with" in message
