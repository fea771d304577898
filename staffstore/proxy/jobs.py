"""The proxy's job endpoints: dispatch a job, and read one back, for the caller's owner.

    POST /v1/staffstore/jobs/dispatch   ensure_dispatched: reuse, attach or launch
    GET  /v1/staffstore/jobs/{id}       the caller's job, with its artifacts and claims

Off unless the operator names commands (`[serve.jobs.commands]`): a caller names one of them
and gives inputs as JSON, never a command line of its own, so a client key cannot run
arbitrary programs on the proxy's machine. The owner comes from the caller's key, as on every
/v1/staffstore endpoint. Each call opens its own connection to the store: a dispatch runs
transactions of its own and may poll a runner, which must not hold up the writer of turns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..errors import InputError, NotFoundError
from ..jobs import AttachPolicy, Dispatch, JobRequest, LocalCommandRunner, ensure_dispatched
from ..models import Job, JobKind
from ..store import StaffStore
from .config import ServeConfig
from .wire import WireError, read_json

#: Fields of a job the proxy does not show a tenant: the operator's command line and paths.
PRIVATE_JOB_FIELDS = frozenset({"command", "handle", "runner"})


class DispatchBody(BaseModel):
    """POST /v1/staffstore/jobs/dispatch: a JobRequest naming an operator's command."""

    model_config = ConfigDict(extra="forbid")

    owner: str | None = None
    agent: str = Field(min_length=1, max_length=200)
    kind: JobKind = "analyze"
    task: str = Field(min_length=1, max_length=20_000)
    command: str
    repository: str | None = None
    profile: str | None = None
    revision: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    launch_key: str | None = None
    expires_at: str | None = None
    #: Wait for the job to end (within the operator's deadline) before answering.
    wait: bool = False


def job_json(job: Job) -> dict[str, Any]:
    return {
        "object": "staffstore.job",
        **job.model_dump(mode="json", exclude=set(PRIVATE_JOB_FIELDS)),
    }


def _dispatch_json(dispatch: Dispatch) -> dict[str, Any]:
    return {
        "object": "staffstore.job_dispatch",
        **dispatch.model_dump(mode="json", exclude={"job"}),
        "job": job_json(dispatch.job),
    }


def _invalid(error: ValidationError) -> WireError:
    first = error.errors()[0]
    param = ".".join(str(part) for part in first["loc"]) or None
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
    )
    return WireError(400, f"invalid job: {problems}", param=param)


class JobEndpoints:
    """The two job handlers, bound to a proxy's config and its way of naming the caller."""

    def __init__(
        self,
        config: ServeConfig,
        owner_of: Callable[[Request], str],
        read_body: Callable[[Request], Awaitable[bytes]],
    ) -> None:
        self.config = config
        # The proxy's own: who a request's key speaks for (else 401), and its body read
        # within the proxy's size and time limits.
        self._owner_of = owner_of
        self._read_body = read_body
        root = config.jobs_dir or config.db_path.parent / "jobs"
        self.runner = LocalCommandRunner(root)
        self.policy = AttachPolicy(
            deadline=config.job_deadline,
            poll_limit=config.job_poll_limit,
            wait_timeout=config.job_deadline,
        )

    async def dispatch(self, request: Request) -> Response:
        owner = self._owner_of(request)
        if not self.config.job_commands:
            raise WireError(
                403, "jobs are not enabled on this proxy (no commands configured)",
                error_type="permission_error", code="jobs_disabled",
            )  # fmt: skip
        given = read_json(await self._read_body(request))
        if not isinstance(given, dict):
            raise WireError(400, "the request body must be a JSON object", code="invalid_json")
        try:
            body = DispatchBody.model_validate(given)
        except ValidationError as error:
            raise _invalid(error) from None
        if body.owner not in (None, owner):
            raise WireError(
                400, "a key dispatches jobs for its own owner only: leave out owner",
                param="owner", code="another_owner",
            )  # fmt: skip
        command = self.config.job_commands.get(body.command)
        if command is None:
            known = ", ".join(sorted(self.config.job_commands))
            raise WireError(
                400, f"unknown command {body.command!r} (this proxy runs: {known})",
                param="command", code="unknown_command",
            )  # fmt: skip
        fields = body.model_dump(exclude={"owner", "command", "wait"})
        try:
            job = JobRequest.model_validate({**fields, "owner": owner, "command": list(command)})
        except ValidationError as error:
            raise _invalid(error) from None
        try:
            async with StaffStore.open(self.config.db_path) as store:
                dispatch = await ensure_dispatched(
                    store, job, self.runner, policy=self.policy, wait=body.wait
                )
        except InputError as error:
            raise WireError(400, str(error), param="launch_key", code="launch_key_taken") from None
        status = 201 if dispatch.action == "launched" else 200
        return JSONResponse(_dispatch_json(dispatch), status_code=status)

    async def show(self, request: Request) -> Response:
        owner = self._owner_of(request)
        job_id = request.path_params["job_id"]
        try:
            async with StaffStore.open(self.config.db_path) as store:
                job = await store.get_job(owner, job_id)
        except NotFoundError as error:
            raise WireError(404, str(error), error_type="not_found_error") from None
        return JSONResponse(job_json(job))
