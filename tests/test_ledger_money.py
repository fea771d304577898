"""Money on screen (issue 42, item 4): what the cache saved, in `ledger`, `/metrics` and the live
chart, each hit priced at the paid call whose answer it served, and costs printed with the
digits a fraction of a cent needs.

Real SQLite files under tmp_path; `ask` against the fake upstream on a real 127.0.0.1 server
through typer's runner; the proxy as a real server with the official openai SDK. Every hit
here is an exact repeat or a claim asked word for word, never a paraphrase.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ok
from test_proxy_support import ALICE_ADMIN_KEY, METRICS_KEY, Server, running_proxy
from typer.testing import CliRunner, Result

from staffstore.cli.app import app
from staffstore.models import Receipt
from staffstore.money import usd
from staffstore.store import StaffStore
from staffstore.store.migrations import APPLICATION_ID, MIGRATIONS
from staffstore.testing import FakeOpenRouter

KEY = "sk-or-v1-ledger-money-key"
COST = 0.000042  # less than a hundredth of a cent: "$0.0000" at four decimals
QUESTION = "Which port does the metrics endpoint use?"
DAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

Cli = Callable[..., Result]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "STAFFSTORE_DB", "STAFFSTORE_OWNER", "STAFFSTORE_MODEL",
                 "STAFFSTORE_CONFIG", "STAFFSTORE_KEPT_RETENTION_DAYS"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent-staffstore-config")


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenRouter, str]]:
    fake = FakeOpenRouter(api_key=KEY, cost=COST)
    with fake.serve_in_thread() as base_url:
        yield fake, base_url


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "staffstore.db"


@pytest.fixture
def cli(db: Path) -> Cli:
    runner = CliRunner()
    return lambda *args: runner.invoke(
        app, ["--db", str(db), *args], env={"OPENROUTER_API_KEY": KEY}
    )


@pytest.fixture
def ask(cli: Cli, upstream: tuple[FakeOpenRouter, str]) -> Cli:
    _, base_url = upstream
    return lambda *args: cli("ask", "--owner", "acme", "--upstream", base_url, "--model",
                             "fake/one", "--max-retries", "0", *args)  # fmt: skip


def ledger_json(cli: Cli, *args: str) -> Any:
    return json.loads(ok(cli("ledger", "--json", *args)).stdout)


def receipt_json(cli: Cli, result: Result) -> dict[str, Any]:
    receipt_id = json.loads(result.stdout)["receipt_id"]
    shown: dict[str, Any] = json.loads(
        ok(cli("receipts", "show", receipt_id, "--owner", "acme", "--json")).stdout
    )
    return shown


# -- the ledger ---------------------------------------------------------------------------------


def test_an_exact_repeat_is_priced_at_the_paid_call_whose_answer_it_served(
    cli: Cli, ask: Cli
) -> None:
    paid = ok(ask("--json", QUESTION))
    repeat = receipt_json(cli, ok(ask("--json", QUESTION)))
    assert repeat["reason"] == "exact_repeat"
    assert repeat["served_from"] == json.loads(paid.stdout)["receipt_id"]
    assert repeat["avoided_cost_usd"] == COST
    ledger = ledger_json(cli, "--owner", "acme")
    assert (ledger["avoided_calls"], ledger["cost_usd"]) == (1, COST)
    assert (ledger["estimated_avoided_cost_usd"], ledger["unknown_avoided_cost_calls"]) == (COST, 0)


def test_a_hit_from_a_promoted_claim_is_priced_at_the_receipt_it_was_promoted_from(
    cli: Cli, ask: Cli
) -> None:
    paid_id = json.loads(ok(ask("--json", QUESTION)).stdout)["receipt_id"]
    ok(cli("claims", "promote", paid_id, "--owner", "acme"))
    # The claim is now in the prompt's key, so the same question is the claim's hit.
    hit = receipt_json(cli, ok(ask("--json", QUESTION)))
    assert (hit["reason"], hit["claim_id"] is not None) == ("exact", True)
    assert (hit["served_from"], hit["avoided_cost_usd"]) == (paid_id, COST)
    assert ledger_json(cli, "--owner", "acme")["estimated_avoided_cost_usd"] == COST


def test_a_hit_with_no_paid_call_on_record_is_unknown_never_zero(cli: Cli, ask: Cli) -> None:
    ok(cli("claims", "add", "--owner", "acme", "--question", QUESTION, "--answer", "9090"))
    hit = receipt_json(cli, ok(ask("--json", QUESTION)))
    assert (hit["outcome"], hit["avoided_cost_usd"]) == ("hit", None)
    ledger = ledger_json(cli, "--owner", "acme")
    assert (ledger["estimated_avoided_cost_usd"], ledger["unknown_avoided_cost_calls"]) == (None, 1)
    line = next(
        line for line in ok(cli("ledger", "--owner", "acme")).stdout.splitlines()
        if line.startswith("cost avoided")
    )  # fmt: skip
    assert "unknown" in line and "$0" not in line and "estimate" in line


def _hit(owner: str, number: int, hours: int, avoided: float | None) -> Receipt:
    started = DAY + timedelta(hours=hours)
    return Receipt(
        id=f"rcpt_{owner}_hit_{number}", owner=owner, outcome="hit", reason="exact_repeat",
        status="hit", inference_avoided=True, inference_attempted=False, latency_ms=1.0,
        started_at=started, finished_at=started,
        served_from=None if avoided is None else f"rcpt_{owner}_paid", avoided_cost_usd=avoided,
    )  # fmt: skip


def _paid(owner: str, number: int, hours: int, cost: float | None) -> Receipt:
    started = DAY + timedelta(hours=hours)
    return Receipt(
        id=f"rcpt_{owner}_paid_{number}", owner=owner, outcome="miss", reason="no_candidate",
        status="ok", cost_usd=cost, inference_avoided=False, inference_attempted=True,
        latency_ms=1.0, started_at=started, finished_at=started,
    )  # fmt: skip


@pytest.fixture
def written(db: Path) -> Path:
    """acme: day one paid 0.003 and served two hits at 0.003 and one of unknown cost; day two
    paid 0.001 and served one hit at 0.001. bob: one dear call and one dear hit."""

    async def fill() -> None:
        async with StaffStore.open(db) as store:
            for receipt in (
                _paid("acme", 0, 0, 0.003), _hit("acme", 0, 1, 0.003), _hit("acme", 1, 2, 0.003),
                _hit("acme", 2, 3, None), _paid("acme", 1, 25, 0.001), _hit("acme", 3, 26, 0.001),
                _paid("bob", 0, 0, 5.0), _hit("bob", 0, 1, 5.0),
            ):  # fmt: skip
                await store.add_receipt(receipt)

    asyncio.run(fill())
    return db


def test_ledger_by_day_carries_cost_paid_and_cost_avoided(cli: Cli, written: Path) -> None:
    days = ledger_json(cli, "--owner", "acme", "--by", "day")
    assert [
        (d["day"], d["cost_usd"], d["estimated_avoided_cost_usd"], d["unknown_avoided_cost_calls"])
        for d in days
    ] == [("2026-03-02", 0.003, 0.006, 1), ("2026-03-03", 0.001, 0.001, 0)]
    table = ok(cli("ledger", "--owner", "acme", "--by", "day")).stdout
    assert "COST AVOIDED (EST.)" in table and "$0.006" in table


def test_owner_b_savings_are_never_counted_in_owner_a_ledger(cli: Cli, written: Path) -> None:
    acme = ledger_json(cli, "--owner", "acme")
    assert (acme["estimated_avoided_cost_usd"], acme["unknown_avoided_cost_calls"]) == (0.007, 1)
    everyone = ledger_json(cli)  # no --owner: every owner's receipts, as before
    assert everyone["estimated_avoided_cost_usd"] == 5.007


def test_a_pruned_paid_receipt_leaves_the_hits_it_served_priced(cli: Cli, written: Path) -> None:
    ok(cli("receipts", "prune", "--owner", "acme", "--before", "2026-03-02T09:30:00"))
    ledger = ledger_json(cli, "--owner", "acme")
    assert (ledger["attempted_calls"], ledger["cost_usd"]) == (1, 0.001)  # what remains
    assert ledger["estimated_avoided_cost_usd"] == 0.007


# -- costs on screen ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.000042, "$0.000042"), (0.0001, "$0.0001"), (0.25, "$0.25"), (1234.5, "$1,234.50"),
     (0.00030000000000000003, "$0.0003"), (0.0123456, "$0.0123"), (0.0, "$0"),
     (None, "unknown")],
)  # fmt: skip
def test_a_cost_is_shown_with_the_digits_that_make_it_non_zero(
    value: float | None, shown: str
) -> None:
    assert usd(value) == shown


def test_a_tiny_cost_is_not_printed_as_zero_anywhere(cli: Cli, ask: Cli) -> None:
    asked = ok(ask(QUESTION))
    assert asked.stderr.strip().endswith(", $0.000042)")  # ask's "from the model" line
    ok(ask(QUESTION))
    ledger = ok(cli("ledger", "--owner", "acme")).stdout
    assert "$0.000042" in next(line for line in ledger.splitlines() if "cost paid" in line)
    assert "$0.000042" in next(line for line in ledger.splitlines() if "cost avoided" in line)
    assert "$0.000042" in ok(cli("receipts", "--owner", "acme")).stdout
    assert "0.0000 " not in ledger and "0.000000" not in ledger


# -- a store written before the upgrade ---------------------------------------------------------


def test_an_answer_kept_before_the_upgrade_takes_its_receipts_cost(db: Path) -> None:
    with sqlite3.connect(db) as old:
        for step in MIGRATIONS[:6]:
            for statement in step:
                old.execute(statement)
        old.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        old.execute("PRAGMA user_version = 6")
        old.execute(
            "INSERT INTO receipts (id, owner, outcome, reason, status, cost_usd, "
            "inference_avoided, inference_attempted, latency_ms, started_at, finished_at) "
            "VALUES ('rcpt_old', 'acme', 'miss', 'no_candidate', 'ok', 0.002, 0, 1, 1, 0, 0)"
        )
        old.execute(
            "INSERT INTO kept_answers (owner, namespace, request_hash, receipt_id, model, "
            "answer, created_at) VALUES ('acme', '', 'h', 'rcpt_old', 'm', 'a', ?)",
            (DAY.timestamp(),),
        )
    old.close()

    async def read() -> float | None:
        async with StaffStore.open(db) as store:
            kept = await store.kept_answer("acme", "", "h", now=DAY)
            assert kept is not None
            return kept.cost_usd

    assert asyncio.run(read()) == 0.002


# -- the proxy's /metrics ------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running_proxy(tmp_path / "proxy.db") as running:
        running.upstream.reset(cost=COST)
        yield running


def metric(server: Server, name: str) -> float:
    text = server.get("/metrics", key=METRICS_KEY).text
    lines = [line for line in text.splitlines() if line.startswith(name + " ")]
    return float(lines[0].split()[-1]) if lines else 0.0


def _chat(server: Server, text: str) -> Any:
    return (
        server.sdk()
        .chat.completions.with_raw_response.create(
            model="fake/model", messages=[{"role": "user", "content": text}]
        )
        .headers
    )


def test_metrics_count_the_cost_avoided_by_an_exact_repeat_per_owner(server: Server) -> None:
    paid = _chat(server, QUESTION)
    repeat = _chat(server, QUESTION)
    assert (paid["x-staffstore-outcome"], repeat["x-staffstore-outcome"]) == ("miss", "hit")
    assert metric(server, "staffstore_estimated_avoided_cost_usd_total") == COST
    owner = '{owner="alice"}'
    assert metric(server, f"staffstore_owner_estimated_avoided_cost_usd_total{owner}") == COST
    assert metric(server, f"staffstore_owner_avoided_calls_total{owner}") == 1
    assert metric(server, f"staffstore_owner_known_cost_usd_total{owner}") == COST
    assert metric(server, "staffstore_unknown_avoided_cost_calls_total") == 0
    receipt = server.receipt("alice", repeat["x-staffstore-receipt"])
    assert (receipt.served_from, receipt.avoided_cost_usd) == (paid["x-staffstore-receipt"], COST)
    ledger = server.get("/v1/staffstore/ledger").json()
    assert ledger["estimated_avoided_cost_usd"] == COST


def test_metrics_count_a_claim_hit_of_unknown_cost_apart(server: Server) -> None:
    claim = {"question": QUESTION, "answer": "9090"}
    response = server.post(claim, key=ALICE_ADMIN_KEY, path="/staffstore/claims")
    assert response.status_code in (200, 201), response.text
    assert _chat(server, QUESTION)["x-staffstore-outcome"] == "hit"
    assert metric(server, 'staffstore_owner_unknown_avoided_cost_calls_total{owner="alice"}') == 1
    assert metric(server, "staffstore_unknown_avoided_cost_calls_total") == 1
    assert metric(server, "staffstore_estimated_avoided_cost_usd_total") == 0


def test_a_claim_promoted_over_the_proxy_prices_its_hits(server: Server) -> None:
    paid = _chat(server, QUESTION)["x-staffstore-receipt"]
    promoted = server.post({"receipt_id": paid}, key=ALICE_ADMIN_KEY, path="/staffstore/claims")
    assert promoted.status_code in (200, 201), promoted.text
    # Another model: not the kept answer's exact repeat, so the claim answers it.
    headers = (
        server.sdk()
        .chat.completions.with_raw_response.create(
            model="fake/other", messages=[{"role": "user", "content": QUESTION}]
        )
        .headers
    )
    assert "x-staffstore-claim" in headers
    receipt = server.receipt("alice", headers["x-staffstore-receipt"])
    assert (receipt.served_from, receipt.avoided_cost_usd) == (paid, COST)


# -- the live chart --------------------------------------------------------------------------------


def test_the_live_chart_draws_the_ledgers_cost_paid_and_avoided(
    cli: Cli, written: Path, tmp_path: Path
) -> None:
    out = tmp_path / "acme.png"
    chart = json.loads(
        ok(cli("charts", "--db", str(written), "--owner", "acme", "--out", str(out),
               "--json")).stdout
    )  # fmt: skip
    ledger = ledger_json(cli, "--owner", "acme")
    assert chart["avoided_usd"] == ledger["estimated_avoided_cost_usd"] == 0.007
    assert chart["paid_usd"] == ledger["cost_usd"] == 0.004
    assert chart["unknown_avoided_calls"] == ledger["unknown_avoided_cost_calls"] == 1
    assert [p["avoided_usd"] for p in chart["series"]] == [0.006, 0.001]


def test_the_live_chart_says_unknown_when_no_hit_has_an_estimate(
    cli: Cli, db: Path, tmp_path: Path
) -> None:
    fill = [_paid("carol", 0, 0, 0.0004), _hit("carol", 0, 1, None)]

    async def write() -> None:
        async with StaffStore.open(db) as store:
            for receipt in fill:
                await store.add_receipt(receipt)

    asyncio.run(write())
    out = tmp_path / "carol.png"
    chart = json.loads(
        ok(cli("charts", "--db", str(db), "--owner", "carol", "--out", str(out), "--json")).stdout
    )
    assert (chart["avoided_usd"], chart["unknown_avoided_calls"], chart["paid_usd"]) == (
        None, 1, 0.0004,
    )  # fmt: skip
    assert chart["series"][-1]["cumulative_avoided_usd"] is None and out.is_file()
