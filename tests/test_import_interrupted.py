"""An import killed partway (kill -9 of a real process) leaves whole batches: each committed
transaction with its full-text index and word counts, nothing of the batch it was writing;
running the same import again stores the rest, and nothing twice. The process runs the
importer `claims import` runs, in batches of BATCH claims so that a short file has several."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from staffstore.store.database import COUNT_TERMS

BATCH = 1_000
CLAIMS = 12 * BATCH
#: Imports the file argv[2] into the store argv[1], BATCH claims a transaction; prints what
#: the import reports.
_IMPORT = f"""
import asyncio, json, sys
from staffstore.store import StaffStore
from staffstore.store.importer import import_claims

async def main():
    async with StaffStore.open(sys.argv[1]) as store:
        report = await import_claims(store, sys.argv[2], batch_size={BATCH})
    print(json.dumps({{"added": report.added, "present": report.present}}))

asyncio.run(main())
"""


def write_claims(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for number in range(count):
            question = f"What does nightly job {number} report about shard {number % 89}?"
            claim = {"owner": "acme", "question": question, "answer": f"result {number}"}
            out.write(json.dumps(claim) + "\n")


def import_command(db: Path, path: Path) -> list[str]:
    return [sys.executable, "-c", _IMPORT, str(db), str(path)]


def stored_claims(db: Path) -> int:
    """How many claims another connection sees committed (0 before the store exists)."""
    if not db.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as reader:
            return int(reader.execute("SELECT count(*) FROM claims").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


def check_whole(db: Path) -> tuple[int, int]:
    """The claims stored and the claims the full-text index holds, after checking the file,
    the index and the word counts are whole and agree with the claims."""
    with closing(sqlite3.connect(db)) as check:
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        check.execute("INSERT INTO claims_fts (claims_fts) VALUES ('integrity-check')")
        counted = check.execute("SELECT owner, term, n FROM term_counts ORDER BY 1, 2").fetchall()
        check.execute("DELETE FROM term_counts")
        check.execute(COUNT_TERMS)
        recounted = check.execute("SELECT owner, term, n FROM term_counts ORDER BY 1, 2").fetchall()
        check.rollback()  # only a check: the store keeps its own counts
        assert counted == recounted
        claims = int(check.execute("SELECT count(*) FROM claims").fetchone()[0])
        indexed = int(check.execute("SELECT count(*) FROM claims_fts").fetchone()[0])
        assert int(check.execute("SELECT count(DISTINCT id) FROM claims").fetchone()[0]) == claims
    return claims, indexed


def test_an_import_killed_midway_keeps_whole_batches_and_a_rerun_completes_it(
    tmp_path: Path,
) -> None:
    path, db = tmp_path / "claims.jsonl", tmp_path / "store.db"
    write_claims(path, CLAIMS)
    importing = subprocess.Popen(
        import_command(db, path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        # Killed as soon as the first batch is seen committed, while later ones are written.
        deadline = time.monotonic() + 120
        while stored_claims(db) == 0 and importing.poll() is None:
            assert time.monotonic() < deadline, "no batch was committed in two minutes"
            time.sleep(0.01)
        importing.send_signal(signal.SIGKILL)
    finally:
        importing.wait(timeout=60)
    assert importing.returncode == -signal.SIGKILL, "the import ended before it was killed"

    claims, indexed = check_whole(db)
    assert 0 < claims < CLAIMS
    assert claims % BATCH == 0
    assert indexed == claims

    rerun = subprocess.run(import_command(db, path), capture_output=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout) == {"added": CLAIMS - claims, "present": claims}
    assert check_whole(db) == (CLAIMS, CLAIMS)
