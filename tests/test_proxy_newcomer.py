"""The proxy as a newcomer meets it (issue 13): rejected requests are not turns, a request
without a model or with an unknown role is a 400, error codes are strings, totals are rounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_proxy_support import ALICE_KEY, METRICS_KEY, Server, ask, running_proxy
from test_serve_command import free_port

from staffstore.testing import FakeOpenRouter


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_proxy(tmp_path_factory.mktemp("newcomer") / "proxy.db") as running:
        yield running


@pytest.fixture(autouse=True)
def fake(server: Server) -> FakeOpenRouter:
    return server.upstream.reset()


def metric(server: Server, name: str) -> float:
    text = server.get("/metrics", key=METRICS_KEY).text
    (line,) = [line for line in text.splitlines() if line.startswith(name + " ")]
    return float(line.split()[-1])


# -- item 4: a rejected request is not a turn ----------------------------------------------------


@pytest.mark.parametrize("body", [b"{not json", b'{"model": "m", "messages": []}'])
def test_a_rejected_request_is_counted_apart_not_as_a_turn_or_a_miss(
    server: Server, body: bytes
) -> None:
    before = server.get("/v1/staffstore/ledger").json()
    turns, misses = (
        metric(server, "staffstore_turns_total"),
        metric(server, "staffstore_misses_total"),
    )
    response = server.post(body)
    assert response.status_code == 400
    after = server.get("/v1/staffstore/ledger").json()
    assert (after["turns"], after["misses"]) == (before["turns"], before["misses"])
    assert after["rejected"] == before["rejected"] + 1
    assert metric(server, "staffstore_turns_total") == turns
    assert metric(server, "staffstore_misses_total") == misses
    assert metric(server, "staffstore_rejected_total") >= 1


def test_the_ledgers_cost_is_rounded(server: Server, fake: FakeOpenRouter) -> None:
    for number in range(3):  # 0.0001 three times sums to 0.00030000000000000003 unrounded
        assert server.post(ask(f"a costly question number {number} about owls")).status_code == 200
    cost = server.get("/v1/staffstore/ledger").json()["cost_usd"]
    assert cost == round(cost, 9) and len(repr(cost)) < 14


# -- item 8: what OpenAI would refuse is refused before it is paid for ---------------------------


def test_a_request_without_a_model_is_a_400_and_nothing_goes_upstream(
    server: Server, fake: FakeOpenRouter
) -> None:
    response = server.post({"messages": [{"role": "user", "content": "which model are you"}]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["code"]) == ("model", "missing_model")
    assert fake.chat_requests == []


def test_a_default_model_fills_a_request_without_one(tmp_path: Path) -> None:
    with running_proxy(tmp_path / "p.db", default_model="fake/default") as server:
        server.upstream.reset()
        body = {"messages": [{"role": "user", "content": "which model are you"}]}
        assert server.post(body).status_code == 200
        (sent,) = server.upstream.fake.chat_requests
        assert sent.json["model"] == "fake/default"


@pytest.mark.parametrize("role", ["robot", "User", ""])
def test_an_unknown_role_is_a_400_and_nothing_goes_upstream(
    server: Server, fake: FakeOpenRouter, role: str
) -> None:
    response = server.post({"model": "m", "messages": [{"role": role, "content": "hello there"}]})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages[0].role"
    assert fake.chat_requests == []


def test_an_http_error_has_a_string_code(server: Server) -> None:
    response = server.get("/v1/chat/completions", key=ALICE_KEY)  # GET: method not allowed
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_a_numeric_upstream_error_code_reaches_the_client_as_a_string(
    server: Server, fake: FakeOpenRouter
) -> None:
    fake.fail(429, "slow down", code=429)
    response = server.post(ask("a question the upstream refuses"))
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "429"


def test_a_numeric_error_code_in_a_stream_reaches_the_client_as_a_string(
    server: Server, fake: FakeOpenRouter
) -> None:
    fake.break_stream("provider fell over", code=502)
    with server.stream(ask("a streamed question that breaks", stream=True)) as response:
        text = response.read().decode()
    errors = [
        json.loads(line[len("data: ") :])["error"]
        for line in text.splitlines()
        if line.startswith("data: ") and '"error"' in line and "choices" not in line
    ]
    assert errors and all(isinstance(error["code"], str) for error in errors)


def test_serve_warns_at_start_when_no_upstream_key_is_set(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    port = free_port()
    command = [
        sys.executable, "-m", "staffstore", "--db", str(tmp_path / "s.db"), "serve",
        "--port", str(port), "--owner-key", "acme=sk-client", "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).is_success:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
    finally:
        process.terminate()
        _, banner = process.communicate(timeout=10)
    assert "key NOT set" in banner and "OPENROUTER_API_KEY" in banner
    assert "warning: no upstream API key" in banner


# -- /metrics by owner and reason (prometheus_client) ------------------------------------------


def test_metrics_count_turns_by_owner_outcome_and_reason(
    server: Server, fake: FakeOpenRouter
) -> None:
    def owner_misses() -> float:
        text = server.get("/metrics", key=METRICS_KEY).text
        labels = ('owner="alice"', 'outcome="miss"', 'reason="no_candidate"')
        values = [
            float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith("staffstore_owner_turns_total{") and all(x in line for x in labels)
        ]
        return values[0] if values else 0.0

    before = owner_misses()
    assert server.post(ask("a question only alice asks about herons")).status_code == 200
    assert owner_misses() == before + 1
    text = server.get("/metrics", key=METRICS_KEY).text
    assert 'staffstore_owner_known_cost_usd_total{owner="alice"}' in text
