"""The live chart: one owner's hit rate and avoided cost over time, from a store's receipts.

The figures are the ledger's own (`StaffStore.ledger_by`, the query behind `staffstore ledger
--by day|hour`); nothing here reads SQL. The ledger counts avoided calls but prices only the
calls that were paid for, so the avoided cost is an estimate, stated on the chart and in the
series: each avoided call is priced at the mean known cost of the calls paid for in the same
owner's charted range (`cost_usd` over the calls that reported a cost). When no call in the
range reported a cost, the avoided cost is unknown (None), never $0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import Ledger
from ..store.receipt_queries import Period
from .charts import FALSE_HIT, HIT, MEASURED, _figure, _percent_axis, _save

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: How the avoided cost is estimated, in the words the chart and the JSON use.
COST_RULE = (
    "avoided calls x the mean known cost of the calls paid for in the charted range "
    "(the ledger's cost_usd over its attempted calls that reported a cost)"
)
_PERIOD_FORMATS: dict[Period, str] = {"day": "%Y-%m-%d", "hour": "%Y-%m-%dT%H:00Z"}
_PERIOD_LENGTHS: dict[Period, timedelta] = {"day": timedelta(days=1), "hour": timedelta(hours=1)}


@dataclass(frozen=True)
class LivePoint:
    """One period: its turns and hits, the hit rate (the ledger's avoidance: avoided calls per
    turn, None without turns) and the estimated cost avoided, in it and up to its end."""

    period: str
    turns: int
    hits: int
    avoided_calls: int
    hit_rate: float | None
    avoided_usd: float | None
    cumulative_avoided_usd: float | None


@dataclass(frozen=True)
class LiveSeries:
    """What the live chart draws: the points, and the price an avoided call was given."""

    owner: str
    by: Period
    points: list[LivePoint]
    #: Paid calls that reported a cost, and the mean of those costs (None without one).
    priced_calls: int
    cost_per_call_usd: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "owner": self.owner,
            "by": self.by,
            "priced_calls": self.priced_calls,
            "cost_per_call_usd": self.cost_per_call_usd,
            "cost_rule": COST_RULE,
            "series": [asdict(point) for point in self.points],
        }


def _usd(value: float) -> float:
    # As the ledger rounds its sums: no provider bills below a billionth of a dollar.
    return round(value, 9)


def live_series(owner: str, by: Period, periods: list[tuple[str, Ledger]]) -> LiveSeries:
    """The chart's series from `StaffStore.ledger_by(by, owner, ...)`'s periods."""
    priced = sum(totals.attempted_calls - totals.unknown_cost_turns for _, totals in periods)
    known_cost = sum(totals.cost_usd for _, totals in periods)
    per_call = known_cost / priced if priced else None
    points: list[LivePoint] = []
    cumulative = 0.0
    for name, totals in periods:
        avoided = None if per_call is None else totals.avoided_calls * per_call
        cumulative += avoided or 0.0
        points.append(
            LivePoint(
                period=name, turns=totals.turns, hits=totals.hits,
                avoided_calls=totals.avoided_calls, hit_rate=totals.avoidance,
                avoided_usd=None if avoided is None else _usd(avoided),
                cumulative_avoided_usd=None if per_call is None else _usd(cumulative),
            )
        )  # fmt: skip
    return LiveSeries(
        owner=owner, by=by, points=points, priced_calls=priced,
        cost_per_call_usd=None if per_call is None else _usd(per_call),
    )  # fmt: skip


def _plain(text: str) -> str:
    """`text` for a chart label: a `$` pair would start matplotlib's math text."""
    return text.replace("$", r"\$")


def period_start(name: str, by: Period) -> datetime:
    """The UTC start of a period named as the ledger names it."""
    return datetime.strptime(name, _PERIOD_FORMATS[by]).replace(tzinfo=UTC)


