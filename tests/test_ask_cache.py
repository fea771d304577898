"""`staffstore ask` keeps paid answers and serves exact repeats, as the proxy does.

Real SQLite files under tmp_path, the fake upstream on a real 127.0.0.1 server, the command
line run in process through typer's runner (standard output and standard error apart).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ok, one_line_error
from typer.testing import CliRunner, Result

from staffstore.cli.app import app
from staffstore.models import Turn
from staffstore.mouth import CachePolicy, ensure_mouth
from staffstore.store import StaffStore
from staffstore.testing import FakeOpenRouter
from staffstore.upstream import OpenRouter

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

KEY = "sk-or-v1-ask-cache-test-key"
QUESTION = "Which port does the metrics endpoint use?"

Ask = Callable[..., Result]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "STAFFSTORE_DB", "STAFFSTORE_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenRouter, str]]:
    fake = FakeOpenRouter(api_key=KEY)
    with fake.serve_in_thread() as base_url:
        yield fake, base_url


@pytest.fixture
def cli(tmp_path: Path) -> Ask:
    """`staffstore --db DB ARGS...`, with the API key in the environment."""
    runner = CliRunner()
    db = tmp_path / "staffstore.db"

    def invoke(*args: str) -> Result:
        return runner.invoke(app, ["--db", str(db), *args], env={"OPENROUTER_API_KEY": KEY})

    return invoke


@pytest.fixture
def ask(cli: Ask, upstream: tuple[FakeOpenRouter, str]) -> Ask:
    """`staffstore ask --owner acme --upstream FAKE --model fake/one ARGS...`; later flags win."""
    _, base_url = upstream

    def invoke(*args: str, owner: str = "acme", model: str = "fake/one") -> Result:
        return cli("ask", "--owner", owner, "--upstream", base_url, "--model", model,
                   "--max-retries", "0", *args)  # fmt: skip

    return invoke


def receipts(cli: Ask, owner: str = "acme") -> list[dict[str, Any]]:
    """The owner's receipts, oldest first."""
    listed: list[dict[str, Any]] = json.loads(
        ok(cli("receipts", "--owner", owner, "--json")).stdout
    )
    return listed[::-1]


