"""run_replay: play one named replay on a temporary store and write its spec and ledger.

Each replay is an async function of (work directory, seed, quick) returning the two documents;
the runner gives it a temporary directory for its SQLite files, so a replay never touches a
real store, and writes `<name>-spec.json` and `<name>-ledger.json` into `out_dir`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..models import Progress
from . import (
    hostile,
    jobs,
    kept_paraphrase,
    long_session,
    single,
    wakeups,
    workday,
    workflow_runs,
)
from .harness import ReplayOutput, StoreFor, write_json

ReplayFn = Callable[[Path, int, bool, StoreFor | None], Awaitable[ReplayOutput]]

REPLAYS: dict[str, ReplayFn] = {
    "single": single.play,
    "workday": workday.play,
    "hostile": hostile.play,
    "jobs": jobs.play,
    "wakeups": wakeups.play,
    "workflow-runs": workflow_runs.play,
    "long-session": long_session.play,
    "kept-paraphrase": kept_paraphrase.play,
}


async def run_replay(
    name: str,
    out_dir: Path,
    *,
    seed: int = 7,
    quick: bool = False,
    store_for: StoreFor | None = None,
) -> dict[str, Any]:
    """Play the replay called `name`, write its spec and ledger into `out_dir`, return the ledger.

    `quick` plays a shortened script (fewer turns), for tests and smoke runs; `store_for`
    places the replay's stores (default: SQLite files in a temporary directory).
    """
    try:
        replay = REPLAYS[name]
    except KeyError:
        known = ", ".join(sorted(REPLAYS))
        raise InputError(f"unknown replay {name!r} (known: {known})") from None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"staffstore-replay-{name}-") as workdir:
        output = await replay(Path(workdir), seed, quick, store_for)
    write_json(out_dir / f"{name}-spec.json", output.spec)
    write_json(out_dir / f"{name}-ledger.json", output.ledger)
    return output.ledger


async def run_all(
    out_dir: Path, seed: int = 7, *, quick: bool = False, progress: Progress | None = None
) -> dict[str, dict[str, Any]]:
    """Play every replay in order; return their ledgers by name. `progress` is told the
    replays played before each one starts and when all are played."""
    ledgers: dict[str, dict[str, Any]] = {}
    for name in REPLAYS:
        if progress is not None:
            progress(len(ledgers), len(REPLAYS))
        ledgers[name] = await run_replay(name, out_dir, seed=seed, quick=quick)
    if progress is not None:
        progress(len(ledgers), len(REPLAYS))
    return ledgers
