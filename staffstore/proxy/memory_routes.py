"""The proxy's scoped-state and workflow-memory endpoints, under /v1/staffstore/.

    GET    /v1/staffstore/scoped-state                  ?scope=&project=&workflow=&step=
    POST   /v1/staffstore/scoped-state/get              scope..., key (absent: present false)
    POST   /v1/staffstore/scoped-state/set              scope..., key, value[, by]
    POST   /v1/staffstore/scoped-state/delete           scope..., key
    GET    /v1/staffstore/workflows/{name}/memory       ?project=&step= every entry + section
    POST   /v1/staffstore/workflows/{name}/memory       {"body": ...}: a lesson by hand (201)
    DELETE /v1/staffstore/workflows/{name}/memory       ?project= : forget all of it
    GET    /v1/staffstore/workflows/{name}/memory/config  ?project=&step=
    PUT    /v1/staffstore/workflows/{name}/memory/config  enabled, budget, retain, include, ...
    POST   /v1/staffstore/workflows/{name}/runs         open a run (201)
    POST   /v1/staffstore/runs/{run_id}/remember        a lesson during the run
    POST   /v1/staffstore/runs/{run_id}/finish          status, outcome, steps, decisions
    GET    /v1/staffstore/memory/{id}                   one lesson, run record or digest
    PATCH  /v1/staffstore/memory/{id}                   {"body": ...}: rewrite its text
    DELETE /v1/staffstore/memory/{id}                   forget it

A workflow's project is `?project=` (or `project` in a body), `default` when neither names one.
The owner is always the caller's, from its key, admin keys included: no body or URL names
another, and another owner's id is not found (404). A body may carry `secrets`: values this
call must scrub (a run's own tokens), used for this call and never stored or logged; the
server also scrubs the secrets of its own environment (state.secrets). A refusal by a cap or a
setting (a full namespace, memory turned off) is 409 with the answer in the body. Every write
goes through the writer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import InputError, NotFoundError, StoreBusyError
from ..memory import (
    EffectiveMemory,
    HumanDecision,
    MemoryEntries,
    MemoryEntry,
    RunStep,
    WorkflowMemory,
)
from ..state.scoped import DEFAULT_PROJECT, ScopedState, ScopedWrite, ScopeRef
from ..state.secrets import Scrubber
from .state_routes import StateHost, body_as
from .wire import WireError, error_body

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound=BaseModel)

#: The most values one call may ask to scrub.
MAX_SECRETS = 64


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScopeBody(_Body):
    """A namespace: `scope` (step, workflow, project or global) and the names that place it."""

    scope: str
    project: str | None = None
    workflow: str | None = None
    step: str | None = None

    def ref(self) -> ScopeRef:
        return ScopeRef.named(
            self.scope, project=self.project, workflow=self.workflow, step=self.step
        )


class ScopedKeyBody(ScopeBody):
    key: str


class ScopedSetBody(ScopeBody):
    key: str
    value: str
    by: str | None = None


class _Secrets(_Body):
    #: Values to scrub from what this call stores; never stored themselves.
    secrets: list[str] = Field(default_factory=list, max_length=MAX_SECRETS)


class LessonBody(_Secrets):
    body: str
    project: str | None = None


class EditBody(_Secrets):
    body: str


class StartRunBody(_Secrets):
    project: str | None = None
    input: Any = None


class RememberBody(_Secrets):
    body: str
    step: str | None = None


class FinishBody(_Secrets):
    status: str
    outcome: str | None = None
    steps: list[RunStep] = Field(default_factory=list)
    decisions: list[HumanDecision] = Field(default_factory=list)


class MemoryConfigBody(_Body):
    project: str | None = None
    step: str | None = None
    enabled: bool | None = None
    budget: int | None = None
    retain: int | None = None
    include: list[str] | None = None
    digest_chars: int | None = None
    reset: bool = False


class MemoryRoutes:
    """The endpoints, bound to one proxy; `routes()` gives them to the Starlette app."""

    def __init__(self, host: StateHost, *, scrubber: Scrubber | None = None) -> None:
        self.host = host
        # The server's own environment: its secret variables are scrubbed from every write.
        self.scrubber = scrubber if scrubber is not None else Scrubber.from_env()

    def routes(self) -> list[Route]:
        base = "/v1/staffstore"
        flow = f"{base}/workflows/{{name}}"
        return [
            Route(f"{base}/scoped-state", self.scoped_list, methods=["GET"]),
            Route(f"{base}/scoped-state/get", self.scoped_get, methods=["POST"]),
            Route(f"{base}/scoped-state/set", self.scoped_set, methods=["POST"]),
            Route(f"{base}/scoped-state/delete", self.scoped_delete, methods=["POST"]),
            Route(f"{flow}/memory", self.memory, methods=["GET"]),
            Route(f"{flow}/memory", self.add_lesson, methods=["POST"]),
            Route(f"{flow}/memory", self.forget_all, methods=["DELETE"]),
            Route(f"{flow}/memory/config", self.settings, methods=["GET"]),
            Route(f"{flow}/memory/config", self.configure, methods=["PUT"]),
            Route(f"{flow}/runs", self.start_run, methods=["POST"]),
            Route(f"{base}/runs/{{run_id}}/remember", self.remember, methods=["POST"]),
            Route(f"{base}/runs/{{run_id}}/finish", self.finish_run, methods=["POST"]),
            Route(f"{base}/memory/{{entry_id}}", self.entry, methods=["GET"]),
            Route(f"{base}/memory/{{entry_id}}", self.edit, methods=["PATCH"]),
            Route(f"{base}/memory/{{entry_id}}", self.forget, methods=["DELETE"]),
        ]

    # -- plumbing --------------------------------------------------------------------------------

    async def _body(self, request: Request, model: type[ModelT]) -> ModelT:
        return await body_as(self.host, request, model)

    def _owner(self, request: Request) -> str:
        return self.host.authenticate(request).owner

    def _workflow(self, request: Request, project: str | None) -> WorkflowMemory:
        owner = self._owner(request)
        return _call(
            lambda: WorkflowMemory(
                self.host.store,
                owner,
                request.path_params["name"],
                project=project or DEFAULT_PROJECT,
                scrubber=self.scrubber,
            )
        )

    def _entries(self, request: Request) -> MemoryEntries:
        owner = self._owner(request)
        return _call(lambda: MemoryEntries(self.host.store, owner, scrubber=self.scrubber))

    def _scoped(self, request: Request) -> ScopedState:
        owner = self._owner(request)
        return _call(lambda: ScopedState(self.host.store, owner, scrubber=self.scrubber))

    async def _write(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run a write in the writer's turn, with the library's errors as HTTP errors."""
        return await _acall(lambda: self.host.writer.run(work))

    # -- scoped state ----------------------------------------------------------------------------

    async def scoped_list(self, request: Request) -> Response:
        state = self._scoped(request)
        query = request.query_params
        ref = _call(
            lambda: ScopeRef.named(
                query.get("scope", ""),
                project=query.get("project") or None,
                workflow=query.get("workflow") or None,
                step=query.get("step") or None,
            )
        )
        values = await _acall(lambda: state.list(ref))
        return JSONResponse(
            {"object": "list", "data": [value.model_dump(mode="json") for value in values]}
        )

    async def scoped_get(self, request: Request) -> Response:
        state = self._scoped(request)
        given = await self._body(request, ScopedKeyBody)
        value = await _acall(lambda: state.get(_call(given.ref), given.key))
        return JSONResponse({"object": "staffstore.scoped_value", **value.model_dump(mode="json")})

    async def scoped_set(self, request: Request) -> Response:
        state = self._scoped(request)
        given = await self._body(request, ScopedSetBody)
        ref = _call(given.ref)
        written = await self._write(lambda: state.set(ref, given.key, given.value, by=given.by))
        return _scoped_write(written)

    async def scoped_delete(self, request: Request) -> Response:
        state = self._scoped(request)
        given = await self._body(request, ScopedKeyBody)
        ref = _call(given.ref)
        written = await self._write(lambda: state.delete(ref, given.key))
        return _scoped_write(written)

    # -- a workflow's memory ---------------------------------------------------------------------

    async def memory(self, request: Request) -> Response:
        query = request.query_params
        memory = self._workflow(request, query.get("project"))
        step = query.get("step") or None

        async def read() -> tuple[Any, Any]:
            return await memory.section(step), await memory.view()

        section, view = await _acall(read)
        return JSONResponse(
            {"object": "staffstore.workflow_memory", **view.model_dump(mode="json"),
             "section": section.model_dump(mode="json")}
        )  # fmt: skip

    async def add_lesson(self, request: Request) -> Response:
        given = await self._body(request, LessonBody)
        memory = self._workflow(request, given.project or request.query_params.get("project"))
        lesson = await self._write(lambda: memory.add(given.body, secrets=given.secrets))
        return JSONResponse(
            {"object": "staffstore.lesson", **lesson.model_dump(mode="json")}, status_code=201
        )

    async def forget_all(self, request: Request) -> Response:
        memory = self._workflow(request, request.query_params.get("project"))
        gone = await self._write(memory.forget)
        return JSONResponse({"object": "staffstore.memory_forgotten", "forgotten": gone})

    async def settings(self, request: Request) -> Response:
        query = request.query_params
        memory = self._workflow(request, query.get("project"))
        found = await _acall(lambda: memory.settings(query.get("step") or None))
        return JSONResponse(
            {"object": "staffstore.memory_settings", **found.model_dump(mode="json")}
        )

    async def configure(self, request: Request) -> Response:
        given = await self._body(request, MemoryConfigBody)
        memory = self._workflow(request, given.project or request.query_params.get("project"))
        found = await self._write(
            lambda: memory.configure(
                step=given.step, enabled=given.enabled, budget=given.budget,
                retain=given.retain, include=given.include, digest_chars=given.digest_chars,
                reset=given.reset,
            )
        )  # fmt: skip
        return JSONResponse(
            {"object": "staffstore.memory_settings", **found.model_dump(mode="json")}
        )

    # -- runs ------------------------------------------------------------------------------------

    async def start_run(self, request: Request) -> Response:
        given = await self._body(request, StartRunBody)
        memory = self._workflow(request, given.project or request.query_params.get("project"))
        entries = self._entries(request)
        record = await self._write(
            lambda: entries.start(
                memory.workflow, memory.project, given.input, secrets=given.secrets
            )
        )
        return JSONResponse(
            {"object": "staffstore.run", **record.model_dump(mode="json")}, status_code=201
        )

    async def remember(self, request: Request) -> Response:
        entries = self._entries(request)
        given = await self._body(request, RememberBody)
        run_id = request.path_params["run_id"]
        found = await self._write(
            lambda: entries.remember(run_id, given.body, step=given.step, secrets=given.secrets)
        )
        body = {"object": "staffstore.remembered", **found.model_dump(mode="json")}
        if found.stored:
            return JSONResponse(body, status_code=201)
        where = "this step" if found.reason == "step_memory_off" else "this workflow"
        problem = error_body(
            f"memory is off for {where}", "invalid_request_error", code=found.reason
        )
        return JSONResponse({**problem, **body}, status_code=409)

    async def finish_run(self, request: Request) -> Response:
        entries = self._entries(request)
        given = await self._body(request, FinishBody)
        run_id = request.path_params["run_id"]
        finished = await self._write(
            lambda: entries.finish(
                run_id, given.status, outcome=given.outcome, steps=given.steps,
                decisions=given.decisions, secrets=given.secrets,
            )
        )  # fmt: skip
        return JSONResponse({"object": "staffstore.run_finish", **finished.model_dump(mode="json")})

    # -- entries by id ---------------------------------------------------------------------------

    async def entry(self, request: Request) -> Response:
        entries = self._entries(request)
        found = await _acall(lambda: entries.get(request.path_params["entry_id"]))
        return _entry(found)

    async def edit(self, request: Request) -> Response:
        entries = self._entries(request)
        given = await self._body(request, EditBody)
        entry_id = request.path_params["entry_id"]
        found = await self._write(lambda: entries.edit(entry_id, given.body, secrets=given.secrets))
        return _entry(found)

    async def forget(self, request: Request) -> Response:
        entries = self._entries(request)
        entry_id = request.path_params["entry_id"]
        found = await self._write(lambda: entries.forget(entry_id))
        return JSONResponse(
            {"object": "staffstore.memory_forgotten", "forgotten": 1,
             "entry": found.model_dump(mode="json")}
        )  # fmt: skip


