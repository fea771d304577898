"""JobStore: the calls the jobs layer makes of the store, so a caller may pass its own.

StaffStore has every one of them. A server that shares one connection among its requests passes
a JobStore that sends the writes through its single writer and reads directly (proxy/jobs.py),
so a dispatch that polls a runner for minutes never holds up the writes of other requests, and
never opens a connection of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol

from ..models import Claim, Job, JobAction, JobKind, JobReceipt, JobStatus, NewClaim, NewJob
from ..store.jobs import LaunchRefused, Output


class JobStore(Protocol):
    """The job records, and the claims a job makes (see store/jobs.py for each call)."""

    async def get_job(self, owner: str, job_id: str) -> Job: ...

    async def list_jobs(
        self,
        owner: str,
        *,
        status: JobStatus | None = None,
        kind: JobKind | None = None,
        limit: int = 50,
    ) -> list[Job]: ...

    async def active_jobs(self, owner: str | None = None, *, limit: int = 1000) -> list[Job]: ...

    async def reuse_candidates(
        self,
        owner: str,
        *,
        agent: str,
        task_key: str,
        repository: str | None,
        now: datetime | None = None,
    ) -> list[tuple[Job, int]]: ...

    async def launch_key_job(self, owner: str, launch_key: str) -> Job | None: ...

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
    ) -> tuple[Job, bool] | LaunchRefused: ...

    async def set_job_handle(
        self, owner: str, job_id: str, handle: str, *, now: datetime | None = None
    ) -> Job: ...

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
    ) -> Job: ...

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
    ) -> JobReceipt: ...

    async def ensure_claims(
        self, claims: Iterable[NewClaim], *, now: datetime | None = None
    ) -> list[tuple[Claim, bool]]: ...
