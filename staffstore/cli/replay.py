"""The `replay`, `charts` and `report` commands: ledgers written, then drawn and tabled.

`replay` plays the offline replays and the pair evaluations and writes their ledgers; `charts`
draws PNGs from those ledgers alone; `report` turns them into the README's results section.
Like every command, each parses, calls the library and prints. This module is loaded through
`cli.app.EXTENSIONS`, after cli/app.py has defined the helpers imported here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from ..gate.scoring import DEFAULT_BUDGET, default_model
from ..models import Ledger
from ..replays import REPLAYS, run_all, run_replay
from ..replays.charts import CHARTS, draw_charts, existing_charts
from ..replays.evaluations import REPO_PAIRS_DIR, eval_dirs, plan, run_evaluation
from ..replays.gate_card import gate_card_markdown
from ..replays.live_chart import draw_live_chart, live_series
from ..replays.memory_report import (
    MEMORY_REPLAYS,
    RUN_FIELDS,
    STEP_FIELDS,
    WorkflowRunsLedger,
    run_row,
    step_rows,
)
from ..replays.pairs import default_ledger_path, run_pairs
from ..replays.paraphrase_report import (
    PARAPHRASE_FIELDS,
    PARAPHRASE_REPLAYS,
    ParaphraseLedger,
    paraphrase_row,
)
from ..replays.report import (
    JOB_REPLAYS,
    JOBS_COLUMNS,
    PAIRS_COLUMNS,
    REPLAY_COLUMNS,
    STATE_REPLAYS,
    WAKEUPS_COLUMNS,
    JobsLedger,
    PairsLedger,
    ReplayLedger,
    WakeupsLedger,
    jobs_row,
    pairs_row,
    read_ledgers,
    replay_row,
    results_markdown,
    update_readme,
    wakeups_row,
)
from ..replays.session_report import (
    SESSION_FIELDS,
    SESSION_REPLAYS,
    SessionLedger,
    session_row,
)
from ..replays.splits import HALVES, Half
from ..replays.workday_dev import ledger_name, play_dev_set
from ..store import StaffStore
from ..store.location import StoreAddress
from ..store.receipt_queries import Period
from .app import db_address, fail, gate_budgets, print_json, print_table, run, user_errors, utf8
from .progress import run_with_progress
from .times import SinceOption, UntilOption

PAIR_MODES = ("shared", "isolated")

replay_app = typer.Typer(
    help="Play the offline replays or the pair evaluations and write their ledgers.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

LedgersOption = Annotated[
    Path, typer.Option("--ledgers", metavar="DIR", help="The folder of ledger files.")
]
OutDirOption = Annotated[
    Path, typer.Option("--out", metavar="DIR", help="Where the spec and ledger files go.")
]
SeedOption = Annotated[int, typer.Option("--seed", help="The seed the turns are scripted from.")]
QuickOption = Annotated[
    bool, typer.Option("--quick", help="Play a shortened script (a smoke run, not a result).")
]


def note(text: str) -> None:
    typer.echo(f"note: {text}", err=True)


# -- what a replay and a pair evaluation print -------------------------------------------------


def _print_replays(ledgers: list[dict[str, Any]]) -> None:
    """One line a replay: its main summary, under the ledger's own field names (the jobs
    replay, which counts dispatches and not turns, in a table of its own)."""
    others = JOB_REPLAYS | STATE_REPLAYS | MEMORY_REPLAYS | SESSION_REPLAYS | PARAPHRASE_REPLAYS
    parsed = [ReplayLedger.model_validate(raw) for raw in ledgers if raw["name"] not in others]
    print_table(
        [field.upper() for _, field in REPLAY_COLUMNS],
        [replay_row(ledger, ledger.summary) for ledger in parsed],
    )
    jobs = [JobsLedger.model_validate(raw) for raw in ledgers if raw["name"] in JOB_REPLAYS]
    print_table([field.upper() for _, field in JOBS_COLUMNS], [jobs_row(ledger) for ledger in jobs])
    states = [WakeupsLedger.model_validate(raw) for raw in ledgers if raw["name"] in STATE_REPLAYS]
    print_table(
        [field.upper() for _, field in WAKEUPS_COLUMNS], [wakeups_row(ledger) for ledger in states]
    )
    memory = [
        WorkflowRunsLedger.model_validate(raw) for raw in ledgers if raw["name"] in MEMORY_REPLAYS
    ]
    print_table(STEP_FIELDS, [row for ledger in memory for row in step_rows(ledger)])
    print_table(RUN_FIELDS, [run_row(ledger) for ledger in memory])
    sessions = [
        SessionLedger.model_validate(raw) for raw in ledgers if raw["name"] in SESSION_REPLAYS
    ]
    print_table(SESSION_FIELDS, [session_row(ledger) for ledger in sessions])
    reuse = [
        ParaphraseLedger.model_validate(raw) for raw in ledgers if raw["name"] in PARAPHRASE_REPLAYS
    ]
    print_table(PARAPHRASE_FIELDS, [paraphrase_row(ledger)[:8] for ledger in reuse])


def _print_pairs(ledgers: list[dict[str, Any]]) -> None:
    """One line a file and mode: recall, and the false hits counted both ways."""
    parsed = [PairsLedger.model_validate(raw) for raw in ledgers]
    print_table(
        [field.upper() for _, field in PAIRS_COLUMNS],
        [pairs_row(ledger, mode) for ledger in parsed for mode in ledger.modes],
    )


def _print_dev_set(ledger: dict[str, Any]) -> None:
    """One line a budget: recall and false hits of each split (the test split's as counts)."""
    splits = list(ledger["splits"])
    rows = [
        [
            f"{entry['budget']:g}" + (" (default)" if entry["default"] else ""),
            f"{entry['threshold']:g}",
            *(
                cell
                for split in splits
                for cell in (
                    f"{entry[split]['correct_hits']}/{entry[split]['hit_turns']}",
                    f"{entry[split]['false_hits']}/{entry[split]['turns']}",
                )
            ),
        ]
        for entry in ledger["budgets"]
    ]
    headers = ["BUDGET", "THRESHOLD"]
    for split in splits:
        headers += [f"{split.upper()}_RECALL", f"{split.upper()}_FALSE_HITS"]
    print_table(headers, rows)


# -- replay ------------------------------------------------------------------------------------


def _replay_command(name: str) -> Callable[..., None]:
    def command(
        out: OutDirOption = Path("ledgers"), seed: SeedOption = 7, quick: QuickOption = False
    ) -> None:
        ledger = run(run_replay(name, out, seed=seed, quick=quick))
        _print_replays([ledger])
        typer.echo(f"wrote {out / f'{name}-ledger.json'} and its spec", err=True)

    command.__doc__ = f"Play the {name} replay; write {name}-spec.json and {name}-ledger.json."
    return command


for _name in REPLAYS:
    replay_app.command(_name)(_replay_command(_name))


@replay_app.command("all")
def replay_all(
    out: OutDirOption = Path("ledgers"),
    seed: SeedOption = 7,
    quick: QuickOption = False,
    pairs_dir: Annotated[
        Path,
        typer.Option(
            "--pairs-dir",
            metavar="DIR",
            help="Evaluate every *.jsonl file here: a workday_dev-style file as the workday-dev "
            "replay, any other as labelled pairs. Default: the repository's replays/pairs/.",
            show_default=False,
        ),
    ] = REPO_PAIRS_DIR,
    no_pairs: Annotated[bool, typer.Option("--no-pairs", help="Play the replays only.")] = False,
) -> None:
    """Play every replay, then the evaluations; write each one's ledger into --out.

    The evaluations: the workday-dev replay and PAWS-Wiki dev (shipped in replays/pairs/), and
    Quora's qqp_tune6k.jsonl and qqp_pool test half when found in $STAFFSTORE_EVAL_DATA (else
    ../shared/eval and ../shared/train), each at every calibrated error budget. That takes
    minutes; --quick plays a small sample at the default budget.
    """
    ledgers = run_with_progress(
        "replays", lambda progress: run_all(out, seed, quick=quick, progress=progress)
    )
    _print_replays(list(ledgers.values()))
    typer.echo(f"wrote {len(ledgers)} replay ledgers into {out}", err=True)
    if no_pairs:
        return
    if not pairs_dir.is_dir():
        fail(f"no pairs folder at {pairs_dir}")
    with user_errors():
        found = plan(out, pairs_dir=pairs_dir, folders=eval_dirs(), quick=quick)
    for line in found.skipped:
        note(line)
    pairs: list[dict[str, Any]] = []
    for evaluation in found.evaluations:
        typer.echo(evaluation.describe(), err=True)
        ledger = run_with_progress(
            evaluation.file.name,
            lambda progress: run_evaluation(evaluation, progress=progress),  # noqa: B023 (run at once)
        )
        if evaluation.kind == "workday_dev":
            _print_dev_set(ledger)
        else:
            pairs.append(ledger)
    if pairs:
        _print_pairs(pairs)


@replay_app.command("workday-dev")
def replay_workday_dev(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="[FILE]",
            help="A workday_dev-style file (claim and turn lines). Default: the repository's "
            "replays/pairs/workday_dev.jsonl.",
            show_default=False,
        ),
    ] = REPO_PAIRS_DIR / "workday_dev.jsonl",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="LEDGER.json",
            help="The ledger to write. Default: ledgers/<FILE's stem>-ledger.json.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Play a workday-style file like a cache: all claims in one store, every turn asked at each
    calibrated error budget; recall and false hits split by split.

    workday_dev.jsonl's tuning split (D001-D100) was used to fit the gate; its TEST split
    (D101-D150) never was. A training file (workday_train_a.jsonl ...) is cut in thirds by a hash
    of each claim's id: fit, calibrate, TEST. Only a split the gate may be fitted on lists its
    false hits; the others are kept as counts only.
    """
    if not file.is_file():
        fail(f"no workday-dev file at {file}")
    out = out if out is not None else Path("ledgers") / ledger_name(file)
    ledger = run_with_progress(
        file.name, lambda progress: play_dev_set(file, out, progress=progress)
    )
    _print_dev_set(ledger)
    typer.echo(f"wrote {out}", err=True)


@replay_app.command("pairs")
def replay_pairs(
    file: Annotated[
        Path, typer.Argument(metavar="FILE.jsonl", help="A labelled pairs file (.gz is read).")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="LEDGER.json",
            help="The ledger to write. Default: ledgers/pairs-NAME[-HALF]-ledger.json.",
            show_default=False,
        ),
    ] = None,
    shared: Annotated[bool, typer.Option("--shared", help="Only the shared-store mode.")] = False,
    isolated: Annotated[
        bool, typer.Option("--isolated", help="Only the isolated-pairs mode.")
    ] = False,
    budgets: Annotated[
        list[float] | None,
        typer.Option(
            "--gate-budget",
            callback=gate_budgets,
            metavar="BUDGET",
            help="The error budget to play at, one of the calibrated budgets (repeat for "
            f"several; the first one's rows are kept). Default: {DEFAULT_BUDGET}.",
            show_default=False,
        ),
    ] = None,
    half: Annotated[
        str,
        typer.Option(
            "--half",
            metavar="|".join(HALVES),
            help="For a file whose ids define halves (Quora's qqp_pool): the pairs whose "
            "sha256(id) is even (calibration) or odd (test), or all.",
        ),
    ] = "all",
    sample: Annotated[
        int | None,
        typer.Option("--sample", min=1, help="Play at most this many pairs, chosen by id hash."),
    ] = None,
) -> None:
    """Evaluate the gate on one pairs file: recall and false hits, in both modes by default.

    Each line is a JSON object with `a`, `b` and `label` (1: same question, 0: not), and
    optionally `source`, `id` and `hard_negative`; Quora's `question1`, `question2`,
    `is_duplicate` and PAWS's `sentence1`, `sentence2` are read too. Shared: every `a` stored in
    one store, every `b` asked. Isolated: each pair alone under its own owner. The ledger names
    the budget, its threshold and the half; a test half's ledger holds counts only.
    """
    if not file.is_file():
        fail(f"no pairs file at {file}")
    if half not in HALVES:
        fail(f"--half must be one of {', '.join(HALVES)}, not {half!r}")
    chosen_half: Half = half  # narrowed by the check above
    chosen = tuple(mode for mode, on in zip(PAIR_MODES, (shared, isolated), strict=True) if on)
    path = out if out is not None else default_ledger_path(file, Path("ledgers"), chosen_half)
    modes = chosen or PAIR_MODES
    typer.echo(f"pairs: {file} ({', '.join(modes)}, {half}) -> {path}", err=True)
    ledger = run_with_progress(
        file.name,
        lambda progress: run_pairs(
            file, path, modes=modes, budgets=tuple(budgets or (DEFAULT_BUDGET,)),
            half=chosen_half, sample=sample, progress=progress,
        ),
    )  # fmt: skip
    _print_pairs([ledger])


# -- charts and report -------------------------------------------------------------------------


LIVE_CHART_PREFIX = "live-"


def _live_chart_path(owner: str) -> Path:
    """charts/live-OWNER.png, the owner's name kept to letters, digits, `.`, `_` and `-`."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", owner).lstrip(".") or "_"
    return Path("charts") / f"{LIVE_CHART_PREFIX}{safe}.png"


