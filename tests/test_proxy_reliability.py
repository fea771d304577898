"""Issue 12, the proxy's side: admin keys act for their owner only, every paid call leaves a
receipt, hostile input is a 4xx in OpenAI's shape, a broken upstream stream is an error,
/metrics needs its key, secrets in the upstream URL stay out of errors and receipts, and a
call that never left the machine is not counted as an attempt.
"""

from __future__ import annotations

import http.client
import json
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from test_proxy_support import (
    ADMIN_KEY,
    ALICE_ADMIN_KEY,
    ALICE_KEY,
    BOB_KEY,
    METRICS_KEY,
    Server,
    Upstream,
    ask,
    proxy_config,
    running_proxy,
    sse_data,
)
from typer.testing import CliRunner

from staffstore.cli import app
from staffstore.errors import InputError
from staffstore.proxy.config import build_config
from staffstore.proxy.run import serve_in_thread
from staffstore.testing import FakeOpenRouter


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_proxy(tmp_path_factory.mktemp("reliability") / "proxy.db") as running:
        yield running


@pytest.fixture(autouse=True)
def fake(server: Server) -> FakeOpenRouter:
    return server.upstream.reset()


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The error object of an OpenAI-shaped error answer with this status."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    error: dict[str, Any] = body["error"]
    return error


def _raw(server: Server, body: bytes, key: str = ALICE_KEY) -> httpx.Response:
    return server.post(body, key=key)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- 1: an admin key is its owner's admin key ------------------------------------------------


def test_an_admin_key_cannot_store_a_claim_for_another_owner(
    server: Server, fake: FakeOpenRouter
) -> None:
    claim = {"owner": "bob", "question": "Where is bob's deploy key kept?", "answer": "in /tmp"}
    _error(server.post(claim, key=ALICE_ADMIN_KEY, path="/staffstore/claims"), 400)
    asked = server.post(ask("Where is bob's deploy key kept?"), key=BOB_KEY)
    assert asked.headers["x-staffstore-outcome"] == "miss"


def test_an_admin_key_cannot_promote_another_owners_receipt(
    server: Server, fake: FakeOpenRouter
) -> None:
    paid = server.post(ask("what is bob's private finding"), key=BOB_KEY)
    receipt_id = paid.headers["x-staffstore-receipt"]
    for key in (ALICE_ADMIN_KEY, ADMIN_KEY):
        response = server.post({"receipt_id": receipt_id}, key=key, path="/staffstore/claims")
        error = _error(response, 404)
        assert "bob's private finding" not in response.text and error["type"] == "not_found_error"
    named = {"receipt_id": receipt_id, "owner": "bob"}
    _error(server.post(named, key=ALICE_ADMIN_KEY, path="/staffstore/claims"), 400)


def test_an_admin_key_stores_claims_for_its_own_owner(server: Server, fake: FakeOpenRouter) -> None:
    claim = {"owner": "alice", "question": "Which region hosts the ledger?", "answer": "eu-west-1"}
    response = server.post(claim, key=ALICE_ADMIN_KEY, path="/staffstore/claims")
    assert response.status_code == 201 and response.json()["owner"] == "alice"


# -- 2: controls are checked before the call; a paid call always leaves its receipt -----------


@pytest.mark.parametrize("stream", [False, True])
def test_a_ttl_too_large_is_a_400_with_a_receipt_and_no_upstream_call(
    server: Server, fake: FakeOpenRouter, stream: bool
) -> None:
    response = server.post(ask("overflow the ttl", cache={"ttl": 1e15}, stream=stream))
    error = _error(response, 400)
    assert error["param"] == "cache.ttl"
    assert fake.chat_requests == []
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.inference_attempted) == ("rejected", False)


def test_the_sdk_gets_a_bad_request_for_an_overflowing_control(
    server: Server, fake: FakeOpenRouter
) -> None:
    with server.sdk() as client, pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"cache": {"s-maxage": 1e300}},
        )
    assert fake.chat_requests == []


def test_a_paid_answer_the_store_cannot_hold_still_reaches_the_client_with_a_receipt(
    server: Server, fake: FakeOpenRouter
) -> None:
    fake.answer("half a character \ud800 here")  # a lone surrogate: SQLite cannot store it
    with server.sdk() as client:
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "answer with a surrogate"}]
        )
    assert raw.parse().choices[0].message.content == "half a character \ud800 here"
    receipt = server.receipt("alice", raw.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.inference_attempted) == ("ok", True)


