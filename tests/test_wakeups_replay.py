"""The wakeups replay: no wake-up's prompt carries a superseded value, the section stays under
its cap, every write ends as the replay's own record predicts, and the counting can fail."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from staffstore.models import Message
from staffstore.replays import run_replay
from staffstore.replays.report import read_ledgers, results_markdown
from staffstore.replays.wakeups import Record, _shown
from staffstore.state.section import HEADER

NOON = datetime(2026, 8, 11, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("wakeups")
    return asyncio.run(run_replay("wakeups", out, quick=True))


def test_no_prompt_carries_a_superseded_or_missing_value(ledger: dict[str, Any]) -> None:
    summary = ledger["summary"]
    assert summary["wakeups"] == len(ledger["rows"]) > 20
    assert summary["prompts_with_superseded_value"] == 0
    assert summary["prompts_missing_a_current_value"] == 0
    assert summary["prompts_with_agent_state"] == 0


def test_the_script_exercises_conflicts_expiry_and_the_notes_failure(
    ledger: dict[str, Any],
) -> None:
    summary = ledger["summary"]
    assert summary["writes"]["sets_refused"] >= 1  # two patrols changed one rule at once
    assert summary["expired_keys_left_out"] >= 1  # the intraday stop-loss expired at 13:30
    done, total = (int(n) for n in summary["writes_as_predicted"].split("/"))
    assert done == total > 0
    assert summary["notes_baseline_prompts_with_superseded_value"] > 0


def test_the_section_is_paid_for_and_capped(ledger: dict[str, Any]) -> None:
    summary = ledger["summary"]
    assert 0 < summary["section_bytes_max"] <= summary["section_cap_bytes"] == 3_072
    first = ledger["rows"][0]
    assert first["section_bytes"] == 0 and first["shown"] == {}  # nothing set yet: no section
    assert all(row["section_bytes"] > 0 for row in ledger["rows"][1:])


def test_a_second_play_writes_the_same_bytes(tmp_path: Path, ledger: dict[str, Any]) -> None:
    again = asyncio.run(run_replay("wakeups", tmp_path, quick=True))
    assert json.dumps(again, sort_keys=True) == json.dumps(ledger, sort_keys=True)


def test_the_report_shows_the_wakeups_figures(tmp_path: Path) -> None:
    asyncio.run(run_replay("wakeups", tmp_path, quick=True))
    section = results_markdown(read_ledgers(tmp_path))
    assert "### Wakeups replay (working state)" in section
    assert "| wakeups (quick) |" in section


def test_a_superseded_line_in_a_prompt_would_be_seen() -> None:
    record = Record()
    record.set("stop_loss", "262", None, NOON + timedelta(hours=1))
    record.set("stop_loss", "254", "262", None)
    section = HEADER + "\n- stop_loss = 262 (set 2026-08-11 09:04 UTC; reason: plan)"
    shown, size = _shown([Message(role="system", content=section)])
    assert shown == {"stop_loss": "262"} and size == len(section.encode())
    assert record.current(NOON)["stop_loss"] != shown["stop_loss"]


def test_the_record_applies_compare_and_swap_and_expiry() -> None:
    record = Record()
    assert record.set("k", "1", None, NOON)
    assert not record.set("k", "2", "0", None)
    assert record.current(NOON - timedelta(minutes=1)) == {"k": "1"}
    assert record.current(NOON) == {} and record.expired(NOON) == ["k"]
    assert record.set("k", "2", "1", None)  # compared with the stored value, expired or not
