"""Property tests of the proxy's request parser and cache controls, alone and through a real
server: whatever the body, never a 500 and never a traceback, an OpenAI-shaped error for a
4xx, and a receipt for every request of a known owner."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_proxy_support import Server, running_proxy

from staffstore.models import utcnow
from staffstore.proxy.wire import WireError, read_cache_controls, read_chat_request

# Every code point, lone surrogates included (JSON's \u escapes can carry them), and the
# strings that broke the proxy before, which uniform code points would rarely draw.
_TEXT = st.text(
    st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
) | st.sampled_from(["\ud800", "a\udfffb", "\udc00\ud800", "", " ", "\x00", "what is x\u00b2?"])
_NUMBERS = (
    st.integers()
    | st.integers(min_value=10**300, max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True)
)
_SCALARS = st.none() | st.booleans() | _NUMBERS | _TEXT
_JSON = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=20,
)
_CONTROLS = st.dictionaries(
    st.sampled_from(["no-cache", "no-store", "namespace", "s-maxage", "ttl", "other"]),
    _SCALARS,
    max_size=4,
)
_CONTENT = _TEXT | st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url"]), "text": _SCALARS}),
    max_size=3,
)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "system", "assistant", "tool"]) | _SCALARS},
    optional={"content": _CONTENT | _JSON, "name": _TEXT},
)
_BODY = st.fixed_dictionaries(
    {"messages": st.lists(_MESSAGE, max_size=3) | _JSON},
    optional={
        "model": _TEXT | _SCALARS,
        "stream": st.booleans() | _SCALARS,
        "cache": _CONTROLS | _JSON,
        "staffstore": st.fixed_dictionaries(
            {}, optional={"working_set": _TEXT | st.just("bounded"), "session": _SCALARS}
        )
        | _JSON,
        "n": _NUMBERS,
        "temperature": _NUMBERS,
        "tools": _JSON,
        "stream_options": _JSON,
        "metadata": _JSON,
    },
)


def _encode(body: Any) -> bytes:
    """JSON as a careless or hostile client writes it: NaN, Infinity and lone surrogates too."""
    return json.dumps(body, allow_nan=True).encode()


# Mostly bodies shaped like a chat request, which reach the paths after the parser.
_RAW = st.one_of(
    _BODY.map(_encode), _BODY.map(_encode), _BODY.map(_encode),
    _JSON.map(_encode), st.binary(max_size=200),
)  # fmt: skip


@given(_RAW)
@settings(max_examples=300, deadline=None)
def test_the_parser_reads_a_request_or_raises_a_4xx_wire_error(raw: bytes) -> None:
    try:
        chat = read_chat_request(raw, default_working_set="forward")
    except WireError as problem:
        assert 400 <= problem.status < 500 and problem.message
        json.dumps(problem.message, allow_nan=False).encode("utf-8")  # storable, sendable
        return
    # What was accepted can be hashed, sent and stored: strict JSON, UTF-8, dates that fit.
    json.dumps(chat.body, allow_nan=False, ensure_ascii=False).encode("utf-8")
    _dates_fit(chat.controls.ttl, chat.controls.max_age)


@given(_CONTROLS | _JSON)
@settings(max_examples=300, deadline=None)
def test_cache_controls_are_read_or_refused_with_a_400(value: Any) -> None:
    try:
        controls = read_cache_controls(value)
    except WireError as problem:
        assert problem.status == 400 and (problem.param or "").startswith("cache")
        return
    _dates_fit(controls.ttl, controls.max_age)


def _dates_fit(*durations: float | None) -> None:
    """A kept answer's expiry and age limit are dates: an accepted control must make one."""
    now = utcnow()
    for seconds in durations:
        if seconds is not None:
            assert (now + timedelta(seconds=seconds)) - now == timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_proxy(tmp_path_factory.mktemp("properties") / "proxy.db") as running:
        yield running


@given(raw=_RAW)
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_the_server_never_answers_500_and_always_leaves_a_receipt(
    server: Server, raw: bytes
) -> None:
    response = server.post(raw)
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text
    receipt_id = response.headers["x-staffstore-receipt"]
    if response.status_code >= 400:
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
    deadline = time.monotonic() + 5
    while True:  # a stream's receipt may land a moment after its last byte
        try:
            receipt = server.receipt("alice", receipt_id)
            break
        except Exception:
            assert time.monotonic() < deadline, f"no receipt {receipt_id}"
            time.sleep(0.02)
    assert receipt.owner == "alice"
