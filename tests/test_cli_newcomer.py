"""What a new user meets first on the command line (issue 13): an empty question costs nothing,
another program's database and a mistyped --db are refused, the ledger counts turns honestly."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_helpers import ok, one_line_error
from typer.testing import CliRunner, Result

from staffstore.cli.app import app
from staffstore.store.migrations import APPLICATION_ID
from staffstore.testing import FakeOpenRouter

KEY = "sk-or-v1-newcomer-test-secret-4242"

Cli = Callable[..., Result]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "STAFFSTORE_DB"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "staffstore.db"


@pytest.fixture
def cli(db: Path) -> Cli:
    runner = CliRunner()

    def invoke(*args: str, db_path: Path = db, **options: object) -> Result:
        return runner.invoke(app, ["--db", str(db_path), *args], **options)  # type: ignore[arg-type]

    return invoke


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenRouter, str]]:
    fake = FakeOpenRouter(api_key=KEY)
    with fake.serve_in_thread() as base_url:
        yield fake, base_url


# -- item 2: an empty question is not sent ------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_asking_an_empty_question_pays_nothing_and_says_so(
    cli: Cli, upstream: tuple[FakeOpenRouter, str], text: str
) -> None:
    fake, base_url = upstream
    result = cli("ask", "--owner", "acme", "--base-url", base_url, "--", text,
                 env={"OPENROUTER_API_KEY": KEY})  # fmt: skip
    assert "empty" in one_line_error(result)
    assert fake.requests == []
    (receipt,) = json.loads(ok(cli("receipts", "--json")).stdout)
    assert (receipt["status"], receipt["inference_attempted"]) == ("rejected", False)


# -- item 3: staffstore's files are marked; others are refused -----------------------------------


def test_a_new_database_carries_staffstores_application_id(cli: Cli, db: Path) -> None:
    ok(cli("claims", "add", "--owner", "acme", "--question", "which port", "--answer", "80"))
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


@pytest.mark.parametrize("command", [["ledger"], ["claims", "list", "--owner", "acme"],
                                     ["claims", "add", "--owner", "a", "--question", "q w",
                                      "--answer", "x"]])  # fmt: skip
def test_another_programs_sqlite_file_is_refused_and_left_untouched(
    cli: Cli, tmp_path: Path, command: list[str]
) -> None:
    foreign = tmp_path / "notes.sqlite"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        connection.execute("INSERT INTO notes (body) VALUES ('keep me')")
    connection.close()
    before = foreign.read_bytes()
    line = one_line_error(cli(*command, db_path=foreign))
    assert "another program" in line and str(foreign) in line
    assert foreign.read_bytes() == before
    with sqlite3.connect(foreign) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert tables == {"notes"}


def test_a_file_marked_by_another_application_is_refused(cli: Cli, tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as connection:
        connection.execute("PRAGMA application_id = 1234")
    connection.close()
    assert "another program" in one_line_error(cli("ledger", db_path=foreign))


def test_a_store_made_before_the_mark_opens_and_is_marked(cli: Cli, db: Path) -> None:
    ok(cli("claims", "add", "--owner", "acme", "--question", "which port", "--answer", "80"))
    with sqlite3.connect(db) as connection:  # as a staffstore from before the mark left it
        connection.execute("PRAGMA application_id = 0")
    connection.close()
    assert "which port" in ok(cli("claims", "list", "--owner", "acme")).stdout
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


@pytest.mark.parametrize("command", [
    ["ledger"], ["receipts"], ["query", "--owner", "acme", "which port"],
    ["claims", "list", "--owner", "acme"], ["claims", "search", "port", "--owner", "acme"],
    ["claims", "show", "clm_0123456789", "--owner", "acme"],
])  # fmt: skip
def test_a_read_command_on_a_missing_file_says_so_and_creates_nothing(
    cli: Cli, tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "typo" / "staffstroe.db"
    line = one_line_error(cli(*command, db_path=missing))
    assert "no database at" in line and str(missing) in line
    assert not missing.exists() and not missing.parent.exists()


def test_query_jsonl_on_a_missing_file_says_so(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    result = cli("query", "--jsonl", "--owner", "acme", db_path=missing, input='{"text": "x"}\n')
    assert "no database at" in one_line_error(result)
    assert not missing.exists()


# -- item 4 and 9: the ledger's counts and labels ------------------------------------------------


def test_the_ledger_of_an_owner_without_turns_says_there_are_none(cli: Cli) -> None:
    ok(cli("claims", "add", "--owner", "acme", "--question", "which port", "--answer", "80"))
    out = ok(cli("ledger", "--owner", "nobody")).stdout
    assert "no turns" in out and "avoidance 0.0%" not in out
    assert json.loads(ok(cli("ledger", "--owner", "nobody", "--json")).stdout)["avoidance"] is None


def test_an_empty_question_is_rejected_not_a_turn_or_a_miss(
    cli: Cli, upstream: tuple[FakeOpenRouter, str]
) -> None:
    _, base_url = upstream
    cli("ask", "--owner", "acme", "--base-url", base_url, "  ", env={"OPENROUTER_API_KEY": KEY})
    ledger = json.loads(ok(cli("ledger", "--json")).stdout)
    assert (ledger["turns"], ledger["misses"], ledger["not_attempted"], ledger["rejected"]) == (
        0, 0, 0, 1,
    )  # fmt: skip


def test_the_ledger_does_not_blame_a_missing_key_for_every_unsent_call(
    cli: Cli, upstream: tuple[FakeOpenRouter, str]
) -> None:
    _, base_url = upstream
    cli("ask", "--owner", "acme", "--base-url", base_url, "who wrote it")
    line = next(line for line in ok(cli("ledger")).stdout.splitlines() if "not attempted" in line)
    assert "no connection" in line


# -- item 7: the README's promise about --json holds -----------------------------------------


def _leaf_commands() -> dict[str, Any]:
    found: dict[str, Any] = {}

    def walk(command: Any, path: str) -> None:
        if hasattr(command, "commands"):  # a group (typer carries its own copy of click)
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}".strip())
        else:
            found[path] = command

    walk(typer.main.get_command(app), "")
    return found


#: The commands the README names as taking no --json: they write files, run a server, print
#: JSON always, or print a prompt's text. (`charts` takes it for a live store's chart only.)
WITHOUT_JSON = {
    "report", "serve", "agent-state read", "agent-state schema", "agent-state export",
    "state section", "claims export", "receipts export",
}  # fmt: skip


def test_every_command_but_those_the_readme_names_takes_json() -> None:
    commands = _leaf_commands()
    lacking = {
        path
        for path, command in commands.items()
        if not any("--json" in getattr(p, "opts", []) for p in command.params)
    }
    assert {path for path in lacking if not path.startswith("replay")} == WITHOUT_JSON
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert "`replay`, `charts` and\n`report` write files" in readme
    assert "`agent-state read|schema|export`, which always print JSON" in readme
    assert "`claims export` and `receipts export`,\nwhich print JSON Lines or CSV" in readme


# -- correcting claims: supersede, unretract, conflicts, export --------------------------------

PORT_QUESTION = "which port does the api listen on"


def add(cli: Cli, answer: str, question: str = PORT_QUESTION, *extra: str) -> str:
    result = ok(cli("claims", "add", "--owner", "acme", "--question", question,
                    "--answer", answer, "--json", *extra))  # fmt: skip
    claim_id: str = json.loads(result.stdout)["id"]
    return claim_id


def query(cli: Cli, text: str = PORT_QUESTION) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(ok(cli("query", "--owner", "acme", "--json", text)).stdout)
    return out


def test_conflicts_lists_the_claims_that_make_a_question_conflict(cli: Cli) -> None:
    first, second = add(cli, "8080"), add(cli, "9090")
    add(cli, "yes", "is the api public")
    assert query(cli)["reason"] == "conflict"
    (conflict,) = json.loads(ok(cli("claims", "conflicts", "--owner", "acme", "--json")).stdout)
    assert {claim["id"] for claim in conflict["claims"]} == {first, second}
    text = ok(cli("claims", "conflicts", "--owner", "acme")).stdout
    assert first in text and second in text


def test_supersede_serves_the_new_answer_and_settles_the_conflict(cli: Cli) -> None:
    first, second = add(cli, "8080"), add(cli, "9090")
    out = json.loads(
        ok(cli("claims", "supersede", first, "--owner", "acme", "--answer", "8443",
               "--json")).stdout
    )  # fmt: skip
    new = out["claim"]["id"]
    assert {claim["id"] for claim in out["superseded"]} == {first, second}
    decision = query(cli)
    assert (decision["outcome"], decision["answer"], decision["claim_id"]) == ("hit", "8443", new)
    shown = json.loads(ok(cli("claims", "show", first, "--owner", "acme", "--json")).stdout)
    assert (shown["status"], shown["superseded_by"]) == ("superseded", new)
    assert "no conflicts" in ok(cli("claims", "conflicts", "--owner", "acme")).stderr


def test_supersede_with_the_same_answer_is_one_line_error(cli: Cli) -> None:
    first = add(cli, "8080")
    line = one_line_error(cli("claims", "supersede", first, "--owner", "acme", "--answer", "8080"))
    assert "nothing to supersede" in line


def test_unretract_serves_a_retracted_claim_again(cli: Cli) -> None:
    first = add(cli, "8080")
    ok(cli("claims", "retract", first, "--owner", "acme"))
    assert query(cli)["reason"] == "retracted"
    ok(cli("claims", "unretract", first, "--owner", "acme"))
    assert query(cli)["answer"] == "8080"
    assert "not retracted" in one_line_error(cli("claims", "unretract", first, "--owner", "acme"))


def test_another_owner_cannot_supersede_or_unretract(cli: Cli) -> None:
    first = add(cli, "8080")
    ok(cli("claims", "retract", first, "--owner", "acme"))
    for command in (["unretract", first], ["supersede", first, "--answer", "1"]):
        assert "not found" in one_line_error(cli("claims", *command, "--owner", "mallory"))


def test_export_round_trips_through_import(cli: Cli, tmp_path: Path) -> None:
    scoped = ["--repository", "acme/api", "--revision", "3f2a9c1", "--agent", "kernel"]
    ids = {add(cli, "8080"), add(cli, "a ledger", "what does the replay write", *scoped)}
    retracted = add(cli, "gone", "what was the old port")
    ok(cli("claims", "retract", retracted, "--owner", "acme"))
    exported = ok(cli("claims", "export", "--owner", "acme"))
    assert "exported 2 claims" in exported.stderr
    path = tmp_path / "claims.jsonl"
    path.write_text(exported.stdout)
    fresh = tmp_path / "fresh.db"
    ok(cli("claims", "import", str(path), db_path=fresh))
    again = json.loads(ok(cli("claims", "list", "--owner", "acme", "--json", db_path=fresh)).stdout)
    assert {claim["id"] for claim in again} == ids
    everything = ok(cli("claims", "export", "--owner", "acme", "--all")).stdout
    assert len(everything.splitlines()) == 3


# -- item 9: the column of a JSON error is where the line was cut --------------------------------


def test_a_cut_jsonl_line_names_the_column_where_it_ends(cli: Cli) -> None:
    add(cli, "8080")
    cut = '{"owner": "acme", "text": "which port"'  # 38 characters, no closing brace
    result = ok(cli("query", "--jsonl", input=cut + "\n"))
    (line,) = [json.loads(out) for out in result.stdout.splitlines()]
    assert f"column {len(cut) + 1}" in line["error"]


def test_a_cut_claims_line_names_the_column_where_it_ends(cli: Cli, tmp_path: Path) -> None:
    cut = '{"owner": "acme", "question": "q", "answer": "a"'
    path = tmp_path / "cut.jsonl"
    path.write_text(cut + "\n")
    assert f"column {len(cut) + 1}" in one_line_error(cli("claims", "import", str(path)))


# -- CLI tables (rich) ---------------------------------------------------------------------------


def test_a_piped_table_keeps_each_row_on_one_line_without_trailing_spaces(cli: Cli) -> None:
    long_answer = "a long answer " * 40
    for number in range(3):
        add(cli, long_answer, f"question number {number} about the harbour")
    lines = ok(cli("claims", "list", "--owner", "acme")).stdout.splitlines()
    assert len(lines) == 4 and lines[0].split()[:2] == ["ID", "STATUS"]
    assert all(line == line.rstrip() for line in lines)
    column = lines[0].index("QUESTION")  # aligned: each question starts under its header
    assert all(line[column:].startswith("question number") for line in lines[1:])
