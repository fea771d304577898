"""Jobs: pay once for a piece of work, attach to it on relaunch, and fail closed.

Owns job identity (identity.py), `ensure_dispatched` and its kin (dispatch.py), a job's status
read from its runner on every read (status.py), the runner protocol (runners.py), what a job
may take of the host (limits.py) and the embedded local-command runner (local.py, its
supervisor supervise.py, its environment environment.py, its outputs outputs.py). It writes
through the store's job methods (job_store.py names them), never SQL of its own; nothing here
imports the CLI or the proxy.
"""

from .dispatch import Dispatch, attach_job, cancel_job, ensure_dispatched
from .identity import IDENTITY_FIELDS, JobRequest, parse_inputs
from .job_store import JobStore
from .limits import JobCapacity, JobLimitError, JobLimits
from .local import LocalCommandRunner
from .runners import Collected, Finding, Output, Runner, RunnerStatus
from .status import AttachPolicy, refresh_job, refresh_jobs

__all__ = [
    "IDENTITY_FIELDS",
    "AttachPolicy",
    "Collected",
    "Dispatch",
    "Finding",
    "JobCapacity",
    "JobLimitError",
    "JobLimits",
    "JobRequest",
    "JobStore",
    "LocalCommandRunner",
    "Output",
    "Runner",
    "RunnerStatus",
    "attach_job",
    "cancel_job",
    "ensure_dispatched",
    "parse_inputs",
    "refresh_job",
    "refresh_jobs",
]
