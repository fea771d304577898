"""Errors the proxy returns, always in OpenAI's shape and never with a key in them; and the
receipts those requests leave."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from test_proxy_support import ALICE_KEY, UPSTREAM_KEY, Server, ask, running_proxy

from staffstore.testing import FakeOpenRouter


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_proxy(tmp_path_factory.mktemp("errors") / "proxy.db") as running:
        yield running


@pytest.fixture(autouse=True)
def fake(server: Server) -> FakeOpenRouter:
    return server.upstream.reset()


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The error object of an OpenAI-shaped error answer with this status."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["type"], str)
    for key in (UPSTREAM_KEY, ALICE_KEY):
        assert key not in response.text
    error: dict[str, Any] = body["error"]
    return error


# -- the client's mistakes ---------------------------------------------------------------------


def test_malformed_json_is_a_400(server: Server) -> None:
    error = _error(server.post(b'{"messages": [}'), 400)
    assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_json")


def test_a_body_that_is_not_an_object_is_a_400(server: Server) -> None:
    _error(server.post(b"[1, 2]"), 400)


def test_missing_messages_is_a_400(server: Server) -> None:
    error = _error(server.post({"model": "m"}), 400)
    assert error["param"] == "messages"


def test_empty_messages_is_a_400(server: Server) -> None:
    error = _error(server.post({"model": "m", "messages": []}), 400)
    assert error["param"] == "messages"


def test_a_rejected_request_leaves_a_receipt(server: Server) -> None:
    response = server.post({"model": "m", "messages": []})
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.reason) == ("rejected", "missing_messages")
    assert (receipt.inference_attempted, receipt.inference_avoided) == (False, False)


def test_a_body_over_the_limit_is_a_413(server: Server) -> None:
    big = ask("x" * (server.config.max_body_bytes + 10))
    error = _error(server.post(big), 413)
    assert error["code"] == "body_too_large"


def test_a_chunked_body_over_the_limit_is_a_413(server: Server) -> None:
    def pieces() -> Iterator[bytes]:
        for _ in range(20):
            yield b" " * 4096  # JSON allows whitespace: only the size matters here

    response = httpx.post(
        server.base_url + "/chat/completions",
        content=pieces(),
        headers={"authorization": f"Bearer {ALICE_KEY}"},
    )
    _error(response, 413)


def test_the_sdk_raises_bad_request_for_empty_messages(server: Server) -> None:
    with server.sdk() as client, pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="m", messages=[])


# -- who is asking -----------------------------------------------------------------------------


def test_an_unknown_key_is_a_401_that_does_not_echo_it(server: Server) -> None:
    response = server.post(ask("hello"), key="sk-guess-1234567890")
    error = _error(response, 401)
    assert "sk-guess-1234567890" not in response.text
    assert (error["type"], error["code"]) == ("authentication_error", "invalid_api_key")


def test_no_key_is_a_401(server: Server) -> None:
    _error(server.post(ask("hello"), key=None), 401)


def test_the_owner_header_is_ignored_outside_trusted_mode(server: Server) -> None:
    _error(server.post(ask("hello"), key=None, headers={"x-staffstore-owner": "alice"}), 401)


def test_other_endpoints_need_a_key_too(server: Server) -> None:
    _error(server.get("/v1/models", key=None), 401)
    _error(server.get("/v1/staffstore/ledger", key="sk-wrong"), 401)


# -- the upstream's failures -------------------------------------------------------------------


def test_an_upstream_4xx_is_relayed_in_openai_shape(server: Server, fake: FakeOpenRouter) -> None:
    fake.fail(400, "model fake/nothing does not exist")
    error = _error(server.post(ask("use a missing model")), 400)
    assert "model fake/nothing does not exist" in error["message"]
    assert error["type"] == "invalid_request_error"


def test_an_upstream_5xx_is_relayed_and_not_retried_by_the_sdk(
    server: Server, fake: FakeOpenRouter
) -> None:
    fake.fail(500, "upstream fell over", times=3)
    with server.sdk(max_retries=2) as client, pytest.raises(openai.InternalServerError):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "fail please"}]
        )
    assert len(fake.chat_requests) == 1  # x-should-retry: false kept the SDK from paying again


def test_an_upstream_5xx_says_should_retry_false(server: Server, fake: FakeOpenRouter) -> None:
    fake.fail(503, "overloaded")
    response = server.post(ask("are you there"))
    _error(response, 503)
    assert response.headers["x-should-retry"] == "false"


def test_an_upstream_429_is_a_rate_limit_error(server: Server, fake: FakeOpenRouter) -> None:
    fake.fail(429, "slow down")
    with server.sdk() as client, pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])


def test_an_upstream_timeout_is_a_504_with_a_timeout_receipt(
    server: Server, fake: FakeOpenRouter
) -> None:
    fake.answer(delay=server.config.timeout + 0.5)
    response = server.post(ask("a slow question"))
    error = _error(response, 504)
    assert error["code"] == "upstream_timeout"
    assert response.headers["x-should-retry"] == "false"
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.inference_attempted) == ("timeout", True)
    assert receipt.cost_usd is None


def test_an_unreachable_upstream_is_a_502(server: Server) -> None:
    server.upstream.unreachable = True
    response = server.post(ask("is anyone home"))
    error = _error(response, 502)
    assert error["code"] == "upstream_unreachable"
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert receipt.status == "unreachable"


def test_an_upstream_that_echoes_the_key_does_not_leak_it(server: Server) -> None:
    server.upstream.reset(api_key="sk-the-key-upstream-wants")  # ours is refused, and echoed
    response = server.post(ask("who am I upstream"))
    _error(response, 401)
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert receipt.error is not None and UPSTREAM_KEY not in receipt.error


def test_an_error_inside_a_200_answer_is_a_502(server: Server, fake: FakeOpenRouter) -> None:
    fake.break_stream("provider melted", code="server_error")
    response = server.post(ask("a question the provider fails"))
    error = _error(response, 502)
    assert "provider melted" in error["message"]
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.inference_attempted) == ("error", True)


# -- a proxy without an upstream key, in trusted single-tenant mode, bounded by default -----------


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("local") / "proxy.db"
    with running_proxy(
        db, upstream_key=None, trusted=True, keys={}, working_set="bounded"
    ) as running:
        yield running


def test_no_upstream_key_is_a_503_and_nothing_is_sent(local: Server) -> None:
    response = local.post(ask("anything"), key="whatever")
    error = _error(response, 503)
    assert (error["type"], error["code"]) == ("server_error", "upstream_key_missing")
    assert response.headers["x-should-retry"] == "false"
    assert local.upstream.fake.requests == []
    receipt = local.receipt("local", response.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.inference_attempted) == ("no_api_key", False)


def test_no_upstream_key_still_serves_hits(local: Server) -> None:
    stored = local.post(
        {"question": "Is the proxy up?", "answer": "Yes."}, key=None, path="/staffstore/claims"
    )
    assert stored.status_code == 201
    with local.sdk(key="any-key-will-do") as client:
        completion = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "is the proxy up"}]
        )
    assert completion.choices[0].message.content == "Yes."


def test_trusted_mode_takes_the_owner_from_the_header(local: Server) -> None:
    response = local.post(
        ask("whose turn is this"), key=None, headers={"x-staffstore-owner": "eve"}
    )
    assert local.receipt("eve", response.headers["x-staffstore-receipt"]).owner == "eve"
    ledger = httpx.get(local.base_url + "/staffstore/ledger", headers={"x-staffstore-owner": "eve"})
    assert (ledger.json()["owner"], ledger.json()["turns"]) == ("eve", 1)


def test_the_configured_working_set_mode_applies(local: Server) -> None:
    response = local.post(ask("bounded by default"), key=None)
    assert response.headers["x-staffstore-working-set"] == "bounded"


def test_no_key_is_ever_written_to_the_database(server: Server, fake: FakeOpenRouter) -> None:
    server.post(ask("a question that leaves rows behind"))
    server.post(ask("hello"), key="sk-guess-written-nowhere")
    fake.fail(401, f"Incorrect API key provided: {UPSTREAM_KEY}")
    server.post(ask("an upstream that echoes our key"))
    stored = b"".join(path.read_bytes() for path in server.db.parent.glob(server.db.name + "*"))
    for key in (ALICE_KEY, UPSTREAM_KEY, "sk-guess-written-nowhere"):
        assert key.encode() not in stored
