"""Which work a job is: the request a caller makes, and the identity reuse is judged by.

Two analyses are the same work when the owner, owning agent, normalised task, repository,
profile, revision and inputs fingerprint all agree; the fingerprint is the SHA-256 of the
canonical JSON of the inputs the caller names. Anything that changes the result belongs in
the inputs: the command is how the work is done, not what it is about.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..identity import canonical_json, content_hash
from ..models import Job, JobKind, NewJob, NonBlank
from ..text.matching import compare, normalize

#: The fields a reuse must match, in the order a decision names them (the owner always
#: matches: nothing of another owner is ever looked at).
IDENTITY_FIELDS = ("agent", "task", "repository", "profile", "revision", "inputs")


class JobRequest(BaseModel):
    """What a caller asks for: a kind of work on a task, for an agent, with named inputs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    owner: NonBlank = Field(min_length=1, max_length=200)
    agent: NonBlank = Field(min_length=1, max_length=200)
    kind: JobKind
    task: NonBlank = Field(min_length=1, max_length=20_000)
    repository: str | None = None
    profile: str | None = None
    revision: str | None = None
    #: The inputs that decide the result, as a JSON object; part of the identity.
    inputs: dict[str, Any] = Field(default_factory=dict)
    #: Names one launch: a second dispatch under it attaches instead of launching. Default:
    #: a hash of the identity for an analysis, a fresh key for an implementation.
    launch_key: str | None = Field(default=None, min_length=1, max_length=500)
    #: What the local runner runs; other runners may ignore it.
    command: list[str] | None = None
    #: When the job's result stops being reusable as prior work.
    expires_at: datetime | None = None

    @field_validator("inputs")
    @classmethod
    def _json_only(cls, value: dict[str, Any]) -> dict[str, Any]:
        # canonical_json turns what JSON cannot hold into strings (default=str); an identity
        # must not, so the inputs are checked against strict JSON first.
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise ValueError(f"inputs must be plain JSON ({error})") from None
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not value[0].strip()):
            raise ValueError("a command needs a program to run")
        return value

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


def parse_inputs(text: str) -> dict[str, Any]:
    """Inputs given as JSON text (the CLI's --inputs): an object, or ValueError saying why."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise ValueError(f"inputs are not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(value, dict):
        raise ValueError(f"inputs must be a JSON object, not {type(value).__name__}")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"inputs are not JSON ({name} is not a JSON number)")


def inputs_fingerprint(inputs: dict[str, Any]) -> str:
    """The SHA-256 of the inputs' canonical JSON."""
    return hashlib.sha256(canonical_json(inputs).encode("utf-8")).hexdigest()


def task_key(task: str) -> str:
    """The task's content words, as the gate normalises a question; the text when it has none."""
    return normalize(task).key or " ".join(task.casefold().split())


def launch_key_of(request: JobRequest) -> str:
    """The request's launch key: its own, else one an analysis of the same work shares."""
    if request.launch_key is not None:
        return request.launch_key
    if request.kind == "implement":
        # An implementation is never prior work: each request is its own launch.
        return f"implement:{uuid.uuid4().hex}"
    identity = {
        "agent": request.agent, "task": task_key(request.task), "repository": request.repository,
        "profile": request.profile, "revision": request.revision,
        "inputs": inputs_fingerprint(request.inputs),
    }  # fmt: skip
    return f"analyze:{content_hash(identity)}"


def new_job(request: JobRequest, runner: str) -> NewJob:
    """The record to write for a request, before any runner is called."""
    return NewJob(
        owner=request.owner,
        agent=request.agent,
        kind=request.kind,
        task=request.task,
        task_key=task_key(request.task),
        repository=request.repository,
        profile=request.profile,
        revision=request.revision,
        inputs=canonical_json(request.inputs),
        inputs_fingerprint=inputs_fingerprint(request.inputs),
        launch_key=launch_key_of(request),
        command=request.command,
        runner=runner,
        expires_at=request.expires_at,
    )


def same_task(a: NewJob, b: NewJob) -> bool:
    """Whether two tasks ask for the same work: equal content words, or one rephrases the
    other as the gate judges two questions."""
    if a.task_key == b.task_key:
        return True
    return compare(normalize(a.task), normalize(b.task)).same_question


def compare_identity(new: NewJob, prior: Job) -> tuple[list[str], list[str]]:
    """The identity fields `prior` matches and the ones it does not, in IDENTITY_FIELDS order."""
    equal = {
        "agent": new.agent == prior.agent,
        "task": same_task(new, prior),
        "repository": new.repository == prior.repository,
        "profile": new.profile == prior.profile,
        "revision": new.revision == prior.revision,
        "inputs": new.inputs_fingerprint == prior.inputs_fingerprint,
    }
    matched = [name for name in IDENTITY_FIELDS if equal[name]]
    return matched, [name for name in IDENTITY_FIELDS if not equal[name]]
