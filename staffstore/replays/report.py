"""The results section: the latest ledger summaries as markdown, spliced into a README.

Every figure comes from a ledger file that a replay or a pair evaluation wrote; none is typed by
hand. `read_ledgers` loads a folder of ledgers into typed models (which the charts read too),
`results_markdown` renders them as tables, and `splice_results` puts the tables between the
README's markers, appending the markers when they are missing, so a second run changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InputError
from ..store.importer import validation_message
from . import REPLAYS
from .memory_report import (
    MEMORY_REPLAYS,
    RUN_HEADINGS,
    STEP_HEADINGS,
    WorkflowRunsLedger,
    explanation,
    run_row,
    step_rows,
)
from .paraphrase_report import (
    PARAPHRASE_HEADINGS,
    PARAPHRASE_REPLAYS,
    ParaphraseLedger,
    paraphrase_budget_table,
    paraphrase_explanation,
    paraphrase_row,
)
from .scale_report import (
    LATENCY_ALIGN,
    LATENCY_HEADINGS,
    OPEN_ALIGN,
    OPEN_HEADINGS,
    PAIR_MODEL_ALIGN,
    PAIR_MODEL_HEADINGS,
    SIZE_ALIGN,
    SIZE_HEADINGS,
    latency_rows,
    open_rows,
    pair_model_rows,
    size_rows,
    target_headings,
    target_rows,
)
from .session_report import (
    SESSION_HEADINGS,
    SESSION_REPLAYS,
    SessionLedger,
    session_explanation,
    session_row,
)

START = "<!-- results:start -->"
END = "<!-- results:end -->"
#: The gate card's markers (gate_card.py renders it); it goes before the results.
CARD_START = "<!-- gate-card:start -->"
CARD_END = "<!-- gate-card:end -->"
PAIRS_GLOB = "pairs-*-ledger.json"
DEV_LEDGER = "workday_dev-ledger.json"
#: The workday training files' ledgers (each file's fit, calibrate and TEST thirds).
TRAIN_GLOB = "workday_train_*-ledger.json"

LedgerT = TypeVar("LedgerT", bound=BaseModel)


# -- what the ledgers hold (only the fields read here; the rest is ignored) ---------------------


class ReplaySummary(BaseModel):
    turns: int
    hits: int
    misses: int
    avoidance: float
    gold_hits: int
    gold_hit_recall: float
    false_hits: int
    false_hit_rate: float
    stale_hits: int
    conflict_picks: int
    known_cost_usd: float | None
    novel_fraction: float | None = None


class Window(BaseModel):
    first_turn: int
    last_turn: int
    turns: int
    hits: int
    avoidance: float


class CategoryMix(BaseModel):
    turns: int
    hits: int
    misses: int
    false_hits: int
    stale_hits: int
    #: The gold labels of the category's turns: what a correct gate does with them.
    gold: list[str] = []


class ReplayLedger(BaseModel):
    name: str
    seed: int
    quick: bool
    summary: ReplaySummary
    # The workday plays one day per novel fraction; `summary` is the first of them.
    summaries: list[ReplaySummary] = []
    windows: list[Window] = []
    window_size: int | None = None
    # The hostile replay's mix, by category of turn.
    categories: dict[str, CategoryMix] = {}


class PairsSummary(BaseModel):
    queries: int
    positives: int
    correct_hits: int
    recall: float
    false_hits: int
    false_hit_rate: float
    identical_text_hits: int
    labelled_paraphrase_hits: int = 0  # ledgers written before the column existed
    false_hits_strict: int
    false_hit_rate_strict: float
    # Ledgers written before the second look was counted apart lack it.
    second_look_false_hits: int | None = None


class PairsMode(BaseModel):
    summary: PairsSummary


class PairsBudget(BaseModel):
    budget: float
    threshold: float
    # Ledgers written before questions and statements were calibrated apart lack it.
    statement_threshold: float | None = None
    modes: dict[str, PairsSummary]


class PairsSample(BaseModel):
    size: int
    of: int


class PairsLedger(BaseModel):
    file: str
    modes: dict[str, PairsMode]
    # Ledgers written before budgets and halves existed lack these fields.
    sha256: str | None = None
    half: str = "all"
    sample: PairsSample | None = None
    budget: float | None = None
    threshold: float | None = None
    budgets: list[PairsBudget] = []

    @property
    def label(self) -> str:
        """The file, and the half and sample played when not the whole file."""
        parts = [] if self.half == "all" else [f"{self.half} half"]
        if self.sample is not None:
            parts.append(f"{self.sample.size:,} of {self.sample.of:,} sampled")
        return self.file + (f" ({', '.join(parts)})" if parts else "")


class DevStyle(BaseModel):
    turns: int
    correct_hits: int = 0
    false_hits: int = 0


class DevSplit(BaseModel):
    turns: int
    hit_turns: int
    miss_turns: int
    correct_hits: int
    recall: float
    recall_by_style: dict[str, DevStyle]
    false_hits: int
    false_hit_rate: float
    false_hits_on_miss_turns: int
    wrong_claim_hits: int
    false_hits_by_miss_style: dict[str, DevStyle]
    strict_hits: int
    second_look_hits: int


class DevBudget(BaseModel):
    budget: float
    threshold: float
    statement_threshold: float | None = None
    default: bool
    # workday_dev has a tuning and a TEST split; a training file fit, calibrate and TEST thirds.
    tune: DevSplit | None = None
    fit: DevSplit | None = None
    calibrate: DevSplit | None = None
    test: DevSplit


class DevSplitInfo(BaseModel):
    what: str
    used_for_fitting: bool
    claims: int
    turns: int


class DevLedger(BaseModel):
    """A workday replay's ledger (workday_dev-ledger.json, workday_train_a-ledger.json, ...)."""

    name: str
    file: str
    sha256: str
    splits: dict[str, DevSplitInfo]
    default_budget: float
    budgets: list[DevBudget]


