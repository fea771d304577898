"""Staff, the synchronous facade: the same calls as the command line, without async.

Real SQLite files under tmp_path and the fake upstream on a real 127.0.0.1 server.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from staffstore import NewClaim, Staff
from staffstore.cli.app import app
from staffstore.testing import FakeOpenRouter

KEY = "sk-or-v1-staff-test-key"
QUESTION = "What port does the api listen on?"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Staff reads the user's settings as the command line does: none of the machine's here.
    monkeypatch.setenv("STAFFSTORE_CONFIG", str(tmp_path / "no-config.toml"))
    for name in ("OPENROUTER_API_KEY", "STAFFSTORE_MODEL", "STAFFSTORE_UPSTREAM"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenRouter, str]]:
    fake = FakeOpenRouter(api_key=KEY)
    with fake.serve_in_thread() as base_url:
        yield fake, base_url


@pytest.fixture
def staff(tmp_path: Path, upstream: tuple[FakeOpenRouter, str]) -> Iterator[Staff]:
    _, base_url = upstream
    with Staff(tmp_path / "s.db", model="fake/one", upstream=base_url, api_key=KEY) as opened:
        yield opened


def test_staff_queries_asks_and_adds_up_the_ledger(
    staff: Staff, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    claim = staff.add_claim("acme", QUESTION, "8080", source="job", job_id="J-1")
    assert staff.add_claim("acme", QUESTION, "8080", source="job", job_id="J-1").id == claim.id
    decision = staff.query("acme", "which port does the api listen on?")
    assert decision.hit and decision.claim_id == claim.id
    assert staff.ask("acme", QUESTION).source == "claim"
    paid = staff.ask("acme", "Is the ledger replay deterministic?")
    repeat = staff.ask("acme", "Is the ledger replay deterministic?")
    assert len(fake.chat_requests) == 1
    assert (paid.source, repeat.source) == ("model", "kept_answer")
    assert paid.answer == repeat.answer == "echo: Is the ledger replay deterministic?"
    assert repeat.kept_from is not None and repeat.kept_from.receipt_id == paid.receipt.id
    assert repeat.receipt.inference_avoided and not repeat.receipt.inference_attempted
    ledger = staff.ledger("acme")
    assert (ledger.turns, ledger.hits, ledger.attempted_calls) == (3, 2, 1)
    ((_, today),) = staff.ledger_by("day", "acme")
    assert today.turns == 3
    assert staff.ledger_by("day", "acme", since=datetime.now(UTC) + timedelta(days=1)) == []
    listed = staff.receipts("acme", outcome="hit")
    assert {r.reason for r in listed} == {"exact", "exact_repeat"}
    assert staff.ledger("globex").turns == 0 and staff.receipts("globex") == []


def test_staff_adds_claims_in_one_batch(staff: Staff) -> None:
    claims = [NewClaim(owner="acme", question=f"what does job {n} report", answer=f"r{n}")
              for n in range(3)]  # fmt: skip
    assert [new for _, new in staff.add_claims(claims)] == [True, True, True]
    assert [new for _, new in staff.add_claims(claims)] == [False, False, False]
    assert staff.query("acme", "what does job 2 report").answer == "r2"


def test_a_failed_call_is_a_result_with_its_receipt_and_is_not_kept(
    staff: Staff, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    fake.fail(503, "overloaded", times=3)  # the first call and its two retries
    failed = staff.ask("acme", QUESTION)
    assert failed.answer is None and failed.source is None
    assert (failed.receipt.status, failed.receipt.inference_attempted) == ("error", True)
    assert staff.ask("acme", QUESTION).source == "model"
    assert len(fake.chat_requests) == 4


async def test_staff_works_inside_a_running_event_loop(
    staff: Staff, upstream: tuple[FakeOpenRouter, str]
) -> None:
    # As in a Jupyter cell: a loop is running in this thread, so asyncio.run would refuse.
    asyncio.get_running_loop()
    fake, _ = upstream
    assert staff.ask("acme", QUESTION).source == "model"
    assert staff.ask("acme", QUESTION).source == "kept_answer"
    assert len(fake.chat_requests) == 1


def test_staff_takes_calls_from_other_threads(staff: Staff) -> None:
    staff.add_claim("acme", QUESTION, "8080")
    outcomes: list[str] = []

    def ask() -> None:
        outcomes.append(staff.query("acme", QUESTION).outcome)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == ["hit"] * 4


def test_staff_and_the_command_line_serve_each_others_repeats(
    tmp_path: Path, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, base_url = upstream
    db = tmp_path / "shared.db"
    with Staff(db, model="fake/one", upstream=base_url, api_key=KEY) as staff:
        paid = staff.ask("acme", QUESTION, session="standup")
    result = CliRunner().invoke(
        app,
        ["--db", str(db), "ask", "--owner", "acme", "--session", "standup", "--model",
         "fake/one", "--upstream", base_url, "--json", QUESTION],
        env={"OPENROUTER_API_KEY": KEY, "STAFFSTORE_CONFIG": str(tmp_path / "no-config.toml")},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert (out["source"], out["kept_from"]["receipt_id"]) == ("kept_answer", paid.receipt.id)
    assert len(fake.chat_requests) == 1


def test_a_closed_staff_refuses_calls(tmp_path: Path) -> None:
    staff = Staff(tmp_path / "s.db", model="fake/one", api_key="")
    staff.close()
    staff.close()  # a second close does nothing
    with pytest.raises(RuntimeError, match="closed"):
        staff.query("acme", QUESTION)
