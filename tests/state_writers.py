"""Writers for the state concurrency tests, each run in a process of its own (no tests here).

Every round starts at a barrier shared by the writers, so their writes meet in the database.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from staffstore.state import AgentState, Scope, WorkingState
from staffstore.store import StaffStore

KEY = b"concurrency-scope-key-0123456789"
SCOPE = Scope(kind="task", id="task-1")


async def _expected_value(db: Path, who: str, rounds: int, barrier: Any) -> list[Any]:
    results = []
    async with StaffStore.open(db) as store:
        state = WorkingState(store, "acme", "trader")
        for n in range(rounds):
            barrier.wait()
            written = await state.set(
                "stop_loss", f"r{n + 1}", f"round {n} by {who}", expected_value=f"r{n}", by=who
            )
            results.append((n, written.written, written.reason, written.value))
    return results


async def _if_version(db: Path, who: str, rounds: int, barrier: Any) -> list[Any]:
    results = []
    async with StaffStore.open(db) as store:
        states = AgentState(store, "acme", scope_key=KEY)
        for n in range(rounds):
            barrier.wait()
            written = await states.put(
                "worker", SCOPE, {"step": n + 1, "by": who}, mode="cas", if_version=n
            )
            results.append((n, written.stored, written.reason, written.version))
    return results


async def _merge(db: Path, who: str, rounds: int, barrier: Any) -> list[Any]:
    results = []
    async with StaffStore.open(db) as store:
        states = AgentState(store, "acme", scope_key=KEY)
        for n in range(rounds):
            barrier.wait()
            written = await states.put("worker", SCOPE, {who: n})
            results.append((n, written.stored, written.reason, written.version))
    return results


WRITERS = {"expected_value": _expected_value, "if_version": _if_version, "merge": _merge}


def run_writer(kind: str, db: str, who: str, rounds: int, barrier: Any, out: Any) -> None:
    """A process's work: play `rounds` rounds of `kind`, put (who, results) on `out`."""
    out.put((who, asyncio.run(WRITERS[kind](Path(db), who, rounds, barrier))))
