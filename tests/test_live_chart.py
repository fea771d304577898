"""`staffstore charts --db`: a live store's hit rate, cost paid and cost avoided over time, for
one owner, from the ledger's figures; the series it draws is printed with --json and checked
here against what the receipts written imply."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ok, one_line_error
from matplotlib.backends.backend_agg import FigureCanvasAgg
from typer.testing import CliRunner, Result

from staffstore.cli.app import app
from staffstore.models import Receipt
from staffstore.replays.live_chart import LivePoint, LiveSeries, _live_figure
from staffstore.store import StaffStore
from staffstore.store.receipt_queries import Period

Cli = Callable[..., Result]
START = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

#: acme's turns: (hours after START, outcome, cost), the cost of a miss its paid call's and of
#: a hit the estimate its receipt carries (the cost of the paid call it reused); None: unknown.
ACME = [
    (0, "hit", None), (1, "miss", 0.003), (2, "miss", None), (3, "hit", 0.003),
    (25, "hit", 0.001), (26, "miss", 0.001), (27, "hit", None),
    (50, "miss", 0.002), (51, "miss", None),
]  # fmt: skip
#: bob's turns, on the same days: many hits and dear calls, which acme's chart must not count.
BOB = [(0, "hit", 5.0), (1, "hit", 5.0), (2, "miss", 5.0), (26, "hit", None)]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("STAFFSTORE_DB", "STAFFSTORE_OWNER", "STAFFSTORE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent-staffstore-config")
    monkeypatch.chdir(tmp_path)  # the default --out is charts/ under the working directory


def _receipt(owner: str, number: int, hours: int, outcome: str, cost: float | None) -> Receipt:
    started = START + timedelta(hours=hours)
    return Receipt(
        id=f"rcpt_{owner}_{number}", owner=owner, outcome=outcome,
        reason="exact" if outcome == "hit" else "no_candidate",
        status="hit" if outcome == "hit" else "ok",
        cost_usd=None if outcome == "hit" else cost,
        avoided_cost_usd=cost if outcome == "hit" else None,
        served_from=f"rcpt_{owner}_paid" if outcome == "hit" and cost is not None else None,
        inference_avoided=outcome == "hit", inference_attempted=outcome == "miss",
        latency_ms=1.0, started_at=started, finished_at=started,
    )  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "live.db"

    async def fill() -> None:
        async with StaffStore.open(path) as store:
            for owner, turns in (("acme", ACME), ("bob", BOB)):
                for number, (hours, outcome, cost) in enumerate(turns):
                    await store.add_receipt(_receipt(owner, number, hours, outcome, cost))

    asyncio.run(fill())
    yield path


@pytest.fixture
def cli() -> Cli:
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def expected_series(turns: list[tuple[int, str, float | None]]) -> list[dict[str, Any]]:
    """The series the receipts imply, worked out here from the turns alone."""
    days: dict[str, list[tuple[str, float | None]]] = defaultdict(list)
    for hours, outcome, cost in turns:
        days[(START + timedelta(hours=hours)).strftime("%Y-%m-%d")].append((outcome, cost))
    series, paid_sum, avoided_sum = [], 0.0, 0.0
    for day, found in sorted(days.items()):
        hits = [cost for outcome, cost in found if outcome == "hit"]
        paid = sum(cost or 0.0 for outcome, cost in found if outcome == "miss")
        known = [cost for cost in hits if cost is not None]
        paid_sum += paid
        avoided_sum += sum(known)
        series.append({
            "period": day, "turns": len(found), "hits": len(hits), "avoided_calls": len(hits),
            "hit_rate": len(hits) / len(found), "paid_usd": round(paid, 9),
            # A day whose hits all have no estimate avoided an unknown cost, never $0.
            "avoided_usd": round(sum(known), 9) if known or not hits else None,
            "unknown_avoided_calls": len(hits) - len(known),
            "cumulative_paid_usd": round(paid_sum, 9),
            "cumulative_avoided_usd": round(avoided_sum, 9),
        })  # fmt: skip
    return series


def test_the_live_chart_is_a_png_and_its_series_is_what_the_receipts_imply(
    cli: Cli, db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "acme.png"
    result = ok(cli("charts", "--db", str(db), "--owner", "acme", "--out", str(out), "--json"))
    shown = json.loads(result.stdout)
    assert shown["series"] == expected_series(ACME)
    # Two hits carry an estimate (0.003, 0.001); two have none and are counted apart.
    assert (shown["paid_usd"], shown["avoided_usd"], shown["unknown_avoided_calls"]) == (
        0.006, 0.004, 2,
    )  # fmt: skip
    assert shown["series"][-1]["cumulative_avoided_usd"] == 0.004
    assert shown["chart"] == str(out)
    assert out.read_bytes().startswith(PNG_SIGNATURE) and out.stat().st_size > 10_000


def test_owner_b_receipts_are_never_counted_in_owner_a_chart(cli: Cli, db: Path) -> None:
    acme = json.loads(ok(cli("charts", "--db", str(db), "--owner", "acme", "--json")).stdout)
    bob = json.loads(ok(cli("charts", "--db", str(db), "--owner", "bob", "--json")).stdout)
    assert sum(point["turns"] for point in acme["series"]) == len(ACME)
    assert sum(point["turns"] for point in bob["series"]) == len(BOB)
    assert (bob["paid_usd"], bob["avoided_usd"]) == (5.0, 10.0)
    assert (acme["paid_usd"], acme["avoided_usd"]) == (0.006, 0.004)
    # The default file is the owner's own, beside (never over) the replay charts.
    assert Path("charts/live-acme.png").is_file() and Path("charts/live-bob.png").is_file()


def test_since_until_and_by_hour_narrow_the_series(cli: Cli, db: Path) -> None:
    shown = json.loads(
        ok(cli("charts", "--db", str(db), "--owner", "acme", "--by", "hour", "--json",
               "--since", "2026-03-03T00:00:00", "--until", "2026-03-04T00:00:00")).stdout
    )  # fmt: skip
    assert [point["period"] for point in shown["series"]] == [
        "2026-03-03T09:00Z", "2026-03-03T10:00Z", "2026-03-03T11:00Z",
    ]  # fmt: skip
    assert [point["hit_rate"] for point in shown["series"]] == [1.0, 0.0, 1.0]
    # Of that day's two hits, one reused a paid call of 0.001; the other's cost is unknown.
    assert shown["series"][-1]["cumulative_avoided_usd"] == 0.001
    assert shown["unknown_avoided_calls"] == 1


def test_an_owner_without_receipts_is_a_one_line_error(cli: Cli, db: Path) -> None:
    line = one_line_error(cli("charts", "--db", str(db), "--owner", "carol"))
    assert "no receipts for owner 'carol'" in line
    assert not Path("charts").exists()


def test_a_missing_database_is_refused_and_not_created(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    line = one_line_error(cli("charts", "--db", str(missing), "--owner", "acme"))
    assert "no database at" in line and not missing.exists()


def test_the_live_flags_need_db_and_db_needs_an_owner(cli: Cli, db: Path) -> None:
    assert "only with --db" in one_line_error(cli("charts", "--owner", "acme"))
    assert "--owner is required" in one_line_error(cli("charts", "--db", str(db)))


def test_the_live_chart_never_overwrites_a_replay_chart(cli: Cli, db: Path) -> None:
    target = Path("charts/gate_budgets.png")
    line = one_line_error(cli("charts", "--db", str(db), "--owner", "acme", "--out", str(target)))
    assert "would overwrite the replay chart" in line and not target.exists()


def _series(by: Period, count: int) -> LiveSeries:
    step = timedelta(days=1) if by == "day" else timedelta(hours=1)
    form = "%Y-%m-%d" if by == "day" else "%Y-%m-%dT%H:00Z"
    points = [
        LivePoint(period=(START + step * i).strftime(form), turns=4, hits=i % 5,
                  avoided_calls=i % 5, hit_rate=(i % 5) / 4, paid_usd=0.001,
                  avoided_usd=0.001 * (i % 5), unknown_avoided_calls=0,
                  cumulative_paid_usd=0.001 * (i + 1), cumulative_avoided_usd=0.001 * i)
        for i in range(count)
    ]  # fmt: skip
    return LiveSeries(owner="acme", by=by, points=points)


@pytest.mark.parametrize(("by", "count"), [("day", 90), ("hour", 72), ("day", 1)])
def test_the_time_labels_never_overlap(by: Period, count: int) -> None:
    figure = _live_figure(_series(by, count))
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    top, bottom = figure.axes
    labels = [
        label.get_window_extent(renderer)
        for label in [*bottom.get_xticklabels(), bottom.xaxis.get_offset_text()]
        if label.get_visible() and label.get_text()
    ]
    assert len(labels) >= 2
    for one, other in combinations(labels, 2):
        assert not one.overlaps(other)
    title = figure._suptitle.get_window_extent(renderer)  # type: ignore[union-attr]
    assert not title.overlaps(top.get_window_extent(renderer))
    assert not any(label.get_visible() and label.get_text() for label in top.get_xticklabels())
