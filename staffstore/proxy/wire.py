"""The OpenAI chat-completions wire format as the proxy reads and writes it; no HTTP in here.

`read_chat_request` turns a request body into a ChatRequest: the turn (the last user message),
the cache controls (LiteLLM's `cache` object), the working-set mode, the body to send upstream
(those two fields stripped) and the key an exact repeat is found by. `completion_body` and
`completion_events` write a stored answer as a `chat.completion` or as its SSE chunks, and
`error_body` writes OpenAI's error shape.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from ..errors import (
    InputError,
    MissingApiKeyError,
    UpstreamError,
    UpstreamStatusError,
    UpstreamTimeoutError,
)
from ..identity import content_hash
from ..state import strict_json
from ..state.checks import check_agent
from ..working_set.story import MAX_STORY_CHARS
from .config import WORKING_SET_MODES, WorkingSetMode

#: Body fields that shape how an answer travels or is cached, not what is asked: an exact
#: repeat ignores them, and `cache` and `staffstore` never go upstream.
_TRANSPORT_FIELDS = frozenset({"stream", "stream_options", "cache", "staffstore"})
#: Requests whose answer is not free text: a claim, which is text, cannot answer them.
_STRUCTURED_FIELDS = ("tools", "functions", "tool_choice", "response_format")
DONE_EVENT = b"data: [DONE]\n\n"
_CHUNK_WORDS = re.compile(r"(?:\S+\s*){1,8}|\s+")
#: The deepest nesting of arrays and objects a request may have (see state.strict_json).
MAX_DEPTH = strict_json.MAX_DEPTH
_BODY = "the request body"
#: The longest `ttl` or `s-maxage`, in seconds (100 years): beyond it a date overflows.
MAX_SECONDS = 100 * 365 * 24 * 3600


class WireError(Exception):
    """A request the proxy cannot serve as it is, with the HTTP status and OpenAI error fields."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.param = param
        self.code = code


@dataclass(frozen=True)
class CacheControls:
    """LiteLLM's per-request `cache` object: skip the lookup, store nothing, where, how old;
    and staffstore's own `no-paraphrase`: serve no kept answer for a reworded question."""

    no_cache: bool = False
    no_store: bool = False
    no_paraphrase: bool = False
    namespace: str = ""
    max_age: float | None = None  # "s-maxage": the oldest kept answer to accept, in seconds
    ttl: float | None = None  # how long a kept answer may serve, in seconds


