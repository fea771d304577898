"""Issue 36 on the command line, through its entry point (`staffstore.cli.main`, which the
console script calls; `python -m staffstore` where a process of its own matters): strict JSON in
state bodies and schema files, one check of names, `--history` bounds, and a state an older
version stored with NaN. Each bad input is one `error: ...` line and a non-zero exit."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ok, one_line_error

from staffstore.cli import main

SCOPE_KEY = "cli-hardening-scope-key-0123456789"
SHOP = ["--owner", "acme", "--agent", "shop"]
TASK = ["--scope-kind", "task", "--scope-id", "t-36"]
SCHEMA = {"fields": {"n": {"type": "any"}}, "agent_state": {"scope": "task"}}


@dataclass(frozen=True)
class Ran:
    """A finished command: the fields of typer's Result that cli_helpers' checks read."""

    exit_code: int
    stdout: str
    stderr: str


Staffstore = Callable[..., Ran]


@pytest.fixture
def staffstore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Staffstore:
    """Run `staffstore --db DB ARGS...` through main() and return its exit code and output."""
    monkeypatch.setenv("STAFFSTORE_STATE_KEY", SCOPE_KEY)
    db = tmp_path / "s.db"

    def run(*args: str) -> Ran:
        capsys.readouterr()
        code = main(["--db", str(db), *args])
        out = capsys.readouterr()
        return Ran(code, out.out, out.err)

    return run


@pytest.fixture
def declared(staffstore: Staffstore, tmp_path: Path) -> Staffstore:
    schema = tmp_path / "shop.json"
    schema.write_text(json.dumps(SCHEMA))
    ok(staffstore("agent-state", "declare", str(schema), *SHOP))
    return staffstore


# -- strict JSON in a state body ------------------------------------------------------------------


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_a_body_with_a_number_json_does_not_have_is_one_error_line(
    declared: Staffstore, number: str
) -> None:
    line = one_line_error(declared("agent-state", "put", f'{{"n": {number}}}', *SHOP, *TASK))
    assert "not valid JSON" in line
    read = json.loads(ok(declared("agent-state", "read", *SHOP, *TASK)).stdout)
    assert read["version"] == 0  # nothing was stored


def _process(db: Path, *args: str, input: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STAFFSTORE_STATE_KEY": SCOPE_KEY}
    env.pop("STAFFSTORE_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "staffstore", "--db", str(db), *args],
        capture_output=True, text=True, env=env, input=input, timeout=60,
    )  # fmt: skip


def test_a_body_nested_100000_deep_is_one_error_line_not_a_traceback(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    done = _process(tmp_path / "p.db", "agent-state", "put", "-", *SHOP, *TASK, input=deep)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: the body is nested more than 64 levels deep"
    ]


# -- schema files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ('{"properties": {"n": {"enum": 5}}, "agent_state": {"scope": "task"}}', "enum"),
        ('{"properties": {"n": {"anyOf": [1, 2]}}, "agent_state": {"scope": "task"}}', "anyOf"),
        ('{"fields": {"n": {"type": "enum", "values": [NaN]}}, "agent_state": {"scope": "task"}}',
         "NaN"),
        ('{"fields": {"n": {"type": "number"}}, "agent_state": {"scope": "task"}, "retention": '
         + "9" * 500 + "}", "retention"),
        ("[" * 100_000 + "]" * 100_000, "nested more than 64 levels"),
    ],
    ids=["enum-5", "anyOf-numbers", "nan-value", "huge-retention", "100000-deep"],
)  # fmt: skip
def test_an_invalid_schema_file_is_one_error_line(
    staffstore: Staffstore, tmp_path: Path, document: str, problem: str
) -> None:
    schema = tmp_path / "bad.json"
    schema.write_text(document)
    line = one_line_error(staffstore("agent-state", "declare", str(schema), *SHOP))
    assert problem in line
    assert one_line_error(staffstore("agent-state", "schema", *SHOP)).startswith(
        "error: no schema declared"
    )


# -- names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["state", "set", "k", "v", "--reason", "r", "--owner", "acme", "--agent", "trader\n"],
        ["state", "get", "--owner", "acme", "--agent", "trader\n"],
        ["state", "set", "k", "v", "--reason", "r", "--owner", "acme\n", "--agent", "trader"],
        ["agent-state", "list", "--owner", "acme", "--agent", "shop\n"],
    ],
)
def test_a_name_with_a_trailing_newline_is_one_error_line(
    staffstore: Staffstore, command: list[str]
) -> None:
    line = one_line_error(staffstore(*command))
    assert "control characters" in line or "agent name" in line


def test_a_schema_for_an_agent_name_with_a_newline_is_refused(
    staffstore: Staffstore, tmp_path: Path
) -> None:
    schema = tmp_path / "shop.json"
    schema.write_text(json.dumps(SCHEMA))
    args = ["agent-state", "declare", str(schema), "--owner", "acme", "--agent", "shop\n"]
    assert "agent name" in one_line_error(staffstore(*args))


# -- --history ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "history", ["1" + "0" * 30, "9" * 5000, "²", "1001"], ids=["1e30", "5000-digits", "²", "1001"]
)
def test_a_history_that_is_not_a_small_whole_number_is_one_error_line(
    staffstore: Staffstore, history: str
) -> None:
    line = one_line_error(staffstore("state", "get", "--owner", "acme", "--history", history))
    assert "--history" in line


# -- a state an older version stored with NaN -----------------------------------------------------


def _stored_by_an_older_version(db: Path, body: str) -> None:
    connection = sqlite3.connect(db)
    with connection:
        connection.execute("UPDATE agent_states SET body = ?", (body,))
    connection.close()


def test_an_old_state_with_nan_prints_as_strict_json_with_null(
    declared: Staffstore, tmp_path: Path
) -> None:
    ok(declared("agent-state", "put", '{"n": 1}', *SHOP, *TASK, "--subject", "ana"))
    _stored_by_an_older_version(tmp_path / "s.db", '{"n":NaN}')

    def strict(text: str) -> Any:
        def refuse(name: str) -> Any:
            raise AssertionError(f"{name} in the output")

        return json.loads(text, parse_constant=refuse)

    read = strict(ok(declared("agent-state", "read", *SHOP, *TASK)).stdout)
    assert read["body"] == {"n": None}
    export = strict(
        ok(declared("agent-state", "export", "--owner", "acme", "--subject", "ana")).stdout
    )
    assert export["states"][0]["fields"]["n"]["value"] is None