def test_a_streamed_paid_answer_the_store_cannot_hold_has_a_receipt(
    server: Server, fake: FakeOpenRouter
) -> None:
    fake.answer("streamed \udc00 surrogate")
    with server.sdk() as client:
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "stream a surrogate"}], stream=True
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in raw.parse())
    assert text == "streamed \udc00 surrogate"
    receipt = server.wait_for_receipt("alice", raw.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.inference_attempted) == ("ok", True)


# -- 6: hostile input is a 4xx, the connection stays open, a receipt is written ---------------

_DEEP = b"[" * 1000 + b"]" * 1000
_HOSTILE = {
    "lone_surrogate": b'{"model":"m","messages":[{"role":"user","content":"x\\ud800y"}]}',
    "surrogate_in_a_key": b'{"model":"m","messages":[{"role":"user","content":"hi","\\udfff":1}]}',
    "nested_1000": b'{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":'
    + _DEEP
    + b"}",
    "nested_30000": b'{"model":"m","messages":' + b"[" * 30_000 + b"]" * 30_000 + b"}",
    "huge_int_ttl": b'{"model":"m","messages":[{"role":"user","content":"hi"}],'
    b'"cache":{"ttl":1' + b"0" * 400 + b"}}",
    "int_over_digit_limit": b'{"model":"m","messages":[{"role":"user","content":"hi"}],'
    b'"max_tokens":' + b"9" * 5000 + b"}",
    "float_overflow": b'{"model":"m","messages":[{"role":"user","content":"hi"}],'
    b'"temperature":1e400}',
    "nan": b'{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":NaN}',
    "infinity_control": b'{"model":"m","messages":[{"role":"user","content":"hi"}],'
    b'"cache":{"s-maxage":-Infinity}}',
}


@pytest.mark.parametrize("name", sorted(_HOSTILE))
def test_hostile_input_is_a_400_with_a_receipt_and_no_upstream_call(
    server: Server, fake: FakeOpenRouter, name: str
) -> None:
    response = _raw(server, _HOSTILE[name])
    error = _error(response, 400)
    assert error["type"] == "invalid_request_error"
    assert fake.chat_requests == []
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.inference_attempted) == ("rejected", False)


def test_the_connection_is_kept_alive_after_hostile_input(server: Server) -> None:
    host, port = server.root.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    headers = {"authorization": f"Bearer {ALICE_KEY}", "content-type": "application/json"}
    try:
        for name in sorted(_HOSTILE):
            connection.request("POST", "/v1/chat/completions", _HOSTILE[name], headers)
            response = connection.getresponse()
            response.read()
            assert response.status == 400, name
            assert response.getheader("connection", "").lower() != "close", name
            first_socket = connection.sock
            assert first_socket is not None
        connection.request("POST", "/v1/chat/completions", json.dumps(ask("still here")), headers)
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read())["choices"]
        assert connection.sock is first_socket  # the same TCP connection all along
    finally:
        connection.close()


# -- 7: a cut, empty or non-SSE upstream stream is an error --------------------------------


def _stream_ends_in_error(server: Server, question: str) -> tuple[dict[str, Any], str]:
    response = server.post(ask(question, stream=True))
    assert response.status_code == 200
    data = sse_data(response.text)
    assert "[DONE]" not in data
    error: dict[str, Any] = json.loads(data[-1])["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error, response.headers["x-staffstore-receipt"]


@pytest.mark.parametrize("how", ["cut", "empty", "not_sse"])
def test_a_broken_upstream_stream_is_an_error_event_and_an_error_receipt(
    server: Server, fake: FakeOpenRouter, how: str
) -> None:
    {"cut": lambda: fake.cut_stream(after_chunks=2), "empty": fake.empty_stream,
     "not_sse": fake.answer_not_sse}[how]()  # fmt: skip
    _error_body, receipt_id = _stream_ends_in_error(server, f"a stream that goes wrong: {how}")
    receipt = server.receipt("alice", receipt_id)
    assert (receipt.status, receipt.inference_attempted) == ("error", True)
    assert receipt.error is not None and "stream" in receipt.error
    again = server.post(ask(f"a stream that goes wrong: {how}"))
    assert again.headers["x-staffstore-outcome"] == "miss"  # nothing broken was kept


def test_the_sdk_raises_on_a_cut_stream(server: Server, fake: FakeOpenRouter) -> None:
    fake.cut_stream(after_chunks=2)
    with server.sdk() as client:
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "cut me off please"}], stream=True
        )
        with pytest.raises(openai.APIError, match="ended before"):
            list(stream)


