"""PostgreSQL driver benchmark: point-select latency from an event loop, per driver.

Starts a throwaway PostgreSQL server with production's durability settings
(ThrowawayPostgres(durable=True)), fills a table of 100,000 rows (id text primary key, owner,
body), and times, for each way the store could reach PostgreSQL from the proxy's event loop:

- (a) one primary-key point select, and
- (b) four dependent point selects, each key read from the row before (the shape of the
  gate's lookup: no statement can be sent before the previous one has answered).

The ways: psycopg 3's sync connection on a worker thread through asyncio.to_thread (one call
per whole sequence, as the store's run_sync does), psycopg 3's AsyncConnection, asyncpg, and a
psycopg_pool ConnectionPool (checkout and query on a worker thread). A sync call made on the
loop's own thread, which would block every other request, is timed too as the floor the
others pay their overhead on top of. Drivers take turns in rounds, so a slow moment of the
machine lands on all of them alike. Results go to ledgers/bench-pg-drivers.json.
Run: `.venv/bin/python benchmarks/bench_pg_drivers.py [--reps 5000]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import os
import platform
import random
import shlex
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import psycopg
from psycopg_pool import ConnectionPool

from staffstore.testing.postgres import ThrowawayPostgres, find_postgres_bin

ROOT = Path(__file__).resolve().parent.parent
SEQUENCE = 4
KEY_CHARS = 32
#: psycopg's placeholder, then asyncpg's: the same statement.
POINT = "SELECT owner, body FROM items WHERE id = %s"
POINT_ASYNCPG = "SELECT owner, body FROM items WHERE id = $1"

#: One lookup: takes a key, returns the row found (owner, body).
Lookup = Callable[[str], Awaitable[Any]]


@dataclass
class Driver:
    """One way to reach the server: a point select and a dependent sequence, both awaitable."""

    name: str
    note: str
    point: Lookup
    sequence: Lookup
    point_ms: list[float] = field(default_factory=list)
    sequence_ms: list[float] = field(default_factory=list)


def make_rows(count: int, seed: int) -> list[tuple[str, str, str]]:
    """Rows whose body starts with another row's id, so each lookup names the next one."""
    rng = random.Random(seed)
    ids = [rng.randbytes(KEY_CHARS // 2).hex() for _ in range(count)]
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod " * 3
    return [
        (key, f"owner-{index % 50}", f"{rng.choice(ids)} {filler[: rng.randint(60, 200)]}")
        for index, key in enumerate(ids)
    ]


def fill(url: str, rows: list[tuple[str, str, str]]) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE TABLE items (id text PRIMARY KEY, owner text, body text)")
        with (
            connection.cursor() as cursor,
            cursor.copy("COPY items (id, owner, body) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)
        connection.execute("VACUUM ANALYZE items")


def next_key(row: Any) -> str:
    body: str = row[1]
    return body[:KEY_CHARS]


async def psycopg_sync_on_thread(url: str) -> tuple[Driver, Callable[[], Awaitable[None]]]:
    connection = psycopg.connect(url, autocommit=True)

    def point(key: str) -> Any:
        return connection.execute(POINT, (key,)).fetchone()

    def sequence(key: str) -> Any:
        row = None
        for _ in range(SEQUENCE):
            row = connection.execute(POINT, (key,)).fetchone()
            key = next_key(row)
        return row

    async def close() -> None:
        connection.close()

    driver = Driver(
        "psycopg_sync_to_thread",
        "psycopg 3 Connection; each lookup (the whole sequence in b) is one asyncio.to_thread",
        lambda key: asyncio.to_thread(point, key),
        lambda key: asyncio.to_thread(sequence, key),
    )
    return driver, close


async def psycopg_sync_on_loop(url: str) -> tuple[Driver, Callable[[], Awaitable[None]]]:
    connection = psycopg.connect(url, autocommit=True)

    async def point(key: str) -> Any:
        return connection.execute(POINT, (key,)).fetchone()

    async def sequence(key: str) -> Any:
        row = None
        for _ in range(SEQUENCE):
            row = connection.execute(POINT, (key,)).fetchone()
            key = next_key(row)
        return row

    async def close() -> None:
        connection.close()

    note = "psycopg 3 Connection called on the loop's thread: blocks the loop (floor, not a choice)"
    return Driver("psycopg_sync_blocking_floor", note, point, sequence), close


async def psycopg_async(url: str) -> tuple[Driver, Callable[[], Awaitable[None]]]:
    connection = await psycopg.AsyncConnection.connect(url, autocommit=True)

    async def point(key: str) -> Any:
        cursor = await connection.execute(POINT, (key,))
        return await cursor.fetchone()

    async def sequence(key: str) -> Any:
        row = None
        for _ in range(SEQUENCE):
            cursor = await connection.execute(POINT, (key,))
            row = await cursor.fetchone()
            key = next_key(row)
        return row

    return Driver("psycopg_async", "psycopg 3 AsyncConnection", point, sequence), connection.close


async def asyncpg_driver(url: str) -> tuple[Driver, Callable[[], Awaitable[None]]]:
    connection = await asyncpg.connect(url)

    async def point(key: str) -> Any:
        return await connection.fetchrow(POINT_ASYNCPG, key)

    async def sequence(key: str) -> Any:
        row = None
        for _ in range(SEQUENCE):
            row = await connection.fetchrow(POINT_ASYNCPG, key)
            key = next_key(row)
        return row

    async def close() -> None:
        await connection.close()

    return Driver("asyncpg", "asyncpg Connection.fetchrow", point, sequence), close


async def psycopg_pool_on_thread(url: str) -> tuple[Driver, Callable[[], Awaitable[None]]]:
    pool = ConnectionPool(url, min_size=2, max_size=2, kwargs={"autocommit": True}, open=False)
    pool.open(wait=True)

    def point(key: str) -> Any:
        with pool.connection() as connection:
            return connection.execute(POINT, (key,)).fetchone()

    def sequence(key: str) -> Any:
        row = None
        with pool.connection() as connection:
            for _ in range(SEQUENCE):
                row = connection.execute(POINT, (key,)).fetchone()
                key = next_key(row)
        return row

    async def close() -> None:
        pool.close()

    driver = Driver(
        "psycopg_pool_to_thread",
        "psycopg_pool ConnectionPool: checkout + query (one checkout per sequence) in to_thread",
        lambda key: asyncio.to_thread(point, key),
        lambda key: asyncio.to_thread(sequence, key),
    )
    return driver, close


async def timed(lookup: Lookup, keys: list[str], into: list[float]) -> None:
    for key in keys:
        began = time.perf_counter()
        row = await lookup(key)
        into.append((time.perf_counter() - began) * 1000.0)
        if row is None:
            raise AssertionError(f"no row for {key}")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "count": len(values),
        "p50_ms": round(percentile(values, 0.50), 3),
        "p99_ms": round(percentile(values, 0.99), 3),
        "mean_ms": round(statistics.fmean(values), 3),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    rows = make_rows(args.rows, args.seed)
    keys = [row[0] for row in rows]
    rng = random.Random(args.seed + 1)
    with ThrowawayPostgres(durable=True) as server:
        url = server.create_database("bench")
        began = time.perf_counter()
        fill(url, rows)
        fill_seconds = time.perf_counter() - began
        del rows
        with psycopg.connect(url) as connection:
            server_version = connection.info.server_version
            settings = {
                name: connection.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
                for name in ("fsync", "synchronous_commit", "full_page_writes", "shared_buffers")
            }
        drivers: list[Driver] = []
        closers: list[Callable[[], Awaitable[None]]] = []
        for make in (
            psycopg_sync_on_loop,
            psycopg_sync_on_thread,
            psycopg_async,
            asyncpg_driver,
            psycopg_pool_on_thread,
        ):
            driver, close = await make(url)
            drivers.append(driver)
            closers.append(close)
        try:
            for driver in drivers:  # warm: prepared statements, the page cache, the thread pool
                await timed(driver.point, rng.choices(keys, k=args.warmup), [])
                await timed(driver.sequence, rng.choices(keys, k=args.warmup), [])
            gc.collect()
            gc.freeze()
            per_round = -(-args.reps // args.rounds)
            for number in range(args.rounds):
                count = min(per_round, args.reps - number * per_round)
                turn = drivers[number % len(drivers) :] + drivers[: number % len(drivers)]
                for driver in turn:
                    await timed(driver.point, rng.choices(keys, k=count), driver.point_ms)
                    await timed(driver.sequence, rng.choices(keys, k=count), driver.sequence_ms)
            gc.unfreeze()
        finally:
            for close in closers:
                await close()

    def installed(name: str) -> str | None:
        return version(name) if importlib.util.find_spec(name) is not None else None

    return {
        "benchmark": "pg_drivers",
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "event_loop": args.loop,
            "postgresql": server_version,
            "psycopg": installed("psycopg"),
            "psycopg_impl": psycopg.pq.__impl__,
            "psycopg_pool": installed("psycopg_pool"),
            "asyncpg": installed("asyncpg"),
        },
        "workload": {
            "rows": args.rows,
            "fill_seconds": round(fill_seconds, 2),
            "server": "ThrowawayPostgres(durable=True): same host, TCP on 127.0.0.1",
            "server_settings": settings,
            "reps": args.reps,
            "warmup": args.warmup,
            "rounds": args.rounds,
            "sequence_length": SEQUENCE,
            "note": "client and server share the machine's cores; one connection per driver, "
            "one lookup in flight at a time",
        },
        "drivers": {
            driver.name: {
                "note": driver.note,
                "point_select": summary(driver.point_ms),
                "sequence_of_4": summary(driver.sequence_ms),
            }
            for driver in drivers
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=5_000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    default_loop = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
    parser.add_argument(
        "--loop",
        choices=("asyncio", "uvloop"),
        default=default_loop,
        help="the event loop (default: uvloop when installed, as uvicorn picks for the proxy)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "ledgers" / "bench-pg-drivers.json")
    args = parser.parse_args()
    if find_postgres_bin() is None:
        print("bench_pg_drivers: skipped (no PostgreSQL server binaries found)")
        return
    if args.loop == "uvloop":
        import uvloop

        report = uvloop.run(run(args))
    else:
        report = asyncio.run(run(args))
    print(f"{'driver':<28} {'point p50':>10} {'point p99':>10} {'seq4 p50':>10} {'seq4 p99':>10}")
    for name, figures in report["drivers"].items():
        point, sequence = figures["point_select"], figures["sequence_of_4"]
        print(
            f"{name:<28} {point['p50_ms']:>10.3f} {point['p99_ms']:>10.3f}"
            f" {sequence['p50_ms']:>10.3f} {sequence['p99_ms']:>10.3f}"
        )
    print(f"(ms; {args.reps} of each per driver, {report['machine']['event_loop']} loop)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