#: Replays whose ledgers count dispatched jobs, not turns (read as JobsLedger).
JOB_REPLAYS = frozenset({"jobs"})


class JobsSummary(BaseModel):
    requests: int
    launched: int
    reused: int
    attached: int
    lost: int
    correct: int
    duplicate_launches: int
    wrong_reuses: int
    implement_reuses: int
    vanished: int
    lost_within_deadline: int


class JobsCategory(BaseModel):
    requests: int
    gold: list[str]
    actions: dict[str, int]
    correct: int


class JobsLedger(BaseModel):
    name: str
    seed: int
    quick: bool
    summary: JobsSummary
    categories: dict[str, JobsCategory] = {}


#: Replays whose ledgers count an agent's wake-ups and its working state (WakeupsLedger).
STATE_REPLAYS = frozenset({"wakeups"})


class WakeupsSummary(BaseModel):
    wakeups: int
    prompts_with_section: int
    prompts_with_superseded_value: int
    prompts_missing_a_current_value: int
    prompts_with_agent_state: int
    section_bytes_total: int
    section_bytes_mean: float
    section_bytes_max: int
    section_cap_bytes: int
    section_share_of_prompt_bytes: float
    writes: dict[str, int]
    writes_as_predicted: str
    notes_baseline_prompts_with_superseded_value: int


class WakeupsLedger(BaseModel):
    name: str
    seed: int
    quick: bool
    summary: WakeupsSummary


@dataclass(frozen=True)
class Ledgers:
    """The ledgers found in one folder: replays by name, pair evaluations in file order."""

    folder: Path
    replays: dict[str, ReplayLedger] = field(default_factory=dict)
    pairs: list[PairsLedger] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    #: The jobs replay's ledger, by name (see JOB_REPLAYS).
    jobs: dict[str, JobsLedger] = field(default_factory=dict)
    #: The wakeups replay's ledger, by name (see STATE_REPLAYS).
    wakeups: dict[str, WakeupsLedger] = field(default_factory=dict)
    #: The workflow-runs replay's ledger, by name (see memory_report.MEMORY_REPLAYS).
    memory: dict[str, WorkflowRunsLedger] = field(default_factory=dict)
    #: The benchmark ledgers (bench-store.json, bench-proxy.json, bench-proxy-scale.json,
    #: bench-backends.json, bench-replicas.json) as written, when present.
    benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The workday-dev replay's ledger, when present.
    dev: DevLedger | None = None
    #: The workday training files' ledgers, in file order.
    workday: list[DevLedger] = field(default_factory=list)
    #: The long-session replay's ledger, by name (see session_report.SESSION_REPLAYS).
    sessions: dict[str, SessionLedger] = field(default_factory=dict)
    #: The kept-paraphrase replay's ledger, by name (paraphrase_report.PARAPHRASE_REPLAYS).
    paraphrase: dict[str, ParaphraseLedger] = field(default_factory=dict)


