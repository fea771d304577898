"""ensure_dispatched: one call that reuses, attaches to or launches a job, and fails closed.

An analysis whose identity matches a live, substantive, succeeded job of the same owner is
reused without a launch; a request whose launch key names an unfinished job attaches to it;
anything else is recorded first and then launched through a runner, so a crash between the
two leaves a record the next call resolves. An attached job whose status cannot be had is
watched for a bounded time and number of polls, then marked `lost`, never `succeeded`.

A launch names its real cause: `first_request` when the owner never did this task,
`prior_failed` / `prior_lost` / `prior_cancelled` when the same work ended so last time, and
`identity_changed` (naming the fields) when the same task was done under another agent,
repository, profile, revision or inputs. A launch past the JobCapacity raises JobLimitError.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from ..errors import InputError, StaffstoreError
from ..models import Job, JobAction, NewJob
from ..store.jobs import LaunchRefused, check_launch_key
from .identity import IDENTITY_FIELDS, JobRequest, compare_identity, new_job
from .job_store import JobStore
from .limits import JobCapacity, JobLimitError
from .runners import Runner, RunnerStatus
from .status import DEFAULT_POLICY, AttachPolicy, finish, refresh_active

#: Why the same work (every identity field matching) runs again after it ended so.
_ENDED_REASONS = {"failed": "prior_failed", "lost": "prior_lost", "cancelled": "prior_cancelled"}
NO_CAP = JobCapacity()
#: How long an attach waits for the handle of a job another process is launching (recorded,
#: the runner not yet answered) before taking it for a crashed launch and launching it itself.
LAUNCH_GRACE = 5.0
_HANDLE_POLL = 0.05


class Dispatch(BaseModel):
    """What ensure_dispatched did: the action, why, the job, and the identity comparison.

    `matched` and `mismatched` name identity fields of the prior job compared with (the
    reused one, or the nearest one when a changed field forced a launch).
    """

    model_config = ConfigDict(frozen=True)

    action: JobAction
    reason: str
    job: Job
    matched: list[str] = Field(default_factory=list)
    mismatched: list[str] = Field(default_factory=list)
    prior_job_id: str | None = None
    #: Status polls made while attaching or waiting.
    polls: int = 0


@dataclass(frozen=True)
class _Verdict:
    """The reuse check's answer: a job to reuse or attach to, or why a launch is needed."""

    reason: str
    reuse: Job | None = None
    attach: Job | None = None
    matched: tuple[str, ...] = ()
    mismatched: tuple[str, ...] = ()
    prior: Job | None = None


async def _judge(store: JobStore, new: NewJob, now: datetime | None) -> _Verdict:
    """Compare an analysis with the owner's prior analyses of the same task, agent or repo."""
    candidates = await store.reuse_candidates(
        new.owner, agent=new.agent, task_key=new.task_key, repository=new.repository, now=now
    )
    moment = now.timestamp() if now is not None else time.time()
    nearest: tuple[int, Job, list[str], list[str]] | None = None
    refusal: _Verdict | None = None
    for job, live_claims in candidates:  # newest first
        matched, mismatched = compare_identity(new, job)
        if "task" in mismatched:
            continue  # another task is other work, not this work changed: it explains nothing
        if mismatched:
            # Only work that was done explains a change; a failure is no prior to compare with.
            if job.status not in _ENDED_REASONS and (nearest is None or len(matched) > nearest[0]):
                nearest = (len(matched), job, matched, mismatched)
            continue
        full = tuple(matched)
        if job.active:
            return _Verdict("same_identity_unfinished", attach=job, matched=full, prior=job)
        reason = _refusal(job, live_claims, moment)
        if reason is None:
            return _Verdict("same_identity", reuse=job, matched=full, prior=job)
        if refusal is None:
            refusal = _Verdict(reason, matched=full, prior=job)
    if refusal is not None:
        return refusal
    if nearest is not None:
        _, job, matched, mismatched = nearest
        return _Verdict("identity_changed", matched=tuple(matched), mismatched=tuple(mismatched),
                        prior=job)  # fmt: skip
    return _Verdict("first_request")


def _refusal(job: Job, live_claims: int, moment: float) -> str | None:
    """Why a finished job of the same identity is not reused, or None when it may be."""
    if job.status in _ENDED_REASONS:
        return _ENDED_REASONS[job.status]  # the same work failed, was lost or was cancelled
    if job.expires_at is not None and job.expires_at.timestamp() <= moment:
        return "prior_expired"
    if job.claim_ids and live_claims == 0:
        return "prior_not_live"  # its findings were superseded, retracted or expired
    if not job.substantive:
        return "prior_not_substantive"
    return None


