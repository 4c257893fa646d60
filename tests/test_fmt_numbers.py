"""Renderers never crash on a number, whatever an edited artifact holds (issue 10)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from evalglass.report.fmt import number


@given(st.floats(allow_nan=True, allow_infinity=True) | st.none())
def test_number_formats_every_float(value):
    text = number(value)
    assert isinstance(text, str) and text
    if value is not None and not math.isfinite(value):
        assert text in {"nan", "inf", "-inf"}
