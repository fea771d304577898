"""Store and gate benchmark: import time, query_first latency, batch `query --jsonl` throughput.

Fills a fresh store with N synthetic claims (N = 1,000, 10,000, 100,000 and 1,000,000 by
default) through the same import path the CLI uses, in a process of its own so its peak
resident size is the import's, then times query_first on a mix of paraphrased hits and misses,
and pipes 10,000 queries through the real `staffstore query --jsonl` command. Every garbage
collection during the import and the timed lookups is timed. Results go to
ledgers/bench-store.json. Run: `.venv/bin/python benchmarks/bench_store.py [--sizes 1000,10000]`;
`make bench-quick` runs small sizes into ledgers/bench-store-quick.json.
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from staffstore.gate import query_first, warm_up
from staffstore.gate.pair_model import default_pair_model
from staffstore.models import Turn
from staffstore.proxy.heap import (
    CollectionPauses,
    freeze_startup_heap,
    heap_walks,
    thaw_startup_heap,
)
from staffstore.store import StaffStore

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


#: What a near miss puts in place of a stored question's last word: a common English word. For
#: another made-up word the gate would settle the turn without its pair model (two made-up names
#: are a `name` veto), and misses would cost less here than a near miss in real words does. Each
#: has two letters no syllable has (c, j, w, y), so none is one slip of the keyboard from a
#: stored word (a common word one letter from a made-up name is forgiven as a slip: "garden" /
#: "garsen", a false hit of an earlier list).
NEAR_MISS_WORDS = (
    "window", "policy", "privacy", "journey", "subway", "highway", "weekly", "crowd",
    "switch", "yellow", "agency", "cycle", "fancy", "cowboy", "jewelry", "yearly",
)  # fmt: skip


def near_miss_word(rng: random.Random) -> str:
    return rng.choice(NEAR_MISS_WORDS)


def claims_of(count: int, seed: int) -> Iterator[dict[str, str]]:
    """`count` synthetic claims, each question asked once, one at a time."""
    rng = random.Random(seed)
    vocabulary = [word(rng) for _ in range(max(count // 4, 500))]
    seen: set[str] = set()
    while len(seen) < count:
        question = rng.choice(TOPICS).format(
            agent=rng.choice(("Kernel", "Scout", "Atlas")),
            a=rng.choice(vocabulary),
            b=rng.choice(vocabulary),
            c=rng.choice(vocabulary),
        )
        if question in seen:
            continue
        number = len(seen)
        seen.add(question)
        yield {
            "owner": "bench",
            "agent": "kernel",
            "question": question,
            "answer": f"Finding {number}: {question.lower()[:-1]} is settled.",
            "source": "job",
            "job_id": f"J-{number}",
        }


def make_claims(count: int, seed: int) -> list[dict[str, str]]:
    return list(claims_of(count, seed))


def write_claims(path: Path, count: int, seed: int) -> list[str]:
    """Write `count` synthetic claims to a claims file; return their questions (what the
    queries are made from), so a million claims are never all held at once."""
    questions = []
    with path.open("w", encoding="utf-8") as out:
        for claim in claims_of(count, seed):
            questions.append(claim["question"])
            out.write(json.dumps(claim) + "\n")
    return questions


def make_queries(questions: Sequence[str], count: int, seed: int) -> list[str]:
    """Half ask a stored question in other words; half change its last word (misses)."""
    return [asked for asked, _question in asked_about(questions, count, seed)]


def asked_about(questions: Sequence[str], count: int, seed: int) -> list[tuple[str, str]]:
    """make_queries's turns, each with the question it asks: a stored one, or one with its last
    word changed for a common word (a miss: no stored question has one there)."""
    rng = random.Random(seed + 1)
    queries = []
    for index in range(count):
        question = rng.choice(questions)
        if index % 2:
            words = question.split()
            words[-1] = near_miss_word(rng) + "?"
            question = " ".join(words)
        asked = rng.choice(ASKING).format(q=question, lower=question.lower())
        queries.append((asked, question))
    return queries


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _pauses(values: list[float]) -> dict[str, float]:
    """How many collections, and their longest and p99 pauses."""
    return {
        "count": len(values),
        "max_ms": round(max(values, default=0.0), 2),
        "p99_ms": round(percentile(values, 0.99), 2) if values else 0.0,
    }


class Pauses:
    """Every garbage-collection pause while started: all generations, and full ones."""

    def __init__(self) -> None:
        self.all_ms: list[float] = []
        self.full_ms: list[float] = []
        self._timer = CollectionPauses(self._record)

    def _record(self, generation: int, seconds: float) -> None:
        self.all_ms.append(seconds * 1000.0)
        if generation == 2:
            self.full_ms.append(seconds * 1000.0)

    def start(self) -> None:
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def summary(self) -> dict[str, dict[str, float]]:
        return {"all": _pauses(self.all_ms), "full": _pauses(self.full_ms)}


def _summary(values: list[float]) -> dict[str, float]:
    """How many, and their p50 / p99 (none when there are none)."""
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "p50": round(percentile(values, 0.50), 3),
        "p99": round(percentile(values, 0.99), 3),
    }


#: Issue 41's targets for the store (and issue 37's for a turn the pair model reads), each
#: at the size it names.
TARGETS = {
    "query_first_p99_ms_at_100k": 2.0,
    "gc_pause_ms_at_100k": 5.0,
    "query_first_p99_ms_at_1m": 5.0,
    "import_seconds_at_100k": 8.0,
    "import_seconds_at_1m": 90.0,
    "pair_model_turn_p99_ms_at_100k": 25.0,
    # Issue 41's rule for a learned scorer: "keep its cost inside these figures for hits and
    # report the miss path's figures with and without it". The turns above count every turn,
    # the near misses the pair model reads among them; these count the hits alone, by any path.
    "hit_p99_ms_at_100k": 2.0,
    "hit_p99_ms_at_1m": 5.0,
}


def meets_targets(results: list[dict[str, Any]]) -> dict[str, bool]:
    """Each target measured in this run, met or not (a size not run is left out)."""
    at = {result["claims"]: result for result in results}
    met: dict[str, bool] = {}
    if 100_000 in at:
        r = at[100_000]
        met["query_first_p99_ms_at_100k"] = (
            r["query_first_ms"]["p99"] <= TARGETS["query_first_p99_ms_at_100k"]
        )
        met["gc_pause_ms_at_100k"] = (
            r["gc_pauses"]["all"]["max_ms"] <= TARGETS["gc_pause_ms_at_100k"]
        )
        met["import_seconds_at_100k"] = r["import_seconds"] <= TARGETS["import_seconds_at_100k"]
        if r.get("hit_ms", {}).get("p99") is not None:
            met["hit_p99_ms_at_100k"] = r["hit_ms"]["p99"] <= TARGETS["hit_p99_ms_at_100k"]
        paired = r["pair_model_turn_ms"].get("p99")
        if paired is not None:
            met["pair_model_turn_p99_ms_at_100k"] = (
                paired <= TARGETS["pair_model_turn_p99_ms_at_100k"]
            )
    if 1_000_000 in at:
        r = at[1_000_000]
        met["query_first_p99_ms_at_1m"] = (
            r["query_first_ms"]["p99"] <= TARGETS["query_first_p99_ms_at_1m"]
        )
        met["import_seconds_at_1m"] = r["import_seconds"] <= TARGETS["import_seconds_at_1m"]
        if r.get("hit_ms", {}).get("p99") is not None:
            met["hit_p99_ms_at_1m"] = r["hit_ms"]["p99"] <= TARGETS["hit_p99_ms_at_1m"]
    return met


def bench_pair_model(queries: list[str], questions: list[str], pairs: int) -> dict[str, float]:
    """The pair model's own cost: one (turn, stored question) pair at a time, as the gate
    runs it."""
    model = default_pair_model()
    rng = random.Random(3)
    timings = []
    for text in queries[:pairs]:
        stored = rng.choice(questions)
        began = time.perf_counter()
        model.probabilities(text, [stored])
        timings.append((time.perf_counter() - began) * 1000.0)
    return _summary(timings)


#: measure_import's child: imports the claims file argv[2] into a new store at argv[1], as
#: `staffstore claims import` does, and prints its time, CPU time, peak resident size and
#: every garbage collection's pause. Only the store and the importer are loaded, not the gate.
_IMPORT = """
import asyncio, json, resource, sys, time
from staffstore.proxy.heap import CollectionPauses
from staffstore.store import StaffStore
from staffstore.store.importer import read_claims, store_claims

