"""The fake upstream speaks OpenRouter's wire format: the official `openai` SDK can talk to it."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from staffstore.testing import FakeOpenRouter

KEY = "sk-or-v1-fake-key"
HI = [{"role": "user", "content": "what is staffstore"}]


@pytest.fixture
def fake() -> FakeOpenRouter:
    return FakeOpenRouter(api_key=KEY, model="fake/model")


@pytest.fixture
def sdk(fake: FakeOpenRouter) -> Iterator[openai.OpenAI]:
    with fake.serve_in_thread() as base_url:
        client = openai.OpenAI(api_key=KEY, base_url=base_url, max_retries=0, timeout=5)
        yield client
        client.close()


def test_sdk_reads_the_default_echo_answer(sdk: openai.OpenAI) -> None:
    completion = sdk.chat.completions.create(model="any/model", messages=HI)  # type: ignore[arg-type]
    assert completion.choices[0].message.content == "echo: what is staffstore"


def test_sdk_reads_the_usage_cost(sdk: openai.OpenAI) -> None:
    completion = sdk.chat.completions.create(model="any/model", messages=HI)  # type: ignore[arg-type]
    assert completion.usage is not None
    assert (completion.usage.total_tokens, getattr(completion.usage, "cost", None)) == (7, 0.0001)


def test_sdk_reads_a_stream_with_usage(sdk: openai.OpenAI) -> None:
    stream = sdk.chat.completions.create(model="any/model", messages=HI, stream=True)  # type: ignore[call-overload]
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert (text, chunks[-1].usage.completion_tokens) == ("echo: what is staffstore", 4)


def test_sdk_raises_on_a_mid_stream_error(sdk: openai.OpenAI, fake: FakeOpenRouter) -> None:
    fake.break_stream("provider fell over")
    stream = sdk.chat.completions.create(model="any/model", messages=HI, stream=True)  # type: ignore[call-overload]
    with pytest.raises(openai.APIError, match="provider fell over"):
        list(stream)


def test_sdk_sees_a_scripted_429_with_retry_after(sdk: openai.OpenAI, fake: FakeOpenRouter) -> None:
    fake.fail(429, "slow down", retry_after=3)
    with pytest.raises(openai.RateLimitError) as caught:
        sdk.chat.completions.create(model="any/model", messages=HI)  # type: ignore[arg-type]
    assert caught.value.response.headers["retry-after"] == "3"


def test_wrong_key_gets_401(fake: FakeOpenRouter) -> None:
    with fake.serve_in_thread() as base_url:
        client = openai.OpenAI(api_key="sk-wrong", base_url=base_url, max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model="any/model", messages=HI)  # type: ignore[arg-type]


def test_sdk_lists_the_fake_models(sdk: openai.OpenAI) -> None:
    assert [m.id for m in sdk.models.list()] == ["fake/model"]


def test_fake_records_the_key_the_sdk_sent(sdk: openai.OpenAI, fake: FakeOpenRouter) -> None:
    sdk.chat.completions.create(model="any/model", messages=HI)  # type: ignore[arg-type]
    assert fake.chat_requests[0].bearer == KEY


def test_fake_answers_under_its_configured_model(sdk: openai.OpenAI) -> None:
    completion = sdk.chat.completions.create(model="any/model", messages=HI)  # type: ignore[arg-type]
    assert completion.model == "fake/model"


def test_scripted_answers_are_used_in_order(sdk: openai.OpenAI, fake: FakeOpenRouter) -> None:
    fake.answer("first")
    fake.answer("second")
    texts = [
        sdk.chat.completions.create(model="m", messages=HI).choices[0].message.content  # type: ignore[arg-type]
        for _ in range(3)
    ]
    assert texts == ["first", "second", "echo: what is staffstore"]


def test_empty_delta_usage_chunk_is_read_by_the_sdk(fake: FakeOpenRouter) -> None:
    fake.usage_chunk = "empty_delta"
    with fake.serve_in_thread() as base_url:
        client = openai.OpenAI(api_key=KEY, base_url=base_url, max_retries=0)
        chunks = list(client.chat.completions.create(model="m", messages=HI, stream=True))  # type: ignore[call-overload]
    assert chunks[-1].usage.prompt_tokens == 3
