"""The proxy's OpenAPI 3.1 document (GET /openapi.json), generated from the pydantic models its
endpoints read requests with and answer from.

OPERATIONS has one entry per route: method, path, the model its body is validated with, the
model it answers from (as the endpoint shows it: the `object` field it adds, fields it hides)
and the statuses of its errors, which all have OpenAI's error shape. The schemas themselves
come from pydantic (`models_json_schema`), so a field added to a model appears here by itself;
tests/test_openapi.py walks the app's route table, so a route added without an entry here fails.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from ..jobs import Dispatch
from ..memory import (
    EffectiveMemory,
    Lesson,
    MemoryEntry,
    MemorySection,
    MemoryView,
    Remembered,
    RunFinish,
    RunRecord,
)
from ..models import Claim, Job, JobLedger, Ledger, NewClaim
from ..state import AgentStateSchema, ScopedValue, ScopedWrite
from ..state.models import (
    AgentStateInfo,
    AgentStateRead,
    AgentStateWrite,
    ErasureProof,
    Handoff,
    StateWrite,
    SweepReport,
    WorkingStateView,
)
from .bodies import PromoteBody
from .jobs import PRIVATE_JOB_FIELDS, DispatchBody
from .memory_routes import (
    EditBody,
    FinishBody,
    LessonBody,
    MemoryConfigBody,
    RememberBody,
    ScopedKeyBody,
    ScopedSetBody,
    StartRunBody,
)
from .state_routes import (
    AgentStatePutBody,
    AgentStateReadBody,
    ClearKeyBody,
    EraseBody,
    HandoffBody,
    SetKeyBody,
    SubjectBody,
)

_REF_TEMPLATE = "#/components/schemas/{model}"


class ErrorDetail(BaseModel):
    """What went wrong, in OpenAI's fields; never a key or the upstream's address."""

    message: str
    type: str
    param: str | None
    code: str | None


class ErrorResponse(BaseModel):
    """Every error the proxy answers with: OpenAI's shape, `{"error": {...}}`."""

    error: ErrorDetail


@dataclass(frozen=True)
class View:
    """A model as an endpoint shows it: the `object` it names, fields it adds (a name to a
    shape, replacing a field of that name), fields it hides, fields a caller may leave out."""

    model: type[BaseModel] | None
    object: str | None = None
    add: Mapping[str, Shape] = field(default_factory=dict)
    drop: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ListOf:
    """`{"object": "list", "data": [...]}`, as OpenAI lists things."""

    item: Shape


@dataclass(frozen=True)
class OneOf:
    """A body that is one of several shapes."""

    shapes: tuple[Shape, ...]


#: A JSON Schema: a model, a View, a list, a choice, or a literal JSON Schema fragment.
Shape = type[BaseModel] | View | ListOf | OneOf | dict[str, Any]

Auth = Literal["client", "admin", "metrics", "none"]


@dataclass(frozen=True)
class Operation:
    """One route: what it takes, what it answers, how it fails, who may call it."""

    method: str
    path: str
    summary: str
    reply: Shape
    body: Shape | None = None
    status: int = 200
    errors: tuple[int, ...] = ()
    auth: Auth = "client"
    query: Mapping[str, str] = field(default_factory=dict)  # name -> description
    headers: tuple[str, ...] = ()  # response headers it sets


