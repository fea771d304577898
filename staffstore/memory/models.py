"""The values workflow memory hands back: run records, lessons, the digest, the section.

Every text in them was scrubbed of secrets, then cut, before it was stored. A refusal that
follows from a setting (memory turned off for the workflow or the step) is a value with a
reason, not an exception; a mistake (an unknown run, a finished run finished again, a blank
lesson) is an InputError or a NotFoundError.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from ..models import FrozenModel, Receipt

RunStatus = Literal["running", "done", "failed", "cancelled"]
#: How a run may end.
RunEnd = Literal["done", "failed", "cancelled"]
RUN_ENDS: tuple[RunEnd, ...] = ("done", "failed", "cancelled")
StepStatus = Literal["done", "failed", "cancelled", "skipped"]
STEP_STATUSES: tuple[StepStatus, ...] = ("done", "failed", "cancelled", "skipped")
EntryKind = Literal["lesson", "run", "digest"]


class RunStep(FrozenModel):
    """One step of a run: its status, and its output (or its error), scrubbed and cut."""

    name: str
    status: StepStatus
    output: str | None = None
    error: str | None = None


class HumanDecision(FrozenModel):
    """A decision a person made during a run: who, what and why."""

    by: str
    decision: str
    why: str | None = None
    at: datetime | None = None


class RunRecord(FrozenModel):
    """One run of a workflow: what it was asked, how it ended, each step, every decision."""

    id: str
    project: str
    workflow: str
    status: RunStatus
    input: str
    outcome: str | None = None
    steps: list[RunStep] = Field(default_factory=list)
    decisions: list[HumanDecision] = Field(default_factory=list)
    started_at: datetime
    finished_at: datetime | None = None


class Lesson(FrozenModel):
    """A lesson for later runs of one workflow: remembered by a run, or written by hand."""

    id: str
    project: str
    workflow: str
    body: str
    source: Literal["remember", "hand"]
    run_id: str | None = None
    step: str | None = None
    created_at: datetime
    updated_at: datetime


class Digest(FrozenModel):
    """The runs folded out of a workflow's raw records, as one rolling text within its cap."""

    id: str
    project: str
    workflow: str
    #: The header (how many runs, when, how they ended) and then a line per run, oldest first.
    text: str
    runs_folded: int
    runs_done: int
    runs_failed: int
    runs_cancelled: int
    first_at: datetime | None = None
    last_at: datetime | None = None
    written_by: Literal["extractive", "model", "hand"]
    #: The receipt of the model call that wrote it (a model-written digest only).
    receipt_id: str | None = None
    updated_at: datetime


class MemoryEntry(FrozenModel):
    """One entry of a workflow's memory as `memory ls` and GET /memory/{id} show it."""

    kind: EntryKind
    id: str
    project: str
    workflow: str
    text: str
    at: datetime
    #: A run's status; a lesson's source and run.
    status: RunStatus | None = None
    source: str | None = None
    run_id: str | None = None


class MemoryView(FrozenModel):
    """Everything one workflow remembers: every entry, newest first, and the counts."""

    project: str
    workflow: str
    entries: list[MemoryEntry]
    lessons: int
    runs: int
    running: int
    runs_folded: int


class MemorySection(FrozenModel):
    """The bounded section a step's prompt carries, and what it left out."""

    text: str
    tokens: int
    budget: int
    enabled: bool
    #: Ids of the lessons, runs and digest shown, in the section's order.
    lessons_shown: list[str] = Field(default_factory=list)
    lessons_total: int = 0
    runs_shown: list[str] = Field(default_factory=list)
    runs_total: int = 0
    digest_shown: bool = False
    #: Entries that did not fit the budget (the section ends with a marker that counts them).
    left_out: int = 0


class Remembered(FrozenModel):
    """What `remember` did: `stored` with the lesson, or not, because memory is off for the
    workflow (`memory_off`) or for the step (`step_memory_off`, the tool withheld)."""

    stored: bool
    reason: Literal["stored", "memory_off", "step_memory_off"]
    lesson: Lesson | None = None


class RunFinish(FrozenModel):
    """What finishing a run did: its record kept (`recorded`), or dropped because the
    workflow's memory is off (`memory_off`); and how many old records folded into the digest."""

    recorded: bool
    reason: Literal["recorded", "memory_off"]
    record: RunRecord | None = None
    folded: int = 0


class DigestWrite(FrozenModel):
    """A model-written digest: stored (with the receipt of its call) or not (the call failed,
    and its receipt says how)."""

    written: bool
    digest: Digest | None = None
    receipt: Receipt
