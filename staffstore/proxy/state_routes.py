"""The proxy's working-state and agent-state endpoints, under /v1/staffstore/.

    GET  /v1/staffstore/state/{agent}               keys (expired marked), handoff, history
    GET  /v1/staffstore/state/{agent}/section       the section its prompts carry now
    POST /v1/staffstore/state/{agent}/set           key, value, reason[, ttl_hours,
                                                    expected_value]
    POST /v1/staffstore/state/{agent}/clear         key, reason
    POST /v1/staffstore/state/{agent}/handoff       note[, status, next_steps, evidence, blocker]
    PUT  /v1/staffstore/agent-state/schemas/{agent} the schema document
    GET  /v1/staffstore/agent-state/schemas/{agent}
    PUT  /v1/staffstore/agent-state                 agent, scope, body[, mode, if_version,
                                                    subject]
    POST /v1/staffstore/agent-state/read            agent, scope[, mask_pii]
    GET  /v1/staffstore/agent-state                 sizes, versions and dates, never content
    POST /v1/staffstore/agent-state/export          subject
    POST /v1/staffstore/agent-state/erase           subject, or scope
    POST /v1/staffstore/agent-state/sweep

The owner is always the caller's, from its key, admin keys included: no body or URL names
another. A failed compare-and-swap is 412 (`working_state_conflict` with the current value,
`agent_state_conflict` with the current version); a new key at the cap is 409 with the keys.
Scopes and subjects travel in bodies, never in a URL. Every write goes through the writer.
A schema arrives as a JSON object, never as a path: the server reads no file a caller names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import InputError, MissingScopeKeyError, StoreBusyError
from ..state import AgentState, Scope, StateWrite, WorkingState
from ..state.checks import MAX_HISTORY
from ..state.config import StateConfig
from ..store import StaffStore
from .wire import WireError, error_body, read_json
from .writer import Writer

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound=BaseModel)


class _Caller(Protocol):
    @property
    def owner(self) -> str: ...


class StateHost(Protocol):
    """What the endpoints need of the proxy: who asks, the body, the store and its writer."""

    @property
    def store(self) -> StaffStore: ...

    @property
    def writer(self) -> Writer: ...

    def authenticate(self, request: Request) -> _Caller: ...

    async def read_body(self, request: Request) -> bytes: ...


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SetKeyBody(_Body):
    key: str
    value: str
    reason: str
    ttl_hours: float | None = None
    expected_value: str | None = None
    by: str | None = None


class ClearKeyBody(_Body):
    key: str
    reason: str
    by: str | None = None


class HandoffBody(_Body):
    note: str | None = None
    status: str | None = None
    next_steps: str | None = None
    evidence: str | None = None
    blocker: str | None = None
    by: str | None = None


class AgentStatePutBody(_Body):
    agent: str
    scope: Scope
    body: dict[str, Any]
    mode: Literal["cas", "merge_by_key"] = "merge_by_key"
    if_version: int | None = Field(default=None, ge=0)
    subject: str | None = None


class AgentStateReadBody(_Body):
    agent: str
    scope: Scope
    mask_pii: bool = False


class SubjectBody(_Body):
    subject: str


class EraseBody(_Body):
    subject: str | None = None
    scope: Scope | None = None


def _problem(error: ValidationError) -> str:
    # Field and rule only: a refused value (a secret, perhaps) is never repeated.
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or 'body'}: {e['msg']}" for e in error.errors()
    )


async def body_as(host: StateHost, request: Request, model: type[ModelT]) -> ModelT:
    """The request's body, a JSON object, as `model`; else a 400 in OpenAI's error shape."""
    given = read_json(await host.read_body(request))
    if not isinstance(given, dict):
        raise WireError(400, "the request body must be a JSON object", code="invalid_json")
    try:
        return model.model_validate(given)
    except ValidationError as error:
        raise WireError(400, f"invalid request: {_problem(error)}") from None


class StateRoutes:
    """The endpoints, bound to one proxy; `routes()` gives them to the Starlette app."""

    def __init__(self, host: StateHost, *, scope_key: bytes | None, config: StateConfig) -> None:
        self.host = host
        self.scope_key = scope_key
        self.config = config

    def routes(self) -> list[Route]:
        base = "/v1/staffstore"
        return [
            Route(f"{base}/state/{{agent}}", self.get_state, methods=["GET"]),
            Route(f"{base}/state/{{agent}}/section", self.section, methods=["GET"]),
            Route(f"{base}/state/{{agent}}/set", self.set_key, methods=["POST"]),
            Route(f"{base}/state/{{agent}}/clear", self.clear_key, methods=["POST"]),
            Route(f"{base}/state/{{agent}}/handoff", self.handoff, methods=["POST"]),
            Route(f"{base}/agent-state/schemas/{{agent}}", self.declare, methods=["PUT"]),
            Route(f"{base}/agent-state/schemas/{{agent}}", self.schema, methods=["GET"]),
            Route(f"{base}/agent-state", self.put, methods=["PUT"]),
            Route(f"{base}/agent-state", self.list_states, methods=["GET"]),
            Route(f"{base}/agent-state/read", self.read, methods=["POST"]),
            Route(f"{base}/agent-state/export", self.export, methods=["POST"]),
            Route(f"{base}/agent-state/erase", self.erase, methods=["POST"]),
            Route(f"{base}/agent-state/sweep", self.sweep, methods=["POST"]),
        ]

    # -- plumbing --------------------------------------------------------------------------------

    async def _body(self, request: Request, model: type[ModelT]) -> ModelT:
        return await body_as(self.host, request, model)

    def _working(self, request: Request) -> WorkingState:
        owner = self.host.authenticate(request).owner
        return _call(
            lambda: WorkingState(
                self.host.store, owner, request.path_params["agent"], config=self.config
            )
        )

    def _agent_states(self, request: Request) -> AgentState:
        owner = self.host.authenticate(request).owner
        return AgentState(self.host.store, owner, scope_key=self.scope_key)

    async def _write(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run a write in the writer's turn, with the library's errors as HTTP errors."""
        return await _acall(lambda: self.host.writer.run(work))

    # -- working state ---------------------------------------------------------------------------

    async def get_state(self, request: Request) -> Response:
        state = self._working(request)
        history = _history(request.query_params.get("history"))
        view = await _acall(lambda: state.get(history=history))
        return JSONResponse({"object": "staffstore.working_state", **view.model_dump(mode="json")})

    async def section(self, request: Request) -> Response:
        state = self._working(request)
        text = await _acall(state.section)
        return JSONResponse(
            {"object": "staffstore.working_state_section", "section": text,
             "bytes": len(text.encode("utf-8"))}
        )  # fmt: skip

    async def set_key(self, request: Request) -> Response:
        state = self._working(request)
        given = await self._body(request, SetKeyBody)
        written: StateWrite = await self._write(
            lambda: state.set(
                given.key, given.value, given.reason, ttl_hours=given.ttl_hours,
                expected_value=given.expected_value, by=given.by,
            )
        )  # fmt: skip
        return _state_write(written)

    async def clear_key(self, request: Request) -> Response:
        state = self._working(request)
        given = await self._body(request, ClearKeyBody)
        written: StateWrite = await self._write(
            lambda: state.clear(given.key, given.reason, by=given.by)
        )
        return _state_write(written)

    async def handoff(self, request: Request) -> Response:
        state = self._working(request)
        given = await self._body(request, HandoffBody)
        stored = await self._write(
            lambda: state.handoff(
                given.note, status=given.status, next_steps=given.next_steps,
                evidence=given.evidence, blocker=given.blocker, by=given.by,
            )
        )  # fmt: skip
        return JSONResponse({"object": "staffstore.handoff", **stored.model_dump(mode="json")})

    # -- agent state -----------------------------------------------------------------------------

    async def declare(self, request: Request) -> Response:
        states = self._agent_states(request)
        document = read_json(await self.host.read_body(request))
        if not isinstance(document, dict):
            # A string is never taken for a file path here: the CLI reads files, not the server.
            raise WireError(400, "a schema is a JSON object (a document, not a file path)")
        agent = request.path_params["agent"]
        declared = await self._write(lambda: states.declare(agent, document))
        return JSONResponse(
            {"object": "staffstore.agent_state_schema", "agent": agent,
             **declared.model_dump(mode="json")}
        )  # fmt: skip

    async def schema(self, request: Request) -> Response:
        states = self._agent_states(request)
        agent = request.path_params["agent"]
        declared = await _acall(lambda: states.schema(agent))
        if declared is None:
            raise WireError(
                404, f"no schema declared for agent {agent!r}", error_type="not_found_error"
            )
        return JSONResponse(
            {"object": "staffstore.agent_state_schema", "agent": agent,
             **declared.model_dump(mode="json")}
        )  # fmt: skip

    async def put(self, request: Request) -> Response:
        states = self._agent_states(request)
        given = await self._body(request, AgentStatePutBody)
        written = await self._write(
            lambda: states.put(
                given.agent, given.scope, given.body, mode=given.mode,
                if_version=given.if_version, subject=given.subject,
            )
        )  # fmt: skip
        body = {"object": "staffstore.agent_state_write", **written.model_dump(mode="json")}
        if written.reason == "conflict":
            message = f"the state is at version {written.version}, not {given.if_version}"
            problem = error_body(message, "invalid_request_error", code="agent_state_conflict")
            return JSONResponse({**problem, **body}, status_code=412)
        return JSONResponse(body)

    async def read(self, request: Request) -> Response:
        states = self._agent_states(request)
        given = await self._body(request, AgentStateReadBody)
        state = await _acall(lambda: states.read(given.agent, given.scope, mask_pii=given.mask_pii))
        return JSONResponse({"object": "staffstore.agent_state", **state.model_dump(mode="json")})

    async def list_states(self, request: Request) -> Response:
        states = self._agent_states(request)
        agent = request.query_params.get("agent") or None
        infos = await _acall(lambda: states.list(agent))
        return JSONResponse(
            {"object": "list", "data": [info.model_dump(mode="json") for info in infos]}
        )

    async def export(self, request: Request) -> Response:
        states = self._agent_states(request)
        given = await self._body(request, SubjectBody)
        return JSONResponse(await _acall(lambda: states.export(given.subject)))

    async def erase(self, request: Request) -> Response:
        states = self._agent_states(request)
        given = await self._body(request, EraseBody)
        proof = await self._write(lambda: states.erase(subject=given.subject, scope=given.scope))
        return JSONResponse(
            {"object": "staffstore.agent_state_erasure", **proof.model_dump(mode="json")}
        )

    async def sweep(self, request: Request) -> Response:
        states = self._agent_states(request)
        report = await self._write(states.sweep)
        return JSONResponse({"object": "staffstore.agent_state_sweep", **report.model_dump()})