async def ensure_dispatched(
    store: JobStore,
    request: JobRequest,
    runner: Runner,
    *,
    policy: AttachPolicy = DEFAULT_POLICY,
    capacity: JobCapacity = NO_CAP,
    wait: bool = False,
    now: datetime | None = None,
) -> Dispatch:
    """Reuse, attach to or launch the job `request` asks for, and say which and why.

    Bad input (an unknown kind, inputs that are not JSON, a launch key that names other
    work) raises before anything is written, as does a launch past `capacity`
    (JobLimitError). With `wait`, a launched or attached job is watched until it ends (or
    `policy.wait_timeout` passes); its findings are stored as claims when it succeeds.
    """
    new = new_job(request, runner.name)
    under_key = await store.launch_key_job(new.owner, new.launch_key)
    check_launch_key(under_key, new)
    if under_key is not None and under_key.active:
        # check_launch_key has made sure the key names this very work.
        return await _attach(
            store, under_key, runner, policy, wait, "launch_key_unfinished", now, IDENTITY_FIELDS
        )
    verdict = _Verdict("implement_never_reused")
    if new.kind == "analyze":
        verdict = await _judge(store, new, now)
    prior_id = verdict.prior.id if verdict.prior is not None else None
    if verdict.reuse is not None:
        await store.add_job_receipt(
            new.owner, verdict.reuse.id, "reused", verdict.reason, matched=verdict.matched, now=now
        )
        return Dispatch(action="reused", reason=verdict.reason, job=verdict.reuse,
                        matched=list(verdict.matched), prior_job_id=prior_id)  # fmt: skip
    if verdict.attach is not None:
        return await _attach(
            store, verdict.attach, runner, policy, wait, verdict.reason, now, verdict.matched
        )
    job, created = await _record_launch(store, new, verdict, runner, policy, capacity, now)
    if not created:  # another caller recorded this launch key a moment ago
        return await _attach(
            store, job, runner, policy, wait, "launch_key_unfinished", now, IDENTITY_FIELDS
        )
    job = await _launch(store, job, runner, now)
    polls = 0
    if wait and job.active:
        job, polls, _ = await _watch(store, job, runner, policy, wait=True, now=now)
    return Dispatch(
        action="launched", reason=verdict.reason, job=job, matched=list(verdict.matched),
        mismatched=list(verdict.mismatched), prior_job_id=prior_id, polls=polls,
    )  # fmt: skip


async def attach_job(
    store: JobStore,
    owner: str,
    job_id: str,
    runner: Runner,
    *,
    policy: AttachPolicy = DEFAULT_POLICY,
    wait: bool = False,
    now: datetime | None = None,
) -> Dispatch:
    """Attach to the owner's job by id: refresh its status from its runner, finish it when it
    has ended, and mark it lost when its status cannot be had within the policy's bounds."""
    job = await store.get_job(owner, job_id)
    return await _attach(store, job, runner, policy, wait, "asked_by_id", now)


async def cancel_job(
    store: JobStore, owner: str, job_id: str, runner: Runner, *, now: datetime | None = None
) -> Job:
    """Stop the owner's unfinished job and record it cancelled; a finished job is left as is."""
    job = await store.get_job(owner, job_id)
    if not job.active:
        return job
    _check_runner(job, runner)
    if job.handle is not None:
        await runner.cancel(job.handle)
    return await store.finish_job(owner, job.id, status="cancelled", now=now)


# -- the parts -----------------------------------------------------------------------------------


async def _record_launch(
    store: JobStore,
    new: NewJob,
    verdict: _Verdict,
    runner: Runner,
    policy: AttachPolicy,
    capacity: JobCapacity,
    now: datetime | None,
) -> tuple[Job, bool]:
    """Record the launch within `capacity`; JobLimitError when it is full even after the jobs
    that count were asked how they are (one that ended unseen no longer counts)."""

    async def record() -> tuple[Job, bool] | LaunchRefused:
        return await store.ensure_job_launch(
            new, reason=verdict.reason, matched=verdict.matched, mismatched=verdict.mismatched,
            per_owner=capacity.per_owner, total=capacity.total, now=now,
        )  # fmt: skip

    recorded = await record()
    if isinstance(recorded, LaunchRefused):
        owner = new.owner if recorded.scope == "owner" else None
        await refresh_active(store, runner, owner, policy=policy, now=now)
        recorded = await record()
    if isinstance(recorded, LaunchRefused):
        raise JobLimitError(recorded.scope, new.owner, recorded.running, recorded.limit)
    return recorded


