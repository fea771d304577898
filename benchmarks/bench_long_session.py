"""How long does building a miss's working set take at turn 300 of a long session?

Plays the long-session replay's sessions (staffstore/replays/long_session.py, seed 7) on a
temporary SQLite store and, at the measured turn, builds the working set `--builds` times
(a main agent's budgets: story, vault hits, handles, tail). Results go to
ledgers/bench-long-session.json: p50 and p99 in milliseconds, with the machine they ran on.

    .venv/bin/python benchmarks/bench_long_session.py [--builds 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

from staffstore.replays.long_session import MEASURED_TURN, play_session, replies, sessions
from staffstore.store import StaffStore

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
    return {
        "name": "bench-long-session",
        "backend": "sqlite",
        "measured_turn": MEASURED_TURN,
        "builds": len(timings),
        "p50_ms": _percentile(timings, 0.50),
        "p99_ms": _percentile(timings, 0.99),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
    }  # fmt: skip


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
