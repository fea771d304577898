"""LocalCommandRunner: the embedded runner, one local command per job in a fresh directory.

Each job gets ROOT/<job id>/, made once (so a second launch of the job finds it and starts
nothing), with an empty `work/` the command runs in. A supervisor process (supervise.py), in a
session of its own, runs the command, captures standard output and error, and writes the exit
status to a file, so the job's state can be read from the directory by any process: the one
that launched it, or the next one after a crash. The command sees:

    STAFFSTORE_JOB_ID    the job's id
    STAFFSTORE_INPUTS    a file holding the job's inputs as JSON
    STAFFSTORE_FINDINGS  a file to append findings to, one JSON object a line:
                         {"question": ..., "answer": ...}; each becomes a claim on success
    STAFFSTORE_OUTPUT    a folder whose files are kept as artifacts (out/<name>)

Exit status 0 is `succeeded`, anything else `failed`. The command inherits the environment
but for staffstore's own secrets (WITHHELD_ENV).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from ..errors import InputError, StaffstoreError
from ..models import Job
from .runners import Collected, Finding, Output, RunnerStatus

SUPERVISOR = Path(__file__).with_name("supervise.py")

#: staffstore's own secrets (upstream.API_KEY_ENV, the metrics key, the state key), which a
#: job's command never sees: its output is kept, and a job may run what a tenant asked for.
#: Named here, not imported, so jobs does not depend on the layers that define them.
WITHHELD_ENV = ("OPENROUTER_API_KEY", "STAFFSTORE_METRICS_KEY", "STAFFSTORE_STATE_KEY")


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
    """Runs each job's command locally, in a fresh working directory under `root`."""

    name = "local"

    def __init__(
        self,
        root: str | Path,
        *,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.root = Path(root).expanduser().resolve()  # the command runs elsewhere
        self._python = python
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
        env = {
            **self._env,
            "STAFFSTORE_JOB_ID": job.id,
            "STAFFSTORE_INPUTS": str(job_dir / "inputs.json"),
            "STAFFSTORE_FINDINGS": str(job_dir / "findings.jsonl"),
            "STAFFSTORE_OUTPUT": str(job_dir / "out"),
        }
        spec = {"command": job.command, "env": env, "withheld": list(WITHHELD_ENV)}
        (job_dir / "job.json").write_text(json.dumps(spec), encoding="utf-8")
        starter = await asyncio.create_subprocess_exec(
            self._python,
            str(SUPERVISOR),
            str(job_dir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        # The starter forks the supervisor, writes its pid and exits at once.
        _, problem = await starter.communicate()
        if starter.returncode != 0:
            detail = problem.decode("utf-8", "replace").strip().splitlines()
            raise StaffstoreError(
                f"the local runner could not start job {job.id}: "
                f"{detail[-1] if detail else f'exit status {starter.returncode}'}"
            )
        return str(job_dir)

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
        return RunnerStatus("succeeded" if exit_code == 0 else "failed", exit_code=exit_code)

    async def cancel(self, handle: str) -> None:
        job_dir = Path(handle)
        if not job_dir.is_dir() or self._ended(job_dir) is not None:
            return
        (job_dir / "cancelled").touch()
        pid = _read(job_dir / "pid")
        if pid is not None and _alive(int(pid), job_dir):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid), signal.SIGTERM)

    async def collect(self, handle: str) -> Collected:
        job_dir = Path(handle)
        outputs = [
            Output(name, (job_dir / name).read_bytes())
            for name in ("stdout", "stderr")
            if (job_dir / name).is_file()
        ]
        out = job_dir / "out"
        if out.is_dir():
            outputs += [
                Output(f"out/{path.relative_to(out).as_posix()}", path.read_bytes(), "file")
                for path in sorted(out.rglob("*"))
                if path.is_file()
            ]
        findings_file = job_dir / "findings.jsonl"
        findings: list[Finding] = []
        error = None
        if findings_file.is_file():
            findings_bytes = findings_file.read_bytes()
            outputs.append(Output("findings.jsonl", findings_bytes, "findings"))
            try:
                findings = read_findings(findings_bytes)
            except ValueError as problem:
                error = str(problem)
        return Collected(outputs, findings, error, incidental=frozenset({"stderr"}))


def read_findings(data: bytes) -> list[Finding]:
    """Findings from JSON lines of {"question", "answer"[, "expires_at"]}; ValueError if bad."""
    findings = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"findings line {number} is not JSON") from None
        question = item.get("question") if isinstance(item, dict) else None
        answer = item.get("answer") if isinstance(item, dict) else None
        if not (isinstance(question, str) and question.strip()):
            raise ValueError(f"findings line {number} has no question")
        if not (isinstance(answer, str) and answer.strip()):
            raise ValueError(f"findings line {number} has no answer")
        expires = item.get("expires_at")
        try:
            expires_at = datetime.fromisoformat(expires) if isinstance(expires, str) else None
        except ValueError:
            raise ValueError(f"findings line {number} has a bad expires_at") from None
        findings.append(Finding(question, answer, expires_at))
    return findings
