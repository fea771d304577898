"""Progress on long work: the library reports counts through a plain callback, and the command
line draws a bar on standard error only when it is a terminal (never on standard output, never
with --json)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import ok
from test_gate_replays import TURNS, write_dev_set
from typer.testing import CliRunner

from staffstore.cli.app import app
from staffstore.gate.scoring import DEFAULT_BUDGET
from staffstore.replays.pairs import run_pairs
from staffstore.replays.workday_dev import play_dev_set
from staffstore.store import StaffStore
from staffstore.store.importer import parse_claims, store_claims

PAIRS = [
    ("Why do deploys fail on Mondays?", "Why does the deploy fail on Mondays?", 1),
    ("Where are the backups kept?", "Who approved the last release?", 0),
    ("How do I rotate the signing key?", "How is the signing key rotated?", 1),
]


def claims_file(path: Path, count: int) -> Path:
    lines = (
        json.dumps({"owner": "acme", "question": f"what does job {n} report", "answer": "ok"})
        for n in range(count)
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def pairs_file(path: Path) -> Path:
    rows = ({"a": a, "b": b, "label": label} for a, b, label in PAIRS)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def quiet_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAFFSTORE_")}
    return {**env, "XDG_CONFIG_HOME": str(tmp_path / "no-config"), "COLUMNS": "100",
            "TERM": "xterm-256color"}  # fmt: skip


async def test_an_import_of_n_claims_reports_n_stored(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    with parse_claims(claims_file(tmp_path / "c.jsonl", 7).read_bytes().splitlines()) as parsed:
        async with StaffStore.open(tmp_path / "s.db") as store:
            report = await store_claims(
                store, parsed, batch_size=3, progress=lambda *done: seen.append(done)
            )
    assert report.added == 7
    assert seen == [(0, 7), (3, 7), (6, 7), (7, 7)]


async def test_a_pair_evaluation_reports_every_pair_of_every_mode(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    await run_pairs(pairs_file(tmp_path / "p.jsonl"), progress=lambda *done: seen.append(done))
    total = 2 * len(PAIRS)  # shared and isolated
    assert seen == [(done, total) for done in range(1, total + 1)]


async def test_a_dev_set_reports_every_turn(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    await play_dev_set(write_dev_set(tmp_path / "dev.jsonl"), budgets=[DEFAULT_BUDGET],
                       progress=lambda *done: seen.append(done))  # fmt: skip
    assert seen == [(done, len(TURNS)) for done in range(1, len(TURNS) + 1)]


def test_claims_import_off_a_terminal_prints_no_bar(tmp_path: Path) -> None:
    file = claims_file(tmp_path / "c.jsonl", 5)
    result = ok(CliRunner().invoke(app, ["--db", str(tmp_path / "s.db"), "claims", "import",
                                         str(file)]))  # fmt: skip
    assert result.stdout == "5 added, 0 already present, 0 skipped\n"
    assert result.stderr == ""


def test_a_pair_evaluation_piped_prints_only_its_own_lines(tmp_path: Path) -> None:
    file, ledger = pairs_file(tmp_path / "p.jsonl"), tmp_path / "ledger.json"
    done = subprocess.run(
        [sys.executable, "-m", "staffstore", "replay", "pairs", str(file), "--out", str(ledger)],
        capture_output=True, text=True, env=quiet_env(tmp_path), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"pairs: {file} (shared, isolated, all) -> {ledger}"]
    assert ledger.is_file() and "FILE" in done.stdout


def _read_all(fd: int, process: subprocess.Popen[bytes]) -> bytes:
    """Everything written to a pty's master side until the child exits and the side closes."""
    seen = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            process.kill()
            pytest.fail(f"no output for a minute; so far: {seen!r}")
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child's side is closed
            return seen
        if not chunk:
            return seen
        seen += chunk


def test_on_a_terminal_the_bar_is_on_stderr_and_stdout_stays_clean(tmp_path: Path) -> None:
    file, db = claims_file(tmp_path / "c.jsonl", 300), tmp_path / "s.db"
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "staffstore", "--db", str(db), "claims", "import", str(file)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=quiet_env(tmp_path),
    )  # fmt: skip
    os.close(slave)
    try:
        terminal = _read_all(master, process)
    finally:
        os.close(master)
    stdout = process.stdout.read() if process.stdout else b""
    assert process.wait(timeout=60) == 0
    assert stdout == b"300 added, 0 already present, 0 skipped\n"
    assert b"storing claims" in terminal and b"/300" in terminal
