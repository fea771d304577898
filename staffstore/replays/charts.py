"""The charts: PNGs drawn from the ledger files alone, never from a live run.

`draw_charts(ledgers, out)` reads one folder of ledgers and draws each chart whose ledger is
there, telling `note` about the ones it skips. matplotlib is imported only when a chart is drawn
and figures go straight to an Agg canvas, so staffstore does not need matplotlib for anything
else and never touches pyplot's global state.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..errors import StaffstoreError
from ..gate.scoring import DEFAULT_BUDGET
from .pairs import data_stem
from .report import (
    CategoryMix,
    JobsLedger,
    Ledgers,
    PairsLedger,
    ReplayLedger,
    fraction,
    percent,
    read_ledgers,
)
from .session_report import SessionLedger, session_chart

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: The false-hit rate a cache may afford: one wrong answer in a thousand queries.
FALSE_HIT_BUDGET = 0.001

#: Each chart's file and title, in the order they are drawn.
CHARTS: dict[str, str] = {
    "avoidance_vs_novel.png": "Calls avoided against the novel fraction",
    "workday_windows.png": "Avoidance through the workday",
    "hostile_mix.png": "The hostile replay, category by category",
    "pairs_recall_vs_false_hits.png": "Pair evaluations: recall against the false-hit rate",
    "jobs_decisions.png": "The jobs replay: what each kind of request did",
    "gate_budgets.png": "The gate's error budgets: recall against the false-hit rate",
    "long_session.png": "A long session: the needed fact in the prompt, against two baselines",
}

HIT, MISS, FALSE_HIT, STALE_HIT = "#2a9d54", "#9aa3ad", "#d62728", "#ff8c00"
MEASURED, CEILING = "#1f5fa8", "#6b7280"
#: One colour per pairs file, in file order (cycled if there are more files).
FILE_COLOURS = ("#1f5fa8", "#c2410c", "#7c3aed", "#0f766e", "#b91c1c", "#4d7c0f")
#: One colour per curve of the budgets chart: more curves than files, so a longer cycle.
CURVE_COLOURS = (*FILE_COLOURS, "#db2777", "#0369a1", "#a16207", "#374151")
MODE_MARKERS = {"shared": "o", "isolated": "s"}
MODE_SIZES = {"shared": 130, "isolated": 45}

Note = Callable[[str], None]


def _ignore(_: str) -> None:
    return None


def draw_charts(ledgers: Path, out: Path, *, note: Note = _ignore) -> list[Path]:
    """Draw every chart whose ledger is in `ledgers` into `out`; return the files written.

    A chart whose ledger is missing is skipped and `note` told why; a damaged ledger raises
    InputError, and no matplotlib raises StaffstoreError.
    """
    found = read_ledgers(ledgers)
    workday, hostile = found.replays.get("workday"), found.replays.get("hostile")
    plan: list[tuple[str, Callable[[], Figure] | None, str]] = [
        ("avoidance_vs_novel.png",
         partial(_avoidance_vs_novel, workday) if workday else None,
         "workday-ledger.json"),
        ("workday_windows.png",
         partial(_windows, workday) if workday and workday.windows else None,
         "workday-ledger.json with windows"),
        ("hostile_mix.png",
         partial(_hostile_mix, hostile) if hostile and hostile.categories else None,
         "hostile-ledger.json with categories"),
        ("pairs_recall_vs_false_hits.png",
         partial(_pairs, found.pairs) if found.pairs else None,
         "pairs-*-ledger.json"),
        ("jobs_decisions.png",
         partial(_jobs, found.jobs["jobs"]) if "jobs" in found.jobs else None,
         "jobs-ledger.json"),
        ("gate_budgets.png",
         partial(_budgets, budget_curves(found)) if budget_curves(found) else None,
         "workday_dev-ledger.json or a pairs ledger with budgets"),
        ("long_session.png",
         partial(_long_session, found.sessions["long-session"])
         if "long-session" in found.sessions else None,
         "long-session-ledger.json"),
    ]  # fmt: skip
    written: list[Path] = []
    for name, draw, needs in plan:
        if not draw:
            note(f"skipped {name}: no {needs} in {ledgers}")
            continue
        written.append(_save(draw(), out / name))
    return written


def existing_charts(folder: Path) -> list[tuple[str, Path]]:
    """The (title, path) of each chart already drawn in `folder`, in drawing order."""
    return [(title, folder / name) for name, title in CHARTS.items() if (folder / name).exists()]


# -- plumbing ----------------------------------------------------------------------------------


def _figure(
    width: float, height: float, grid: Literal["both", "x", "y"] = "both"
) -> tuple[Figure, Axes]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise StaffstoreError("charts need matplotlib: pip install 'staffstore[charts]'") from None
    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.add_subplot()
    axes.grid(True, axis=grid, color="#e5e7eb", linewidth=0.8)
    axes.set_axisbelow(True)
    axes.spines[["top", "right"]].set_visible(False)
    return figure, axes


def _percent_axis(axes: Axes, which: Literal["x", "y"], decimals: int | None = None) -> None:
    from matplotlib.ticker import PercentFormatter

    axis = axes.xaxis if which == "x" else axes.yaxis
    axis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=decimals))


def _save(figure: Figure, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    # No "Software" entry: the bytes then change only when the chart does.
    figure.savefig(path, dpi=150, metadata={"Software": None})
    return path


# -- the charts --------------------------------------------------------------------------------


def _long_session(ledger: SessionLedger) -> Figure:
    figure, _ = _figure(7.5, 4.0, grid="y")
    _percent_axis(figure.axes[0], "y")
    return session_chart(ledger, figure)


def _avoidance_vs_novel(ledger: ReplayLedger) -> Figure:
    figure, axes = _figure(7.5, 4.8)
    days = sorted(ledger.summaries or [ledger.summary], key=lambda s: s.novel_fraction or 0.0)
    xs = [day.novel_fraction or 0.0 for day in days]
    ys = [day.avoidance for day in days]
    right = max(0.3, max(xs) * 1.3)
    axes.plot(
        [0, right], [1, 1 - right], linestyle="--", color=CEILING,
        label="ceiling 1 \N{MINUS SIGN} F: every turn that is not novel answered",
    )  # fmt: skip
    axes.plot(xs, ys, marker="o", color=MEASURED, label="measured: one workday per F")
    main = ledger.summary
    if main.novel_fraction is not None:
        f, avoided = main.novel_fraction, main.avoidance
        axes.scatter(
            [f], [avoided], s=220, facecolors="none", edgecolors=FALSE_HIT, linewidths=2,
            zorder=3, label=f"the workday (F = {fraction(f)})",
        )  # fmt: skip
        axes.annotate(
            f"F = {fraction(f)}: {percent(avoided)} of turns answered\n"
            f"without a model call (ceiling {percent(1 - f)})",
            xy=(f, avoided), xytext=(f + right * 0.12, avoided - 0.22),
            arrowprops={"arrowstyle": "->", "color": FALSE_HIT}, fontsize=9,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": FALSE_HIT},
        )  # fmt: skip
    axes.set_xlim(0, right)
    axes.set_ylim(0, 1.05)
    _percent_axis(axes, "x", decimals=0)
    _percent_axis(axes, "y", decimals=0)
    axes.set_xlabel("novel fraction F (share of turns no stored claim can answer)")
    axes.set_ylabel("avoidance (hits / turns)")
    axes.set_title(CHARTS["avoidance_vs_novel.png"] + _quick(ledger))
    axes.legend(loc="upper right", fontsize=9)
    return figure


def _windows(ledger: ReplayLedger) -> Figure:
    figure, axes = _figure(8, 4.5, grid="y")
    windows = ledger.windows
    labels = [f"{w.first_turn}\N{EN DASH}{w.last_turn}" for w in windows]
    bars = axes.bar(labels, [w.avoidance for w in windows], color=MEASURED, width=0.7)
    # On a white ground: the whole-day line often runs through a window's label.
    axes.bar_label(
        bars, labels=[percent(w.avoidance, 0) for w in windows], padding=2, fontsize=9,
        bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
    )  # fmt: skip
    day = ledger.summary
    axes.axhline(
        day.avoidance, color=FALSE_HIT, linestyle="--", linewidth=1.2,
        label=f"whole day: {percent(day.avoidance)}",
    )  # fmt: skip
    # Headroom above the tallest bar, so a 100% bar's label stays inside the axes and clear
    # of the title; the ticks stop at 100%, the most avoidance can be.
    top = max(w.avoidance for w in windows)
    axes.set_ylim(0, top * 1.12 + 0.02)
    axes.set_yticks([tick / 5 for tick in range(6) if tick / 5 <= top + 1e-9])
    _percent_axis(axes, "y")
    axes.set_xlabel("turns of the day")
    axes.set_ylabel("avoidance (hits / turns in the window)")
    size = ledger.window_size or windows[0].turns
    at = f", F = {fraction(day.novel_fraction)}" if day.novel_fraction is not None else ""
    axes.set_title(f"{CHARTS['workday_windows.png']}: {size}-turn windows{at}{_quick(ledger)}")
    # Outside the axes: inside, the legend sat on the bars and their labels.
    figure.legend(loc="outside lower center", fontsize=9, frameon=False)
    return figure


def _hostile_mix(ledger: ReplayLedger) -> Figure:
    figure, axes = _figure(10, 5, grid="y")
    names = list(ledger.categories)
    mixes = [ledger.categories[name] for name in names]
    series = [
        ("hits", [m.hits for m in mixes], HIT),
        ("misses", [m.misses for m in mixes], MISS),
        ("false hits", [m.false_hits for m in mixes], FALSE_HIT),
        ("stale hits", [m.stale_hits for m in mixes], STALE_HIT),
    ]
    width = 0.2
    for offset, (label, counts, colour) in enumerate(series):
        xs = [index + (offset - 1.5) * width for index in range(len(names))]
        bars = axes.bar(xs, counts, width=width, color=colour, label=label)
        axes.bar_label(bars, padding=1, fontsize=8, color=colour)
    axes.set_xticks(
        range(len(names)),
        [
            f"{textwrap.fill(name.replace('_', ' '), 12)}\n{mix.turns} turns{_wanted(mix)}"
            for name, mix in zip(names, mixes, strict=True)
        ],
        fontsize=9,
    )
    axes.set_ylabel("turns")
    axes.set_ylim(0, max(max(counts) for _, counts, _ in series) * 1.15 + 1)
    day = ledger.summary
    axes.set_title(
        f"{CHARTS['hostile_mix.png']}: {day.turns} turns, {day.false_hits} false hits, "
        f"{day.stale_hits} stale hits{_quick(ledger)}"
    )
    axes.legend(ncols=4, loc="upper left", fontsize=9)
    return figure


#: The jobs chart's colour for each action a dispatch can take.
ACTION_COLOURS = {"launched": MEASURED, "reused": HIT, "attached": "#7c3aed", "lost": FALSE_HIT}


def _jobs(ledger: JobsLedger) -> Figure:
    """Per category of request, stacked bars of what the dispatcher did, with the gold."""
    names = list(ledger.categories)
    figure, axes = _figure(9, 0.45 * len(names) + 2.2, grid="x")
    mixes = [ledger.categories[name] for name in names]
    lefts = [0] * len(names)
    for action, colour in ACTION_COLOURS.items():
        counts = [mix.actions.get(action, 0) for mix in mixes]
        bars = axes.barh(range(len(names)), counts, left=lefts, color=colour, label=action)
        axes.bar_label(
            bars, labels=[str(c) if c else "" for c in counts], label_type="center",
            fontsize=8, color="white",
        )  # fmt: skip
        lefts = [left + count for left, count in zip(lefts, counts, strict=True)]
    axes.set_yticks(
        range(len(names)),
        [f"{name.replace('_', ' ')} (gold: {' or '.join(mix.gold)})"
         for name, mix in zip(names, mixes, strict=True)],
        fontsize=9,
    )  # fmt: skip
    axes.invert_yaxis()
    axes.set_xlabel("requests")
    s = ledger.summary
    axes.set_title(
        f"{CHARTS['jobs_decisions.png']}{_quick_jobs(ledger)}\n"
        f"{s.requests} requests: {s.reused} jobs avoided, {s.duplicate_launches} duplicate "
        f"launches, {s.wrong_reuses} wrong reuses,\n{s.implement_reuses} implement reuses, "
        f"{s.lost_within_deadline} of {s.vanished} vanished workers lost within the deadline",
        fontsize=10,
    )
    axes.set_xlim(0, max(lefts) * 1.25)  # room for the legend beside the shorter bars
    axes.legend(loc="lower right", fontsize=9)
    return figure


def _quick_jobs(ledger: JobsLedger) -> str:
    return " (quick run)" if ledger.quick else ""


def _pairs(ledgers: list[PairsLedger]) -> Figure:
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter

    figure, axes = _figure(8.5, 5.8)
    labels: dict[tuple[float, float, str], list[str]] = {}
    strict_points: list[tuple[float, float]] = []
    rates = [FALSE_HIT_BUDGET]
    for number, ledger in enumerate(ledgers):
        colour = FILE_COLOURS[number % len(FILE_COLOURS)]
        for mode, result in ledger.modes.items():
            s = result.summary
            marker, size = MODE_MARKERS.get(mode, "D"), MODE_SIZES.get(mode, 70)
            rates += [s.false_hit_rate, s.false_hit_rate_strict]
            if s.false_hit_rate_strict != s.false_hit_rate:
                strict_points.append((s.false_hit_rate_strict, s.recall))
                axes.plot(
                    [s.false_hit_rate, s.false_hit_rate_strict], [s.recall, s.recall],
                    color=colour, linewidth=0.8, linestyle=":",
                )  # fmt: skip
                axes.scatter(
                    [s.false_hit_rate_strict], [s.recall], s=size, marker=marker,
                    facecolors="white", edgecolors=colour, linewidths=1.5, zorder=3,
                    clip_on=False,
                )  # fmt: skip
                axes.annotate(
                    f"strict {percent(s.false_hit_rate_strict, 2)}",
                    xy=(s.false_hit_rate_strict, s.recall), xytext=(0, -13),
                    textcoords="offset points", ha="center", fontsize=7, color=colour,
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white",
                          "edgecolor": "none"}, zorder=2.2,  # over the lines, under the axes
                )  # fmt: skip
            # Shared and isolated often land on the same spot: the smaller marker stays visible.
            axes.scatter(
                [s.false_hit_rate], [s.recall], s=size, marker=marker, color=colour,
                edgecolors="white", linewidths=0.8, zorder=4 if mode == "shared" else 5,
                clip_on=False,
            )  # fmt: skip
            at = (s.false_hit_rate, s.recall, colour)
            labels.setdefault(at, [_stem(ledger)]).append(mode)
    for modes in labels.values():
        modes[1:] = sorted(modes[1:], key=lambda mode: (mode != "shared", mode))
    # Linear up to the budget, logarithmic above: the budget region stays wide enough to read
    # while a rate a hundred times over it still fits.
    right = min(1.0, max(rates) * 3)
    axes.set_xscale("symlog", linthresh=FALSE_HIT_BUDGET, linscale=1.5)
    axes.set_xlim(-FALSE_HIT_BUDGET * 0.04, right)
    axes.set_ylim(0, 1.08)
    ticks = [0.0, FALSE_HIT_BUDGET / 2, FALSE_HIT_BUDGET, 0.01, 0.1, 1.0]
    axes.xaxis.set_major_locator(FixedLocator([tick for tick in ticks if tick <= right]))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value * 100:g}%"))
    _percent_axis(axes, "y", decimals=0)
    axes.axvspan(FALSE_HIT_BUDGET, right, color=FALSE_HIT, alpha=0.06)
    axes.axvline(FALSE_HIT_BUDGET, color=FALSE_HIT, linestyle="--", linewidth=1.2)
    axes.text(
        FALSE_HIT_BUDGET, 1.06, f" over the {percent(FALSE_HIT_BUDGET)} false-hit budget",
        color=FALSE_HIT, fontsize=9, va="top",
    )  # fmt: skip
    _label_points(figure, axes, labels, avoid=strict_points)
    axes.set_xlabel("false-hit rate (false hits / queries; linear to 0.1%, logarithmic above)")
    axes.set_ylabel("recall (correct hits / label-1 pairs)")
    axes.set_title(CHARTS["pairs_recall_vs_false_hits.png"])
    legend = [
        Line2D([], [], marker="o", linestyle="", color="black", label="shared: one store"),
        Line2D([], [], marker="s", linestyle="", color="black", label="isolated: pair alone"),
        Line2D([], [], marker="o", linestyle="", color="black",
               label="false hits: identical-text and labelled-paraphrase hits excluded"),
        Line2D([], [], marker="o", linestyle=":", markerfacecolor="white", color="black",
               label="strict: every hit on another pair counted"),
    ]  # fmt: skip
    figure.legend(handles=legend, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    return figure


def _label_points(
    figure: Figure,
    axes: Axes,
    labels: dict[tuple[float, float, str], list[str]],
    avoid: Sequence[tuple[float, float]] = (),
) -> None:
    """Name each point to its right, moving a label up while it would cover another label or
    one of the `avoid` markers."""
    line = 8 * 1.5 * figure.dpi / 72  # one 8-point line, in pixels
    char = 8 * 0.6 * figure.dpi / 72  # an average 8-point character, in pixels
    marker = 8 * figure.dpi / 72  # a marker's half width, in pixels
    placed: list[tuple[float, float, float]] = []  # (left, right, y) of each label, in pixels
    for x, y in avoid:
        px, py = axes.transData.transform((x, y))
        placed.append((px - marker, px + marker, py))
    for (x, y, colour), (stem, *modes) in sorted(labels.items(), key=lambda item: item[0][1]):
        text = f"{stem} · {', '.join(modes)}: recall {percent(y)}, false hits {percent(x, 2)}"
        px, py = axes.transData.transform((x, y))
        left, right = px, px + 9 + len(text) * char
        ly = py
        moved = True
        while moved:
            moved = False
            for other_left, other_right, other_y in placed:
                # (the 0.01 keeps a label placed exactly one line above from counting again)
                if left < other_right and other_left < right and abs(other_y - ly) < line - 0.01:
                    ly = other_y + line
                    moved = True
        placed.append((left, right, ly))
        # A label moved off its point keeps a thin line back to it.
        leader = {"arrowstyle": "-", "color": colour, "linewidth": 0.6, "shrinkA": 0,
                  "shrinkB": 5} if ly != py else None  # fmt: skip
        axes.annotate(
            text, xy=(x, y), xytext=(9, (ly - py) * 72 / figure.dpi), textcoords="offset points",
            fontsize=8, color=colour, va="center", arrowprops=leader,
            bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"},
        )  # fmt: skip


def _stem(ledger: PairsLedger) -> str:
    return Path(ledger.file).stem


def _wanted(mix: CategoryMix) -> str:
    """What a correct gate does with the category's turns, from their gold labels."""
    return f"\nwant {' or '.join(mix.gold)}" if mix.gold else ""


