"""The proxy's single writer: concurrent turns land, bad records fail alone, and a caller that
is cancelled still leaves its receipt."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from staffstore.errors import ConstraintError
from staffstore.models import NewClaim, Receipt, utcnow
from staffstore.proxy.writer import MAX_BATCH, Writer
from staffstore.store import StaffStore
from staffstore.store.sync_store import TurnRecord


def _receipt(receipt_id: str) -> Receipt:
    now = utcnow()
    return Receipt(
        id=receipt_id, owner="ann", outcome="hit", reason="exact", status="hit",
        inference_avoided=True, inference_attempted=False, latency_ms=0.1,
        started_at=now, finished_at=now,
    )  # fmt: skip


def _paid(receipt_id: str) -> Receipt:
    """The receipt of a turn that called the model."""
    return _receipt(receipt_id).model_copy(
        update={"outcome": "miss", "reason": "no_match", "status": "ok",
                "inference_avoided": False, "inference_attempted": True}
    )  # fmt: skip


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[StaffStore]:
    async with StaffStore.open(tmp_path / "w.db") as opened:
        yield opened


async def test_many_concurrent_turns_all_land(store: StaffStore) -> None:
    counted: list[str] = []
    writer = Writer(store, on_commit=lambda record: counted.append(record.receipt.id))
    writer.start()
    session = await writer.run(lambda: store.ensure_session_id("ann", "s"))
    await asyncio.gather(
        *(
            writer.record(TurnRecord(_receipt(f"r{i}"), session, [("user", f"q{i}")]))
            for i in range(300)
        )
    )
    await writer.close()
    assert len(await store.list_receipts("ann", limit=1000)) == 300
    assert len(await store.recent_messages(session, limit=1000)) == 300
    assert sorted(counted) == sorted(f"r{i}" for i in range(300))


async def test_a_bad_record_fails_alone(store: StaffStore) -> None:
    writer = Writer(store)
    writer.start()
    await writer.record(TurnRecord(_receipt("taken")))
    results = await asyncio.gather(
        writer.record(TurnRecord(_receipt("first"))),
        writer.record(TurnRecord(_receipt("taken"))),  # the same id again: refused
        writer.record(TurnRecord(_receipt("last"))),
        return_exceptions=True,
    )
    await writer.close()
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], ConstraintError)
    ids = {receipt.id for receipt in await store.list_receipts("ann")}
    assert ids == {"taken", "first", "last"}


async def test_a_cancelled_caller_still_gets_its_receipt(store: StaffStore) -> None:
    writer = Writer(store)
    writer.start()
    waiting = asyncio.ensure_future(writer.record(TurnRecord(_receipt("kept"))))
    await asyncio.sleep(0)
    waiting.cancel()
    await writer.close()
    assert (await store.get_receipt("ann", "kept")).id == "kept"


async def test_other_work_runs_in_turn_and_returns_its_result(store: StaffStore) -> None:
    writer = Writer(store)
    writer.start()
    claim = NewClaim(owner="ann", question="Is the writer serial?", answer="Yes.")
    stored, _ = await asyncio.gather(
        writer.run(lambda: store.ensure_claim(claim)),
        writer.record(TurnRecord(_receipt("beside"))),
    )
    await writer.close()
    assert stored.answer == "Yes."


async def _commit_order(store: StaffStore, receipts: list[Receipt]) -> list[str]:
    """The receipt ids in the order a writer commits them, all queued before it runs again."""
    committed: list[str] = []
    writer = Writer(store, on_commit=lambda record: committed.append(record.receipt.id))
    writer.start()
    await asyncio.gather(*(writer.record(TurnRecord(receipt)) for receipt in receipts))
    await writer.close()
    return committed


async def test_a_hit_is_committed_ahead_of_the_paid_turns_queued_before_it(
    store: StaffStore,
) -> None:
    # 300 paid turns fill more than one commit.
    paid = [_paid(f"paid{i}") for i in range(300)]
    committed = await _commit_order(store, [*paid, _receipt("hit")])
    assert committed[0] == "hit"
    assert committed[1:] == [f"paid{i}" for i in range(300)]  # the paid keep their order


async def test_a_stream_of_hits_does_not_starve_a_paid_turn(store: StaffStore) -> None:
    hits = [_receipt(f"hit{i}") for i in range(600)]
    committed = await _commit_order(store, [_paid("paid"), *hits])
    assert len(committed) == 601
    # One commit of hits (at most MAX_BATCH) goes first, then the paid turn's own.
    assert committed.index("paid") == MAX_BATCH


async def test_a_closed_writer_refuses_work(store: StaffStore) -> None:
    writer = Writer(store)
    writer.start()
    await writer.close()
    with pytest.raises(RuntimeError, match="not running"):
        await writer.record(TurnRecord(_receipt("late")))
