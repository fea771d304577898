"""Reuse of paid answers by `ask` (ensure_mouth with a cache): a reworded context-free question
is served the kept answer the gate accepts, and nothing else is.

Real stores (SQLite files under tmp_path and PostgreSQL: the `store` fixture), a local ChatFn
in place of the model (outside the machine), staffstore's own functions unpatched.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from staffstore.models import ChatReply, Message, Turn, TurnResult
from staffstore.mouth import CachePolicy, ensure_mouth
from staffstore.replays import run_replay
from staffstore.replays.kept_paraphrase import FIELDS
from staffstore.store import StaffStore
from staffstore.store.copy import copy_store

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ASKED = "What's the capital of France?"
REWORDED = "what's the capital of france"


class Model:
    """A deterministic model: answers with the question it was asked, and a known cost."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, messages: list[Message]) -> ChatReply:
        self.calls += 1
        return ChatReply(
            text=f"answer {self.calls} to {messages[-1].content}", model="m/1",
            prompt_tokens=10, completion_tokens=5, cost_usd=0.002, finish_reason="stop",
        )  # fmt: skip


async def ask(
    store: StaffStore,
    model: Model,
    text: str,
    *,
    owner: str = "alice",
    at: timedelta = timedelta(0),
    name: str = "m/1",
    system: str | None = None,
    session: str | None = None,
    cache: CachePolicy | None = None,
) -> TurnResult:
    return await ensure_mouth(
        store, Turn(owner=owner, text=text, now=NOW + at, session=session), model,
        model=name, cache=cache or CachePolicy(), system=system,
    )  # fmt: skip


async def test_a_reworded_question_is_served_the_kept_answer(store: StaffStore) -> None:
    model = Model()
    paid = await ask(store, model, ASKED)
    reused = await ask(store, model, REWORDED, at=timedelta(minutes=1))
    assert model.calls == 1
    assert reused.answer == paid.answer and reused.source == "kept_answer"
    assert reused.decision.reason == "paraphrase" and reused.decision.claim_id is None
    receipt = await store.get_receipt("alice", reused.receipt.id)
    assert (receipt.outcome, receipt.reason, receipt.source) == ("hit", "paraphrase", "kept_answer")
    assert receipt.served_from == paid.receipt.id and receipt.avoided_cost_usd == 0.002
    assert receipt.claim_id is None and receipt.inference_avoided
    assert (await store.get_receipt("alice", paid.receipt.id)).source is None


async def test_an_exact_repeat_says_its_source_too(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, ASKED)
    repeat = await ask(store, model, ASKED, at=timedelta(minutes=1))
    stored = await store.get_receipt("alice", repeat.receipt.id)
    assert (stored.reason, stored.source) == ("exact_repeat", "kept_answer")


async def test_a_near_miss_is_not_served(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, ASKED)
    other = await ask(store, model, "What's the capital of Germany?", at=timedelta(minutes=1))
    assert model.calls == 2 and other.source == "model"


GARLO = "Which queue version does the rudenqua service pin for garlo?"
GARVO = "Which queue version does the rudenqua service pin for garvo?"


async def test_a_slip_into_a_name_no_kept_prompt_uses_is_served(store: StaffStore) -> None:
    model = Model()
    paid = await ask(store, model, GARLO)
    reused = await ask(store, model, GARVO, at=timedelta(minutes=1))
    assert model.calls == 1 and reused.answer == paid.answer  # "garvo": a slip of "garlo"


async def test_a_name_another_kept_prompt_uses_is_not_a_slip(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, GARLO)
    await ask(store, model, "Where is the garvo service deployed?", at=timedelta(minutes=1))
    other = await ask(store, model, GARVO, at=timedelta(minutes=2))
    assert model.calls == 3 and other.source == "model"


HELPDESK = "Why did lumen/helpdesk-sync stop syncing tickets on Monday?"
HELPDESK_ALONE = "why did helpdesk-sync stop syncing tickets on monday"


async def test_a_repository_named_without_its_owner_is_served_its_kept_answer(
    store: StaffStore,
) -> None:
    model = Model()
    paid = await ask(store, model, HELPDESK)
    reused = await ask(store, model, HELPDESK_ALONE, at=timedelta(minutes=1))
    assert model.calls == 1 and reused.answer == paid.answer


