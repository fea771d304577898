"""The session vault: older messages found by the turn's words, the same on both backends."""

from __future__ import annotations

import pytest

from staffstore.models import Turn
from staffstore.store import StaffStore
from staffstore.working_set import ROLE_BUDGETS, build_working_set
from staffstore.working_set.vault import vault_hits

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

EARLY = [
    ("user", "We picked the codename Kestrel for the billing rewrite."),
    ("assistant", "Noted: the billing rewrite is called Kestrel."),
    ("user", "The invoice batch must finish before 06:00 UTC."),
    ("assistant", "Understood, a hard deadline of 06:00 UTC."),
    ("user", "The retry limit is 5 attempts."),
    ("assistant", "Retry limit set to 5."),
]
FILLER = [("user" if n % 2 == 0 else "assistant", f"chatter {n} about lunch") for n in range(20)]


@pytest.fixture
async def session(store: StaffStore) -> str:
    session_id = await store.ensure_session("alice", "long")
    await store.append_messages(session_id, [*EARLY, *FILLER])
    return session_id


async def test_an_older_message_is_found_by_the_turns_words(
    store: StaffStore, session: str
) -> None:
    hits = await vault_hits(store, session, "When must the invoice batch finish?", skip_latest=8)
    assert hits and "06:00 UTC" in hits[0].handle


async def test_an_old_message_is_found_behind_thousands_holding_a_common_word(
    store: StaffStore,
) -> None:
    # Until December 5 2026 a lookup read only the newest 2,000 messages holding any of the
    # turn's words: 2,500 newer ones about the billing lunch hid the codename.
    session_id = await store.ensure_session("alice", "very long")
    await store.append_messages(session_id, EARLY)
    chatter = [("user", f"chatter {n} about the billing lunch") for n in range(2_500)]
    await store.append_messages(session_id, chatter)
    hits = await vault_hits(store, session_id, "What is the billing codename?", skip_latest=8)
    assert hits and "Kestrel" in hits[0].handle


async def test_a_turn_of_hundreds_of_words_looks_up_the_longest(
    store: StaffStore, session: str
) -> None:
    # Each token looked up is a query of its own; a pasted log holds hundreds of them.
    pasted = " ".join(f"frame{n}" for n in range(700))
    hits = await vault_hits(store, session, f"{pasted} the invoice batch deadline", skip_latest=8)
    assert hits and "06:00 UTC" in hits[0].handle


async def test_hits_point_back_to_the_stored_message(store: StaffStore, session: str) -> None:
    (hit, *_) = await vault_hits(store, session, "What is the codename?", skip_latest=8)
    assert hit.message_id == 1 and hit.role == "user"


async def test_the_tail_is_not_searched(store: StaffStore, session: str) -> None:
    assert await vault_hits(store, session, "chatter about lunch 25", skip_latest=30) == []


async def test_a_revised_value_is_left_out_of_the_hits(store: StaffStore, session: str) -> None:
    await store.append_messages(session, [("user", "Update: the retry limit is 9 attempts.")])
    await store.append_messages(session, FILLER)
    hits = await vault_hits(store, session, "what is the retry limit?", skip_latest=8)
    text = " ".join(h.handle for h in hits)
    assert "9 attempts" in text and "5 attempts" not in text and "set to 5" not in text


async def test_both_backends_return_the_same_hits(store: StaffStore, session: str) -> None:
    hits = await vault_hits(store, session, "Kestrel billing deadline retry", skip_latest=8)
    # The same ids, scores and handles on SQLite and PostgreSQL (the fixture runs this twice).
    assert [(h.message_id, round(h.score, 6), h.handle) for h in hits] == [
        (2, 4.056296, "Noted: the billing rewrite is called Kestrel."),
        (4, 2.398785, "Understood, a hard deadline of 06:00 UTC."),
        (6, 2.29658, "Retry limit set to 5."),
    ]


async def test_the_working_set_carries_vault_hits_within_their_budget(
    store: StaffStore, session: str
) -> None:
    await store.append_messages(session, FILLER)  # the early turns fade past their handles
    turn = Turn(owner="alice", text="what is the invoice deadline?", session="long")
    working_set = await build_working_set(store, turn, ROLE_BUDGETS["main"].with_parts(vault=60))
    sent = "\n".join(m.content for m in working_set.messages)
    assert "06:00 UTC" in sent
    assert 0 < working_set.part_tokens["vault"] <= 60
    assert working_set.tail_messages == 8  # the vault adds to the tail, never the whole vault
    assert "Kestrel" not in sent


async def test_a_vault_hit_never_answers_a_turn(store: StaffStore, session: str) -> None:
    from staffstore.gate import query_first

    decision = await query_first(
        store, Turn(owner="alice", text="What is the codename?", session="long")
    )
    assert not decision.hit
