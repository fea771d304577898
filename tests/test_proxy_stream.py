"""Streaming through the proxy: hits as a whole SSE sequence, misses relayed as they arrive,
usage in both of OpenRouter's shapes, mid-stream errors, and clients that leave early."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from test_proxy_support import (
    ALICE_ADMIN_KEY,
    Server,
    ask,
    check_chunks,
    running_proxy,
    sse_data,
)

from staffstore.testing import FakeOpenRouter, UsageChunk


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_proxy(tmp_path_factory.mktemp("stream") / "proxy.db") as running:
        yield running


@pytest.fixture(autouse=True)
def fake(server: Server) -> FakeOpenRouter:
    return server.upstream.reset()


def _claim(server: Server, question: str, answer: str) -> None:
    response = server.post(
        {"owner": "alice", "question": question, "answer": answer},
        key=ALICE_ADMIN_KEY,
        path="/staffstore/claims",
    )
    assert response.status_code == 201


def _relayed_chunks(text: str) -> list[dict[str, Any]]:
    data = sse_data(text)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(item) for item in data[:-1]]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    return chunks


def _text_of(chunks: list[dict[str, Any]]) -> str:
    return "".join(
        c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices")
    )


# -- hits --------------------------------------------------------------------------------------

ANSWER = "The proxy answers hits from the store, with zero usage, in under a millisecond or so."


def test_a_stream_hit_is_a_valid_sse_sequence(server: Server) -> None:
    _claim(server, "How fast is a hit?", ANSWER)
    response = server.post(ask("how fast is a hit", stream=True))
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-staffstore-outcome"] == "hit"
    assert "x-staffstore-claim" in response.headers and "x-staffstore-receipt" in response.headers
    chunks, text = check_chunks(response.text, usage=False)
    assert text == ANSWER
    assert len(chunks) >= 4  # role, content in more than one piece, finish


def test_a_stream_hit_ends_with_usage_when_asked(server: Server) -> None:
    _claim(server, "How fast is a streamed hit?", ANSWER)
    body = ask("how fast is a streamed hit", stream=True, stream_options={"include_usage": True})
    _, text = check_chunks(server.post(body).text, usage=True)
    assert text == ANSWER


def test_the_sdk_reads_a_stream_hit(server: Server, fake: FakeOpenRouter) -> None:
    _claim(server, "What does the sdk read?", "Chunks.")
    with server.sdk() as client:
        stream = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "what does the sdk read"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Chunks."
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 0
    assert fake.chat_requests == []


async def test_the_async_sdk_reads_a_stream_hit(server: Server) -> None:
    _claim(server, "What does the async sdk read?", "Async chunks.")
    async with server.async_sdk() as client:
        stream = await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "what does the async sdk read"}],
            stream=True,
        )
        parts = [c.choices[0].delta.content or "" async for c in stream]
    assert "".join(parts) == "Async chunks."


def test_a_streamed_paid_answer_is_kept_for_exact_repeats(
    server: Server, fake: FakeOpenRouter
) -> None:
    first = server.post(ask("stream then repeat", stream=True))
    second = server.post(ask("stream then repeat"))
    assert _text_of(_relayed_chunks(first.text)) == "echo: stream then repeat"
    assert second.headers["x-staffstore-reason"] == "exact_repeat"
    assert second.json()["choices"][0]["message"]["content"] == "echo: stream then repeat"


# -- misses ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["empty_choices", "empty_delta"])
def test_a_stream_miss_records_the_usage_of_the_last_chunk(
    server: Server, shape: UsageChunk
) -> None:
    server.upstream.reset(usage_chunk=shape)
    body = ask(f"usage in the {shape} shape", stream=True, stream_options={"include_usage": True})
    response = server.post(body)
    chunks = _relayed_chunks(response.text)
    assert _text_of(chunks) == f"echo: usage in the {shape} shape"
    assert chunks[-1]["usage"]["cost"] == 0.0001
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.outcome) == ("ok", "miss")
    usage = chunks[-1]["usage"]
    assert (receipt.prompt_tokens, receipt.completion_tokens, receipt.cost_usd) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
        usage["cost"],
    )
    assert receipt.completion_tokens == 6


def test_a_client_that_did_not_ask_for_usage_gets_none(
    server: Server, fake: FakeOpenRouter
) -> None:
    response = server.post(ask("no usage for me please", stream=True))
    chunks = _relayed_chunks(response.text)
    assert all("usage" not in chunk and chunk["choices"] for chunk in chunks)
    assert fake.chat_requests[0].json["stream_options"] == {"include_usage": True}
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert receipt.cost_usd == 0.0001  # the receipt has it all the same


def test_a_stream_without_usage_records_none_not_zero(server: Server) -> None:
    server.upstream.reset(usage=False)
    response = server.post(ask("a stream that reports no usage", stream=True))
    assert _text_of(_relayed_chunks(response.text)) == "echo: a stream that reports no usage"
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert receipt.status == "ok"
    assert (receipt.prompt_tokens, receipt.completion_tokens, receipt.cost_usd) == (None,) * 3


def test_sse_comments_from_upstream_are_tolerated(server: Server) -> None:
    fake = server.upstream.reset(comments=True)
    with server.sdk() as client:
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "comment first"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "echo: comment first"
    assert fake.comments


def test_a_stream_miss_is_relayed_as_it_arrives(server: Server, fake: FakeOpenRouter) -> None:
    fake.answer("one two three four five six", chunk_delay=0.15)
    started = time.perf_counter()
    arrivals: list[float] = []
    with server.stream(ask("relay me slowly", stream=True)) as response:
        for line in response.iter_lines():
            if line.startswith("data: {") and '"content": "one' in line:
                arrivals.append(time.perf_counter() - started)
        total = time.perf_counter() - started
    assert arrivals and total > 0.8
    assert arrivals[0] < total - 0.5  # the first word came long before the last


async def test_the_async_sdk_streams_a_miss(server: Server, fake: FakeOpenRouter) -> None:
    async with server.async_sdk() as client:
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "async miss"}], stream=True
        )
        parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    assert "".join(parts) == "echo: async miss"


def test_an_upstream_error_before_the_stream_is_a_json_error(
    server: Server, fake: FakeOpenRouter
) -> None:
    fake.fail(502, "no provider available")
    response = server.post(ask("stream from nowhere", stream=True))
    assert response.status_code == 502
    assert response.json()["error"]["message"].endswith("no provider available")


# -- failures mid-stream -----------------------------------------------------------------------


def test_a_mid_stream_error_reaches_the_sdk_as_an_error(
    server: Server, fake: FakeOpenRouter
) -> None:
    fake.break_stream("provider fell over", after_chunks=2)
    with server.sdk() as client:
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "break halfway"}], stream=True
        )
        with pytest.raises(openai.APIError, match="provider fell over"):
            list(stream)


def test_a_mid_stream_error_leaves_an_error_receipt(server: Server, fake: FakeOpenRouter) -> None:
    fake.break_stream("provider fell over", after_chunks=2)
    response = server.post(ask("break halfway again", stream=True))
    data = sse_data(response.text)
    assert data[-1] != "[DONE]"
    error = json.loads(data[-1])["error"]
    assert set(error) == {"message", "type", "param", "code"}
    receipt = server.receipt("alice", response.headers["x-staffstore-receipt"])
    assert (receipt.status, receipt.inference_attempted) == ("error", True)
    assert receipt.error is not None and "provider fell over" in receipt.error
    retry = server.post(ask("break halfway again"))
    assert retry.headers["x-staffstore-outcome"] == "miss"  # a broken answer is not kept


def test_a_client_that_leaves_mid_stream_leaves_a_cancelled_receipt(
    server: Server, fake: FakeOpenRouter
) -> None:
    fake.answer("a b c d e f g h i j k l m n o p", chunk_delay=0.2)
    with server.stream(ask("leave early", stream=True)) as response:
        receipt_id = response.headers["x-staffstore-receipt"]
        for line in response.iter_lines():
            if '"content": "a ' in line:
                break  # leave after the first word; closing the stream drops the connection
    receipt = server.wait_for_receipt("alice", receipt_id)
    assert (receipt.status, receipt.inference_attempted) == ("cancelled", True)
    (upstream_body,) = server.upstream.bodies
    assert upstream_body.closed and not upstream_body.finished
