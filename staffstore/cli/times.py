"""The one parser of the times a user types to a command (`--since`, `--until`, ...).

A time is ISO 8601 (`2026-03-01`, `2026-03-01T09:30`, `2026-03-01T09:30:00+02:00`, `...Z`), a
span back from now (`30m`, `2h`, `7d`, `2w`, `90s`, optionally followed by `ago`), or `now`,
`today` or `yesterday` (the start of that UTC day). A time without a zone is UTC, as the
receipts' own times are. Anything else is a usage error in one line that shows what works.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from ..models import in_calendar

#: What a span's unit letters mean, in seconds.
_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3_600, "d": 86_400, "w": 7 * 86_400}
_SPAN = re.compile(r"(?P<count>\d+)\s*(?P<unit>s|m|min|h|d|w)(?:\s+ago)?", re.IGNORECASE)

#: The forms, for error messages and for help texts.
FORMS = "ISO 8601 (2026-03-01, 2026-03-01T09:30Z), a span ago (30m, 2h, 7d) or today/yesterday"
HELP_FORMS = "ISO 8601 (2026-03-01), a span back (30m, 2h, 7d), today or yesterday; UTC"


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """The moment `text` names, in UTC, as seen at `now` (default: the clock); ValueError with
    a message a person can act on when it names none (or one outside the calendar)."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    given = text.strip()
    word = given.lower()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if word == "now":
        return now
    if word == "today":
        return midnight
    if word == "yesterday":
        return midnight - timedelta(days=1)
    span = _SPAN.fullmatch(given)
    if span is not None:
        seconds = int(span["count"]) * _UNITS[span["unit"].lower()]
        try:
            moment = now - timedelta(seconds=seconds)
        except OverflowError:
            raise ValueError(f"{given!r} reaches back before the calendar begins") from None
    else:
        try:
            moment = datetime.fromisoformat(given)
        except ValueError:
            # fromisoformat's own message ("Invalid isoformat string") says less than the forms.
            raise ValueError(f"{given!r} is not a time: give {FORMS}") from None
    try:
        return in_calendar(moment)
    except ValueError as error:
        raise ValueError(f"{given!r}: {error}") from None


def _option(value: str) -> datetime:
    try:
        return parse_when(value)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None


def when_option(flag: str, help: str) -> typer.models.OptionInfo:
    """A typer option that reads a time by `parse_when` (its value: an aware UTC datetime)."""
    option: typer.models.OptionInfo = typer.Option(
        flag, parser=_option, metavar="WHEN", help=f"{help}: {HELP_FORMS}."
    )
    return option


SinceOption = Annotated[
    datetime | None, when_option("--since", "Only receipts started at or after this time")
]
UntilOption = Annotated[
    datetime | None, when_option("--until", "Only receipts started before this time")
]