#: The roles OpenAI's chat completions accept ("function" is its deprecated form of "tool").
MESSAGE_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion request, read: what was asked and how to serve it."""

    body: dict[str, Any]  # what goes upstream: the client's body less cache/staffstore
    turn: str | None  # the last message's text when it is the user's, else None
    model: str | None
    stream: bool
    include_usage: bool
    controls: CacheControls
    working_set: WorkingSetMode
    session: str
    request_hash: str
    #: Why claims cannot answer this request (tools, an image, ...), None when they may.
    claims_refused: str | None
    system: str | None  # the client's first system message, kept in a bounded working set
    #: The agent whose working state a bounded working set carries (None: the default agent).
    agent: str | None = None
    #: A bounded working set's role and per-part token budgets asked by this request
    #: (`staffstore.role`, `staffstore.budgets`), over the server's (ServeConfig.prompt_budget).
    role: str | None = None
    part_budgets: dict[str, int] | None = None
    #: The session's new story (`staffstore.story`), written before the turn is answered.
    story: str | None = None
    #: For a context-free request (see context_key), the hash of everything in it that
    #: changes the answer besides its one user message; None for any other request.
    context_key: str | None = None


def read_chat_request(
    raw: bytes,
    *,
    default_working_set: WorkingSetMode,
    working_set_header: str | None = None,
    session_header: str | None = None,
    agent_header: str | None = None,
    default_model: str | None = None,
) -> ChatRequest:
    """Read a request body, or raise WireError (400) saying which field is wrong.

    A body without `model` takes `default_model`; without one either, it is a 400, as OpenAI
    answers it (the upstream would otherwise pick a model, and a price, nobody chose).
    """
    body = read_json(raw)
    if not isinstance(body, dict):
        raise WireError(400, "the request body must be a JSON object", code="invalid_json")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise WireError(
            400, "messages must be a non-empty array", param="messages", code="missing_messages"
        )
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise WireError(
                400, f"messages[{number}] must be an object with a role", param="messages"
            )
        if message["role"] not in MESSAGE_ROLES:
            # Forwarded, it would be paid for only to be refused upstream, as OpenAI does.
            raise WireError(
                400,
                f"messages[{number}].role must be one of {', '.join(sorted(MESSAGE_ROLES))}",
                param=f"messages[{number}].role",
                code="invalid_role",
            )
    if body.get("model") is None and default_model is not None:
        body = {**body, "model": default_model}
    if "model" not in body or body["model"] is None:
        raise WireError(
            400,
            "model is required (or configure the proxy's default_model)",
            param="model",
            code="missing_model",
        )
    if not isinstance(body["model"], str) or not body["model"].strip():
        raise WireError(
            400, "model must be a non-empty string", param="model", code="invalid_model"
        )
    stream = body.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise WireError(400, "stream must be a boolean", param="stream")
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    extension = _object(body.get("staffstore"), "staffstore")
    mode = extension.get("working_set", working_set_header or default_working_set)
    if mode not in WORKING_SET_MODES:
        raise WireError(
            400,
            f"working_set must be one of {', '.join(WORKING_SET_MODES)}",
            param="staffstore.working_set",
        )
    session = extension.get("session", session_header)
    if session is not None and (not isinstance(session, str) or not session.strip()):
        raise WireError(400, "session must be a non-empty string", param="staffstore.session")
    agent = extension.get("agent", agent_header)
    if agent is not None:
        try:
            check_agent(agent)  # the one check of an agent's name, as the state endpoints use
        except InputError as error:
            raise WireError(400, str(error), param="staffstore.agent") from None
    role = extension.get("role")
    if role is not None and not isinstance(role, str):
        raise WireError(400, "role must be a string", param="staffstore.role")
    part_budgets = _object(extension.get("budgets"), "staffstore.budgets") or None
    if part_budgets is not None and not all(
        isinstance(v, int) and not isinstance(v, bool) for v in part_budgets.values()
    ):
        raise WireError(
            400, "budgets must map parts to whole numbers of tokens", param="staffstore.budgets"
        )
    story = extension.get("story")
    if story is not None and (
        not isinstance(story, str) or not story.strip() or len(story.strip()) > MAX_STORY_CHARS
    ):
        raise WireError(
            400,
            f"story must be a non-empty string of at most {MAX_STORY_CHARS} characters",
            param="staffstore.story",
        )
    controls = read_cache_controls(body.get("cache"))
    upstream = {k: v for k, v in body.items() if k not in ("cache", "staffstore")}
    asked = {k: v for k, v in body.items() if k not in _TRANSPORT_FIELDS}
    model = body.get("model")
    return ChatRequest(
        body=upstream,
        turn=_turn_text(messages),
        model=model if isinstance(model, str) and model else None,
        stream=bool(stream),
        include_usage=include_usage,
        controls=controls,
        working_set=mode,
        session=session.strip() if session else derived_session(messages),
        request_hash=content_hash({"request": asked, "working_set": mode}),
        claims_refused=_claims_refused(body, messages),
        system=_first_system(messages),
        agent=agent,
        role=role,
        part_budgets=part_budgets,
        story=story,
        context_key=context_key(body, messages, mode),
    )


def read_json(raw: bytes) -> Any:
    """Parse a request body as strict JSON (see state.strict_json), or raise WireError (400).

    Strict: UTF-8 only, no NaN or Infinity, no number too large for a float, nesting at most
    MAX_DEPTH deep, and no lone surrogate (`"\\ud800"`) in any string, which no UTF-8 text
    and so no database or upstream can hold (that one is `invalid_text`).
    """
    try:
        value = strict_json.loads(raw, _BODY)
    except InputError as error:
        raise WireError(400, str(error), code="invalid_json") from None
    # Only escapes make lone surrogates: a body without one was checked by its UTF-8 decoding.
    if b"\\u" in raw:
        try:
            strict_json.check_text(value, _BODY)
        except InputError as error:
            raise WireError(400, str(error), code="invalid_text") from None
    return value


#: The `cache` controls that are booleans.
_FLAGS = ("no-cache", "no-store", "no-paraphrase")


def read_cache_controls(value: Any) -> CacheControls:
    """Read LiteLLM's `cache` object: no-cache, no-store, namespace, s-maxage, ttl (and
    staffstore's no-paraphrase)."""
    given = _object(value, "cache")
    unknown = sorted(set(given) - {*_FLAGS, "namespace", "s-maxage", "ttl"})
    if unknown:
        raise WireError(400, f"unknown cache control(s): {', '.join(unknown)}", param="cache")
    for flag in _FLAGS:
        if not isinstance(given.get(flag, False), bool):
            raise WireError(400, f"cache.{flag} must be a boolean", param=f"cache.{flag}")
    namespace = given.get("namespace", "")
    if not isinstance(namespace, str):
        raise WireError(400, "cache.namespace must be a string", param="cache.namespace")
    return CacheControls(
        no_cache=given.get("no-cache", False),
        no_store=given.get("no-store", False),
        no_paraphrase=given.get("no-paraphrase", False),
        namespace=namespace,
        max_age=_seconds(given.get("s-maxage"), "s-maxage"),
        ttl=_seconds(given.get("ttl"), "ttl"),
    )


