"""What the gate's question caches buy and cost: memory and lookups at each cache size.

The gate keeps each question's analyses (normalize, words, slots, ...) in LRU caches of
`staffstore.text.interning.QUESTIONS_CACHED` entries each, and a server keeps every entry in
memory. This fills a store with 100,000 synthetic claims (bench_store.py's, through the
project's importer), then, for each cache size in a process of its own, times query_first over
three phases as `staffstore serve` runs it (warmed up, startup heap frozen):

- 10,000 hits, each a different stored question asked once (lower case, no question mark);
- 5,000 turns drawn from 500 hot questions (a hot set, as a team asks its common questions);
- 2,000 misses (stored questions with the last word changed), which read the most candidates.

and records after each phase the process's anonymous resident memory (RssAnon: the heap, not
the mapped database or libraries), p50/p99/mean of the lookups, and at the end the caches' hit
rates. Sizes run in turn, --rounds times, so a slow minute of the machine falls on each.
Results go to ledgers/bench-gate-caches.json. Run:
`.venv/bin/python benchmarks/bench_gate_caches.py [--sizes 1024,2048,16384] [--rounds 2]`.
"""

from __future__ import annotations

import argparse
import asyncio
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
from typing import Any

# bench_store imports the gate, and the size must be set before that: the parent imports it,
# each child only the gate (after setting the size).
sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent
#: The caches whose hit rates the ledger shows (module, function): the ones every lookup reads.
SHOWN = (
    ("matching", "normalize"),
    ("words", "words"),
    ("slots", "slots"),
    ("framing", "bare_question"),
    ("similarity", "text_vector"),
)


def _anon_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no RssAnon in /proc/self/status")


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50_ms": round(ordered[len(ordered) // 2], 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 3),
        "mean_ms": round(statistics.fmean(ordered), 3),
    }


def phases(questions: list[str], seed: int) -> dict[str, list[tuple[str, bool]]]:
    """Each phase's turns, with whether each must be served."""
    from bench_store import near_miss_word

    rng = random.Random(seed)
    hits = [q.lower().rstrip("?") for q in rng.sample(questions, 10_000)]
    hot = rng.sample(questions, 500)
    repeats = [rng.choice(hot).lower().rstrip("?") for _ in range(5_000)]
    misses = []
    for question in rng.sample(questions, 2_000):
        words = question.split()
        words[-1] = near_miss_word(rng) + "?"
        misses.append(" ".join(words))
    return {
        "hits_each_once": [(text, True) for text in hits],
        "hot_set_repeats": [(text, True) for text in repeats],
        "misses": [(text, False) for text in misses],
    }


def child(size: int, db: str, turns_file: str) -> dict[str, Any]:
    """One cache size, measured in this process (set before the gate is imported)."""
    import staffstore.text.interning as interning

    if "staffstore.text.matching" in sys.modules:
        raise RuntimeError("the gate was imported before its cache size was set")
    interning.QUESTIONS_CACHED = size
    import importlib

    from staffstore.gate import query_first, warm_up
    from staffstore.models import Turn
    from staffstore.proxy.heap import freeze_startup_heap
    from staffstore.store import StaffStore

    warm_up()
    freeze_startup_heap()
    turns: dict[str, list[tuple[str, bool]]] = json.loads(Path(turns_file).read_text("utf-8"))

    async def run() -> dict[str, Any]:
        measured: dict[str, Any] = {}
        async with StaffStore.open(db) as store:
            for text, _ in turns["misses"][:200]:  # the page cache and the normaliser
                await query_first(store, Turn(owner="bench", text=text + " warm"))
            measured["anon_mib_before"] = _anon_mib()
            for name, phase in turns.items():
                times = []
                for text, served in phase:
                    began = time.perf_counter()
                    decision = await query_first(store, Turn(owner="bench", text=text))
                    times.append((time.perf_counter() - began) * 1000.0)
                    if decision.hit != served:
                        raise AssertionError(f"{text!r}: served {decision.hit}, expected {served}")
                measured[name] = {**_summary(times), "anon_mib_after": _anon_mib()}
        return measured

    measured = asyncio.run(run())
    hit_rates = {}
    for module, function in SHOWN:
        info = getattr(importlib.import_module(f"staffstore.text.{module}"), function).cache_info()
        calls = info.hits + info.misses
        hit_rates[f"{module}.{function}"] = round(info.hits / calls, 3) if calls else None
    measured["hit_rates"] = hit_rates
    measured["anon_mib_growth"] = round(
        measured["misses"]["anon_mib_after"] - measured["anon_mib_before"], 1
    )
    return measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,2048,16384")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=ROOT / "ledgers" / "bench-gate-caches.json")
    parser.add_argument("--child", nargs=3, metavar=("SIZE", "DB", "TURNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        size, db, turns_file = args.child
        print(json.dumps(child(int(size), db, turns_file)))
        return 0

    from bench_store import measure_import, write_claims

    from staffstore.text.interning import QUESTIONS_CACHED

    sizes = [int(s) for s in args.sizes.split(",")]
    runs: dict[int, list[dict[str, Any]]] = {size: [] for size in sizes}
    with tempfile.TemporaryDirectory(prefix="staffstore-bench-") as scratch:
        source, db = Path(scratch) / "claims.jsonl", Path(scratch) / "bench.db"
        questions = write_claims(source, args.claims, args.seed)
        measure_import(source, db)
        turns_file = Path(scratch) / "turns.json"
        turns_file.write_text(json.dumps(phases(questions, args.seed)), encoding="utf-8")
        del questions
        for round_ in range(args.rounds):
            for size in sizes:
                done = subprocess.run(
                    [sys.executable, __file__, "--child", str(size), str(db), str(turns_file)],
                    capture_output=True,
                    check=True,
                    text=True,
                )
                measured = json.loads(done.stdout)
                runs[size].append(measured)
                print(
                    f"round {round_ + 1} size {size:>6}: heap +{measured['anon_mib_growth']} MiB;"
                    + "".join(
                        f" {name} p50 {phase['p50_ms']:.3f} p99 {phase['p99_ms']:.3f} ms;"
                        for name, phase in measured.items()
                        if isinstance(phase, dict) and "p50_ms" in phase
                    )
                    + f" hit rates {measured['hit_rates']}",
                    flush=True,
                )
    report = {
        "benchmark": "gate-caches",
        "command": "python benchmarks/bench_gate_caches.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "workload": {
            "claims": args.claims,
            "phases": "hits_each_once: 10,000 stored questions, each once; hot_set_repeats: "
            "5,000 turns over 500 questions; misses: 2,000 stored questions with the last "
            "word changed; in this order, in one process per size and round",
            "memory": "RssAnon before the phases (after warm-up and 200 lookups) and after each",
        },
        "shipped_size": QUESTIONS_CACHED,
        "results": {str(size): runs[size] for size in sizes},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