# -- 9: /metrics needs the metrics key ------------------------------------------------------


def test_metrics_need_the_metrics_key(server: Server) -> None:
    _error(server.get("/metrics", key=None), 401)
    _error(server.get("/metrics", key=ALICE_KEY), 401)
    _error(server.get("/metrics", key=ADMIN_KEY), 401)
    response = server.get("/metrics", key=METRICS_KEY)
    assert response.status_code == 200 and "staffstore_turns_total" in response.text


def test_metrics_are_off_without_a_metrics_key(tmp_path: Path) -> None:
    with running_proxy(tmp_path / "p.db", metrics_key_sha256=None) as bare:
        error = _error(bare.get("/metrics", key=METRICS_KEY), 404)
        assert "metrics" in error["message"]


# -- 10 and 11: the upstream URL's secrets; a call that never left is not an attempt ---------

PASSWORD = "hunter2-url-password"


def test_a_refused_connection_is_not_an_attempt_and_hides_the_upstream_url(
    tmp_path: Path,
) -> None:
    port = _closed_port()
    url = f"http://staff:{PASSWORD}@127.0.0.1:{port}/secret-path/v1"
    config = proxy_config(tmp_path / "p.db", upstream_url=url)
    assert PASSWORD not in repr(config)
    with serve_in_thread(config) as base_url:  # no transport: the real loopback network
        response = httpx.post(
            base_url + "/chat/completions",
            json=ask("is anyone there"),
            headers={"authorization": f"Bearer {ALICE_KEY}"},
            timeout=10,
        )
        ledger = httpx.get(
            base_url + "/staffstore/ledger", headers={"authorization": f"Bearer {ALICE_KEY}"}
        ).json()
    error = _error(response, 502)
    for secret in (PASSWORD, "staff:", str(port), "secret-path", "127.0.0.1"):
        assert secret not in response.text
    assert error["code"] == "upstream_unreachable"
    server = Server(base_url, tmp_path / "p.db", Upstream(), config)
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.inference_attempted) == ("unreachable", False)
    assert receipt.error is not None and PASSWORD not in receipt.error
    assert (ledger["attempted_calls"], ledger["not_attempted"]) == (0, 1)


def test_an_upstream_error_shown_to_a_tenant_hides_the_url_and_its_password(
    tmp_path: Path,
) -> None:
    fake = FakeOpenRouter()  # httpx sends the URL's user and password as basic auth instead
    fake.fail(500, "provider exploded", times=3)
    with fake.serve_in_thread() as upstream_url:
        url = upstream_url.replace("http://", f"http://staff:{PASSWORD}@")
        config = proxy_config(tmp_path / "p.db", upstream_url=url, upstream_key="sk-upstream")
        with serve_in_thread(config) as base_url:
            client = openai.OpenAI(base_url=base_url, api_key=ALICE_KEY, max_retries=0)
            with pytest.raises(openai.InternalServerError) as raised:
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "explode"}]
                )
    text = str(raised.value) + raised.value.response.text
    assert "provider exploded" in text
    for secret in (PASSWORD, upstream_url.removeprefix("http://")):
        assert secret not in text
    server = Server(base_url, tmp_path / "p.db", Upstream(), config)
    (receipt,) = server.receipts("alice")
    assert receipt.error is not None and PASSWORD not in receipt.error


def test_the_readme_quick_start_puts_no_client_key_on_the_command_line() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    for line in readme.splitlines():
        if "--owner-key" in line and "=" in line.split("--owner-key", 1)[1][:40]:
            spec = line.split("--owner-key", 1)[1].strip().strip('"').split()[0]
            assert "sha256:" in spec or "OWNER=" in spec, line


# -- 12: --trusted with keys is refused ------------------------------------------------------


def test_trusted_mode_with_owner_keys_is_refused() -> None:
    with pytest.raises(InputError, match="--trusted"):
        build_config(trusted=True, owner_keys=["acme=sk-acme"], environ={})
    with pytest.raises(InputError, match="--trusted"):
        build_config(trusted=True, admin_keys=["acme=sk-acme"], environ={})


