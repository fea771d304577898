"""Receipts a user can analyse (issue 13): filters, exports in CSV and JSON Lines that hold
every matching receipt, and the ledger period by period."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ok
from typer.testing import CliRunner, Result

from staffstore.cli.app import app
from staffstore.models import Receipt
from staffstore.store import StaffStore

Cli = Callable[..., Result]
DAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "STAFFSTORE_DB", "STAFFSTORE_OWNER", "STAFFSTORE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent-staffstore-config")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "s.db"

    async def fill() -> None:
        async with StaffStore.open(path) as store:
            session = await store.ensure_session("acme", "standup")
            for number, (hours, outcome, reason, cost) in enumerate([
                (0, "hit", "exact", None), (1, "miss", "no_candidate", 0.0001),
                (2, "miss", "stale", None), (26, "hit", "paraphrase", None),
                (27, "miss", "no_candidate", 0.0002),
            ]):  # fmt: skip
                started = DAY + timedelta(hours=hours)
                await store.add_receipt(Receipt(
                    id=f"rcpt_{number}", owner="acme", outcome=outcome, reason=reason,
                    status="hit" if outcome == "hit" else "ok", cost_usd=cost,
                    prompt_tokens=None if outcome == "hit" else 5,
                    completion_tokens=None if outcome == "hit" else 7,
                    inference_avoided=outcome == "hit", inference_attempted=outcome == "miss",
                    latency_ms=1.0, started_at=started, finished_at=started,
                    session_id=session if number < 2 else None, question=f"question {number}",
                ))  # fmt: skip
            await store.add_receipt(Receipt(
                id="rcpt_bob", owner="bob", outcome="miss", reason="no_candidate", status="ok",
                inference_avoided=False, inference_attempted=True, latency_ms=1.0,
                started_at=DAY, finished_at=DAY,
            ))  # fmt: skip

    asyncio.run(fill())
    yield path


@pytest.fixture
def cli(db: Path) -> Cli:
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["--db", str(db), *args])


def ids(cli: Cli, *args: str) -> list[str]:
    out: list[dict[str, Any]] = json.loads(ok(cli("receipts", "--json", *args)).stdout)
    return [receipt["id"] for receipt in out]


def test_receipts_filter_by_time_session_outcome_and_reason(cli: Cli) -> None:
    assert ids(cli, "--owner", "acme", "--since", "2026-03-03T00:00:00") == ["rcpt_4", "rcpt_3"]
    assert ids(cli, "--owner", "acme", "--until", "2026-03-02T10:00:00") == ["rcpt_0"]
    assert ids(cli, "--owner", "acme", "--session", "standup") == ["rcpt_1", "rcpt_0"]
    assert ids(cli, "--owner", "acme", "--outcome", "hit") == ["rcpt_3", "rcpt_0"]
    assert ids(cli, "--reason", "no_candidate") == ["rcpt_4", "rcpt_1", "rcpt_bob"]


def test_receipts_export_jsonl_holds_every_matching_receipt(cli: Cli) -> None:
    result = ok(cli("receipts", "export", "--format", "jsonl", "--owner", "acme"))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["id"] for row in rows] == [f"rcpt_{n}" for n in (4, 3, 2, 1, 0)]
    assert rows[1]["cost_usd"] is None  # unknown stays unknown
    assert "exported 5 receipts" in result.stderr


def test_receipts_export_csv_has_a_header_and_empty_unknowns(cli: Cli) -> None:
    result = ok(cli("receipts", "export", "--format", "csv", "--outcome", "miss", "--owner",
                    "acme"))  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["id"] for row in rows] == ["rcpt_4", "rcpt_2", "rcpt_1"]
    assert rows[1]["cost_usd"] == "" and rows[0]["cost_usd"] == "0.0002"
    assert rows[0]["started_at"].startswith("2026-03-03T12:00:00")


def test_ledger_by_day_shows_hit_rate_and_cost_per_day(cli: Cli) -> None:
    days = json.loads(ok(cli("ledger", "--by", "day", "--owner", "acme", "--json")).stdout)
    assert [(d["day"], d["turns"], d["hits"], d["cost_usd"]) for d in days] == [
        ("2026-03-02", 3, 1, 0.0001), ("2026-03-03", 2, 1, 0.0002),
    ]  # fmt: skip
    assert days[1]["avoidance"] == 0.5
    text = ok(cli("ledger", "--by", "day", "--owner", "acme")).stdout
    assert "2026-03-03" in text and "50.0%" in text


def test_ledger_by_hour_has_a_line_per_hour_with_receipts(cli: Cli) -> None:
    hours = json.loads(ok(cli("ledger", "--by", "hour", "--owner", "acme", "--json")).stdout)
    assert [h["hour"] for h in hours] == [
        "2026-03-02T09:00Z",
        "2026-03-02T10:00Z",
        "2026-03-02T11:00Z",
        "2026-03-03T11:00Z",
        "2026-03-03T12:00Z",
    ]
