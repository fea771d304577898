"""Writers of the same claims at once, as real processes on one database file: none fails, and
each claim is stored once however the writes interleave."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_proxy_support import ADMIN_KEY, running_proxy

#: Enough lines for several import batches each, so the writers interleave between batches.
LINES = 12_000


def write_claims(path: Path, owner: str, count: int = LINES) -> list[dict[str, str]]:
    claims = [
        {"owner": owner, "question": f"what does job {n} report about widget {n * 7}",
         "answer": f"r{n}"}
        for n in range(count)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(claim) + "\n" for claim in claims))
    return claims


def staffstore(db: Path, *args: str) -> subprocess.Popen[str]:
    """Start `staffstore --db DB ARGS...` as its own process."""
    env = {key: value for key, value in os.environ.items() if key != "STAFFSTORE_DB"}
    return subprocess.Popen(
        [sys.executable, "-m", "staffstore", "--db", str(db), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def finish(process: subprocess.Popen[str]) -> dict[str, int]:
    """Wait for an import run with --json; check it succeeded and return its counts."""
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    report = json.loads(out)
    return {"added": report["added"], "present": report["present"]}


def stored(db: Path) -> tuple[int, int]:
    """How many claims the file holds, and how many distinct ids among them."""
    with sqlite3.connect(db) as connection:
        ((rows, ids),) = connection.execute("SELECT count(*), count(DISTINCT id) FROM claims")
    return rows, ids


def term_counts_match_claims(db: Path) -> bool:
    """Whether the per-owner word counts agree with the claims' search keys."""
    with sqlite3.connect(db) as connection:
        counted = dict(
            ((owner, term), n)
            for owner, term, n in connection.execute("SELECT owner, term, n FROM term_counts")
        )
        expected: dict[tuple[str, str], int] = {}
        for owner, key in connection.execute("SELECT owner, search_key FROM claims"):
            for term in key.split():
                expected[owner, term] = expected.get((owner, term), 0) + 1
    return {k: v for k, v in counted.items() if v} == expected


@pytest.mark.parametrize("fresh", [True, False], ids=["new-database", "existing-database"])
def test_two_imports_of_one_file_at_once_store_each_claim_once(tmp_path: Path, fresh: bool) -> None:
    db = tmp_path / "s.db"
    if not fresh:  # made by an import of nothing: a read command no longer creates a file
        (tmp_path / "empty.jsonl").write_text("")
        made = staffstore(db, "claims", "import", str(tmp_path / "empty.jsonl"))
        made.communicate(timeout=60)
        assert made.returncode == 0 and db.exists()
    path = tmp_path / "claims.jsonl"
    write_claims(path, "acme")
    first, second = (staffstore(db, "claims", "import", str(path), "--json") for _ in range(2))
    reports = [finish(first), finish(second)]
    assert sum(report["added"] for report in reports) == LINES
    assert sum(report["present"] for report in reports) == LINES
    assert stored(db) == (LINES, LINES)
    assert term_counts_match_claims(db)


def test_importing_a_file_again_adds_nothing(tmp_path: Path) -> None:
    db, path = tmp_path / "s.db", tmp_path / "claims.jsonl"
    write_claims(path, "acme", 50)
    assert finish(staffstore(db, "claims", "import", str(path), "--json"))["added"] == 50
    again = finish(staffstore(db, "claims", "import", str(path), "--json"))
    assert again == {"added": 0, "present": 50}
    assert stored(db) == (50, 50)


def test_claims_add_racing_an_import_of_the_same_claims_stores_each_once(tmp_path: Path) -> None:
    db, path = tmp_path / "s.db", tmp_path / "claims.jsonl"
    claims = write_claims(path, "acme")
    importing = staffstore(db, "claims", "import", str(path), "--json")
    # Claims spread over the file, so some are added before the import reaches their batch.
    picked = claims[:: LINES // 8]
    adders = [
        staffstore(db, "claims", "add", "--owner", "acme", "--question", claim["question"],
                   "--answer", claim["answer"], "--json")
        for claim in picked
    ]  # fmt: skip
    report = finish(importing)
    added_by_hand = 0
    for adder in adders:
        out, err = adder.communicate(timeout=120)
        assert adder.returncode == 0, err
        added_by_hand += json.loads(out)["added"]
    assert report["added"] + added_by_hand == LINES
    assert stored(db) == (LINES, LINES)
    assert term_counts_match_claims(db)


def test_the_claims_endpoint_racing_an_import_stores_each_claim_once(tmp_path: Path) -> None:
    db, path = tmp_path / "s.db", tmp_path / "claims.jsonl"
    claims = write_claims(path, "root")  # the test proxy's admin key belongs to "root"
    statuses: list[int] = []
    with running_proxy(db, max_body_bytes=1 << 20) as server:
        importing = staffstore(db, "claims", "import", str(path), "--json")

        def post_some(start: int) -> None:
            for claim in claims[start :: LINES // 40]:
                body = {"question": claim["question"], "answer": claim["answer"]}
                response = server.post(body, key=ADMIN_KEY, path="/staffstore/claims")
                statuses.append(response.status_code)

        posters = [threading.Thread(target=post_some, args=(n,)) for n in range(4)]
        for poster in posters:
            poster.start()
        report = finish(importing)
        for poster in posters:
            poster.join(timeout=120)
    assert statuses and set(statuses) == {201}
    assert report["added"] + report["present"] == LINES
    assert stored(db) == (LINES, LINES)
    assert term_counts_match_claims(db)
