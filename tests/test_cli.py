"""The command line against real SQLite files, and against a fake upstream on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_helpers import ok, one_line_error
from typer.testing import CliRunner, Result

from staffstore.cli.app import EXTENSIONS, app, main, register_extensions, user_errors
from staffstore.cli.lazy import ExtensionError, LazyCommands
from staffstore.config import default_db_path
from staffstore.testing import FakeOpenRouter

KEY = "sk-or-v1-cli-test-secret-7311"
QUESTION = "What port does the api listen on?"
ADD = [
    "claims", "add", "--owner", "acme", "--agent", "kernel", "--question", QUESTION,
    "--answer", "8080", "--source", "job", "--job-id", "J-17", "--repository", "acme/api",
    "--revision", "3f2a9c1",
]  # fmt: skip


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "STAFFSTORE_DB"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "staffstore.db"


#: Runs `staffstore --db DB ARGS...` in process: cli("claims", "list", input=..., env=...).
Cli = Callable[..., Result]


@pytest.fixture
def cli(db: Path) -> Cli:
    runner = CliRunner()

    def invoke(
        *args: str, input: str | bytes | None = None, env: dict[str, str] | None = None
    ) -> Result:
        return runner.invoke(app, ["--db", str(db), *args], input=input, env=env)

    return invoke


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenRouter, str]]:
    upstream = FakeOpenRouter(api_key=KEY)
    with upstream.serve_in_thread() as base_url:
        yield upstream, base_url


def claims_file(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def claim_line(number: int, **extra: Any) -> str:
    fields = {"owner": "acme", "question": f"what does job {number} report", "answer": f"r{number}"}
    return json.dumps({**fields, **extra})


# -- claims add and query ----------------------------------------------------------------------


def test_add_then_query_hits(cli: Cli) -> None:
    added = ok(cli(*ADD)).stdout
    assert added.startswith("added ")
    claim_id = added.split()[1]
    result = ok(cli("query", "--owner", "acme", "which port does the api listen on"))
    assert result.stdout.splitlines()[0].startswith("hit")
    assert claim_id in result.stdout and "8080" in result.stdout


@pytest.mark.parametrize("digit", ["⓵", "²"])
def test_a_digit_that_is_no_decimal_digit_is_stored_and_found(cli: Cli, digit: str) -> None:
    # int() cannot read these: reading "⓵" as a number crashed both commands.
    question = f"What is step {digit} of the failover runbook?"
    add = ["claims", "add", "--owner", "acme", "--question", question, "--answer", "drain it"]
    added = ok(cli(*add, "--source", "job", "--job-id", "J-7"))
    result = ok(cli("query", "--owner", "acme", question))
    assert result.stdout.splitlines()[0].startswith("hit")
    assert added.stdout.split()[1] in result.stdout


def test_adding_the_same_claim_twice_says_already_stored(cli: Cli) -> None:
    first = ok(cli(*ADD)).stdout.split()[-1]
    assert ok(cli(*ADD)).stdout == f"already stored {first}\n"


def test_add_json_parses(cli: Cli) -> None:
    out = json.loads(ok(cli(*ADD, "--json")).stdout)
    assert out["added"] is True and out["claim"]["answer"] == "8080"
    assert json.loads(ok(cli(*ADD, "--json")).stdout)["added"] is False


def test_adding_a_question_about_yesterday_says_how_long_it_serves(cli: Cli) -> None:
    dated = ["claims", "add", "--owner", "acme", "--question", "Why did CI fail yesterday?"]
    result = ok(cli(*dated, "--answer", "a flaky test"))
    assert result.stdout.startswith("added ")
    assert "serves only during the day (UTC) it was stored in" in result.stderr
    plain = ["claims", "add", "--owner", "acme", "--question", "Why did CI fail on May 3?"]
    assert "note:" not in ok(cli(*plain, "--answer", "a flaky test")).stderr


def test_adding_a_question_the_gate_can_never_serve_says_so(cli: Cli) -> None:
    deictic = ["claims", "add", "--owner", "acme", "--question", "What does this error mean?"]
    result = ok(cli(*deictic, "--answer", "a missing module"))
    assert result.stdout.startswith("added ")
    assert "will never serve it" in result.stderr and "--question" in result.stderr
    assert ok(cli(*ADD)).stderr == ""


def test_add_with_a_bad_expiry_is_one_line_error(cli: Cli) -> None:
    line = one_line_error(cli(*ADD, "--expires-at", "next tuesday"))
    assert "expires_at" in line


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"])
def test_an_expiry_past_the_calendar_is_one_line_error_and_stores_nothing(
    cli: Cli, moment: str
) -> None:
    line = one_line_error(cli(*ADD, "--expires-at", moment))
    assert "expires_at" in line
    # Refused before the store is opened: nothing was stored that would break a later read.
    assert "no database at" in one_line_error(cli("claims", "list", "--owner", "acme"))


def test_a_query_miss_shows_the_words_that_differ(cli: Cli) -> None:
    ok(cli(*ADD))
    result = ok(cli("query", "--owner", "acme", "which port does the web listen on"))
    assert result.stdout.splitlines()[0].startswith("miss")
    assert "only in the question asked: web; only in the stored one: api" in result.stdout
    shown = json.loads(
        ok(cli("query", "--owner", "acme", "--json", "which port does the web listen on")).stdout
    )
    assert (shown["asked_only"], shown["stored_only"]) == (["web"], ["api"])


def test_query_json_parses(cli: Cli) -> None:
    ok(cli(*ADD))
    hit = json.loads(ok(cli("query", "--owner", "acme", QUESTION, "--json")).stdout)
    assert (hit["outcome"], hit["answer"], hit["reason"]) == ("hit", "8080", "exact")
    miss = json.loads(ok(cli("query", "--owner", "acme", "who wrote it", "--json")).stdout)
    assert (miss["outcome"], miss["answer"]) == ("miss", None)
    assert miss["reason"]


def test_query_at_another_revision_is_a_stale_miss(cli: Cli) -> None:
    ok(cli(*ADD))
    out = ok(cli("query", "--owner", "acme", "--repository", "acme/api", "--revision", "9e9e9e9",
                 QUESTION, "--json"))  # fmt: skip
    assert json.loads(out.stdout)["reason"] == "stale"


def test_another_owner_gets_no_hit(cli: Cli) -> None:
    ok(cli(*ADD))
    out = json.loads(ok(cli("query", "--owner", "globex", QUESTION, "--json")).stdout)
    assert out["outcome"] == "miss"


@pytest.mark.parametrize(
    "text",
    ['"', '"api', "port OR api", "NOT port", "NEAR(port api)", "port*", "-port", "api:port",
     "((port", "port)", "{question}: port", "^port", "AND", "port AND OR NOT"],
)  # fmt: skip
def test_fts5_operators_in_text_do_not_crash(cli: Cli, text: str) -> None:
    ok(cli(*ADD))
    # "--" so that "-port" is text, not an option.
    assert json.loads(ok(cli("query", "--owner", "acme", "--json", "--", text)).stdout)["outcome"]
    ok(cli("claims", "search", "--owner", "acme", "--json", "--", text))


def test_a_megabyte_query_is_a_miss(cli: Cli) -> None:
    ok(cli(*ADD))
    out = json.loads(ok(cli("query", "--owner", "acme", "port " * 200_000, "--json")).stdout)
    assert (out["outcome"], out["reason"]) == ("miss", "too_long")


@pytest.mark.parametrize("text", ["", "   ", "?!"])
def test_an_empty_query_is_a_miss(cli: Cli, text: str) -> None:
    ok(cli(*ADD))
    out = json.loads(ok(cli("query", "--owner", "acme", text, "--json")).stdout)
    assert (out["outcome"], out["reason"]) == ("miss", "empty")


def test_query_without_owner_or_question_is_a_usage_error(cli: Cli) -> None:
    assert cli("query", "what port").exit_code == 2
    assert cli("query", "--owner", "acme").exit_code == 2


# -- query --jsonl -----------------------------------------------------------------------------


def test_jsonl_batch_answers_every_line_and_reports_bad_ones(cli: Cli, tmp_path: Path) -> None:
    ok(cli("claims", "import", str(claims_file(tmp_path / "c.jsonl",
                                                [claim_line(n) for n in range(100)]))))  # fmt: skip
    queries = [json.dumps({"owner": "acme", "text": f"what does job {n % 150} report", "id": n})
               for n in range(2_000)]  # fmt: skip
    queries.insert(500, "{broken")
    result = ok(cli("query", "--jsonl", input="\n".join(queries) + "\n"))
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == 2_001
    assert out[500] == {"outcome": "error", "error": out[500]["error"], "line": 501}
    assert "malformed JSON" in out[500]["error"]
    answered = [o for o in out if o["outcome"] != "error"]
    assert [o["id"] for o in answered] == list(range(2_000))
    hits = [o for o in answered if o["outcome"] == "hit"]
    assert len(hits) == sum(1 for n in range(2_000) if n % 150 < 100)
    assert all(o["answer"] is None for o in answered if o["outcome"] == "miss")
    assert all({"outcome", "answer", "claim_id", "score", "reason"} <= set(o) for o in answered)
    assert "1 errors" in result.stderr


def test_jsonl_lines_that_cannot_be_read_become_error_lines(cli: Cli) -> None:
    lines = [
        b'{"owner": "acme"}',  # no text
        b'{"owner": "acme", "text": "q", "colour": "red"}',  # unknown field
        b"[1]",  # not an object
        b'{"owner": "", "text": "q"}',  # blank owner
        b'{"owner": "acme", "text": "caf\xe9"}',  # not UTF-8
        b"",  # blank: skipped
        b'{"text": "who wrote it"}',  # owner from --owner
    ]
    ok(cli(*ADD))
    result = ok(cli("query", "--jsonl", "--owner", "acme", input=b"\n".join(lines) + b"\n"))
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["outcome"] for o in out] == ["error"] * 5 + ["miss"]
    assert [o["line"] for o in out] == [1, 2, 3, 4, 5, 7]
    assert "text" in out[0]["error"] and "colour" in out[1]["error"]
    assert "UTF-8" in out[4]["error"]


def test_jsonl_options_give_defaults_that_lines_override(cli: Cli) -> None:
    ok(cli(*ADD))
    lines = [
        {"text": QUESTION},
        {"text": QUESTION, "revision": "3f2a9c1"},
        {"text": QUESTION, "owner": "globex"},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    options = ["--owner", "acme", "--repository", "acme/api", "--revision", "0ld"]
    result = ok(cli("query", "--jsonl", *options, input=stdin))
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(o["outcome"], o["reason"]) for o in out][:2] == [("miss", "stale"), ("hit", "exact")]
    assert out[2]["outcome"] == "miss"


def test_jsonl_megabyte_and_operator_texts_are_misses(cli: Cli) -> None:
    ok(cli(*ADD))
    texts = ["x" * 1_000_000, 'NEAR("port" api', "", "port OR NOT *"]
    lines = "".join(json.dumps({"owner": "acme", "text": t}) + "\n" for t in texts)
    out = [json.loads(line) for line in ok(cli("query", "--jsonl", input=lines)).stdout.split("\n")
           if line]  # fmt: skip
    assert [o["outcome"] for o in out] == ["miss"] * 4
    assert out[0]["reason"] == "too_long" and out[2]["reason"] == "empty"


# -- claims import -----------------------------------------------------------------------------


def test_importing_twice_adds_nothing(cli: Cli, tmp_path: Path) -> None:
    path = claims_file(tmp_path / "c.jsonl", [claim_line(n) for n in range(10)])
    assert ok(cli("claims", "import", str(path))).stdout.startswith("10 added, 0 already present")
    assert ok(cli("claims", "import", str(path))).stdout.startswith("0 added, 10 already present")


def test_import_counts_the_questions_the_gate_can_never_serve(cli: Cli, tmp_path: Path) -> None:
    lines = [claim_line(1), claim_line(2, question="Why does this test fail?")]
    result = ok(cli("claims", "import", str(claims_file(tmp_path / "c.jsonl", lines))))
    assert result.stdout.startswith("2 added")
    assert "note: 1 of the questions point at something they do not carry" in result.stderr
    assert ok(cli("claims", "import", "-", input=claim_line(3) + "\n")).stderr == ""


def test_import_counts_the_questions_about_a_relative_time(cli: Cli, tmp_path: Path) -> None:
    lines = [claim_line(1), claim_line(2, question="What broke the build last week?")]
    result = ok(cli("claims", "import", str(claims_file(tmp_path / "c.jsonl", lines))))
    assert "note: 1 of the questions name a time relative to when they are asked" in result.stderr


def test_import_reads_standard_input(cli: Cli) -> None:
    out = json.loads(ok(cli("claims", "import", "-", "--json", input=claim_line(1) + "\n")).stdout)
    assert (out["added"], out["skipped"]) == (1, 0)


def test_a_bad_line_rejects_the_whole_file_and_names_it(cli: Cli, tmp_path: Path) -> None:
    path = claims_file(tmp_path / "c.jsonl", [claim_line(1), "", claim_line(3), "{oops"])
    line = one_line_error(cli("claims", "import", str(path)))
    assert "1 bad line" in line and "line 4" in line and "nothing was stored" in line
    assert json.loads(ok(cli("claims", "list", "--owner", "acme", "--json")).stdout) == []


def test_skip_bad_counts_the_skipped_lines(cli: Cli, tmp_path: Path) -> None:
    lines = [claim_line(1), "{oops", claim_line(3), '{"owner": "acme"}']
    path = claims_file(tmp_path / "c.jsonl", lines)
    result = ok(cli("claims", "import", str(path), "--skip-bad"))
    assert result.stdout.startswith("2 added, 0 already present, 2 skipped")
    assert "line 2" in result.stderr and "line 4" in result.stderr


def test_an_invalid_utf8_file_is_rejected(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(claim_line(1).encode() + b"\n" + '{"owner": "café"}'.encode("latin-1"))
    line = one_line_error(cli("claims", "import", str(path)))
    assert "line 2" in line and "UTF-8" in line


def test_a_missing_file_is_one_line_error(cli: Cli, tmp_path: Path) -> None:
    line = one_line_error(cli("claims", "import", str(tmp_path / "absent.jsonl")))
    assert "absent.jsonl" in line and "no such file" in line


# -- the database ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["claims", "list", "--owner", "acme"], ["query", "--owner", "acme", "q"], ["ledger"],
     ["receipts"], ["ask", "--owner", "acme", "q"]],
)  # fmt: skip
def test_a_corrupt_database_is_a_clear_error(cli: Cli, db: Path, command: list[str]) -> None:
    db.write_bytes(os.urandom(8192))
    assert "not a staffstore database" in one_line_error(cli(*command))


def test_a_damaged_database_with_a_sqlite_header_is_a_clear_error(cli: Cli, db: Path) -> None:
    db.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    assert "damaged" in one_line_error(cli("claims", "list", "--owner", "acme"))


def test_a_directory_as_database_is_a_clear_error(cli: Cli, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--db", str(tmp_path), "ledger"])
    assert "is a directory" in one_line_error(result)


def test_the_database_comes_from_the_environment(tmp_path: Path) -> None:
    target = tmp_path / "from-env.db"
    ok(CliRunner().invoke(app, ADD, env={"STAFFSTORE_DB": str(target)}))
    assert target.exists()


def test_the_default_database_follows_xdg(tmp_path: Path) -> None:
    assert default_db_path({"XDG_DATA_HOME": str(tmp_path)}) == (
        tmp_path / "staffstore" / "staffstore.db"
    )
    home = Path.home() / ".local" / "share" / "staffstore" / "staffstore.db"
    assert default_db_path({}) == home
    assert default_db_path({"XDG_DATA_HOME": "relative/ignored"}) == home
    assert default_db_path({"STAFFSTORE_DB": str(tmp_path / "x.db")}) == tmp_path / "x.db"


# -- list, search, show, retract ---------------------------------------------------------------


def test_list_show_search_and_retract(cli: Cli) -> None:
    claim_id = ok(cli(*ADD)).stdout.split()[-1]
    listed = ok(cli("claims", "list", "--owner", "acme")).stdout
    assert claim_id[:12] in listed and QUESTION in listed
    assert json.loads(ok(cli("claims", "search", "--owner", "acme", "port", "--json")).stdout)
    shown = json.loads(ok(cli("claims", "show", "--owner", "acme", claim_id[:8], "--json")).stdout)
    assert shown["id"] == claim_id
    assert ok(cli("claims", "retract", "--owner", "acme", claim_id)).stdout.startswith("retracted")
    retracted = ok(cli("claims", "list", "--owner", "acme", "--status", "retracted", "--json"))
    assert [c["id"] for c in json.loads(retracted.stdout)] == [claim_id]
    out = json.loads(ok(cli("query", "--owner", "acme", QUESTION, "--json")).stdout)
    assert (out["outcome"], out["reason"]) == ("miss", "retracted")


def test_an_unknown_claim_is_one_line_error(cli: Cli) -> None:
    ok(cli(*ADD))
    assert "not found" in one_line_error(cli("claims", "show", "--owner", "acme", "abcdef12"))
    assert "not found" in one_line_error(cli("claims", "retract", "--owner", "acme", "abcdef12"))


def test_another_owners_claim_cannot_be_shown(cli: Cli) -> None:
    claim_id = ok(cli(*ADD)).stdout.split()[-1]
    one_line_error(cli("claims", "show", "--owner", "globex", claim_id))


# -- ask ---------------------------------------------------------------------------------------


def receipts_json(cli: Cli) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(ok(cli("receipts", "--json")).stdout)
    return out


def test_ask_hit_makes_no_upstream_call(cli: Cli, fake: tuple[FakeOpenRouter, str]) -> None:
    upstream, base_url = fake
    ok(cli(*ADD))
    result = ok(cli("ask", "--owner", "acme", "--base-url", base_url, QUESTION))
    assert result.stdout == "8080\n"
    assert upstream.requests == []
    (receipt,) = receipts_json(cli)
    assert receipt["inference_avoided"] is True and receipt["status"] == "hit"


def test_ask_miss_prints_the_model_answer_and_writes_a_receipt_with_tokens(
    cli: Cli, fake: tuple[FakeOpenRouter, str]
) -> None:
    upstream, base_url = fake
    result = ok(cli("ask", "--owner", "acme", "--session", "s1", "--base-url", base_url,
                    "--model", "fake/echo", "what is the capital of france",
                    env={"OPENROUTER_API_KEY": KEY}))  # fmt: skip
    assert result.stdout == "echo: what is the capital of france\n"
    assert len(upstream.chat_requests) == 1
    (receipt,) = receipts_json(cli)
    assert (receipt["status"], receipt["inference_attempted"]) == ("ok", True)
    assert receipt["prompt_tokens"] and receipt["completion_tokens"]
    assert receipt["cost_usd"] == pytest.approx(0.0001)
    assert KEY not in result.stdout + result.stderr


def test_ask_json_carries_the_receipt(cli: Cli, fake: tuple[FakeOpenRouter, str]) -> None:
    _, base_url = fake
    result = ok(cli("ask", "--owner", "acme", "--base-url", base_url, "--json", "who wrote it",
                    env={"OPENROUTER_API_KEY": KEY}))  # fmt: skip
    out = json.loads(result.stdout)
    assert out["outcome"] == "miss" and out["answer"] == "echo: who wrote it"
    assert out["receipt_id"] == receipts_json(cli)[0]["id"] == out["receipt"]["id"]
    assert out["working_set"]["tokens"] > 0 and "messages" not in out["working_set"]


def test_ask_without_api_key_errors_and_records_an_unattempted_receipt(
    cli: Cli, fake: tuple[FakeOpenRouter, str]
) -> None:
    upstream, base_url = fake
    line = one_line_error(cli("ask", "--owner", "acme", "--base-url", base_url, "who wrote it"))
    assert "OPENROUTER_API_KEY" in line
    assert upstream.requests == []
    (receipt,) = receipts_json(cli)
    assert receipt["status"] == "no_api_key" and receipt["inference_attempted"] is False
    ledger = json.loads(ok(cli("ledger", "--json")).stdout)
    assert (ledger["turns"], ledger["not_attempted"], ledger["attempted_calls"]) == (1, 1, 0)


def test_ask_upstream_failure_is_one_line_error_with_a_receipt(
    cli: Cli, fake: tuple[FakeOpenRouter, str]
) -> None:
    upstream, base_url = fake
    upstream.fail(503, "overloaded")
    result = cli("ask", "--owner", "acme", "--base-url", base_url, "--max-retries", "0",
                 "who wrote it", env={"OPENROUTER_API_KEY": KEY})  # fmt: skip
    assert "503" in one_line_error(result)
    (receipt,) = receipts_json(cli)
    assert (receipt["status"], receipt["inference_attempted"]) == ("error", True)


def test_ask_never_prints_the_api_key(cli: Cli, fake: tuple[FakeOpenRouter, str]) -> None:
    _, base_url = fake
    wrong = "sk-or-v1-wrong-key-that-the-fake-echoes"
    result = cli("ask", "--owner", "acme", "--base-url", base_url, "--max-retries", "0", "--json",
                 "who wrote it", env={"OPENROUTER_API_KEY": wrong})  # fmt: skip
    assert "401" in one_line_error(result)
    receipts = ok(cli("receipts", "--json")).stdout + ok(cli("receipts")).stdout
    assert wrong not in result.stdout + result.stderr + receipts


def test_ask_unreachable_upstream_is_one_line_error(cli: Cli) -> None:
    result = cli("ask", "--owner", "acme", "--base-url", "http://127.0.0.1:9/api/v1",
                 "--max-retries", "0", "who wrote it", env={"OPENROUTER_API_KEY": KEY})  # fmt: skip
    assert "unreachable" in one_line_error(result)


# -- receipts and ledger -----------------------------------------------------------------------


def test_receipts_and_ledger_show_avoidance(cli: Cli) -> None:
    ok(cli(*ADD))
    ok(cli("ask", "--owner", "acme", QUESTION))
    cli("ask", "--owner", "acme", "who wrote it")  # no key: fails, still a receipt
    table = ok(cli("receipts", "--owner", "acme")).stdout
    assert "hit" in table and "no_api_key" in table
    assert ok(cli("receipts", "--owner", "globex", "--json")).stdout.strip() == "[]"
    ledger = json.loads(ok(cli("ledger", "--owner", "acme", "--json")).stdout)
    assert (ledger["turns"], ledger["hits"], ledger["avoidance"]) == (2, 1, 0.5)
    assert "avoidance 50.0%" in ok(cli("ledger")).stdout


# -- the entry point ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["claims", "list", "--owner", "acme", "--limit", "x"],
     ["claims", "list", "--owner", "acme", "--status", "bogus"],
     ["claims", "list"], ["nope"], ["claims", "add", "--owner", "acme"]],
)  # fmt: skip
def test_a_usage_error_is_one_line_and_exit_2(
    db: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", str(db), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


def test_main_returns_1_on_a_failed_command(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", str(db), "claims", "import", str(db.parent / "absent")]) == 1
    assert capsys.readouterr().err.startswith("error: ")


def test_main_returns_0_on_success(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", str(db), *ADD]) == 0
    assert main(["--db", str(db), "ledger"]) == 0
    assert main(["--help"]) == 0


def test_the_console_script_reports_a_missing_file_in_one_line(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("staffstore")
    env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    done = subprocess.run(
        [str(script), "--db", str(tmp_path / "s.db"), "claims", "import", "absent.jsonl"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == "error: absent.jsonl: no such file\n"


def test_bare_command_prints_help_not_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    main(["claims"])
    captured = capsys.readouterr()
    assert "error:" not in captured.out + captured.err
    assert "import" in captured.out + captured.err


def test_an_interrupt_exits_130_with_one_line() -> None:
    with pytest.raises(typer.Exit) as raised, user_errors():
        raise KeyboardInterrupt
    assert raised.value.exit_code == 130


def test_extensions_add_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "staffstore_demo_extension.py").write_text(
        "import typer\n"
        "def register(app: typer.Typer) -> None:\n"
        "    @app.command('hello')\n"
        "    def hello() -> None:\n"
        "        typer.echo('hello from an extension')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    target = typer.Typer()

    @target.command("other")
    def other() -> None: ...

    register_extensions(target, ["staffstore_demo_extension"])
    result = ok(CliRunner().invoke(target, ["hello"]))
    assert result.stdout == "hello from an extension\n"


def test_the_root_lists_every_command_each_module_adds_in_the_table_s_order() -> None:
    root = typer.main.get_command(app)
    listed = list(root.commands)
    assert listed == [name for names in EXTENSIONS.values() for name in names]
    # Reading each loads its module, which must add exactly the commands the table names.
    assert all(root.commands[name].name == name for name in listed)


def test_a_module_that_adds_other_commands_than_the_table_says_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "staffstore_misdeclared.py").write_text(
        "import typer\n"
        "def register(app: typer.Typer) -> None:\n"
        "    @app.command('greet')\n"
        "    def greet() -> None: ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    commands = LazyCommands({}, {"staffstore_misdeclared": ("hello",)}, typer.Typer)
    assert list(commands) == ["hello"]  # listed without importing
    with pytest.raises(ExtensionError, match="adds the commands \\['greet'\\]"):
        commands["hello"]


#: What a command that works on receipts alone has no use for.
_HEAVY = ("numpy", "onnxruntime", "staffstore.gate", "staffstore.proxy", "staffstore.replays",
          "staffstore.memory", "staffstore.jobs", "staffstore.working_set", "uvicorn")  # fmt: skip


def test_a_command_imports_only_what_it_uses() -> None:
    # A fresh interpreter, as a shell runs the command: each module above costs every run
    # its import (the gate's tables and numpy alone about 0.1 s on a 2-core machine).
    script = (
        "import sys\n"
        "from staffstore.cli import main\n"
        "code = main(['receipts', '--help'])\n"
        f"print([name for name in {_HEAVY!r} if name in sys.modules], code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[] 0"
    # The root's help lists every command, so it loads them all.
    everything = script.replace("['receipts', '--help']", "['--help']")
    done = subprocess.run([sys.executable, "-c", everything], capture_output=True, text=True)
    assert "staffstore.gate" in done.stdout.splitlines()[-1]
