"""The pair evaluation's verdicts: which hits are correct, which are false, and which the
README's strict rule calls false although the served question is the query's own text or a
paraphrase the file itself labels."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from staffstore.replays.pairs import evaluate_pairs

PAIRS = [
    # own `a` served, label 1: a correct hit
    ("Why do deploys fail on Mondays?", "Why does the deploy fail on Mondays?", 1),
    # served another pair's `a`, which the pair above labels a paraphrase of this `b`
    ("Why does the deploy fail on Fridays?", "Why does the deploy fail on Mondays?", 0),
    # the query is, word for word, another pair's `a`
    ("How do I rotate the signing key?", "Why do deploys fail on Mondays?", 0),
    # own `a` served although the pair says it is a different question: a false hit
    ("What is the rate limit of the public API?", "What is the public API's rate limit?", 0),
    # nothing stored asks it: a miss
    ("Where are the backups kept?", "Who approved the last release?", 0),
]


def test_verdicts_and_their_tally(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    lines = [
        json.dumps({"a": a, "b": b, "label": label, "id": str(i)})
        for i, (a, b, label) in enumerate(PAIRS)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ledger = asyncio.run(evaluate_pairs(path))
    verdicts = [row["verdict"] for row in ledger["rows"]]
    assert verdicts == [
        "correct_hit",
        "labelled_paraphrase_hit",
        "identical_text_hit",
        "false_hit",
        "miss",
    ]
    s = ledger["summary"]
    assert (s["correct_hits"], s["recall"]) == (1, 1.0)
    assert (s["false_hits"], s["false_hit_rate"]) == (1, 1 / 5)
    assert (s["identical_text_hits"], s["labelled_paraphrase_hits"]) == (1, 1)
    assert (s["false_hits_strict"], s["false_hit_rate_strict"]) == (3, 3 / 5)
