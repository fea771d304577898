"""LocalCommandRunner: the embedded runner, one local command per job in a fresh directory.

Each job gets ROOT/<job id>/, made once (so a second launch of the job finds it and starts
nothing), with an empty `work/` the command runs in. A supervisor process (supervise.py), in a
session of its own, runs the command within the runner's JobLimits, keeps the head of its
standard output and error, and writes how it ended to files, so the job's state can be read
from the directory by any process: the one that launched it, or the next one after a crash.
The command sees:

    STAFFSTORE_JOB_ID    the job's id
    STAFFSTORE_INPUTS    a file holding the job's inputs as JSON
    STAFFSTORE_FINDINGS  a file to append findings to, one JSON object a line:
                         {"question": ..., "answer": ...}; each becomes a claim on success
    STAFFSTORE_OUTPUT    a folder whose regular files are kept as artifacts (out/<name>)

and, of the dispatcher's environment, only what environment.py allows. Exit status 0 is
`succeeded`, anything else `failed`, as is a command stopped at its run-time limit.

The supervisor is started through a plain fork and exec with no descriptor of the dispatcher
but the three standard streams, none of them a pipe: a dispatcher (a server on any event loop)
gets its answer at once however long the command runs, and the command holds none of its
sockets or pipes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from ..errors import InputError, StaffstoreError
from ..models import Job
from .environment import job_environment
from .limits import DEFAULT_LIMITS, JobLimits
from .outputs import collect
from .runners import Collected, RunnerStatus

SUPERVISOR = Path(__file__).with_name("supervise.py")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None


def _alive(pid: int, job_dir: Path) -> bool:
    """Whether `pid` is still this job's supervisor (not gone, not a zombie, not reused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc") / str(pid)
    if not proc.is_dir():  # no procfs (macOS): the signal is all there is to go on
        return True
    try:
        stat = (proc / "stat").read_text()
        cmdline = (proc / "cmdline").read_bytes()
    except OSError:
        return False
    # The state follows the parenthesised command name; Z and X are dead.
    if stat[stat.rfind(")") + 2 :].startswith(("Z", "X")):
        return False
    return os.fsencode(str(job_dir)) in cmdline


class LocalCommandRunner:
    """Runs each job's command locally, within `limits`, in a fresh directory under `root`."""

    name = "local"

    def __init__(
        self,
        root: str | Path,
        *,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        limits: JobLimits = DEFAULT_LIMITS,
    ) -> None:
        self.root = Path(root).expanduser().resolve()  # the command runs elsewhere
        self.limits = limits
        self._python = python
        # Variables every job gets as they are, over the allowed ones of the environment.
        self._env = dict(env or {})

    def job_dir(self, job_id: str) -> Path:
        return self.root / job_id

    async def launch(self, job: Job) -> str:
        """Start the job's command under a supervisor; a second launch starts nothing."""
        if not job.command:
            raise InputError("the local runner needs a command to run")
        job_dir = self.job_dir(job.id)
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            # The directory is the job's one launch: whoever makes it starts the job.
            job_dir.mkdir()
        except FileExistsError:
            return str(job_dir)
        (job_dir / "work").mkdir()
        (job_dir / "out").mkdir()
        (job_dir / "inputs.json").write_text(job.inputs, encoding="utf-8")
        env = job_environment(os.environ, self.limits.env, given={
            **self._env,
            "STAFFSTORE_JOB_ID": job.id,
            "STAFFSTORE_INPUTS": str(job_dir / "inputs.json"),
            "STAFFSTORE_FINDINGS": str(job_dir / "findings.jsonl"),
            "STAFFSTORE_OUTPUT": str(job_dir / "out"),
        })  # fmt: skip
        # The limits the job runs under travel with it: whoever collects it reads them here.
        spec = {"command": job.command, "env": env, "limits": asdict(self.limits)}
        (job_dir / "job.json").write_text(json.dumps(spec), encoding="utf-8")
        # A thread, not the event loop's own subprocess support: uvloop's child keeps a copy of
        # the caller's pipe, and nothing here needs the loop to watch the starter.
        code = await asyncio.to_thread(self._start, job_dir, env)
        if code != 0:
            log = (_read(job_dir / "supervisor.log") or "").splitlines()
            raise StaffstoreError(
                f"the local runner could not start job {job.id}: "
                f"{log[-1] if log else f'exit status {code}'}"
            )
        return str(job_dir)

    def _start(self, job_dir: Path, env: dict[str, str]) -> int:
        """Run the starter, which forks the supervisor, writes its pid and exits at once."""
        with (job_dir / "supervisor.log").open("ab") as log:
            starter = subprocess.Popen(
                [self._python, "-I", str(SUPERVISOR), str(job_dir)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=env,  # so the supervisor, whose environment the job can read, holds no secret
                close_fds=True,
                start_new_session=True,
            )
        return starter.wait()

    async def status(self, handle: str) -> RunnerStatus | None:
        job_dir = Path(handle)
        if (job_dir / "cancelled").exists():
            return RunnerStatus("cancelled")
        ended = self._ended(job_dir)
        if ended is not None:
            return ended
        pid = _read(job_dir / "pid")
        if pid is not None and _alive(int(pid), job_dir):
            return RunnerStatus("running")
        # It may have ended between the two looks.
        return self._ended(job_dir)

    def _ended(self, job_dir: Path) -> RunnerStatus | None:
        code = _read(job_dir / "exit")
        if code is None:
            return None
        exit_code = int(code)
        try:
            end = json.loads((job_dir / "end.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            end = {}  # a job launched before end.json was written
        if isinstance(end, dict) and end.get("ended") == "timed_out":
            detail = (
                f"timed out after {end.get('timeout', 0):g} s (the run-time limit): "
                "its process group was stopped"
            )
            return RunnerStatus("failed", exit_code=exit_code, detail=detail)
        return RunnerStatus("succeeded" if exit_code == 0 else "failed", exit_code=exit_code)

    async def cancel(self, handle: str) -> None:
        job_dir = Path(handle)
        if not job_dir.is_dir() or self._ended(job_dir) is not None:
            return
        (job_dir / "cancelled").touch()
        pid = _read(job_dir / "pid")
        if pid is not None and _alive(int(pid), job_dir):
            # The supervisor stops the command's group, then records the end.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid), signal.SIGTERM)

    async def collect(self, handle: str) -> Collected:
        """What the job left, read (in a thread) within the limits it was launched under."""
        job_dir = Path(handle)
        return await asyncio.to_thread(collect, job_dir, self._limits_of(job_dir))

    def _limits_of(self, job_dir: Path) -> JobLimits:
        try:
            given = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))["limits"]
            return JobLimits(**{**given, "env": tuple(given.get("env", ()))})
        except (OSError, ValueError, KeyError, TypeError):
            return self.limits  # a job launched before its limits were written down