def read_ledger(path: Path, model: type[LedgerT]) -> LedgerT:
    """Return the ledger in `path` as `model`, or an InputError that names the file and field."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no ledger at {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path} is not JSON ({error.msg} at line {error.lineno})") from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{path} is not a ledger: {validation_message(error)}") from None


def read_ledgers(folder: Path) -> Ledgers:
    """Read every replay and pairs ledger in `folder`; InputError if there are none at all."""
    if not folder.is_dir():
        raise InputError(f"no ledgers folder at {folder} (run `staffstore replay all` first)")
    dev = folder / DEV_LEDGER
    found = Ledgers(folder, dev=read_ledger(dev, DevLedger) if dev.exists() else None)
    for name in REPLAYS:
        path = folder / f"{name}-ledger.json"
        if path.exists() and name in JOB_REPLAYS:
            found.jobs[name] = read_ledger(path, JobsLedger)
        elif path.exists() and name in STATE_REPLAYS:
            found.wakeups[name] = read_ledger(path, WakeupsLedger)
        elif path.exists() and name in MEMORY_REPLAYS:
            found.memory[name] = read_ledger(path, WorkflowRunsLedger)
        elif path.exists() and name in SESSION_REPLAYS:
            found.sessions[name] = read_ledger(path, SessionLedger)
        elif path.exists() and name in PARAPHRASE_REPLAYS:
            found.paraphrase[name] = read_ledger(path, ParaphraseLedger)
        elif path.exists():
            found.replays[name] = read_ledger(path, ReplayLedger)
        else:
            found.missing.append(path.name)
    for path in sorted(folder.glob(PAIRS_GLOB)):
        found.pairs.append(read_ledger(path, PairsLedger))
    for path in sorted(folder.glob(TRAIN_GLOB)):
        found.workday.append(read_ledger(path, DevLedger))
    for name in ("store", "proxy", "proxy-scale", "backends", "replicas", "long-session"):
        path = folder / f"bench-{name}.json"
        if path.exists():
            try:
                found.benchmarks[name] = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
                raise InputError(f"cannot read {path}: {error}") from None
    nothing = not (
        found.replays or found.pairs or found.jobs or found.wakeups or found.memory
        or found.workday or found.paraphrase
    )  # fmt: skip
    if nothing and found.dev is None:
        raise InputError(f"no ledgers in {folder} (run `staffstore replay all` first)")
    return found


# -- formatting: one place decides how each kind of figure is shown -----------------------------


def percent(value: float, digits: int = 1) -> str:
    """A share as a percent: `percent(0.4)` is '40.0%'."""
    return f"{value:.{digits}%}"


def rate(value: float) -> str:
    """A false-hit rate, with the digits a 0.1% budget needs: `rate(0.0005)` is '0.05%'."""
    return percent(value, 2)


def fraction(value: float) -> str:
    """A novel fraction as a short percent: 0.05 is '5%', 0.125 is '12.5%'."""
    return f"{value:.0%}" if round(value * 100, 6).is_integer() else f"{value:.1%}"


def usd(value: float | None) -> str:
    """A cost in dollars; unknown shows as '-', never as 0."""
    return "-" if value is None else f"{value:.6f}"


def replay_label(ledger: ReplayLedger, summary: ReplaySummary) -> str:
    label = ledger.name
    if summary.novel_fraction is not None:
        label += f", F={fraction(summary.novel_fraction)}"
    return label + (" (quick)" if ledger.quick else "")


# -- the markdown --------------------------------------------------------------------------------


def _table(headers: Sequence[str], align: str, rows: Sequence[Sequence[str]]) -> list[str]:
    """A markdown table; `align` has one letter a column: l(eft) or r(ight)."""
    if len(align) != len(headers):
        raise ValueError(f"{len(headers)} columns but {len(align)} alignments")
    rule = ["---" if side == "l" else "---:" for side in align]
    return [f"| {' | '.join(cells)} |" for cells in [headers, rule, *rows]]


#: The columns of a replay row: (heading in the report, the ledger field it shows).
REPLAY_COLUMNS = (
    ("replay", "name"), ("turns", "turns"), ("hits", "hits"), ("avoidance", "avoidance"),
    ("gold-hit recall", "gold_hit_recall"), ("false hits", "false_hits"),
    ("stale hits", "stale_hits"), ("conflict picks", "conflict_picks"),
    ("known cost (USD)", "known_cost_usd"),
)  # fmt: skip

#: The columns of a pairs row, likewise.
PAIRS_COLUMNS = (
    ("file", "file"), ("mode", "mode"), ("queries", "queries"), ("recall", "recall"),
    ("correct hits/positives", "correct_hits"), ("false hits", "false_hits"),
    ("false-hit rate", "false_hit_rate"), ("identical-text hits", "identical_text_hits"),
    ("labelled-paraphrase hits", "labelled_paraphrase_hits"),
    ("false hits (strict)", "false_hits_strict"),
    ("false-hit rate (strict)", "false_hit_rate_strict"),
)  # fmt: skip


#: The columns of a jobs replay row, likewise.
JOBS_COLUMNS = (
    ("replay", "name"), ("requests", "requests"), ("launched", "launched"),
    ("reused (jobs avoided)", "reused"), ("attached", "attached"), ("lost", "lost"),
    ("as gold", "correct"), ("duplicate launches", "duplicate_launches"),
    ("wrong reuses", "wrong_reuses"), ("implement reuses", "implement_reuses"),
    ("vanished workers lost in time", "lost_within_deadline"),
)  # fmt: skip


def jobs_row(ledger: JobsLedger) -> list[str]:
    """The jobs summary's cells, in JOBS_COLUMNS order."""
    s = ledger.summary
    return [
        ledger.name + (" (quick)" if ledger.quick else ""), str(s.requests), str(s.launched),
        str(s.reused), str(s.attached), str(s.lost), f"{s.correct}/{s.requests}",
        str(s.duplicate_launches), str(s.wrong_reuses), str(s.implement_reuses),
        f"{s.lost_within_deadline}/{s.vanished}",
    ]  # fmt: skip