pauses = {"all": [], "full": []}

def record(generation, seconds):
    pauses["all"].append(seconds * 1000.0)
    if generation == 2:
        pauses["full"].append(seconds * 1000.0)

async def main():
    async with StaffStore.open(sys.argv[1]) as store:
        await store_claims(store, parsed)

timer = CollectionPauses(record)
timer.start()
started = time.perf_counter()
with read_claims(sys.argv[2]) as parsed:
    asyncio.run(main())
seconds = time.perf_counter() - started
timer.stop()
used = resource.getrusage(resource.RUSAGE_SELF)
# This process's own peak: ru_maxrss outlives exec, so it would be at least the harness's
# size when it forked. /proc's VmHWM is the peak of this program alone (Linux; KiB).
try:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    peak = used.ru_maxrss
# The keying helper's peak (store/keying.py; it has exited by now), 0 when the import keyed
# everything itself: ru_maxrss of this process's children, in KiB on Linux.
helper = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": seconds, "cpu_seconds": used.ru_utime + used.ru_stime,
                  "peak_kib": peak, "helper_peak_kib": helper, "pauses": pauses}))
"""


def measure_import(source: Path, db: Path) -> dict[str, Any]:
    """Import `source` into a new store at `db` in a process of its own: the harness holds
    every question, the import must not."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT, str(db), str(source)], capture_output=True, check=True
    )
    measured: dict[str, Any] = json.loads(done.stdout)
    pauses = measured.pop("pauses")
    measured["gc_pauses"] = {"all": _pauses(pauses["all"]), "full": _pauses(pauses["full"])}
    measured["peak_rss_mib"] = round(measured.pop("peak_kib") / 1024, 1)
    measured["helper_peak_rss_mib"] = round(measured.pop("helper_peak_kib") / 1024, 1)
    return measured


