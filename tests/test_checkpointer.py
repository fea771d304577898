"""The Checkpointer copies a real store's WAL into its database file from its own thread."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from staffstore.models import NewClaim
from staffstore.store import StaffStore
from staffstore.store.checkpointer import FALLBACK_PAGES, Checkpointer

PAGE = 4096


async def _write_claims(store: StaffStore, count: int) -> None:
    for number in range(count):
        await store.ensure_claim(
            NewClaim(owner="alice", question=f"What is setting {number}?", answer="x" * 2000)
        )


def _wal_pages(db_path: Path) -> int:
    wal = db_path.with_name(db_path.name + "-wal")
    return wal.stat().st_size // PAGE if wal.exists() else 0


async def test_a_deferring_store_leaves_the_wal_to_the_checkpointer(
    store: StaffStore, db_path: Path
) -> None:
    await store.defer_checkpoints(FALLBACK_PAGES)
    await _write_claims(store, 300)
    # At SQLite's own mark of 1,000 pages a commit would have copied the WAL back and begun it
    # again from the start (the file stays near 1,000 pages); deferred, it grew well past.
    assert _wal_pages(db_path) > 2_000

    checkpointer = Checkpointer(db_path, interval=0.01)
    checkpointer.start()
    try:
        deadline = time.monotonic() + 10
        while checkpointer.last is None and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        checkpointer.stop()
    assert checkpointer.last is not None
    assert checkpointer.last.wal_frames > 2_000
    assert checkpointer.last.copied_frames == checkpointer.last.wal_frames

    # Every claim is in the database file itself: readable with the WAL set aside.
    snapshot = db_path.with_name("copy.db")
    snapshot.write_bytes(db_path.read_bytes())
    with sqlite3.connect(snapshot) as copy:
        assert copy.execute("SELECT count(*) FROM claims").fetchone() == (300,)


async def test_stop_copies_what_was_written_since_the_last_pass(
    store: StaffStore, db_path: Path
) -> None:
    await store.defer_checkpoints(FALLBACK_PAGES)
    checkpointer = Checkpointer(db_path, interval=3_600)  # never wakes on its own
    checkpointer.start()
    await _write_claims(store, 10)
    checkpointer.stop()
    assert checkpointer.passes == 1
    assert checkpointer.last is not None
    assert checkpointer.last.copied_frames == checkpointer.last.wal_frames > 0


async def test_its_connection_holds_the_wal_once_started(store: StaffStore, db_path: Path) -> None:
    wal = str(db_path) + "-wal"
    before = _descriptors_on(wal)
    checkpointer = Checkpointer(db_path, interval=3_600)  # never wakes on its own
    checkpointer.start()
    try:
        # Open before its first pass: nothing of the server's opens later, under a request.
        assert _descriptors_on(wal) == before + 1
    finally:
        checkpointer.stop()
    assert _descriptors_on(wal) == before


def _descriptors_on(path: str) -> int:
    """How many of this process's descriptors are open on `path`."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == path
        except OSError:
            continue
    return count


def test_a_database_it_cannot_open_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    checkpointer = Checkpointer(tmp_path / "missing" / "s.db")
    checkpointer.start()
    checkpointer.stop()
    assert checkpointer.passes == 0
    assert "WAL checkpoints stay on the request path" in caplog.text