def _jobs_tables(ledger: JobsLedger) -> list[str]:
    headings = [heading for heading, _ in JOBS_COLUMNS]
    lines = _table(headings, "l" + "r" * (len(headings) - 1), [jobs_row(ledger)])
    actions = ("launched", "reused", "attached", "lost")
    rows = [
        [name.replace("_", " "), " or ".join(mix.gold), str(mix.requests),
         *(str(mix.actions.get(action, 0)) for action in actions), f"{mix.correct}/{mix.requests}"]
        for name, mix in ledger.categories.items()
    ]  # fmt: skip
    headers = ["category", "gold", "requests", *actions, "as gold"]
    return [*lines, "", *_table(headers, "llrrrrrr", rows)]


#: The columns of a wakeups replay row, likewise.
WAKEUPS_COLUMNS = (
    ("replay", "name"), ("wake-ups", "wakeups"), ("with a section", "prompts_with_section"),
    ("superseded value in prompt", "prompts_with_superseded_value"),
    ("current value missing", "prompts_missing_a_current_value"),
    ("agent state in prompt", "prompts_with_agent_state"),
    ("section bytes (mean / max)", "section_bytes_mean"),
    ("share of prompt bytes", "section_share_of_prompt_bytes"),
    ("writes as predicted", "writes_as_predicted"),
    ("notes instead: superseded", "notes_baseline_prompts_with_superseded_value"),
)  # fmt: skip


def wakeups_row(ledger: WakeupsLedger) -> list[str]:
    """The wakeups summary's cells, in WAKEUPS_COLUMNS order."""
    s = ledger.summary
    return [
        ledger.name + (" (quick)" if ledger.quick else ""), str(s.wakeups),
        str(s.prompts_with_section), str(s.prompts_with_superseded_value),
        str(s.prompts_missing_a_current_value), str(s.prompts_with_agent_state),
        f"{s.section_bytes_mean:.0f} / {s.section_bytes_max}",
        percent(s.section_share_of_prompt_bytes), s.writes_as_predicted,
        str(s.notes_baseline_prompts_with_superseded_value),
    ]  # fmt: skip


def replay_row(ledger: ReplayLedger, summary: ReplaySummary) -> list[str]:
    """One summary's cells, in REPLAY_COLUMNS order."""
    s = summary
    return [
        replay_label(ledger, s), str(s.turns), str(s.hits), percent(s.avoidance),
        percent(s.gold_hit_recall), str(s.false_hits), str(s.stale_hits), str(s.conflict_picks),
        usd(s.known_cost_usd),
    ]  # fmt: skip


def pairs_row(ledger: PairsLedger, mode: str) -> list[str]:
    """One mode's cells, in PAIRS_COLUMNS order."""
    s = ledger.modes[mode].summary
    return [
        ledger.label, mode, str(s.queries), percent(s.recall), f"{s.correct_hits}/{s.positives}",
        str(s.false_hits), rate(s.false_hit_rate), str(s.identical_text_hits),
        str(s.labelled_paraphrase_hits), str(s.false_hits_strict), rate(s.false_hit_rate_strict),
    ]  # fmt: skip


def _replays_table(ledgers: Ledgers) -> list[str]:
    rows = [
        replay_row(ledger, summary)
        for ledger in ledgers.replays.values()
        for summary in ledger.summaries or [ledger.summary]
    ]
    return _table([heading for heading, _ in REPLAY_COLUMNS], "lrrrrrrrr", rows)


def _hostile_table(ledger: ReplayLedger) -> list[str]:
    rows = [
        [name.replace("_", " "), " or ".join(mix.gold) or "-", str(mix.turns), str(mix.hits),
         str(mix.misses), str(mix.false_hits), str(mix.stale_hits)]
        for name, mix in ledger.categories.items()
    ]  # fmt: skip
    headers = ["category", "gold", "turns", "hits", "misses", "false hits", "stale hits"]
    return _table(headers, "llrrrrr", rows)


def _pairs_table(ledgers: Ledgers) -> list[str]:
    rows = [pairs_row(ledger, mode) for ledger in ledgers.pairs for mode in ledger.modes]
    align = "ll" + "r" * (len(PAIRS_COLUMNS) - 2)  # file and mode, then figures
    return _table([heading for heading, _ in PAIRS_COLUMNS], align, rows)