def charts(
    ctx: typer.Context,
    ledgers: LedgersOption = Path("ledgers"),
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="PATH",
            help="Where the PNG files go (a folder; default charts/). With --db, the PNG file "
            "(default charts/live-OWNER.png).",
            show_default=False,
        ),
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            metavar="PATH",
            help="Chart a live store instead: one owner's hit rate and cost avoided over time, "
            "from this database's receipts (as `staffstore --db PATH charts`; with --owner, "
            "$STAFFSTORE_DB or the config file's db is charted too).",
            show_default=False,
        ),
    ] = None,
    owner: Annotated[
        str | None,
        typer.Option("--owner", callback=utf8, help="With --db: the owner to chart (required)."),
    ] = None,
    by: Annotated[
        Period | None,
        typer.Option("--by", help="With --db: one bar a UTC day (the default) or hour."),
    ] = None,
    since: SinceOption = None,
    until: UntilOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="With --db: also print the charted series as JSON.")
    ] = False,
) -> None:
    """Draw the charts as PNG files, from the ledger files alone; or, with --db, a live store's
    chart.

    A chart whose ledger is missing is skipped with a note. Needs matplotlib
    (`pip install 'staffstore[charts]'`).

    With `--db PATH --owner OWNER`, draw that owner's hit rate period by period and the cost
    paid and cost avoided, cumulated, over time, from the store's receipts (the figures of
    `staffstore ledger --by`; `--since`/`--until` bound the range). The cost avoided is the
    ledger's estimate: each hit at what the paid call whose answer it served cost; hits with
    no such call on record are counted as unknown, never $0. `--json` prints the series. Only
    the named owner's receipts are read.
    """
    # A database named on the command line (here or before the command) asks for a live chart;
    # one from $STAFFSTORE_DB or the config file is the store charted when --owner asks for one,
    # so `staffstore charts` alone still draws the replay charts wherever the variable is set.
    source = ctx.find_root().meta.get("db_source")
    if db is not None or source == "flag" or (owner is not None and source != "default"):
        if owner is None:
            fail("--owner is required with --db: a live chart shows one owner's receipts")
        database = db if db is not None else db_address(ctx)
        _live_chart(database, owner, by or "day", since, until, out, as_json=as_json)
        return
    given = {"--owner": owner, "--by": by, "--since": since, "--until": until, "--json": as_json}
    live_only = [flag for flag, value in given.items() if value not in (None, False)]
    if live_only:
        fail(f"{', '.join(live_only)}: only with --db or $STAFFSTORE_DB (a live store's chart)")
    folder = out if out is not None else Path("charts")
    with user_errors():
        written = draw_charts(ledgers, folder, note=note)
    if not written:
        fail(f"no charts drawn: {ledgers} holds none of the ledgers they need")
    for path in written:
        typer.echo(str(path))


