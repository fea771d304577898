"""The runner protocol: what ensure_dispatched needs from whatever does the work.

A runner launches a recorded job and hands back a handle (a string the store keeps), answers
for the job's status by that handle, cancels it, and collects what it left: outputs to store
as artifacts and findings to store as claims. Any process holding the handle may ask, so a
relaunch after a crash can find the work. `launch` must be idempotent by job id: a second
launch of the same job returns the first one's handle and starts nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from ..models import Job

RunnerState = Literal["pending", "running", "succeeded", "failed", "cancelled"]
TERMINAL_STATES: frozenset[RunnerState] = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True)
class RunnerStatus:
    """What a runner says of a job. A runner that cannot say returns None instead."""

    state: RunnerState
    exit_code: int | None = None
    detail: str | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class Output:
    """One thing a job left, stored content-addressed under its name."""

    name: str
    content: bytes
    kind: str = "text"


@dataclass(frozen=True)
class Finding:
    """A question the job answered; a succeeded job's findings become job-sourced claims."""

    question: str
    answer: str
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Collected:
    """What a finished job left. `error` says why its findings could not be read."""

    outputs: Sequence[Output] = ()
    findings: Sequence[Finding] = ()
    error: str | None = None
    #: Output names that do not make a job substantive on their own (its diagnostics).
    incidental: frozenset[str] = field(default_factory=frozenset)


@runtime_checkable
class Runner(Protocol):
    """Launches, watches, cancels and collects jobs: a local command, a queue, a CI system."""

    #: Recorded with each job it runs.
    name: str

    async def launch(self, job: Job) -> str:
        """Start the job (once per job id) and return its handle."""
        ...

    async def status(self, handle: str) -> RunnerStatus | None:
        """The job's status, or None when it cannot be had (the worker is gone or silent)."""
        ...

    async def cancel(self, handle: str) -> None:
        """Stop the job if it is still running."""
        ...

    async def collect(self, handle: str) -> Collected:
        """What the finished job left."""
        ...
