"""Another process holds the database's write lock (`BEGIN IMMEDIATE`, as a manual sqlite3
session, a VACUUM or a long import would): the proxy answers what was paid for, keeps the
receipts in memory, writes them once the lock is free, and never answers 500 for a lock.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from test_proxy_support import ALICE_ADMIN_KEY, METRICS_KEY, Server, ask, running_proxy

from staffstore.testing import FakeOpenRouter

#: A second process that takes the write lock, says so, and holds it until told to stop.
_LOCKER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
connection.execute("ROLLBACK")
"""


@contextmanager
def write_lock(db: Path) -> Iterator[None]:
    """Hold `db`'s write lock from another process for the block's duration."""
    locker = subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert locker.stdin is not None and locker.stdout is not None
    try:
        assert locker.stdout.readline().strip() == "locked"
        yield
    finally:
        locker.stdin.write("\n")
        locker.stdin.close()
        locker.wait(timeout=10)


def _metrics(server: Server) -> dict[str, float]:
    response = server.get("/metrics", key=METRICS_KEY)
    assert response.status_code == 200
    samples: dict[str, float] = {}
    for line in response.text.splitlines():
        if not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def _stored_ids(db: Path) -> set[str]:
    """The receipt ids on disk, read by a plain reader while the lock is held elsewhere."""
    with closing(sqlite3.connect(db)) as reader:
        return {row[0] for row in reader.execute("SELECT id FROM receipts")}


def _wait_for(server: Server, receipt_ids: list[str], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        stored = {receipt.id for receipt in server.receipts("alice")}
        if set(receipt_ids) <= stored:
            return
        assert time.monotonic() < deadline, f"missing: {set(receipt_ids) - stored}"
        time.sleep(0.05)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    # A short lock wait: a held lock costs the first write this long, not the default 5 s.
    with running_proxy(tmp_path / "proxy.db", lock_timeout=0.2) as running:
        yield running


def test_a_held_write_lock_delays_receipts_but_loses_none(server: Server) -> None:
    fake: FakeOpenRouter = server.upstream.reset()
    claim = {"question": "Which port does the proxy listen on?", "answer": "8787"}
    assert server.post(claim, key=ALICE_ADMIN_KEY, path="/staffstore/claims").status_code == 201
    receipt_ids: list[str] = []
    with write_lock(server.db), server.sdk() as client:
        for number in range(4):
            question = f"paid question number {number} while the store is locked"
            raw = client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": question}]
            )
            assert raw.parse().choices[0].message.content == f"echo: {question}"
            receipt_ids.append(raw.headers["x-staffstore-receipt"])
        streamed = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "a locked stream"}], stream=True
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed.parse())
        assert text == "echo: a locked stream"
        receipt_ids.append(streamed.headers["x-staffstore-receipt"])
        hit = client.chat.completions.with_raw_response.create(
            model="m",
            messages=[{"role": "user", "content": "Which port does the proxy listen on?"}],
        )
        assert hit.headers["x-staffstore-outcome"] == "hit"
        receipt_ids.append(hit.headers["x-staffstore-receipt"])
        during = _metrics(server)
        assert during["staffstore_receipts_pending"] == len(receipt_ids)
        assert not _stored_ids(server.db) & set(receipt_ids)
    assert len(fake.chat_requests) == 5  # each paid once: no retry, no 500
    _wait_for(server, receipt_ids)
    after = _metrics(server)
    assert after["staffstore_receipts_pending"] == 0
    assert after["staffstore_receipts_landed_late_total"] == len(receipt_ids)
    assert after["staffstore_receipts_lost_total"] == 0
    ok = [r for r in server.receipts("alice") if r.id in receipt_ids and r.status == "ok"]
    assert len(ok) == 5


def test_no_request_gets_a_500_while_the_lock_is_held(server: Server) -> None:
    server.upstream.reset()
    with write_lock(server.db):
        bounded = server.post(ask("a bounded turn", staffstore={"working_set": "bounded"}))
        rejected = server.post({"model": "m", "messages": []})
        claim = {"question": "q while locked?", "answer": "a"}
        stored = server.post(claim, key=ALICE_ADMIN_KEY, path="/staffstore/claims")
    assert bounded.status_code == 200 and bounded.json()["choices"]
    assert rejected.status_code == 400
    assert stored.status_code == 503 and stored.json()["error"]["code"] == "store_busy"
    _wait_for(
        server,
        [bounded.headers["x-staffstore-receipt"], rejected.headers["x-staffstore-receipt"]],
    )


def test_a_full_backlog_refuses_new_requests_before_they_pay(tmp_path: Path) -> None:
    with running_proxy(tmp_path / "proxy.db", lock_timeout=0.2, max_backlog=2) as server:
        fake = server.upstream.reset()
        with write_lock(server.db):
            answered = [server.post(ask(f"fill the backlog {n}")) for n in range(2)]
            refused = server.post(ask("one too many"))
        assert [r.status_code for r in answered] == [200, 200]
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "store_busy"
        assert len(fake.chat_requests) == 2
        _wait_for(server, [r.headers["x-staffstore-receipt"] for r in answered])