def _check_runner(job: Job, runner: Runner) -> None:
    # A handle means something only to the runner that gave it.
    if job.runner != runner.name:
        raise InputError(
            f"job {job.id} was run by the {job.runner!r} runner; ask that runner, "
            f"not {runner.name!r}"
        )


async def _launch(store: JobStore, job: Job, runner: Runner, now: datetime | None) -> Job:
    """Call the runner for a recorded job and record its handle; a runner error fails the job."""
    try:
        handle = await runner.launch(job)
    except (StaffstoreError, OSError) as error:
        return await store.finish_job(
            job.owner, job.id, status="failed", error=f"launch failed: {error}", now=now
        )
    return await store.set_job_handle(job.owner, job.id, handle, now=now)


async def _attach(
    store: JobStore,
    job: Job,
    runner: Runner,
    policy: AttachPolicy,
    wait: bool,
    reason: str,
    now: datetime | None,
    matched: Sequence[str] = (),
) -> Dispatch:
    polls, lost = 0, False
    if job.active:
        _check_runner(job, runner)
        if job.handle is None:
            job = await _handle_or_none(store, job, now)
        if job.handle is None:
            # Recorded, but the runner's answer never was: a crash between the two. Launch is
            # idempotent by job id, so this finds the work if it started, or starts it once.
            job = await _launch(store, job, runner, now)
        if job.active:
            job, polls, lost = await _watch(store, job, runner, policy, wait=wait, now=now)
    action: JobAction = "lost" if lost else "attached"
    await store.add_job_receipt(
        job.owner, job.id, action, "status_unavailable" if lost else reason, matched=matched,
        now=now,
    )  # fmt: skip
    return Dispatch(
        action=action, reason="status_unavailable" if lost else reason, job=job,
        matched=list(matched), prior_job_id=job.id, polls=polls,
    )  # fmt: skip


async def _handle_or_none(store: JobStore, job: Job, now: datetime | None) -> Job:
    """The job once its launcher has recorded the runner's handle, or as it is if that does
    not come within LAUNCH_GRACE seconds of the job's record.

    Another process (a replica sharing the store) may be launching it right now: it recorded
    the job and is waiting for the runner's answer. Launching again at once would run the
    command twice where the runner cannot tell (replicas on different machines); only a
    record that stays without a handle is a launcher that crashed.
    """
    waited_from = time.monotonic()
    while job.handle is None and job.active:
        clock = now if now is not None else datetime.now(job.updated_at.tzinfo)
        age = (clock - job.updated_at).total_seconds()
        if age >= LAUNCH_GRACE or time.monotonic() - waited_from >= LAUNCH_GRACE:
            break
        await asyncio.sleep(_HANDLE_POLL)
        job = await store.get_job(job.owner, job.id)
    return job


async def _watch(
    store: JobStore,
    job: Job,
    runner: Runner,
    policy: AttachPolicy,
    *,
    wait: bool,
    now: datetime | None,
) -> tuple[Job, int, bool]:
    """Poll the runner: finish the job when it ends, or mark it lost when no status comes
    within the deadline and poll limit. Returns the job, the polls made, and whether lost."""
    assert job.handle is not None
    started = time.monotonic()
    silent_polls, polls = 0, 0
    silent_since: float | None = None
    while True:
        status = await runner.status(job.handle)
        polls += 1
        if status is not None and status.terminal:
            return await finish(store, job, runner, status, now), polls, False
        if status is None:
            silent_polls += 1
            silent_since = silent_since if silent_since is not None else time.monotonic()
            if (
                silent_polls >= policy.poll_limit
                or time.monotonic() - silent_since >= policy.deadline
            ):
                lost = await store.finish_job(
                    job.owner, job.id, status="lost",
                    error=f"no status from the {job.runner} runner after {silent_polls} polls",
                    now=now,
                )  # fmt: skip
                # Another caller may have finished it meanwhile: only a lost job is reported so.
                return lost, polls, lost.status == "lost"
        else:
            silent_polls, silent_since = 0, None
            if not wait or time.monotonic() - started >= policy.wait_timeout:
                return await _refresh(store, job, status), polls, False
        await asyncio.sleep(policy.interval)


async def _refresh(store: JobStore, job: Job, status: RunnerStatus) -> Job:
    if status.state == "running" and job.status == "pending" and job.handle is not None:
        return await store.set_job_handle(job.owner, job.id, job.handle)
    return job
