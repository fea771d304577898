"""The store's read path (StaffStore.run_read): lookups that never wait for a write.

While the writer is held inside a write transaction, the gate's lookup and the kept-answer
lookups still answer, from what is committed; a write awaited is read by the very next lookup,
the caller's own and another process's alike; the read path refuses writes; closing the store
closes every connection. Real stores (SQLite files under tmp_path, and PostgreSQL: the `store`
fixture), staffstore's own functions unpatched. Nothing is timed: a lookup that waits for the
writer would wait for the test to let the writer go, which DEADLOCK turns into a failure.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from staffstore.errors import StoreError
from staffstore.gate import query_first, reuse_kept_sync
from staffstore.models import NewClaim, Receipt, Turn
from staffstore.store import StaffStore
from staffstore.store.kept_prompts import KeptPrompt
from staffstore.store.sync_store import KeptAnswer, SyncStore, TurnRecord

if TYPE_CHECKING:
    from conftest import PutClaim

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

#: Seconds after which a lookup still waiting is taken for one waiting on the writer.
DEADLOCK = 10.0
#: The most the held writer waits to be let go: a failing test still ends.
HOLD_LIMIT = 60.0

MOMENT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
QUESTION = "What is the retry limit of the billing exporter?"
ASKED = "What's the capital of France?"
REWORDED = "what's the capital of france"
NAMESPACE = "reads"
CONTEXT = "model m/1, no system prompt"


def _receipt(receipt_id: str, question: str) -> Receipt:
    return Receipt(
        id=receipt_id, owner="alice", outcome="miss", reason="no_candidate", status="ok",
        inference_avoided=False, inference_attempted=True, latency_ms=1.0, started_at=MOMENT,
        finished_at=MOMENT, question=question, answer="paid",
    )  # fmt: skip


async def _keep(store: StaffStore, request_hash: str, question: str, answer: str) -> None:
    """Record a paid turn whose answer is kept, with its prompt (a context-free request)."""
    receipt_id = f"rcpt_{request_hash}"
    kept = KeptAnswer(
        owner="alice", namespace=NAMESPACE, request_hash=request_hash, receipt_id=receipt_id,
        model="m/1", answer=answer, created_at=MOMENT, prompt=KeptPrompt(question, CONTEXT),
    )  # fmt: skip
    await store.record_turns([TurnRecord(_receipt(receipt_id, question), kept=kept)])


def _held_value(sync: SyncStore) -> list[object]:
    return [row[0] for row in sync.fetchall("SELECT value FROM store_settings WHERE name = 'held'")]


@asynccontextmanager
async def writer_held(store: StaffStore) -> AsyncIterator[None]:
    """The store's writer inside a write transaction that has written (not committed) a
    setting named 'held', until the block ends; then it commits."""
    entered, release = threading.Event(), threading.Event()

    def hold(sync: SyncStore) -> None:
        with sync.db.write():
            sync.db.execute("INSERT INTO store_settings (name, value) VALUES ('held', 'yes')")
            entered.set()
            release.wait(HOLD_LIMIT)

    holding = asyncio.create_task(store.run_sync(hold))
    try:
        assert await asyncio.to_thread(entered.wait, DEADLOCK), "the writer never wrote"
        yield
    finally:
        release.set()
        await holding


async def test_the_gate_and_an_exact_repeat_answer_while_the_writer_is_inside_a_write(
    store: StaffStore, put: PutClaim
) -> None:
    claim = await put(QUESTION, "Five tries.")
    await _keep(store, "request-1", ASKED, "Paris.")
    async with writer_held(store):
        decision = await asyncio.wait_for(
            query_first(store, Turn(owner="alice", text=QUESTION)), DEADLOCK
        )
        assert decision.hit and decision.claim_id == claim.id
        kept = await asyncio.wait_for(store.kept_answer("alice", NAMESPACE, "request-1"), DEADLOCK)
        assert kept is not None and kept.answer == "Paris."
        # The claim is looked up by its words as well as by its key: a reworded one hits too.
        reworded = Turn(owner="alice", text="what's the retry limit of the billing exporter")
        decision = await asyncio.wait_for(query_first(store, reworded), DEADLOCK)
        assert decision.hit and decision.claim_id == claim.id


async def test_a_reworded_question_finds_its_kept_answer_while_the_writer_is_inside_a_write(
    store: StaffStore,
) -> None:
    await _keep(store, "request-1", ASKED, "Paris.")
    turn = Turn(owner="alice", text=REWORDED, now=MOMENT + timedelta(minutes=1))
    async with writer_held(store):
        decision, kept = await asyncio.wait_for(
            store.run_read(lambda sync: reuse_kept_sync(sync, turn, NAMESPACE, CONTEXT)),
            DEADLOCK,
        )
        assert decision.hit and kept is not None and kept.answer == "Paris."
        # What the writer has not committed yet is not read.
        assert await asyncio.wait_for(store.run_read(_held_value), DEADLOCK) == []
    # Committed, it is read at once.
    assert await store.run_read(_held_value) == ["yes"]


async def test_a_write_awaited_is_found_by_the_next_lookup(
    store: StaffStore, put: PutClaim
) -> None:
    for n in range(60):
        question = f"what does probe {n} report about widget {n * 7}"
        claim = await put(question, f"r{n}")
        decision = await query_first(store, Turn(owner="alice", text=question))
        assert decision.hit and decision.claim_id == claim.id, n
        await _keep(store, f"request-{n}", question, f"paid {n}")
        kept = await store.kept_answer("alice", NAMESPACE, f"request-{n}")
        assert kept is not None and kept.answer == f"paid {n}", n


async def test_another_process_s_writes_are_found_by_the_next_lookup(
    store: StaffStore, db: str | Path, tmp_path: Path
) -> None:
    # The writer is a process of its own on the same store; this store stays open throughout,
    # so its read connection (SQLite) is the one that must see each new commit.
    rounds = 40
    writer = Path(__file__).parent / "claim_writer.py"
    env = {key: value for key, value in os.environ.items() if key != "STAFFSTORE_DB"}
    process = subprocess.Popen(
        [sys.executable, str(writer), str(db), str(rounds)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        for n in range(rounds):
            line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 60)
            assert line, process.stderr.read() if process.stderr else "the writer ended"
            question = f"what does probe {n} report about widget {n * 7}"
            decision = await query_first(store, Turn(owner="alice", text=question))
            assert decision.hit and decision.claim_id == line.strip(), n
            kept = await store.kept_answer("alice", NAMESPACE, f"request-{n}")
            assert kept is not None and kept.answer == f"paid {n}", n
            process.stdin.write("next\n")
            process.stdin.flush()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def test_the_read_path_refuses_a_write(store: StaffStore) -> None:
    def write(sync: SyncStore) -> None:
        with sync.db.write():
            sync.db.execute("INSERT INTO store_settings (name, value) VALUES ('sneaked', 'in')")

    with pytest.raises(RuntimeError, match="run_sync"):
        await store.run_read(write)
    sneaked = "SELECT value FROM store_settings WHERE name = 'sneaked'"
    assert await store.run_sync(lambda sync: sync.fetchall(sneaked)) == []


@pytest.mark.sqlite_only
async def test_sqlite_s_read_connection_refuses_a_bare_write_as_a_store_error(
    store: StaffStore,
) -> None:
    def insert(sync: SyncStore) -> int:
        return sync.db.execute("INSERT INTO store_settings (name, value) VALUES ('bare', 'x')")

    with pytest.raises(StoreError, match="readonly"):
        await store.run_read(insert)
    assert await store.run_read(lambda sync: sync.fetchall("SELECT 1")) == [(1,)]  # still usable


@pytest.mark.sqlite_only
async def test_an_error_on_the_read_path_is_the_writer_s_error(store: StaffStore) -> None:
    def broken(sync: SyncStore) -> list[object]:
        return sync.fetchall("SELECT * FROM no_such_table")

    with pytest.raises(StoreError) as on_writer:
        await store.run_sync(broken)
    with pytest.raises(StoreError) as on_reader:
        await store.run_read(broken)
    assert type(on_reader.value) is type(on_writer.value)
    assert str(on_reader.value) == str(on_writer.value)


async def test_a_lookup_answers_while_another_read_is_still_running(
    store: StaffStore, put: PutClaim
) -> None:
    # A lookup that runs the pair model spends milliseconds on its reader; the next lookup
    # must not queue behind it. Here the first read is held until the second has answered.
    claim = await put(QUESTION, "Five tries.")
    entered, release = threading.Event(), threading.Event()

    def slow_read(sync: SyncStore) -> int:
        entered.set()
        if not release.wait(HOLD_LIMIT):
            raise TimeoutError("the slow read was never let go")
        return len(sync.fetchall("SELECT id FROM claims"))

    slow = asyncio.create_task(store.run_read(slow_read))
    try:
        assert await asyncio.to_thread(entered.wait, DEADLOCK)
        decision = await asyncio.wait_for(
            query_first(store, Turn(owner="alice", text=QUESTION)), DEADLOCK
        )
        assert decision.hit and decision.claim_id == claim.id
    finally:
        release.set()
    assert await asyncio.wait_for(slow, DEADLOCK) == 1


@pytest.mark.sqlite_only
async def test_closing_the_store_closes_every_connection(db_path: Path) -> None:
    store = await StaffStore.connect(db_path)
    await store.ensure_session_id("alice", "s")
    counted = await store.run_read(lambda sync: sync.fetchall("SELECT count(*) FROM sessions"))
    assert counted == [(1,)]
    await store.close()

    def open_on_it() -> list[str]:
        names = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith(str(db_path)):
                names.append(target)
        return names

    assert open_on_it() == []
    # The last connection to close checkpoints the WAL and removes it: none was left open.
    assert not db_path.with_name(db_path.name + "-wal").exists()


@pytest.mark.sqlite_only
async def test_an_in_memory_store_reads_its_own_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ":memory:" has no file for a second connection to open: its reads run on the writer.
    monkeypatch.chdir(tmp_path)  # were ":memory:" taken for a file name, it would land here
    async with StaffStore.open(":memory:") as store:
        claim = await store.ensure_claim(NewClaim(owner="alice", question=QUESTION, answer="5"))
        decision = await query_first(store, Turn(owner="alice", text=QUESTION))
        assert decision.hit and decision.claim_id == claim.id
    assert list(tmp_path.iterdir()) == []