def test_repeat_of_a_paid_ask_makes_no_second_call_and_writes_a_zero_call_receipt(
    cli: Ask, ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    first = ok(ask(QUESTION))
    second = ok(ask(QUESTION))
    assert len(fake.chat_requests) == 1
    assert first.stdout == second.stdout == f"echo: {QUESTION}\n"
    paid, repeat = receipts(cli)
    assert first.stderr.startswith("from the model fake/one (")
    assert second.stderr.strip().startswith(f"from a kept answer (receipt {paid['id']}, ")
    assert second.stderr.strip().endswith("ago; no model call)")
    assert (paid["status"], paid["inference_attempted"]) == ("ok", True)
    assert (repeat["outcome"], repeat["reason"], repeat["status"]) == ("hit", "exact_repeat", "hit")
    assert (repeat["inference_avoided"], repeat["inference_attempted"]) == (True, False)
    assert repeat["prompt_tokens"] is None and repeat["cost_usd"] is None
    ledger = json.loads(ok(cli("ledger", "--owner", "acme", "--json")).stdout)
    assert (ledger["turns"], ledger["hits"], ledger["attempted_calls"]) == (2, 1, 1)


def test_the_model_line_names_model_tokens_and_cost(ask: Ask) -> None:
    result = ok(ask(QUESTION))
    assert result.stdout == f"echo: {QUESTION}\n"  # stdout is the answer alone
    line = result.stderr.strip()
    assert line.startswith("from the model fake/one (") and line.endswith(" tokens, $0.0001)")


def test_another_model_is_not_an_exact_repeat(
    ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    ok(ask(QUESTION, model="fake/one"))
    result = ok(ask(QUESTION, model="fake/two"))
    assert len(fake.chat_requests) == 2
    assert result.stderr.startswith("from the model fake/two")


def test_changed_working_state_is_not_an_exact_repeat(
    cli: Ask, ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    trader = ("--owner", "acme", "--agent", "trader")
    ok(cli("state", "set", "stop_loss", "262", *trader, "--reason", "first"))
    ok(ask("--agent", "trader", "Where is the stop?"))
    ok(ask("--agent", "trader", "Where is the stop?"))
    assert len(fake.chat_requests) == 1  # unchanged state: a repeat
    ok(cli("state", "set", "stop_loss", "254", *trader, "--reason", "moved"))
    result = ok(ask("--agent", "trader", "Where is the stop?"))
    assert len(fake.chat_requests) == 2
    assert "254" in json.dumps(fake.chat_requests[-1].json)
    assert result.stderr.startswith("from the model")


def test_another_session_is_not_an_exact_repeat(
    ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    # Exact repeats only: the first question of a session carries no context, so a reworded
    # (here: the same) question in another session may reuse it (the test below).
    ok(ask("--session", "standup", "--no-paraphrase", QUESTION))
    ok(ask("--session", "retro", "--no-paraphrase", QUESTION))
    ok(ask("--session", "standup", "--no-paraphrase", QUESTION))
    assert len(fake.chat_requests) == 2


def test_a_context_free_question_is_reused_in_another_session(
    ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    ok(ask("--session", "standup", QUESTION))
    reused = ok(ask("--session", "retro", QUESTION.lower().rstrip("?")))
    assert len(fake.chat_requests) == 1
    assert reused.stderr.startswith("from a kept answer") and "paraphrase" in reused.stderr
    ok(ask("--session", "retro", "Is the ledger replay deterministic?"))  # now with history
    later = ok(ask("--session", "retro", QUESTION))
    assert len(fake.chat_requests) == 3 and later.stderr.startswith("from the model")


def test_no_cache_neither_serves_nor_keeps(
    cli: Ask, ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    ok(ask("--no-cache", QUESTION))
    ok(ask(QUESTION))  # nothing was kept: a call, and this one is kept
    assert len(fake.chat_requests) == 2
    result = ok(ask("--no-cache", QUESTION))  # something is kept now, and still not served
    assert len(fake.chat_requests) == 3
    assert result.stderr.startswith("from the model")
    assert [r["reason"] for r in receipts(cli)] == ["no_cache", "no_candidate", "no_cache"]


def test_refresh_asks_again_and_keeps_the_new_answer(
    ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    fake.answer("port 9100")
    ok(ask(QUESTION))
    fake.answer("port 9200")
    refreshed = ok(ask("--refresh", QUESTION))
    served = ok(ask(QUESTION))
    assert len(fake.chat_requests) == 2
    assert refreshed.stdout == served.stdout == "port 9200\n"
    assert served.stderr.startswith("from a kept answer")


def test_refresh_asks_the_model_even_when_a_claim_answers(
    cli: Ask, ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    ok(cli("claims", "add", "--owner", "acme", "--question", QUESTION, "--answer", "9100"))
    assert ok(ask(QUESTION)).stdout == "9100\n"
    result = ok(ask("--refresh", QUESTION))
    assert len(fake.chat_requests) == 1
    assert result.stdout == f"echo: {QUESTION}\n"


def test_a_failed_call_is_not_kept(ask: Ask, upstream: tuple[FakeOpenRouter, str]) -> None:
    fake, _ = upstream
    fake.fail(503, "overloaded")
    assert "503" in one_line_error(ask(QUESTION))
    result = ok(ask(QUESTION))
    assert len(fake.chat_requests) == 2
    assert result.stderr.startswith("from the model")


def test_one_owner_never_gets_another_owners_kept_answer(
    cli: Ask, ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    fake.answer("acme's secret answer")
    ok(ask(QUESTION, owner="acme"))
    result = ok(ask(QUESTION, owner="globex"))
    assert len(fake.chat_requests) == 2
    assert result.stdout == f"echo: {QUESTION}\n"
    assert result.stderr.startswith("from the model")
    assert [r["reason"] for r in receipts(cli, "globex")] == ["no_candidate"]


def test_a_claim_stored_after_the_answer_was_kept_answers_the_repeat(
    cli: Ask, ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    ok(ask(QUESTION))
    added = ok(cli("claims", "add", "--owner", "acme", "--question", QUESTION, "--answer", "9100",
                   "--json"))  # fmt: skip
    claim_id = json.loads(added.stdout)["id"]
    result = ok(ask(QUESTION))
    assert len(fake.chat_requests) == 1
    assert result.stdout == "9100\n"
    assert result.stderr.strip() == f"from claim {claim_id} (exact, score 1.00; no model call)"


def test_a_kept_answer_past_its_ttl_does_not_serve(
    ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    ok(ask("--ttl", "0", QUESTION))
    ok(ask(QUESTION))
    assert len(fake.chat_requests) == 2


def test_json_carries_the_source_and_quiet_silences_the_line(
    cli: Ask, ask: Ask, upstream: tuple[FakeOpenRouter, str]
) -> None:
    ok(ask(QUESTION))
    shown = ok(ask("--json", QUESTION))
    out = json.loads(shown.stdout)
    assert (out["source"], out["reason"]) == ("kept_answer", "exact_repeat")
    assert out["kept_from"]["receipt_id"] == receipts(cli)[0]["id"]
    assert out["kept_from"]["model"] == "fake/one"
    assert shown.stderr == ""
    quiet = ok(ask("-q", QUESTION))
    assert (quiet.stdout, quiet.stderr) == (f"echo: {QUESTION}\n", "")


async def test_a_kept_answer_about_today_does_not_serve_tomorrow(tmp_path: Path) -> None:
    fake = FakeOpenRouter(api_key=KEY)
    today = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    question = "what failed today?"
    async with (
        StaffStore.open(tmp_path / "s.db") as store,
        OpenRouter(api_key=KEY, model="fake/one", transport=fake.transport()) as chat,
    ):
        for moment in (today, today + timedelta(hours=1), today + timedelta(days=1)):
            turn = Turn(owner="acme", text=question, now=moment)
            await ensure_mouth(store, turn, chat, model="fake/one", cache=CachePolicy())
    assert len(fake.chat_requests) == 2  # the same day repeats; the next day asks again


def test_ask_with_a_role_reports_the_tokens_sent_per_part(ask: Ask) -> None:
    shown = json.loads(ok(ask(QUESTION, "--role", "advisor", "--part-budget", "tail=50",
                              "--json")).stdout)  # fmt: skip
    working_set = shown["working_set"]
    assert working_set["part_budgets"]["tail"] == 50
    assert working_set["part_budgets"]["system"] == 300
    assert working_set["tokens"] <= 2_000
    assert working_set["part_tokens"]["turn"] > 0


def test_ask_refuses_an_unknown_role(ask: Ask) -> None:
    result = ask(QUESTION, "--role", "janitor")
    assert result.exit_code != 0 and "unknown role" in result.stderr
