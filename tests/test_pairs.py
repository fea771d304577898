"""The pair evaluation's verdicts: which hits are correct, which are false, and which the
README's strict rule calls false although the served question is the query's own text or a
paraphrase the file itself labels."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from staffstore.errors import InputError
from staffstore.replays.pairs import evaluate_pairs, read_pairs

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


def test_the_public_releases_field_names_and_numeric_ids_are_read(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    lines = [
        # Quora's release: question1/question2/is_duplicate, numeric ids
        {"id": 7, "qid1": 13, "qid2": 14, "question1": "What is X?", "question2": "What's X?",
         "is_duplicate": 1},
        # PAWS's release: sentence1/sentence2, a numeric id
        {"id": 8, "sentence1": "A met B in 1990 .", "sentence2": "B met A in 1990 .", "label": 0},
        {"a": "Why?", "b": "How?", "label": 0, "source": None},
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    pairs = read_pairs(path)
    assert [(p.a, p.b, p.label, p.id, p.source) for p in pairs] == [
        ("What is X?", "What's X?", 1, "7", "unknown"),
        ("A met B in 1990 .", "B met A in 1990 .", 0, "8", "unknown"),
        ("Why?", "How?", 0, None, "unknown"),
    ]


def test_a_label_other_than_0_or_1_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = json.dumps({"a": "Why?", "b": "How?", "label": 1})
    path.write_text(good + "\n" + json.dumps({"a": "x", "b": "y", "label": 2}) + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl:2: label must be 0 or 1"):
        read_pairs(path)
