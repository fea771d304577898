"""The store's side of scoped state and workflow memory: their tables, rows and transactions.

Scoped state is one row per key in one of four namespaces (step, workflow, project, global),
always looked up by the whole of its namespace: no query here ever widens a scope, so a key
never falls back to another namespace's value. Workflow memory is three tables: run records,
lessons, and one rolling digest per workflow that older runs fold into, plus the memory settings
of workflows and their steps. The rules (scrubbing, truncation, retention, narrowing) live in
staffstore.state.scoped and staffstore.memory; here each read is one query and each write runs
inside `memory_transaction`, one write transaction that the rules layer fills with the reads and
writes it needs. Writers are serialized on both backends (database.py), so a read-then-write in
one transaction (a cap, a fold of the oldest runs) stays true until it commits.

Every memory transaction is an erasing one: a lesson forgotten or edited, or a run folded into
the digest, leaves no copy of its text in the database's pages (see state_tables.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from ..identity import canonical_json
from .database import Database
from .rows import count_where, upsert

T = TypeVar("T")

#: PostgreSQL's text column compares bytewise, as SQLite's BINARY does (migrations_postgres).
_PG_T = 'TEXT COLLATE "C"'
_PG_TIME = "DOUBLE PRECISION"


def _schema(text: str, time: str, integer: str, norowid: str) -> list[str]:
    """The step's statements for one dialect: its text, epoch and integer types, and SQLite's
    WITHOUT ROWID where PostgreSQL has nothing to say."""
    return [
        statement.replace("{T}", text)
        .replace("{TIME}", time)
        .replace("{INT}", integer)
        .replace("{NOROWID}", norowid)
        for statement in _STATEMENTS
    ]


# Written once for both dialects: {T} is a text column, {TIME} an epoch, {INT} an integer
# (64-bit on both), {NOROWID} SQLite's WITHOUT ROWID where a table is only ever reached by its
# key.
_STATEMENTS = [
    # Scoped state: unused parts of a namespace are '' (never NULL: a key holding NULL would
    # never conflict with itself, and an upsert would add a second row).
    """
    CREATE TABLE scoped_state (
        owner {T} NOT NULL,
        scope {T} NOT NULL CHECK (scope IN ('step', 'workflow', 'project', 'global')),
        project {T} NOT NULL,
        workflow {T} NOT NULL,
        step {T} NOT NULL,
        key {T} NOT NULL,
        value {T} NOT NULL,
        set_by {T} NOT NULL,
        set_at {TIME} NOT NULL,
        PRIMARY KEY (owner, scope, project, workflow, step, key)
    ){NOROWID}
    """,
    # A run's record: opened as 'running', finished once as done, failed or cancelled. Every
    # text in it was scrubbed of secrets, then cut, before it got here.
    """
    CREATE TABLE workflow_runs (
        id {T} PRIMARY KEY,
        owner {T} NOT NULL,
        project {T} NOT NULL,
        workflow {T} NOT NULL,
        status {T} NOT NULL CHECK (status IN ('running', 'done', 'failed', 'cancelled')),
        input {T} NOT NULL,
        outcome {T},
        steps {T} NOT NULL,
        decisions {T} NOT NULL,
        started_at {TIME} NOT NULL,
        finished_at {TIME}
    )
    """,
    "CREATE INDEX workflow_runs_by_workflow ON workflow_runs "
    "(owner, project, workflow, status, finished_at)",
    """
    CREATE TABLE workflow_lessons (
        id {T} PRIMARY KEY,
        owner {T} NOT NULL,
        project {T} NOT NULL,
        workflow {T} NOT NULL,
        run_id {T},
        step {T},
        source {T} NOT NULL CHECK (source IN ('remember', 'hand')),
        body {T} NOT NULL,
        created_at {TIME} NOT NULL,
        updated_at {TIME} NOT NULL
    )
    """,
    "CREATE INDEX workflow_lessons_by_workflow ON workflow_lessons "
    "(owner, project, workflow, created_at)",
    # One rolling digest per workflow: the runs folded out of the raw records, as lines.
    """
    CREATE TABLE workflow_digests (
        id {T} PRIMARY KEY,
        owner {T} NOT NULL,
        project {T} NOT NULL,
        workflow {T} NOT NULL,
        body {T} NOT NULL,
        runs_folded {INT} NOT NULL,
        runs_done {INT} NOT NULL,
        runs_failed {INT} NOT NULL,
        runs_cancelled {INT} NOT NULL,
        first_at {TIME},
        last_at {TIME},
        written_by {T} NOT NULL CHECK (written_by IN ('extractive', 'model', 'hand')),
        receipt_id {T},
        updated_at {TIME} NOT NULL,
        UNIQUE (owner, project, workflow)
    )
    """,
    # Memory settings: a workflow's (step '') and its steps', each field NULL when not set.
    """
    CREATE TABLE workflow_memory_settings (
        owner {T} NOT NULL,
        project {T} NOT NULL,
        workflow {T} NOT NULL,
        step {T} NOT NULL,
        enabled {INT},
        budget {INT},
        retain {INT},
        include {T},
        digest_chars {INT},
        updated_at {TIME} NOT NULL,
        PRIMARY KEY (owner, project, workflow, step)
    ){NOROWID}
    """,
]

#: The step appended to migrations.MIGRATIONS (SQLite) and migrations_postgres.MIGRATIONS.
MIGRATION: list[str] = _schema("TEXT", "REAL", "INTEGER", " WITHOUT ROWID")
POSTGRES_MIGRATION: list[str] = _schema(_PG_T, _PG_TIME, "BIGINT", "")


# -- rows --------------------------------------------------------------------------------------

#: Where a scoped key lives: (scope, project, workflow, step), unused parts ''.
ScopedPlace = tuple[str, str, str, str]
#: A workflow: (project, workflow).
WorkflowName = tuple[str, str]


@dataclass(frozen=True)
class ScopedRow:
    """One key of scoped state as stored (times are epoch seconds)."""

    key: str
    value: str
    set_by: str
    set_at: float


@dataclass(frozen=True)
class RunRow:
    """One run's record. `steps` and `decisions` are lists of plain dicts."""

    id: str
    project: str
    workflow: str
    status: str
    input: str
    outcome: str | None
    steps: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    started_at: float
    finished_at: float | None = None