async def test_a_repository_of_two_owners_named_without_one_is_not_served(
    store: StaffStore,
) -> None:
    model = Model()
    await ask(store, model, HELPDESK)
    await ask(store, model, "Which Python version does acme/helpdesk-sync pin?")
    other = await ask(store, model, HELPDESK_ALONE, at=timedelta(minutes=1))
    assert model.calls == 3 and other.source == "model"


async def test_an_old_question_is_found_behind_many_newer_ones_sharing_a_word(
    store: StaffStore,
) -> None:
    # Until December 5 2026 a lookup read only the scope's newest 200 kept prompts holding any
    # of the turn's words: 250 newer questions about queues hid this one from its rewording.
    model = Model()
    paid = await ask(store, model, "How long is the retention period on the billing-events queue?")
    for number in range(250):
        newer = f"What is the consumer lag on the orders-{number} queue?"
        await ask(store, model, newer, at=timedelta(seconds=number + 1))
    reused = await ask(
        store, model, "what's the retention period of the billing-events queue",
        at=timedelta(minutes=10),
    )  # fmt: skip
    assert reused.source == "kept_answer" and reused.answer == paid.answer
    assert model.calls == 251


async def test_a_turn_of_hundreds_of_words_is_looked_up(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, ASKED)
    # Each token looked up is a query of its own; a pasted trace holds hundreds of them.
    pasted = "Why does the trace fail: " + " ".join(f"x{n}" for n in range(600)) + "?"
    result = await ask(store, model, pasted, at=timedelta(minutes=1))
    assert result.source == "model" and model.calls == 2
    assert result.decision.reason not in ("follow_up", "too_long")  # it was looked up


async def test_another_owner_never_gets_it(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, ASKED)
    theirs = await ask(store, model, REWORDED, owner="bob", at=timedelta(minutes=1))
    assert model.calls == 2 and theirs.source == "model"


@pytest.mark.parametrize(
    "changed", [{"name": "m/2"}, {"system": "Answer in French."}], ids=["model", "system"]
)
async def test_another_model_or_system_prompt_is_not_served(
    store: StaffStore, changed: dict[str, str]
) -> None:
    model = Model()
    await ask(store, model, ASKED)
    other = await ask(store, model, REWORDED, at=timedelta(minutes=1), **changed)  # type: ignore[arg-type]
    assert model.calls == 2 and other.source == "model"


async def test_a_turn_in_a_conversation_is_never_served(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, ASKED)
    await ask(store, model, "We are planning a trip.", session="trip", at=timedelta(minutes=1))
    later = await ask(store, model, REWORDED, session="trip", at=timedelta(minutes=2))
    assert model.calls == 3 and later.source == "model"


async def test_an_answer_kept_in_a_conversation_serves_no_reworded_question(
    store: StaffStore,
) -> None:
    model = Model()
    await ask(store, model, "We are planning a trip.", session="trip")
    await ask(store, model, ASKED, session="trip", at=timedelta(minutes=1))
    fresh = await ask(store, model, REWORDED, at=timedelta(minutes=2))
    assert model.calls == 3 and fresh.source == "model"


async def test_no_paraphrase_turns_it_off(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, ASKED)
    off = CachePolicy.from_flags(no_paraphrase=True)
    other = await ask(store, model, REWORDED, at=timedelta(minutes=1), cache=off)
    assert model.calls == 2 and other.source == "model"
    repeat = await ask(store, model, ASKED, at=timedelta(minutes=2), cache=off)
    assert repeat.decision.reason == "exact_repeat"


async def test_an_expired_or_too_old_kept_answer_is_not_served(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, ASKED, cache=CachePolicy(ttl=60))
    late = await ask(store, model, REWORDED, at=timedelta(minutes=2))
    assert late.source == "model"
    await ask(store, model, "How tall is the Eiffel Tower?")
    old = CachePolicy(max_age=30)
    again = await ask(
        store, model, "how tall is the eiffel tower", at=timedelta(minutes=1), cache=old
    )
    assert again.source == "model" and model.calls == 4


