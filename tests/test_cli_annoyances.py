"""Issue 42, item 5: what a new user trips over on the command line, each fixed.

Real SQLite files under tmp_path; the fake upstream on a real 127.0.0.1 server; the command
line in process (typer's runner, or `main` for usage errors, which it reports in one line),
and as a real process where a terminal, a signal or a socket is what is tested. No test here
depends on whether the gate serves a paraphrase: the questions asked again are the same text.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import signal
import socket
import struct
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_helpers import ok, one_line_error
from typer.testing import CliRunner, Result

from staffstore import __version__
from staffstore.cli.app import app, main
from staffstore.cli.tables import fit_table
from staffstore.cli.times import parse_when
from staffstore.errors import InputError
from staffstore.gate.scoring import default_model
from staffstore.models import Receipt
from staffstore.proxy.config import FILE_SETTINGS, JOB_SETTINGS, build_config
from staffstore.settings import UserSettings
from staffstore.store import StaffStore
from staffstore.testing import FakeOpenRouter

KEY = "sk-or-v1-annoyances-3141"
ROOT = Path(__file__).resolve().parents[1]
STAFFSTORE = Path(sys.executable).with_name("staffstore")
NOW = datetime.now(UTC)

Cli = Callable[..., Result]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("OPENROUTER_API_KEY", "STAFFSTORE_DB", "STAFFSTORE_OWNER", "STAFFSTORE_MODEL",
                 "STAFFSTORE_UPSTREAM", "STAFFSTORE_UPSTREAM_KEY_ENV", "STAFFSTORE_GATE_BUDGET",
                 "STAFFSTORE_KEPT_RETENTION_DAYS", "COLUMNS"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config.toml"
    monkeypatch.setenv("STAFFSTORE_CONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    return config


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "s.db"


@pytest.fixture
def cli(db: Path) -> Cli:
    """`staffstore --db DB ARGS...` in process, the API key in the environment."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
        return runner.invoke(
            app,
            ["--db", str(db), *args],
            input=input,
            env={"OPENROUTER_API_KEY": KEY, **(env or {})},
        )

    return invoke


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenRouter, str]]:
    fake = FakeOpenRouter(api_key=KEY)
    with fake.serve_in_thread() as base_url:
        yield fake, base_url


@pytest.fixture
def ask(cli: Cli, upstream: tuple[FakeOpenRouter, str]) -> Cli:
    _, base_url = upstream

    def invoke(*args: str, **options: Any) -> Result:
        return cli("ask", "--owner", "acme", "--upstream", base_url, "--max-retries", "0", *args,
                   **options)  # fmt: skip

    return invoke


