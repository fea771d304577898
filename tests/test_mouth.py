"""ensure_mouth end to end: hits make no call, misses make one, every turn leaves a receipt."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from staffstore.errors import MissingApiKeyError, UpstreamError, UpstreamStatusError
from staffstore.models import ChatReply, Message, Turn
from staffstore.mouth import TurnFailed, ensure_mouth
from staffstore.store import StaffStore
from staffstore.testing import FakeOpenRouter
from staffstore.upstream import API_KEY_ENV, OpenRouter

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

if TYPE_CHECKING:
    from conftest import PutClaim

KEY = "sk-or-v1-mouth-test-key"
KERNEL_Q = "What did Kernel find about ledger replay?"
KERNEL_A = "Ledger replays are deterministic."
NEW_Q = "Which port does the metrics endpoint use?"


class CountingChat:
    """A local ChatFn: records each call and answers with `reply`, or raises `error`."""

    def __init__(self, reply: ChatReply | None = None, error: UpstreamError | None = None):
        self.reply = reply or ChatReply(
            text="It uses port 9100.",
            model="test/model",
            prompt_tokens=120,
            completion_tokens=7,
            cost_usd=0.0025,
        )
        self.error = error
        self.calls: list[list[Message]] = []

    async def __call__(self, messages: list[Message]) -> ChatReply:
        self.calls.append(messages)
        if self.error is not None:
            raise self.error
        return self.reply


def _turn(text: str, session: str | None = "main") -> Turn:
    return Turn(owner="alice", text=text, session=session)


@pytest.fixture
async def kernel(put: PutClaim) -> None:
    await put(KERNEL_Q, KERNEL_A)


@pytest.fixture
def fake() -> FakeOpenRouter:
    return FakeOpenRouter(api_key=KEY)


@pytest.fixture
async def openrouter(fake: FakeOpenRouter) -> AsyncIterator[OpenRouter]:
    async with OpenRouter(api_key=KEY, transport=fake.transport(), backoff=0) as client:
        yield client


# -- hits ----------------------------------------------------------------------------------------


async def test_hit_makes_no_upstream_call(store: StaffStore, kernel: None) -> None:
    chat = CountingChat()
    await ensure_mouth(store, _turn(KERNEL_Q), chat)
    assert chat.calls == []


async def test_hit_answers_with_the_stored_answer(store: StaffStore, kernel: None) -> None:
    result = await ensure_mouth(store, _turn(KERNEL_Q), CountingChat())
    assert result.answer == KERNEL_A


async def test_hit_receipt_records_an_avoided_call(store: StaffStore, kernel: None) -> None:
    receipt = (await ensure_mouth(store, _turn(KERNEL_Q), CountingChat())).receipt
    assert (
        receipt.outcome,
        receipt.status,
        receipt.inference_avoided,
        receipt.inference_attempted,
    ) == ("hit", "hit", True, False)


async def test_hit_over_openrouter_sends_no_request(
    store: StaffStore, kernel: None, fake: FakeOpenRouter, openrouter: OpenRouter
) -> None:
    await ensure_mouth(store, _turn(KERNEL_Q), openrouter)
    assert fake.requests == []


# -- misses --------------------------------------------------------------------------------------


async def test_miss_makes_exactly_one_call(store: StaffStore, kernel: None) -> None:
    chat = CountingChat()
    await ensure_mouth(store, _turn(NEW_Q), chat)
    assert len(chat.calls) == 1


async def test_miss_answers_with_the_models_reply(store: StaffStore) -> None:
    result = await ensure_mouth(store, _turn(NEW_Q), CountingChat())
    assert result.answer == "It uses port 9100."


async def test_miss_appends_the_exchange_to_the_session(store: StaffStore) -> None:
    await ensure_mouth(store, _turn(NEW_Q), CountingChat())
    session = await store.ensure_session("alice", "main")
    messages = await store.recent_messages(session)
    assert [(m.role, m.content) for m in messages] == [
        ("user", NEW_Q),
        ("assistant", "It uses port 9100."),
    ]


async def test_miss_receipt_has_the_replys_usage(store: StaffStore) -> None:
    receipt = (await ensure_mouth(store, _turn(NEW_Q), CountingChat())).receipt
    assert (receipt.prompt_tokens, receipt.completion_tokens, receipt.cost_usd) == (
        120,
        7,
        0.0025,
    )


async def test_miss_receipt_records_an_attempted_call(store: StaffStore) -> None:
    receipt = (await ensure_mouth(store, _turn(NEW_Q), CountingChat())).receipt
    assert (
        receipt.outcome,
        receipt.status,
        receipt.inference_avoided,
        receipt.inference_attempted,
    ) == ("miss", "ok", False, True)


async def test_miss_receipt_is_stored(store: StaffStore) -> None:
    receipt = (await ensure_mouth(store, _turn(NEW_Q), CountingChat())).receipt
    assert await store.get_receipt("alice", receipt.id) == receipt


async def test_miss_over_openrouter_sends_one_request(
    store: StaffStore, fake: FakeOpenRouter, openrouter: OpenRouter
) -> None:
    await ensure_mouth(store, _turn(NEW_Q), openrouter)
    assert len(fake.chat_requests) == 1


async def test_miss_over_openrouter_records_the_providers_usage(
    store: StaffStore, openrouter: OpenRouter
) -> None:
    result = await ensure_mouth(store, _turn(NEW_Q), openrouter)
    assert result.answer is not None
    receipt = result.receipt
    assert (receipt.completion_tokens, receipt.cost_usd) == (len(result.answer.split()), 0.0001)
    assert receipt.prompt_tokens is not None and receipt.prompt_tokens > 0


async def test_chat_answer_does_not_become_a_claim(store: StaffStore, kernel: None) -> None:
    await ensure_mouth(store, _turn(NEW_Q), CountingChat())
    assert await store.count_claims() == 1


# -- unknown usage -------------------------------------------------------------------------------


async def test_unreported_usage_is_none_on_the_receipt(store: StaffStore) -> None:
    chat = CountingChat(ChatReply(text="It uses port 9100."))
    receipt = (await ensure_mouth(store, _turn(NEW_Q), chat)).receipt
    stored = await store.get_receipt("alice", receipt.id)
    assert (stored.prompt_tokens, stored.completion_tokens, stored.cost_usd) == (None, None, None)


async def test_unreported_usage_over_openrouter_is_none_on_the_receipt(
    store: StaffStore, fake: FakeOpenRouter, openrouter: OpenRouter
) -> None:
    fake.answer("It uses port 9100.", usage=False)
    receipt = (await ensure_mouth(store, _turn(NEW_Q), openrouter)).receipt
    assert (receipt.prompt_tokens, receipt.completion_tokens, receipt.cost_usd) == (
        None,
        None,
        None,
    )


async def test_unreported_usage_is_counted_as_unknown_in_the_ledger(store: StaffStore) -> None:
    await ensure_mouth(store, _turn(NEW_Q), CountingChat(ChatReply(text="port 9100")))
    ledger = await store.ledger("alice")
    assert (ledger.unknown_usage_turns, ledger.unknown_cost_turns) == (1, 1)


# -- failures ------------------------------------------------------------------------------------


async def test_missing_api_key_gives_no_answer(
    store: StaffStore, fake: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    async with OpenRouter(api_key=None, transport=fake.transport()) as chat:
        result = await ensure_mouth(store, _turn(NEW_Q), chat)
    assert result.answer is None


async def test_missing_api_key_receipt_is_not_an_attempt(
    store: StaffStore, fake: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    async with OpenRouter(api_key=None, transport=fake.transport()) as chat:
        receipt = (await ensure_mouth(store, _turn(NEW_Q), chat)).receipt
    assert (receipt.inference_attempted, receipt.status) == (False, "no_api_key")


async def test_missing_api_key_sends_nothing(
    store: StaffStore, fake: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    async with OpenRouter(api_key=None, transport=fake.transport()) as chat:
        await ensure_mouth(store, _turn(NEW_Q), chat)
    assert fake.requests == []


async def test_failed_call_receipt_is_an_attempt_with_status_error(
    store: StaffStore, fake: FakeOpenRouter, openrouter: OpenRouter
) -> None:
    fake.fail(500, "provider exploded", times=openrouter.max_retries + 1)
    result = await ensure_mouth(store, _turn(NEW_Q), openrouter)
    assert (result.answer, result.receipt.inference_attempted, result.receipt.status) == (
        None,
        True,
        "error",
    )


async def test_failed_call_is_retried_until_retries_run_out(
    store: StaffStore, fake: FakeOpenRouter, openrouter: OpenRouter
) -> None:
    fake.fail(500, "provider exploded", times=openrouter.max_retries + 1)
    await ensure_mouth(store, _turn(NEW_Q), openrouter)
    assert len(fake.chat_requests) == openrouter.max_retries + 1


async def test_failed_call_leaves_the_session_untouched(
    store: StaffStore, fake: FakeOpenRouter, openrouter: OpenRouter
) -> None:
    fake.fail(500, "provider exploded", times=openrouter.max_retries + 1)
    await ensure_mouth(store, _turn(NEW_Q), openrouter)
    assert await store.recent_messages(await store.ensure_session("alice", "main")) == []


async def test_timed_out_call_receipt_has_status_timeout(
    store: StaffStore, fake: FakeOpenRouter
) -> None:
    fake.answer("too late", delay=1.0)
    async with OpenRouter(api_key=KEY, transport=fake.transport(), timeout=0.05) as chat:
        receipt = (await ensure_mouth(store, _turn(NEW_Q), chat)).receipt
    assert (receipt.status, receipt.inference_attempted) == ("timeout", True)


# -- the ledger ----------------------------------------------------------------------------------


@pytest.fixture
async def five_turns(store: StaffStore, kernel: None) -> None:
    """A hit, a paid miss, a miss with unknown usage, a failed call and a missing key."""
    await ensure_mouth(store, _turn(KERNEL_Q), CountingChat())
    await ensure_mouth(store, _turn("first new question about metrics?"), CountingChat())
    unknown = CountingChat(ChatReply(text="no usage here"))
    await ensure_mouth(store, _turn("second new question about exports?"), unknown)
    failed = CountingChat(error=UpstreamStatusError("upstream answered 500", 500))
    await ensure_mouth(store, _turn("third new question about imports?"), failed)
    no_key = CountingChat(error=MissingApiKeyError("no API key"))
    await ensure_mouth(store, _turn("fourth new question about tokens?"), no_key)


async def test_ledger_counts_avoided_and_attempted_calls_apart(
    store: StaffStore, five_turns: None
) -> None:
    ledger = await store.ledger("alice")
    assert (ledger.turns, ledger.hits, ledger.avoided_calls, ledger.attempted_calls) == (
        5,
        1,
        1,
        3,
    )


async def test_ledger_counts_failed_and_not_attempted_calls(
    store: StaffStore, five_turns: None
) -> None:
    ledger = await store.ledger("alice")
    assert (ledger.failed_calls, ledger.not_attempted) == (1, 1)


async def test_ledger_sums_only_the_known_tokens_and_cost(
    store: StaffStore, five_turns: None
) -> None:
    ledger = await store.ledger("alice")
    assert (ledger.prompt_tokens, ledger.completion_tokens) == (120, 7)
    assert ledger.cost_usd == pytest.approx(0.0025)


async def test_ledger_counts_attempted_turns_with_unknown_usage(
    store: StaffStore, five_turns: None
) -> None:
    ledger = await store.ledger("alice")
    # The usage-less answer and the failed call were attempts the provider did not price.
    assert (ledger.unknown_usage_turns, ledger.unknown_cost_turns) == (2, 2)


async def test_raise_on_error_raises_with_the_stored_receipt(store: StaffStore) -> None:
    chat = CountingChat(error=UpstreamStatusError("overloaded", 503))
    with pytest.raises(TurnFailed) as raised:
        await ensure_mouth(store, _turn(NEW_Q), chat, raise_on_error=True)
    receipt = raised.value.result.receipt
    assert (raised.value.result.answer, receipt.inference_attempted) == (None, True)
    assert isinstance(raised.value.cause, UpstreamStatusError)
    stored = await store.list_receipts("alice")
    assert [r.id for r in stored] == [receipt.id]


async def test_a_cancelled_call_leaves_a_cancelled_attempt(store: StaffStore) -> None:
    started = asyncio.Event()

    async def never_answers(messages: list[Message]) -> ChatReply:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    task = asyncio.create_task(ensure_mouth(store, _turn(NEW_Q), never_answers))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (receipt,) = await store.list_receipts("alice")
    assert (receipt.status, receipt.inference_attempted, receipt.answer) == (
        "cancelled",
        True,
        None,
    )


async def test_a_miss_receipt_records_its_prompt_per_part_and_a_hit_none(
    store: StaffStore, kernel: None
) -> None:
    chat = CountingChat()
    missed = await ensure_mouth(store, _turn(NEW_Q), chat)
    assert missed.working_set is not None
    stored = await store.get_receipt("alice", missed.receipt.id)
    assert stored.prompt_parts == missed.working_set.part_tokens
    assert stored.prompt_parts["turn"] > 0 and sum(stored.prompt_parts.values()) > 0
    hit = await ensure_mouth(store, _turn(KERNEL_Q), chat)
    assert (await store.get_receipt("alice", hit.receipt.id)).prompt_parts is None
