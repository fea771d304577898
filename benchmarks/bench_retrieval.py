"""Does the gate's lookup still find a turn's own claim among many stored questions?

workday_dev's 150 claims go into one store beside N real questions from Quora's qqp_pool (its
distinct texts: real user questions, many about software, as distractors), and every hit turn
of workday_dev's tuning split is asked. For each turn it records whether its own claim was
among the candidates the store returned, and among those the second look reads (the nearest
few the pair model scores); and the decision. Quora's text is research-use only and not
shipped: the benchmark needs `qqp_pool.jsonl.gz` in $STAFFSTORE_EVAL_DATA or ../shared/train.
Results go to ledgers/bench-retrieval.json.

    .venv/bin/python benchmarks/bench_retrieval.py [--sizes 0,100000]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from staffstore.gate import query_first, warm_up
from staffstore.gate.query_first import (
    compared_candidates,
    first_candidates,
    second_look_candidates,
    widened_candidates,
)
from staffstore.models import NewClaim, Turn
from staffstore.replays.evaluations import QUORA_POOL, eval_dirs, find
from staffstore.replays.splits import workday_split
from staffstore.store import StaffStore

ROOT = Path(__file__).resolve().parent.parent
CLOCK = datetime(2026, 1, 1, tzinfo=UTC)
OWNER = "bench"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def distractors(pool: Path, count: int) -> list[str]:
    """The first `count` distinct questions of the pool, in file order."""
    seen: dict[str, None] = {}
    for row in read_jsonl(pool):
        for text in (row["a"], row["b"]):
            if text.strip().endswith("?"):
                seen.setdefault(" ".join(text.split()), None)
        if len(seen) >= count:
            break
    return list(seen)[:count]


def read_set(sync: Any, text: str) -> tuple[list[Any], list[Any]]:
    """The candidates query_first's lookup returns for a turn (widened as on a miss), and those
    its strict test and second look read: the gate's own functions, not a copy of them."""
    turn = Turn(owner=OWNER, text=text, now=CLOCK)
    found, some_words, names = first_candidates(sync, turn)
    found += widened_candidates(sync, turn, found, some_words)
    compared = compared_candidates(text, found, names)
    strict = [claim for claim, c in compared if c.same_question]
    return found, strict + [claim for claim, _c in second_look_candidates(text, compared)]


async def bench_size(count: int, dev: list[dict[str, Any]], pool: Path | None) -> dict[str, Any]:
    claims = [row for row in dev if row["kind"] == "claim"]
    turns = [
        row
        for row in dev
        if row["kind"] == "turn"
        and row["label"] == "hit"
        and workday_split(row["claim"], row["id"]) == "tune"
    ]
    others = distractors(pool, count) if pool is not None and count else []
    with tempfile.TemporaryDirectory(prefix="staffstore-retrieval-") as scratch:
        async with StaffStore.open(Path(scratch) / "r.db") as store:
            new = [
                NewClaim(owner=OWNER, question=c["question"], answer=c["answer"]) for c in claims
            ]
            new += [NewClaim(owner=OWNER, question=q, answer="(a distractor)") for q in others]
            stored = await store.ensure_claims(new, now=CLOCK)
            # The claims were stored first: the distractors follow them.
            pairs = zip(stored[: len(claims)], claims, strict=True)
            ids = {claim.id: source["id"] for (claim, _n), source in pairs}
            counts: Counter[str] = Counter()
            for turn in turns:
                found, read = await store.run_sync(lambda s, t=turn: read_set(s, t["text"]))
                counts["retrieved"] += any(ids.get(c.id) == turn["claim"] for c in found)
                counts["read_by_second_look"] += any(ids.get(c.id) == turn["claim"] for c in read)
                decision = await query_first(store, Turn(owner=OWNER, text=turn["text"], now=CLOCK))
                served = ids.get(decision.claim_id or "") if decision.hit else None
                counts["served_own_claim"] += served == turn["claim"]
                counts["served_another"] += decision.hit and served != turn["claim"]
    return {"stored_questions": len(claims) + len(others), "hit_turns": len(turns), **counts}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,100000", help="distractors beside the claims")
    parser.add_argument("--out", type=Path, default=ROOT / "ledgers" / "bench-retrieval.json")
    args = parser.parse_args()
    pool = find(QUORA_POOL, eval_dirs())
    if pool is None:  # Quora is not shipped: say so, and keep the committed ledger
        print(f"bench_retrieval skipped: no {QUORA_POOL} in {', '.join(map(str, eval_dirs()))}")
        return
    warm_up()
    dev = read_jsonl(ROOT / "replays" / "pairs" / "workday_dev.jsonl")
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        result = await bench_size(size, dev, pool)
        results.append(result)
        print(json.dumps(result))
    report = {
        "benchmark": "retrieval",
        "what": "workday_dev tuning-split hit turns asked of a store of its 150 claims beside "
        "N distinct Quora qqp_pool questions; counts of turns whose own claim the lookup "
        "returned, the second look read, and the gate served",
        "results": results,
    }
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    asyncio.run(main())