@dataclass(frozen=True)
class LessonRow:
    """One lesson: remembered by a run (`run_id`, `step`) or written by hand."""

    id: str
    project: str
    workflow: str
    run_id: str | None
    step: str | None
    source: str
    body: str
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class DigestRow:
    """A workflow's rolling digest: its lines, and how many runs of each end it folded."""

    id: str
    project: str
    workflow: str
    body: str
    runs_folded: int
    runs_done: int
    runs_failed: int
    runs_cancelled: int
    first_at: float | None
    last_at: float | None
    written_by: str
    receipt_id: str | None
    updated_at: float


@dataclass(frozen=True)
class MemorySettingsRow:
    """Memory settings of a workflow (step '') or one of its steps; None where not set."""

    step: str
    enabled: bool | None
    budget: int | None
    retain: int | None
    include: list[str] | None
    digest_chars: int | None
    updated_at: float


_RUN_COLUMNS = (
    "id, project, workflow, status, input, outcome, steps, decisions, started_at, finished_at"
)
_LESSON_COLUMNS = "id, project, workflow, run_id, step, source, body, created_at, updated_at"
_DIGEST_COLUMNS = (
    "id, project, workflow, body, runs_folded, runs_done, runs_failed, runs_cancelled, "
    "first_at, last_at, written_by, receipt_id, updated_at"
)
_SETTINGS_COLUMNS = "step, enabled, budget, retain, include, digest_chars, updated_at"


def _names(columns: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in columns.split(","))


_UPSERT_SCOPED = upsert(
    "scoped_state",
    ("owner", "scope", "project", "workflow", "step", "key", "value", "set_by", "set_at"),
    ("owner", "scope", "project", "workflow", "step", "key"),
)
_UPSERT_DIGEST = upsert(
    "workflow_digests", ("owner", *_names(_DIGEST_COLUMNS)), ("owner", "project", "workflow")
)
_UPSERT_SETTINGS = upsert(
    "workflow_memory_settings",
    ("owner", "project", "workflow", *_names(_SETTINGS_COLUMNS)),
    ("owner", "project", "workflow", "step"),
)
_SCOPE_WHERE = "owner = ? AND scope = ? AND project = ? AND workflow = ? AND step = ?"


