"""The score column refuses what the Score contract refuses, without crashing."""

from __future__ import annotations

import pytest

from evalglass.core.columns import ScoreColumn
from evalglass.core.score import ScoreContractError


def test_an_integer_too_large_for_a_float_is_refused_not_a_crash() -> None:
    column = ScoreColumn()
    with pytest.raises(ScoreContractError, match="too large"):
        column.append(10**400)
    assert len(column) == 0
    column.append(10**300)
    assert column.values().tolist() == [1e300]