def test_serve_refuses_trusted_mode_with_keys_in_one_line(tmp_path: Path) -> None:
    command = ["--db", str(tmp_path / "s.db"), "serve", "--trusted", "--owner-key", "a=sk-a"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 1
    assert result.output.startswith("error:") and "--trusted" in result.output
    assert "Traceback" not in result.output and "sk-a" not in result.output


# -- 8: a body that never finishes -----------------------------------------------------------


def test_a_body_that_never_finishes_is_a_408_with_a_receipt(tmp_path: Path) -> None:
    with running_proxy(tmp_path / "p.db", body_timeout=0.3) as slow:
        host, port = slow.root.removeprefix("http://").split(":")
        started = time.monotonic()
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                b"Authorization: Bearer " + ALICE_KEY.encode() + b"\r\n"
                b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":'
            )
            answer = b""
            while b"\r\n\r\n" not in answer:
                piece = sock.recv(65536)
                if not piece:
                    break
                answer += piece
        assert time.monotonic() - started < 5
        head = answer.split(b"\r\n", 1)[0]
        assert b" 408 " in head, answer
        receipt_id = next(
            line.split(b":", 1)[1].strip().decode()
            for line in answer.split(b"\r\n")
            if line.lower().startswith(b"x-staffstore-receipt:")
        )
        receipt = slow.receipt("alice", receipt_id)
        assert (receipt.status, receipt.inference_attempted) == ("rejected", False)


# -- 8: per-owner storage quotas; a large prompt is stored once ------------------------------


def _text_copies(db: Path, text: str) -> int:
    """How many times `text` is stored whole, across every table that holds turn text."""
    with closing(sqlite3.connect(db)) as reader:
        count = "SELECT count(*) FROM {} WHERE {} = ?"
        return sum(
            reader.execute(count.format(table, column), (text,)).fetchone()[0]
            for table, column in (
                ("receipts", "question"), ("receipts", "answer"), ("messages", "content"),
                ("kept_answers", "answer"), ("claims", "question"), ("claims", "answer"),
            )
        )  # fmt: skip


def test_a_large_prompt_is_stored_once(tmp_path: Path) -> None:
    prompt = "a long pasted log line\n" * 20_000  # 460 kB
    with running_proxy(tmp_path / "p.db", max_body_bytes=2 * 1024 * 1024) as big:
        big.upstream.reset().answer("short answer")
        response = big.post(ask(prompt))
        assert response.status_code == 200
        assert big.receipt("alice", response.headers["x-staffstore-receipt"]).status == "ok"
        assert _text_copies(big.db, prompt) == 1
        repeat = big.post(ask(prompt))  # still served as an exact repeat
        assert repeat.headers["x-staffstore-outcome"] == "hit"


def test_an_owner_over_its_storage_quota_gets_a_clear_4xx_and_others_do_not(
    tmp_path: Path,
) -> None:
    # One turn of 1,500 characters stores about 9,000 bytes: its receipt's question and answer
    # (the fake echoes the prompt), the session's two messages, the kept answer and its prompt.
    with running_proxy(tmp_path / "p.db", quota_bytes=12_000, quotas={"bob": 1_000_000}) as q:
        fake = q.upstream.reset()
        first = q.post(ask("x" * 1_500))
        second = q.post(ask("y" * 1_500))
        assert (first.status_code, second.status_code) == (200, 200)
        over = q.post(ask("z" * 1_500))
        error = _error(over, 429)
        assert (error["type"], error["code"]) == ("insufficient_quota", "storage_quota_exceeded")
        assert "12000" in error["message"]
        assert over.headers["x-should-retry"] == "false"
        receipt = q.receipt("alice", over.headers["x-staffstore-receipt"])
        assert (receipt.status, receipt.question) == ("rejected", None)
        assert receipt.reason == "storage_quota_exceeded"
        assert len(fake.chat_requests) == 2  # the refused one was never paid for
        no_store = q.post(ask("z" * 1_500, cache={"no-store": True}))
        assert no_store.status_code == 200  # stores no text, so the quota does not apply
        assert q.post(ask("w" * 1_500), key=BOB_KEY).status_code == 200


def test_storage_quotas_come_from_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "staffstore.toml"
    path.write_text(
        "[serve]\nquota_bytes = 1000000\n[serve.quotas]\nbob = 5000\n"
        '[[serve.owners]]\nowner = "bob"\nkey = "sk-bob"\n'
    )
    config = build_config(config_file=path, environ={})
    assert (config.quota_bytes, dict(config.quotas)) == (1_000_000, {"bob": 5000})
