"""Reuse of paid answers through the proxy: a reworded context-free request is served the kept
answer, with its reason, source and receipt; a conversation, another context, another owner,
`no-paraphrase` and `paraphrase_reuse = false` never are. A real server on 127.0.0.1, the
official `openai` SDK as the client, the fake upstream behind it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_proxy_support import ADMIN_KEYS, BOB_ADMIN_KEY, BOB_KEY, Server, ask, running_proxy

from staffstore.gate.scoring import default_model
from staffstore.testing import FakeOpenRouter


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_proxy(tmp_path_factory.mktemp("reuse") / "proxy.db") as running:
        yield running


@pytest.fixture(autouse=True)
def fake(server: Server) -> FakeOpenRouter:
    return server.upstream.reset()


def _sdk_ask(server: Server, messages: list[dict[str, Any]], **extra: Any) -> Any:
    """Ask through the official SDK; the raw response, for its headers."""
    with server.sdk() as client:
        return client.chat.completions.with_raw_response.create(
            model=extra.pop("model", "fake/model"), messages=messages, **extra
        )


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_a_reworded_question_is_served_the_paid_answer(
    server: Server, fake: FakeOpenRouter
) -> None:
    paid = _sdk_ask(server, _user("What's the capital of Portugal?"))
    reused = _sdk_ask(server, _user("what's the capital of portugal"))
    assert len(fake.chat_requests) == 1
    completion = reused.parse()
    assert completion.choices[0].message.content == "echo: What's the capital of Portugal?"
    assert completion.usage is not None and completion.usage.total_tokens == 0
    headers = reused.headers
    assert headers["x-staffstore-outcome"] == "hit"
    assert headers["x-staffstore-reason"] == "paraphrase"
    assert headers["x-staffstore-source"] == "kept_answer"
    paid_id = paid.headers["x-staffstore-receipt"]
    assert headers["x-staffstore-kept-from"] == paid_id
    assert "x-staffstore-claim" not in headers
    receipt = server.receipt("alice", headers["x-staffstore-receipt"])
    assert (receipt.reason, receipt.source, receipt.claim_id) == ("paraphrase", "kept_answer", None)
    assert receipt.served_from == paid_id and receipt.avoided_cost_usd == 0.0001


def test_an_exact_repeat_and_a_claim_name_their_sources(server: Server) -> None:
    _sdk_ask(server, _user("How deep is Lake Baikal?"))
    repeat = _sdk_ask(server, _user("How deep is Lake Baikal?"))
    assert repeat.headers["x-staffstore-reason"] == "exact_repeat"
    assert repeat.headers["x-staffstore-source"] == "kept_answer"
    stored = server.post(
        {"question": "Who maintains the billing service?", "answer": "Team Ledger."},
        key=ADMIN_KEYS["alice"], path="/staffstore/claims",
    )  # fmt: skip
    assert stored.status_code == 201
    hit = _sdk_ask(server, _user("Who maintains the billing service?"))
    assert hit.headers["x-staffstore-source"] == "claim"
    assert server.receipt("alice", hit.headers["x-staffstore-receipt"]).source == "claim"


def test_a_near_miss_is_not_served(server: Server, fake: FakeOpenRouter) -> None:
    _sdk_ask(server, _user("What's the capital of Austria?"))
    other = _sdk_ask(server, _user("What's the capital of Hungary?"))
    assert len(fake.chat_requests) == 2
    assert other.headers["x-staffstore-outcome"] == "miss"
    assert "x-staffstore-source" not in other.headers


def test_a_turn_after_earlier_messages_is_never_served(
    server: Server, fake: FakeOpenRouter
) -> None:
    _sdk_ask(server, _user("What's the capital of Norway?"))
    conversation = [
        {"role": "user", "content": "Let's talk about Sweden."},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "what's the capital of norway"},
    ]
    later = _sdk_ask(server, conversation)
    assert len(fake.chat_requests) == 2
    assert later.headers["x-staffstore-outcome"] == "miss"


def test_an_answer_given_in_a_conversation_serves_no_new_question(
    server: Server, fake: FakeOpenRouter
) -> None:
    conversation = [
        {"role": "user", "content": "Let's talk about Finland."},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "What's the capital of Finland?"},
    ]
    _sdk_ask(server, conversation)
    fresh = _sdk_ask(server, _user("what's the capital of finland"))
    assert len(fake.chat_requests) == 2
    assert fresh.headers["x-staffstore-outcome"] == "miss"


@pytest.mark.parametrize(
    "changed",
    [
        {"model": "fake/other"},
        {"temperature": 1.5},
        {"system": "Answer in French."},
    ],
    ids=["model", "temperature", "system prompt"],
)
def test_another_context_is_never_served(
    server: Server, fake: FakeOpenRouter, changed: dict[str, Any]
) -> None:
    topic = next(iter(changed))
    first = [{"role": "system", "content": "Be brief."}] if topic == "system" else []
    _sdk_ask(server, [*first, *_user(f"Which river flows through {topic} town?")])
    extra = {k: v for k, v in changed.items() if k != "system"}
    system = [{"role": "system", "content": changed["system"]}] if topic == "system" else []
    other = _sdk_ask(server, [*system, *_user(f"which river flows through {topic} town")], **extra)
    assert len(fake.chat_requests) == 2
    assert other.headers["x-staffstore-outcome"] == "miss"


def test_the_same_system_prompt_is_served(server: Server, fake: FakeOpenRouter) -> None:
    system = [{"role": "system", "content": "Be brief."}]
    _sdk_ask(server, [*system, *_user("What's the capital of Chile?")], temperature=0.2)
    again = _sdk_ask(server, [*system, *_user("what's the capital of chile")], temperature=0.2)
    assert len(fake.chat_requests) == 1
    assert again.headers["x-staffstore-source"] == "kept_answer"


def test_no_paraphrase_per_request_turns_it_off(server: Server, fake: FakeOpenRouter) -> None:
    _sdk_ask(server, _user("What's the capital of Peru?"))
    off = _sdk_ask(
        server, _user("what's the capital of peru"), extra_body={"cache": {"no-paraphrase": True}}
    )
    assert len(fake.chat_requests) == 2
    assert off.headers["x-staffstore-outcome"] == "miss"


def test_no_paraphrase_must_be_a_boolean(server: Server) -> None:
    response = server.post(ask("What's the capital of Cuba?", cache={"no-paraphrase": "yes"}))
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "cache.no-paraphrase"


@pytest.mark.parametrize("key", [BOB_KEY, BOB_ADMIN_KEY], ids=["tenant", "admin"])
def test_another_owner_never_gets_it(server: Server, fake: FakeOpenRouter, key: str) -> None:
    _sdk_ask(server, _user(f"What's the capital of Kenya ({key[-4:]})?"))
    theirs = server.post(ask(f"what's the capital of kenya ({key[-4:]})"), key=key)
    assert len(fake.chat_requests) == 2
    assert theirs.headers["x-staffstore-outcome"] == "miss"


def test_an_expired_kept_answer_is_not_served(server: Server, fake: FakeOpenRouter) -> None:
    server.post(ask("What's the capital of Ghana?", cache={"ttl": 0}))
    late = server.post(ask("what's the capital of ghana"))
    assert len(fake.chat_requests) == 2
    assert late.headers["x-staffstore-outcome"] == "miss"


def test_the_config_switch_turns_it_off(tmp_path: Path) -> None:
    with running_proxy(tmp_path / "off.db", paraphrase_reuse=False) as off:
        fake = off.upstream.reset()
        off.post(ask("What's the capital of Egypt?"))
        other = off.post(ask("what's the capital of egypt"))
        repeat = off.post(ask("What's the capital of Egypt?"))
        assert len(fake.chat_requests) == 2
        assert other.headers["x-staffstore-outcome"] == "miss"
        assert repeat.headers["x-staffstore-reason"] == "exact_repeat"


def test_a_claim_the_second_look_serves_names_the_paid_call_it_was_promoted_from(
    tmp_path: Path,
) -> None:
    # The second look is scored after the lookups' read connection is given back; the paid
    # call behind the claim it serves is read afterwards, and still priced on the receipt.
    loosest = max(default_model().budgets)
    with running_proxy(tmp_path / "loose.db", gate_budget=loosest) as loose:
        fake = loose.upstream.reset()
        paid = loose.post(ask("Why did the nightly backup fail on Sunday?"))
        promoted = loose.promote(paid)
        assert promoted.status_code == 201
        served = loose.post(ask("nightly backup sunday failed why"))
        assert len(fake.chat_requests) == 1
        headers = served.headers
        assert (headers["x-staffstore-outcome"], headers["x-staffstore-reason"]) == (
            "hit", "paraphrase")  # fmt: skip
        assert headers["x-staffstore-source"] == "claim"
        assert headers["x-staffstore-claim"] == promoted.json()["id"]
        receipt = loose.receipt("alice", headers["x-staffstore-receipt"])
        assert receipt.served_from == paid.headers["x-staffstore-receipt"]
        assert receipt.avoided_cost_usd == 0.0001