def _live_chart(
    db: StoreAddress,
    owner: str,
    by: Period,
    since: datetime | None,
    until: datetime | None,
    out: Path | None,
    *,
    as_json: bool,
) -> None:
    path = out if out is not None else _live_chart_path(owner)
    if path.name in CHARTS:
        fail(f"--out {path} would overwrite the replay chart {path.name}: choose another name")
    if path.suffix.lower() != ".png":
        fail(f"--out {path}: the live chart is a PNG file, name it *.png")

    async def periods() -> list[tuple[str, Ledger]]:
        async with StaffStore.open(db, create=False) as store:
            return await store.ledger_by(by, owner, since=since, until=until)

    found = run(periods())
    if not any(totals.turns for _, totals in found):
        bounds = "".join(
            f" {word} {moment.isoformat()}"
            for word, moment in (("since", since), ("until", until))
            if moment is not None
        )
        fail(f"no receipts for owner {owner!r} in {db}{bounds}: nothing to chart")
    series = live_series(owner, by, found)
    with user_errors():
        written = draw_live_chart(series, path)
    if as_json:
        print_json({**series.to_json(), "chart": str(written)})
    else:
        typer.echo(str(written))


def report(
    ledgers: LedgersOption = Path("ledgers"),
    readme: Annotated[
        Path | None,
        typer.Option(
            "--readme",
            metavar="README.md",
            help="Also put the section between the results markers of this file.",
            show_default=False,
        ),
    ] = None,
    charts_dir: Annotated[
        Path, typer.Option("--charts", metavar="DIR", help="Show the charts drawn here.")
    ] = Path("charts"),
) -> None:
    """Print the gate card and the results section, every figure from a ledger.

    The gate card (method, fitting and calibration data, recall and false hits by data set,
    split and error budget) is printed when the ledgers hold workday_dev's or a Quora or PAWS
    evaluation. With --readme, the results replace what stands between `<!-- results:start -->`
    and `<!-- results:end -->` in that file, and the card what stands between
    `<!-- gate-card:start -->` and `<!-- gate-card:end -->` (markers are added when missing,
    the card's before the results); running it again with the same ledgers changes nothing.
    """
    base = readme.parent if readme is not None else Path(".")
    with user_errors():
        found = read_ledgers(ledgers)
        section = results_markdown(found, figures=existing_charts(charts_dir), base=base)
        card = gate_card_markdown(found, default_model().params, DEFAULT_BUDGET)
        changed = update_readme(readme, section, card) if readme is not None else None
    for name in found.missing:
        note(f"no {name} in {ledgers}: left out")
    if card is not None:
        typer.echo(card)
    typer.echo(section, nl=False)
    if readme is not None:
        typer.echo(f"{'updated' if changed else 'unchanged'}: {readme}", err=True)


def register(app: typer.Typer) -> None:
    """Add `replay`, `charts` and `report` to the command line."""
    app.add_typer(replay_app, name="replay")
    app.command("charts")(charts)
    app.command("report")(report)