def _settings(found: EffectiveMemory) -> Response:
    return JSONResponse({"object": "staffstore.memory_settings", **found.model_dump(mode="json")})


def _entry(entry: MemoryEntry) -> Response:
    return JSONResponse({"object": "staffstore.memory_entry", **entry.model_dump(mode="json")})


def _scoped_write(written: ScopedWrite) -> Response:
    """200 for a write; 404 for a key not there to delete; 409 for a full namespace."""
    body = {"object": "staffstore.scoped_state_write", **written.model_dump(mode="json")}
    if written.written:
        return JSONResponse(body)
    if written.reason == "not_found":
        problem = error_body(
            f"no key {written.entry.key!r} in that namespace", "not_found_error", code="not_found"
        )
        return JSONResponse({**problem, **body}, status_code=404)
    problem = error_body(
        "the namespace holds as many keys as it may: delete one first",
        "invalid_request_error", code="scoped_state_full",
    )  # fmt: skip
    return JSONResponse({**problem, **body}, status_code=409)


def _as_wire(error: Exception) -> WireError:
    if isinstance(error, NotFoundError):
        return WireError(404, str(error), error_type="not_found_error", code="not_found")
    if isinstance(error, StoreBusyError):
        problem = "the store is busy (locked by another process); try again shortly"
        return WireError(503, problem, error_type="server_error", code="store_busy")
    return WireError(400, str(error))


def _call(work: Callable[[], T]) -> T:
    try:
        return work()
    except (InputError, NotFoundError) as error:
        raise _as_wire(error) from None


async def _acall(work: Callable[[], Awaitable[T]]) -> T:
    try:
        return await work()
    except (InputError, NotFoundError, StoreBusyError) as error:
        raise _as_wire(error) from None