def file_mib(db: Path) -> float:
    """The store's size on disk: the database file and what is left beside it (WAL, index)."""
    files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    return round(sum(f.stat().st_size for f in files if f.exists()) / (1 << 20), 1)


async def bench_size(count: int, scratch: Path, seed: int, samples: int) -> dict[str, object]:
    source = scratch / f"claims-{count}.jsonl"
    questions = write_claims(source, count, seed)
    db = scratch / f"bench-{count}.db"
    imported = measure_import(source, db)
    import_seconds = float(imported["seconds"])
    source.unlink()

    asked = asked_about(questions, samples, seed)
    queries = [text for text, _question in asked]
    del questions
    # What `staffstore serve` does before its first request (proxy/heap.py): load the word
    # tables and the embedding, then collect and freeze what is alive, and from then on what
    # survives a young collection (the gate's caches), so full collections walk only what
    # lookups made last. Frozen too here: the harness's own queries.
    warm_up()
    freeze_startup_heap()
    latencies, hits = [], 0
    # A hit on a claim whose question is not the one the turn asks: another question's answer.
    false_hits: list[dict[str, str]] = []
    pauses = Pauses()
    pair = default_pair_model()
    strict_ms: list[float] = []  # served by the strict test
    hit_ms: list[float] = []  # served, by the strict test or the second look
    paired_ms: list[float] = []  # turns that reached the pair model
    unpaired_ms: list[float] = []  # every other turn (issue 41: figures with and without it)
    async with StaffStore.open(db) as store:
        for text in queries[:200]:  # warm the page cache and the normaliser
            await query_first(store, Turn(owner="bench", text=text))
        walks_before = heap_walks()
        pauses.start()
        for text, question in asked:
            scored = pair.calls
            began = time.perf_counter()
            decision = await query_first(store, Turn(owner="bench", text=text))
            elapsed = (time.perf_counter() - began) * 1000.0
            latencies.append(elapsed)
            hits += decision.hit
            if decision.hit and decision.claim is not None and decision.claim.question != question:
                false_hits.append({"asked": text, "served": decision.claim.question})
            if decision.hit:
                hit_ms.append(elapsed)
            if decision.hit and decision.threshold is None:
                strict_ms.append(elapsed)
            (paired_ms if pair.calls > scored else unpaired_ms).append(elapsed)
        pauses.stop()
        walks_after = heap_walks()
    # What a full collection would walk now (tracked objects in the collector's generations),
    # and what is left out of them (frozen): the gate's caches, mostly.
    heap_objects = {"tracked": len(gc.get_objects()), "frozen": gc.get_freeze_count()}
    thaw_startup_heap()

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
    size = file_mib(db)
    for leftover in scratch.glob(f"bench-{count}.db*"):
        leftover.unlink()
    lookup_pauses = pauses.summary()
    return {
        "claims": count,
        "import_seconds": round(import_seconds, 3),
        "import_claims_per_second": round(count / import_seconds, 1),
        # The import's own process: CPU beside wall time, since the machine may be shared.
        "import_cpu_seconds": round(imported["cpu_seconds"], 3),
        "import_peak_rss_mib": imported["peak_rss_mib"],
        "import_helper_peak_rss_mib": imported["helper_peak_rss_mib"],
        "import_gc_pauses": imported["gc_pauses"],
        "database_mib": size,
        "queries": len(queries),
        "hit_fraction": round(hits / len(queries), 4),
        # Checked turn by turn: each is counted, and the first few shown.
        "false_hits": {"count": len(false_hits), "first": false_hits[:5]},
        "query_first_ms": {
            "p50": round(percentile(latencies, 0.50), 3),
            "p90": round(percentile(latencies, 0.90), 3),
            "p99": round(percentile(latencies, 0.99), 3),
            "p999": round(percentile(latencies, 0.999), 3),
            "max": round(max(latencies), 3),
            "mean": round(statistics.fmean(latencies), 3),
        },
        "strict_hit_ms": _summary(strict_ms),
        "hit_ms": _summary(hit_ms),
        "pair_model_turn_ms": _summary(paired_ms),
        "other_turn_ms": _summary(unpaired_ms),
        # What the caches the gate fills cost the garbage collector: each full collection
        # walks every object they hold, and stops every lookup while it does.
        "full_collections": {
            "count": lookup_pauses["full"]["count"],
            "max_ms": round(lookup_pauses["full"]["max_ms"], 1),
        },
        # Every collection during the timed lookups (all generations, and the full ones).
        "gc_pauses": lookup_pauses,
        "heap_objects": heap_objects,
        # Walks of the frozen heap during the timed lookups, each one of the full collections
        # above: with no proxy to wait for a quiet second, only growth past the forced margin
        # makes one here (proxy/heap.py).
        "heap_walks": {
            "growth": walks_after[0]["growth"] - walks_before[0]["growth"],
            "freed": walks_after[1] - walks_before[1],
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
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--samples", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=ROOT / "ledgers" / "bench-store.json")
    args = parser.parse_args()
    results = []
    warm_up()
    sample_questions = [claim["question"] for claim in claims_of(1_000, args.seed)]
    pair_model = bench_pair_model(
        make_queries(sample_questions, 1_000, args.seed), sample_questions, 1_000
    )
    print(f"pair model alone: p50 {pair_model['p50']:.2f} ms p99 {pair_model['p99']:.2f} ms")
    with tempfile.TemporaryDirectory(prefix="staffstore-bench-") as scratch:
        for size in (int(s) for s in args.sizes.split(",")):
            result: dict[str, Any] = await bench_size(size, Path(scratch), args.seed, args.samples)
            results.append(result)
            q, b, gc_all = result["query_first_ms"], result["batch_jsonl"], result["gc_pauses"]
            print(
                f"{size:>7} claims: import {result['import_seconds']:.2f}s"
                f" ({result['import_claims_per_second']:,.0f}/s,"
                f" peak RSS {result['import_peak_rss_mib']:.0f} MiB"
                f" + helper {result['import_helper_peak_rss_mib']:.0f} MiB,"
                f" {result['database_mib']:.0f} MiB on disk)"
                f" | query_first p50 {q['p50']:.3f} ms p99 {q['p99']:.3f} ms"
                f" p99.9 {q['p999']:.2f} ms max {q['max']:.2f} ms"
                f" | hits {result['hit_fraction']:.0%}, false {result['false_hits']['count']}"
                f" | strict hit p50 {result['strict_hit_ms'].get('p50', 0):.3f} ms"
                f" p99 {result['strict_hit_ms'].get('p99', 0):.3f} ms"
                f" | pair-model turns {result['pair_model_turn_ms']['count']}"
                f" p99 {result['pair_model_turn_ms'].get('p99', 0):.2f} ms,"
                f" other turns p99 {result['other_turn_ms'].get('p99', 0):.2f} ms"
                f" | GCs {gc_all['all']['count']} (p99 {gc_all['all']['p99_ms']:.1f} ms,"
                f" max {gc_all['all']['max_ms']:.1f} ms),"
                f" full {gc_all['full']['count']} up to {gc_all['full']['max_ms']:.0f} ms"
                f" | objects tracked {result['heap_objects']['tracked']:,}"
                f" frozen {result['heap_objects']['frozen']:,}"
                f" | query --jsonl {b['queries_per_second']:.0f}/s"
            )
    report = {
        "benchmark": "store",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "targets": TARGETS,
        "meets_targets": meets_targets(results),
        # How the in-process lookups were run: as `staffstore serve` runs them.
        "heap": "collected and frozen after warm-up, and what survives young collections "
        "frozen from then on, as `staffstore serve` does (proxy/heap.py freeze_startup_heap); "
        "gc_pauses count every collection during the timed lookups, import_gc_pauses those of "
        "the import's own process; heap_objects are counted after the timed lookups",
        "pair_model_ms": pair_model,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    asyncio.run(main())
