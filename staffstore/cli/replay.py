"""The `replay`, `charts` and `report` commands: ledgers written, then drawn and tabled.

`replay` plays the offline replays and the pair evaluations and writes their ledgers; `charts`
draws PNGs from those ledgers alone; `report` turns them into the README's results section.
Like every command, each parses, calls the library and prints. This module is loaded through
`cli.app.EXTENSIONS`, after cli/app.py has defined the helpers imported here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ..replays import REPLAYS, run_all, run_replay
from ..replays.charts import draw_charts, existing_charts
from ..replays.pairs import default_ledger_path, run_pairs
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
from .app import fail, print_table, run, user_errors

#: Where `replay all` looks for pairs files when not told: the shared evaluation sets.
DEFAULT_PAIRS_DIR = Path("../shared/eval")
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
    others = JOB_REPLAYS | STATE_REPLAYS
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


def _print_pairs(ledgers: list[dict[str, Any]]) -> None:
    """One line a file and mode: recall, and the false hits counted both ways."""
    parsed = [PairsLedger.model_validate(raw) for raw in ledgers]
    print_table(
        [field.upper() for _, field in PAIRS_COLUMNS],
        [pairs_row(ledger, mode) for ledger in parsed for mode in ledger.modes],
    )


def _evaluate_pairs(files: list[Path], out: Callable[[Path], Path], modes: tuple[str, ...]) -> None:
    ledgers = []
    for file in files:
        path = out(file)
        typer.echo(f"pairs: {file} ({', '.join(modes)}) -> {path}", err=True)
        ledgers.append(run(run_pairs(file, path, modes=modes)))
    _print_pairs(ledgers)


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
        Path | None,
        typer.Option(
            "--pairs-dir",
            metavar="DIR",
            help=f"Evaluate every *.jsonl pairs file here. Default: {DEFAULT_PAIRS_DIR}, "
            "when it exists.",
            show_default=False,
        ),
    ] = None,
    no_pairs: Annotated[bool, typer.Option("--no-pairs", help="Play the replays only.")] = False,
) -> None:
    """Play every replay, then the pair evaluations; write each one's ledger into --out.

    Each pairs file `F.jsonl` gets `pairs-F-ledger.json`, with both modes. On the full shared
    evaluation sets that takes minutes.
    """
    ledgers = run(run_all(out, seed, quick=quick))
    _print_replays(list(ledgers.values()))
    typer.echo(f"wrote {len(ledgers)} replay ledgers into {out}", err=True)
    if no_pairs:
        return
    folder = DEFAULT_PAIRS_DIR if pairs_dir is None else pairs_dir
    if not folder.is_dir():
        if pairs_dir is not None:
            fail(f"no pairs folder at {pairs_dir}")
        note(f"no {DEFAULT_PAIRS_DIR} here: pair evaluations skipped (give --pairs-dir)")
        return
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        note(f"no *.jsonl pairs files in {folder}: pair evaluations skipped")
        return
    _evaluate_pairs(files, lambda file: default_ledger_path(file, out), PAIR_MODES)


@replay_app.command("pairs")
def replay_pairs(
    file: Annotated[Path, typer.Argument(metavar="FILE.jsonl", help="A labelled pairs file.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="LEDGER.json",
            help="The ledger to write. Default: ledgers/pairs-NAME-ledger.json for NAME.jsonl.",
            show_default=False,
        ),
    ] = None,
    shared: Annotated[bool, typer.Option("--shared", help="Only the shared-store mode.")] = False,
    isolated: Annotated[
        bool, typer.Option("--isolated", help="Only the isolated-pairs mode.")
    ] = False,
) -> None:
    """Evaluate the gate on one pairs file: recall and false hits, in both modes by default.

    Each line is a JSON object with `a`, `b` and `label` (1: same question, 0: not), and
    optionally `source`, `id` and `hard_negative`; Quora's `question1`, `question2`,
    `is_duplicate` and PAWS's `sentence1`, `sentence2` are read too. Shared: every `a` stored in
    one store, every `b` asked. Isolated: each pair alone under its own owner.
    """
    if not file.is_file():
        fail(f"no pairs file at {file}")
    chosen = tuple(mode for mode, on in zip(PAIR_MODES, (shared, isolated), strict=True) if on)
    path = out if out is not None else default_ledger_path(file, Path("ledgers"))
    _evaluate_pairs([file], lambda _: path, chosen or PAIR_MODES)


# -- charts and report -------------------------------------------------------------------------


def charts(
    ledgers: LedgersOption = Path("ledgers"),
    out: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="Where the PNG files go.")
    ] = Path("charts"),
) -> None:
    """Draw the charts as PNG files, from the ledger files alone.

    A chart whose ledger is missing is skipped with a note. Needs matplotlib
    (`pip install 'staffstore[charts]'`).
    """
    with user_errors():
        written = draw_charts(ledgers, out, note=note)
    if not written:
        fail(f"no charts drawn: {ledgers} holds none of the ledgers they need")
    for path in written:
        typer.echo(str(path))


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
    """Print the results section: tables of the latest summaries, every figure from a ledger.

    With --readme, the section also replaces what stands between `<!-- results:start -->` and
    `<!-- results:end -->` in that file (the markers are appended when missing); running it
    again with the same ledgers changes nothing.
    """
    base = readme.parent if readme is not None else Path(".")
    with user_errors():
        found = read_ledgers(ledgers)
        section = results_markdown(found, figures=existing_charts(charts_dir), base=base)
        changed = update_readme(readme, section) if readme is not None else None
    for name in found.missing:
        note(f"no {name} in {ledgers}: left out")
    typer.echo(section, nl=False)
    if readme is not None:
        typer.echo(f"{'updated' if changed else 'unchanged'}: {readme}", err=True)


def register(app: typer.Typer) -> None:
    """Add `replay`, `charts` and `report` to the command line."""
    app.add_typer(replay_app, name="replay")
    app.command("charts")(charts)
    app.command("report")(report)
