"""A job's status as it is now: asked of its runner on every read, never taken from the record.

The record says where a job was when someone last looked; its runner says where it is. Every
read (`refresh_job`, `refresh_jobs`) asks the runner about each unfinished job first, stores
what an ended job left and records its end, so a finished job never reads as running, whether
or not anyone attached to it. A read writes no receipt: it is not a dispatch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from ..models import Job, JobKind, JobStatus, NewClaim
from .job_store import JobStore
from .runners import Collected, Runner, RunnerStatus


@dataclass(frozen=True)
class AttachPolicy:
    """How long an attach watches a job (all in seconds; defaults gathered here)."""

    #: An attached job whose status cannot be had for this long is lost (and a job read with
    #: no status, not updated for this long, is too).
    deadline: float = 30.0
    #: ... as it is after this many polls that got no status.
    poll_limit: int = 60
    #: The pause between two polls.
    interval: float = 0.2
    #: With wait=True, how long to wait for a running job to end before returning it running.
    wait_timeout: float = 600.0


DEFAULT_POLICY = AttachPolicy()


async def refresh_job(
    store: JobStore,
    owner: str,
    job_id: str,
    runner: Runner,
    *,
    policy: AttachPolicy = DEFAULT_POLICY,
    now: datetime | None = None,
) -> Job:
    """The owner's job by id as it is now (see the module docstring), in full."""
    job = await store.get_job(owner, job_id)
    if job.active and job.runner == runner.name:
        job = await refresh(store, job, runner, policy, now)
    return job


async def refresh_jobs(
    store: JobStore,
    owner: str,
    runner: Runner,
    *,
    status: JobStatus | None = None,
    kind: JobKind | None = None,
    limit: int = 50,
    policy: AttachPolicy = DEFAULT_POLICY,
    now: datetime | None = None,
) -> list[Job]:
    """The owner's jobs, newest first, optionally of one status and kind, as they are now:
    the unfinished ones are asked of their runner before the filter applies."""
    await refresh_active(store, runner, owner, policy=policy, now=now)
    return await store.list_jobs(owner, status=status, kind=kind, limit=limit)


async def refresh_active(
    store: JobStore,
    runner: Runner,
    owner: str | None = None,
    *,
    policy: AttachPolicy = DEFAULT_POLICY,
    now: datetime | None = None,
) -> None:
    """Ask the runner about every unfinished job it runs (the owner's, or everyone's)."""
    for job in await store.active_jobs(owner):
        if job.runner == runner.name:
            await refresh(store, job, runner, policy, now)


async def refresh(
    store: JobStore, job: Job, runner: Runner, policy: AttachPolicy, now: datetime | None
) -> Job:
    """One look at an unfinished job: finish it if it ended, mark it lost if its runner has no
    status for it and it has not been updated within the policy's deadline."""
    if job.handle is None:
        return job  # recorded, not yet launched: a dispatch is at it, or an attach will be
    status = await runner.status(job.handle)
    if status is not None and status.terminal:
        return await finish(store, job, runner, status, now)
    if status is None:
        moment = now.timestamp() if now is not None else time.time()
        silent = moment - job.updated_at.timestamp()
        if silent >= policy.deadline:
            return await store.finish_job(
                job.owner, job.id, status="lost",
                error=f"no status from the {job.runner} runner for {silent:.0f} s", now=now,
            )  # fmt: skip
    return job


async def finish(
    store: JobStore, job: Job, runner: Runner, status: RunnerStatus, now: datetime | None
) -> Job:
    """Store what an ended job left: its outputs always, its findings as claims on success."""
    assert job.handle is not None
    collected: Collected = await runner.collect(job.handle)
    outcome = status.state
    error = status.detail
    if outcome == "succeeded" and collected.error is not None:
        outcome, error = "failed", collected.error  # unreadable findings are not a success
    claim_ids: list[str] = []
    if outcome == "succeeded" and collected.findings:
        claims = [
            NewClaim(
                owner=job.owner,
                question=finding.question,
                answer=finding.answer,
                agent=job.agent,
                source="job",
                job_id=job.id,
                repository=job.repository,
                profile=job.profile,
                revision=job.revision,
                inputs_fingerprint=job.inputs_fingerprint,
                expires_at=finding.expires_at or job.expires_at,
            )
            for finding in collected.findings
        ]
        claim_ids = [claim.id for claim, _ in await store.ensure_claims(claims, now=now)]
    substantive = bool(claim_ids) or any(
        output.content.strip()
        for output in collected.outputs
        if output.name not in collected.incidental
    )
    assert outcome in ("succeeded", "failed", "cancelled")
    return await store.finish_job(
        job.owner, job.id, status=outcome, exit_code=status.exit_code, error=error,
        outputs=[(o.name, o.kind, o.content) for o in collected.outputs], claim_ids=claim_ids,
        substantive=substantive and outcome == "succeeded", now=now,
    )  # fmt: skip