def _quick(ledger: ReplayLedger) -> str:
    return " (quick run)" if ledger.quick else ""


# -- the gate's budgets --------------------------------------------------------------------------


@dataclass(frozen=True)
class Curve:
    """One data set, split and mode across the error budgets: (budget, false-hit rate, recall)."""

    label: str
    points: list[tuple[float, float, float]]
    test: bool


def budget_curves(found: Ledgers) -> list[Curve]:
    """Every curve the ledgers hold: workday_dev's two splits, each pairs file's modes."""
    curves = []
    if found.dev is not None:
        for split in ("tune", "test"):
            name = "TEST" if split == "test" else "tune (fitted on)"
            points = [
                (e.budget, getattr(e, split).false_hit_rate, getattr(e, split).recall)
                for e in found.dev.budgets
            ]
            curves.append(Curve(f"workday_dev {name}", points, split == "test"))
    if found.workday:
        # The training files' TEST thirds together: each third alone is a few hundred turns.
        pooled: list[tuple[float, float, float]] = []
        for entries in zip(*(dev.budgets for dev in found.workday), strict=True):
            tests = [e.test for e in entries]
            turns = sum(t.turns for t in tests)
            hit_turns = sum(t.hit_turns for t in tests)
            pooled.append(
                (
                    entries[0].budget,
                    sum(t.false_hits for t in tests) / turns if turns else 0.0,
                    sum(t.correct_hits for t in tests) / hit_turns if hit_turns else 0.0,
                )
            )
        curves.append(Curve("workday_train TEST thirds", pooled, True))
    for ledger in found.pairs:
        if not ledger.budgets:
            continue
        for mode in ledger.modes:
            points = [
                (e.budget, e.modes[mode].false_hit_rate, e.modes[mode].recall)
                for e in ledger.budgets
                if mode in e.modes
            ]
            half = " TEST half" if ledger.half == "test" else ""
            label = f"{data_stem(Path(ledger.file))}{half} · {mode}"
            curves.append(Curve(label, points, ledger.half == "test"))
    return curves


