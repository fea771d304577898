"""SQLite beside PostgreSQL, same machine, same run: import time and query_first latency.

Fills a fresh SQLite file and a fresh PostgreSQL database (a throwaway durable server, as
staffstore.testing.postgres starts it) with the same N synthetic claims through the import
path the CLI uses, then times query_first on the same mix of paraphrased hits and misses on
each, in turns of 500 queries so a slow moment of the machine falls on both alike. Also
checks that both made the same decision for every query. Results go to
ledgers/bench-backends.json. Run: `.venv/bin/python benchmarks/bench_backends.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from staffstore.gate import query_first, warm_up
from staffstore.models import Turn
from staffstore.store import StaffStore
from staffstore.store.importer import read_claims, store_claims
from staffstore.testing.postgres import ThrowawayPostgres, find_postgres_bin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_store import _summary, make_claims, make_queries

ROOT = Path(__file__).resolve().parent.parent
ROUND = 500


async def fill(where: str | Path, source: Path) -> float:
    started = time.perf_counter()
    with read_claims(source) as parsed:
        async with StaffStore.open(where, migrate=True) as store:
            await store_claims(store, parsed)
    return time.perf_counter() - started


async def bench(
    count: int, samples: int, seed: int, server: ThrowawayPostgres
) -> dict[str, object]:
    claims = make_claims(count, seed)
    queries = make_queries([claim["question"] for claim in claims], samples, seed)
    with tempfile.TemporaryDirectory(prefix="staffstore-bench-backends-") as scratch:
        source = Path(scratch) / "claims.jsonl"
        source.write_text("".join(json.dumps(c) + "\n" for c in claims), encoding="utf-8")
        places: dict[str, str | Path] = {
            "sqlite": Path(scratch) / "bench.db",
            "postgresql": server.create_database(f"bench_{count}"),
        }
        imports = {name: await fill(where, source) for name, where in places.items()}
        stores = {name: await StaffStore.connect(where) for name, where in places.items()}
        timings: dict[str, list[float]] = {name: [] for name in stores}
        decisions: dict[str, list[tuple[str, str, str | None]]] = {name: [] for name in stores}
        try:
            for store in stores.values():  # warm caches, connections and the normaliser
                for text in queries[:200]:
                    await query_first(store, Turn(owner="bench", text=text))
            gc.collect()
            gc.freeze()
            for start in range(0, len(queries), ROUND):
                for name, store in stores.items():
                    for text in queries[start : start + ROUND]:
                        began = time.perf_counter()
                        decision = await query_first(store, Turn(owner="bench", text=text))
                        timings[name].append((time.perf_counter() - began) * 1000.0)
                        decisions[name].append(
                            (decision.outcome, decision.reason, decision.claim_id)
                        )
            gc.unfreeze()
        finally:
            for store in stores.values():
                await store.close()
    differing = sum(
        a != b for a, b in zip(decisions["sqlite"], decisions["postgresql"], strict=True)
    )
    return {
        "claims": count,
        "queries": len(queries),
        "import_seconds": {name: round(seconds, 2) for name, seconds in imports.items()},
        "query_first_ms": {name: _summary(values) for name, values in timings.items()},
        "decisions_differing": differing,
    }


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--samples", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=ROOT / "ledgers" / "bench-backends.json")
    parser.add_argument(
        "--require",
        action="store_true",
        help="fail (exit 1) when PostgreSQL is missing or the backends disagree (CI)",
    )
    args = parser.parse_args()
    if find_postgres_bin() is None:
        if args.require:
            print("error: bench_backends: no PostgreSQL server binaries found", file=sys.stderr)
            return 1
        print("bench_backends: skipped (no PostgreSQL server binaries found)")
        return 0
    warm_up()
    results = []
    with ThrowawayPostgres(durable=True) as server:
        for size in (int(s) for s in args.sizes.split(",")):
            result = await bench(size, args.samples, args.seed, server)
            results.append(result)
            lines = result["query_first_ms"]
            print(
                f"{size:>7} claims: "
                + " | ".join(
                    f"{name} query_first p50 {t['p50']:.3f} ms p99 {t['p99']:.3f} ms"
                    for name, t in lines.items()  # type: ignore[attr-defined]
                )
                + f" | imports {result['import_seconds']}"
                + f" | decisions differing {result['decisions_differing']}"
            )
    report = {
        "benchmark": "backends",
        "command": "python benchmarks/bench_backends.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "postgresql": "PostgreSQL 15, throwaway durable server on 127.0.0.1, same machine",
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    differing = sum(int(result["decisions_differing"]) for result in results)  # type: ignore[call-overload]
    if args.require and differing:
        print(f"error: bench_backends: {differing} decisions differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
