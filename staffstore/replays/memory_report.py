"""The workflow-runs replay's ledger as the report and the CLI read it: its model and its rows.

Two tables: one row per step (what its memory section carried, against its budget), and one
row for the runs as a whole (secrets found, scoped reads that fell back, records kept and
folded). report.py puts them in the results section; `staffstore replay` prints them.
"""

from __future__ import annotations

from pydantic import BaseModel

#: Replays whose ledgers count a workflow's runs and its memory (WorkflowRunsLedger).
MEMORY_REPLAYS = frozenset({"workflow-runs"})
#: The steps whose sections the ledger judges, in the order shown.
STEPS = ("triage", "notify")


class StepMemorySummary(BaseModel):
    budget: int
    runs_with_every_lesson: int
    runs_cut_newest_first: int
    lesson_order_violations: int
    dropped_without_cut_marker: int
    foreign_lessons_shown: int
    sections_over_budget: int
    lessons_carried_total: int
    lessons_expected_total: int
    section_tokens_max: int
    section_tokens_mean: float


class WorkflowRunsSummary(BaseModel):
    runs: int
    by_status: dict[str, int]
    lessons_recorded: int
    remember_refused_at_a_step_with_memory_off: int
    triage: StepMemorySummary
    notify: StepMemorySummary
    secrets_planted: int
    secrets_found: int
    scoped_reads: int
    fallbacks: int
    other_owner_values: int
    retain: int
    raw_records_max: int
    runs_folded: int
    digest_chars_max: int
    digest_chars_cap: int


class WorkflowRunsLedger(BaseModel):
    name: str
    seed: int
    quick: bool
    summary: WorkflowRunsSummary


#: The columns of the per-step table and of the whole-run table: (heading in the report, the
#: ledger field it shows, which the command line prints as its heading).
STEP_COLUMNS = (
    ("replay", "name"), ("step", "step"), ("runs", "runs"),
    ("every earlier lesson carried", "runs_with_every_lesson"),
    ("cut, newest first", "runs_cut_newest_first"),
    ("order violations", "lesson_order_violations"),
    ("left out unmarked", "dropped_without_cut_marker"),
    ("other workflows' lessons", "foreign_lessons_shown"),
    ("section tokens (mean / max)", "section_tokens_mean"), ("budget", "budget"),
    ("over budget", "sections_over_budget"),
)  # fmt: skip
RUN_COLUMNS = (
    ("replay", "name"), ("runs (done / failed / cancelled)", "runs"),
    ("lessons recorded", "lessons_recorded"), ("secrets planted", "secrets_planted"),
    ("secrets found", "secrets_found"), ("scoped reads", "scoped_reads"),
    ("fell back", "fallbacks"), ("another owner's value", "other_owner_values"),
    ("raw records (max / retain)", "raw_records_max"), ("runs folded", "runs_folded"),
    ("digest chars (max / cap)", "digest_chars_max"),
)  # fmt: skip
STEP_HEADINGS = tuple(heading for heading, _ in STEP_COLUMNS)
RUN_HEADINGS = tuple(heading for heading, _ in RUN_COLUMNS)
STEP_FIELDS = tuple(name.upper() for _, name in STEP_COLUMNS)
RUN_FIELDS = tuple(name.upper() for _, name in RUN_COLUMNS)


def _label(ledger: WorkflowRunsLedger) -> str:
    return ledger.name + (" (quick)" if ledger.quick else "")


def step_rows(ledger: WorkflowRunsLedger) -> list[list[str]]:
    """One row a step, in STEP_HEADINGS order."""
    s = ledger.summary
    rows = []
    for step in STEPS:
        m: StepMemorySummary = getattr(s, step)
        rows.append([
            _label(ledger), step, str(s.runs), f"{m.runs_with_every_lesson}/{s.runs}",
            str(m.runs_cut_newest_first), str(m.lesson_order_violations),
            str(m.dropped_without_cut_marker), str(m.foreign_lessons_shown),
            f"{m.section_tokens_mean:.0f} / {m.section_tokens_max}", str(m.budget),
            str(m.sections_over_budget),
        ])  # fmt: skip
    return rows


def run_row(ledger: WorkflowRunsLedger) -> list[str]:
    """The whole-run row, in RUN_HEADINGS order."""
    s = ledger.summary
    ends = " / ".join(str(s.by_status.get(end, 0)) for end in ("done", "failed", "cancelled"))
    return [
        _label(ledger), f"{s.runs} ({ends})", str(s.lessons_recorded), str(s.secrets_planted),
        str(s.secrets_found), str(s.scoped_reads), str(s.fallbacks), str(s.other_owner_values),
        f"{s.raw_records_max} / {s.retain}", str(s.runs_folded),
        f"{s.digest_chars_max:,} / {s.digest_chars_cap:,}",
    ]  # fmt: skip


def explanation(ledger: WorkflowRunsLedger) -> str:
    """The paragraph under the tables: what was played and what each figure means."""
    s = ledger.summary
    return (
        f"An hourly triage workflow of three steps plays {s.runs} runs with its memory on: "
        "runs fail and succeed, every third one remembers a lesson, and outputs, errors and "
        "lessons carry planted secrets (a password from an environment variable named in the "
        "configuration, a token each run marks as secret, API keys by their shape). The triage "
        "step's prompt is built by build_working_set with the step's memory section (its "
        "workflow's lessons and an included workflow's, then recent runs, newest first); the "
        f"notify step reads a narrowed one (budget {s.notify.budget} tokens, no included "
        "workflow). Each section is checked against the replay's own record of every lesson: "
        "a row carries every earlier lesson while they fit, else the newest in order and a cut "
        "marker. Secrets are counted in the database file and its WAL after every run; a "
        "scoped read falls back when it returns a value its own namespace does not hold. "
        f"Past retain ({s.retain}) records, the oldest runs fold into one extractive digest."
    )