def _run(row: Sequence[Any]) -> RunRow:
    id_, project, workflow, status, input_, outcome, steps, decisions, started, finished = row
    return RunRow(
        str(id_), str(project), str(workflow), str(status), str(input_), outcome,
        json.loads(steps), json.loads(decisions), float(started),
        None if finished is None else float(finished),
    )  # fmt: skip


def _lesson(row: Sequence[Any]) -> LessonRow:
    id_, project, workflow, run_id, step, source, body, created, updated = row
    return LessonRow(
        str(id_), str(project), str(workflow), run_id, step, str(source), str(body),
        float(created), float(updated),
    )  # fmt: skip


def _digest(row: Sequence[Any]) -> DigestRow:
    (id_, project, workflow, body, folded, done, failed, cancelled, first, last, written_by,
     receipt, updated) = row  # fmt: skip
    return DigestRow(
        str(id_), str(project), str(workflow), str(body), int(folded), int(done), int(failed),
        int(cancelled), first, last, str(written_by), receipt, float(updated),
    )  # fmt: skip


def _settings(row: Sequence[Any]) -> MemorySettingsRow:
    step, enabled, budget, retain, include, digest_chars, updated = row
    return MemorySettingsRow(
        str(step), None if enabled is None else bool(enabled), budget, retain,
        None if include is None else list(json.loads(include)), digest_chars, float(updated),
    )  # fmt: skip


@dataclass(frozen=True)
class WorkflowSet:
    """Which workflows a memory read covers: named ones, whole projects, or every workflow
    of the owner (`everything`)."""

    workflows: tuple[WorkflowName, ...] = ()
    projects: tuple[str, ...] = ()
    everything: bool = False

    def where(self) -> tuple[str, list[Any]]:
        """An SQL condition (over `project` and `workflow`) and its parameters."""
        if self.everything:
            return "1 = 1", []
        parts = ["(project = ? AND workflow = ?)" for _ in self.workflows]
        parts += ["project = ?" for _ in self.projects]
        params: list[Any] = [part for pair in self.workflows for part in pair]
        params += list(self.projects)
        return ("(" + " OR ".join(parts) + ")", params) if parts else ("1 = 0", [])


