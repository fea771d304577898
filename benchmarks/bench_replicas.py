"""Two proxy replicas on one PostgreSQL store beside one proxy on SQLite, same machine.

Each setup serves the same 200 claims in front of the same fake upstream (its own process):
one `staffstore serve` on a SQLite file, and two on one PostgreSQL database (a throwaway
durable server on 127.0.0.1). For each: claim-hit latency (sequential, p50 / p99; on two
replicas the requests alternate between them), claim hits per second with 50 concurrent
connections (split across the replicas), and what a miss costs over calling the upstream
directly. Then 200 concurrent clients, each with one request, over the two replicas: every
one must leave its receipt in the store. Results go to ledgers/bench-replicas.json. Run:
`.venv/bin/python benchmarks/bench_replicas.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_proxy import (
    CLIENT_KEY,
    Connection,
    _ask,
    _seed,
    _start,
    _summary,
    latency,
    miss_overhead,
    serve_fake,
    serve_proxy,
    throughput,
)

from staffstore.store import StaffStore
from staffstore.testing.postgres import ThrowawayPostgres, find_postgres_bin

ROOT = Path(__file__).resolve().parent.parent


async def _alternating(ports: list[int], bodies: list[bytes]) -> list[float]:
    """Sequential hits, the requests taking turns between the replicas."""
    times: list[float] = []
    for start in range(0, len(bodies), 50):
        port = ports[(start // 50) % len(ports)]
        times += await latency(port, bodies[start : start + 50], expect="hit")
    return times


async def _spread_throughput(
    ports: list[int], bodies: list[bytes], clients: int, seconds: float
) -> float:
    shares = await asyncio.gather(
        *(throughput(port, bodies, clients // len(ports), seconds) for port in ports)
    )
    return float(sum(shares))


async def _many_clients(ports: list[int], count: int) -> int:
    """`count` clients at once, one request each, spread over the replicas; how many got 200."""

    async def one(number: int) -> int:
        connection = await Connection.open(ports[number % len(ports)])
        try:
            body = _ask(f"client {number} asks about the release train {number % 17}")
            status, _, _ = await connection.post("/v1/chat/completions", body, CLIENT_KEY)
            return 1 if status == 200 else 0
        finally:
            connection.close()

    return sum(await asyncio.gather(*(one(n) for n in range(count))))


async def _receipts(db: str | Path) -> int:
    async with StaffStore.open(db) as store:
        return (await store.ledger("bench")).turns


async def measure(
    db: str | Path, replicas: int, args: argparse.Namespace, logs: Path
) -> dict[str, Any]:
    questions = await _seed(db)
    fake, fake_port = _start(serve_fake)
    upstream = f"http://127.0.0.1:{fake_port}/api/v1"
    servers = [_start(serve_proxy, str(db), upstream, "off", str(logs)) for _ in range(replicas)]
    ports = [port for _process, port in servers]
    try:
        hits = [_ask(q.lower().rstrip("?")) for q in questions]
        for port in ports:
            await latency(port, hits[:100], expect="hit")  # warm each replica
        sequential = await _alternating(ports, [hits[i % len(hits)] for i in range(args.requests)])
        per_second = await _spread_throughput(ports, hits, args.clients, args.seconds)
        misses = await miss_overhead(ports[0], fake_port, args.misses)
        before = await _receipts(db)
        answered = await _many_clients(ports, args.crowd)
        after = await _receipts(db)
    finally:
        for process, _port in [*servers, (fake, fake_port)]:
            process.terminate()
            process.join(5)
    return {
        "replicas": replicas,
        "claim_hit": _summary(sequential),
        "claim_hits_per_second": round(per_second, 1),
        "miss_overhead_p50_ms": round(misses["overhead_p50_ms"], 3),
        "miss_proxy_p99_ms": round(misses["proxy_p99_ms"], 3),
        "crowd": {
            "clients": args.crowd,
            "answered": answered,
            "receipts": after - before,
            "lost_receipts": answered - (after - before),
        },
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    sqlite = await measure(scratch / "bench.db", 1, args, scratch)
    with ThrowawayPostgres(durable=True) as server:
        url = server.create_database("bench")
        postgres = await measure(url, args.replicas, args, scratch)
    return {
        "benchmark": "replicas",
        "command": "python benchmarks/bench_replicas.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "note": "client, replicas, fake upstream and PostgreSQL share the machine's cores",
        "sqlite_one_replica": sqlite,
        "postgresql_replicas": postgres,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--requests", type=int, default=2000, help="sequential hits")
    parser.add_argument("--clients", type=int, default=50, help="concurrent connections")
    parser.add_argument("--seconds", type=float, default=5.0, help="throughput run length")
    parser.add_argument("--misses", type=int, default=200, help="miss pairs to time")
    parser.add_argument("--crowd", type=int, default=200, help="concurrent one-shot clients")
    parser.add_argument("--out", type=Path, default=ROOT / "ledgers" / "bench-replicas.json")
    parser.add_argument(
        "--require",
        action="store_true",
        help="fail (exit 1) when PostgreSQL is missing or the backends disagree (CI)",
    )
    args = parser.parse_args()
    if find_postgres_bin() is None:
        if args.require:
            print("error: bench_replicas: no PostgreSQL server binaries found", file=sys.stderr)
            return 1
        print("bench_replicas: skipped (no PostgreSQL server binaries found)")
        return 0
    result = asyncio.run(run(args))
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    for name in ("sqlite_one_replica", "postgresql_replicas"):
        r = result[name]
        print(
            f"{name}: hit p50 {r['claim_hit']['p50_ms']:.3f} ms p99 {r['claim_hit']['p99_ms']:.3f}"
            f" ms | {r['claim_hits_per_second']:.0f} hits/s | miss overhead"
            f" {r['miss_overhead_p50_ms']:.3f} ms | crowd {r['crowd']}"
        )
    print(f"wrote {args.out}")
    lost = sum(
        result[name]["crowd"]["lost_receipts"]
        for name in ("sqlite_one_replica", "postgresql_replicas")
    )
    if args.require and lost:
        print(f"error: bench_replicas: {lost} receipts lost", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