def _shown(path: Path, base: Path) -> str:
    """A path as a reader of a file in `base` would follow it: relative when it lies below."""
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


#: bench_store.py's targets, as the README says them.
_STORE_TARGETS = {
    "query_first_p99_ms_at_100k": "query_first p99 at 100,000 claims <= {:g} ms",
    "gc_pause_ms_at_100k": "no collection pause over {:g} ms at 100,000",
    "query_first_p99_ms_at_1m": "query_first p99 at 1,000,000 <= {:g} ms",
    "import_seconds_at_100k": "100,000 imported in {:g} s",
    "import_seconds_at_1m": "1,000,000 imported in {:g} s",
    "pair_model_turn_p99_ms_at_100k": "a pair-model turn's p99 at 100,000 <= {:g} ms",
    "hit_p99_ms_at_100k": "a hit's query_first p99 at 100,000 <= {:g} ms",
    "hit_p99_ms_at_1m": "a hit's query_first p99 at 1,000,000 <= {:g} ms",
}


def _speed_lines(benchmarks: dict[str, dict[str, Any]]) -> list[str]:
    """The benchmark figures, as the benchmarks wrote them (`make bench` re-measures)."""
    lines: list[str] = []
    store = benchmarks.get("store")
    if store is not None:

        def ms(figures: dict[str, Any] | None, key: str) -> str:
            # Ledgers written before the path was timed apart lack it.
            return f"{figures[key]:.2f} ms" if figures and key in figures else "-"

        def longest(result: dict[str, Any]) -> str:
            pauses = result.get("gc_pauses")  # older ledgers timed the full ones alone
            return f"{pauses['all']['max_ms']:.1f} ms" if pauses else "-"

        def import_memory(result: dict[str, Any]) -> str:
            if "import_peak_rss_mib" not in result:  # older ledgers did not measure it
                return "-"
            peak = f"{result['import_peak_rss_mib']:.0f} MiB"
            # 0 when the import keyed its claims itself; older ledgers lack the helper's peak.
            helper = result.get("import_helper_peak_rss_mib") or 0
            return f"{peak} + {helper:.0f} MiB helper" if helper else peak

        rows = [
            [
                f"{r['claims']:,}",
                f"{r['import_seconds']:.2f} s",
                import_memory(r),
                f"{r['query_first_ms']['p50']:.2f} ms",
                f"{r['query_first_ms']['p99']:.2f} ms",
                ms(r.get("strict_hit_ms"), "p50"),
                ms(r.get("hit_ms"), "p99"),
                ms(r.get("pair_model_turn_ms"), "p99"),
                ms(r.get("other_turn_ms"), "p99"),
                # Ledgers written before the benchmark checked each hit lack the count.
                f"{r['false_hits']['count']} of {r['queries']:,}" if "false_hits" in r else "-",
                f"{r['full_collections']['count']}; longest {longest(r)}",
                f"{r['batch_jsonl']['queries_per_second']:,.0f}/s",
            ]
            for r in store.get("results", [])
        ]
        headers = [
            "claims", "import", "import peak resident", "query_first p50", "query_first p99",
            "strict hit p50", "hit p99",
            "pair-model turn p99", "other turns p99", "false hits", "full GCs; pauses",
            "query --jsonl",
        ]  # fmt: skip
        pair = store.get("pair_model_ms")
        model_line = (
            [
                "",
                f"The pair model alone, one pair: p50 {ms(pair, 'p50')}, p99 {ms(pair, 'p99')}; "
                "a turn reaches it only when the strict test did not serve and the slots agree.",
            ]
            if pair
            else []
        )
        met = store.get("meets_targets") or {}
        targets_line = (
            [
                "",
                "Targets (issue 41): "
                + "; ".join(
                    _STORE_TARGETS.get(name, name + " {:g}").format(store["targets"][name])
                    + (": met" if ok else ": not met")
                    for name, ok in met.items()
                )
                + ".",
                *(
                    [
                        "",
                        "The hit targets are the issue's rule for a learned scorer (keep its "
                        "cost inside these figures for hits; report the miss path with and "
                        "without it: the pair-model and other turns' columns). The query_first "
                        "columns count every turn, the near misses the pair model reads among "
                        "them.",
                    ]
                    if "hit_p99_ms_at_100k" in met
                    else []
                ),
            ]
            if met
            else []
        )
        lines += [
            "Store and gate (`benchmarks/bench_store.py`, ledgers/bench-store.json; false "
            "hits: turns served a claim whose question is not the one the turn asks, checked "
            "turn by turn; the garbage collections during the timed lookups: how many were "
            "full, and the longest pause of any generation):",
            "",
            *_table(headers, "r" * len(headers), rows),
            *model_line,
            *targets_line,
        ]
    proxy = benchmarks.get("proxy")
    if proxy is not None:
        rows = [
            [
                "claim hit",
                f"{proxy['hit_claim']['p50_ms']:.2f} ms",
                f"{proxy['hit_claim']['p99_ms']:.2f} ms",
            ],
            [
                "exact-repeat hit",
                f"{proxy['hit_exact_repeat']['p50_ms']:.2f} ms",
                f"{proxy['hit_exact_repeat']['p99_ms']:.2f} ms",
            ],
            [
                "bare starlette app",
                f"{proxy['bare_starlette']['p50_ms']:.2f} ms",
                f"{proxy['bare_starlette']['p99_ms']:.2f} ms",
            ],
        ]
        committing = proxy.get("bare_starlette_committing_a_row")
        if committing is not None:  # ledgers before December 6 2026 have no such floor
            rows.append(
                [
                    "bare starlette app, committing a row to SQLite before it answers",
                    f"{committing['p50_ms']:.2f} ms",
                    f"{committing['p99_ms']:.2f} ms",
                ]
            )
        model = proxy["miss_with_lookup"].get("pair_model")
        # Ledgers before December 7 2026 do not count the pair model's part of a miss.
        model_rows = (
            []
            if model is None
            else [
                [
                    "of which the gate's pair model, mean per miss "
                    f"({model['pairs_per_miss']:g} pairs)",
                    f"{model['model_ms_per_miss']:.2f} ms",
                    "",
                ]
            ]
        )
        rows += [
            [
                "miss through the proxy (with lookup)",
                f"{proxy['miss_with_lookup']['proxy_p50_ms']:.2f} ms",
                f"{proxy['miss_with_lookup']['proxy_p99_ms']:.2f} ms",
            ],
            [
                "miss through the proxy (lookup skipped)",
                f"{proxy['miss_forward_only']['proxy_p50_ms']:.2f} ms",
                f"{proxy['miss_forward_only']['proxy_p99_ms']:.2f} ms",
            ],
            [
                "miss overhead (with lookup)",
                f"{proxy['miss_with_lookup']['overhead_p50_ms']:.2f} ms",
                "",
            ],
            *model_rows,
            [
                "miss overhead (lookup skipped)",
                f"{proxy['miss_forward_only']['overhead_p50_ms']:.2f} ms",
                "",
            ],
        ]
        if lines:
            lines.append("")
        lines += [
            "Proxy (`benchmarks/bench_proxy.py`, ledgers/bench-proxy.json):",
            "",
            *_table(["request", "p50", "p99"], "lrr", rows),
        ]
    lines += _scale_lines(benchmarks)
    lines += _backend_lines(benchmarks)
    return lines


