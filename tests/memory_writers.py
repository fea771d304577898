"""Writers for the workflow-memory concurrency test, each run in a process of its own (no
tests here). Every round starts at a barrier shared by the writers, so their runs end together.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from staffstore.memory import WorkflowMemory
from staffstore.state import Scrubber
from staffstore.store import StaffStore


async def _runs(db: Path, who: str, rounds: int, barrier: Any) -> list[str]:
    ended = []
    async with StaffStore.open(db) as store:
        memory = WorkflowMemory(store, "acme", "triage", scrubber=Scrubber())
        for n in range(rounds):
            run = await memory.start_run({"who": who, "n": n})
            run.step("fetch", "done", output=f"{who} {n}")
            barrier.wait()
            finished = await run.finish("done", outcome=f"{who} {n}")
            assert finished.recorded
            ended.append(run.id)
    return ended


def run_writer(db: str, who: str, rounds: int, barrier: Any, out: Any) -> None:
    """A process's work: end `rounds` runs at the barrier, put (who, run ids) on `out`."""
    out.put((who, asyncio.run(_runs(Path(db), who, rounds, barrier))))
