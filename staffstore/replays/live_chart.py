"""The live chart: one owner's hit rate, cost paid and cost avoided over time, from a store's
receipts.

The figures are the ledger's own (`StaffStore.ledger_by`, the query behind `staffstore ledger
--by day|hour`); nothing here reads SQL. The cost avoided is the ledger's estimate: each hit is
priced at what the paid call whose answer it served cost (a kept answer's own call, or the call
a claim was promoted from). A hit with no such call on record is counted as unknown and left
out of the sum, never priced at $0; when no hit in the range has an estimate, the cost avoided
is unknown (None).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import Ledger
from ..money import usd
from ..store.receipt_queries import Period
from .charts import FALSE_HIT, HIT, MEASURED, _figure, _percent_axis, _save

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: How the avoided cost is estimated, in the words the chart and the JSON use.
COST_RULE = (
    "each avoided call at what the paid call whose answer it served cost (the ledger's "
    "estimated_avoided_cost_usd); avoided calls with no paid call on record are unknown, "
    "counted in unknown_avoided_calls and left out of the sums"
)
_PERIOD_FORMATS: dict[Period, str] = {"day": "%Y-%m-%d", "hour": "%Y-%m-%dT%H:00Z"}
_PERIOD_LENGTHS: dict[Period, timedelta] = {"day": timedelta(days=1), "hour": timedelta(hours=1)}
#: The colour of the cost paid, beside the cost avoided.
PAID = "#6b7280"


@dataclass(frozen=True)
class LivePoint:
    """One period: its turns and hits, the hit rate (the ledger's avoidance: avoided calls per
    turn, None without turns), the cost paid, and the estimated cost avoided (None when the
    period's avoided calls have no estimate), in it and up to its end."""

    period: str
    turns: int
    hits: int
    avoided_calls: int
    hit_rate: float | None
    paid_usd: float
    avoided_usd: float | None
    unknown_avoided_calls: int
    cumulative_paid_usd: float
    cumulative_avoided_usd: float | None


@dataclass(frozen=True)
class LiveSeries:
    """What the live chart draws: one point a period, oldest first."""

    owner: str
    by: Period
    points: list[LivePoint]

    @property
    def avoided_usd(self) -> float | None:
        """The estimated cost avoided over the range; None when no avoided call has one."""
        return self.points[-1].cumulative_avoided_usd if self.points else None

    @property
    def paid_usd(self) -> float:
        return self.points[-1].cumulative_paid_usd if self.points else 0.0

    @property
    def unknown_avoided_calls(self) -> int:
        return sum(point.unknown_avoided_calls for point in self.points)

    def to_json(self) -> dict[str, Any]:
        return {
            "owner": self.owner,
            "by": self.by,
            "paid_usd": self.paid_usd,
            "avoided_usd": self.avoided_usd,
            "unknown_avoided_calls": self.unknown_avoided_calls,
            "cost_rule": COST_RULE,
            "series": [asdict(point) for point in self.points],
        }


def _usd(value: float) -> float:
    # As the ledger rounds its sums: no provider bills below a billionth of a dollar.
    return round(value, 9)


def live_series(owner: str, by: Period, periods: list[tuple[str, Ledger]]) -> LiveSeries:
    """The chart's series from `StaffStore.ledger_by(by, owner, ...)`'s periods."""
    # Unknown over the whole range only when no avoided call in it has an estimate.
    estimated = any(
        totals.avoided_calls > totals.unknown_avoided_cost_calls for _, totals in periods
    )
    points: list[LivePoint] = []
    paid = avoided = 0.0
    for name, totals in periods:
        paid += totals.cost_usd
        avoided += totals.estimated_avoided_cost_usd or 0.0
        points.append(
            LivePoint(
                period=name, turns=totals.turns, hits=totals.hits,
                avoided_calls=totals.avoided_calls, hit_rate=totals.avoidance,
                paid_usd=totals.cost_usd, avoided_usd=totals.estimated_avoided_cost_usd,
                unknown_avoided_calls=totals.unknown_avoided_cost_calls,
                cumulative_paid_usd=_usd(paid),
                cumulative_avoided_usd=_usd(avoided) if estimated else None,
            )
        )  # fmt: skip
    return LiveSeries(owner=owner, by=by, points=points)


def _plain(text: str) -> str:
    """`text` for a chart label: a `$` pair would start matplotlib's math text."""
    return text.replace("$", r"\$")


def period_start(name: str, by: Period) -> datetime:
    """The UTC start of a period named as the ledger names it."""
    return datetime.strptime(name, _PERIOD_FORMATS[by]).replace(tzinfo=UTC)


def draw_live_chart(series: LiveSeries, out: Path) -> Path:
    """Draw `series` as a PNG at `out` (hit rate above; cost paid and cost avoided, each
    cumulated, below)."""
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

    # Each period's sum is reached at its end: a step up at every period boundary.
    ends = [start + length for start in starts]
    paid = [point.cumulative_paid_usd for point in series.points]
    # Drawn over the cost avoided (zorder), so the dashes still show where the two are equal.
    bottom.step([starts[0], *ends], [0.0, *paid], where="post", color=PAID, linestyle="--",
                label="cost paid", zorder=3)  # fmt: skip
    tops = list(paid)
    if series.avoided_usd is None:
        bottom.text(
            0.5, 0.5, "cost avoided unknown: no hit in this range reused a paid call on record",
            transform=bottom.transAxes, ha="center", va="center", fontsize=9, color=FALSE_HIT,
        )  # fmt: skip
    else:
        steps = [point.cumulative_avoided_usd or 0.0 for point in series.points]
        bottom.step([starts[0], *ends], [0.0, *steps], where="post", color=MEASURED,
                    label="cost avoided (estimated)")  # fmt: skip
        bottom.fill_between([starts[0], *ends], [0.0, *steps], step="post", color=MEASURED,
                            alpha=0.12)  # fmt: skip
        tops += steps
    bottom.set_ylim(0, max(tops) * 1.15 or 1.0)
    bottom.yaxis.set_major_formatter(lambda value, _: _plain(usd(value)))
    bottom.legend(loc="upper left", fontsize=8, frameon=False)
    bottom.set_ylabel("cost, cumulative\n(USD; avoided: estimated)")
    first, last = starts[0] - length, starts[-1] + 2 * length
    bottom.set_xlim(first, last)
    # Concise labels (the month or year said once, at its first tick) and a bounded number of
    # ticks, so a long range's labels never run into each other.
    locator = AutoDateLocator(minticks=3, maxticks=8)  # type: ignore[no-untyped-call]
    bottom.xaxis.set_major_locator(locator)
    bottom.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    bottom.set_xlabel(f"time (UTC, one bar {'an hour' if series.by == 'hour' else 'a day'})")

    turns = sum(point.turns for point in series.points)
    hits = sum(point.hits for point in series.points)
    unknown = series.unknown_avoided_calls
    saved = (
        "cost avoided unknown"
        if series.avoided_usd is None
        else f"{usd(series.avoided_usd)} avoided (estimated"
        + (f"; {unknown} hits of unknown cost not counted)" if unknown else ")")
    )
    figure.suptitle(
        f"Live store, owner {_plain(series.owner)}: hit rate, cost paid and avoided\n"
        f"{turns} turns, {hits} hits; {_plain(usd(series.paid_usd))} paid, {_plain(saved)}",
        fontsize=10,
    )
    return figure