def _scale_lines(benchmarks: dict[str, dict[str, Any]]) -> list[str]:
    """The proxy over large stores (bench_proxy_scale.py): latency, weight, targets."""
    scale = benchmarks.get("proxy-scale")
    if scale is None:
        return []
    lines = [
        "",
        "Proxy at scale (`benchmarks/bench_proxy_scale.py`, ledgers/bench-proxy-scale.json; "
        "client, proxy, fake upstream and bare app share this machine's cores). Closed loop: "
        "each client sends its next request when answered, so under many a request's time "
        "includes its wait behind the others (the throughput, and latency at saturation):",
        "",
        *_table(LATENCY_HEADINGS, LATENCY_ALIGN, latency_rows(scale)),
    ]
    paired = pair_model_rows(scale)
    if paired:
        lines += [
            "",
            "The gate's pair model in those misses (the proxy's /metrics before and after "
            "them): a miss that the strict test refuses and the slots let through is read by "
            "the model against its nearest claims and kept answers. Under one client, the mean "
            "less the model's time is what a miss would take without it; under many, a miss "
            "also waits behind other misses' pairs:",
            "",
            *_table(PAIR_MODEL_HEADINGS, PAIR_MODEL_ALIGN, paired),
        ]
    opened = open_rows(scale)
    if opened:
        lines += [
            "",
            "Open loop: requests due on a fixed schedule (Poisson arrivals at the rates shown, "
            "under the closed loop's throughput above), each timed from when it was due, so a "
            "stall counts against every request due during it. Hits and misses are sent each "
            "alone, then both at once (hits + misses on connections of their own), as a server "
            "meets them: a hit may then arrive while misses are being scored. Last, after the "
            "memory reading below, hits alone once more, as many as the series before share "
            "between them. The hits' p99.9 target is judged on those and on the hits sent at "
            "once with misses, by the p99.9 and by its 95% interval (order statistics, whatever "
            "the distribution: replays/quantiles.py). A p99.9 over n requests is about the "
            "n/1,000-th slowest of them, and has no upper bound until n reaches 3,688: with "
            "fewer, the interval can show the target missed, but not met:",
            "",
            *_table(OPEN_HEADINGS, OPEN_ALIGN, opened),
        ]
    return [
        *lines,
        "",
        *_table(SIZE_HEADINGS, SIZE_ALIGN, size_rows(scale)),
        "",
        *_table(target_headings(scale), "l" + "r" * len(scale["results"]), target_rows(scale)),
    ]


