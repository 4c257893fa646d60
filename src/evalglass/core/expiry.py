"""When an approval, a gold validation or a judge's calibration stops counting: the pure rule, given "today".

Two sources can end one: an explicit ``expires_on`` (the last day it counts) and the ledger policy's
``max_age_days`` counted from the day it was made (``approved_on``, ``validated_on``, a calibration's date). The
earlier one wins. Expiry is checked on the day the caller passes in (core/ has no clock); an undated approval under
``max_age_days`` has an unknown age and counts as expired, never as fresh.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalglass.core.calendar import day_number, day_problem, day_text


@dataclass(frozen=True, slots=True)
class Dated:
    """What can make one approval expire. ``made_on`` is the day it was made, as the ledger (or record) gives it;
    ``made_key`` names where that day is written, for messages."""

    what: str
    expires_on: str | None
    made_on: str | None
    made_key: str


@dataclass(frozen=True, slots=True)
class Standing:
    """``expired`` holds the message of an expired approval; ``warning`` the message of one expiring soon."""

    expired: str | None = None
    warning: str | None = None


def standing(dated: Dated, *, today: str, max_age_days: int | None, warning_days: int) -> Standing:
    """Expired (with why and what to do), expiring within ``warning_days`` (with when), or neither."""
    now = day_number(today)
    deadlines: list[tuple[int, str]] = []
    if dated.expires_on is not None:
        deadlines.append((day_number(dated.expires_on), f"expires_on {dated.expires_on}"))
    if max_age_days is not None:
        if dated.made_on is None or day_problem(dated.made_on) is not None:
            return Standing(
                expired=(
                    f"{dated.what} has no {dated.made_key} date, so its age under the ledger policy's "
                    f"max_age_days {max_age_days} is unknown; the host re-reviews it and dates it "
                    f"({dated.made_key}: YYYY-MM-DD)"
                )
            )
        deadlines.append(
            (
                day_number(dated.made_on) + max_age_days,
                f"{dated.made_key} {dated.made_on} + max_age_days {max_age_days}",
            )
        )
    if not deadlines:
        return Standing()
    last, source = min(deadlines)
    if now > last:
        return Standing(
            expired=(
                f"{dated.what} counted through {day_text(last)} ({source}) and today is {today}; the host "
                "re-reviews it and renews it in the ledger"
            )
        )
    left = last - now
    if left < warning_days:
        when = "today is its last day" if left == 0 else f"{left} day{'s' if left != 1 else ''} left"
        return Standing(
            warning=f"{dated.what} counts through {day_text(last)} ({source}): {when}; re-review it before then"
        )
    return Standing()
