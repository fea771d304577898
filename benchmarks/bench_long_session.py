"""How long does building a miss's working set take at turn 300 of a long session?

Plays the long-session replay's sessions (staffstore/replays/long_session.py, seed 7) on a
temporary SQLite store and, at the measured turn, builds the working set `--builds` times
(a main agent's budgets: story, vault hits, handles, tail). Then the vault alone at scale: one
session of 1,000, 5,000 and 20,000 older messages that each hold a common word of the turn, and
one old message that holds its rare words, searched `--builds` times: how long a lookup takes
and whether it still finds that message. Results go to ledgers/bench-long-session.json: p50 and
p99 in milliseconds, with the machine they ran on.

    .venv/bin/python benchmarks/bench_long_session.py [--builds 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from staffstore.replays.long_session import MEASURED_TURN, play_session, replies, sessions
from staffstore.store import StaffStore
from staffstore.working_set.vault import vault_hits

OUT = Path(__file__).resolve().parent.parent / "ledgers" / "bench-long-session.json"


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 3)


async def measure(builds: int, seed: int = 7) -> dict[str, Any]:
    timings: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        async with StaffStore.open(Path(folder) / "bench.sqlite") as store:
            for number, (name, steps) in enumerate(sessions(seed, quick=False)):
                _, _, times = await play_session(
                    store, name, steps, replies(seed, number), MEASURED_TURN, timed_builds=builds
                )
                timings += times
        at_scale = [await vault_at_scale(Path(folder), size, builds) for size in VAULT_SIZES]
    return {
        "name": "bench-long-session",
        "backend": "sqlite",
        "measured_turn": MEASURED_TURN,
        "builds": len(timings),
        "p50_ms": _percentile(timings, 0.50),
        "p99_ms": _percentile(timings, 0.99),
        "vault_at_scale": at_scale,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
    }  # fmt: skip


#: How many older messages the vault-at-scale sessions hold.
VAULT_SIZES = (1_000, 5_000, 20_000)
#: The turn searched for, the old message that answers it, and the newer messages, each
#: holding one of its common words ("billing", "queue").
VAULT_TURN = "What is the retention period of the billing-events queue?"
VAULT_OLD = "We set the retention period of the billing-events queue to 14 days."
VAULT_NEWER = "Chatter {n}: the {word} numbers looked fine on the dashboard today."


async def vault_at_scale(folder: Path, size: int, lookups: int) -> dict[str, Any]:
    """Time `lookups` vault searches in one session of `size` newer messages behind VAULT_OLD."""
    async with StaffStore.open(folder / f"vault-{size}.sqlite") as store:
        session = await store.ensure_session("bench", f"vault-{size}")
        await store.append_messages(session, [("user", VAULT_OLD)])
        newer = [
            (
                "user" if n % 2 else "assistant",
                VAULT_NEWER.format(n=n, word=("billing", "queue")[n % 2]),
            )
            for n in range(size)
        ]
        await store.append_messages(session, newer)
        times: list[float] = []
        found = False
        for _ in range(lookups):
            began = time.perf_counter()
            hits = await vault_hits(store, session, VAULT_TURN, skip_latest=8)
            times.append((time.perf_counter() - began) * 1000.0)
            found = any("14 days" in hit.handle for hit in hits)
    return {
        "messages": size + 1,
        "lookups": len(times),
        "p50_ms": _percentile(times, 0.50),
        "p99_ms": _percentile(times, 0.99),
        "finds_the_old_message": found,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=100, help="builds timed per session")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    result = asyncio.run(measure(args.builds))
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
