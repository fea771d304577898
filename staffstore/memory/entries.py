"""One owner's memory entries by id: show, edit, forget; and runs finished by id.

An id names its kind: `lsn_...` a lesson, `run_...` a run record, `dig_...` a workflow's
digest. Every lookup is the owner's own, so another owner's id is not found, whoever asks. An
edit replaces a lesson's or the digest's text in place, scrubbed like every write; a run record
is not edited (it is what happened): forget it, or add a lesson that corrects it. A forgotten or
edited text leaves no copy of itself in the database file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from ..errors import InputError, NotFoundError
from ..models import utcnow
from ..state.checks import check_owner, shown
from ..state.secrets import Scrubber
from ..store import StaffStore
from ..store.memory_tables import MemoryTables
from .config import DEFAULTS
from .digest import as_items, within_cap
from .models import HumanDecision, MemoryEntry, Remembered, RunFinish, RunRecord, RunStep
from .records import (
    check_text,
    digest_entry,
    lesson_entry,
    run_entry,
    run_record,
    stored_text,
)
from .runs import finish_run, read_run, remember, settings_of
from .workflow import WorkflowMemory

Clock = Callable[[], datetime]


def _missing(entry_id: str) -> NotFoundError:
    return NotFoundError(f"no memory entry {shown(entry_id)}")


class MemoryEntries:
    """`MemoryEntries(store, "acme")`: one owner's entries and runs, by id."""

    def __init__(
        self,
        store: StaffStore,
        owner: str,
        *,
        scrubber: Scrubber | None = None,
        clock: Clock = utcnow,
    ) -> None:
        self.store = store
        self.owner = check_owner(owner)
        self.scrubber = scrubber if scrubber is not None else Scrubber.from_env()
        self.clock = clock

    async def get(self, entry_id: str) -> MemoryEntry:
        """One lesson, run record or digest of the owner's, or NotFoundError."""

        def read(sync: MemoryTables) -> MemoryEntry | None:
            if entry_id.startswith("lsn_"):
                found = sync.lesson(self.owner, entry_id)
                return lesson_entry(found) if found is not None else None
            if entry_id.startswith("run_"):
                run = sync.workflow_run(self.owner, entry_id)
                return run_entry(run) if run is not None else None
            if entry_id.startswith("dig_"):
                digest = sync.digest_by_id(self.owner, entry_id)
                return digest_entry(digest) if digest is not None else None
            return None

        entry = await self.store.memory_read(read)
        if entry is None:
            raise _missing(entry_id)
        return entry

    async def edit(self, entry_id: str, text: str, *, secrets: Iterable[str] = ()) -> MemoryEntry:
        """Replace a lesson's or the digest's text in place (scrubbed, then cut)."""
        text = check_text(text, "the new text")
        scrubber = self.scrubber.with_values(secrets)
        now = self.clock().timestamp()
        if entry_id.startswith("run_"):
            await self.get(entry_id)  # another owner's run is not found, not "not editable"
            raise InputError(
                "a run record is not edited (it is what happened): forget it, or add a "
                "lesson that corrects it"
            )
        limit = DEFAULTS.lesson_chars
        if entry_id.startswith("dig_"):
            found = await self.get(entry_id)
            settings = await settings_of(self.store, self.owner, (found.project, found.workflow))
            limit = settings.digest_chars
        body = stored_text(text, scrubber, limit)

        def write(sync: MemoryTables) -> MemoryEntry | None:
            if entry_id.startswith("lsn_"):
                lesson = sync.lesson(self.owner, entry_id)
                if lesson is None:
                    return None
                changed = replace(lesson, body=body, updated_at=now)
                sync.put_lesson(self.owner, changed)
                return lesson_entry(changed)
            if entry_id.startswith("dig_"):
                digest = sync.digest_by_id(self.owner, entry_id)
                if digest is None:
                    return None
                edited = within_cap(
                    replace(digest, written_by="hand", receipt_id=None, updated_at=now),
                    as_items(body), limit,
                )  # fmt: skip
                sync.put_digest(self.owner, edited)
                return digest_entry(edited)
            return None

        entry = await self.store.memory_transaction(write)
        if entry is None:
            raise _missing(entry_id)
        await self.store.truncate_wal()
        return entry

    async def forget(self, entry_id: str) -> MemoryEntry:
        """Delete one lesson, run record or digest; return what it was."""
        entry = await self.get(entry_id)

        def write(sync: MemoryTables) -> int:
            if entry.kind == "lesson":
                return sync.delete_lesson(self.owner, entry_id)
            if entry.kind == "run":
                return sync.delete_runs(self.owner, [entry_id])
            return sync.delete_digest(self.owner, entry_id)

        if not await self.store.memory_transaction(write):
            raise _missing(entry_id)
        await self.store.truncate_wal()
        return entry

    # -- runs by id (the command line and HTTP, which hold no Run handle) ----------------------

    async def start(
        self, workflow: str, project: str, given: object = None, *, secrets: Iterable[str] = ()
    ) -> RunRecord:
        """Open a run of `project/workflow` (see WorkflowMemory.start_run)."""
        memory = WorkflowMemory(
            self.store, self.owner, workflow, project=project, scrubber=self.scrubber,
            clock=self.clock,
        )  # fmt: skip
        run = await memory.start_run(given, secrets=secrets)
        return run_record(await read_run(self.store, self.owner, run.id))

    async def finish(
        self,
        run_id: str,
        status: str,
        *,
        outcome: str | None = None,
        steps: Sequence[RunStep] = (),
        decisions: Sequence[HumanDecision] = (),
        secrets: Iterable[str] = (),
    ) -> RunFinish:
        """End a run by its id and keep its record (see runs.finish_run)."""
        return await finish_run(
            self.store, self.owner, run_id, status, outcome=outcome, steps=steps,
            decisions=decisions, scrubber=self.scrubber.with_values(secrets),
            now=self.clock().timestamp(),
        )  # fmt: skip

    async def remember(
        self, run_id: str, text: str, *, step: str | None = None, secrets: Iterable[str] = ()
    ) -> Remembered:
        """Record a lesson during the run `run_id` (see runs.remember)."""
        return await remember(
            self.store, self.owner, run_id, text, step=step,
            scrubber=self.scrubber.with_values(secrets), now=self.clock().timestamp(),
        )  # fmt: skip
