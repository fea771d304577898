"""Proxy at scale: hits and misses through `staffstore serve` over 100,000 and 1,000,000 claims.

For each size, a store of that many synthetic claims for one owner (bench_store.py's claims,
imported by the project's importer in a process of its own, as bench_store.py does; one
database per size, which every series below uses), served by the three servers of
bench_proxy.py: the fake upstream, the proxy in front of it, and a bare Starlette app (the
floor). It times claim hits (stored questions in lower case, each asked once), misses (stored
questions with their last word changed, each new), the same misses sent straight to the fake
upstream, and the bare app, in two ways:

- closed loop, under 1 and under 50 clients: each connection sends its next request as soon as
  the last is answered. Under 50 this is the throughput, and a request's time there is mostly
  its wait behind the other 49 (latency at saturation), not its own.
- open loop, 50 connections: requests arrive on a fixed schedule (Poisson, at --hit-rate and
  --miss-rate a second, well under the closed loop's throughput), each timed from the moment
  it was due to be sent, so a stall delays, and counts against, every request due during it
  (no coordinated omission). Hits and misses each alone, then both at once (hits on 50
  connections, misses on 20), as a server meets them (a hit may arrive while misses are being
  scored), each at half its rate alone (--mixed-share). Issue 41's target for the hits'
  p99.9 is judged on both.

p50, p99, p99.9 and the worst of each. Every hit is checked to be a hit and every miss a miss
(X-Staffstore-Outcome). Also: the database's size, the proxy's start-up time, its resident
memory before its first request and after the series' 10,000 (VmRSS, and how much of it is
anonymous, file-backed and shared: RssAnon, RssFile, RssShmem; the store maps its database
file), and the garbage collector's pauses during the series as its /metrics counts them.
Results go to ledgers/bench-proxy-scale.json (`--out` elsewhere). Run:
`.venv/bin/python benchmarks/bench_proxy_scale.py [--sizes 100000,1000000] [--requests 10000]`;
`make bench-quick` runs 10,000 claims and 2,000 requests into
ledgers/bench-proxy-scale-quick.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from prometheus_client.parser import text_string_to_metric_families

from staffstore.replays.quantiles import percentile_interval
from staffstore.replays.scale_report import interval_text, longest_pause, shown_by_interval

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_proxy import (
    CLIENT_KEY,
    METRICS_KEY,
    UPSTREAM_KEY,
    Connection,
    _ask,
    _counter,
    _percentile,
    _start,
    pair_model_share,
    scrape,
    serve_bare,
    serve_fake,
    serve_proxy,
)
from bench_proxy import (
    _summary as proxy_summary,
)
from bench_store import file_mib, measure_import, near_miss_word, write_claims

ROOT = Path(__file__).resolve().parent.parent
CHAT = "/v1/chat/completions"
UPSTREAM_CHAT = "/api/v1/chat/completions"
#: The issue's targets (issue 41). Its figures are set at 1,000,000 claims and 50 clients (the
#: hits' p99.9, judged on the open-loop series: under the closed loop a request's time is its
#: queue) and at 100,000 claims (the pauses); each size is judged by all of them here. The
#: resident memory is judged on VmRSS, what top shows, with its split recorded beside it.
TARGETS = {
    "hit_p999_ms_50_clients": 10.0,
    "resident_mib_after_requests": 100.0,
    "hit_p50_ratio_over_bare": 2.0,
    "gc_pause_ms": 5.0,
}
#: How the series' requests to the proxy are shared out of --requests (10,000 by default, the
#: issue's count for the resident-memory reading). The open-loop hits get the most: their
#: p99.9 is a target, and it is more than the worst few only over thousands. The open-loop
#: misses are few: at 25 a second each of them costs the run 40 ms.
SHARES = {
    "warm": 0.05,
    "hits_1": 0.12,
    "hits_many": 0.17,
    "hits_open": 0.32,
    "hits_mixed": 0.16,
    "misses_1": 0.07,
    "misses_many": 0.05,
    "misses_open": 0.04,
    "misses_mixed": 0.02,
}
#: The open loop's comparison, the bare app at the same rate, gets this fraction of the hits
#: (it shows what the client and this machine add to a tail; it need not be as long).
BARE_OPEN_SHARE = 1 / 3
#: The misses sent at once with the hits take turns on this many connections: each waits
#: about 1.6 s between its requests at 12.5 a second, well under uvicorn's 5 s keep-alive
#: timeout, past which the server closes an idle connection (on 50, some waited longer).
MIXED_MISS_CONNECTIONS = 20
#: Each series is sent in this many slices, taking turns with its comparison (the bare app for
#: hits, the fake upstream for misses), so a noisy moment on this shared machine lands on both.
ROUNDS = 5


class Run(NamedTuple):
    """Where a series' requests go, and the outcome each answer must name (None: not checked)."""

    port: int
    path: str
    key: str
    expect: str | None


