"""build_working_set on a real store: system first, recalled claims, a short tail, a budget."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from staffstore.models import Claim, Turn, WorkingSet
from staffstore.store import StaffStore
from staffstore.working_set import CUT_MARKER, DEFAULT_SYSTEM, build_working_set

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

if TYPE_CHECKING:
    from conftest import PutClaim

KERNEL_Q = "What did Kernel find about ledger replay?"
KERNEL_A = "Ledger replays are deterministic."
ASKED = "Is ledger replay safe to run twice?"


def _turn(text: str = ASKED) -> Turn:
    return Turn(owner="alice", text=text, session="main")


def _contents(working_set: WorkingSet) -> str:
    return "\n".join(m.content for m in working_set.messages)


@pytest.fixture
async def recalled(put: PutClaim) -> Claim:
    return await put(KERNEL_Q, KERNEL_A)


@pytest.fixture
async def transcript(store: StaffStore) -> list[str]:
    """A session of 20 messages, "message 0" (oldest) to "message 19" (newest)."""
    texts = [f"message {n}: " + "words " * 30 for n in range(20)]
    session = await store.ensure_session("alice", "main")
    await store.append_messages(
        session, [("user" if n % 2 == 0 else "assistant", t) for n, t in enumerate(texts)]
    )
    return texts


async def test_system_instruction_comes_first(store: StaffStore) -> None:
    working_set = await build_working_set(store, _turn())
    assert (working_set.messages[0].role, working_set.messages[0].content) == (
        "system",
        DEFAULT_SYSTEM,
    )


async def test_custom_system_instruction_comes_first(store: StaffStore) -> None:
    working_set = await build_working_set(store, _turn(), system="Answer in French.")
    assert working_set.messages[0].content == "Answer in French."


async def test_turn_is_the_last_message_as_user(store: StaffStore) -> None:
    working_set = await build_working_set(store, _turn())
    assert (working_set.messages[-1].role, working_set.messages[-1].content) == ("user", ASKED)


async def test_related_claim_is_recalled(store: StaffStore, recalled: Claim) -> None:
    working_set = await build_working_set(store, _turn())
    assert working_set.recalled_claim_ids == [recalled.id]


async def test_recalled_claim_is_marked_as_recalled_context(
    store: StaffStore, recalled: Claim
) -> None:
    working_set = await build_working_set(store, _turn())
    (block,) = [m for m in working_set.messages if KERNEL_A in m.content]
    assert block.role == "system"
    assert "Recalled claims" in block.content


async def test_recalled_claim_is_not_given_as_the_users_words(
    store: StaffStore, recalled: Claim
) -> None:
    working_set = await build_working_set(store, _turn())
    assert not [m for m in working_set.messages if m.role == "user" and KERNEL_A in m.content]


async def test_retracted_claim_is_not_recalled(store: StaffStore, recalled: Claim) -> None:
    await store.retract_claim("alice", recalled.id)
    working_set = await build_working_set(store, _turn())
    assert KERNEL_A not in _contents(working_set)


async def test_another_owners_claim_is_not_recalled(store: StaffStore, put: PutClaim) -> None:
    await put(KERNEL_Q, KERNEL_A, owner="bob")
    working_set = await build_working_set(store, _turn())
    assert KERNEL_A not in _contents(working_set)


async def test_tail_is_the_last_eight_messages_oldest_first(
    store: StaffStore, transcript: list[str]
) -> None:
    working_set = await build_working_set(store, _turn(), budget=100_000)
    # The raw tail: the session's own messages (older ones come faded, as system context).
    history = [m.content for m in working_set.messages[:-1] if m.role != "system"]
    assert history == transcript[-8:]


async def test_tail_never_holds_the_whole_transcript(
    store: StaffStore, transcript: list[str]
) -> None:
    working_set = await build_working_set(store, _turn(), budget=1_000_000)
    assert transcript[11] not in _contents(working_set)


async def test_tail_length_is_reported(store: StaffStore, transcript: list[str]) -> None:
    working_set = await build_working_set(store, _turn(), budget=100_000)
    assert working_set.tail_messages == 8


@pytest.mark.parametrize("budget", [80, 120, 200, 500, 1_000])
async def test_working_set_fits_the_token_budget(
    store: StaffStore, recalled: Claim, transcript: list[str], budget: int
) -> None:
    working_set = await build_working_set(store, _turn(), budget=budget)
    assert working_set.tokens <= budget


async def test_cut_working_set_shows_the_cut_marker(
    store: StaffStore, recalled: Claim, transcript: list[str]
) -> None:
    working_set = await build_working_set(store, _turn(), budget=200)
    assert working_set.truncated
    assert CUT_MARKER in _contents(working_set)


async def test_cut_drops_the_oldest_tail_messages_first(
    store: StaffStore, transcript: list[str]
) -> None:
    working_set = await build_working_set(store, _turn(), budget=300)
    assert transcript[-1] in _contents(working_set)
    assert transcript[-8] not in _contents(working_set)


async def test_uncut_working_set_has_no_cut_marker(store: StaffStore, recalled: Claim) -> None:
    working_set = await build_working_set(store, _turn())
    assert (working_set.truncated, CUT_MARKER in _contents(working_set)) == (False, False)


async def test_two_builds_are_equal(
    store: StaffStore, recalled: Claim, transcript: list[str]
) -> None:
    first = await build_working_set(store, _turn(), budget=300)
    second = await build_working_set(store, _turn(), budget=300)
    assert first == second


def _one_token_a_character(text: str) -> int:
    return len(text)


async def test_custom_token_counter_counts_the_tokens(
    store: StaffStore, recalled: Claim, transcript: list[str]
) -> None:
    working_set = await build_working_set(
        store, _turn(), budget=2_000, count=_one_token_a_character
    )
    assert working_set.tokens == sum(len(m.content) for m in working_set.messages)


async def test_custom_token_counter_cuts_where_the_default_does_not(
    store: StaffStore, recalled: Claim, transcript: list[str]
) -> None:
    default = await build_working_set(store, _turn(), budget=1_000)
    custom = await build_working_set(store, _turn(), budget=1_000, count=_one_token_a_character)
    assert (default.truncated, custom.truncated) == (False, True)


async def test_custom_token_counter_keeps_the_budget(
    store: StaffStore, recalled: Claim, transcript: list[str]
) -> None:
    working_set = await build_working_set(
        store, _turn(), budget=1_000, count=_one_token_a_character
    )
    assert working_set.tokens <= 1_000