_OBJECT = {"type": "object", "additionalProperties": True}
_JOB_VIEW = View(Job, "staffstore.job", drop=PRIVATE_JOB_FIELDS)
_LEDGER = View(
    Ledger,
    "staffstore.ledger",
    add={
        "owner": {"type": "string"},
        "avoidance": {
            "anyOf": [{"type": "number"}, {"type": "null"}],
            "description": "Hits over turns; null before any turn.",
        },
        "jobs": View(JobLedger, add={"jobs_avoided": {"type": "integer"}}),
    },
)
_TURN_HEADERS = ("X-Staffstore-Outcome", "X-Staffstore-Reason", "X-Staffstore-Receipt")
_ERRORS: dict[int, str] = {
    400: "Bad input: not JSON, a field missing or of the wrong type, another owner named.",
    401: "No key, or a key no owner has.",
    403: "The key may not do this (an admin key is needed, or the feature is off).",
    404: "Not found among the caller's own (another owner's is not found either).",
    408: "The request body did not arrive in time.",
    409: "A cap or a setting refused the write (the working state's cap of live keys, a full "
    "scoped-state namespace, memory turned off); the body says which.",
    412: "A compare-and-swap found another value or version; the body holds the current one.",
    413: "The request body is larger than the server accepts.",
    429: "The owner's storage quota is used up, or (a job dispatch) as many of its jobs, or of "
    "all owners' jobs, run as the server allows.",
    500: "A fault in staffstore; the message says nothing of the request.",
    502: "The upstream model endpoint failed.",
    503: "The store is busy (locked by another process), or a needed key is not configured.",
    504: "The upstream model endpoint did not answer in time.",
}
#: Every authenticated route can fail so; one that reads a body, also so.
_ALWAYS = (401, 500)
_BODY = (400, 408, 413)
_STATE = "/v1/staffstore/state/{agent}"
_AGENT_STATE = "/v1/staffstore/agent-state"
_SCOPED = "/v1/staffstore/scoped-state"
_FLOW = "/v1/staffstore/workflows/{name}"
_SCOPE_QUERY = {
    "scope": "step, workflow, project or global.",
    "project": "The project (default: default).",
    "workflow": "The workflow (step and workflow scopes).",
    "step": "The step (step scope).",
}
_PROJECT_QUERY = {"project": "The workflow's project (default: default; a body's wins)."}
_FORGOTTEN = View(None, "staffstore.memory_forgotten", add={"forgotten": {"type": "integer"}})

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "post", "/v1/chat/completions",
        "OpenAI's chat completions, answered from the store before the model is paid. The "
        "body is OpenAI's (plus LiteLLM's `cache` object and a `staffstore` object); the "
        "answer is a chat.completion, or its chunks as text/event-stream when `stream` is "
        "true.",
        reply={**_OBJECT, "description": "A chat.completion (OpenAI's shape)."},
        body={
            **_OBJECT, "required": ["messages"],
            "properties": {
                "model": {"type": "string"},
                "messages": {"type": "array", "items": _OBJECT},
                "stream": {"type": "boolean"},
                "cache": {**_OBJECT, "description": "LiteLLM's cache controls: no-cache, "
                          "no-store, namespace, s-maxage, ttl."},
                "staffstore": {
                    **_OBJECT,
                    "description": "working_set, session, agent, role, budgets, story.",
                },
            },
        },
        errors=(*_BODY, 429, 502, 503, 504), headers=_TURN_HEADERS,
    ),
    Operation(
        "get", "/v1/models", "The upstream's model list (OpenAI's shape), kept a while.",
        reply=_OBJECT, errors=(502, 503, 504),
    ),
    Operation("get", "/v1/staffstore/ledger", "The caller's totals.", reply=_LEDGER),
    Operation(
        "post", "/v1/staffstore/claims",
        "Store a claim, or promote a paid answer by its receipt id (an admin key; the claim "
        "is the key's owner's, so `owner` may be left out).",
        body=OneOf((PromoteBody, View(NewClaim, optional=frozenset({"owner"})))),
        reply=View(Claim, "staffstore.claim"), status=201, errors=(*_BODY, 403, 404, 503),
        auth="admin",
    ),
    Operation(
        "post", "/v1/staffstore/jobs/dispatch",
        "Reuse, attach to or launch a job running one of the operator's commands (201 when "
        "launched).",
        body=DispatchBody,
        reply=View(Dispatch, "staffstore.job_dispatch", add={"job": _JOB_VIEW}),
        errors=(*_BODY, 403, 429, 503),
    ),
    Operation(
        "get", "/v1/staffstore/jobs/{job_id}", "One of the caller's jobs.",
        reply=_JOB_VIEW, errors=(404,),
    ),
    Operation(
        "get", _STATE, "An agent's working state: every key (expired ones marked), the "
        "handoff, recent changes.",
        reply=View(WorkingStateView, "staffstore.working_state"), errors=(400, 503),
        query={"history": "How many recent changes to show."},
    ),
    Operation(
        "get", f"{_STATE}/section", "The working-state section the agent's prompts carry now.",
        reply=View(
            None, "staffstore.working_state_section",
            add={"section": {"type": "string"}, "bytes": {"type": "integer"}},
        ),
        errors=(400, 503),
    ),
    Operation(
        "post", f"{_STATE}/set",
        "Set a key, with a reason; expected_value makes it a compare-and-swap.",
        body=SetKeyBody, reply=View(StateWrite, "staffstore.working_state_write"),
        errors=(*_BODY, 409, 412, 503),
    ),
    Operation(
        "post", f"{_STATE}/clear", "Clear a key, with a reason.",
        body=ClearKeyBody, reply=View(StateWrite, "staffstore.working_state_write"),
        errors=(*_BODY, 404, 503),
    ),
    Operation(
        "post", f"{_STATE}/handoff", "Replace the handoff note (plain or structured).",
        body=HandoffBody, reply=View(Handoff, "staffstore.handoff"), errors=(*_BODY, 503),
    ),
    Operation(
        "put", f"{_AGENT_STATE}/schemas/{{agent}}",
        "Declare the agent's state schema: a JSON Schema (`properties`) or the short form.",
        body={**_OBJECT, "description": "A schema document (see staffstore/state/schema.py)."},
        reply=View(AgentStateSchema, "staffstore.agent_state_schema",
                   add={"agent": {"type": "string"}}),
        errors=(*_BODY, 503),
    ),
    Operation(
        "get", f"{_AGENT_STATE}/schemas/{{agent}}", "The agent's declared state schema.",
        reply=View(AgentStateSchema, "staffstore.agent_state_schema",
                   add={"agent": {"type": "string"}}),
        errors=(400, 404, 503),
    ),
    Operation(
        "put", _AGENT_STATE, "Write one agent state (merge by key, or compare-and-swap).",
        body=AgentStatePutBody, reply=View(AgentStateWrite, "staffstore.agent_state_write"),
        errors=(*_BODY, 412, 503),
    ),
    Operation(
        "get", _AGENT_STATE, "The caller's states: sizes, versions and dates, never content.",
        reply=ListOf(AgentStateInfo), errors=(400, 503),
        query={"agent": "Only this agent's states."},
    ),
    Operation(
        "post", f"{_AGENT_STATE}/read", "Read one agent state (scope in the body, not the URL).",
        body=AgentStateReadBody, reply=View(AgentStateRead, "staffstore.agent_state"),
        errors=(*_BODY, 503),
    ),
    Operation(
        "post", f"{_AGENT_STATE}/export", "Every state about one subject (a person), as JSON.",
        body=SubjectBody, reply=_OBJECT, errors=(*_BODY, 503),
    ),
    Operation(
        "post", f"{_AGENT_STATE}/erase", "Erase every state of a subject, or one scope.",
        body=EraseBody, reply=View(ErasureProof, "staffstore.agent_state_erasure"),
        errors=(*_BODY, 503),
    ),
    Operation(
        "post", f"{_AGENT_STATE}/sweep", "Remove or trim states past their retention.",
        reply=View(SweepReport, "staffstore.agent_state_sweep"), errors=(503,),
    ),
    Operation(
        "get", _SCOPED, "Every key of one scoped-state namespace (never another's).",
        reply=ListOf(ScopedValue), errors=(400, 503), query=_SCOPE_QUERY,
    ),
    Operation(
        "post", f"{_SCOPED}/get",
        "One key of one namespace: present with its value, or absent (present false).",
        body=ScopedKeyBody, reply=View(ScopedValue, "staffstore.scoped_value"),
        errors=(*_BODY, 503),
    ),
    Operation(
        "post", f"{_SCOPED}/set", "Set one key of one namespace (a value holding a secret is "
        "refused).",
        body=ScopedSetBody, reply=View(ScopedWrite, "staffstore.scoped_state_write"),
        errors=(*_BODY, 409, 503),
    ),
    Operation(
        "post", f"{_SCOPED}/delete", "Delete one key of one namespace.",
        body=ScopedKeyBody, reply=View(ScopedWrite, "staffstore.scoped_state_write"),
        errors=(*_BODY, 404, 503),
    ),
    Operation(
        "get", f"{_FLOW}/memory",
        "Every entry of a workflow's memory, newest first, and the section a step reads.",
        reply=View(MemoryView, "staffstore.workflow_memory", add={"section": MemorySection}),
        errors=(400, 503), query={**_PROJECT_QUERY, "step": "The section as this step reads it."},
    ),
    Operation(
        "post", f"{_FLOW}/memory", "A lesson written by hand (scrubbed of secrets).",
        body=LessonBody, reply=View(Lesson, "staffstore.lesson"), status=201,
        errors=(*_BODY, 503), query=_PROJECT_QUERY,
    ),
    Operation(
        "delete", f"{_FLOW}/memory", "Forget every run record, lesson and the digest.",
        reply=_FORGOTTEN, errors=(400, 503), query=_PROJECT_QUERY,
    ),
    Operation(
        "get", f"{_FLOW}/memory/config", "The memory settings in force (for a step: narrowed).",
        reply=View(EffectiveMemory, "staffstore.memory_settings"), errors=(400, 503),
        query={**_PROJECT_QUERY, "step": "The settings in force for this step."},
    ),
    Operation(
        "put", f"{_FLOW}/memory/config",
        "Change a workflow's memory settings, or narrow one step's.",
        body=MemoryConfigBody, reply=View(EffectiveMemory, "staffstore.memory_settings"),
        errors=(*_BODY, 503), query=_PROJECT_QUERY,
    ),
    Operation(
        "post", f"{_FLOW}/runs", "Open a run of the workflow (what it was asked, scrubbed).",
        body=StartRunBody, reply=View(RunRecord, "staffstore.run"), status=201,
        errors=(*_BODY, 503), query=_PROJECT_QUERY,
    ),
    Operation(
        "post", "/v1/staffstore/runs/{run_id}/remember",
        "Record a lesson during a run, for later runs of its workflow.",
        body=RememberBody, reply=View(Remembered, "staffstore.remembered"), status=201,
        errors=(*_BODY, 404, 409, 503),
    ),
    Operation(
        "post", "/v1/staffstore/runs/{run_id}/finish",
        "End a run (done, failed or cancelled) and keep its record.",
        body=FinishBody, reply=View(RunFinish, "staffstore.run_finish"),
        errors=(*_BODY, 404, 503),
    ),
    Operation(
        "get", "/v1/staffstore/memory/{entry_id}", "One lesson, run record or digest.",
        reply=View(MemoryEntry, "staffstore.memory_entry"), errors=(404, 503),
    ),
    Operation(
        "patch", "/v1/staffstore/memory/{entry_id}",
        "Rewrite a lesson's or the digest's text (scrubbed of secrets).",
        body=EditBody, reply=View(MemoryEntry, "staffstore.memory_entry"),
        errors=(*_BODY, 404, 503),
    ),
    Operation(
        "delete", "/v1/staffstore/memory/{entry_id}", "Forget one entry.",
        reply=View(
            None, "staffstore.memory_forgotten",
            add={"forgotten": {"type": "integer"}, "entry": MemoryEntry},
        ),
        errors=(404, 503),
    ),
    Operation(
        "get", "/healthz", "Liveness.",
        reply={**_OBJECT, "properties": {"status": {"const": "ok"},
                                         "upstream_key": {"type": "boolean"}}},
        auth="none",
    ),
    Operation(
        "get", "/metrics", "Prometheus text format: every owner's totals (the metrics key).",
        reply={"type": "string"}, errors=(404,), auth="metrics",
    ),
    Operation(
        "get", "/openapi.json", "This document.", reply=_OBJECT, auth="none",
    ),
)  # fmt: skip


