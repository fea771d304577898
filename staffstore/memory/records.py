"""Stored rows as the values memory hands back, and text made fit to store.

Every text bound for the store passes `stored_text`: scrubbed of secrets first, then made
storable (no NUL, which PostgreSQL refuses; no lone surrogate, which no UTF-8 can hold), then
cut at its cap, in that order, so a cut never leaves part of a secret.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..errors import InputError
from ..identity import canonical_json
from ..state.checks import check_actor, check_name
from ..state.secrets import Scrubber, cut_text
from ..store.memory_tables import DigestRow, LessonRow, RunRow
from ..store.rows import datetime_at, datetime_of
from .models import Digest, HumanDecision, Lesson, MemoryEntry, RunRecord, RunStep
from .section import digest_text, record_text


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def storable(text: str) -> str:
    """`text` as both backends can hold it: NUL shown as U+FFFD, lone surrogates as '?'."""
    text = text.replace("\x00", "\ufffd")
    return text.encode("utf-8", "replace").decode("utf-8")


def stored_text(text: str, scrubber: Scrubber, max_chars: int) -> str:
    """Scrub, then make storable, then cut: the one path of every stored text."""
    return cut_text(storable(scrubber.scrub(text)), max_chars)


def input_text(value: Any, scrubber: Scrubber, max_chars: int) -> str:
    """What a run was asked, as stored: text as it is, anything else as canonical JSON, each
    string in it scrubbed before it is written out (so no JSON escape hides a secret)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return stored_text(value, scrubber, max_chars)
    return stored_text(canonical_json(scrubber.scrub_data(value)), scrubber, max_chars)


def check_text(text: str, what: str) -> str:
    """A lesson or an edit: a non-blank string."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{what} must not be blank")
    return text.strip()


def check_step_name(name: str) -> str:
    return check_name(name, "a step name", 64)


def check_decision(by: str, decision: str) -> tuple[str, str]:
    return check_actor(by), check_name(" ".join(decision.split()), "a decision", 64)


def run_record(row: RunRow) -> RunRecord:
    return RunRecord(
        id=row.id, project=row.project, workflow=row.workflow, status=row.status,  # type: ignore[arg-type]
        input=row.input, outcome=row.outcome,
        steps=[RunStep.model_validate(step) for step in row.steps],
        decisions=[HumanDecision.model_validate(item) for item in row.decisions],
        started_at=datetime_at(row.started_at), finished_at=datetime_of(row.finished_at),
    )  # fmt: skip


def lesson(row: LessonRow) -> Lesson:
    return Lesson(
        id=row.id, project=row.project, workflow=row.workflow, body=row.body,
        source=row.source, run_id=row.run_id, step=row.step,  # type: ignore[arg-type]
        created_at=datetime_at(row.created_at), updated_at=datetime_at(row.updated_at),
    )  # fmt: skip


def digest(row: DigestRow) -> Digest:
    return Digest(
        id=row.id, project=row.project, workflow=row.workflow, text=digest_text(row),
        runs_folded=row.runs_folded, runs_done=row.runs_done, runs_failed=row.runs_failed,
        runs_cancelled=row.runs_cancelled, first_at=datetime_of(row.first_at),
        last_at=datetime_of(row.last_at), written_by=row.written_by,  # type: ignore[arg-type]
        receipt_id=row.receipt_id, updated_at=datetime_at(row.updated_at),
    )  # fmt: skip


def lesson_entry(row: LessonRow) -> MemoryEntry:
    return MemoryEntry(
        kind="lesson", id=row.id, project=row.project, workflow=row.workflow, text=row.body,
        at=datetime_at(row.created_at), source=row.source, run_id=row.run_id,
    )  # fmt: skip


def run_entry(row: RunRow) -> MemoryEntry:
    at = row.finished_at if row.finished_at is not None else row.started_at
    return MemoryEntry(
        kind="run", id=row.id, project=row.project, workflow=row.workflow,
        text=record_text(row), at=datetime_at(at), status=row.status,  # type: ignore[arg-type]
    )  # fmt: skip


def digest_entry(row: DigestRow) -> MemoryEntry:
    at = row.last_at if row.last_at is not None else row.updated_at
    return MemoryEntry(
        kind="digest", id=row.id, project=row.project, workflow=row.workflow,
        text=digest_text(row), at=datetime_at(at), source=row.written_by,
    )  # fmt: skip
