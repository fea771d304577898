"""Runs: opened, given lessons while they run, finished once with their record.

`open_run` stores a run as `running` with what it was asked; `remember` adds a lesson for later
runs of its workflow; `finish_run` writes the record (its end, outcome, each step's status with
its output or error, every human decision) and, in the same transaction, folds the oldest
records past `retain` into the digest. Every text is scrubbed (the scrubber's secrets and the
run's own), then cut, before it reaches the store. The functions take a run's id, so a run can
be opened by one process (or one HTTP call) and finished by another; `Run` is the handle a
Python caller holds, which keeps the run's secrets, steps and decisions in memory until it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from ..errors import InputError, NotFoundError
from ..state.checks import shown
from ..state.secrets import Scrubber
from ..store import StaffStore
from ..store.memory_tables import LessonRow, MemoryTables, RunRow, WorkflowName, WorkflowSet
from .config import DEFAULTS, EffectiveMemory, effective
from .digest import fold
from .models import (
    RUN_ENDS,
    STEP_STATUSES,
    HumanDecision,
    Remembered,
    RunFinish,
    RunStep,
)
from .records import (
    check_decision,
    check_step_name,
    check_text,
    input_text,
    lesson,
    new_id,
    run_record,
    stored_text,
)

Clock = Callable[[], datetime]


async def settings_of(
    store: StaffStore, owner: str, workflow: WorkflowName, step: str | None = None
) -> EffectiveMemory:
    """The memory settings in force for a workflow (or one step of it)."""
    rows = await store.memory_read(lambda sync: sync.memory_settings(owner, workflow))
    return effective(workflow, rows, step)


async def open_run(
    store: StaffStore,
    owner: str,
    workflow: WorkflowName,
    given: Any,
    scrubber: Scrubber,
    now: float,
) -> RunRow:
    """Store a new run of `workflow` as running, with what it was asked (scrubbed, cut)."""
    project, name = workflow
    row = RunRow(
        new_id("run"), project, name, "running", input_text(given, scrubber, DEFAULTS.input_chars),
        None, [], [], now,
    )  # fmt: skip
    await store.memory_transaction(lambda sync: sync.put_run(owner, row))
    return row


def _running(sync: MemoryTables, owner: str, run_id: str) -> RunRow:
    """The run, still running, or NotFoundError (not this owner's) or InputError (ended)."""
    row = sync.workflow_run(owner, run_id)
    if row is None:
        raise NotFoundError(f"no run {shown(run_id)}")
    if row.status != "running":
        raise InputError(f"run {shown(run_id)} has already ended ({row.status})")
    return row


async def read_run(store: StaffStore, owner: str, run_id: str) -> RunRow:
    row = await store.memory_read(lambda sync: sync.workflow_run(owner, run_id))
    if row is None:
        raise NotFoundError(f"no run {shown(run_id)}")
    return row


def scrubbed_steps(steps: Sequence[RunStep], scrubber: Scrubber) -> list[dict[str, Any]]:
    d = DEFAULTS
    kept = []
    for step in steps[: d.max_steps]:
        name = stored_text(check_step_name(step.name), scrubber, 64)
        output = stored_text(step.output, scrubber, d.step_chars) if step.output else None
        error = stored_text(step.error, scrubber, d.step_chars) if step.error else None
        kept.append(RunStep(name=name, status=step.status, output=output, error=error))
    return [step.model_dump(mode="json", exclude_none=True) for step in kept]


def scrubbed_decisions(
    decisions: Sequence[HumanDecision], scrubber: Scrubber
) -> list[dict[str, Any]]:
    d = DEFAULTS
    kept = []
    for item in decisions[: d.max_decisions]:
        by, decision = check_decision(item.by, item.decision)
        kept.append(
            HumanDecision(
                by=stored_text(by, scrubber, 64),
                decision=stored_text(decision, scrubber, 64),
                why=stored_text(item.why, scrubber, d.why_chars) if item.why else None,
                at=item.at,
            )
        )
    return [item.model_dump(mode="json", exclude_none=True) for item in kept]


def fold_past_retain(sync: MemoryTables, owner: str, settings: EffectiveMemory, now: float) -> int:
    """Fold the workflow's oldest finished records past `retain` into its digest; return how
    many folded. Runs inside the caller's transaction."""
    workflow = (settings.project, settings.workflow)
    finished, _ = sync.run_counts(owner, workflow)
    excess = finished - settings.retain
    if excess <= 0:
        return 0
    oldest = sync.finished_runs(owner, WorkflowSet((workflow,)), limit=excess, oldest_first=True)
    digest = fold(
        sync.digest(owner, workflow), oldest, owner=owner, project=workflow[0],
        workflow=workflow[1], max_chars=settings.digest_chars, now=now,
    )  # fmt: skip
    sync.put_digest(owner, digest)
    sync.delete_runs(owner, [run.id for run in oldest])
    return len(oldest)


async def finish_run(
    store: StaffStore,
    owner: str,
    run_id: str,
    status: str,
    *,
    outcome: str | None = None,
    steps: Sequence[RunStep] = (),
    decisions: Sequence[HumanDecision] = (),
    scrubber: Scrubber,
    now: float,
) -> RunFinish:
    """End a running run as done, failed or cancelled and keep its record (nothing, when the
    workflow's memory is off); fold the records past `retain` into the digest."""
    if status not in RUN_ENDS:
        raise InputError(f"a run ends {', '.join(RUN_ENDS)}, not {shown(status)}")
    current = await read_run(store, owner, run_id)
    settings = await settings_of(store, owner, (current.project, current.workflow))
    record = RunRow(
        current.id, current.project, current.workflow, status, current.input,
        stored_text(outcome, scrubber, DEFAULTS.outcome_chars) if outcome else None,
        scrubbed_steps(steps, scrubber), scrubbed_decisions(decisions, scrubber),
        current.started_at, now,
    )  # fmt: skip

    def write(sync: MemoryTables) -> RunFinish:
        _running(sync, owner, run_id)
        if not settings.enabled:
            # This workflow neither records nor loads memory: the run leaves nothing.
            sync.delete_runs(owner, [run_id])
            return RunFinish(recorded=False, reason="memory_off")
        sync.put_run(owner, record)
        folded = fold_past_retain(sync, owner, settings, now)
        return RunFinish(recorded=True, reason="recorded", record=run_record(record), folded=folded)

    return await store.memory_transaction(write)


async def remember(
    store: StaffStore,
    owner: str,
    run_id: str,
    text: str,
    *,
    step: str | None = None,
    scrubber: Scrubber,
    now: float,
) -> Remembered:
    """Record a lesson, during a run, for later runs of that run's workflow only."""
    text = check_text(text, "a lesson")
    if step is not None:
        check_step_name(step)
    current = await read_run(store, owner, run_id)
    workflow = (current.project, current.workflow)
    rows = await store.memory_read(lambda sync: sync.memory_settings(owner, workflow))
    if not effective(workflow, rows).enabled:
        return Remembered(stored=False, reason="memory_off")
    if step is not None and not effective(workflow, rows, step).enabled:
        return Remembered(stored=False, reason="step_memory_off")
    row = LessonRow(
        new_id("lsn"), current.project, current.workflow, run_id, step, "remember",
        stored_text(text, scrubber, DEFAULTS.lesson_chars), now, now,
    )  # fmt: skip

    def write(sync: MemoryTables) -> Remembered:
        _running(sync, owner, run_id)
        sync.put_lesson(owner, row)
        return Remembered(stored=True, reason="stored", lesson=lesson(row))

    return await store.memory_transaction(write)


class Run:
    """A run in progress, as its caller holds it: its secrets, steps and decisions stay here
    (in memory, never stored as they are) until `finish` writes the scrubbed record."""

    def __init__(
        self, store: StaffStore, owner: str, row: RunRow, scrubber: Scrubber, clock: Clock
    ) -> None:
        self.store = store
        self.owner = owner
        self.id = row.id
        self.project = row.project
        self.workflow = row.workflow
        self.scrubber = scrubber
        self.clock = clock
        self.steps: list[RunStep] = []
        self.decisions: list[HumanDecision] = []
        self.finished: RunFinish | None = None

    def __repr__(self) -> str:
        return f"Run({self.id!r}, {self.project}/{self.workflow})"

    def mark_secret(self, *values: str) -> None:
        """Values this run must never let into the store (a token it was handed, ...)."""
        self.scrubber = self.scrubber.with_values(values)

    def step(
        self, name: str, status: str, *, output: str | None = None, error: str | None = None
    ) -> None:
        """Note one step's status and its output (or error), for the record."""
        if status not in STEP_STATUSES:
            raise InputError(f"a step's status is one of {', '.join(STEP_STATUSES)}")
        self.steps.append(
            RunStep.model_validate(
                {"name": check_step_name(name), "status": status, "output": output, "error": error}
            )
        )

    def decide(self, by: str, decision: str, why: str | None = None) -> None:
        """Note a person's decision: who made it, what it was and why."""
        check_decision(by, decision)
        self.decisions.append(HumanDecision(by=by, decision=decision, why=why, at=self.clock()))

    async def remember(self, text: str, *, step: str | None = None) -> Remembered:
        """Record a lesson for later runs of this workflow (see runs.remember)."""
        return await remember(
            self.store, self.owner, self.id, text, step=step, scrubber=self.scrubber,
            now=self.clock().timestamp(),
        )  # fmt: skip

    async def finish(self, status: str, *, outcome: str | None = None) -> RunFinish:
        """End the run (done, failed or cancelled) and write its record."""
        self.finished = await finish_run(
            self.store, self.owner, self.id, status, outcome=outcome, steps=self.steps,
            decisions=self.decisions, scrubber=self.scrubber, now=self.clock().timestamp(),
        )  # fmt: skip
        return self.finished
