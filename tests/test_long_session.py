"""The long-session replay (quick): its targets hold and its ledger leaves the machine out."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from staffstore.replays.runner import run_replay


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("long")
    return out, asyncio.run(run_replay("long-session", out, quick=True))


def test_the_fact_targets_hold_on_the_quick_session(played: tuple[Path, dict[str, Any]]) -> None:
    # The token share is judged at turn 300 (`staffstore replay long-session`); a quick
    # session of 80 turns is too short for its transcript to outweigh the working set.
    targets = played[1]["summary"]["targets"]
    assert targets["present_at_least_95_percent"] and targets["revised_away_in_none"]
    assert targets["no_budget_overrun"]


def test_the_working_set_never_carries_a_revised_away_value(
    played: tuple[Path, dict[str, Any]],
) -> None:
    _, ledger = played
    assert all(not row["working_set"]["revised_away"] for row in ledger["rows"])
    assert ledger["summary"]["whole_transcript_revised_away"] > 0  # the baseline does


def test_the_last_eight_alone_mostly_miss_the_fact(played: tuple[Path, dict[str, Any]]) -> None:
    _, ledger = played
    summary = ledger["summary"]
    assert summary["tail_only_present_rate"] < summary["working_set_present_rate"]


def test_the_ledger_holds_no_time_so_it_is_the_same_everywhere(
    played: tuple[Path, dict[str, Any]],
) -> None:
    out, ledger = played
    assert sorted(p.name for p in out.iterdir()) == [
        "long-session-ledger.json", "long-session-spec.json",
    ]  # fmt: skip
    assert "_ms" not in json.dumps(ledger)


def test_the_benchmark_times_the_same_sessions() -> None:
    bench = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_long_session.py"
    assert "play_session" in bench.read_text("utf-8")