def _history(raw: str | None) -> int | None:
    """`?history=`: None when absent or empty, else a plain number (the library checks its
    range). isdigit() alone would pass "²", which int() refuses, and 5,000 digits, which
    int() refuses past 4,300."""
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > len(str(MAX_HISTORY)):
        raise WireError(
            400, f"history must be a whole number from 0 to {MAX_HISTORY}", param="history"
        )
    return int(raw)


def _state_write(written: StateWrite) -> Response:
    """200 for a write; 412 for a compare-and-swap that found another value; 409 at the cap."""
    body = {"object": "staffstore.working_state_write", **written.model_dump(mode="json")}
    if written.written:
        return JSONResponse(body)
    if written.reason == "conflict":
        current = "absent" if written.value is None else repr(written.value)
        message = f"{written.key} is {current}, not the expected value; nothing was written"
        status, code = 412, "working_state_conflict"
    elif written.reason == "at_cap":
        message = f"{len(written.keys)} live keys is the cap: clear one or reuse an existing key"
        status, code = 409, "working_state_full"
    else:
        message = f"no key {written.key!r} to clear"
        status, code = 404, "not_found"
    error_type = "not_found_error" if status == 404 else "invalid_request_error"
    return JSONResponse({**error_body(message, error_type, code=code), **body}, status_code=status)


def _as_wire(error: Exception) -> WireError:
    if isinstance(error, MissingScopeKeyError):
        return WireError(
            503, "agent state is not set up on this server (no scope key)",
            error_type="server_error", code="agent_state_unavailable",
        )  # fmt: skip
    return WireError(400, str(error))


def _busy() -> WireError:
    problem = "the store is busy (locked by another process); try again shortly"
    return WireError(503, problem, error_type="server_error", code="store_busy")


def _call(work: Callable[[], T]) -> T:
    try:
        return work()
    except InputError as error:
        raise _as_wire(error) from None


async def _acall(work: Callable[[], Awaitable[T]]) -> T:
    try:
        return await work()
    except InputError as error:
        raise _as_wire(error) from None
    except StoreBusyError:
        raise _busy() from None
