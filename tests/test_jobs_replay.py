"""The jobs replay: its targets hold, its counts add up, and one seed writes one set of bytes.

The quick script (12 requests: first requests, duplicates of finished and running jobs, a crash
mid-launch and its relaunch, a killed worker, the relaunch that finds it lost, and the launch
after that) runs through real local processes; each test states one fact about its ledger.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from staffstore.replays import run_replay
from staffstore.replays.jobs import EXPECTED, POLICY, SUMMARY_DEFINITIONS


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("jobs")
    return out, asyncio.run(run_replay("jobs", out, quick=True))


@pytest.fixture(scope="module")
def ledger(played: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    return played[1]


def test_the_quick_script_holds_every_kind_of_gold(ledger: dict[str, Any]) -> None:
    assert {row["gold"] for row in ledger["rows"]} == {"launch", "reuse", "attach", "lost"}


def test_every_request_does_what_its_gold_label_expects(ledger: dict[str, Any]) -> None:
    wrong = [row for row in ledger["rows"] if row["action"] != EXPECTED[row["gold"]]]
    assert wrong == []
    assert ledger["summary"]["correct"] == ledger["summary"]["requests"]


def test_no_duplicate_launch_no_wrong_reuse_and_every_vanished_worker_lost(
    ledger: dict[str, Any],
) -> None:
    summary = ledger["summary"]
    assert (summary["duplicate_launches"], summary["wrong_reuses"]) == (0, 0)
    assert summary["implement_reuses"] == 0
    assert summary["lost_within_deadline"] == summary["vanished"] > 0
    assert summary["reported_succeeded_after_vanishing"] == 0


def test_a_lost_job_used_exactly_the_poll_limit(ledger: dict[str, Any]) -> None:
    lost = [row for row in ledger["rows"] if row["action"] == "lost"]
    assert lost and all(row["polls_until_lost"] == POLICY.poll_limit for row in lost)
    assert all(row["job_status"] == "lost" for row in lost)


def test_counts_add_up_and_agree_with_the_stores_receipts(ledger: dict[str, Any]) -> None:
    summary, rows = ledger["summary"], ledger["rows"]
    actions = Counter(row["action"] for row in rows)
    for action in ("launched", "reused", "attached", "lost"):
        assert summary[action] == actions[action] == ledger["store_ledger"][action]
    assert ledger["store_ledger"]["dispatches"] == summary["requests"] == len(rows)


def test_each_recorded_job_ran_its_command_once(ledger: dict[str, Any]) -> None:
    summary = ledger["summary"]
    assert summary["jobs_recorded"] == summary["launched"]
    assert summary["command_runs"] == summary["jobs_recorded"]


def test_the_summary_has_exactly_the_documented_names(ledger: dict[str, Any]) -> None:
    assert set(ledger["summary"]) == set(SUMMARY_DEFINITIONS)
    assert ledger["definitions"] == SUMMARY_DEFINITIONS


def test_one_seed_writes_one_set_of_bytes(
    played: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    first, _ = played
    asyncio.run(run_replay("jobs", tmp_path, quick=True))
    for name in ("jobs-ledger.json", "jobs-spec.json"):
        assert (tmp_path / name).read_bytes() == (first / name).read_bytes()
    assert json.loads((first / "jobs-ledger.json").read_text())["quick"] is True
