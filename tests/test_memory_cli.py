"""`staffstore scoped-state` and `staffstore memory` against a real SQLite file, in process: one
library call a command, absent said as absent, bad input one `error:` line with nothing lost."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import ok
from typer.testing import CliRunner, Result

from staffstore.cli.app import app, main

ACME = ["--owner", "acme"]
TRIAGE = [*ACME, "--workflow", "triage"]
PASSWORD = "pw-cli-0123456789abcdef"

Cli = Callable[..., Result]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "s.db"


@pytest.fixture
def cli(db: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.setenv("TRIAGE_DB_PASSWORD", PASSWORD)
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(app, ["--db", str(db), *args])

    return invoke


def test_scoped_state_set_get_and_list_by_namespace(cli: Cli) -> None:
    ok(cli("scoped-state", "set", "last_id", "42", *TRIAGE, "--step", "fetch"))
    ok(cli("scoped-state", "set", "last_id", "40", *TRIAGE))
    ok(cli("scoped-state", "set", "heartbeat", "09:00", *ACME, "--project", "default"))
    assert ok(cli("scoped-state", "get", "last_id", *TRIAGE, "--step", "fetch")).stdout == "42\n"
    assert ok(cli("scoped-state", "get", "last_id", *TRIAGE)).stdout == "40\n"
    listed = json.loads(ok(cli("scoped-state", "list", *ACME, "--project", "default",
                              "--json")).stdout)  # fmt: skip
    assert [(v["key"], v["value"]) for v in listed] == [("heartbeat", "09:00")]


def test_a_key_never_written_there_is_absent_exit_1_and_json_says_so(cli: Cli) -> None:
    ok(cli("scoped-state", "set", "last_id", "40", *TRIAGE))
    absent = cli("scoped-state", "get", "last_id", *TRIAGE, "--step", "fetch")
    assert absent.exit_code == 1 and absent.stdout == ""
    assert absent.stderr.startswith("absent: last_id was never written in step default/triage")
    shown = json.loads(ok(cli("scoped-state", "get", "last_id", *ACME, "--global",
                             "--json")).stdout)  # fmt: skip
    assert (shown["present"], shown["value"]) == (False, None)


@pytest.mark.parametrize(
    "args",
    [
        ["scoped-state", "get", "k", *ACME],
        ["scoped-state", "get", "k", *ACME, "--step", "fetch"],
        ["scoped-state", "get", "k", *ACME, "--global", "--workflow", "triage"],
        ["scoped-state", "set", "k", "v", *ACME, "--workflow", "infra/deploy"],
        ["scoped-state", "set", "two words", "v", *TRIAGE],
        ["scoped-state", "set", "k", f"uses {PASSWORD}", *TRIAGE],
        ["memory", "finish", "run_nothing", *ACME, "--status", "done"],
        ["memory", "config", *TRIAGE, "--budget", "5"],
        ["memory", "config", *TRIAGE, "--step", "notify", "--retain", "3"],
        ["memory", "config", *TRIAGE, "--include", "deploy"],
        ["memory", "add", "   ", *TRIAGE],
        ["memory", "edit", "lsn_nothing", "text", *ACME],
        ["memory", "forget", *ACME],
    ],
)
def test_bad_input_is_one_error_line_and_changes_nothing(
    cli: Cli, args: list[str], db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok(cli("scoped-state", "set", "k", "kept", *TRIAGE))
    capsys.readouterr()
    # Through the console script's own entry point, as a user meets it.
    assert main(["--db", str(db), *args]) in (1, 2)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert PASSWORD not in lines[0]
    assert ok(cli("scoped-state", "get", "k", *TRIAGE)).stdout == "kept\n"
    assert json.loads(ok(cli("memory", "ls", *TRIAGE, "--json")).stdout)["entries"] == []


def test_a_run_from_start_to_finish_and_what_the_next_run_reads(cli: Cli) -> None:
    run_id = ok(cli("memory", "start", *TRIAGE, "--input", '{"ticket": "T-1"}')).stdout.strip()
    assert run_id.startswith("run_")
    ok(cli("memory", "remember", run_id, "the cache lives in /var/cache/app", *ACME,
           "--step", "triage"))  # fmt: skip
    finished = ok(cli(
        "memory", "finish", run_id, *ACME, "--status", "failed", "--outcome", "nothing filed",
        "--step", "fetch=done:42 tickets", "--step", f"triage=failed:refused ({PASSWORD})",
        "--decision", "alice=rejected:not a bug",
    ))  # fmt: skip
    assert "failed: recorded" in finished.stdout
    section = ok(cli("memory", "show", *TRIAGE, "--step", "triage")).stdout
    assert "- [triage] the cache lives in /var/cache/app" in section
    assert "- triage: failed ✗ refused ([redacted])" in section
    assert "- alice: rejected (why: not a bug)" in section and PASSWORD not in section


def test_add_edit_ls_and_forget_one_entry_then_all(cli: Cli) -> None:
    added = json.loads(ok(cli("memory", "add", "first note", *TRIAGE, "--json")).stdout)
    ok(cli("memory", "edit", added["id"], "first note, corrected", *ACME))
    ok(cli("memory", "add", "second note", *TRIAGE))
    listed = json.loads(ok(cli("memory", "ls", *TRIAGE, "--json")).stdout)
    assert [e["text"] for e in listed["entries"]] == ["second note", "first note, corrected"]
    ok(cli("memory", "forget", added["id"], *ACME))
    assert json.loads(ok(cli("memory", "ls", *TRIAGE, "--json")).stdout)["lessons"] == 1
    assert "forgot 1 entries" in ok(cli("memory", "forget", *TRIAGE)).stdout


def test_secret_env_names_one_more_variable_to_scrub(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIRROR_ENTRY", "mirror-value-0123456789")
    ok(cli("memory", "add", "use mirror-value-0123456789", *TRIAGE, "--secret-env",
           "MIRROR_ENTRY"))  # fmt: skip
    shown = ok(cli("memory", "ls", *TRIAGE)).stdout
    assert "mirror-value" not in shown and "use [redacted]" in shown


def test_config_narrows_a_step_and_shows_what_is_in_force(cli: Cli) -> None:
    ok(cli("memory", "config", *TRIAGE, "--budget", "800", "--include", "workflow:deploy"))
    shown = ok(cli("memory", "config", *TRIAGE, "--step", "notify", "--budget", "2000",
                   "--off", "--json")).stdout  # fmt: skip
    settings = json.loads(shown)
    assert (settings["enabled"], settings["budget"], settings["include"]) == (
        False, 800, ["workflow:deploy"],
    )  # fmt: skip
    line = ok(cli("memory", "config", *TRIAGE)).stdout
    assert line.startswith("default/triage: memory on, budget 800 tokens, retain 20")
