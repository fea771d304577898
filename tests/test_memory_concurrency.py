"""Runs of one workflow ending at once in separate processes: every record is kept or folded
exactly once, and the raw records never pass `retain` (a real SQLite file, real processes)."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path
from typing import Any

from memory_writers import run_writer

from staffstore.memory import WorkflowMemory
from staffstore.state import Scrubber
from staffstore.store import StaffStore

ROUNDS = 15
WRITERS = ("a", "b", "c")
RETAIN = 4


async def _prepare(db: Path) -> None:
    async with StaffStore.open(db) as store:
        await WorkflowMemory(store, "acme", "triage", scrubber=Scrubber()).configure(
            retain=RETAIN, digest_chars=20_000
        )


async def _read(db: Path) -> Any:
    async with StaffStore.open(db) as store:
        return await WorkflowMemory(store, "acme", "triage", scrubber=Scrubber()).view()


def test_runs_ending_together_are_each_kept_or_folded_once(tmp_path: Path) -> None:
    db = tmp_path / "race.db"
    asyncio.run(_prepare(db))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(WRITERS))
    out = context.Queue()
    processes = [
        context.Process(target=run_writer, args=(str(db), who, ROUNDS, barrier, out))
        for who in WRITERS
    ]
    for process in processes:
        process.start()
    ended = dict(out.get(timeout=120) for _ in processes)
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    view = asyncio.run(_read(db))
    total = len(WRITERS) * ROUNDS
    assert sum(len(ids) for ids in ended.values()) == total
    assert (view.runs, view.running, view.runs_folded) == (RETAIN, 0, total - RETAIN)
    (digest,) = [entry for entry in view.entries if entry.kind == "digest"]
    assert digest.text.startswith(f"{total - RETAIN} earlier runs folded")
    # Each folded run has exactly one line, and the kept ones none.
    kept = {entry.id for entry in view.entries if entry.kind == "run"}
    lines = digest.text.splitlines()[1:]
    assert len(lines) == total - RETAIN
    shown = {line.split()[2] for line in lines}
    every = {run_id.removeprefix("run_")[:8] for ids in ended.values() for run_id in ids}
    assert shown | {run_id.removeprefix("run_")[:8] for run_id in kept} == every