def _p50_p99(figures: dict[str, Any]) -> str:
    return f"{figures['p50']:.2f} / {figures['p99']:.2f} ms"


def _backend_lines(benchmarks: dict[str, dict[str, Any]]) -> list[str]:
    """SQLite beside PostgreSQL: the gate on each, and one SQLite replica against several on
    one PostgreSQL (bench_backends.py, bench_replicas.py)."""
    lines: list[str] = []
    backends = benchmarks.get("backends")
    if backends is not None:
        rows = [
            [
                f"{r['claims']:,}",
                *(_p50_p99(r["query_first_ms"][side]) for side in ("sqlite", "postgresql")),
                *(f"{r['import_seconds'][side]:.1f} s" for side in ("sqlite", "postgresql")),
                f"{r['decisions_differing']} of {r['queries']:,}",
            ]
            for r in backends.get("results", [])
        ]
        lines += [
            "",
            "SQLite beside PostgreSQL, the same claims and queries in the same run "
            "(`benchmarks/bench_backends.py`, ledgers/bench-backends.json):",
            "",
            *_table(
                ["claims", "SQLite query_first p50 / p99", "PostgreSQL query_first p50 / p99",
                 "SQLite import", "PostgreSQL import", "decisions differing"],
                "rrrrrr",
                rows,
            ),
        ]  # fmt: skip
    replicas = benchmarks.get("replicas")
    if replicas is not None:
        setups = [
            ("one replica on SQLite", replicas["sqlite_one_replica"]),
            (
                f"{replicas['postgresql_replicas']['replicas']} replicas on one PostgreSQL",
                replicas["postgresql_replicas"],
            ),
        ]
        rows = [
            [
                label,
                f"{r['claim_hit']['p50_ms']:.2f} / {r['claim_hit']['p99_ms']:.2f} ms",
                f"{r['claim_hits_per_second']:,.0f}",
                f"{r['miss_overhead_p50_ms']:.2f} ms",
                f"{r['crowd']['receipts']} of {r['crowd']['clients']}",
            ]
            for label, r in setups
        ]
        lines += [
            "",
            "Replicas (`benchmarks/bench_replicas.py`, ledgers/bench-replicas.json; clients, "
            "replicas, the fake upstream and PostgreSQL share this machine's cores):",
            "",
            *_table(
                ["setup", "claim hit p50 / p99", "claim hits per second",
                 "miss overhead p50", "receipts of concurrent clients"],
                "lrrrr",
                rows,
            ),
        ]  # fmt: skip
    session = benchmarks.get("long-session")
    if session is not None:
        lines += [
            "",
            f"Long session (`benchmarks/bench_long_session.py`, "
            f"ledgers/bench-long-session.json): building a miss's working set at turn "
            f"{session['measured_turn']} of a long session on {session['backend']} took "
            f"p50 {session['p50_ms']:.1f} ms, p99 {session['p99_ms']:.1f} ms "
            f"({session['builds']} builds).",
        ]
        at_scale = session.get("vault_at_scale") or []
        if at_scale:
            sizes = "; ".join(
                f"{size['messages']:,} messages: p50 {size['p50_ms']:.1f} ms, p99 "
                f"{size['p99_ms']:.1f} ms, the old message "
                f"{'found' if size['finds_the_old_message'] else 'not found'}"
                for size in at_scale
            )
            lines[-1] += (
                " The vault alone, in one session whose newer messages each hold a common word "
                f"of the turn and one old message its rare words, searched: {sizes}."
            )
    return lines


