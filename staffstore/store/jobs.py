"""The store's job records: what a runner was asked to do, where it is, and what it left.

A job is written before its runner is called, under a launch key that names one unfinished
job per owner, so a caller that crashes between the two leaves a record the next call finds.
Finishing a job stores its outputs content-addressed and links them, and the claims it made,
in one transaction; every read takes the owner, so no owner sees another's jobs. A launch may
be capped by the unfinished jobs of its owner and of everyone: the count is taken in the
transaction that records the launch, so racing dispatchers never pass the cap together.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

from ..errors import InputError, NotFoundError
from ..identity import bytes_hash
from ..models import (
    ACTIVE_JOB_STATUSES,
    Job,
    JobAction,
    JobArtifact,
    JobKind,
    JobLedger,
    JobReceipt,
    JobStatus,
    NewJob,
)
from ..text.matching import normalize
from .database import Database
from .rows import count_where, datetime_at, datetime_of, epoch_of, now_epoch, upsert

T = TypeVar("T")

JOB_COLUMNS = (
    "id", "owner", "agent", "kind", "task", "task_key", "repository", "profile", "revision",
    "inputs", "inputs_fingerprint", "launch_key", "command", "runner", "handle", "status",
    "exit_code", "error", "substantive", "expires_at", "created_at", "updated_at", "finished_at",
)  # fmt: skip
_ACTIONS = ("launched", "reused", "attached", "lost")
_SELECT = f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs"
_ACTIVE = f"status IN ({', '.join(repr(status) for status in ACTIVE_JOB_STATUSES)})"

#: The fields that say which work a job is: one launch key must always name the same work.
#: (The command is how the work is done, not what it is, as in jobs/identity.py.)
WORK_FIELDS = (
    "kind", "agent", "task_key", "repository", "profile", "revision", "inputs_fingerprint",
)  # fmt: skip

#: An output to store with a finished job: (name, kind, content).
Output = tuple[str, str, bytes]


@dataclass(frozen=True)
class LaunchRefused:
    """Why a launch was not recorded: unfinished jobs at their cap, the owner's or everyone's."""

    scope: Literal["owner", "total"]
    running: int
    limit: int


def _row_to_job(row: Sequence[Any]) -> Job:
    values = dict(zip(JOB_COLUMNS, row, strict=True))
    values["command"] = None if values["command"] is None else json.loads(values["command"])
    values["substantive"] = bool(values["substantive"])
    for name in ("expires_at", "finished_at"):
        values[name] = datetime_of(values[name])
    for name in ("created_at", "updated_at"):
        values[name] = datetime_at(values[name])
    return Job(**values)


def _command_json(command: Sequence[str] | None) -> str | None:
    return None if command is None else json.dumps(list(command), ensure_ascii=False)


def check_launch_key(earlier: Job | None, new: NewJob) -> None:
    """Raise InputError when the launch key of `new` already named other work."""
    if earlier is None:
        return
    differ = [name for name in WORK_FIELDS if getattr(earlier, name) != getattr(new, name)]
    if differ:
        raise InputError(
            f"launch key {new.launch_key!r} already names job {earlier.id} with another "
            f"{', '.join(differ)}; give other work a launch key of its own"
        )


class SyncJobs:
    """Job queries as plain calls on the store's connection (mixed into SyncStore)."""

    db: Database

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError  # SyncStore's

    def _in_transaction(self, work: Callable[[], T]) -> T:
        with self.db.write():
            return work()

    # -- reading -------------------------------------------------------------------------------

    def _jobs(self, where: str, params: Sequence[Any], *, full: bool = False) -> list[Job]:
        jobs = [_row_to_job(row) for row in self.fetchall(f"{_SELECT} WHERE {where}", params)]
        if not full:
            return jobs
        return [self._with_outputs(job) for job in jobs]

    def _with_outputs(self, job: Job) -> Job:
        artifacts = [
            JobArtifact(name=name, artifact_id=address, kind=kind, size=size)
            for name, address, kind, size in self.fetchall(
                "SELECT j.name, j.artifact_id, a.kind, a.size FROM job_artifacts j "
                "JOIN artifacts a ON a.owner = j.owner AND a.id = j.artifact_id "
                "WHERE j.owner = ? AND j.job_id = ? ORDER BY j.name",
                (job.owner, job.id),
            )
        ]
        claims = [
            row[0]
            for row in self.fetchall(
                "SELECT claim_id FROM job_claims WHERE owner = ? AND job_id = ? ORDER BY claim_id",
                (job.owner, job.id),
            )
        ]
        return job.model_copy(update={"artifacts": artifacts, "claim_ids": claims})

    def get_job(self, owner: str, job_id: str) -> Job:
        """The owner's job with this id (a unique prefix of at least 6 characters will do),
        with its artifacts and claims."""
        if len(job_id) < 6:
            raise NotFoundError(f"job id {job_id!r} is too short (give at least 6 characters)")
        jobs = self._jobs(
            "owner = ? AND id >= ? AND id < ? LIMIT 2", (owner, job_id, job_id + "\uffff")
        )
        if len(jobs) != 1:
            problem = "is ambiguous" if jobs else "was not found"
            raise NotFoundError(f"job {job_id!r} {problem} for owner {owner!r}")
        return self._with_outputs(jobs[0])

    def list_jobs(
        self,
        owner: str,
        *,
        status: JobStatus | None = None,
        kind: JobKind | None = None,
        limit: int = 50,
    ) -> list[Job]:
        """The owner's jobs, newest first, optionally of one status and kind."""
        where, params = "owner = ?", [owner]
        if status is not None:
            where += " AND status = ?"
            params.append(status)
        if kind is not None:
            where += " AND kind = ?"
            params.append(kind)
        return self._jobs(f"{where} ORDER BY created_at DESC, rowid DESC LIMIT ?", [*params, limit])

    def reuse_candidates(
        self,
        owner: str,
        *,
        agent: str,
        task_key: str,
        repository: str | None,
        now: datetime | None = None,
        limit: int = 50,
    ) -> list[tuple[Job, int]]:
        """The owner's analyze jobs that share the task, the agent or the repository, newest
        first, each with how many of its claims are live now. Every status: one that failed, was
        lost or was cancelled is never reused, but it is why the same work runs again."""
        moment = now_epoch(now)
        jobs = self._jobs(
            "owner = ? AND kind = 'analyze' "
            "AND (task_key = ? OR agent = ? OR repository IS ?) "
            "ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (owner, task_key, agent, repository, limit),
            full=True,
        )
        result = []
        for job in jobs:
            (live,) = self.fetchall(
                "SELECT count(*) FROM job_claims j JOIN claims c ON c.id = j.claim_id "
                "WHERE j.owner = ? AND j.job_id = ? AND c.owner = j.owner AND c.status = 'live' "
                "AND (c.expires_at IS NULL OR c.expires_at > ?)",
                (owner, job.id, moment),
            )[0]
            result.append((job, int(live)))
        return result

    def launch_key_job(self, owner: str, launch_key: str) -> Job | None:
        """The owner's latest job under this launch key, if any."""
        jobs = self._jobs(
            "owner = ? AND launch_key = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (owner, launch_key),
        )
        return jobs[0] if jobs else None

    def active_jobs(self, owner: str | None = None, *, limit: int = 1000) -> list[Job]:
        """Unfinished (pending or running) jobs, the owner's or everyone's, oldest first."""
        where, params = (_ACTIVE, []) if owner is None else (f"owner = ? AND {_ACTIVE}", [owner])
        return self._jobs(f"{where} ORDER BY created_at, rowid LIMIT ?", [*params, limit])

    def _over_cap(
        self, owner: str, per_owner: int | None, total: int | None
    ) -> LaunchRefused | None:
        """The cap a new launch of `owner` would pass, if any (counted in the caller's
        transaction)."""
        if per_owner is not None:
            sql = f"SELECT count(*) FROM jobs WHERE owner = ? AND {_ACTIVE}"
            (mine,) = self.fetchall(sql, (owner,))[0]
            if mine >= per_owner:
                return LaunchRefused("owner", int(mine), per_owner)
        if total is not None:
            (everyone,) = self.fetchall(f"SELECT count(*) FROM jobs WHERE {_ACTIVE}")[0]
            if everyone >= total:
                return LaunchRefused("total", int(everyone), total)
        return None

    # -- writing -------------------------------------------------------------------------------

    def ensure_job_launch(
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
        """Record a job about to be launched, or return the unfinished one under its launch key.

        Returns the job and whether it is new; a new job's `launched` receipt is written in the
        same transaction, before any runner is called. A launch key that already named other
        work (another task, revision, inputs, ...) is an InputError, and nothing is written.
        When the owner has `per_owner` unfinished jobs, or everyone `total`, nothing is
        written either, and the refusal says which cap was met.
        """
        moment = now_epoch(now)

        def work() -> tuple[Job, bool] | LaunchRefused:
            check_launch_key(self.launch_key_job(new.owner, new.launch_key), new)
            active = self._jobs(
                f"owner = ? AND launch_key = ? AND {_ACTIVE}", (new.owner, new.launch_key)
            )
            if active:
                return self._with_outputs(active[0]), False
            refused = self._over_cap(new.owner, per_owner, total)
            if refused is not None:
                return refused
            job_id = uuid.uuid4().hex
            values = new.model_dump()
            values.update(
                id=job_id,
                command=_command_json(new.command),
                handle=None,
                status="pending",
                exit_code=None,
                error=None,
                substantive=0,
                expires_at=epoch_of(new.expires_at),
                created_at=moment,
                updated_at=moment,
                finished_at=None,
            )
            marks = ", ".join("?" for _ in JOB_COLUMNS)
            self.db.execute(
                f"INSERT INTO jobs ({', '.join(JOB_COLUMNS)}) VALUES ({marks})",
                [values[name] for name in JOB_COLUMNS],
            )
            self._insert_receipt(new.owner, job_id, "launched", reason, matched, mismatched, moment)
            return self._jobs("id = ?", (job_id,))[0], True

        return self._in_transaction(work)

    def set_job_handle(
        self, owner: str, job_id: str, handle: str, *, now: datetime | None = None
    ) -> Job:
        """Record the runner's handle of an unfinished job: it is running."""
        self.db.execute(
            f"UPDATE jobs SET handle = ?, status = 'running', updated_at = ? "
            f"WHERE owner = ? AND id = ? AND {_ACTIVE}",
            (handle, now_epoch(now), owner, job_id),
        )
        return self.get_job(owner, job_id)

    def finish_job(
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
        """Give an unfinished job its end: status, outputs (content-addressed) and claims.

        A job that already ended keeps its end: of two callers finishing one job the first
        wins, and the second gets the job as the first left it.
        """
        moment = now_epoch(now)

        def work() -> None:
            current = self._jobs("owner = ? AND id = ?", (owner, job_id))
            if not current:
                raise NotFoundError(f"job {job_id!r} was not found for owner {owner!r}")
            if not current[0].active:
                return
            for name, kind, content in outputs:
                address = bytes_hash(content)
                self.db.execute(
                    "INSERT INTO artifacts (owner, id, kind, job_id, content, size, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (owner, address, kind, job_id, content, len(content), moment),
                )
                self.db.execute(
                    upsert(
                        "job_artifacts",
                        ("owner", "job_id", "name", "artifact_id"),
                        ("job_id", "name"),
                    ),
                    (owner, job_id, name, address),
                )
            self.db.executemany(
                "INSERT INTO job_claims (owner, job_id, claim_id) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [(owner, job_id, claim) for claim in claim_ids],
            )
            self.db.execute(
                "UPDATE jobs SET status = ?, exit_code = ?, error = ?, substantive = ?, "
                "updated_at = ?, finished_at = ? WHERE owner = ? AND id = ?",
                (status, exit_code, error, int(substantive), moment, moment, owner, job_id),
            )

        self._in_transaction(work)
        return self.get_job(owner, job_id)

    def add_job_receipt(
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
        """Record what one dispatch did with which job."""
        return self._insert_receipt(
            owner, job_id, action, reason, matched, mismatched, now_epoch(now)
        )

    def _insert_receipt(
        self,
        owner: str,
        job_id: str,
        action: JobAction,
        reason: str,
        matched: Sequence[str],
        mismatched: Sequence[str],
        moment: float,
    ) -> JobReceipt:
        receipt = JobReceipt(
            id=uuid.uuid4().hex, owner=owner, job_id=job_id, action=action, reason=reason,
            matched=list(matched), mismatched=list(mismatched), created_at=datetime_at(moment),
        )  # fmt: skip
        self.db.execute(
            "INSERT INTO job_receipts "
            "(id, owner, job_id, action, reason, matched, mismatched, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (receipt.id, owner, job_id, action, reason, json.dumps(receipt.matched),
             json.dumps(receipt.mismatched), moment),
        )  # fmt: skip
        return receipt

    def list_job_receipts(self, owner: str, *, job_id: str | None = None) -> list[JobReceipt]:
        """The owner's job receipts (of one job, when given), oldest first."""
        sql = (
            "SELECT id, owner, job_id, action, reason, matched, mismatched, created_at "
            "FROM job_receipts WHERE owner = ?"
        )
        params: list[Any] = [owner]
        if job_id is not None:
            sql += " AND job_id = ?"
            params.append(job_id)
        return [
            JobReceipt(
                id=id_,
                owner=owner_,
                job_id=job,
                action=action,
                reason=reason,
                matched=json.loads(matched),
                mismatched=json.loads(mismatched),
                created_at=datetime_at(created_at),
            )
            for id_, owner_, job, action, reason, matched, mismatched, created_at in self.fetchall(
                sql + " ORDER BY created_at, rowid", params
            )
        ]

    def job_ledger(self, owner: str | None = None) -> JobLedger:
        """Totals over job receipts: dispatches, and how many launched, reused, attached, lost."""
        where, params = ("WHERE owner = ?", [owner]) if owner is not None else ("", [])
        (row,) = self.fetchall(
            "SELECT count(*), "
            + ", ".join(count_where(f"action = '{action}'") for action in _ACTIONS)
            + f" FROM job_receipts {where}",
            params,
        )
        names = ("dispatches", "launched", "reused", "attached", "lost")
        return JobLedger(**dict(zip(names, row, strict=True)))

    def rekey_jobs(self) -> int:
        """Recompute every job's task key with the current matcher (see rekey_claims)."""
        stale = [
            (key, job_id)
            for job_id, task, old in self.fetchall("SELECT id, task, task_key FROM jobs")
            if (key := normalize(task).key) != old
        ]
        self.db.executemany("UPDATE jobs SET task_key = ? WHERE id = ?", stale)
        return len(stale)


class AsyncJobs:
    """The job calls of StaffStore (mixed into it): each is one trip to the database thread."""

    async def run_sync(self, work: Callable[[SyncJobs], T]) -> T:
        raise NotImplementedError  # StaffStore's, which hands `work` a SyncStore

    async def get_job(self, owner: str, job_id: str) -> Job:
        """The owner's job (a unique id prefix of 6 or more characters will do), in full."""
        return await self.run_sync(lambda sync: sync.get_job(owner, job_id))

    async def list_jobs(
        self,
        owner: str,
        *,
        status: JobStatus | None = None,
        kind: JobKind | None = None,
        limit: int = 50,
    ) -> list[Job]:
        """The owner's jobs, newest first."""
        return await self.run_sync(
            lambda sync: sync.list_jobs(owner, status=status, kind=kind, limit=limit)
        )

    async def reuse_candidates(
        self,
        owner: str,
        *,
        agent: str,
        task_key: str,
        repository: str | None,
        now: datetime | None = None,
    ) -> list[tuple[Job, int]]:
        """See SyncJobs.reuse_candidates."""
        return await self.run_sync(
            lambda sync: sync.reuse_candidates(
                owner, agent=agent, task_key=task_key, repository=repository, now=now
            )
        )

    async def launch_key_job(self, owner: str, launch_key: str) -> Job | None:
        """See SyncJobs.launch_key_job."""
        return await self.run_sync(lambda sync: sync.launch_key_job(owner, launch_key))

    async def active_jobs(self, owner: str | None = None, *, limit: int = 1000) -> list[Job]:
        """See SyncJobs.active_jobs."""
        return await self.run_sync(lambda sync: sync.active_jobs(owner, limit=limit))

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
        """See SyncJobs.ensure_job_launch."""
        return await self.run_sync(
            lambda sync: sync.ensure_job_launch(
                new,
                reason=reason,
                matched=matched,
                mismatched=mismatched,
                per_owner=per_owner,
                total=total,
                now=now,
            )
        )

    async def set_job_handle(
        self, owner: str, job_id: str, handle: str, *, now: datetime | None = None
    ) -> Job:
        """See SyncJobs.set_job_handle."""
        return await self.run_sync(lambda sync: sync.set_job_handle(owner, job_id, handle, now=now))

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
        """See SyncJobs.finish_job."""
        return await self.run_sync(
            lambda sync: sync.finish_job(
                owner,
                job_id,
                status=status,
                exit_code=exit_code,
                error=error,
                outputs=outputs,
                claim_ids=claim_ids,
                substantive=substantive,
                now=now,
            )
        )

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
        """See SyncJobs.add_job_receipt."""
        return await self.run_sync(
            lambda sync: sync.add_job_receipt(
                owner, job_id, action, reason, matched=matched, mismatched=mismatched, now=now
            )
        )

    async def list_job_receipts(self, owner: str, *, job_id: str | None = None) -> list[JobReceipt]:
        """See SyncJobs.list_job_receipts."""
        return await self.run_sync(lambda sync: sync.list_job_receipts(owner, job_id=job_id))

    async def job_ledger(self, owner: str | None = None) -> JobLedger:
        """See SyncJobs.job_ledger."""
        return await self.run_sync(lambda sync: sync.job_ledger(owner))
