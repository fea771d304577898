"""The OpenRouter client against the fake upstream: answers, usage, retries, errors, streams."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from staffstore.errors import (
    InputError,
    MissingApiKeyError,
    UpstreamStatusError,
    UpstreamTimeoutError,
    UpstreamUnreachableError,
)
from staffstore.models import Message
from staffstore.testing import FakeOpenRouter
from staffstore.upstream import (
    DEFAULT_MODEL,
    MAX_RETRY_WAIT,
    OpenRouter,
    retry_delay,
    usage_from,
)

KEY = "sk-or-v1-test-secret-4242"
HELLO = [Message(role="user", content="hello there")]


@pytest.fixture
def fake() -> FakeOpenRouter:
    return FakeOpenRouter(api_key=KEY)


@pytest.fixture
async def chat(fake: FakeOpenRouter) -> AsyncIterator[OpenRouter]:
    async with OpenRouter(api_key=KEY, transport=fake.transport(), backoff=0) as client:
        yield client


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _raw(body: bytes, content_type: str = "text/event-stream") -> httpx.MockTransport:
    """A transport that answers every request with these exact bytes."""
    return httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": content_type}, content=body)
    )


def _sse(*events: dict[str, Any] | str) -> bytes:
    lines = [e if isinstance(e, str) else f"data: {json.dumps(e)}\n\n" for e in events]
    return "".join(lines).encode()


async def _drain(chat: OpenRouter, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with chat.stream(body) as events:
        return [event async for event in events]


# Answers and usage


async def test_call_returns_the_answer_text(chat: OpenRouter) -> None:
    assert (await chat(HELLO)).text == "echo: hello there"


async def test_call_reads_tokens_and_cost_from_usage(chat: OpenRouter) -> None:
    reply = await chat(HELLO)
    assert (reply.prompt_tokens, reply.completion_tokens, reply.cost_usd) == (2, 3, 0.0001)


async def test_call_reads_model_finish_reason_and_response_id(chat: OpenRouter) -> None:
    reply = await chat(HELLO)
    assert (reply.model, reply.finish_reason, reply.response_id) == (
        DEFAULT_MODEL,
        "stop",
        "gen-fake-1",
    )


async def test_call_sends_model_and_messages(chat: OpenRouter, fake: FakeOpenRouter) -> None:
    await chat(HELLO)
    assert fake.chat_requests[0].json == {
        "model": DEFAULT_MODEL,
        "messages": [{"role": "user", "content": "hello there"}],
    }


async def test_absent_usage_gives_none_fields(chat: OpenRouter, fake: FakeOpenRouter) -> None:
    fake.answer(usage=False)
    reply = await chat(HELLO)
    assert (reply.prompt_tokens, reply.completion_tokens, reply.cost_usd) == (None, None, None)


async def test_absent_cost_gives_none_cost_usd() -> None:
    fake = FakeOpenRouter(cost=None)
    async with OpenRouter(api_key=KEY, transport=fake.transport()) as chat:
        assert (await chat(HELLO)).cost_usd is None


async def test_null_content_becomes_empty_text() -> None:
    body = {"id": "x", "model": "m", "choices": [{"message": {"content": None}}]}
    transport = _raw(json.dumps(body).encode(), "application/json")
    async with OpenRouter(api_key=KEY, transport=transport) as chat:
        assert (await chat(HELLO)).text == ""


def test_usage_from_keeps_reported_zeros() -> None:
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0}
    assert usage_from({"usage": usage}) == (0, 0, 0.0)


def test_usage_from_without_usage_is_all_none() -> None:
    assert usage_from({"choices": []}) == (None, None, None)


# Keys and headers


async def test_missing_key_raises_missing_api_key_error(
    fake: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    async with OpenRouter(transport=fake.transport()) as chat:
        with pytest.raises(MissingApiKeyError, match="set OPENROUTER_API_KEY"):
            await chat(HELLO)


async def test_missing_key_sends_no_request(
    fake: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    async with OpenRouter(transport=fake.transport()) as chat:
        with pytest.raises(MissingApiKeyError):
            await chat(HELLO)
    assert fake.requests == []


async def test_key_is_read_from_the_environment(
    fake: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    async with OpenRouter(transport=fake.transport()) as chat:
        await chat(HELLO)
    assert fake.chat_requests[0].bearer == KEY


async def test_referer_and_title_headers_are_sent(fake: FakeOpenRouter) -> None:
    transport = fake.transport()
    async with OpenRouter(
        api_key=KEY, referer="https://x.test", title="T", transport=transport
    ) as c:
        await c(HELLO)
    headers = fake.chat_requests[0].headers
    assert (headers["http-referer"], headers["x-title"]) == ("https://x.test", "T")


async def test_rejected_key_is_redacted_from_the_error(fake: FakeOpenRouter) -> None:
    wrong = "sk-or-v1-wrong-secret-1337"
    async with OpenRouter(api_key=wrong, transport=fake.transport()) as chat:
        with pytest.raises(UpstreamStatusError) as caught:
            await chat(HELLO)
    assert wrong not in f"{caught.value} {caught.value!r} {caught.value.args}"


async def test_client_repr_hides_the_key(chat: OpenRouter) -> None:
    assert KEY not in repr(chat)


# Retries and failures


async def test_429_is_retried_then_answers(chat: OpenRouter, fake: FakeOpenRouter) -> None:
    fake.fail(429, retry_after=0)
    await chat(HELLO)
    assert len(fake.chat_requests) == 2


async def test_retry_after_sets_the_wait(chat: OpenRouter, fake: FakeOpenRouter) -> None:
    fake.fail(429, retry_after=0.2)
    started = time.monotonic()
    await chat(HELLO)
    assert time.monotonic() - started >= 0.2


async def test_500_past_retries_raises_status_error_with_status(
    chat: OpenRouter, fake: FakeOpenRouter
) -> None:
    fake.fail(500, times=3)
    with pytest.raises(UpstreamStatusError) as caught:
        await chat(HELLO)
    assert caught.value.status_code == 500


async def test_500_is_tried_max_retries_plus_one_times(
    chat: OpenRouter, fake: FakeOpenRouter
) -> None:
    fake.fail(500, times=5)
    with pytest.raises(UpstreamStatusError):
        await chat(HELLO)
    assert len(fake.chat_requests) == 3


async def test_400_is_not_retried(chat: OpenRouter, fake: FakeOpenRouter) -> None:
    fake.fail(400)
    with pytest.raises(UpstreamStatusError):
        await chat(HELLO)
    assert len(fake.chat_requests) == 1


async def test_status_error_carries_the_body_message_and_code(
    chat: OpenRouter, fake: FakeOpenRouter
) -> None:
    fake.fail(402, "Insufficient credits", code=402)
    with pytest.raises(UpstreamStatusError) as caught:
        await chat(HELLO)
    assert ("Insufficient credits" in str(caught.value), caught.value.code) == (True, 402)


async def test_slow_answer_raises_upstream_timeout_error(fake: FakeOpenRouter) -> None:
    fake.answer(delay=5)
    async with OpenRouter(api_key=KEY, timeout=0.05, transport=fake.transport()) as chat:
        with pytest.raises(UpstreamTimeoutError):
            await chat(HELLO)


async def test_timeout_is_not_retried(fake: FakeOpenRouter) -> None:
    fake.answer(delay=5)
    async with OpenRouter(api_key=KEY, timeout=0.05, transport=fake.transport()) as chat:
        with pytest.raises(UpstreamTimeoutError):
            await chat(HELLO)
    assert len(fake.chat_requests) == 1


async def test_closed_port_raises_upstream_unreachable_error() -> None:
    base_url = f"http://127.0.0.1:{_closed_port()}/api/v1"
    async with OpenRouter(api_key=KEY, base_url=base_url, backoff=0) as chat:
        with pytest.raises(UpstreamUnreachableError):
            await chat(HELLO)


async def test_connect_error_is_retried_then_answers(fake: FakeOpenRouter) -> None:
    attempts: list[httpx.Request] = []
    inner = fake.transport()

    class FlakyOnce(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            attempts.append(request)
            if len(attempts) == 1:
                raise httpx.ConnectError("refused", request=request)
            return await inner.handle_async_request(request)

    async with OpenRouter(api_key=KEY, transport=FlakyOnce(), backoff=0) as chat:
        assert (await chat(HELLO)).text == "echo: hello there"


def test_retry_delay_reads_an_http_date() -> None:
    now = datetime(2024, 1, 1, tzinfo=UTC)
    header = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert retry_delay(0, header, backoff=0.5, now=now) == 7


def test_retry_delay_caps_a_long_retry_after() -> None:
    assert retry_delay(0, "3600", backoff=0.5) == MAX_RETRY_WAIT


def test_retry_delay_doubles_the_backoff_without_retry_after() -> None:
    assert [retry_delay(n, None, backoff=0.5) for n in range(3)] == [0.5, 1.0, 2.0]


# Whole bodies: complete() and models()


async def test_complete_returns_raw_json_and_parsed_reply(chat: OpenRouter) -> None:
    raw, reply = await chat.complete({"messages": [{"role": "user", "content": "hi"}]})
    assert (raw["id"], raw["choices"][0]["message"]["content"]) == (reply.response_id, reply.text)


async def test_complete_sends_the_body_as_given(chat: OpenRouter, fake: FakeOpenRouter) -> None:
    body = {"model": "a/b", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.2}
    await chat.complete(body)
    assert fake.chat_requests[0].json == body


async def test_complete_refuses_a_streaming_body(chat: OpenRouter) -> None:
    with pytest.raises(InputError):
        await chat.complete({"messages": [], "stream": True})


async def test_error_in_a_200_body_raises_status_error(
    chat: OpenRouter, fake: FakeOpenRouter
) -> None:
    fake.break_stream("provider crashed", code=502)
    with pytest.raises(UpstreamStatusError, match="provider crashed"):
        await chat(HELLO)


async def test_models_lists_the_endpoint_models(chat: OpenRouter) -> None:
    assert (await chat.models())["data"][0]["id"] == "fake/echo"


async def test_models_needs_no_key(fake: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    async with OpenRouter(transport=fake.transport()) as chat:
        assert "data" in await chat.models()


# Streams

STREAM_HELLO = {"messages": [{"role": "user", "content": "hello there"}]}


async def test_stream_yields_the_content_in_order(chat: OpenRouter) -> None:
    events = await _drain(chat, STREAM_HELLO)
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])
    assert text == "echo: hello there"


async def test_stream_sends_stream_true(chat: OpenRouter, fake: FakeOpenRouter) -> None:
    await _drain(chat, STREAM_HELLO)
    assert fake.chat_requests[0].json["stream"] is True


@pytest.mark.parametrize("shape", ["empty_choices", "empty_delta"])
async def test_stream_reads_usage_from_either_final_chunk_shape(shape: Any) -> None:
    fake = FakeOpenRouter(usage_chunk=shape)
    chat = OpenRouter(api_key=KEY, transport=fake.transport())
    async with chat, chat.stream(STREAM_HELLO) as events:
        [_ async for _ in events]
    assert (events.reply.prompt_tokens, events.reply.cost_usd) == (2, 0.0001)


async def test_stream_keeps_finish_reason_past_an_empty_delta_usage_chunk() -> None:
    fake = FakeOpenRouter(usage_chunk="empty_delta")
    chat = OpenRouter(api_key=KEY, transport=fake.transport())
    async with chat, chat.stream(STREAM_HELLO) as events:
        [_ async for _ in events]
    assert events.reply.finish_reason == "stop"


async def test_stream_without_usage_gives_none_fields(
    chat: OpenRouter, fake: FakeOpenRouter
) -> None:
    fake.answer(usage=False)
    async with chat.stream(STREAM_HELLO) as events:
        [_ async for _ in events]
    assert (events.reply.completion_tokens, events.reply.cost_usd) == (None, None)


async def test_stream_skips_comment_lines_between_events() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]}
    body = _sse(": OPENROUTER PROCESSING\n\n", chunk, ": OPENROUTER PROCESSING\n\n", chunk)
    async with OpenRouter(api_key=KEY, transport=_raw(body + b"data: [DONE]\n\n")) as chat:
        assert len(await _drain(chat, STREAM_HELLO)) == 2


async def test_stream_stops_at_done() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]}
    body = _sse(chunk, "data: [DONE]\n\n", "data: not json\n\n")
    async with OpenRouter(api_key=KEY, transport=_raw(body)) as chat:
        assert len(await _drain(chat, STREAM_HELLO)) == 1


async def test_stream_iterates_without_entering_first(chat: OpenRouter) -> None:
    events = [event async for event in chat.stream(STREAM_HELLO)]
    assert events[-1]["usage"]["cost"] == 0.0001


async def test_mid_stream_error_raises_status_error(chat: OpenRouter, fake: FakeOpenRouter) -> None:
    fake.break_stream("provider crashed", code=502)
    with pytest.raises(UpstreamStatusError, match="provider crashed"):
        await _drain(chat, STREAM_HELLO)


async def test_finish_reason_error_alone_raises_status_error() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}
    async with OpenRouter(api_key=KEY, transport=_raw(_sse(chunk))) as chat:
        with pytest.raises(UpstreamStatusError):
            await _drain(chat, STREAM_HELLO)


async def test_mid_stream_error_is_not_retried(chat: OpenRouter, fake: FakeOpenRouter) -> None:
    fake.break_stream()
    with pytest.raises(UpstreamStatusError):
        await _drain(chat, STREAM_HELLO)
    assert len(fake.chat_requests) == 1


async def test_stream_is_retried_before_the_first_byte(
    chat: OpenRouter, fake: FakeOpenRouter
) -> None:
    fake.fail(503)
    await _drain(chat, STREAM_HELLO)
    assert len(fake.chat_requests) == 2


async def test_stream_stalling_between_chunks_raises_timeout(fake: FakeOpenRouter) -> None:
    fake.answer(chunk_delay=5)
    async with OpenRouter(api_key=KEY, timeout=0.05, transport=fake.transport()) as chat:
        with pytest.raises(UpstreamTimeoutError):
            await _drain(chat, STREAM_HELLO)


# The same client over a real local HTTP server


async def test_call_over_a_real_local_server_answers(fake: FakeOpenRouter) -> None:
    with fake.serve_in_thread() as base_url:
        async with OpenRouter(api_key=KEY, base_url=base_url) as chat:
            assert (await chat(HELLO)).text == "echo: hello there"


async def test_slow_real_server_raises_upstream_timeout_error(fake: FakeOpenRouter) -> None:
    fake.answer(delay=5)
    with fake.serve_in_thread() as base_url:
        async with OpenRouter(api_key=KEY, base_url=base_url, timeout=0.1) as chat:
            with pytest.raises(UpstreamTimeoutError):
                await chat(HELLO)


async def test_stream_over_a_real_local_server_reads_usage(fake: FakeOpenRouter) -> None:
    fake.answer(chunk_delay=0.01)
    with fake.serve_in_thread() as base_url:
        chat = OpenRouter(api_key=KEY, base_url=base_url)
        async with chat, chat.stream(STREAM_HELLO) as events:
            [_ async for _ in events]
    assert (events.reply.text, events.reply.cost_usd) == ("echo: hello there", 0.0001)
