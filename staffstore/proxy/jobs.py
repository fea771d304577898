"""The proxy's job endpoints: dispatch a job, and read one back, for the caller's owner.

    POST /v1/staffstore/jobs/dispatch   ensure_dispatched: reuse, attach or launch
    GET  /v1/staffstore/jobs/{id}       the caller's job, with its artifacts and claims

Off unless the operator names commands (`[serve.jobs.commands]`): a caller names one of them
and gives inputs as JSON, never a command line of its own, so a client key cannot run
arbitrary programs on the proxy's machine. The owner comes from the caller's key, as on every
/v1/staffstore endpoint.

Jobs run within the operator's limits: a run-time limit, output kept up to a cap, an
environment from an allow-list, and a cap of unfinished jobs per owner and in all. A dispatch
past a cap is refused with 429 in OpenAI's error shape (`too_many_jobs`), not queued: a queue
would need something to start its jobs later and could grow without bound, while a 429 costs
nothing and the caller's client already knows to try again. A GET reads the job's state from
its runner, so a job that ended says so.

Both routes use the server's store (`request.app.state.proxy`): reads on its shared
connection, writes through its one writer (SharedJobStore), so a dispatch that polls a runner
never holds up other requests' writes and never opens a connection of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..config import default_jobs_dir
from ..errors import InputError, NotFoundError, StoreBusyError
from ..jobs import (
    AttachPolicy,
    Dispatch,
    JobCapacity,
    JobLimitError,
    JobLimits,
    JobRequest,
    LocalCommandRunner,
    ensure_dispatched,
    refresh_job,
)
from ..models import Claim, Job, JobAction, JobKind, JobReceipt, JobStatus, NewClaim, NewJob
from ..store import StaffStore
from ..store.jobs import LaunchRefused, Output
from .config import ServeConfig
from .wire import WireError, read_json
from .writer import Writer

T = TypeVar("T")

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


class _Server(Protocol):
    """What the job routes use of the running proxy (app.py's Proxy)."""

    @property
    def store(self) -> StaffStore: ...

    @property
    def writer(self) -> Writer: ...


class SharedJobStore:
    """The server's store as the jobs layer's JobStore: reads go straight to its connection,
    writes through its writer, in turn with every other request's (a transaction on the shared
    connection must not take in another request's statements)."""

    def __init__(self, store: StaffStore, writer: Writer) -> None:
        self._store = store
        self._writer = writer

    async def _write(self, work: Callable[[], Awaitable[T]]) -> T:
        result: T = await self._writer.run(work)
        return result

    async def get_job(self, owner: str, job_id: str) -> Job:
        return await self._store.get_job(owner, job_id)

    async def list_jobs(
        self,
        owner: str,
        *,
        status: JobStatus | None = None,
        kind: JobKind | None = None,
        limit: int = 50,
    ) -> list[Job]:
        return await self._store.list_jobs(owner, status=status, kind=kind, limit=limit)

    async def active_jobs(self, owner: str | None = None, *, limit: int = 1000) -> list[Job]:
        return await self._store.active_jobs(owner, limit=limit)

    async def reuse_candidates(
        self,
        owner: str,
        *,
        agent: str,
        task_key: str,
        repository: str | None,
        now: datetime | None = None,
    ) -> list[tuple[Job, int]]:
        return await self._store.reuse_candidates(
            owner, agent=agent, task_key=task_key, repository=repository, now=now
        )

    async def launch_key_job(self, owner: str, launch_key: str) -> Job | None:
        return await self._store.launch_key_job(owner, launch_key)

    async def ensure_job_launch(
        self,
        new: NewJob,
        *,
        reason: str,
        matched: Sequence[str] = (),
        mismatched: Sequence[str] = (),
        per_owner: int | None = None,
        total: int | None = None,
        now: datetime | None = None,
    ) -> tuple[Job, bool] | LaunchRefused:
        return await self._write(
            lambda: self._store.ensure_job_launch(
                new, reason=reason, matched=matched, mismatched=mismatched, per_owner=per_owner,
                total=total, now=now,
            )
        )  # fmt: skip

    async def set_job_handle(
        self, owner: str, job_id: str, handle: str, *, now: datetime | None = None
    ) -> Job:
        return await self._write(lambda: self._store.set_job_handle(owner, job_id, handle, now=now))

    async def finish_job(
        self,
        owner: str,
        job_id: str,
        *,
        status: JobStatus,
        exit_code: int | None = None,
        error: str | None = None,
        outputs: Sequence[Output] = (),
        claim_ids: Sequence[str] = (),
        substantive: bool = False,
        now: datetime | None = None,
    ) -> Job:
        return await self._write(
            lambda: self._store.finish_job(
                owner, job_id, status=status, exit_code=exit_code, error=error, outputs=outputs,
                claim_ids=claim_ids, substantive=substantive, now=now,
            )
        )  # fmt: skip

    async def add_job_receipt(
        self,
        owner: str,
        job_id: str,
        action: JobAction,
        reason: str,
        *,
        matched: Sequence[str] = (),
        mismatched: Sequence[str] = (),
        now: datetime | None = None,
    ) -> JobReceipt:
        return await self._write(
            lambda: self._store.add_job_receipt(
                owner, job_id, action, reason, matched=matched, mismatched=mismatched, now=now
            )
        )

    async def ensure_claims(
        self, claims: Iterable[NewClaim], *, now: datetime | None = None
    ) -> list[tuple[Claim, bool]]:
        batch = list(claims)
        return await self._write(lambda: self._store.ensure_claims(batch, now=now))


def _shared_store(request: Request) -> SharedJobStore:
    server: _Server = request.app.state.proxy
    return SharedJobStore(server.store, server.writer)


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
        root = config.jobs_dir or default_jobs_dir(config.db_path)
        limits = JobLimits(
            timeout=config.job_timeout,
            max_output_bytes=config.job_max_output_bytes,
            max_job_bytes=config.job_max_job_bytes,
            env=tuple(config.job_env),
        )
        self.runner = LocalCommandRunner(root, limits=limits)
        self.policy = AttachPolicy(
            deadline=config.job_deadline,
            poll_limit=config.job_poll_limit,
            wait_timeout=config.job_deadline,
        )
        self.capacity = JobCapacity(config.job_max_running, config.job_max_running_total)

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
            dispatch = await ensure_dispatched(
                _shared_store(request), job, self.runner, policy=self.policy,
                capacity=self.capacity, wait=body.wait,
            )  # fmt: skip
        except JobLimitError as error:
            # Other tenants' jobs are not this caller's business: not even how many there are.
            message = str(error)
            if error.scope == "total":
                message = "this proxy runs as many jobs in all as it allows; try again later"
            raise WireError(
                429, message, error_type="rate_limit_error", code="too_many_jobs"
            ) from None
        except InputError as error:
            raise WireError(400, str(error), param="launch_key", code="launch_key_taken") from None
        except StoreBusyError:
            raise _busy() from None
        status = 201 if dispatch.action == "launched" else 200
        return JSONResponse(_dispatch_json(dispatch), status_code=status)

    async def show(self, request: Request) -> Response:
        owner = self._owner_of(request)
        job_id = request.path_params["job_id"]
        try:
            job = await refresh_job(
                _shared_store(request), owner, job_id, self.runner, policy=self.policy
            )
        except NotFoundError as error:
            raise WireError(404, str(error), error_type="not_found_error") from None
        except StoreBusyError:
            raise _busy() from None
        return JSONResponse(job_json(job))


def _busy() -> WireError:
    problem = "the store is busy (locked by another process); try again shortly"
    return WireError(503, problem, error_type="server_error", code="store_busy")
