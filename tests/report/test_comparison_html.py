"""The HTML comparison view renders the comparison payload and never recomputes it; its geometry keeps order.

The browser tests (tests/browser/test_comparison_browser.py) look at the page as a reader does; these pin that the
numbers on it are the payload's, whatever the payload says, and that the drawing puts them where they belong.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.compare import Comparison, MetricComparison
from evalglass.report.comparison_html import PLOT_PAD, PLOT_WIDTH, TOP_IDS, difference_plot, render_comparison_html
from tests.e2e.test_compare import PATTERN, rows_with, two_runs


def payload(tmp_path: Path) -> dict:
    project = two_runs(tmp_path, rows_with(PATTERN))
    result = project.cli("compare", "runs/base", "runs/cand", "--format", "json")
    assert result.code == 0, result.err
    return result.json()


def test_the_page_shows_a_consistently_tampered_payload_as_it_is(tmp_path: Path) -> None:
    """Flipped ids, the paired means, the interval and the method edited together (so the payload still passes
    its own validators): the page shows the edit. A renderer that recomputed anything would show the truth."""
    data = payload(tmp_path)
    metric = data["metrics"][0]
    honest = MetricComparison.model_validate(metric)
    assert honest.difference is not None and honest.difference.interval.method.value == "newcombe_paired"
    metric["flips"]["regressed"] = ["forged-id-1", "forged-id-2"]
    metric["flips"]["improved"] = []
    difference = metric["difference"]
    difference.update(base=0.5, candidate=0.75)
    difference["interval"].update(point=0.25, low=0.125, high=0.375)
    difference["p_value"] = 0.0123
    page = render_comparison_html(Comparison.model_validate(data))
    assert "forged-id-1" in page and "forged-id-2" in page
    assert "q030" not in page  # the honest regressions are nowhere: nothing was re-derived
    assert "+0.25 [+0.125, +0.375] 95%" in page and "0.5 → 0.75" in page and "p=0.0123" in page
    assert "Regressed: passed in the baseline, fail now (2)" in page
    assert "Improved: failed in the baseline, pass now (0)" in page


def test_long_id_lists_are_capped_and_say_where_the_rest_are(tmp_path: Path) -> None:
    data = payload(tmp_path)
    data["only_in_candidate"] = [f"extra-{i:04d}" for i in range(TOP_IDS + 37)]
    page = render_comparison_html(Comparison.model_validate(data))
    assert f"Only in the candidate ({TOP_IDS + 37:,})" in page
    assert f"extra-{TOP_IDS - 1:04d}" in page and f"extra-{TOP_IDS:04d}" not in page
    assert "… and 37 more" in page and "--format json" in page


def test_no_script_runs_on_the_comparison_page_and_hostile_ids_are_text(tmp_path: Path) -> None:
    data = payload(tmp_path)
    data["metrics"][0]["flips"]["regressed"] = ['<img src=x onerror="window.__pwned=1">', "\u202egnp.exe"]
    page = render_comparison_html(Comparison.model_validate(data))
    assert "<script" not in page and "<img" not in page
    assert "&lt;img src=x" in page and "\\u202e" in page  # escaped, and the bidi override shown as an escape
    assert re.search(r"script-src 'none'", page)


intervals = st.tuples(
    st.floats(-1, 1, allow_nan=False), st.floats(-1, 1, allow_nan=False), st.floats(-1, 1, allow_nan=False)
).map(sorted)


@given(ends=intervals, limit=st.one_of(st.none(), st.floats(-1, 1, allow_nan=False)))
def test_the_drawing_keeps_the_order_of_the_numbers_and_stays_on_the_axis(
    ends: list[float], limit: float | None
) -> None:
    low, point, high = ends
    metric = _metric(low, point, high)
    plot = difference_plot(metric, limit)
    assert plot is not None
    assert plot.low is not None and plot.high is not None and plot.point is not None
    assert PLOT_PAD <= plot.low <= plot.point <= plot.high <= PLOT_WIDTH - PLOT_PAD
    assert plot.zero == (PLOT_WIDTH / 2)  # the axis is symmetric around no change
    # Each number on its side of 0 (positions are rounded to 0.01 SVG units, so values within a hair of 0 may sit
    # on the zero line).
    near = 0.01
    for value, x in ((low, plot.low), (point, plot.point), (high, plot.high), (limit, plot.limit and plot.limit[0])):
        if value is not None and abs(value) > near:
            assert x is not None and (x < plot.zero) == (value < 0), (value, x, plot.zero)


def _metric(low: float, point: float, high: float) -> MetricComparison:
    """A continuous metric's comparison with this difference (base 0, so candidate = point)."""
    return MetricComparison.model_validate(
        json.loads(
            json.dumps(
                {
                    "metric": "m",
                    "kind": "continuous",
                    "base": {"point": 0.0, "n": 10},
                    "candidate": {"point": point, "n": 10},
                    "pairs": {"expected": 10, "included": 10, "excluded": [], "missing": 0, "top_diagnostics": []},
                    "difference": {
                        "base": 0.0,
                        "candidate": point,
                        "interval": {
                            "point": point,
                            "low": low,
                            "high": high,
                            "level": 0.95,
                            "method": "student_t",
                            "n": 10,
                        },
                        "std_error": 0.1,
                        "test": "paired_t",
                        "p_value": 0.5,
                    },
                    "flips": {"pass_rule": None},
                }
            )
        )
    )