async def timed(run: Run, bodies: Sequence[bytes], clients: int) -> tuple[list[float], float]:
    """Send `bodies` over `clients` keep-alive connections, each sending its next request as
    soon as it is answered; every request's milliseconds, and the seconds they all took."""
    connections = [await Connection.open(run.port) for _ in range(min(clients, len(bodies)))]
    waiting = iter(bodies)  # shared: whichever connection is free takes the next
    times: list[float] = []

    async def send(connection: Connection) -> None:
        for body in waiting:
            started = time.perf_counter()
            status, headers, _ = await connection.post(run.path, body, run.key)
            times.append((time.perf_counter() - started) * 1000)
            assert status == 200, status
            if run.expect is not None:
                assert headers.get("x-staffstore-outcome") == run.expect, headers

    started = time.perf_counter()
    try:
        await asyncio.gather(*(send(connection) for connection in connections))
    finally:
        for connection in connections:
            connection.close()
    return times, time.perf_counter() - started


class Scheduled(NamedTuple):
    """An open-loop slice's milliseconds per request: from its due time (`times`), from its
    write (`service`), the client's lateness in writing it (`lag`); and its seconds."""

    times: list[float]
    service: list[float]
    lag: list[float]
    seconds: float


async def scheduled(
    run: Run, bodies: Sequence[bytes], clients: int, rate: float, rng: random.Random
) -> Scheduled:
    """Send `bodies` over `clients` keep-alive connections at Poisson arrivals of `rate` a
    second (open loop: the schedule is fixed beforehand and does not wait for answers; a
    request due while every connection is busy waits for the first free one). Each request's
    milliseconds from when it was due (`times`), from when it was written (`service`), how late
    the client wrote it (`lag`), and the seconds from the first due time to the last answer."""
    connections = [await Connection.open(run.port) for _ in range(min(clients, len(bodies)))]
    due_at, moment = [], 0.0
    for _ in bodies:
        moment += rng.expovariate(rate)
        due_at.append(moment)
    queue: asyncio.Queue[tuple[bytes, float] | None] = asyncio.Queue()
    times: list[float] = []
    service: list[float] = []
    lag: list[float] = []

    async def dispatch(start: float) -> None:
        for body, offset in zip(bodies, due_at, strict=True):
            due = start + offset
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            queue.put_nowait((body, due))
        for _ in connections:
            queue.put_nowait(None)

    async def send(connection: Connection) -> None:
        while (item := await queue.get()) is not None:
            body, due = item
            sent = time.perf_counter()
            status, headers, _ = await connection.post(run.path, body, run.key)
            answered = time.perf_counter()
            times.append((answered - due) * 1000)
            service.append((answered - sent) * 1000)
            lag.append((sent - due) * 1000)
            assert status == 200, status
            if run.expect is not None:
                assert headers.get("x-staffstore-outcome") == run.expect, headers

    start = time.perf_counter() + 0.01
    try:
        await asyncio.gather(dispatch(start), *(send(connection) for connection in connections))
    finally:
        for connection in connections:
            connection.close()
    return Scheduled(times, service, lag, time.perf_counter() - start)


async def open_loop(
    series: list[tuple[Run, Sequence[bytes]]], clients: int, rate: float, seed: int
) -> list[dict[str, Any]]:
    """Each series at `rate` a second in ROUNDS slices, one slice of each in turn (as
    taking_turns); a summary of each, timed from the due times, with the time from the write
    (`service`) and the client's lateness in writing (`send_lag_ms`) beside it."""
    rng = random.Random(seed)
    found = [Scheduled([], [], [], 0.0) for _ in series]
    for round_number in range(ROUNDS):
        for index, (run, bodies) in enumerate(series):
            part = _round_slice(bodies, round_number)
            taken = await scheduled(run, part, clients, rate, rng)
            so_far = found[index]
            found[index] = Scheduled(
                so_far.times + taken.times,
                so_far.service + taken.service,
                so_far.lag + taken.lag,
                so_far.seconds + taken.seconds,
            )
    return [_open_summary(taken, rate) for taken in found]