def context_key(body: dict[str, Any], messages: list[Any], mode: WorkingSetMode) -> str | None:
    """The context key of a context-free request, else None.

    Context-free: one user message of text, perhaps after system or developer messages of
    text, and no other message; a request claims may answer (no tools, response format or
    several choices); forwarded as sent (a bounded working set carries the session, its story
    and the agent's working state, so its prompt is never context-free). The key hashes every
    body field but the messages and the transport and cache fields (model, temperature, top_p,
    seed, max_tokens, user, ...), the system messages as sent, and the user message's fields
    other than its text: a prompt asked under another key is asked under other conditions.
    """
    if mode != "forward" or _claims_refused(body, messages) is not None:
        return None
    *before, last = messages
    if any(m.get("role") not in ("system", "developer") for m in before):
        return None
    if any(message_text(m.get("content")) is None for m in before):
        return None
    fields = {k: v for k, v in body.items() if k not in _TRANSPORT_FIELDS and k != "messages"}
    user = {k: v for k, v in last.items() if k != "content"}
    return content_hash({"context_free": {"fields": fields, "system": before, "user": user}})


def derived_session(messages: list[Any]) -> str:
    """A session name for a client that sends none: a hash of the messages up to the first
    user message, so every request of one conversation lands in the same session."""
    opening: list[Any] = []
    for message in messages:
        opening.append(message)
        if message.get("role") == "user":
            break
    return "auto-" + content_hash(opening, length=16)


