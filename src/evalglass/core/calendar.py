"""Calendar days for expiring approvals, without a clock and without ``datetime`` (core/ imports no time module).

A day is its ISO text (``2026-12-01``) and its day number, the proleptic Gregorian ordinal ``datetime.date`` uses
(0001-01-01 is day 1), so the edges can hand in ``date.today().toordinal()`` and get the same numbers. Which day
"today" is, is always passed in by the caller: the run uses the date of its ``created_at``; ``preflight`` the
clock's date (or ``--today``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

_ISO_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


#: A ledger dates every approval, so a large suite asks about the same few days thousands of times; the answers
#: depend on the text alone.
@lru_cache(maxsize=1024)
def day_problem(text: str) -> str | None:
    """Why ``text`` is not an ISO calendar day (YYYY-MM-DD), or None when it is one."""
    match = _ISO_DAY.match(text)
    if match is None:
        return f"{text!r} is not a date: write it as YYYY-MM-DD"
    year, month, day = (int(part) for part in match.groups())
    if year < 1 or not 1 <= month <= 12:
        return f"{text!r} is not a date: there is no month {month}"
    last = 29 if month == 2 and _leap(year) else _MONTH_DAYS[month - 1]
    if not 1 <= day <= last:
        return f"{text!r} is not a date: month {month} of {year} has {last} days"
    return None


@lru_cache(maxsize=1024)
def day_number(text: str) -> int:
    """The day's ordinal (``date.fromisoformat(text).toordinal()``); a ValueError for anything but YYYY-MM-DD."""
    problem = day_problem(text)
    if problem is not None:
        raise ValueError(problem)
    year, month, day = (int(part) for part in text.split("-"))
    before = year - 1
    days = before * 365 + before // 4 - before // 100 + before // 400
    days += sum(_MONTH_DAYS[: month - 1]) + (1 if month > 2 and _leap(year) else 0)
    return days + day


def day_text(number: int) -> str:
    """The ISO text of a day number (the inverse of :func:`day_number`), for messages."""
    if number < 1:
        raise ValueError(f"day number {number} is before 0001-01-01")
    # Civil-from-days (H. Hinnant), shifted to the ordinal's epoch: day 1 is 0001-01-01.
    z = number + 305  # days since 0000-03-01 (0001-01-01 is 306 days after it)
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return f"{year:04d}-{month:02d}-{day:02d}"


def _as_day(value: Any) -> Any:
    """A YAML date (``expires_on: 2026-12-31`` unquoted, which the YAML reader turns into a date object) or the
    same text quoted; anything else is refused with a message saying how to write it."""
    if type(value).__name__ == "date" and hasattr(value, "isoformat"):
        value = value.isoformat()
    if not isinstance(value, str):
        raise ValueError(f"expected a date (YYYY-MM-DD), got {type(value).__name__}")
    problem = day_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


#: A calendar day in a model: written and recorded as ISO text, refused unless it is a real date.
IsoDay = Annotated[
    str,
    BeforeValidator(_as_day),
    WithJsonSchema({"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"}),
]


def _date_or_text(value: Any) -> Any:
    """Provenance dates (``approved_on``) were free text before approvals could expire: a YAML date object is
    accepted as its ISO text, and any other text is kept as written (a policy with ``max_age_days`` then needs a
    real date; see ``engine.spec.ledger``)."""
    if type(value).__name__ == "date" and hasattr(value, "isoformat"):
        return value.isoformat()
    return value


#: ``approved_on`` / ``validated_on``: text, a real date when it parses as one.
DateText = Annotated[str, BeforeValidator(_date_or_text)]


def day_of_timestamp(timestamp: str) -> str:
    """The calendar day of an ISO timestamp as a run records it (``2026-12-01T14:15:33.5Z`` → ``2026-12-01``)."""
    day = timestamp[:10]
    problem = day_problem(day)
    if problem is not None or timestamp[10:11] not in ("", "T", " "):
        raise ValueError(f"{timestamp!r} is not an ISO timestamp")
    return day