def serve_error(argv: list[str]) -> str:
    """The one `error:` line of a `serve` that must refuse to start, run as a process (had it
    started, the time limit stops it and the test fails)."""
    done = subprocess.run([str(STAFFSTORE), *argv], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one `error:` line a usage error prints through the console script's `main`."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def receipts_of(cli: Cli, *args: str) -> list[dict[str, Any]]:
    return list(json.loads(ok(cli("receipts", "--json", *args)).stdout))


def add_receipts(db: Path, *receipts: Receipt) -> None:
    async def work() -> None:
        async with StaffStore.open(db) as store:
            for receipt in receipts:
                await store.add_receipt(receipt)

    asyncio.run(work())


def receipt(number: int, started: datetime, *, reason: str = "no_candidate") -> Receipt:
    hit = reason == "exact"
    return Receipt(
        id=f"rcpt_test_{number}", owner="acme", outcome="hit" if hit else "miss", reason=reason,
        status="hit" if hit else "ok", cost_usd=None if hit else 0.001, inference_avoided=hit,
        inference_attempted=not hit, latency_ms=1.0, started_at=started, finished_at=started,
        question=f"question {number}",
    )  # fmt: skip


# -- the database: the global --db and $STAFFSTORE_DB, charts included -------------------------


@pytest.fixture
def live_db(db: Path) -> Path:
    add_receipts(db, *(receipt(n, NOW - timedelta(hours=n), reason="exact" if n % 2 else
                                "no_candidate") for n in range(1, 5)))  # fmt: skip
    return db


def test_charts_charts_the_store_the_global_db_names(live_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "acme.png"
    result = ok(CliRunner().invoke(
        app, ["--db", str(live_db), "charts", "--owner", "acme", "--out", str(out), "--json"]
    ))  # fmt: skip
    assert json.loads(result.stdout)["owner"] == "acme" and out.is_file()


def test_charts_charts_the_store_staffstore_db_names(live_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "acme.png"
    result = CliRunner().invoke(
        app, ["charts", "--owner", "acme", "--out", str(out), "--json"],
        env={"STAFFSTORE_DB": str(live_db)},
    )  # fmt: skip
    assert json.loads(ok(result).stdout)["owner"] == "acme" and out.is_file()


def test_charts_with_the_global_db_and_no_owner_asks_for_one(live_db: Path) -> None:
    line = one_line_error(CliRunner().invoke(app, ["--db", str(live_db), "charts"]))
    assert "--owner is required" in line


# -- ask: a question from standard input, a system instruction, a stream -----------------------


def test_ask_dash_reads_the_question_from_standard_input(
    ask: Cli, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    result = ok(ask("-", input="Which port does the api use?\n"))
    (sent,) = fake.chat_requests
    assert sent.json["messages"][-1] == {"role": "user", "content": "Which port does the api use?"}
    assert result.stdout == "echo: Which port does the api use?\n"


def test_query_dash_reads_the_question_from_standard_input(cli: Cli) -> None:
    question = "Which port does the api use?"
    ok(cli("claims", "add", "--owner", "acme", "--question", question, "--answer", "8080"))
    shown = json.loads(ok(cli("query", "--owner", "acme", "--json", "-", input=question)).stdout)
    assert (shown["outcome"], shown["reason"], shown["answer"]) == ("hit", "exact", "8080")


def test_ask_system_is_the_instruction_the_model_is_sent(
    ask: Cli, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    ok(ask("--system", "Answer in French.", "Which port?"))
    (sent,) = fake.chat_requests
    assert sent.json["messages"][0] == {"role": "system", "content": "Answer in French."}


def test_an_answer_kept_under_one_system_instruction_does_not_serve_another(
    ask: Cli, cli: Cli, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    for system in ("Answer in French.", "Answer in German.", "Answer in French."):
        ok(ask("--system", system, "Which port?"))
    assert len(fake.chat_requests) == 2  # the third is the first again: served as kept
    reasons = [r["reason"] for r in receipts_of(cli, "--owner", "acme")]
    assert reasons[0] == "exact_repeat"


def test_ask_stream_prints_the_answer_and_writes_its_receipt(
    ask: Cli, cli: Cli, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    fake.answer("The api listens on 8080.")
    result = ok(ask("--stream", "Which port?"))
    assert result.stdout == "The api listens on 8080.\n"
    (sent,) = fake.chat_requests
    assert sent.json["stream"] is True
    (written,) = receipts_of(cli)
    assert (written["status"], written["cost_usd"]) == ("ok", 0.0001)


def test_ask_stream_cut_short_fails_in_one_line_and_keeps_the_receipt(
    ask: Cli, cli: Cli, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, _ = upstream
    fake.cut_stream(after_chunks=2)
    result = ask("--stream", "Which port does the api use?")
    line = one_line_error(result)
    assert "receipt" in line and result.stdout == "echo: Which \n"  # what came, then a newline
    (written,) = receipts_of(cli)
    assert written["status"] == "error" and written["id"] in line


def test_ask_stream_and_json_together_is_a_usage_error(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = usage_error(["--db", str(db), "ask", "--owner", "a", "--stream", "--json", "q"], capsys)
    assert "--stream or --json" in line


def test_an_interrupted_stream_exits_130_and_writes_a_cancelled_receipt(
    tmp_path: Path, db: Path, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, base_url = upstream
    fake.answer(" ".join(f"word{n}" for n in range(200)), chunk_delay=0.2)
    process = subprocess.Popen(
        [str(STAFFSTORE), "--db", str(db), "ask", "--owner", "acme", "--upstream", base_url,
         "--stream", "Tell me a long story?"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "OPENROUTER_API_KEY": KEY},
        # Ctrl-C as a terminal delivers it: a test run started in the background of a shell
        # without job control inherits SIGINT ignored, and Python then keeps it ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert process.stdout is not None
    assert process.stdout.read(5) == b"word0"  # the stream has begun
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and err.decode().strip() == "error: interrupted"
    done = subprocess.run([str(STAFFSTORE), "--db", str(db), "receipts", "--json"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert [r["status"] for r in json.loads(done.stdout)] == ["cancelled"]


# -- times: one parser for --since and --until ---------------------------------------------------


AT = datetime(2026, 3, 4, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2h", AT - timedelta(hours=2)), ("30m", AT - timedelta(minutes=30)),
        ("7d", AT - timedelta(days=7)), ("2h ago", AT - timedelta(hours=2)),
        ("today", datetime(2026, 3, 4, tzinfo=UTC)),
        ("yesterday", datetime(2026, 3, 3, tzinfo=UTC)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
        ("2026-03-01T09:30:00+02:00", datetime(2026, 3, 1, 7, 30, tzinfo=UTC)),
        ("2026-03-01T09:30Z", datetime(2026, 3, 1, 9, 30, tzinfo=UTC)),
    ],
)  # fmt: skip
def test_a_time_is_iso_8601_a_span_back_or_a_named_day(text: str, moment: datetime) -> None:
    assert parse_when(text, AT) == moment


@pytest.mark.parametrize("text", ["bogus", "2 hours", "", "1900-01-01", "99999999999d"])
def test_a_time_that_names_none_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(text))):
        parse_when(text, AT)


def test_receipts_since_takes_a_span_back_from_now(cli: Cli, db: Path) -> None:
    add_receipts(db, receipt(1, NOW - timedelta(hours=1)), receipt(2, NOW - timedelta(hours=3)))
    assert [r["id"] for r in receipts_of(cli, "--since", "2h")] == ["rcpt_test_1"]
    assert [r["id"] for r in receipts_of(cli, "--until", "2h")] == ["rcpt_test_2"]


def test_receipts_export_since_takes_yesterday(cli: Cli, db: Path) -> None:
    add_receipts(db, receipt(1, NOW), receipt(2, NOW - timedelta(days=3)))
    lines = ok(cli("receipts", "export", "--since", "yesterday")).stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["rcpt_test_1"]


@pytest.mark.parametrize(
    "args", [["receipts", "--since", "last tuesday"], ["receipts", "export", "--until", "soon"],
             ["charts", "--owner", "acme", "--since", "2 days"]],
)  # fmt: skip
def test_a_bad_time_is_one_line_naming_the_forms(
    db: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    line = usage_error(["--db", str(db), *args], capsys)
    assert "is not a time" in line and "30m, 2h, 7d" in line and "ISO 8601" in line


# -- every value from a set is checked, and the error names the set ------------------------------


@pytest.mark.parametrize(
    ("args", "valid"),
    [
        (["receipts", "--reason", "bogus"], "no_candidate"),
        (["receipts", "export", "--reason", "bogus"], "below_threshold"),
        (["receipts", "--outcome", "bogus"], "miss"),
        (["receipts", "export", "--format", "xml"], "jsonl"),
        (["ledger", "--by", "week"], "hour"),
        (["claims", "list", "--owner", "acme", "--status", "bogus"], "retracted"),
        (["jobs", "list", "--owner", "acme", "--status", "bogus"], "succeeded"),
        (["jobs", "list", "--owner", "acme", "--kind", "bogus"], "analyze"),
    ],
)  # fmt: skip
def test_a_value_outside_its_set_is_one_line_naming_the_set(
    db: Path, args: list[str], valid: str, capsys: pytest.CaptureFixture[str]
) -> None:
    add_receipts(db, receipt(1, NOW))
    line = usage_error(["--db", str(db), *args], capsys)
    assert valid in line and args[-1] in line and "Value error" not in line


def test_a_reason_some_receipt_has_is_taken_though_none_lists_it(cli: Cli, db: Path) -> None:
    add_receipts(db, receipt(1, NOW, reason="a_code_from_a_later_release"))
    found = receipts_of(cli, "--reason", "a_code_from_a_later_release")
    assert [r["id"] for r in found] == ["rcpt_test_1"]


# -- the gate's budget: only a calibrated one ----------------------------------------------------


@pytest.mark.parametrize("budget", ["0", "1", "0.003"])
def test_a_gate_budget_not_calibrated_is_refused_with_the_calibrated_ones(
    db: Path, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = usage_error(["--db", str(db), "query", "--owner", "a", "--gate-budget", budget, "q"],
                       capsys)  # fmt: skip
    assert "not a calibrated budget" in line
    assert all(f"{calibrated:g}" in line for calibrated in default_model().budgets)


def test_a_calibrated_gate_budget_is_taken(cli: Cli) -> None:
    ok(cli("claims", "add", "--owner", "acme", "--question", "Which port?", "--answer", "8080"))
    budget = f"{default_model().budgets[-1]:g}"
    shown = json.loads(ok(cli("query", "--owner", "acme", "--gate-budget", budget, "--json",
                              "Which port?")).stdout)  # fmt: skip
    assert shown["outcome"] == "hit"


def test_serve_refuses_a_gate_budget_not_calibrated(db: Path) -> None:
    line = serve_error(["--db", str(db), "serve", "--trusted", "--gate-budget", "0.3"])
    assert "not a calibrated budget" in line


def test_replay_pairs_refuses_a_gate_budget_not_calibrated(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--db", str(db), "replay", "pairs", "x.jsonl", "--gate-budget", "0"]
    assert "not a calibrated budget" in usage_error(argv, capsys)


def test_the_gate_budget_variable_is_checked_too(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STAFFSTORE_GATE_BUDGET", "0")
    line = usage_error(["--db", str(db), "query", "--owner", "a", "q"], capsys)
    assert "STAFFSTORE_GATE_BUDGET" in line and "not a calibrated budget" in line


def test_a_query_line_with_a_budget_not_calibrated_is_an_error_line(cli: Cli) -> None:
    ok(cli("claims", "add", "--owner", "acme", "--question", "Which port?", "--answer", "8080"))
    line = '{"owner": "acme", "text": "Which port?", "gate_budget": 0}\n'
    (out,) = [json.loads(x) for x in ok(cli("query", "--jsonl", input=line)).stdout.splitlines()]
    assert out["outcome"] == "error" and "not a calibrated budget" in out["error"]


def test_the_server_config_refuses_a_gate_budget_not_calibrated(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a calibrated budget"):
        build_config(db_path=tmp_path / "s.db", trusted=True, gate_budget=1.0)


# -- serve: a busy port, an upstream that is not http(s) -----------------------------------------


def test_serve_on_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(STAFFSTORE), "--db", str(tmp_path / "s.db"), "serve", "--trusted", "--port",
             str(port)], capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == (
        f"error: port {port} on 127.0.0.1 is in use (another server?): give --port, or port "
        "in the config file's [serve] table\n"
    )


@pytest.mark.parametrize("url", ["ftp://x", "file:///etc/passwd", "localhost:8080"])
def test_serve_upstream_must_be_an_http_url(db: Path, url: str) -> None:
    line = serve_error(["--db", str(db), "serve", "--trusted", "--upstream", url, "--port", "0"])
    assert "http:// or https://" in line


def test_the_server_config_refuses_an_upstream_that_is_not_http(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    config.write_text('[serve]\nupstream = "ftp://user:secret@x"\ntrusted = true\n')
    with pytest.raises(InputError, match="http:// or https://") as raised:
        build_config(config_file=config, db_path=tmp_path / "s.db")
    assert "secret" not in str(raised.value)


# -- the config file: unknown keys, bad values, config show, the reference ----------------------


#: A command that succeeds on a new database, whatever the settings hold.
ADD = ["claims", "add", "--owner", "acme", "--question", "Which port?", "--answer", "8080"]


def test_an_unknown_config_key_is_an_error_naming_it(cli: Cli, clean_env: Path) -> None:
    clean_env.write_text('ownr = "acme"\n')
    line = one_line_error(cli(*ADD))
    assert "unknown setting 'ownr'" in line and "owner" in line


def test_a_server_setting_at_the_top_level_says_where_it_goes(cli: Cli, clean_env: Path) -> None:
    clean_env.write_text("port = 9000\n")
    assert "[serve]" in one_line_error(cli(*ADD))


@pytest.mark.parametrize(
    ("text", "env"),
    [('upstream = "ftp://x"\n', {}), ("", {"STAFFSTORE_UPSTREAM": "ftp://x"})],
)
def test_a_configured_upstream_that_is_not_http_is_one_line(
    cli: Cli, clean_env: Path, text: str, env: dict[str, str]
) -> None:
    clean_env.write_text(text)
    assert "http:// or https://" in one_line_error(cli(*ADD, env=env))


def test_config_show_names_where_each_value_came_from(cli: Cli, clean_env: Path, db: Path) -> None:
    clean_env.write_text('owner = "acme"\n[serve]\nport = 9000\n')
    shown = json.loads(ok(cli("config", "show", "--json", env={"STAFFSTORE_MODEL": "m/x"})).stdout)
    settings = shown["settings"]
    assert settings["owner"] == {"value": "acme", "from": "config file"}
    assert settings["model"] == {"value": "m/x", "from": "env"}
    assert settings["db"] == {"value": str(db), "from": "flag"}
    assert settings["upstream_key_env"] == {"value": "OPENROUTER_API_KEY", "from": "default"}
    assert shown["serve"]["port"] == {"value": 9000, "from": "config file"}
    assert shown["serve"]["host"] == {"value": "127.0.0.1", "from": "default"}
    assert shown["config_file"] == {"value": str(clean_env), "exists": True, "from": "env"}


def test_config_show_prints_one_line_a_setting(cli: Cli, clean_env: Path) -> None:
    clean_env.write_text('owner = "acme"\n')
    lines = ok(cli("config", "show")).stdout.splitlines()
    assert lines[0].split() == ["SETTING", "VALUE", "FROM"]
    assert ["owner", "acme", "config", "file"] in [line.split() for line in lines]


def test_config_show_never_prints_a_key(cli: Cli, clean_env: Path) -> None:
    clean_env.write_text(
        'upstream = "https://user:pa55word@example.test/v1"\n[serve]\nmetrics_key = "m-s3cret"\n'
        '[[serve.owners]]\nowner = "acme"\nkey = "sk-client-s3cret"\n'
    )
    out = ok(cli("config", "show", env={"OPENROUTER_API_KEY": "sk-or-s3cret"})).stdout
    for secret in ("pa55word", "m-s3cret", "sk-client-s3cret", "sk-or-s3cret"):
        assert secret not in out


def test_the_config_reference_documents_every_key() -> None:
    text = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    for name in [*UserSettings.model_fields, *FILE_SETTINGS, *JOB_SETTINGS]:
        assert f"| `{name}` |" in text, name


# -- tables fit a terminal -----------------------------------------------------------------------


def in_terminal(args: list[str], columns: int = 80, cwd: Path | None = None) -> str:
    """What a command prints on a terminal `columns` wide (standard error apart), without the
    terminal's colours and carriage returns."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm"}
    process = subprocess.Popen([str(STAFFSTORE), *args], stdout=follower, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, env=env, cwd=cwd)  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal is gone with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=120)
    os.close(leader)
    assert process.returncode == 0, process.stderr.read() if process.stderr else ""
    text = b"".join(chunks).decode("utf-8").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_replay_pairs_fits_80_columns_and_cuts_no_value(tmp_path: Path) -> None:
    pairs = tmp_path / "tiny.jsonl"
    same = [{"a": f"Why did build {n} fail?", "b": f"Why did build {n} fail?", "label": 1,
             "id": str(n)} for n in range(3)]  # fmt: skip
    pairs.write_text("".join(json.dumps(pair) + "\n" for pair in same))
    out = in_terminal(["replay", "pairs", str(pairs), "--out", str(tmp_path / "l.json")])
    lines = out.splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    words = {word for line in lines for word in line.split()}
    assert {"tiny.jsonl", "shared", "isolated", "3/3", "LABELLED_PARAPHRASE_HITS"} <= words


def test_a_prose_column_is_cut_with_an_ellipsis_and_the_rest_kept(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    question = "Which port does the api listen on when it runs inside the staging cluster?"
    add = ["claims", "add", "--owner", "acme", "--question", question, "--answer", "8080"]
    subprocess.run([str(STAFFSTORE), "--db", str(db), *add], check=True, capture_output=True)
    lines = in_terminal(["--db", str(db), "claims", "list", "--owner", "acme"], 110).splitlines()
    assert len(lines) == 2 and max(len(line) for line in lines) <= 110
    assert lines[1].endswith("…") and "live" in lines[1].split()


def test_a_table_that_fits_is_one_line_a_row() -> None:
    lines = fit_table(["ID", "NAME"], [["1", "one"], ["2", "two"]], 80)
    assert [line for line, _ in lines] == ["ID  NAME", "1   one", "2   two"]


def test_a_table_too_wide_for_its_headers_wraps_them_at_word_breaks() -> None:
    lines = [line for line, _ in fit_table(["FALSE_HIT_RATE", "N"], [["1%", "2"]], 10)]
    assert lines == ["FALSE_  N", "HIT_", "RATE", "1%      2"]


def test_a_table_that_cannot_fit_becomes_one_block_a_row() -> None:
    headers = [f"COLUMN_NUMBER_{n}" for n in range(8)]
    rows = [[f"value-{r}-{n}" for n in range(8)] for r in range(2)]
    lines = [line for line, _ in fit_table(headers, rows, 40)]
    assert lines[0] == "COLUMN_NUMBER_0  value-0-0" and lines[8] == ""
    assert max(len(line) for line in lines) <= 40 and len(lines) == 17


# -- help: -h and -V, and every help page clean -------------------------------------------------


def command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            yield from command_paths(sub, (*path, name))


@pytest.mark.parametrize("path", list(command_paths(typer.main.get_command(app))), ids=" ".join)
def test_every_help_page_shows_no_bool_and_no_giant_range(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and "range>" not in result.output
    assert not re.search(r"\d{10,}", result.output), result.output


def test_dash_h_is_help_on_the_root_and_on_a_command() -> None:
    runner = CliRunner()
    for path in ([], ["receipts", "export"]):
        short = runner.invoke(app, [*path, "-h"], env={"COLUMNS": "120"})
        assert (
            short.exit_code == 0
            and short.output == runner.invoke(app, [*path, "--help"], env={"COLUMNS": "120"}).output
        )


def test_dash_capital_v_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-V"]) == 0
    assert capsys.readouterr().out == f"staffstore {__version__}\n"


def test_main_takes_dash_h(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-h"]) == 0
    assert "Usage: staffstore" in capsys.readouterr().out
