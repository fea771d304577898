"""Questions that name a time relative to when they are asked hold only within that period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from staffstore.gate.relative_time import relative_period, same_period

# A Wednesday in the middle of a month, a quarter and a year.
MADE = datetime(2025, 5, 14, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "period"),
    [
        ("Why did the nightly deploy fail yesterday?", "day"),
        ("What broke the build this morning?", "day"),
        ("How many PRs were opened last week?", "week"),
        ("Who is on call next Monday?", "week"),
        ("Which alerts paged the on-call most last month?", "month"),
        ("What did we ship this quarter?", "quarter"),
        ("How much did we spend on CI last year?", "year"),
        ("What broke today, and what else broke this week?", "day"),  # the finest wins
        ("Why do deploys fail on Mondays?", None),  # a recurring day
        ("Why did the build fail on March 3?", None),  # a date the question states
        ("Why is the build slow?", None),
    ],
)
def test_the_period_a_question_depends_on(question: str, period: str | None) -> None:
    assert relative_period(question) == period


@pytest.mark.parametrize(
    ("question", "asked", "holds"),
    [
        ("Why did the deploy fail yesterday?", MADE + timedelta(hours=11), True),
        ("Why did the deploy fail yesterday?", MADE + timedelta(hours=12), False),
        ("How many PRs were opened last week?", MADE + timedelta(days=4), True),  # Sunday
        ("How many PRs were opened last week?", MADE + timedelta(days=5), False),  # Monday
        ("Which alerts paged most last month?", MADE + timedelta(days=17), True),
        ("Which alerts paged most last month?", MADE + timedelta(days=18), False),
        ("What did we ship this quarter?", MADE + timedelta(days=47), True),
        ("What did we ship this quarter?", MADE + timedelta(days=48), False),
        ("Why is the build slow?", MADE + timedelta(days=400), True),
    ],
)
def test_a_claim_holds_within_the_period_it_was_made_in(
    question: str, asked: datetime, holds: bool
) -> None:
    assert same_period(question, MADE, asked) is holds


def test_periods_are_utc_days_whatever_the_clocks_zone() -> None:
    # 23:30 in New York on the 14th is 03:30 UTC on the 15th: another UTC day.
    new_york = timezone(timedelta(hours=-4))
    late = datetime(2025, 5, 14, 23, 30, tzinfo=new_york)
    assert not same_period("What failed today?", MADE, late)
    assert same_period("What failed today?", MADE, MADE.replace(tzinfo=None))
