"""Store and gate benchmark: import time, query_first latency, batch `query --jsonl` throughput.

Fills a fresh store with N synthetic claims (N = 1,000, 10,000, 100,000 by default) through the
same import path the CLI uses, then times query_first on a mix of paraphrased hits and misses,
and pipes 10,000 queries through the real `staffstore query --jsonl` command. Results go to
ledgers/bench-store.json. Run: `.venv/bin/python benchmarks/bench_store.py [--sizes 1000,10000]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from staffstore.gate import query_first, warm_up
from staffstore.gate.pair_model import default_pair_model
from staffstore.models import Turn
from staffstore.proxy.heap import CollectionPauses
from staffstore.store import StaffStore
from staffstore.store.importer import read_claims, store_claims

ROOT = Path(__file__).resolve().parent.parent
SYLLABLES = "ka lo mi ne ru ta vo shi den gar pol sen tri bex qua mor lin zed fen ox".split()
TOPICS = (
    "What did {agent} find about the {a} {b} in {c}?",
    "Why does the {a} {b} fail on {c}?",
    "How is {a} {b} configured for the {c} service?",
    "Which {a} version does {c} pin for {b}?",
    "Where is the {a} {b} defined in {c}?",
)
ASKING = (
    "{q}",
    "{lower}",
    "hey, {lower}",
    "Could you tell me {lower}",
    "{q} thanks",
)


def word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def make_claims(count: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    vocabulary = [word(rng) for _ in range(max(count // 4, 500))]
    claims, seen = [], set()
    while len(claims) < count:
        question = rng.choice(TOPICS).format(
            agent=rng.choice(("Kernel", "Scout", "Atlas")),
            a=rng.choice(vocabulary),
            b=rng.choice(vocabulary),
            c=rng.choice(vocabulary),
        )
        if question in seen:
            continue
        seen.add(question)
        claims.append(
            {
                "owner": "bench",
                "agent": "kernel",
                "question": question,
                "answer": f"Finding {len(claims)}: {question.lower()[:-1]} is settled.",
                "source": "job",
                "job_id": f"J-{len(claims)}",
            }
        )
    return claims


def make_queries(claims: list[dict[str, str]], count: int, seed: int) -> list[str]:
    """Half ask a stored question in other words; half change one word of one (misses)."""
    rng = random.Random(seed + 1)
    queries = []
    for index in range(count):
        question = rng.choice(claims)["question"]
        if index % 2:
            words = question.split()
            words[-1] = word(rng) + "?"
            question = " ".join(words)
        asked = rng.choice(ASKING).format(q=question, lower=question.lower())
        queries.append(asked)
    return queries


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _summary(values: list[float]) -> dict[str, float]:
    """How many, and their p50 / p99 (none when there are none)."""
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "p50": round(percentile(values, 0.50), 3),
        "p99": round(percentile(values, 0.99), 3),
    }


def bench_pair_model(
    queries: list[str], claims: list[dict[str, str]], pairs: int
) -> dict[str, float]:
    """The pair model's own cost: one (turn, stored question) pair at a time, as the gate
    runs it."""
    model = default_pair_model()
    rng = random.Random(3)
    timings = []
    for text in queries[:pairs]:
        stored = rng.choice(claims)["question"]
        began = time.perf_counter()
        model.probabilities(text, [stored])
        timings.append((time.perf_counter() - began) * 1000.0)
    return _summary(timings)


async def bench_size(count: int, scratch: Path, seed: int, samples: int) -> dict[str, object]:
    claims = make_claims(count, seed)
    source = scratch / f"claims-{count}.jsonl"
    source.write_text("".join(json.dumps(c) + "\n" for c in claims), encoding="utf-8")
    db = scratch / f"bench-{count}.db"

    started = time.perf_counter()
    with read_claims(source) as parsed:
        async with StaffStore.open(db) as store:
            await store_claims(store, parsed)
    import_seconds = time.perf_counter() - started

    queries = make_queries(claims, samples, seed)
    # What a server does before its first request (the proxy's startup): load the word tables
    # and the embedding, so a one-time load of about a second is not timed as one lookup.
    warm_up()
    # The harness holds N synthetic claims in memory; the gate does not. Freeze them out of
    # the garbage collector's scans so a collection of the harness's own heap is not timed
    # as a slow lookup.
    # (The proxy freezes what it loaded at startup the same way.)
    gc.collect()
    gc.freeze()
    latencies, hits = [], 0
    full_ms: list[float] = []

    def full_collection(generation: int, seconds: float) -> None:
        if generation == 2:
            full_ms.append(seconds * 1000.0)

    pauses = CollectionPauses(full_collection)
    pair = default_pair_model()
    strict_ms: list[float] = []  # served by the strict test
    paired_ms: list[float] = []  # turns that reached the pair model
    async with StaffStore.open(db) as store:
        for text in queries[:200]:  # warm the page cache and the normaliser
            await query_first(store, Turn(owner="bench", text=text))
        pauses.start()
        for text in queries:
            scored = pair.calls
            began = time.perf_counter()
            decision = await query_first(store, Turn(owner="bench", text=text))
            elapsed = (time.perf_counter() - began) * 1000.0
            latencies.append(elapsed)
            hits += decision.hit
            if decision.hit and decision.threshold is None:
                strict_ms.append(elapsed)
            if pair.calls > scored:
                paired_ms.append(elapsed)
        pauses.stop()
    gc.unfreeze()

    lines = "".join(json.dumps({"owner": "bench", "text": q}) + "\n" for q in queries * 2)
    batch_queries = len(queries) * 2
    began = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "staffstore", "--db", str(db), "query", "--jsonl"],
        input=lines.encode(),
        capture_output=True,
        check=True,
    )
    batch_seconds = time.perf_counter() - began
    answered = completed.stdout.decode().count("\n")
    return {
        "claims": count,
        "import_seconds": round(import_seconds, 3),
        "import_claims_per_second": round(count / import_seconds, 1),
        "queries": len(queries),
        "hit_fraction": round(hits / len(queries), 4),
        "query_first_ms": {
            "p50": round(percentile(latencies, 0.50), 3),
            "p90": round(percentile(latencies, 0.90), 3),
            "p99": round(percentile(latencies, 0.99), 3),
            "mean": round(statistics.fmean(latencies), 3),
        },
        "strict_hit_ms": _summary(strict_ms),
        "pair_model_turn_ms": _summary(paired_ms),
        # What the caches the gate fills cost the garbage collector: each full collection
        # walks every object they hold, and stops every lookup while it does.
        "full_collections": {
            "count": len(full_ms),
            "max_ms": round(max(full_ms, default=0.0), 1),
        },
        "batch_jsonl": {
            "queries": batch_queries,
            "answered": answered,
            "seconds": round(batch_seconds, 3),
            "queries_per_second": round(batch_queries / batch_seconds, 1),
        },
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=ROOT / "ledgers" / "bench-store.json")
    args = parser.parse_args()
    results = []
    warm_up()
    sample_claims = make_claims(1_000, args.seed)
    pair_model = bench_pair_model(
        make_queries(sample_claims, 1_000, args.seed), sample_claims, 1_000
    )
    print(f"pair model alone: p50 {pair_model['p50']:.2f} ms p99 {pair_model['p99']:.2f} ms")
    with tempfile.TemporaryDirectory(prefix="staffstore-bench-") as scratch:
        for size in (int(s) for s in args.sizes.split(",")):
            result = await bench_size(size, Path(scratch), args.seed, args.samples)
            results.append(result)
            q, b = result["query_first_ms"], result["batch_jsonl"]
            print(
                f"{size:>7} claims: import {result['import_seconds']:.2f}s"
                f" | query_first p50 {q['p50']:.3f} ms p99 {q['p99']:.3f} ms"  # type: ignore[index]
                f" | hits {result['hit_fraction']:.0%}"
                f" | strict hit p50 {result['strict_hit_ms'].get('p50', 0):.3f} ms"  # type: ignore[attr-defined]
                f" | pair-model turns {result['pair_model_turn_ms']['count']}"  # type: ignore[index]
                f" p99 {result['pair_model_turn_ms'].get('p99', 0):.2f} ms"  # type: ignore[attr-defined]
                f" | full GCs {result['full_collections']['count']}"  # type: ignore[index]
                f" up to {result['full_collections']['max_ms']:.0f} ms"  # type: ignore[index]
                f" | query --jsonl {b['queries_per_second']:.0f}/s"  # type: ignore[index]
            )
    report = {
        "benchmark": "store",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "targets": {
            "p99_ms_at_100k": 5.0,
            "import_seconds_at_100k": 30.0,
            "pair_model_turn_p99_ms_at_100k": 25.0,
        },
        "pair_model_ms": pair_model,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    asyncio.run(main())
