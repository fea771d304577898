"""Erasure leaves no plaintext on disk (issue 36): after an erasure answered 200 over HTTP, or
the command line's erase exited 0, no byte of what it removed is in the database file, its -wal
or its -shm, however often the state was rewritten before, and however large it was."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_proxy_support import ALICE_KEY, Server, running_proxy

from staffstore.state import AgentState, Scope
from staffstore.store import StaffStore

SCOPE_KEY = "erasure-scope-key-0123456789abcdef"
SCHEMA = {
    "fields": {"note": {"type": "text", "pii": True}, "step": {"type": "string"}},
    "agent_state": {"scope": "conversation", "max_bytes": 65_536},
}
CONVO = {"kind": "conversation", "id": "+1-555-0199"}


_GREP = """
import sys
from pathlib import Path

marker, *paths = sys.argv[1:]
print(" ".join(Path(p).name for p in paths if Path(p).exists()
               and marker.encode() in Path(p).read_bytes()))
"""


def on_disk(db: Path, marker: str) -> list[str]:
    """The files of the database (itself, -wal, -shm) that hold `marker`, as UTF-8 bytes.

    Read by another process: closing a file this process opened would drop every POSIX lock
    the process holds on it, the open store's too, and change what SQLite does on disk.
    """
    paths = [str(db.with_name(db.name + suffix)) for suffix in ("", "-wal", "-shm")]
    done = subprocess.run(
        [sys.executable, "-c", _GREP, marker, *paths], capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def versions(marker: str) -> list[dict[str, Any]]:
    """Bodies that write the marker several ways: small, rewritten, and past a page (overflow
    pages), so old copies of it are left in the WAL and in freed space if nothing zeroes them."""
    return [
        {"note": f"{marker} size 42", "step": "sizes"},
        {"note": f"{marker} size 43", "step": "checkout"},
        {"note": (f"{marker} " * 600)[:12_000]},
        {"note": f"{marker} last"},
    ]


# -- over HTTP ------------------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running_proxy(tmp_path / "erase.db", state_key=SCOPE_KEY.encode()) as running:
        yield running


def _put(server: Server, path: str, body: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {ALICE_KEY}"}
    return httpx.put(server.root + "/v1" + path, json=body, headers=headers, timeout=10)


def test_an_erasure_over_http_leaves_no_plaintext_in_the_files(server: Server) -> None:
    marker = f"ERASE-ME-{uuid.uuid4().hex}"
    assert _put(server, "/staffstore/agent-state/schemas/shop", SCHEMA).status_code == 200
    for body in versions(marker):
        given = {"agent": "shop", "scope": CONVO, "body": body, "subject": "ana"}
        written = _put(server, "/staffstore/agent-state", given)
        assert written.status_code == 200 and written.json()["stored"], written.text
    assert on_disk(server.db, marker)  # the test can see it before
    erased = server.post({"subject": "ana"}, path="/staffstore/agent-state/erase")
    assert erased.status_code == 200 and erased.json()["states"] == 1
    assert on_disk(server.db, marker) == []
    assert erased.json()["scrubbed"] is True


# -- through the library, with another connection reading -----------------------------------------


async def test_a_sweep_leaves_no_plaintext_of_what_it_removed(db_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    marker = f"SWEPT-{uuid.uuid4().hex}"
    now = datetime(2026, 3, 2, tzinfo=UTC)
    async with StaffStore.open(db_path) as store:
        states = AgentState(store, "acme", scope_key=SCOPE_KEY.encode(), clock=lambda: now)
        await states.declare("shop", {**SCHEMA, "retention": {"state": "1d"}})
        for body in versions(marker):
            await states.put("shop", Scope.model_validate(CONVO), body)
        later = AgentState(
            store, "acme", scope_key=SCOPE_KEY.encode(), clock=lambda: now + timedelta(days=2)
        )
        assert (await later.sweep()).states_removed == 1
        assert on_disk(db_path, marker) == []


async def test_a_reader_on_another_connection_does_not_keep_the_plaintext(db_path: Path) -> None:
    marker = f"READER-{uuid.uuid4().hex}"
    async with StaffStore.open(db_path) as store:
        states = AgentState(store, "acme", scope_key=SCOPE_KEY.encode())
        await states.declare("shop", SCHEMA)
        for body in versions(marker):
            await states.put("shop", Scope.model_validate(CONVO), body)
        reader = sqlite3.connect(db_path)  # open, but between reads: no snapshot held
        try:
            reader.execute("SELECT count(*) FROM agent_states").fetchall()
            proof = await states.erase(scope=Scope.model_validate(CONVO))
        finally:
            reader.close()
        assert on_disk(db_path, marker) == [] and proof.scrubbed


async def test_an_erasure_a_reader_holds_up_says_so_and_the_next_one_finishes(
    db_path: Path,
) -> None:
    marker = f"HELD-{uuid.uuid4().hex}"
    convo = Scope.model_validate(CONVO)
    async with StaffStore.open(db_path, lock_timeout=0.1) as store:
        states = AgentState(store, "acme", scope_key=SCOPE_KEY.encode())
        await states.declare("shop", SCHEMA)
        for body in versions(marker):
            await states.put("shop", convo, body)
        reader = sqlite3.connect(db_path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM agent_states").fetchall()  # a snapshot, held
        try:
            held = await states.erase(scope=convo)
        finally:
            reader.execute("COMMIT")
            reader.close()
        assert held.states == 1 and held.scrubbed is False
        assert (await states.read("shop", convo)).version == 0  # erased, if not yet scrubbed
        assert (await states.erase(scope=convo)).scrubbed
        assert on_disk(db_path, marker) == []


async def test_erasure_zeroes_rows_where_sqlite_would_only_unlink_them(db_path: Path) -> None:
    # Most builds of SQLite leave a deleted row's bytes in its page (Debian's zeroes them): set
    # the store's connection as they have it, and the erasure must zero them all the same.
    marker = f"UNLINKED-{uuid.uuid4().hex}"
    async with StaffStore.open(db_path) as store:
        await store.run_sync(lambda sync: sync.fetchall("PRAGMA secure_delete = OFF"))
        states = AgentState(store, "acme", scope_key=SCOPE_KEY.encode())
        await states.declare("shop", SCHEMA)
        for n in range(20):  # neighbours, so the page the marker lay in stays in use
            await states.put("shop", Scope(kind="conversation", id=f"c-{n}"), {"step": "x" * 90})
        for body in versions(marker):
            await states.put("shop", Scope.model_validate(CONVO), body)
        await states.erase(scope=Scope.model_validate(CONVO))
        assert on_disk(db_path, marker) == []


# -- through the command line, as its own process, beside a running server ------------------------


def _staffstore(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STAFFSTORE_STATE_KEY": SCOPE_KEY}
    env.pop("STAFFSTORE_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "staffstore", "--db", str(db), *args],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip


def test_the_command_line_erase_leaves_no_plaintext_beside_a_running_server(
    server: Server,
) -> None:
    # The server keeps the database open, so the WAL is not removed when the command exits.
    marker = f"CLI-ERASE-{uuid.uuid4().hex}"
    assert _put(server, "/staffstore/agent-state/schemas/shop", SCHEMA).status_code == 200
    for body in versions(marker) * 5:  # more WAL frames than the erasure writes over
        given = {"agent": "shop", "scope": CONVO, "body": body, "subject": "ana"}
        assert _put(server, "/staffstore/agent-state", given).status_code == 200
    assert on_disk(server.db, marker)
    erased = _staffstore(server.db, "agent-state", "erase", "--owner", "alice", "--subject", "ana")
    assert erased.returncode == 0 and "erased 1 state(s)" in erased.stdout, erased.stderr
    assert on_disk(server.db, marker) == []