def _models(shape: Shape | None) -> Iterator[type[BaseModel]]:
    """Every pydantic model a shape names, nested ones included."""
    if isinstance(shape, type):
        yield shape
    elif isinstance(shape, View):
        if shape.model is not None:
            yield shape.model
        for inner in shape.add.values():
            yield from _models(inner)
    elif isinstance(shape, ListOf):
        yield from _models(shape.item)
    elif isinstance(shape, OneOf):
        for inner in shape.shapes:
            yield from _models(inner)


class _Renderer:
    """Shapes as JSON Schema, with every model a component under #/components/schemas."""

    def __init__(self) -> None:
        pairs: list[tuple[type[BaseModel], JsonSchemaMode]] = [(ErrorResponse, "serialization")]
        for operation in OPERATIONS:
            pairs += [(model, "validation") for model in _models(operation.body)]
            pairs += [(model, "serialization") for model in _models(operation.reply)]
        refs, top = models_json_schema(list(dict.fromkeys(pairs)), ref_template=_REF_TEMPLATE)
        self.refs = refs
        self.components: dict[str, Any] = top.get("$defs", {})

    def ref(self, model: type[BaseModel], mode: JsonSchemaMode) -> dict[str, Any]:
        return dict(self.refs[(model, mode)])

    def render(self, shape: Shape, mode: JsonSchemaMode) -> dict[str, Any]:
        if isinstance(shape, type):
            return self.ref(shape, mode)
        if isinstance(shape, ListOf):
            items = self.render(shape.item, mode)
            return {
                "type": "object", "required": ["object", "data"],
                "properties": {"object": {"const": "list"},
                               "data": {"type": "array", "items": items}},
            }  # fmt: skip
        if isinstance(shape, OneOf):
            return {"oneOf": [self.render(inner, mode) for inner in shape.shapes]}
        if isinstance(shape, View):
            return self._view(shape, mode)
        return shape

    def _view(self, view: View, mode: JsonSchemaMode) -> dict[str, Any]:
        """The model's component, copied, with the view's changes made to the copy."""
        if view.model is None:
            schema: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        else:
            name = self.ref(view.model, mode)["$ref"].rsplit("/", 1)[1]
            schema = copy.deepcopy(self.components[name])
        properties: dict[str, Any] = schema.setdefault("properties", {})
        required: list[str] = schema.setdefault("required", [])
        for gone in view.drop:
            properties.pop(gone, None)
        required[:] = [n for n in required if n not in view.drop | view.optional]
        for name, inner in view.add.items():
            properties[name] = self.render(inner, mode)
            if name not in required:
                required.append(name)
        if view.object is not None:
            properties["object"] = {"const": view.object}
            required.insert(0, "object")
        return schema


