"""Working state and agent state over HTTP: a real proxy on 127.0.0.1, the caller's key naming
the owner, 412 for a failed compare-and-swap, and the section in the bounded prompt's tail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_proxy_support import ADMIN_KEY, ALICE_KEY, BOB_KEY, Server, running_proxy

from staffstore.testing import FakeOpenRouter

SCOPE_KEY = b"proxy-scope-key-0123456789abcdef"
CONVO = {"kind": "conversation", "id": "+1-555-0100"}
SCHEMA = {
    "fields": {"step": {"type": "enum", "values": ["sizes", "checkout"]},
               "cart_note": {"type": "text", "pii": True}},
    "agent_state": {"scope": "conversation", "max_bytes": 64},
}  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("state-proxy") / "proxy.db"
    with running_proxy(db, state_key=SCOPE_KEY) as running:
        yield running


@pytest.fixture(autouse=True)
def fake(server: Server) -> FakeOpenRouter:
    return server.upstream.reset()


def _put(server: Server, path: str, body: Any, key: str = ALICE_KEY) -> httpx.Response:
    return httpx.put(
        server.base_url + path, json=body, headers={"authorization": f"Bearer {key}"}, timeout=10
    )


def _set(server: Server, agent: str, **body: Any) -> httpx.Response:
    """POST .../state/AGENT/set as alice (the body's `key` is the working-state key)."""
    return server.post(body, key=ALICE_KEY, path=f"/staffstore/state/{agent}/set")


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == code
    return body


# -- working state --------------------------------------------------------------------------------


def test_set_and_get_belong_to_the_callers_owner(server: Server) -> None:
    written = _set(server, "w1", key="stop_loss.2317", value="262", reason="plan", ttl_hours=4)
    assert written.status_code == 200 and written.json()["written"]
    view = server.get("/v1/staffstore/state/w1").json()
    assert [(e["key"], e["value"]) for e in view["entries"]] == [("stop_loss.2317", "262")]
    assert view["owner"] == "alice"
    for other in (BOB_KEY, ADMIN_KEY):  # an admin key is its own owner's, never alice's
        assert server.get("/v1/staffstore/state/w1", key=other).json()["entries"] == []
        theirs = {"key": "stop_loss.2317", "value": "1", "reason": "theirs"}
        assert server.post(theirs, key=other, path="/staffstore/state/w1/set").status_code == 200
    view = server.get("/v1/staffstore/state/w1").json()
    assert [(e["key"], e["value"]) for e in view["entries"]] == [("stop_loss.2317", "262")]


def test_a_failed_compare_and_swap_is_412_with_the_current_value(server: Server) -> None:
    _set(server, "w2", key="cap", value="96%", reason="plan")
    _set(server, "w2", key="cap", value="90%", reason="risk down", expected_value="96%")
    refused = _set(server, "w2", key="cap", value="80%", reason="x", expected_value="96%")
    body = _error(refused, 412, "working_state_conflict")
    assert body["value"] == "90%" and body["written"] is False
    assert server.get("/v1/staffstore/state/w2").json()["entries"][0]["value"] == "90%"


def test_a_new_key_at_the_cap_is_409_listing_the_keys(server: Server) -> None:
    for n in range(32):
        assert _set(server, "w3", key=f"k{n:02d}", value="1", reason="fill").status_code == 200
    body = _error(
        _set(server, "w3", key="k32", value="1", reason="over"), 409, "working_state_full"
    )
    assert body["keys"] == [f"k{n:02d}" for n in range(32)]


def test_a_set_without_a_reason_or_a_bad_handoff_is_400(server: Server) -> None:
    response = _set(server, "w4", key="k", value="1", reason=" ")
    assert response.status_code == 400
    assert "reason is required" in response.json()["error"]["message"]
    bad = server.post({"note": "n", "status": "complete"}, path="/staffstore/state/w4/handoff")
    assert bad.status_code == 400 and "evidence" in bad.json()["error"]["message"]
    good = server.post(
        {"note": "n", "status": "complete", "evidence": "three checks"},
        path="/staffstore/state/w4/handoff",
    )
    assert good.status_code == 200 and good.json()["status"] == "complete"


def test_clear_of_a_missing_key_is_404(server: Server) -> None:
    response = server.post({"key": "nope", "reason": "x"}, path="/staffstore/state/w5/clear")
    _error(response, 404, "not_found")


# -- the bounded prompt ---------------------------------------------------------------------------


def _bounded(server: Server, text: str, agent: str) -> Any:
    return server.sdk().chat.completions.with_raw_response.create(
        model="fake/model",
        messages=[{"role": "user", "content": text}],
        extra_body={"staffstore": {"working_set": "bounded", "agent": agent}},
    )


def test_the_bounded_prompt_carries_the_agents_section_before_the_question(
    server: Server, fake: FakeOpenRouter
) -> None:
    _set(server, "trader", key="stop_loss.2317", value="262", reason="exit if broken")
    _bounded(server, "patrol 09:12: where is the stop?", "trader")
    messages = fake.chat_requests[-1].json["messages"]
    assert messages[-1] == {"role": "user", "content": "patrol 09:12: where is the stop?"}
    assert messages[-2]["role"] == "system"
    assert "stop_loss.2317 = 262" in messages[-2]["content"]
    assert "authoritative" in messages[-2]["content"]


def test_a_forwarded_request_is_sent_as_it_came(server: Server, fake: FakeOpenRouter) -> None:
    _set(server, "fwd", key="k", value="v", reason="r")
    server.sdk().chat.completions.create(
        model="fake/model", messages=[{"role": "user", "content": "forwarded question"}],
        extra_body={"staffstore": {"agent": "fwd"}},
    )  # fmt: skip
    assert fake.chat_requests[-1].json["messages"] == [
        {"role": "user", "content": "forwarded question"}
    ]


def test_a_repeat_after_a_value_changed_is_not_served_the_old_answer(
    server: Server, fake: FakeOpenRouter
) -> None:
    _set(server, "rep", key="stop", value="262", reason="plan")
    first = _bounded(server, "what is my stop today?", "rep")
    again = _bounded(server, "what is my stop today?", "rep")
    assert first.headers["x-staffstore-outcome"] == "miss"
    assert (again.headers["x-staffstore-outcome"], again.headers["x-staffstore-reason"]) == (
        "hit", "exact_repeat",
    )  # fmt: skip
    _set(server, "rep", key="stop", value="254", reason="patrol rule")
    changed = _bounded(server, "what is my stop today?", "rep")
    assert changed.headers["x-staffstore-outcome"] == "miss"
    assert "stop = 254" in fake.chat_requests[-1].json["messages"][-2]["content"]


def test_a_bad_agent_name_is_400(server: Server) -> None:
    response = server.post(
        {"model": "fake/model", "messages": [{"role": "user", "content": "hi"}],
         "staffstore": {"agent": "no spaces please"}}
    )  # fmt: skip
    assert response.status_code == 400 and response.json()["error"]["param"] == "staffstore.agent"


# -- agent state ----------------------------------------------------------------------------------


def test_agent_state_round_trip_with_412_on_a_stale_version(server: Server) -> None:
    assert _put(server, "/staffstore/agent-state/schemas/shop", SCHEMA).status_code == 200
    first = _put(server, "/staffstore/agent-state",
                 {"agent": "shop", "scope": CONVO, "body": {"step": "sizes"}, "mode": "cas",
                  "if_version": 0})  # fmt: skip
    assert first.status_code == 200 and first.json()["version"] == 1
    stale = _put(server, "/staffstore/agent-state",
                 {"agent": "shop", "scope": CONVO, "body": {"step": "checkout"}, "mode": "cas",
                  "if_version": 0})  # fmt: skip
    body = _error(stale, 412, "agent_state_conflict")
    assert body["version"] == 1 and body["stored"] is False
    read = server.post({"agent": "shop", "scope": CONVO}, path="/staffstore/agent-state/read")
    assert read.json()["body"] == {"step": "sizes"} and read.json()["version"] == 1
    # Another owner's key reads nothing of alice's.
    theirs = server.post(
        {"agent": "shop", "scope": CONVO}, key=BOB_KEY, path="/staffstore/agent-state/read"
    )
    assert theirs.json()["version"] == 0


def test_over_the_cap_is_200_not_stored(server: Server) -> None:
    _put(server, "/staffstore/agent-state/schemas/cap", SCHEMA)
    over = _put(server, "/staffstore/agent-state",
                {"agent": "cap", "scope": CONVO, "body": {"cart_note": "x" * 100}})  # fmt: skip
    assert over.status_code == 200
    assert (over.json()["stored"], over.json()["reason"]) == (False, "over_cap")


def test_erase_by_subject_returns_a_proof_and_a_later_read_finds_nothing(server: Server) -> None:
    _put(server, "/staffstore/agent-state/schemas/era", SCHEMA)
    _put(server, "/staffstore/agent-state",
         {"agent": "era", "scope": CONVO, "body": {"step": "sizes"}, "subject": "ana"})  # fmt: skip
    export = server.post({"subject": "ana"}, path="/staffstore/agent-state/export").json()
    assert [s["agent"] for s in export["states"]] == ["era"]
    proof = server.post({"subject": "ana"}, path="/staffstore/agent-state/erase").json()
    assert proof["states"] == 1 and proof["digest"].startswith("sha256:")
    read = server.post({"agent": "era", "scope": CONVO}, path="/staffstore/agent-state/read")
    assert read.json()["version"] == 0


def test_agent_state_never_reaches_the_upstream(server: Server, fake: FakeOpenRouter) -> None:
    _put(server, "/staffstore/agent-state/schemas/leak", SCHEMA)
    _put(server, "/staffstore/agent-state",
         {"agent": "leak", "scope": CONVO, "body": {"cart_note": "MARKER-7731"}})  # fmt: skip
    _set(server, "leak", key="phase", value="open", reason="bell")
    _bounded(server, "anything new?", "leak")
    sent = fake.chat_requests[-1].json
    assert "MARKER-7731" not in str(sent) and "phase = open" in str(sent)


def test_agent_state_without_a_scope_key_is_503(tmp_path: Path) -> None:
    with running_proxy(tmp_path / "nokey.db") as bare:
        response = bare.post({"agent": "a", "scope": CONVO}, path="/staffstore/agent-state/read")
        _error(response, 503, "agent_state_unavailable")
