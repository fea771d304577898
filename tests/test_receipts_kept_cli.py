"""One receipt shown, old receipts pruned, kept answers listed, forgotten and pruned by the
retention setting (issue 42): always one owner's rows, never another's.

Real SQLite files under tmp_path; the command line through typer's runner; `ask` against the
fake upstream on a real 127.0.0.1 server; `serve` as a real process.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_helpers import ok, one_line_error
from test_serve_command import free_port
from typer.testing import CliRunner, Result

from staffstore.cli.app import app
from staffstore.errors import InputError
from staffstore.models import Receipt
from staffstore.proxy.config import build_config
from staffstore.store import StaffStore
from staffstore.store.sync_store import KeptAnswer, TurnRecord
from staffstore.testing import FakeOpenRouter

KEY = "sk-or-v1-receipts-kept-key"
QUESTION = "Which port does the metrics endpoint use?"
DAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NOW = datetime.now(UTC)

Cli = Callable[..., Result]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "STAFFSTORE_DB", "STAFFSTORE_OWNER", "STAFFSTORE_MODEL",
                 "STAFFSTORE_CONFIG", "STAFFSTORE_KEPT_RETENTION_DAYS"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent-staffstore-config")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "staffstore.db"


@pytest.fixture
def cli(db: Path) -> Cli:
    runner = CliRunner()

    def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
        return runner.invoke(
            app, ["--db", str(db), *args], env={"OPENROUTER_API_KEY": KEY, **(env or {})}
        )

    return invoke


def _receipt(owner: str, number: int, hours: int, **fields: Any) -> Receipt:
    started = DAY + timedelta(hours=hours)
    values: dict[str, Any] = {
        "id": f"rcpt_{owner}_{number}", "owner": owner, "outcome": "miss",
        "reason": "no_candidate", "status": "ok", "cost_usd": 0.0002, "inference_avoided": False,
        "inference_attempted": True, "latency_ms": 1.5, "started_at": started,
        "finished_at": started, "question": f"question {number}", "answer": f"answer {number}",
    }  # fmt: skip
    return Receipt(**{**values, **fields})


def _kept(owner: str, receipt_id: str, kept_at: datetime, **fields: Any) -> TurnRecord:
    receipt = _receipt(owner, 0, 0, id=receipt_id, started_at=kept_at, finished_at=kept_at)
    kept = KeptAnswer(
        owner=owner, namespace="", request_hash=f"hash-{receipt_id}", receipt_id=receipt_id,
        model="fake/one", answer=f"kept {receipt_id}", created_at=kept_at, **fields,
    )  # fmt: skip
    return TurnRecord(receipt, kept=kept)


def fill(db: Path, receipts: Sequence[Receipt] = (), turns: Sequence[TurnRecord] = ()) -> None:
    async def work() -> None:
        async with StaffStore.open(db) as store:
            for receipt in receipts:
                await store.add_receipt(receipt)
            if turns:
                await store.record_turns(turns)

    asyncio.run(work())


@pytest.fixture
def receipts(db: Path) -> Path:
    """acme: three receipts, an hour apart from DAY; bob: one, at DAY."""
    fill(db, [_receipt("acme", n, n) for n in range(3)] + [_receipt("bob", 0, 0)])
    return db


def kept_ids(cli: Cli, owner: str) -> list[str]:
    rows = json.loads(ok(cli("kept", "list", "--owner", owner, "--json")).stdout)
    return [row["id"] for row in rows]


# -- receipts show -------------------------------------------------------------------------------


def test_receipts_show_prints_one_receipt_of_the_owner(cli: Cli, receipts: Path) -> None:
    shown = json.loads(
        ok(cli("receipts", "show", "rcpt_acme_1", "--owner", "acme", "--json")).stdout
    )
    assert (shown["id"], shown["question"], shown["cost_usd"]) == (
        "rcpt_acme_1",
        "question 1",
        0.0002,
    )
    text = ok(cli("receipts", "show", "rcpt_acme_1", "--owner", "acme")).stdout
    assert "question 1" in text and "$0.0002" in text and "no_candidate" in text


def test_receipts_show_names_the_prompts_parts_of_a_built_working_set(cli: Cli, db: Path) -> None:
    parts = {"turn": 9, "system": 39, "story": 120, "vault": 0, "tail": 1310}
    fill(db, [_receipt("acme", 7, 0, prompt_parts=parts)])
    shown = json.loads(
        ok(cli("receipts", "show", "rcpt_acme_7", "--owner", "acme", "--json")).stdout
    )
    assert shown["prompt_parts"] == parts
    text = ok(cli("receipts", "show", "rcpt_acme_7", "--owner", "acme")).stdout
    assert "turn 9, system 39, story 120, tail 1,310" in text and "vault" not in text


def test_receipts_show_never_shows_another_owners_receipt(cli: Cli, receipts: Path) -> None:
    line = one_line_error(cli("receipts", "show", "rcpt_bob_0", "--owner", "acme"))
    assert "not found" in line and "answer" not in line


# -- receipts prune ------------------------------------------------------------------------------


def test_receipts_prune_refuses_to_run_without_before(cli: Cli, receipts: Path) -> None:
    result = cli("receipts", "prune", "--owner", "acme")
    assert result.exit_code == 2 and "Missing option '--before'" in result.stderr
    assert json.loads(ok(cli("ledger", "--owner", "acme", "--json")).stdout)["turns"] == 3


def test_receipts_prune_deletes_the_owners_older_receipts_and_says_how_many(
    cli: Cli, receipts: Path
) -> None:
    result = ok(cli("receipts", "prune", "--owner", "acme", "--before", "2026-03-02T10:30:00"))
    assert result.stdout.startswith("deleted 2 receipts of acme")
    left = json.loads(ok(cli("receipts", "--json")).stdout)
    assert sorted(r["id"] for r in left) == ["rcpt_acme_2", "rcpt_bob_0"]  # bob's untouched
    ledger = json.loads(ok(cli("ledger", "--owner", "acme", "--json")).stdout)
    assert (ledger["turns"], ledger["cost_usd"]) == (1, 0.0002)  # the ledger counts what remains


def test_receipts_prune_never_deletes_another_owners_receipts(cli: Cli, receipts: Path) -> None:
    shown = json.loads(
        ok(cli("receipts", "prune", "--owner", "carol", "--before", "2030-01-01", "--json")).stdout
    )
    assert shown["deleted"] == 0
    assert len(json.loads(ok(cli("receipts", "--json")).stdout)) == 4


# -- kept forget ---------------------------------------------------------------------------------


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenRouter, str]]:
    fake = FakeOpenRouter(api_key=KEY)
    with fake.serve_in_thread() as base_url:
        yield fake, base_url


@pytest.fixture
def ask(cli: Cli, upstream: tuple[FakeOpenRouter, str]) -> Cli:
    _, base_url = upstream
    return lambda *args: cli("ask", "--owner", "acme", "--upstream", base_url, "--model",
                             "fake/one", "--max-retries", "0", *args)  # fmt: skip


def test_a_forgotten_kept_answer_is_paid_for_again_on_its_next_repeat(
    cli: Cli, ask: Cli, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    paid = json.loads(ok(ask("--json", QUESTION)).stdout)["receipt_id"]
    assert kept_ids(cli, "acme") == [paid]
    # The list shows the prompt a reworded question would be compared with.
    [row] = json.loads(ok(cli("kept", "list", "--owner", "acme", "--json")).stdout)
    assert row["prompt"] == QUESTION
    assert "PROMPT" in ok(cli("kept", "list", "--owner", "acme")).stdout
    assert ok(cli("kept", "forget", paid, "--owner", "acme")).stdout.startswith("forgot 1 kept")
    again = json.loads(ok(ask("--json", QUESTION)).stdout)
    assert (again["outcome"], len(fake.chat_requests)) == ("miss", 2)
    # The paid receipt stays on record: the ledger still counts both calls.
    assert json.loads(ok(cli("ledger", "--owner", "acme", "--json")).stdout)["attempted_calls"] == 2


def test_kept_forget_never_touches_another_owners_answer(cli: Cli, db: Path) -> None:
    fill(db, turns=[_kept("acme", "rcpt_acme_kept", NOW)])
    line = one_line_error(cli("kept", "forget", "rcpt_acme_kept", "--owner", "bob"))
    assert "rcpt_acme_kept" in line and "'bob'" in line
    assert kept_ids(cli, "acme") == ["rcpt_acme_kept"]


def test_kept_forget_before_forgets_the_answers_kept_earlier(cli: Cli, db: Path) -> None:
    fill(db, turns=[
        _kept("acme", "rcpt_old", NOW - timedelta(days=40)),
        _kept("acme", "rcpt_new", NOW - timedelta(days=1)),
        _kept("bob", "rcpt_bob_old", NOW - timedelta(days=40)),
    ])  # fmt: skip
    before = (NOW - timedelta(days=10)).strftime("%Y-%m-%dT%H:%M:%S")
    shown = json.loads(
        ok(cli("kept", "forget", "--owner", "acme", "--before", before, "--json")).stdout
    )
    assert shown["forgotten"] == ["rcpt_old"]
    assert kept_ids(cli, "acme") == ["rcpt_new"] and kept_ids(cli, "bob") == ["rcpt_bob_old"]


def test_kept_forget_without_an_id_or_before_is_refused(cli: Cli, db: Path) -> None:
    fill(db, turns=[_kept("acme", "rcpt_acme_kept", NOW)])
    assert "--before" in one_line_error(cli("kept", "forget", "--owner", "acme"))
    assert kept_ids(cli, "acme") == ["rcpt_acme_kept"]


# -- retention ------------------------------------------------------------------------------------


@pytest.fixture
def aged(db: Path) -> Path:
    """Kept answers of acme and bob 40 days old, one of acme 1 day old, and one expired."""
    fill(db, turns=[
        _kept("acme", "rcpt_old", NOW - timedelta(days=40)),
        _kept("bob", "rcpt_bob_old", NOW - timedelta(days=40)),
        _kept("acme", "rcpt_new", NOW - timedelta(days=1)),
        _kept("acme", "rcpt_expired", NOW - timedelta(days=2),
              expires_at=NOW - timedelta(hours=1)),
    ])  # fmt: skip
    return db


def test_kept_prune_applies_the_retention_setting_to_every_owner(cli: Cli, aged: Path) -> None:
    result = ok(cli("kept", "prune", env={"STAFFSTORE_KEPT_RETENTION_DAYS": "30"}))
    assert result.stdout.startswith("pruned 3 kept answers")
    assert kept_ids(cli, "acme") == ["rcpt_new"] and kept_ids(cli, "bob") == []


def test_kept_prune_reads_the_retention_from_the_config_file(
    cli: Cli, aged: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("kept_retention_days = 30\n", encoding="utf-8")
    ok(cli("kept", "prune", "--owner", "acme", env={"STAFFSTORE_CONFIG": str(config)}))
    assert kept_ids(cli, "acme") == ["rcpt_new"] and kept_ids(cli, "bob") == ["rcpt_bob_old"]


def test_kept_prune_without_a_retention_deletes_only_expired_answers(cli: Cli, aged: Path) -> None:
    assert "no retention set" in ok(cli("kept", "prune")).stdout
    assert kept_ids(cli, "acme") == ["rcpt_new", "rcpt_old"]


def test_a_serve_config_file_takes_kept_retention_days(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    config.write_text("[serve]\ntrusted = true\nkept_retention_days = 30\n", encoding="utf-8")
    assert build_config(config_file=config, db_path=tmp_path / "s.db").kept_retention_days == 30
    config.write_text("[serve]\ntrusted = true\nkept_retention_days = 0\n", encoding="utf-8")
    with pytest.raises(InputError, match="kept_retention_days"):
        build_config(config_file=config, db_path=tmp_path / "s.db")


def test_serve_applies_the_retention_setting_when_it_starts(cli: Cli, aged: Path, db: Path) -> None:
    port = free_port()
    env = {**os.environ, "STAFFSTORE_KEPT_RETENTION_DAYS": "30", "OPENROUTER_API_KEY": KEY}
    command = [
        sys.executable, "-m", "staffstore", "--db", str(db), "serve", "--port", str(port),
        "--owner-key", "acme=sk-client", "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                said = process.stderr.read().decode() if process.stderr else ""
                pytest.fail(f"serve did not start: {said}")
            time.sleep(0.1)
        assert kept_ids(cli, "acme") == ["rcpt_new"] and kept_ids(cli, "bob") == []
    finally:
        process.terminate()
        process.wait(timeout=10)
