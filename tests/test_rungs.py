"""Fidelity rungs and warm-up: raw, then a handle, then only searchable; the raw text stays."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from staffstore.models import Receipt, Turn
from staffstore.store import StaffStore
from staffstore.store.sync_store import TurnRecord
from staffstore.working_set import build_working_set, rung_of, warm_up_session
from staffstore.working_set.extract import Settled, settled_by
from staffstore.working_set.rungs import handles

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

DECISION = "We decided the cache lives in Redis 7. The rest is small talk about the weather."


def test_a_new_message_is_raw_then_a_handle_then_only_searchable() -> None:
    assert [rung_of(age, "user") for age in (0, 7, 8, 31, 32)] == [
        "raw", "raw", "handle", "handle", "searchable",
    ]  # fmt: skip


def test_an_assistants_message_fades_sooner_than_a_users() -> None:
    assert rung_of(20, "user") == "handle" and rung_of(20, "assistant") == "searchable"


def test_each_recall_keeps_a_message_a_handle_longer_up_to_a_ceiling() -> None:
    assert rung_of(40, "user") == "searchable"
    assert rung_of(40, "user", recalls=1) == "handle"  # 8 raw + 24 + 12
    assert (
        rung_of(50, "user", recalls=2) == "handle"
        and rung_of(56, "user", recalls=2) == "searchable"
    )
    assert rung_of(80, "user", recalls=99) == "searchable"  # 8 raw + at most 72


async def test_recording_a_turn_counts_the_recalls_of_its_vault_hits(store: StaffStore) -> None:
    session_id = await _session(store, filler=40)
    other = await store.ensure_session("bob", "s")
    turn = Turn(owner="alice", text="which Redis version holds the cache?", session="s")
    working_set = await build_working_set(store, turn)
    assert working_set.vault_message_ids == [1]  # past its handle: found by the vault
    found = await handles(store, session_id, after_tail=8, settled=Settled())
    assert 1 not in [h.message_id for h in found]
    receipt = Receipt(
        id="r1", owner="alice", outcome="miss", reason="no_candidate", status="ok",
        inference_avoided=False, inference_attempted=True, latency_ms=1.0,
        started_at=datetime(2026, 1, 1, tzinfo=UTC), finished_at=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    # Another session's record naming message 1 counts nothing: recalls stay in the session.
    await store.record_turns([TurnRecord(receipt, other, [], recalled=[1])])
    recalls = "SELECT recalls FROM messages WHERE id = 1"
    assert await store.run_sync(lambda sync: sync.db.fetchall(recalls)) == [(0,)]
    await store.record_turns(
        [TurnRecord(receipt.model_copy(update={"id": "r2"}), session_id, [], recalled=[1])]
    )
    assert await store.run_sync(lambda sync: sync.db.fetchall(recalls)) == [(1,)]
    # Recalled once, the decision is a handle again at its age (40 newer messages).
    found = await handles(store, session_id, after_tail=8, settled=Settled())
    assert 1 in [h.message_id for h in found]


async def _session(store: StaffStore, filler: int) -> str:
    session_id = await store.ensure_session("alice", "s")
    chatter = [("user" if n % 2 else "assistant", f"ok {n}") for n in range(filler)]
    await store.append_messages(session_id, [("user", DECISION), *chatter])
    return session_id


async def test_a_handle_is_the_key_sentences_with_a_pointer_back(store: StaffStore) -> None:
    session_id = await _session(store, filler=10)
    (handle, *_) = await handles(store, session_id, after_tail=8, settled=Settled())
    assert (handle.message_id, handle.text) == (1, "We decided the cache lives in Redis 7.")


async def test_a_handle_leaves_out_what_a_newer_message_revised(store: StaffStore) -> None:
    session_id = await _session(store, filler=10)
    await store.append_messages(session_id, [("user", "Change: the cache lives in Valkey 8.")])
    tail = settled_by(["Change: the cache lives in Valkey 8."])  # what the tail says
    found = await handles(store, session_id, after_tail=1, settled=tail)
    assert all("Redis" not in h.text for h in found)


async def test_the_raw_text_stays_in_the_store_whatever_the_rung(store: StaffStore) -> None:
    session_id = await _session(store, filler=60)
    working_set = await build_working_set(
        store, Turn(owner="alice", text="what about tea?", session="s")
    )
    assert all(DECISION not in m.content for m in working_set.messages)
    (first,) = await store.run_sync(
        lambda sync: sync.fetchall("SELECT content FROM messages WHERE id = 1")
    )
    assert first[0] == DECISION and session_id


async def test_warm_up_brings_back_the_tail_and_a_story(store: StaffStore) -> None:
    await _session(store, filler=12)
    warm = await warm_up_session(store, "alice", "s")
    assert [m.content for m in warm.tail][-1] == "ok 11"
    assert "Redis 7" in warm.story  # written extractively: the session had faded messages


async def test_a_restarted_store_builds_the_same_working_set(tmp_path: Path) -> None:
    path = tmp_path / "restart.db"
    turn = Turn(owner="alice", text="where does the cache live?", session="s")
    async with StaffStore.open(path) as store:
        await _session(store, filler=40)
        await warm_up_session(store, "alice", "s")
        before = await build_working_set(store, turn)
    async with StaffStore.open(path) as again:  # a restart: nothing but the file is left
        await warm_up_session(again, "alice", "s")
        after = await build_working_set(again, turn)
    assert after.messages == before.messages
    assert any("Redis 7" in m.content for m in after.messages)
