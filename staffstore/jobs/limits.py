"""What one job may take of the host, and how many may run at once (defaults gathered here).

JobLimits bounds a single job: how long its command runs before its process group is killed,
how much of what it writes is kept, and which environment variables it sees besides the
allow-list. JobCapacity bounds unfinished jobs per owner and in all; a dispatch past either is
refused with JobLimitError before anything is written, so the caller may try again later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import StaffstoreError

MIB = 1024 * 1024


@dataclass(frozen=True)
class JobLimits:
    """What one job may take of the host; the supervisor and the collector enforce it."""

    #: Seconds the command may run; then its whole process group is stopped (SIGTERM, then
    #: SIGKILL after `grace`) and the job fails as timed out.
    timeout: float = 600.0
    #: Seconds between the SIGTERM and the SIGKILL of a group being stopped.
    grace: float = 5.0
    #: Bytes kept of each output: standard output, standard error, each file of the output
    #: folder; more is cut with a marker. Findings past it fail the job (half a finding is
    #: not one).
    max_output_bytes: int = 4 * MIB
    #: Bytes kept of all of one job's outputs together.
    max_job_bytes: int = 16 * MIB
    #: Files kept from the output folder (by name order); the rest are dropped, and named.
    max_artifacts: int = 100
    #: Environment variables the command may see besides the allow-list (environment.py).
    env: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("timeout", "max_output_bytes", "max_job_bytes", "max_artifacts"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be more than 0")
        if self.grace < 0:
            raise ValueError("grace must not be negative")


DEFAULT_LIMITS = JobLimits()


@dataclass(frozen=True)
class JobCapacity:
    """How many unfinished (pending or running) jobs one owner, and all together, may have.
    None: no cap. A job that ended unseen is found ended before it is counted."""

    per_owner: int | None = None
    total: int | None = None


class JobLimitError(StaffstoreError):
    """A dispatch was refused: the owner, or everyone together, has as many unfinished jobs as
    allowed (nothing was written; try again once one ends)."""

    def __init__(self, scope: Literal["owner", "total"], owner: str, running: int, limit: int):
        self.scope, self.owner, self.running, self.limit = scope, owner, running, limit
        if scope == "owner":
            message = f"{owner} has {running} unfinished jobs, the most allowed ({limit})"
        else:
            message = f"there are {running} unfinished jobs in all, the most allowed ({limit})"
        super().__init__(f"{message}; try again when one has ended")
