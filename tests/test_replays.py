"""The offline replays: their files, their arithmetic, their determinism, their honesty.

Quick replays run once per module on a real SQLite file through the real gate and mouth; each
test then states one fact about what they wrote.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from staffstore.errors import InputError
from staffstore.replays import REPLAYS, run_all, run_replay
from staffstore.replays.harness import SUMMARY_FIELDS
from staffstore.replays.memory_report import MEMORY_REPLAYS
from staffstore.replays.paraphrase_report import PARAPHRASE_REPLAYS
from staffstore.replays.pool import findings
from staffstore.replays.report import JOB_REPLAYS, STATE_REPLAYS
from staffstore.replays.session_report import SESSION_REPLAYS
from staffstore.text.matching import normalize

NAMES = sorted(REPLAYS)
#: The replays of turns (the jobs replay counts dispatches: see test_jobs_replay.py; the
#: wakeups replay counts wake-ups: see test_wakeups_replay.py; the workflow-runs replay counts
#: runs: see test_workflow_runs_replay.py; the long-session replay judges prompts: see
#: test_long_session.py; the kept-paraphrase replay reuses paid answers: see
#: test_kept_paraphrase.py).
TURN_NAMES = sorted(
    set(REPLAYS)
    - JOB_REPLAYS
    - STATE_REPLAYS
    - MEMORY_REPLAYS
    - SESSION_REPLAYS
    - PARAPHRASE_REPLAYS
)


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ledgers")
    asyncio.run(run_all(path, quick=True))
    return path


def load(out_dir: Path, name: str, kind: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out_dir / f"{name}-{kind}.json").read_text("utf-8"))
    return data


def ledgers(out_dir: Path) -> list[dict[str, Any]]:
    return [load(out_dir, name, "ledger") for name in TURN_NAMES]


def test_every_replay_writes_a_spec_and_a_ledger(out_dir: Path) -> None:
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(
        f"{name}-{kind}.json" for name in NAMES for kind in ("spec", "ledger")
    )


def test_run_replay_returns_the_ledger_it_writes(tmp_path: Path) -> None:
    ledger = asyncio.run(run_replay("single", tmp_path, quick=True))
    assert ledger == load(tmp_path, "single", "ledger")


def test_summary_has_exactly_the_documented_names(out_dir: Path) -> None:
    for ledger in ledgers(out_dir):
        extra = {"novel_fraction"} if ledger["name"] == "workday" else set()
        assert set(ledger["summary"]) == set(SUMMARY_FIELDS) | extra


def test_hits_and_misses_add_up_to_turns(out_dir: Path) -> None:
    for ledger in ledgers(out_dir):
        rows, summary = ledger["rows"], ledger["summary"]
        assert summary["turns"] == len(rows)
        assert summary["hits"] + summary["misses"] == summary["turns"]
        assert summary["hits"] == sum(row["outcome"] == "hit" for row in rows)


def test_rates_are_counts_over_turns(out_dir: Path) -> None:
    for ledger in ledgers(out_dir):
        summary = ledger["summary"]
        turns = summary["turns"]
        assert summary["avoidance"] == summary["hits"] / turns
        assert summary["false_hit_rate"] == summary["false_hits"] / turns
        assert summary["stale_hit_rate"] == summary["stale_hits"] / turns


def test_false_hits_are_recomputed_from_gold_labels(out_dir: Path) -> None:
    for ledger in ledgers(out_dir):
        false_hits = [
            row
            for row in ledger["rows"]
            if row["outcome"] == "hit"
            and (row["gold"] == "miss" or row["claim_id"] != row["expected_claim_id"])
        ]
        assert ledger["summary"]["false_hits"] == len(false_hits)
        assert all(row["false_hit"] == (row in false_hits) for row in ledger["rows"])


def test_stale_hits_and_conflict_picks_are_counted_from_rows(out_dir: Path) -> None:
    for ledger in ledgers(out_dir):
        rows = ledger["rows"]
        assert ledger["summary"]["stale_hits"] == sum(row["stale_hit"] for row in rows)
        assert ledger["summary"]["conflict_picks"] == sum(row["conflict_pick"] for row in rows)
        assert not any(row["outcome"] == "miss" and row["stale_hit"] for row in rows)


def test_gold_hit_recall_counts_turns_served_their_expected_claim(out_dir: Path) -> None:
    for ledger in ledgers(out_dir):
        gold = [row for row in ledger["rows"] if row["gold"] == "hit"]
        served = [row for row in gold if row["claim_id"] == row["expected_claim_id"]]
        assert ledger["summary"]["gold_hits"] == len(gold)
        assert ledger["summary"]["gold_hit_recall"] == len(served) / len(gold)
        # The workday lists gold misses of every novel fraction; its rows are those of 5%.
        listed = [m for m in ledger["gold_misses"] if m.get("novel_fraction", 0.05) == 0.05]
        assert len(listed) == len(gold) - len(served)


def test_mouth_is_called_once_per_miss_and_never_on_a_hit(out_dir: Path) -> None:
    for ledger in ledgers(out_dir):
        rows, summary = ledger["rows"], ledger["summary"]
        assert all(row["calls"] == (1 if row["outcome"] == "miss" else 0) for row in rows)
        assert summary["inference_calls"] == summary["misses"] == sum(r["calls"] for r in rows)


def test_receipts_agree_with_the_rows(out_dir: Path) -> None:
    for name in ("single", "hostile"):
        ledger = load(out_dir, name, "ledger")
        receipts, summary = ledger["store_ledger"], ledger["summary"]
        assert receipts["attempted_calls"] == summary["inference_calls"]
        assert receipts["avoided_calls"] == summary["hits"]
        assert receipts["cost_usd"] == summary["known_cost_usd"]


def test_known_cost_is_the_sum_of_reported_costs(out_dir: Path) -> None:
    for ledger in ledgers(out_dir):
        rows = ledger["rows"]
        costs = [row["cost_usd"] for row in rows if row["cost_usd"] is not None]
        assert ledger["summary"]["known_cost_usd"] == round(sum(costs), 8)
        assert len(costs) == ledger["summary"]["misses"]
        assert all(row["prompt_tokens"] is None for row in rows if row["outcome"] == "hit")


def test_two_runs_write_byte_identical_files(out_dir: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    asyncio.run(run_all(tmp_path, quick=True, progress=lambda *done: seen.append(done)))
    for path in out_dir.iterdir():
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
    # The progress callback heard of each replay before it and once all were played.
    assert seen == [(played, len(REPLAYS)) for played in range(len(REPLAYS) + 1)]


def test_another_seed_scripts_another_order(tmp_path: Path) -> None:
    first = asyncio.run(run_replay("hostile", tmp_path / "a", seed=7, quick=True))
    second = asyncio.run(run_replay("hostile", tmp_path / "b", seed=8, quick=True))
    assert [r["text"] for r in first["rows"]] != [r["text"] for r in second["rows"]]


def test_ledger_rows_carry_the_spec_gold_labels(out_dir: Path) -> None:
    for name in ("single", "hostile"):
        turns = load(out_dir, name, "spec")["turns"]
        rows = load(out_dir, name, "ledger")["rows"]
        assert [(t["turn"], t["gold"], t["text"]) for t in turns] == [
            (r["turn"], r["gold"], r["text"]) for r in rows
        ]


def test_single_opens_with_one_paid_first_look(out_dir: Path) -> None:
    first, *rest = load(out_dir, "single", "ledger")["rows"]
    assert (first["gold"], first["outcome"], first["calls"]) == ("miss", "miss", 1)
    assert {row["gold"] for row in rest} == {"hit"}


def test_workday_summarises_every_novel_fraction(out_dir: Path) -> None:
    ledger = load(out_dir, "workday", "ledger")
    assert [s["novel_fraction"] for s in ledger["summaries"]] == [0.05, 0.10, 0.20]
    assert ledger["summary"] == ledger["summaries"][0]
    assert sum(window["turns"] for window in ledger["windows"]) == len(ledger["rows"])
    assert sum(window["hits"] for window in ledger["windows"]) == ledger["summary"]["hits"]


def test_workday_recalls_only_findings_already_looked_at(out_dir: Path) -> None:
    for run in load(out_dir, "workday", "spec")["runs"]:
        first_look = {
            t["finding"]: t["turn"] for t in run["turns"] if t["category"] == "first_look"
        }
        for turn in run["turns"]:
            if turn["category"] == "recall":
                assert first_look[turn["finding"]] < turn["turn"]


def test_workday_first_looks_match_the_novel_fraction(out_dir: Path) -> None:
    for run in load(out_dir, "workday", "spec")["runs"]:
        turns = sum(run["mix"].values())
        assert run["mix"]["first_look"] == round(turns * run["novel_fraction"])
        assert len(run["claims"]) == run["mix"]["first_look"]


def test_hostile_categories_partition_the_turns(out_dir: Path) -> None:
    ledger = load(out_dir, "hostile", "ledger")
    categories = ledger["categories"]
    assert sum(c["turns"] for c in categories.values()) == ledger["summary"]["turns"]
    assert categories["paraphrase"]["gold"] == ["hit"]
    assert all(c["gold"] == ["miss"] for name, c in categories.items() if name != "paraphrase")


def test_hostile_expected_claims_are_stored_claims(out_dir: Path) -> None:
    spec = load(out_dir, "hostile", "spec")
    stored = {claim["id"]: claim for claim in spec["claims"]}
    for turn in spec["turns"]:
        if turn["gold"] == "hit":
            assert stored[turn["expected_claim_id"]]["role"] in {"live", "superseding"}


def test_unknown_replay_name_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        asyncio.run(run_replay("weekend", tmp_path))


def test_pool_findings_ask_distinct_questions() -> None:
    keys = [normalize(finding.question).key for finding in findings()]
    assert len(set(keys)) == len(keys)
    assert len(findings()) >= 80  # the 20% workday needs 80 distinct first looks