def message_text(content: Any) -> str | None:
    """A message's text: a string as is, text parts joined; None when it holds anything else."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts: list[str] = []
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "text":
            return None
        text = part.get("text")
        if not isinstance(text, str):
            return None
        parts.append(text)
    return "".join(parts)


def _turn_text(messages: list[Any]) -> str | None:
    last = messages[-1]
    return message_text(last.get("content")) if last.get("role") == "user" else None


def _first_system(messages: list[Any]) -> str | None:
    for message in messages:
        if message.get("role") in ("system", "developer"):
            return message_text(message.get("content"))
    return None


def _claims_refused(body: dict[str, Any], messages: list[Any]) -> str | None:
    if messages[-1].get("role") != "user":
        return "not_a_user_turn"
    if message_text(messages[-1].get("content")) is None:
        return "not_text"
    if any(body.get(name) for name in _STRUCTURED_FIELDS):
        return "structured_request"
    n = body.get("n")
    if isinstance(n, int) and n > 1:
        return "structured_request"
    return None


def _object(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise WireError(400, f"{name} must be an object", param=name)
    return value


def _seconds(value: Any, name: str) -> float | None:
    if value is None:
        return None
    param = f"cache.{name}"
    # No float() before the range check: an integer of 400 digits overflows it.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireError(400, f"{param} must be a number of seconds", param=param)
    if isinstance(value, float) and not math.isfinite(value):
        raise WireError(400, f"{param} must be a number of seconds", param=param)
    if value < 0:
        raise WireError(400, f"{param} must not be negative", param=param)
    if value > MAX_SECONDS:
        raise WireError(400, f"{param} must be at most {MAX_SECONDS} seconds", param=param)
    return float(value)


# -- writing -----------------------------------------------------------------------------------


def completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def zero_usage() -> dict[str, int]:
    """The usage of an answer served from the store: no tokens were spent on it."""
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def completion_body(answer: str, model: str) -> dict[str, Any]:
    """A `chat.completion` carrying a stored answer, as OpenAI's API would write it."""
    return {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": zero_usage(),
    }


def completion_events(answer: str, model: str, *, include_usage: bool) -> bytes:
    """A stored answer as a whole SSE stream: role, content chunks, finish, usage?, [DONE]."""
    base = {
        "id": completion_id(),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse_event({**base, "choices": [choice]})

    pieces = [chunk({"role": "assistant", "content": ""})]
    pieces += [chunk({"content": text}) for text in _CHUNK_WORDS.findall(answer)]
    pieces.append(chunk({}, "stop"))
    if include_usage:
        pieces.append(sse_event({**base, "choices": [], "usage": zero_usage()}))
    pieces.append(DONE_EVENT)
    return b"".join(pieces)


def sse_event(obj: dict[str, Any]) -> bytes:
    """One server-sent event carrying `obj` as JSON."""
    return b"data: " + json_bytes(obj) + b"\n\n"


def json_bytes(obj: Any) -> bytes:
    """`obj` as JSON in UTF-8, whatever an upstream put in it: a lone surrogate or a NaN that
    a provider sent is passed on escaped, as JSON allows, rather than failing the answer."""
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        return json.dumps(obj, ensure_ascii=True).encode("ascii")


def error_body(
    message: str,
    error_type: str,
    *,
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """OpenAI's error shape: `{"error": {"message", "type", "param", "code"}}`; `code` is a
    string or null there, never a number."""
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def status_code_name(status: int) -> str:
    """An HTTP status as an error code string: 404 -> "not_found"."""
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return f"http_{status}"


#: OpenAI's error types by HTTP status, for errors that do not name their own.
STATUS_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "insufficient_quota",
    403: "permission_error", 404: "not_found_error", 413: "invalid_request_error",
    422: "invalid_request_error", 429: "rate_limit_error",
}  # fmt: skip


def upstream_failure(error: UpstreamError) -> tuple[int, str, str | None, str | None]:
    """(HTTP status, error type, code, x-should-retry) for an upstream failure.

    A retry is refused wherever the call was sent and may have been billed, or where the
    proxy's own client already retried what was safe; a missing key never heals by retrying.
    Only a connection that failed before anything was sent (502) is left to the client.
    The message is the caller's to choose: see Proxy.tenant_message.
    """
    if isinstance(error, MissingApiKeyError):
        return 503, "server_error", "upstream_key_missing", "false"
    if isinstance(error, UpstreamTimeoutError):
        return 504, "upstream_error", "upstream_timeout", "false"
    if isinstance(error, UpstreamStatusError):
        error_type = error.error_type or STATUS_TYPES.get(error.status_code, "upstream_error")
        # Providers send numeric codes too (OpenRouter: `"code": 429`); OpenAI's are strings.
        code = str(error.code) if error.code is not None else None
        return error.status_code, error_type, code, "false"
    # A connection that failed before anything was sent may be retried; one that failed
    # after the request left may have been billed.
    return 502, "upstream_error", "upstream_unreachable", "false" if error.attempted else None
