"""`staffstore state` and `staffstore agent-state` against a real SQLite file, in process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import ok, one_line_error
from typer.testing import CliRunner, Result

from staffstore.cli.app import app

SCOPE_KEY = "cli-scope-key-0123456789abcdef"
TRADER = ["--owner", "acme", "--agent", "trader"]
SHOP = ["--owner", "acme", "--agent", "shop"]
CONVO = ["--scope-kind", "conversation", "--scope-id", "+1-555-0100"]

Cli = Callable[..., Result]


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.setenv("STAFFSTORE_STATE_KEY", SCOPE_KEY)
    runner = CliRunner()
    db = tmp_path / "s.db"

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(app, ["--db", str(db), *args], input=input)

    return invoke


def test_state_set_get_and_the_section(cli: Cli) -> None:
    ok(cli("state", "set", "stop_loss.2317", "262", *TRADER, "--reason", "exit if broken",
           "--ttl-hours", "4"))  # fmt: skip
    view = json.loads(ok(cli("state", "get", *TRADER, "--json")).stdout)
    (entry,) = view["entries"]
    assert (entry["key"], entry["value"], entry["reason"]) == (
        "stop_loss.2317", "262", "exit if broken",
    )  # fmt: skip
    assert entry["expires_at"] is not None and view["live_keys"] == 1
    section = ok(cli("state", "section", *TRADER)).stdout
    assert "stop_loss.2317 = 262" in section and "authoritative" in section


def test_state_set_with_a_stale_expect_fails_naming_the_current_value(cli: Cli) -> None:
    ok(cli("state", "set", "k", "1", *TRADER, "--reason", "first"))
    ok(cli("state", "set", "k", "2", *TRADER, "--reason", "second", "--expect", "1"))
    line = one_line_error(cli("state", "set", "k", "3", *TRADER, "--reason", "x", "--expect", "1"))
    assert "'2'" in line and "nothing was written" in line
    refused = cli("state", "set", "k", "3", *TRADER, "--reason", "x", "--expect", "1", "--json")
    assert refused.exit_code == 1
    assert json.loads(refused.stdout)["reason"] == "conflict"


def test_state_set_needs_a_reason(cli: Cli) -> None:
    result = cli("state", "set", "k", "1", *TRADER)
    assert result.exit_code == 2 and "--reason" in result.stderr


def test_state_history_shows_the_chain(cli: Cli) -> None:
    ok(cli("state", "set", "k", "1", *TRADER, "--reason", "first"))
    ok(cli("state", "set", "k", "2", *TRADER, "--reason", "second", "--by", "patrol"))
    ok(cli("state", "clear", "k", *TRADER, "--reason", "done"))
    chain = json.loads(ok(cli("state", "history", "k", *TRADER, "--json")).stdout)
    assert [(e["action"], e["old_value"], e["new_value"], e["by"]) for e in chain] == [
        ("set", None, "1", "trader"), ("set", "1", "2", "patrol"), ("clear", "2", None, "trader"),
    ]  # fmt: skip


def test_state_handoff_rules_are_one_line_errors(cli: Cli) -> None:
    line = one_line_error(cli("state", "handoff", "note", *TRADER, "--status", "complete"))
    assert "needs a non-empty evidence" in line
    ok(cli("state", "handoff", "note", *TRADER, "--status", "complete", "--evidence", "ok"))
    view = json.loads(ok(cli("state", "get", *TRADER, "--json")).stdout)
    assert view["handoff"]["status"] == "complete" and view["handoff"]["evidence"] == "ok"


def test_agent_state_declare_put_read_list_export_erase(cli: Cli, tmp_path: Path) -> None:
    schema = tmp_path / "shop.json"
    schema.write_text(json.dumps({
        "fields": {"step": {"type": "enum", "values": ["sizes", "checkout"]},
                   "cart_note": {"type": "text", "pii": True, "retention": "7d"}},
        "agent_state": {"scope": "conversation"},
    }))  # fmt: skip
    ok(cli("agent-state", "declare", str(schema), *SHOP))
    written = json.loads(
        ok(cli("agent-state", "put", '{"step": "sizes", "cart_note": "n"}', *SHOP, *CONVO,
               "--subject", "ana", "--json")).stdout
    )  # fmt: skip
    assert written["stored"] and written["version"] == 1
    ok(cli("agent-state", "put", "-", *SHOP, *CONVO, input='{"cart_note": {"$delete": true}}'))
    read = json.loads(ok(cli("agent-state", "read", *SHOP, *CONVO)).stdout)
    assert read["body"] == {"step": "sizes"} and read["version"] == 2
    listed = json.loads(ok(cli("agent-state", "list", "--owner", "acme", "--json")).stdout)
    assert [(i["agent"], i["version"], i["fields"]) for i in listed] == [("shop", 2, 1)]
    export = json.loads(
        ok(cli("agent-state", "export", "--owner", "acme", "--subject", "ana")).stdout
    )
    assert export["states"][0]["fields"]["step"]["value"] == "sizes"
    proof = json.loads(
        ok(cli("agent-state", "erase", "--owner", "acme", "--subject", "ana", "--json")).stdout
    )
    assert proof["states"] == 1 and proof["digest"].startswith("sha256:")
    assert json.loads(ok(cli("agent-state", "read", *SHOP, *CONVO)).stdout)["version"] == 0


def test_agent_state_refusals_exit_1_saying_why(cli: Cli, tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text('{"fields": {"step": {"type": "string"}}, "agent_state": {"scope": "task"}}')
    ok(cli("agent-state", "declare", str(schema), *SHOP, "--max-bytes", "20"))
    task = ["--scope-kind", "task", "--scope-id", "t1"]
    assert "not_declared_field (price)" in one_line_error(
        cli("agent-state", "put", '{"price": 1}', *SHOP, *task)
    )
    assert "over_cap" in one_line_error(cli("agent-state", "put", '{"step": "' + "x" * 30 + '"}',
                                            *SHOP, *task))  # fmt: skip
    assert "not valid JSON" in one_line_error(cli("agent-state", "put", "{nope", *SHOP, *task))


def test_agent_state_without_a_scope_key_is_one_line_error(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STAFFSTORE_STATE_KEY")
    line = one_line_error(cli("agent-state", "read", *SHOP, *CONVO))
    assert "STAFFSTORE_STATE_KEY" in line