def _operation(renderer: _Renderer, operation: Operation) -> dict[str, Any]:
    error = {"$ref": _REF_TEMPLATE.format(model="ErrorResponse")}
    reply_type = "text/plain" if operation.auth == "metrics" else "application/json"
    success: dict[str, Any] = {
        "description": "OK" if operation.status == 200 else "Created",
        "content": {reply_type: {"schema": renderer.render(operation.reply, "serialization")}},
    }
    if operation.headers:
        success["headers"] = {name: {"schema": {"type": "string"}} for name in operation.headers}
    responses: dict[str, Any] = {str(operation.status): success}
    statuses = operation.errors if operation.auth == "none" else (*operation.errors, *_ALWAYS)
    for status in sorted(set(statuses)):
        responses[str(status)] = {
            "description": _ERRORS[status],
            "content": {"application/json": {"schema": error}},
        }
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"\{(\w+)\}", operation.path)
    ] + [
        {"name": name, "in": "query", "required": False, "description": text,
         "schema": {"type": "string"}}
        for name, text in operation.query.items()
    ]  # fmt: skip
    document: dict[str, Any] = {
        "summary": operation.summary,
        "operationId": _operation_id(operation),
        "responses": responses,
        "security": {
            "client": [{"bearer": []}],
            "admin": [{"bearer": []}],
            "metrics": [{"metricsKey": []}],
            "none": [],
        }[operation.auth],
    }
    if parameters:
        document["parameters"] = parameters
    if operation.body is not None:
        document["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {"schema": renderer.render(operation.body, "validation")}
            },
        }
    return document


def _operation_id(operation: Operation) -> str:
    words = re.findall(r"[a-z0-9]+", operation.path.replace("{", "by_").lower())
    return "_".join([operation.method, *words])


@cache
def openapi_document(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every route, built once per process (it is the same for
    every server: it describes shapes, not settings or tenants)."""
    renderer = _Renderer()
    paths: dict[str, dict[str, Any]] = {}
    for operation in OPERATIONS:
        paths.setdefault(operation.path, {})[operation.method] = _operation(renderer, operation)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "staffstore proxy",
            "version": version,
            "description": "An OpenAI-compatible caching proxy. The owner of every request "
            "is the one its key names (in trusted single-tenant mode, X-Staffstore-Owner).",
        },
        "paths": paths,
        "components": {
            "schemas": renderer.components,
            "securitySchemes": {
                "bearer": {
                    "type": "http", "scheme": "bearer",
                    "description": "A client key; the owner it names owns everything the "
                    "request reads or writes. Admin routes need an admin key.",
                },
                "metricsKey": {
                    "type": "http", "scheme": "bearer",
                    "description": "The metrics key, which no tenant has.",
                },
            },
        },
    }  # fmt: skip
