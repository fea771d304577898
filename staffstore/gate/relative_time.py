"""Questions that name a time relative to when they are asked: "yesterday", "last week".

"Why did the deploy fail yesterday?" asks about another day each day it is asked, so the claim
that answers it holds only within the day it was made; "this week" within that week, and so on.
The gate asks `same_period` before it serves such a claim, and a claim made in another period
misses as stale. Periods are UTC calendar days, ISO weeks, months, quarters and years.

A name of a weekday or month on its own ("on Monday", "in March") is left alone: it may mean a
recurring day ("deploys fail on Mondays") or a date the answer states; only "last/this/next"
before it makes it relative.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"

# Finest first: a question naming both "today" and "this week" holds for the day only.
_PERIODS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "day",
        re.compile(
            r"\b(?:today|tonight|yesterday|tomorrow|this\s+(?:morning|afternoon|evening)"
            r"|last\s+night)\b"
        ),
    ),
    ("week", re.compile(rf"\b(?:this|last|next)\s+(?:week|weekend|sprint|{_WEEKDAY})\b")),
    ("month", re.compile(r"\b(?:this|last|next)\s+month\b")),
    ("quarter", re.compile(r"\b(?:this|last|next)\s+quarter\b")),
    ("year", re.compile(r"\b(?:this|last|next)\s+year\b")),
)


def relative_period(question: str) -> str | None:
    """The finest period the question's relative time words depend on ("day", "week", ...)."""
    text = question.lower()
    for name, pattern in _PERIODS:
        if pattern.search(text):
            return name
    return None


def same_period(question: str, made: datetime, asked: datetime) -> bool:
    """True when a claim made at `made` can answer `question` asked at `asked`: the question
    names no relative time, or both moments fall in the period it names."""
    period = relative_period(question)
    if period is None:
        return True
    return _period_of(made, period) == _period_of(asked, period)


def _period_of(moment: datetime, period: str) -> tuple[int, ...]:
    utc = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    if period == "day":
        return (utc.year, utc.month, utc.day)
    if period == "week":
        iso = utc.isocalendar()
        return (iso.year, iso.week)
    if period == "month":
        return (utc.year, utc.month)
    if period == "quarter":
        return (utc.year, (utc.month - 1) // 3)
    return (utc.year,)
