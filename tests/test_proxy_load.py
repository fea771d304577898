"""The proxy under load: many requests in flight at once share one SQLite connection, and a
slow model must hold up neither the receipts nor the hits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from test_proxy_support import ALICE_KEY, BOB_KEY, Server, ask, running_proxy

from staffstore.models import NewClaim
from staffstore.store import StaffStore
from staffstore.testing import FakeOpenRouter

IN_FLIGHT = 200
MISS_DELAY = 1.0  # long enough that every miss is still upstream when the last request leaves


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_proxy(tmp_path_factory.mktemp("load") / "proxy.db", timeout=10.0) as running:
        yield running


@pytest.fixture(autouse=True)
def fake(server: Server) -> FakeOpenRouter:
    return server.upstream.reset()


async def _seed_claims(server: Server, owner: str, count: int) -> list[str]:
    questions = [f"What is the setting number {i} of the load test?" for i in range(count)]
    async with StaffStore.open(server.db) as store:
        await store.ensure_claims(
            NewClaim(owner=owner, question=q, answer=f"It is {i}.") for i, q in enumerate(questions)
        )
    return questions


def _client() -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=IN_FLIGHT + 50, max_keepalive_connections=IN_FLIGHT)
    return httpx.AsyncClient(limits=limits, timeout=30)


async def test_200_requests_in_flight_lose_no_receipt_and_return_no_500(
    server: Server, fake: FakeOpenRouter
) -> None:
    hits = await _seed_claims(server, "alice", 50)
    repeats = [f"a question asked twice, number {i}" for i in range(40)]
    async with _client() as client:
        # Warm the exact repeats (bob's: kept answers are per owner) before the rush.
        for text in repeats:
            warm = await client.post(
                server.base_url + "/chat/completions",
                json=ask(text),
                headers={"authorization": f"Bearer {BOB_KEY}"},
            )
            assert warm.status_code == 200
        before = len(await server.receipts_async())
        for _ in range(60):
            fake.answer(delay=MISS_DELAY)
        work: list[tuple[str, dict[str, Any], str]] = []
        work += [(ALICE_KEY, ask(q), "hit") for q in hits]
        work += [(ALICE_KEY, ask(q, stream=True), "hit") for q in hits[:30]]
        work += [(BOB_KEY, ask(t), "hit") for t in repeats]
        work += [(ALICE_KEY, ask(f"an unseen question {i}"), "miss") for i in range(40)]
        work += [
            (BOB_KEY, ask(f"an unseen streamed one {i}", stream=True), "miss") for i in range(20)
        ]
        work += [(ALICE_KEY, {"model": "m", "messages": []}, "rejected") for _ in range(20)]
        assert len(work) == IN_FLIGHT

        in_flight = peak = 0

        async def send(key: str, body: dict[str, Any]) -> httpx.Response:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                return await client.post(
                    server.base_url + "/chat/completions",
                    json=body,
                    headers={"authorization": f"Bearer {key}"},
                )
            finally:
                in_flight -= 1

        started = time.perf_counter()
        responses = await asyncio.gather(*(send(key, body) for key, body, _ in work))
        elapsed = time.perf_counter() - started

    statuses = [r.status_code for r in responses]
    assert 500 not in statuses
    assert statuses.count(200) == IN_FLIGHT - 20 and statuses.count(400) == 20
    for response, (_, _, expected) in zip(responses, work, strict=True):
        outcome = response.headers["x-staffstore-outcome"]
        assert outcome == ("miss" if expected == "rejected" else expected), response.text
    receipt_ids = {r.headers["x-staffstore-receipt"] for r in responses}
    stored = await server.receipts_async()
    assert len(stored) - before == IN_FLIGHT
    assert receipt_ids <= {receipt.id for receipt in stored}
    assert peak >= 60  # the misses, at least, were all in flight together
    print("elapsed", elapsed, "peak", peak)
    assert elapsed < MISS_DELAY + 15


async def test_a_slow_upstream_does_not_hold_up_hits(server: Server, fake: FakeOpenRouter) -> None:
    hits = await _seed_claims(server, "alice", 20)
    for _ in range(20):
        fake.answer(delay=2.0)
    async with _client() as client:

        async def post(body: dict[str, Any]) -> httpx.Response:
            return await client.post(
                server.base_url + "/chat/completions",
                json=body,
                headers={"authorization": f"Bearer {ALICE_KEY}"},
            )

        slow = [asyncio.ensure_future(post(ask(f"a slow one {i}"))) for i in range(20)]
        await asyncio.sleep(0.3)  # the misses are upstream now
        latencies = []
        for question in hits:
            started = time.perf_counter()
            response = await post(ask(question))
            latencies.append(time.perf_counter() - started)
            assert response.headers["x-staffstore-outcome"] == "hit"
        still_waiting = sum(not task.done() for task in slow)
        done = await asyncio.gather(*slow)
    assert still_waiting == 20
    assert max(latencies) < 0.5, latencies
    assert all(r.status_code == 200 for r in done)