def draw_live_chart(series: LiveSeries, out: Path) -> Path:
    """Draw `series` as a PNG at `out` (hit rate above, cumulative avoided cost below)."""
    return _save(_live_figure(series), out)


def _live_figure(series: LiveSeries) -> Figure:
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num

    figure, top = _figure(9, 6, grid="y")
    # A second axes under the first, sharing its time axis; _figure's styling repeated.
    grid = figure.add_gridspec(2, 1)
    top.set_subplotspec(grid[0])
    bottom = figure.add_subplot(grid[1], sharex=top)
    bottom.grid(True, axis="y", color="#e5e7eb", linewidth=0.8)
    bottom.set_axisbelow(True)
    bottom.spines[["top", "right"]].set_visible(False)

    # In matplotlib's date unit (days since its epoch), so each bar is one period wide.
    length = _PERIOD_LENGTHS[series.by] / timedelta(days=1)
    starts = [
        float(date2num(period_start(point.period, series.by)))  # type: ignore[no-untyped-call]
        for point in series.points
    ]
    middles = [start + length / 2 for start in starts]
    rated = [
        (middle, point.hit_rate)
        for middle, point in zip(middles, series.points, strict=True)
        if point.hit_rate is not None
    ]
    top.bar([m for m, _ in rated], [r for _, r in rated], width=length * 0.8, color=HIT)
    # A dot on every period with turns, so a 0% period is seen apart from one without turns.
    top.scatter([m for m, _ in rated], [r for _, r in rated], s=8, color=HIT, clip_on=False)
    top.set_ylim(0, 1.0)
    _percent_axis(top, "y", decimals=0)
    top.set_ylabel(f"hit rate (hits / turns\nin the {series.by})")
    top.tick_params(labelbottom=False)

    if series.cost_per_call_usd is None:
        bottom.text(
            0.5, 0.5, "avoided cost unknown: no paid call in this range reported a cost",
            transform=bottom.transAxes, ha="center", va="center", fontsize=9, color=FALSE_HIT,
        )  # fmt: skip
        bottom.set_yticks([])
    else:
        # Each period's sum is reached at its end: a step up at every period boundary.
        ends = [start + length for start in starts]
        steps = [point.cumulative_avoided_usd or 0.0 for point in series.points]
        bottom.step([starts[0], *ends], [0.0, *steps], where="post", color=MEASURED)
        bottom.fill_between([starts[0], *ends], [0.0, *steps], step="post", color=MEASURED,
                            alpha=0.12)  # fmt: skip
        bottom.set_ylim(0, max(steps) * 1.15 or 1.0)
        bottom.yaxis.set_major_formatter(lambda value, _: _plain(f"${value:,.4g}"))
    bottom.set_ylabel("cost avoided, cumulative\n(USD, estimated)")
    first, last = starts[0] - length, starts[-1] + 2 * length
    bottom.set_xlim(first, last)
    # Concise labels (the month or year said once, at its first tick) and a bounded number of
    # ticks, so a long range's labels never run into each other.
    locator = AutoDateLocator(minticks=3, maxticks=8)  # type: ignore[no-untyped-call]
    bottom.xaxis.set_major_locator(locator)
    bottom.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    bottom.set_xlabel(f"time (UTC, one bar {'an hour' if series.by == 'hour' else 'a day'})")

    turns = sum(point.turns for point in series.points)
    total = series.points[-1].cumulative_avoided_usd
    price = (
        "cost unknown"
        if series.cost_per_call_usd is None
        else _plain(
            f"${total:,.6g} avoided at ${series.cost_per_call_usd:.6g} a call "
            f"(the mean of {series.priced_calls} priced calls)"
        )
    )
    hits = sum(point.hits for point in series.points)
    figure.suptitle(
        f"Live store, owner {_plain(series.owner)}: hit rate and cost avoided\n"
        f"{turns} turns, {hits} hits; {price}",
        fontsize=10,
    )
    return figure
