"""Hostile input to the command line: lone surrogates, bytes that are not UTF-8, JSON nested a
thousand deep, numbers too large for a float, NaN. Each ends in a one-line `error: ...` (or, for
`query --jsonl`, an error line and the next input line), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ok, one_line_error
from typer.testing import CliRunner, Result

from staffstore.cli import app

QUESTION = "What port does the api listen on?"

#: JSON lines that are not claims or queries a person could have meant, and why each is bad.
HOSTILE_VALUES = {
    "lone-surrogate": '"\\ud800 what port"',
    "lone-low-surrogate": '"port \\udcff"',
    "deep-nesting": "[" * 1000 + "]" * 1000,
    "very-deep-nesting": "[" * 100_000 + "]" * 100_000,
    "float-overflow": "1e400",
    "negative-overflow": "-1e400",
    "huge-integer": "9" * 5000,
    "nan": "NaN",
    "infinity": "Infinity",
    "minus-infinity": "-Infinity",
}


def _strict_json(line: str) -> Any:
    """Parse an output line as RFC 8259 JSON: NaN and Infinity are not JSON."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} in output: {line[:200]}")

    return json.loads(line, parse_constant=refuse)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "s.db"


def invoke(db: Path, *args: str, input: bytes | None = None) -> Result:
    return CliRunner().invoke(app, ["--db", str(db), *args], input=input)


def staffstore_bytes(
    db: Path, *args: bytes, api_key: str | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the command as a shell would, with arguments given as raw bytes."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENROUTER_API_KEY", "STAFFSTORE_DB")}
    if api_key is not None:
        env["OPENROUTER_API_KEY"] = api_key
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"staffstore", b"--db", bytes(db), *args],
        capture_output=True, env=env, timeout=60,
    )  # fmt: skip


def add_claim(db: Path) -> None:
    ok(invoke(db, "claims", "add", "--owner", "acme", "--question", QUESTION, "--answer", "8080"))


# -- arguments that are not UTF-8 --------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [b"query", b"--owner", b"acme", b"\xff"],
        [b"query", b"--owner", b"\xffacme", b"what port"],
        [b"ask", b"--owner", b"acme", b"what \xff port"],
        [b"claims", b"list", b"--owner", b"\xff"],
        [b"receipts", b"--owner", b"\xff"],
        [b"ledger", b"--owner", b"\xff"],
        [b"claims", b"show", b"\xff\xfe\xfd\xfc\xfb\xfa", b"--owner", b"acme"],
        [b"claims", b"search", b"port \xff", b"--owner", b"acme"],
        [b"claims", b"add", b"--owner", b"acme", b"--question", b"q \xff", b"--answer", b"a"],
        [b"claims", b"add", b"--owner", b"acme", b"--question", b"q", b"--answer", b"a",
         b"--agent", b"\xc3"],
        [b"claims", b"retract", b"abcdef\xff", b"--owner", b"acme"],
        [b"claims", b"promote", b"rcpt_\xff", b"--owner", b"acme"],
    ],
    ids=lambda args: " ".join(a.decode(errors="replace") for a in args),
)  # fmt: skip
def test_an_argument_that_is_not_utf8_is_a_one_line_error(db: Path, args: list[bytes]) -> None:
    done = staffstore_bytes(db, *args)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode in (1, 2), err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "UTF-8" in lines[0]


def test_a_database_path_that_is_not_utf8_still_works(tmp_path: Path) -> None:
    # A file name is bytes to the system: only text that is stored or matched must be UTF-8.
    db = bytes(tmp_path) + b"/\xff.db"
    made = staffstore_bytes(db, b"claims", b"import", b"-")  # type: ignore[arg-type]
    assert made.returncode == 0, made.stderr
    done = staffstore_bytes(db, b"ledger")  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr


