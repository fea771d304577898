"""WorkflowMemory: what one workflow remembers between runs, and the section a step reads.

    memory = WorkflowMemory(store, "acme", "triage", project="acme-api")
    async with memory.run({"ticket": "T-1"}, secrets=[webhook_token]) as run:
        run.step("fetch", "done", output="42 tickets")
        await run.remember("the cache lives in /var/cache/app", step="triage")
    section = await memory.section(step="triage")   # bounded, newest first

A run that leaves the `async with` normally ends `done`; by an exception, `failed` (the error
scrubbed into its outcome); cancelled, `cancelled`. `for_step(step)` is what
build_working_set's `memory=` takes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from ..errors import InputError
from ..models import utcnow
from ..state.checks import check_owner
from ..state.scoped import DEFAULT_PROJECT, check_part
from ..state.secrets import Scrubber, cut_text
from ..store import StaffStore
from ..store.memory_tables import (
    DigestRow,
    LessonRow,
    MemorySettingsRow,
    MemoryTables,
    RunRow,
    WorkflowSet,
)
from .config import DEFAULTS, EffectiveMemory, MemoryConfig, check_config, covered
from .digest import LINE_CHARS, ChatFn, as_items, call_for_digest, digest_prompt, within_cap
from .models import DigestWrite, Lesson, MemorySection, MemoryView
from .records import (
    check_step_name,
    check_text,
    digest,
    digest_entry,
    lesson,
    lesson_entry,
    new_id,
    run_entry,
    storable,
    stored_text,
)
from .runs import Run, fold_past_retain, open_run, settings_of
from .section import TokenCounter, four_chars_a_token, render_memory_section

Clock = Callable[[], datetime]


class WorkflowMemory:
    """One owner's workflow: its runs, lessons, digest, settings and memory section.

    `scrubber` decides what is a secret (default: Scrubber.from_env()); `clock` pins the time
    (tests, replays); `count` counts a section's tokens (four characters a token by default,
    or a tokenizer's count).
    """

    def __init__(
        self,
        store: StaffStore,
        owner: str,
        workflow: str,
        *,
        project: str = DEFAULT_PROJECT,
        scrubber: Scrubber | None = None,
        clock: Clock = utcnow,
        count: TokenCounter = four_chars_a_token,
    ) -> None:
        self.store = store
        self.owner = check_owner(owner)
        self.project = check_part(project, "a project name")
        self.workflow = check_part(workflow, "a workflow name")
        self.scrubber = scrubber if scrubber is not None else Scrubber.from_env()
        self.clock = clock
        self.count = count

    @property
    def name(self) -> tuple[str, str]:
        return (self.project, self.workflow)

    def __repr__(self) -> str:
        return f"WorkflowMemory({self.owner!r}, {self.project}/{self.workflow})"

    # -- settings ----------------------------------------------------------------------------

    async def settings(self, step: str | None = None) -> EffectiveMemory:
        """The settings in force for the workflow, or for `step` of it."""
        if step is not None:
            check_step_name(step)
        return await settings_of(self.store, self.owner, self.name, step)

    async def configure(
        self,
        *,
        step: str | None = None,
        enabled: bool | None = None,
        budget: int | None = None,
        retain: int | None = None,
        include: Iterable[str] | None = None,
        digest_chars: int | None = None,
        reset: bool = False,
    ) -> EffectiveMemory:
        """Change the workflow's settings (or a step's): each field given replaces the stored
        one, the others stay; `reset` first forgets every stored field of that level."""
        if step is not None:
            check_step_name(step)
        given = MemoryConfig(
            enabled=enabled, budget=budget, retain=retain,
            include=None if include is None else tuple(include), digest_chars=digest_chars,
        )  # fmt: skip
        given = check_config(given, step=step is not None, project=self.project)
        level = step or ""
        now = self.clock().timestamp()

        def write(sync: MemoryTables) -> None:
            stored = {row.step: row for row in sync.memory_settings(self.owner, self.name)}
            old = None if reset else stored.get(level)

            def pick(name: str) -> Any:
                value = getattr(given, name)
                return value if value is not None else getattr(old, name, None)

            include_value = pick("include")
            sync.put_memory_settings(
                self.owner, self.name,
                MemorySettingsRow(
                    level, pick("enabled"), pick("budget"), pick("retain"),
                    None if include_value is None else list(include_value), pick("digest_chars"),
                    now,
                ),
            )  # fmt: skip

        await self.store.memory_transaction(write)
        return await self.settings(step)

    # -- runs --------------------------------------------------------------------------------

    async def start_run(self, given: Any = None, *, secrets: Iterable[str] = ()) -> Run:
        """Open a run: stored as running with what it was asked (scrubbed of `secrets` too)."""
        scrubber = self.scrubber.with_values(secrets)
        row = await open_run(
            self.store, self.owner, self.name, given, scrubber, self.clock().timestamp()
        )
        return Run(self.store, self.owner, row, scrubber, self.clock)

    @asynccontextmanager
    async def run(self, given: Any = None, *, secrets: Iterable[str] = ()) -> AsyncIterator[Run]:
        """A run that ends with the block: done, failed (an exception) or cancelled."""
        handle = await self.start_run(given, secrets=secrets)
        try:
            yield handle
        except asyncio.CancelledError:
            if handle.finished is None:
                await asyncio.shield(handle.finish("cancelled", outcome="cancelled"))
            raise
        except Exception as error:
            if handle.finished is None:
                await handle.finish("failed", outcome=f"{type(error).__name__}: {error}")
            raise
        if handle.finished is None:
            await handle.finish("done")

    # -- lessons and entries -----------------------------------------------------------------

    async def add(self, text: str, *, secrets: Iterable[str] = ()) -> Lesson:
        """A lesson written by hand; the next run's steps read it like a remembered one."""
        scrubber = self.scrubber.with_values(secrets)
        body = stored_text(check_text(text, "a lesson"), scrubber, DEFAULTS.lesson_chars)
        now = self.clock().timestamp()
        row = LessonRow(
            new_id("lsn"), self.project, self.workflow, None, None, "hand", body, now, now
        )
        await self.store.memory_transaction(lambda sync: sync.put_lesson(self.owner, row))
        return lesson(row)

    async def view(self) -> MemoryView:
        """Every entry of this workflow (lessons, run records, running runs, the digest),
        newest first, with the counts."""
        own = WorkflowSet((self.name,))
        limit = DEFAULTS.read_limit

        def read(sync: MemoryTables) -> MemoryView:
            lessons = sync.lessons(self.owner, own, limit=limit)
            finished = sync.finished_runs(self.owner, own, limit=limit)
            running = sync.running_runs(self.owner, self.name, limit=limit)
            found = sync.digest(self.owner, self.name)
            entries = [lesson_entry(row) for row in lessons]
            entries += [run_entry(row) for row in [*running, *finished]]
            if found is not None:
                entries.append(digest_entry(found))
            entries.sort(key=lambda entry: (entry.at, entry.id), reverse=True)
            done, active = sync.run_counts(self.owner, self.name)
            return MemoryView(
                project=self.project, workflow=self.workflow, entries=entries,
                lessons=sync.lesson_count(self.owner, own), runs=done, running=active,
                runs_folded=found.runs_folded if found is not None else 0,
            )  # fmt: skip

        return await self.store.memory_read(read)

    async def forget(self) -> int:
        """Delete every run record, lesson and the digest of this workflow (its settings
        stay); return how many entries went. Nothing of them is left in the file."""
        gone = await self.store.memory_transaction(
            lambda sync: sync.forget_workflow(self.owner, self.name)
        )
        await self.store.truncate_wal()
        return gone

    # -- the section -------------------------------------------------------------------------

    async def section(
        self,
        step: str | None = None,
        *,
        max_tokens: int | None = None,
        count: TokenCounter | None = None,
    ) -> MemorySection:
        """The section a step's prompt carries: lessons, then recent runs, newest first, then
        the digest, within the budget in force (and `max_tokens`, when smaller)."""
        settings = await self.settings(step)
        budget = settings.budget if max_tokens is None else min(settings.budget, max_tokens)
        if not settings.enabled:
            return MemorySection(text="", tokens=0, budget=budget, enabled=False)
        workflows = covered(settings)
        limit = DEFAULTS.read_limit

        def read(
            sync: MemoryTables,
        ) -> tuple[list[LessonRow], list[RunRow], DigestRow | None, int, int]:
            lessons = sync.lessons(self.owner, workflows, limit=limit)
            runs = sync.finished_runs(self.owner, workflows, limit=limit)
            lessons_total = len(lessons)
            if lessons_total == limit:  # past the read limit, count the rest without reading
                lessons_total = sync.lesson_count(self.owner, workflows)
            runs_total = len(runs)
            if runs_total == limit:
                runs_total = sync.finished_run_count(self.owner, workflows)
            return lessons, runs, sync.digest(self.owner, self.name), lessons_total, runs_total

        lessons, runs, found, lessons_total, runs_total = await self.store.memory_read(read)
        return render_memory_section(
            self.name, lessons, runs, found, budget=budget, count=count or self.count,
            lessons_total=lessons_total, runs_total=runs_total,
        )  # fmt: skip

    def for_step(self, step: str | None = None) -> StepMemory:
        """This workflow's memory as one step reads it: what build_working_set's `memory=`
        takes."""
        if step is not None:
            check_step_name(step)
        return StepMemory(self, step)

    # -- the digest --------------------------------------------------------------------------

    async def fold(self) -> int:
        """Fold the records past `retain` into the digest now (a lowered `retain` otherwise
        applies at the next run's end); return how many folded."""
        settings = await self.settings()
        now = self.clock().timestamp()
        return await self.store.memory_transaction(
            lambda sync: fold_past_retain(sync, self.owner, settings, now)
        )

    async def rewrite_digest(self, chat: ChatFn, *, model: str | None = None) -> DigestWrite:
        """Have a model rewrite the digest, once, as an explicit paid call with its receipt
        (reason `memory_digest`). The extractive digest stays when the call fails."""
        settings = await self.settings()
        current = await self.store.memory_read(lambda sync: sync.digest(self.owner, self.name))
        if current is None:
            raise InputError(
                f"{self.project}/{self.workflow} has no digest yet: runs fold into it once "
                f"more than retain ({settings.retain}) records are kept"
            )
        started = self.clock()
        label = f"{self.project}/{self.workflow}"
        text, receipt = await call_for_digest(
            chat, digest_prompt(label, current, settings.digest_chars), owner=self.owner,
            label=label, model=model, scrubber=self.scrubber, started=started,
        )  # fmt: skip
        if text is None or not text.strip():
            await self.store.add_receipt(receipt)
            return DigestWrite(written=False, receipt=receipt)
        lines = [cut_text(storable(line), LINE_CHARS) for line in as_items(text)]
        rewritten = replace(
            current, written_by="model", receipt_id=receipt.id, updated_at=started.timestamp()
        )
        updated = within_cap(rewritten, lines, settings.digest_chars)

        def write(sync: MemoryTables) -> None:
            sync.put_digest(self.owner, updated)

        await self.store.add_receipt(receipt)
        await self.store.memory_transaction(write)
        return DigestWrite(written=True, digest=digest(updated), receipt=receipt)


class StepMemory:
    """One step's view of a workflow's memory, as build_working_set reads it."""

    def __init__(self, memory: WorkflowMemory, step: str | None) -> None:
        self.memory = memory
        self.step = step

    async def prompt_section(self, max_tokens: int, count: TokenCounter) -> str:
        """The section's text within `max_tokens` ("" when off or empty)."""
        found = await self.memory.section(self.step, max_tokens=max_tokens, count=count)
        return found.text