async def at_once(
    hits: tuple[Run, Sequence[bytes]],
    misses: tuple[Run, Sequence[bytes]],
    clients: int,
    rates: tuple[float, float],
    seed: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Hits and misses in the open loop at the same time, each on its own schedule, the hits
    on `clients` connections and the misses on MIXED_MISS_CONNECTIONS, as a server meets them:
    a hit may arrive while misses are being scored. A summary of each, as open_loop's."""
    rng = random.Random(seed)
    hit_rng, miss_rng = random.Random(rng.random()), random.Random(rng.random())
    hit_taken, miss_taken = await asyncio.gather(
        scheduled(*hits, clients, rates[0], hit_rng),
        scheduled(*misses, MIXED_MISS_CONNECTIONS, rates[1], miss_rng),
    )
    return _open_summary(hit_taken, rates[0]), _open_summary(miss_taken, rates[1])


def _open_summary(taken: Scheduled, rate: float) -> dict[str, Any]:
    return {
        **_summary(taken.times),
        "service": {
            key: value for key, value in _summary(taken.service).items() if key.endswith("_ms")
        },
        "send_lag_ms": {
            "p50": round(statistics.median(taken.lag), 3),
            "p99": round(_percentile(taken.lag, 0.99), 3),
            "max": round(max(taken.lag), 3),
        },
        "offered_per_second": rate,
        "per_second": round(len(taken.times) / taken.seconds, 1),
    }


async def taking_turns(
    series: list[tuple[Run, Sequence[bytes]]], clients: int
) -> list[dict[str, float]]:
    """Each series in ROUNDS slices, one slice of each in turn; a summary of each series."""
    times: list[list[float]] = [[] for _ in series]
    seconds = [0.0 for _ in series]
    for round_number in range(ROUNDS):
        for index, (run, bodies) in enumerate(series):
            part = _round_slice(bodies, round_number)
            taken, elapsed = await timed(run, part, clients)
            times[index] += taken
            seconds[index] += elapsed
    return [
        {**_summary(taken), "per_second": round(len(taken) / elapsed, 1)}
        for taken, elapsed in zip(times, seconds, strict=True)
    ]


def _round_slice(bodies: Sequence[bytes], round_number: int) -> Sequence[bytes]:
    """The part of a series' requests sent in round `round_number` of ROUNDS."""
    size = len(bodies)
    return bodies[round_number * size // ROUNDS : (round_number + 1) * size // ROUNDS]


#: The confidence of the interval each p99.9 is given (staffstore/replays/quantiles.py).
INTERVAL_CONFIDENCE = 0.95


def _summary(times: list[float]) -> dict[str, Any]:
    """bench_proxy's summary, with the p99.9, the interval the sample bounds it by (None on a
    side it cannot bound: over 3,200 requests the p99.9 has no upper bound short of the
    population's), and the worst beside it."""
    low, high = percentile_interval(times, 0.999, INTERVAL_CONFIDENCE)
    return {
        **proxy_summary(times),
        "p999_ms": round(_percentile(times, 0.999), 3),
        "p999_interval_ms": {
            "confidence": INTERVAL_CONFIDENCE,
            "low": None if low is None else round(low, 3),
            "high": None if high is None else round(high, 3),
        },
        "max_ms": round(max(times), 3),
    }


def hits_and_misses(
    questions: list[str], hits: int, misses: int, seed: int
) -> tuple[list[bytes], list[str]]:
    """`hits` stored questions as a client would type them (lower case, no question mark),
    and `misses` others with their last word changed for a common word, which no stored
    question has (bench_store.near_miss_word); all different, so no answer is served from an
    earlier request's kept answer or a cache of one question."""
    rng = random.Random(seed + 2)
    chosen = rng.sample(questions, min(hits + misses, len(questions)))
    hit_bodies = [_ask(q.lower().rstrip("?")) for q in chosen[:hits]]
    miss_texts = []
    for question in chosen[hits:]:
        words = question.split()
        words[-1] = near_miss_word(rng) + "?"
        miss_texts.append(" ".join(words))
    return hit_bodies, miss_texts


#: /proc/<pid>/status's fields read, and the names the ledger gives them. VmRSS is their sum:
#: anonymous memory (the heaps: Python's objects, SQLite's page caches), file-backed pages
#: (the interpreter's and libraries' code, and the database file SQLite maps) and shared memory.
STATUS_FIELDS = {
    "VmRSS": "now",
    "VmHWM": "peak",
    "RssAnon": "anon",
    "RssFile": "file",
    "RssShmem": "shmem",
}


def resident_mib(pid: int) -> dict[str, float | None]:
    """The process's resident memory now, its peak and the parts of it now, in MiB (None
    where /proc is not)."""
    found: dict[str, float | None] = dict.fromkeys(STATUS_FIELDS.values())
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in STATUS_FIELDS:
                found[STATUS_FIELDS[name]] = round(int(value.split()[0]) / 1024, 1)  # kB
    except OSError:
        pass
    return found


def _split(memory: dict[str, float | None]) -> dict[str, float | None]:
    return {key: memory[key] for key in ("anon", "file", "shmem")}


def _pause_histogram(text: str) -> dict[str, dict[float, float]]:
    """staffstore_gc_pause_seconds by generation: cumulative counts by upper bound (seconds),
    with the count of all under the bound infinity."""
    found: dict[str, dict[float, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name != "staffstore_gc_pause_seconds":
            continue
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                bounds = found.setdefault(sample.labels["generation"], {})
                bounds[float(sample.labels["le"])] = sample.value
    return found


def _heap_walk_counts(text: str) -> dict[str, float]:
    """staffstore_gc_heap_walks by trigger, and the objects the walks freed (as `freed`)."""
    found = {"freed": _counter(text, "staffstore_gc_heap_walk_freed_objects_total")}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "staffstore_gc_heap_walks_total":
                found[sample.labels["trigger"]] = sample.value
    return found


def heap_walks_between(before: str, after: str) -> dict[str, int]:
    """The walks of the proxy's frozen heap between two scrapes (proxy/heap.py): made while
    idle, made on the request path past the forced margin, and the objects they freed."""
    first, last = _heap_walk_counts(before), _heap_walk_counts(after)
    return {
        key: int(last.get(key, 0.0) - first.get(key, 0.0)) for key in ("idle", "growth", "freed")
    }


def pauses_between(before: str, after: str) -> dict[str, dict[str, Any]]:
    """The collections between two scrapes, by generation and all together: how many, how many
    over 5 ms, and the histogram's bucket the longest fell in (`over` < longest <= `at_most`
    milliseconds; `at_most` None past the largest bound; None when there were none)."""
    first, last = _pause_histogram(before), _pause_histogram(after)

    def summary(counts: dict[float, float]) -> dict[str, Any]:
        total = counts.get(float("inf"), 0.0)
        over_5 = total - counts.get(TARGETS["gc_pause_ms"] / 1000, 0.0)
        bounds = sorted(counts)
        # The first bound that holds every pause is the longest one's bucket's upper edge.
        upper = next((bound for bound in bounds if counts[bound] >= total), float("inf"))
        lower = max((bound for bound in bounds if bound < upper), default=0.0)
        longest = {
            "over": round(lower * 1000, 1),
            "at_most": None if upper == float("inf") else round(upper * 1000, 1),
        }
        return {
            "count": int(total),
            "over_5_ms": int(over_5),
            "longest_ms": longest if total else None,
        }

    differences = {
        generation: {
            bound: count - first.get(generation, {}).get(bound, 0.0)
            for bound, count in counts.items()
        }
        for generation, counts in last.items()
    }
    every: dict[float, float] = {}
    for counts in differences.values():
        for bound, count in counts.items():
            every[bound] = every.get(bound, 0.0) + count
    return {
        **{f"generation_{g}": summary(counts) for g, counts in sorted(differences.items())},
        "all": summary(every),
    }


def _import(count: int, scratch: Path, seed: int) -> tuple[Path, list[str], float]:
    """A store of `count` claims, imported as bench_store.py does; its questions."""
    source = scratch / f"claims-{count}.jsonl"
    questions = write_claims(source, count, seed)
    db = scratch / f"proxy-scale-{count}.db"
    imported = measure_import(source, db)
    source.unlink()
    return db, questions, float(imported["seconds"])


async def bench_size(count: int, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    share = {name: round(args.requests * fraction) for name, fraction in SHARES.items()}
    mixed_rates = (args.hit_rate * args.mixed_share, args.miss_rate * args.mixed_share)
    warm_hits, warm_misses = share["warm"] // 2, share["warm"] - share["warm"] // 2
    tail_hits = args.requests if args.tail_hits is None else args.tail_hits
    hits_wanted = warm_hits + sum(v for k, v in share.items() if k.startswith("hits_")) + tail_hits
    misses_wanted = warm_misses + sum(v for k, v in share.items() if k.startswith("misses_"))
    if hits_wanted + misses_wanted > count:
        raise SystemExit(f"{count:,} claims are too few for {args.requests:,} requests")
    began = time.perf_counter()
    db, questions, import_seconds = _import(count, scratch, args.seed)
    imported_mib = file_mib(db)
    hit_bodies, miss_texts = hits_and_misses(questions, hits_wanted, misses_wanted, args.seed)
    del questions

    series_began = time.perf_counter()
    fake, fake_port = _start(serve_fake)
    upstream_url = f"http://127.0.0.1:{fake_port}/api/v1"
    started = time.perf_counter()
    proxy, proxy_port = _start(serve_proxy, str(db), upstream_url, "off", str(scratch), METRICS_KEY)
    startup_seconds = time.perf_counter() - started
    bare, bare_port = _start(serve_bare)
    assert proxy.pid is not None
    ours_hit = Run(proxy_port, CHAT, CLIENT_KEY, "hit")
    ours_miss = Run(proxy_port, CHAT, CLIENT_KEY, "miss")
    floor = Run(bare_port, CHAT, CLIENT_KEY, None)
    direct = Run(fake_port, UPSTREAM_CHAT, UPSTREAM_KEY, None)
    by_clients: dict[str, dict[str, Any]] = {}
    try:
        memory_before = resident_mib(proxy.pid)
        scraped_before = scrape(proxy_port)
        # The first requests load the database's pages and the proxy's lazy parts: not timed.
        await timed(ours_hit, hit_bodies[:warm_hits], 1)
        await timed(ours_miss, [_ask(t) for t in miss_texts[:warm_misses]], 1)
        await timed(floor, hit_bodies[:100], 1)
        await timed(direct, [_ask(t) for t in miss_texts[:100]], 1)
        hits_left, misses_left = hit_bodies[warm_hits:], miss_texts[warm_misses:]
        for clients, which in ((1, "1"), (args.clients, "many")):
            hits = hits_left[: share[f"hits_{which}"]]
            hits_left = hits_left[len(hits) :]
            claim_hit, bare_hit = await taking_turns([(ours_hit, hits), (floor, hits)], clients)
            bodies = [_ask(t) for t in misses_left[: share[f"misses_{which}"]]]
            misses_left = misses_left[len(bodies) :]
            scraped = scrape(proxy_port)
            miss, straight = await taking_turns([(ours_miss, bodies), (direct, bodies)], clients)
            paired = pair_model_share(scraped, scrape(proxy_port), miss)
            by_clients[str(clients)] = {
                "claim_hit": claim_hit,
                "bare_starlette": bare_hit,
                "hit_p50_ratio_over_bare": round(claim_hit["p50_ms"] / bare_hit["p50_ms"], 2),
                "miss": miss,
                "direct_to_upstream": straight,
                "miss_overhead_p50_ms": round(miss["p50_ms"] - straight["p50_ms"], 3),
                # Issue 41 asks for the miss path with and without a learned scorer.
                "miss_pair_model": paired,
            }
        # The open loop: the same number of connections, requests due on a fixed schedule.
        hits = hits_left[: share["hits_open"]]
        bare_hits = hits[: round(len(hits) * BARE_OPEN_SHARE)]
        claim_hit, bare_hit = await open_loop(
            [(ours_hit, hits), (floor, bare_hits)], args.clients, args.hit_rate, args.seed + 3
        )
        bodies = [_ask(t) for t in misses_left[: share["misses_open"]]]
        (miss,) = await open_loop(
            [(ours_miss, bodies)], args.clients, args.miss_rate, args.seed + 4
        )
        hits_left, misses_left = hits_left[len(hits) :], misses_left[len(bodies) :]
        # Both at once: what a server meets, a hit arriving while misses are being scored.
        mixed_hit, mixed_miss = await at_once(
            (ours_hit, hits_left[: share["hits_mixed"]]),
            (ours_miss, [_ask(t) for t in misses_left[: share["misses_mixed"]]]),
            args.clients,
            mixed_rates,
            args.seed + 5,
        )
        mixed = {
            "clients": args.clients,
            "miss_connections": MIXED_MISS_CONNECTIONS,
            "claim_hit": mixed_hit,
            "miss": mixed_miss,
        }
        many = by_clients[str(args.clients)]
        open_figures = {
            "clients": args.clients,
            "claim_hit": claim_hit,
            "bare_starlette": bare_hit,
            "miss": miss,
            # The offered rates as fractions of the closed loop's throughput at this size.
            "offered_over_closed_loop": {
                "hits": round(args.hit_rate / many["claim_hit"]["per_second"], 2),
                "misses": round(args.miss_rate / many["miss"]["per_second"], 2),
            },
        }
        memory_after = resident_mib(proxy.pid)
        # The hits' p99.9 once more, over enough hits for its interval to have an upper bound
        # (3,688 at 95%): the series above share out --requests, and the resident memory is
        # read after them, where the issue reads it.
        tail_left = hits_left[share["hits_mixed"] :][:tail_hits]
        tail = None
        if tail_left:
            (tail_hit,) = await open_loop(
                [(ours_hit, tail_left)], args.clients, args.hit_rate, args.seed + 6
            )
            tail = {"clients": args.clients, "claim_hit": tail_hit}
        scraped_after = scrape(proxy_port)
        pauses = pauses_between(scraped_before, scraped_after)
        walks = heap_walks_between(scraped_before, scraped_after)
    finally:
        for process in (fake, proxy, bare):
            process.terminate()
            process.join(5)
    series_seconds = time.perf_counter() - series_began
    served = (
        warm_hits
        + warm_misses
        + sum(
            figures[key]["count"]
            for figures in (*by_clients.values(), open_figures, mixed)
            for key in ("claim_hit", "miss")
        )
    )
    # The hits-alone target is judged on the longest series of hits alone.
    judged = tail["claim_hit"] if tail is not None else open_figures["claim_hit"]
    hit_p999 = judged["p999_ms"]
    alone = (
        f"claim-hit p99.9 <= 10 ms, {args.clients} clients, open loop at {args.hit_rate:g}/s,"
        f" {judged['count']:,} hits"
    )
    resident_after = memory_after["now"]
    result = {
        "claims": count,
        "import_seconds": round(import_seconds, 3),
        "database_mib": {"imported": imported_mib, "after_series": file_mib(db)},
        "proxy_startup_seconds": round(startup_seconds, 3),
        "chat_requests_to_proxy": served,
        # VmRSS, and its anonymous, file-backed and shared parts (RssAnon, RssFile, RssShmem).
        "resident_mib": {
            "before_first_request": memory_before["now"],
            "after_series": memory_after["now"],
            "peak": memory_after["peak"],
            "split": {
                "before_first_request": _split(memory_before),
                "after_series": _split(memory_after),
            },
        },
        # Closed loop: throughput, and under many clients latency at saturation.
        "by_clients": by_clients,
        # Open loop: latency at a fixed offered rate; the hits' p99.9 target is judged here,
        # on the hits alone and on the hits sent while misses are (`open_loop_mixed`).
        "open_loop": open_figures,
        "open_loop_mixed": mixed,
        # After the memory reading, hits alone again, enough of them for the p99.9's interval
        # to have an upper bound: the hits-alone target is judged on these.
        "open_loop_tail": tail,
        "gc_pauses": pauses,
        # Full collections that walked the frozen heap: a walk on the request path ("growth")
        # is one of the pauses above; an idle one waits for a quiet second (proxy/heap.py).
        "heap_walks": walks,
        # Every figure is compared with its target here, from what was measured just above;
        # a reading that could not be taken (no /proc) fails its target rather than passing.
        "meets_targets": {
            alone: hit_p999 <= TARGETS["hit_p999_ms_50_clients"],
            f"claim-hit p99.9 <= 10 ms, {args.clients} clients, open loop at"
            f" {mixed_rates[0]:g}/s with {mixed_rates[1]:g} misses/s at once": mixed["claim_hit"][
                "p999_ms"
            ]
            <= TARGETS["hit_p999_ms_50_clients"],
            f"resident memory (VmRSS) after {served:,} requests <= 100 MiB": resident_after
            is not None
            and resident_after <= TARGETS["resident_mib_after_requests"],
            "claim-hit p50 within 2x the bare app, 1 client": by_clients["1"][
                "hit_p50_ratio_over_bare"
            ]
            <= TARGETS["hit_p50_ratio_over_bare"],
            "no collection pause over 5 ms": pauses["all"]["over_5_ms"] == 0,
        },
        # The p99.9 targets again, judged by the interval the sample bounds each p99.9 by
        # rather than by the p99.9 alone: the two runs of one commit can fall either side.
        "p999_targets_by_interval": {
            alone: shown_by_interval(judged["p999_interval_ms"], TARGETS["hit_p999_ms_50_clients"]),
            f"claim-hit p99.9 <= 10 ms, {args.clients} clients, open loop at"
            f" {mixed_rates[0]:g}/s with {mixed_rates[1]:g} misses/s at once": shown_by_interval(
                mixed["claim_hit"]["p999_interval_ms"], TARGETS["hit_p999_ms_50_clients"]
            ),
        },
        "series_seconds": round(series_seconds, 1),
        "seconds": round(time.perf_counter() - began, 1),
    }
    for leftover in scratch.glob(f"{db.name}*"):
        leftover.unlink()
    return result


def _print(result: dict[str, Any]) -> None:
    print(
        f"{result['claims']:>9,} claims: import {result['import_seconds']:.1f} s,"
        f" {result['database_mib']['imported']:.0f} MiB on disk,"
        f" proxy up in {result['proxy_startup_seconds']:.2f} s;"
        f" resident {result['resident_mib']['before_first_request']} MiB before,"
        f" {result['resident_mib']['after_series']} MiB after"
        f" {result['chat_requests_to_proxy']:,} requests"
    )
    for moment, split in result["resident_mib"]["split"].items():
        print(
            f"  {moment}: anon {split['anon']} MiB, file {split['file']} MiB,"
            f" shmem {split['shmem']} MiB"
        )
    for clients, figures in result["by_clients"].items():
        paired = figures["miss_pair_model"]
        print(
            f"  {clients:>2} client(s) misses: {paired['pairs_per_miss']:.2f} pairs and"
            f" {paired['model_ms_per_miss']:.2f} ms in the pair model each, mean"
            f" {paired['miss_mean_ms']:.2f} ms, {paired['miss_mean_ms_less_model']:.2f} ms less it"
        )
        for label, key in (
            ("claim hit", "claim_hit"),
            ("bare app ", "bare_starlette"),
            ("miss     ", "miss"),
            ("direct   ", "direct_to_upstream"),
        ):
            f = figures[key]
            print(
                f"  {clients:>2} client(s) {label}  p50 {f['p50_ms']:7.2f}  p99 {f['p99_ms']:7.2f}"
                f"  p99.9 {f['p999_ms']:7.2f}  max {f['max_ms']:7.2f} ms"
                f"  ({f['per_second']:,.0f}/s)"
            )
    rows = [("alone", result["open_loop"], key) for key in ("claim_hit", "bare_starlette", "miss")]
    rows += [("at once", result["open_loop_mixed"], key) for key in ("claim_hit", "miss")]
    if result["open_loop_tail"] is not None:
        rows += [("tail", result["open_loop_tail"], "claim_hit")]
    labels = {"claim_hit": "claim hit", "bare_starlette": "bare app ", "miss": "miss     "}
    for when, figures, key in rows:
        f = figures[key]
        print(
            f"  {figures['clients']:>2} open at {f['offered_per_second']:g}/s, {when:7}"
            f" {labels[key]}"
            f"  p50 {f['p50_ms']:7.2f}  p99 {f['p99_ms']:7.2f}"
            f"  p99.9 {f['p999_ms']:7.2f} ({interval_text(f['p999_interval_ms'])})"
            f"  max {f['max_ms']:7.2f} ms"
            f"  (service p99.9 {f['service']['p999_ms']:.2f} ms,"
            f" send lag p99 {f['send_lag_ms']['p99']:.2f} ms, {f['per_second']:,.0f}/s)"
        )
    every = result["gc_pauses"]["all"]
    print(
        f"  collections {every['count']}, over 5 ms {every['over_5_ms']},"
        f" longest {longest_pause(every['longest_ms'])};"
        f" frozen heap walked {result['heap_walks']['idle']} times idle,"
        f" {result['heap_walks']['growth']} on the request path;"
        f" series {result['series_seconds']:.0f} s, with the import {result['seconds']:.0f} s"
    )
    for name, met in result["meets_targets"].items():
        print(f"  target {name}: {'met' if met else 'NOT met'}")
    for name, shown in result["p999_targets_by_interval"].items():
        print(f"  target {name}, by the p99.9's {INTERVAL_CONFIDENCE:.0%} interval: {shown}")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-proxy-scale-") as scratch:
        for size in (int(s) for s in args.sizes.split(",")):
            result = await bench_size(size, args, Path(scratch))
            _print(result)
            results.append(result)
    return {
        "benchmark": "proxy-scale",
        "command": "python benchmarks/bench_proxy_scale.py " + " ".join(sys.argv[1:]),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "workload": {
            "requests": args.requests,
            "shares": SHARES,
            "concurrent_clients": args.clients,
            "client": "raw HTTP/1.1 keep-alive over asyncio streams, one process",
            "closed_loop": "by_clients: each connection sends its next request as soon as it "
            "is answered, so under many clients a request's time includes its wait behind the "
            "others: the throughput, and latency at saturation",
            "open_loop": {
                "connections": args.clients,
                "arrivals": "Poisson (exponential gaps, seeded), fixed before the series; a "
                "request due while every connection is busy waits for the first free one",
                "hit_rate_per_second": args.hit_rate,
                "miss_rate_per_second": args.miss_rate,
                "bare_app": f"at the hits' rate, {BARE_OPEN_SHARE:.2f} as many requests",
                "timed_from": "each request's due time, so a stall counts against every "
                "request due during it (no coordinated omission); `service` is timed from the "
                "write and `send_lag_ms` is how late the client wrote (its event loop's timer "
                "resolution is about 1 ms)",
                "judges": "issue 41's claim-hit p99.9 target, at the hits' rate",
                "mixed": f"open_loop_mixed: hits and misses at once, {args.mixed_share:g} of "
                f"each rate, the misses on {MIXED_MISS_CONNECTIONS} connections of their own",
            },
            "hits": "stored questions in lower case without the question mark, each once",
            "misses": "stored questions with the last word changed for one never stored, "
            "each once; in the closed loop the same bodies are sent straight to the fake "
            "upstream",
            "miss_pair_model": "the gate's pair model's work for the closed loop's misses, "
            "from the proxy's /metrics before and after them: pairs and ms per miss, and the "
            "misses' mean less that time (under one client, a miss without the model's cost)",
            "note": "client, proxy, fake upstream and bare app share the machine's cores",
        },
        "targets": TARGETS,
        "results": results,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="claims, comma-separated")
    parser.add_argument(
        "--requests", type=int, default=10_000, help="chat requests to the proxy per size"
    )
    parser.add_argument("--clients", type=int, default=50, help="concurrent connections")
    parser.add_argument(
        "--hit-rate", type=float, default=200.0, help="open loop: claim hits offered a second"
    )
    parser.add_argument(
        "--miss-rate", type=float, default=25.0, help="open loop: misses offered a second"
    )
    parser.add_argument(
        "--mixed-share",
        type=float,
        default=0.5,
        help="open loop with hits and misses at once: each at this share of its rate alone (at"
        " the full rates of both, 200 and 25 a second, one proxy process on 2 cores is"
        " overloaded: its queue grows for as long as the series runs)",
    )
    parser.add_argument(
        "--tail-hits",
        type=int,
        default=None,
        help="open loop: hits alone after the memory reading, on which the hits' p99.9 target"
        " is judged (default: --requests; 0 judges it on the first open-loop hits)",
    )
    parser.add_argument("--seed", type=int, default=11, help="bench_store.py's claims' seed")
    parser.add_argument("--out", type=Path, default=ROOT / "ledgers" / "bench-proxy-scale.json")
    args = parser.parse_args()
    report = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
