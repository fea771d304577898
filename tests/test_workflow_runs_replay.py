"""The workflow-runs replay: every section carries every earlier lesson while they fit, the
newest in order when they do not, never passes its budget; no planted secret is found in the
database; no scoped read falls back; its ledger holds no secret; and the counting can fail."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from staffstore.memory import MemorySection, WorkflowMemory
from staffstore.replays import run_replay
from staffstore.replays.report import read_ledgers, results_markdown
from staffstore.replays.workflow_runs import judge, secrets_in_store
from staffstore.state import Scrubber
from staffstore.store import StaffStore


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("workflow-runs")
    asyncio.run(run_replay("workflow-runs", folder, quick=True))
    return folder


@pytest.fixture(scope="module")
def ledger(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "workflow-runs-ledger.json").read_text("utf-8"))
    return data


def test_every_section_carries_the_newest_lessons_within_its_budget(
    ledger: dict[str, Any],
) -> None:
    summary = ledger["summary"]
    for step in ("triage", "notify"):
        figures = summary[step]
        assert figures["lesson_order_violations"] == 0
        assert figures["dropped_without_cut_marker"] == 0
        assert figures["foreign_lessons_shown"] == 0
        assert figures["sections_over_budget"] == 0
        assert 0 < figures["section_tokens_max"] <= figures["budget"]
    assert summary["triage"]["runs_with_every_lesson"] == summary["runs"]
    assert summary["notify"]["runs_cut_newest_first"] > 0  # a budget too small for them all
    assert summary["lessons_recorded"] > 0


def test_no_secret_is_found_and_no_read_falls_back(ledger: dict[str, Any]) -> None:
    summary = ledger["summary"]
    assert summary["secrets_planted"] > 20 and summary["secrets_found"] == 0
    assert all(row["secrets_found"] == 0 for row in ledger["rows"])
    assert summary["scoped_reads"] == 8 * summary["runs"]
    assert (summary["fallbacks"], summary["other_owner_values"]) == (0, 0)


def test_runs_end_every_way_and_old_ones_fold_within_retain(ledger: dict[str, Any]) -> None:
    summary = ledger["summary"]
    assert set(summary["by_status"]) == {"done", "failed", "cancelled"}
    assert summary["raw_records_max"] == summary["retain"]
    assert summary["runs_folded"] == summary["runs"] - summary["retain"] > 0
    assert 0 < summary["digest_chars_max"] <= summary["digest_chars_cap"]
    assert summary["remember_refused_at_a_step_with_memory_off"] > 0


def test_the_spec_and_ledger_hold_no_secret(out: Path) -> None:
    for name in ("workflow-runs-spec.json", "workflow-runs-ledger.json"):
        text = (out / name).read_text("utf-8")
        assert not re.search(r"sk-or-v1-[0-9a-f]{8}|whk-[0-9a-f]{8}|pw-[0-9a-f]{8}", text)


def test_a_second_play_writes_the_same_bytes(tmp_path: Path, ledger: dict[str, Any]) -> None:
    again = asyncio.run(run_replay("workflow-runs", tmp_path, quick=True))
    assert json.dumps(again, sort_keys=True) == json.dumps(ledger, sort_keys=True)


def test_the_report_shows_the_replay(out: Path) -> None:
    section = results_markdown(read_ledgers(out))
    assert "### Workflow-runs replay (scoped state and run memory)" in section
    assert "| workflow-runs (quick) | notify |" in section


def test_judging_catches_a_lesson_dropped_without_a_marker_or_out_of_order() -> None:
    def section(*lessons: str, marker: bool = False) -> MemorySection:
        lines = ["### Lessons recorded by earlier runs", *lessons]
        if marker:
            lines.append("[... memory cut to fit its budget: 1 more entry not shown ...]")
        return MemorySection(text="\n".join(lines), tokens=10, budget=5, enabled=True)

    expected = ["- [w] newest", "- [w] older"]
    dropped = judge(section("- [w] newest"), expected, [])
    assert dropped["dropped_without_marker"] and not dropped["cut_newest_first"]
    swapped = judge(section("- [w] older", "- [w] newest"), expected, [])
    assert swapped["order_violation"] and not swapped["every_lesson"]
    assert judge(section("- [w] newest", marker=True), expected, [])["cut_newest_first"]
    assert judge(section(*expected), expected, [])["over_budget"]
    assert judge(section("- [x] foreign"), [], ["- [x] foreign"])["foreign_shown"] == 1


async def test_the_secret_count_finds_a_value_no_scrubber_was_told_of(tmp_path: Path) -> None:
    async with StaffStore.open(tmp_path / "s.db") as store:
        await WorkflowMemory(store, "acme", "w", scrubber=Scrubber()).add("code plain-0042-zz")
        assert await secrets_in_store(store, {"plain-0042-zz"}) >= 1