async def test_a_question_about_today_is_not_served_the_next_day(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, "Which deploys failed today?")
    tomorrow = await ask(store, model, "which deploys failed today", at=timedelta(days=1))
    assert model.calls == 2 and tomorrow.source == "model"


async def _kept_prompts(store: StaffStore) -> int:
    rows = await store.run_sync(lambda sync: sync.fetchall("SELECT count(*) FROM kept_prompts"))
    return int(rows[0][0])


async def test_forgetting_a_kept_answer_removes_its_prompt(store: StaffStore) -> None:
    model = Model()
    paid = await ask(store, model, ASKED)
    assert await _kept_prompts(store) == 1
    assert await store.forget_kept_answers("alice", receipt_ids=[paid.receipt.id])
    assert await _kept_prompts(store) == 0
    again = await ask(store, model, REWORDED, at=timedelta(minutes=1))
    assert again.source == "model" and model.calls == 2


async def test_kept_list_shows_the_prompt_and_the_quota_counts_it(store: StaffStore) -> None:
    model = Model()
    paid = await ask(store, model, ASKED)
    await ask(store, model, "We are planning a trip.", session="trip")
    later = await ask(store, model, "And in Spain?", session="trip")  # in a conversation
    listed = {row.receipt_id: row.prompt for row in await store.list_kept_answers("alice")}
    assert listed[paid.receipt.id] == ASKED and listed[later.receipt.id] is None
    before = await store.owner_text_bytes("alice")
    await store.forget_kept_answers("alice", receipt_ids=[paid.receipt.id])
    # The kept answer went, and its prompt with it: the owner's stored text shrinks by both.
    gone = len(paid.answer.encode()) + len(ASKED.encode())
    assert before - await store.owner_text_bytes("alice") == gone


async def test_pruning_kept_answers_removes_their_prompts(store: StaffStore) -> None:
    model = Model()
    await ask(store, model, ASKED)
    await ask(store, model, "How tall is the Eiffel Tower?", cache=CachePolicy(ttl=10))
    assert await _kept_prompts(store) == 2
    pruned = await store.prune_kept_answers(now=NOW + timedelta(minutes=1))
    assert pruned == 1 and await _kept_prompts(store) == 1
    await store.prune_kept_answers(before=NOW + timedelta(days=1), now=NOW + timedelta(days=1))
    assert await _kept_prompts(store) == 0


async def test_a_copied_store_reuses_its_kept_answers(db: str | Path, tmp_path: Path) -> None:
    model = Model()
    async with StaffStore.open(db) as store:
        paid = await ask(store, model, ASKED)
        await ask(store, model, "How tall is the Eiffel Tower?")
    report = await copy_store(db, tmp_path / "copy.db")
    assert {c.table: c.target for c in report.tables}["kept_prompts"] == 2
    async with StaffStore.open(tmp_path / "copy.db") as copied:
        reused = await ask(copied, model, REWORDED, at=timedelta(minutes=1))
        assert reused.receipt.served_from == paid.receipt.id and model.calls == 2
        back = tmp_path / "back.db"
    # And back again from the copy (SQLite to SQLite here; the fixture's backend above).
    await copy_store(tmp_path / "copy.db", back)
    async with StaffStore.open(back) as twice:
        assert (await ask(twice, model, REWORDED, at=timedelta(minutes=2))).source == "kept_answer"


async def test_the_replay_serves_no_false_hit_and_no_conversation_turn(tmp_path: Path) -> None:
    ledger = await run_replay("kept-paraphrase", tmp_path, quick=True)
    summary = ledger["summary"]
    assert set(FIELDS) <= set(summary)
    assert summary["conversation_turns"] > 0 and summary["conversation_turns_served"] == 0
    assert summary["correct_hits"] > 0 and summary["false_hits"] == 0
    assert summary["avoided_calls"] == summary["correct_hits"] + summary["false_hits"]
    played = summary["claims"] + summary["turns"] + summary["conversation_turns"] * 3 // 2
    assert summary["paid_calls"] == played - summary["avoided_calls"]
    assert (tmp_path / "kept-paraphrase-spec.json").exists()