def _budgets(curves: list[Curve]) -> Figure:
    from matplotlib.ticker import FixedLocator, FuncFormatter

    figure, axes = _figure(9, 6)
    rates = [FALSE_HIT_BUDGET]
    for number, curve in enumerate(curves):
        colour = CURVE_COLOURS[number % len(CURVE_COLOURS)]
        points = sorted(curve.points)
        xs = [rate for _b, rate, _r in points]
        ys = [recall for _b, _rate, recall in points]
        rates += xs
        style = "-" if curve.test else "--"
        marker = "o" if "isolated" not in curve.label else "s"
        axes.plot(xs, ys, linestyle=style, marker=marker, color=colour, label=curve.label,
                  markersize=5, clip_on=False)  # fmt: skip
        default = [(rate, recall) for b, rate, recall in points if b == DEFAULT_BUDGET]
        axes.scatter([x for x, _ in default], [y for _, y in default], s=120,
                     facecolors="none", edgecolors=colour, zorder=4, clip_on=False)  # fmt: skip
        axes.annotate(
            f"{points[-1][0]:.1%}", xy=(xs[-1], ys[-1]), xytext=(4, 2),
            textcoords="offset points", fontsize=7, color=colour,
        )  # fmt: skip
    right = min(1.0, max(rates) * 3)
    axes.set_xscale("symlog", linthresh=FALSE_HIT_BUDGET, linscale=1.5)
    axes.set_xlim(-FALSE_HIT_BUDGET * 0.04, right)
    axes.set_ylim(0, 1.0)
    ticks = [0.0, FALSE_HIT_BUDGET / 2, FALSE_HIT_BUDGET, 0.01, 0.1, 1.0]
    axes.xaxis.set_major_locator(FixedLocator([tick for tick in ticks if tick <= right]))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value * 100:g}%"))
    _percent_axis(axes, "y", decimals=0)
    axes.axvline(DEFAULT_BUDGET, color=FALSE_HIT, linestyle=":", linewidth=1)
    axes.text(
        DEFAULT_BUDGET, 0.99, f" the default budget, {percent(DEFAULT_BUDGET)}", color=FALSE_HIT,
        fontsize=8, va="top",
    )  # fmt: skip
    axes.set_xlabel("false-hit rate (false hits / queries; linear to 0.1%, logarithmic above)")
    axes.set_ylabel("recall (correct hits / turns that should hit)")
    axes.set_title(
        CHARTS["gate_budgets.png"] + "\none point per calibrated budget; ringed: the default; "
        "the loosest budget labelled; solid: TEST splits",
        fontsize=10,
    )
    axes.legend(loc="upper left", fontsize=7, ncols=2, bbox_to_anchor=(0.0, 0.94))
    return figure
