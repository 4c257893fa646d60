"""What an unchanged candidate would meet at a comparative gate's margin, in words: the one wording `explain`, the
HTML report and `preflight` share.

Its own module, importing no statistics (the forecast type only for annotations), so that a preflight renders it
without numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalglass.report.numbers import number

if TYPE_CHECKING:
    from evalglass.core.compare import UnchangedForecast

_SOURCE = {
    "paired": "from this comparison's observed spread",
    "samples": "from how each example's samples vary in the run measured",
    "bound": "an upper bound: one sample per example cannot show how much answers vary between runs; declare "
    "samples to measure it",
}


def forecast_text(forecast: UnchangedForecast) -> str:
    """How often an unchanged candidate comes out undecided at the margin, and what would bring that under the
    target. Never says a suite is large enough: it says how often, and what it would take."""
    margin = f"margin {number(forecast.margin)}"
    source = _SOURCE[str(forecast.source)]
    if forecast.std_dev == 0.0:
        return f"Nothing varied ({source}): an unchanged candidate would pass at the {margin}."
    rate = f"{forecast.undecided:.0%}" if forecast.undecided >= 0.005 else "under 1%"
    bound = str(forecast.source) == "bound"
    text = (
        f"An unchanged candidate would come out undecided {'at most ' if bound else 'about '}{rate} of the time at "
        f"the {margin} over {forecast.pairs:,} pairs ({source})"
    )
    if forecast.undecided > forecast.target and forecast.pairs_for_target is not None:
        text += (
            f"; under {forecast.target:.0%} takes about {forecast.pairs_for_target:,} pairs at this margin, or a "
            f"margin of about {number(forecast.margin_for_target)} at {forecast.pairs:,} pairs"
        )
    return text + "."


def detectable_text(forecast: UnchangedForecast) -> str | None:
    """The minimum detectable effect over the forecast's pairs and the pairs an unchanged candidate needs to pass
    with the stated power, at the margin; None when nothing varied."""
    if forecast.detectable_drop is None:
        return None
    power = f"{forecast.power:.0%}"
    text = (
        f"Minimum detectable effect ({forecast.level:.0%} one-sided, {power} power): over {forecast.pairs:,} pairs a "
        f"true difference must lie about {number(forecast.detectable_drop)} or more from the limit (-margin) to be "
        f"decided {power} of the time"
    )
    if forecast.required_pairs is not None:
        text += (
            f"; an unchanged candidate passes {power} of the time at the margin {number(forecast.margin)} from about "
            f"{forecast.required_pairs:,} pairs"
        )
    return text + "."