def results_markdown(
    ledgers: Ledgers,
    *,
    figures: Sequence[tuple[str, Path]] = (),
    base: Path = Path("."),
) -> str:
    """Return the results section for these ledgers; `figures` are (title, PNG) pairs to show.

    Paths in the text are relative to `base`, the folder of the file the section goes into.
    """
    lines = [
        "## Results",
        "",
        f"Generated by `staffstore report` from the ledgers in `{_shown(ledgers.folder, base)}/`;"
        " every figure below is read from them. Rates are shares of all turns (replays) or of"
        " all queries (pairs).",
    ]
    if ledgers.replays:
        lines += ["", "### Replays", "", *_replays_table(ledgers)]
        workday = ledgers.replays.get("workday")
        if workday is not None and len(workday.summaries) > 1:
            lines += [
                "",
                "F is the novel fraction: the share of workday turns that no stored claim can "
                "answer. One day is played at each F.",
            ]
    hostile = ledgers.replays.get("hostile")
    if hostile is not None and hostile.categories:
        lines += ["", "### Hostile replay by category", "", *_hostile_table(hostile)]
    for jobs in ledgers.jobs.values():
        lines += [
            "", "### Jobs replay", "", *_jobs_tables(jobs), "",
            "Each request's gold label says whether it must reuse a finished job, attach to an "
            "unfinished one, launch, or end lost (its worker was killed); a reuse is a job "
            "avoided.",
        ]  # fmt: skip
    for wakeups in ledgers.wakeups.values():
        headings = [heading for heading, _ in WAKEUPS_COLUMNS]
        cap = wakeups.summary.section_cap_bytes
        lines += [
            "", "### Wakeups replay (working state)", "",
            *_table(headings, "l" + "r" * (len(headings) - 1), [wakeups_row(wakeups)]), "",
            "An agent woken for a morning plan, a patrol every 3 minutes and two reviews a day "
            "sets, changes and clears its rules through working state; each wake-up's prompt is "
            "checked against the replay's own record of every rule at that minute. The section "
            f"is capped at {cap:,} bytes. The last column counts the prompts that would have "
            "carried a superseded value had they read the last notes instead.",
        ]  # fmt: skip
    for memory in ledgers.memory.values():
        lines += [
            "", "### Workflow-runs replay (scoped state and run memory)", "",
            *_table(STEP_HEADINGS, "ll" + "r" * (len(STEP_HEADINGS) - 2), step_rows(memory)),
            "", *_table(RUN_HEADINGS, "l" + "r" * (len(RUN_HEADINGS) - 1), [run_row(memory)]),
            "", explanation(memory),
        ]  # fmt: skip
    for session in ledgers.sessions.values():
        lines += [
            "", "### Long-session replay (story, vault, rungs, budgets)", "",
            *_table(SESSION_HEADINGS, "l" + "r" * (len(SESSION_HEADINGS) - 1),
                    [session_row(session)]),
            "", session_explanation(session),
        ]  # fmt: skip
    for reuse in ledgers.paraphrase.values():
        headers, budget_rows = paraphrase_budget_table(reuse)
        lines += [
            "", "### Kept-paraphrase replay (reuse of paid answers)", "",
            *_table(PARAPHRASE_HEADINGS, "l" + "r" * (len(PARAPHRASE_HEADINGS) - 1),
                    [paraphrase_row(reuse)]),
            "", paraphrase_explanation(reuse), "",
            "Paraphrase recall (served own kept answer / paraphrases) / false hits (/ turns) by "
            "split and error budget, from the same ledger:", "",
            *_table(headers, "l" + "r" * (len(headers) - 1), budget_rows),
        ]  # fmt: skip
    if ledgers.pairs:
        lines += [
            "",
            "### Pair evaluations",
            "",
            *_pairs_table(ledgers),
            "",
            "Shared: every `a` in one store. Isolated: each pair alone. Strict counts every hit "
            "on another pair's `a` as false, including identical-text hits (the same words as "
            "the query). Each row is at its ledger's first error budget (the default unless "
            "`replay pairs --gate-budget` chose another); the gate card has every budget.",
        ]
    if ledgers.benchmarks:
        try:
            speed = _speed_lines(ledgers.benchmarks)
        except (KeyError, TypeError, ValueError) as error:
            raise InputError(f"a benchmark ledger lacks a figure: {error}") from None
        lines += ["", "### Speed", "", *speed]
    if figures:
        lines += ["", "### Charts", ""]
        lines += [f"![{title}]({_shown(path, base)})" for title, path in figures]
    return "\n".join(lines) + "\n"


def splice_results(
    text: str, section: str, start: str = START, end: str = END, before: str | None = None
) -> str:
    """Put `section` between the `start` and `end` markers of `text`. Missing markers are
    added: before the marker `before` when the text has it, else at the end."""
    block = f"{start}\n{section.strip()}\n{end}"
    starts, ends = text.count(start), text.count(end)
    if starts == ends == 0:
        if before is not None and text.count(before) == 1:
            at = text.find(before)
            return f"{text[:at]}{block}\n\n{text[at:]}"
        return f"{text.rstrip()}\n\n{block}\n" if text.strip() else f"{block}\n"
    first, last = text.find(start), text.find(end)
    if starts != 1 or ends != 1 or last < first:
        raise InputError(f"the markers are damaged: want one {start} before one {end}")
    return text[:first] + block + text[last + len(end) :]


def update_readme(readme: Path, section: str, card: str | None = None) -> bool:
    """Splice `section` (and the gate `card`, before it) into the README file; return whether
    its text changed."""
    try:
        text = readme.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"no README at {readme}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {readme}: {error}") from None
    try:
        updated = splice_results(text, section)
        if card is not None:
            updated = splice_results(updated, card, CARD_START, CARD_END, before=START)
    except InputError as error:
        raise InputError(f"{readme}: {error}") from None
    if updated == text:
        return False
    readme.write_text(updated, encoding="utf-8")
    return True
