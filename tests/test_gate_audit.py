"""The honest protocol: training files cut in thirds before anyone looks, and the budget audit.

The stores are real SQLite files in temporary folders and the gate is the real one; the ledgers
the audit reads are written by the real replay.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest

from staffstore.gate.scoring import DEFAULT_BUDGET, default_model
from staffstore.replays.gate_card import audit_verdict, gate_card_markdown, upper_bound
from staffstore.replays.report import read_ledgers
from staffstore.replays.splits import THIRDS, workday_third
from staffstore.replays.workday_dev import play_dev_set


def third_by_hand(key: str) -> str:
    return ("fit", "calibrate", "test")[int(hashlib.sha256(key.encode()).hexdigest(), 16) % 3]


def test_a_claims_third_is_the_sha256_rule_of_the_training_readme() -> None:
    for claim in ("A001", "B042", "C100"):
        assert workday_third(claim) == third_by_hand(claim)


def test_a_turn_goes_with_its_claim_and_an_unrelated_turn_by_its_own_id() -> None:
    assert workday_third("A001", "AT0001") == workday_third("A001")
    assert workday_third(None, "AT0701") == third_by_hand("AT0701")
    with pytest.raises(ValueError):
        workday_third(None, None)


def test_the_upper_bound_of_no_false_hits_is_the_rule_of_three() -> None:
    # 0 of n: the one-sided 95% Clopper-Pearson bound is 1 - 0.05 ** (1 / n), about 3 / n.
    for n in (300, 1_000, 31_089):
        assert upper_bound(0, n) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-6)


def test_the_upper_bound_leaves_five_percent_below_it() -> None:
    # At the bound, seeing at most k false hits has probability 5%.
    k, n = 3, 660
    bound = upper_bound(k, n)
    below = sum(math.comb(n, i) * bound**i * (1 - bound) ** (n - i) for i in range(k + 1))
    assert below == pytest.approx(0.05, abs=1e-6)
    assert bound > k / n


def test_a_rate_over_the_budget_is_exceeded_and_a_small_clean_split_is_unconfirmed() -> None:
    assert audit_verdict(3, 660, 0.001) == "exceeded"
    assert audit_verdict(0, 660, 0.001) == "within, unconfirmed"
    assert audit_verdict(0, 31_089, 0.001) == "holds"
    assert audit_verdict(2, 660, 0.002) == "exceeded"
    assert audit_verdict(1, 660, 0.002) == "within, unconfirmed"


def write_training_file(path: Path) -> Path:
    """A training-style file: claims A001..A009 (ids cut in thirds by the hash), each with a
    hit turn that repeats the claim and a miss turn that asks another claim's question."""
    lines: list[dict[str, Any]] = []
    questions = {
        f"A{n:03d}": f"Which port does service number {n} listen on?" for n in range(1, 10)
    }
    for cid, question in questions.items():
        lines.append({"kind": "claim", "id": cid, "question": question, "answer": f"port {cid}",
                      "agent": "a", "repository": None, "revision": None})  # fmt: skip
    for n, (cid, question) in enumerate(questions.items(), start=1):
        other = questions["A001" if cid != "A001" else "A002"]
        lines.append({"kind": "turn", "id": f"AT{2 * n:04d}", "claim": cid, "label": "hit",
                      "style": "casual", "text": question})  # fmt: skip
        lines.append({"kind": "turn", "id": f"AT{2 * n + 1:04d}", "claim": cid,
                      "label": "miss", "style": "changed_entity", "text": other})  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def training_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("train")
    source = write_training_file(folder / "workday_train_z.jsonl")
    out = folder / "ledgers" / "workday_train_z-ledger.json"
    return out, asyncio.run(play_dev_set(source, out, budgets=[DEFAULT_BUDGET]))


def test_a_training_file_is_played_in_its_three_thirds(
    training_ledger: tuple[Path, dict[str, Any]],
) -> None:
    _, ledger = training_ledger
    assert ledger["name"] == "workday_train_z"
    assert list(ledger["splits"]) == list(THIRDS)
    expected = {split: 0 for split in THIRDS}
    for n in range(1, 10):
        expected[workday_third(f"A{n:03d}")] += 2
    entry = ledger["budgets"][0]
    assert {split: entry[split]["turns"] for split in THIRDS} == expected
    # Every miss turn asks another claim's stored question word for word: a false hit each.
    assert {split: entry[split]["false_hits"] for split in THIRDS} == {
        split: turns // 2 for split, turns in expected.items()
    }
    assert ledger["splits"]["fit"]["used_for_fitting"] is True
    assert ledger["splits"]["test"]["used_for_fitting"] is False


def test_only_the_fit_third_lists_its_false_hits(
    training_ledger: tuple[Path, dict[str, Any]],
) -> None:
    _, ledger = training_ledger
    entry = ledger["budgets"][0]
    assert "false_hit_turns" in entry["fit"]
    assert "false_hit_turns" not in entry["calibrate"]
    assert "false_hit_turns" not in entry["test"]


def test_the_gate_card_shows_a_test_third_over_its_budget_as_exceeded(
    training_ledger: tuple[Path, dict[str, Any]],
) -> None:
    path, ledger = training_ledger
    card = gate_card_markdown(read_ledgers(path.parent), default_model().params, DEFAULT_BUDGET)
    assert card is not None
    test = ledger["budgets"][0]["test"]
    (row,) = [line for line in card.splitlines() if line.startswith("| workday_train_z TEST")]
    assert f"{test['false_hits']}/{test['turns']}" in row
    assert "**EXCEEDED**" in row
    assert "**Exceeded** at 0.1%" in card