class MemoryTables:
    """SyncStore's scoped-state and workflow-memory methods (run on the store's thread).

    The writes (`put_*`, `delete_*`) are single statements that expect to run inside
    `memory_transaction`; the reads run anywhere.
    """

    db: Database

    def memory_transaction(self, work: Callable[[MemoryTables], T]) -> T:
        """Run `work(self)` in one erasing write transaction and return what it returns."""
        with self._memory_write():
            return work(self)

    @contextmanager
    def _memory_write(self) -> Iterator[None]:
        with self.db.write(erasing=True):
            yield

    # -- scoped state --------------------------------------------------------------------------

    def scoped_values(self, owner: str, place: ScopedPlace) -> list[ScopedRow]:
        """Every key of exactly this namespace, by key."""
        rows = self.db.fetchall(
            f"SELECT key, value, set_by, set_at FROM scoped_state WHERE {_SCOPE_WHERE} "
            "ORDER BY key",
            (owner, *place),
        )
        return [ScopedRow(str(k), str(v), str(by), float(at)) for k, v, by, at in rows]

    def scoped_value(self, owner: str, place: ScopedPlace, key: str) -> ScopedRow | None:
        """One key of exactly this namespace, or None: never another namespace's key."""
        rows = self.db.fetchall(
            f"SELECT key, value, set_by, set_at FROM scoped_state WHERE {_SCOPE_WHERE} AND key = ?",
            (owner, *place, key),
        )
        return ScopedRow(*rows[0]) if rows else None

    def scoped_key_count(self, owner: str, place: ScopedPlace) -> int:
        rows = self.db.fetchall(
            f"SELECT count(*) FROM scoped_state WHERE {_SCOPE_WHERE}", (owner, *place)
        )
        return int(rows[0][0])

    def put_scoped_value(self, owner: str, place: ScopedPlace, row: ScopedRow) -> None:
        self.db.execute(_UPSERT_SCOPED, (owner, *place, row.key, row.value, row.set_by, row.set_at))

    def delete_scoped_value(self, owner: str, place: ScopedPlace, key: str) -> int:
        return self.db.execute(
            f"DELETE FROM scoped_state WHERE {_SCOPE_WHERE} AND key = ?", (owner, *place, key)
        )

    # -- runs ----------------------------------------------------------------------------------

    def workflow_run(self, owner: str, run_id: str) -> RunRow | None:
        rows = self.db.fetchall(
            f"SELECT {_RUN_COLUMNS} FROM workflow_runs WHERE owner = ? AND id = ?",
            (owner, run_id),
        )
        return _run(rows[0]) if rows else None

    def finished_runs(
        self, owner: str, workflows: WorkflowSet, *, limit: int, oldest_first: bool = False
    ) -> list[RunRow]:
        """Finished runs of these workflows, newest first (or oldest first), at most `limit`."""
        where, params = workflows.where()
        order = "ASC" if oldest_first else "DESC"
        rows = self.db.fetchall(
            f"SELECT {_RUN_COLUMNS} FROM workflow_runs WHERE owner = ? AND {where} "
            f"AND status <> 'running' ORDER BY finished_at {order}, id {order} LIMIT ?",
            (owner, *params, limit),
        )
        return [_run(row) for row in rows]

    def finished_run_count(self, owner: str, workflows: WorkflowSet) -> int:
        where, params = workflows.where()
        rows = self.db.fetchall(
            f"SELECT count(*) FROM workflow_runs WHERE owner = ? AND {where} "
            "AND status <> 'running'",
            (owner, *params),
        )
        return int(rows[0][0])

    def running_runs(self, owner: str, workflow: WorkflowName, *, limit: int) -> list[RunRow]:
        rows = self.db.fetchall(
            f"SELECT {_RUN_COLUMNS} FROM workflow_runs WHERE owner = ? AND project = ? "
            "AND workflow = ? AND status = 'running' ORDER BY started_at DESC, id DESC LIMIT ?",
            (owner, *workflow, limit),
        )
        return [_run(row) for row in rows]

    def run_counts(self, owner: str, workflow: WorkflowName) -> tuple[int, int]:
        """(finished runs, running runs) of one workflow."""
        finished, running = count_where("status <> 'running'"), count_where("status = 'running'")
        rows = self.db.fetchall(
            f"SELECT {finished}, {running} FROM workflow_runs "
            "WHERE owner = ? AND project = ? AND workflow = ?",
            (owner, *workflow),
        )
        return int(rows[0][0]), int(rows[0][1])

    def put_run(self, owner: str, row: RunRow) -> None:
        """Insert a run, or replace its record (the same id, as a finish does)."""
        self.db.execute(
            upsert("workflow_runs", ("owner", *_names(_RUN_COLUMNS)), ("id",)),
            (owner, row.id, row.project, row.workflow, row.status, row.input, row.outcome,
             canonical_json(row.steps), canonical_json(row.decisions), row.started_at,
             row.finished_at),
        )  # fmt: skip

    def delete_runs(self, owner: str, run_ids: Sequence[str]) -> int:
        if not run_ids:
            return 0
        marks = ", ".join("?" for _ in run_ids)
        return self.db.execute(
            f"DELETE FROM workflow_runs WHERE owner = ? AND id IN ({marks})", (owner, *run_ids)
        )

    # -- lessons -------------------------------------------------------------------------------

    def lesson(self, owner: str, lesson_id: str) -> LessonRow | None:
        rows = self.db.fetchall(
            f"SELECT {_LESSON_COLUMNS} FROM workflow_lessons WHERE owner = ? AND id = ?",
            (owner, lesson_id),
        )
        return _lesson(rows[0]) if rows else None

    def lessons(self, owner: str, workflows: WorkflowSet, *, limit: int) -> list[LessonRow]:
        """Lessons of these workflows, newest first, at most `limit`."""
        where, params = workflows.where()
        rows = self.db.fetchall(
            f"SELECT {_LESSON_COLUMNS} FROM workflow_lessons WHERE owner = ? AND {where} "
            "ORDER BY created_at DESC, id DESC LIMIT ?",
            (owner, *params, limit),
        )
        return [_lesson(row) for row in rows]

    def lesson_count(self, owner: str, workflows: WorkflowSet) -> int:
        where, params = workflows.where()
        rows = self.db.fetchall(
            f"SELECT count(*) FROM workflow_lessons WHERE owner = ? AND {where}", (owner, *params)
        )
        return int(rows[0][0])

    def put_lesson(self, owner: str, row: LessonRow) -> None:
        """Insert a lesson, or replace its text (the same id, as an edit does)."""
        self.db.execute(
            upsert("workflow_lessons", ("owner", *_names(_LESSON_COLUMNS)), ("id",)),
            (owner, row.id, row.project, row.workflow, row.run_id, row.step, row.source,
             row.body, row.created_at, row.updated_at),
        )  # fmt: skip

    def delete_lesson(self, owner: str, lesson_id: str) -> int:
        return self.db.execute(
            "DELETE FROM workflow_lessons WHERE owner = ? AND id = ?", (owner, lesson_id)
        )

    # -- digests -------------------------------------------------------------------------------

    def digest(self, owner: str, workflow: WorkflowName) -> DigestRow | None:
        rows = self.db.fetchall(
            f"SELECT {_DIGEST_COLUMNS} FROM workflow_digests WHERE owner = ? AND project = ? "
            "AND workflow = ?",
            (owner, *workflow),
        )
        return _digest(rows[0]) if rows else None

    def digest_by_id(self, owner: str, digest_id: str) -> DigestRow | None:
        rows = self.db.fetchall(
            f"SELECT {_DIGEST_COLUMNS} FROM workflow_digests WHERE owner = ? AND id = ?",
            (owner, digest_id),
        )
        return _digest(rows[0]) if rows else None

    def put_digest(self, owner: str, row: DigestRow) -> None:
        self.db.execute(
            _UPSERT_DIGEST,
            (owner, row.id, row.project, row.workflow, row.body, row.runs_folded, row.runs_done,
             row.runs_failed, row.runs_cancelled, row.first_at, row.last_at, row.written_by,
             row.receipt_id, row.updated_at),
        )  # fmt: skip

    def delete_digest(self, owner: str, digest_id: str) -> int:
        return self.db.execute(
            "DELETE FROM workflow_digests WHERE owner = ? AND id = ?", (owner, digest_id)
        )

    def forget_workflow(self, owner: str, workflow: WorkflowName) -> int:
        """Delete every run record, lesson and digest of one workflow; return how many."""
        gone = 0
        for table in ("workflow_runs", "workflow_lessons", "workflow_digests"):
            gone += self.db.execute(
                f"DELETE FROM {table} WHERE owner = ? AND project = ? AND workflow = ?",
                (owner, *workflow),
            )
        return gone

    # -- settings ------------------------------------------------------------------------------

    def memory_settings(self, owner: str, workflow: WorkflowName) -> list[MemorySettingsRow]:
        """The workflow's settings row (step '') and its steps' rows, by step."""
        rows = self.db.fetchall(
            f"SELECT {_SETTINGS_COLUMNS} FROM workflow_memory_settings WHERE owner = ? "
            "AND project = ? AND workflow = ? ORDER BY step",
            (owner, *workflow),
        )
        return [_settings(row) for row in rows]

    def put_memory_settings(
        self, owner: str, workflow: WorkflowName, row: MemorySettingsRow
    ) -> None:
        self.db.execute(
            _UPSERT_SETTINGS,
            (owner, *workflow, row.step, None if row.enabled is None else int(row.enabled),
             row.budget, row.retain, None if row.include is None else canonical_json(row.include),
             row.digest_chars, row.updated_at),
        )  # fmt: skip

    def delete_memory_settings(self, owner: str, workflow: WorkflowName, step: str) -> int:
        return self.db.execute(
            "DELETE FROM workflow_memory_settings WHERE owner = ? AND project = ? "
            "AND workflow = ? AND step = ?",
            (owner, *workflow, step),
        )


class AsyncMemoryTables:
    """StaffStore's async face of MemoryTables: each call is one trip to the store's thread."""

    async def run_sync(self, work: Callable[[Any], T]) -> T:  # provided by StaffStore
        raise NotImplementedError

    async def memory_transaction(self, work: Callable[[MemoryTables], T]) -> T:
        """See MemoryTables.memory_transaction: `work` runs inside one write transaction, on
        the store's thread, so it must not wait on anything but the database."""
        return await self.run_sync(lambda sync: sync.memory_transaction(work))

    async def memory_read(self, work: Callable[[MemoryTables], T]) -> T:
        """Run several reads of MemoryTables in one trip to the store's thread."""
        return await self.run_sync(work)