# -- query --jsonl -----------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["text", "owner", "id", "session"])
def test_query_jsonl_answers_each_hostile_line_with_an_error_line_and_goes_on(
    db: Path, where: str
) -> None:
    add_claim(db)
    good = json.dumps({"owner": "acme", "text": QUESTION, "id": "last"})
    lines = []
    for value in HOSTILE_VALUES.values():
        fields = {"owner": '"acme"', "text": json.dumps(QUESTION)}
        fields[where] = value
        lines.append("{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}")
    stdin = "\n".join([*lines, good]).encode() + b"\n"
    result = invoke(db, "query", "--jsonl", input=stdin)
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    out = [_strict_json(line) for line in result.stdout.splitlines()]
    assert [o["line"] for o in out] == list(range(1, len(lines) + 2))
    assert all(o["outcome"] == "error" and o["error"] for o in out[:-1]), out
    assert out[-1]["outcome"] == "hit" and out[-1]["id"] == "last"
    assert result.stderr.splitlines()[-1].endswith(f"{len(lines)} errors")


def test_query_jsonl_reports_a_line_nested_too_deep_without_echoing_it(db: Path) -> None:
    add_claim(db)
    stdin = ("[" * 5000 + "]" * 5000 + "\n").encode()
    (line,) = invoke(db, "query", "--jsonl", input=stdin).stdout.splitlines()
    error = _strict_json(line)
    assert error["outcome"] == "error" and "nested" in error["error"]
    assert len(line) < 300


# -- claims import -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HOSTILE_VALUES))
@pytest.mark.parametrize("field", ["question", "answer", "agent", "expires_at", "extra"])
def test_claims_import_names_a_hostile_line_and_stores_nothing(
    db: Path, tmp_path: Path, name: str, field: str
) -> None:
    fields = {"owner": '"acme"', "question": json.dumps(QUESTION), "answer": '"8080"'}
    fields[field] = HOSTILE_VALUES[name]
    bad = "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"
    good = json.dumps({"owner": "acme", "question": "what is the staging port", "answer": "81"})
    path = tmp_path / "claims.jsonl"
    path.write_text(f"{good}\n{bad}\n")
    error = one_line_error(invoke(db, "claims", "import", str(path)))
    assert "line 2:" in error and "nothing was stored" in error
    assert len(error) < 600
    skipped = ok(invoke(db, "claims", "import", str(path), "--skip-bad", "--json"))
    assert "Traceback" not in skipped.stderr
    report = json.loads(skipped.stdout)
    assert (report["added"], report["skipped"]) == (1, 1)
    assert [bad_line["line"] for bad_line in report["bad_lines"]] == [2]


# -- numbers and NaN in options ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["claims", "list", "--owner", "acme", "--limit", "99999999999999999999"],
        ["claims", "search", "port", "--owner", "acme", "--limit", "99999999999999999999"],
        ["receipts", "--limit", "99999999999999999999"],
        ["ask", "what port", "--owner", "acme", "--timeout", "nan"],
        ["ask", "what port", "--owner", "acme", "--timeout", "1e400"],
        ["ask", "what port", "--owner", "acme", "--budget", "99999999999999999999"],
        ["ask", "what port", "--owner", "acme", "--max-retries", "99999999999999999999"],
        ["claims", "add", "--owner", "acme", "--question", "q", "--answer", "a",
         "--expires-at", "NaN"],
        ["claims", "promote", "rcpt_x", "--owner", "acme", "--expires-at", "1e400"],
    ],
    ids=" ".join,
)  # fmt: skip
def test_a_number_out_of_range_is_a_one_line_error(db: Path, args: list[str]) -> None:
    done = staffstore_bytes(db, *(arg.encode() for arg in args))
    err = done.stderr.decode()
    assert done.returncode in (1, 2), err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err


@pytest.mark.parametrize(
    "base_url",
    ["http://[::1", "http://127.0.0.1:99999999/v1", "ftp://example.invalid/v1", "no url", ""],
)
def test_a_base_url_that_cannot_be_called_is_a_one_line_error(db: Path, base_url: str) -> None:
    args = ["ask", "what port", "--owner", "acme", "--base-url", base_url, "--max-retries", "0"]
    done = staffstore_bytes(db, *(arg.encode() for arg in args), api_key="sk-test-not-sent")
    err = done.stderr.decode()
    assert done.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--base-url" in lines[0], err
