"""Jobs: pay once for a piece of work, attach to it on relaunch, and fail closed.

Owns job identity (identity.py), `ensure_dispatched` and its kin (dispatch.py), the runner
protocol (runners.py) and the embedded local-command runner (local.py, supervise.py). It
writes through the StaffStore's job methods, never SQL of its own; nothing here imports the
CLI or the proxy.
"""

from .dispatch import AttachPolicy, Dispatch, attach_job, cancel_job, ensure_dispatched
from .identity import IDENTITY_FIELDS, JobRequest, parse_inputs
from .local import LocalCommandRunner
from .runners import Collected, Finding, Output, Runner, RunnerStatus

__all__ = [
    "IDENTITY_FIELDS",
    "AttachPolicy",
    "Collected",
    "Dispatch",
    "Finding",
    "JobRequest",
    "LocalCommandRunner",
    "Output",
    "Runner",
    "RunnerStatus",
    "attach_job",
    "cancel_job",
    "ensure_dispatched",
    "parse_inputs",
]
