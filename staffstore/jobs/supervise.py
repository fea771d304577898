"""Run one local job's command within its limits and leave its end on disk: `supervise.py JOB_DIR`.

Started by LocalCommandRunner with the job's environment only and no descriptor of its caller
but the three standard streams (its error stream is JOB_DIR/supervisor.log). It forks a
supervisor in a session of its own, writes that supervisor's pid to JOB_DIR/pid and exits, so
the job outlives the process that dispatched it and that process has no child left to reap.

The supervisor runs the command in JOB_DIR/work, in a process group of its own (its id in
JOB_DIR/pgid), and pumps its standard output and error into JOB_DIR/stdout and JOB_DIR/stderr,
keeping the first `max_output_bytes` of each and counting the rest (read, so the command never
blocks on a full pipe). At the run-time limit, or on SIGTERM (a cancel), it stops the whole
group: SIGTERM, then SIGKILL after the grace period; when the command ends, whatever is left of
its group is killed too. It then writes JOB_DIR/end.json (how the command ended, the bytes each
stream got) and last, atomically, the exit status to JOB_DIR/exit: any process can read the
job's state from the directory alone. Standard library only, run as a script, so starting it
costs no import of staffstore.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

#: Seconds between two looks at the clock (and for a cancel) while the command runs.
TICK = 0.05
_CHUNK = 1 << 16


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees all of it or nothing."""
    spare = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    spare.write_text(text, encoding="utf-8")
    os.replace(spare, path)


def main(job_dir: Path) -> int:
    supervisor = os.fork()
    if supervisor:
        write_atomically(job_dir / "pid", str(supervisor))
        return 0
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1):
        os.dup2(devnull, stream)
    os.close(devnull)
    supervise(job_dir)
    return 0


class Pump(threading.Thread):
    """Copies a stream into a file up to a cap, and reads (and counts) the rest."""

    def __init__(self, source: IO[bytes], sink: IO[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self.source, self.sink, self.cap = source, sink, cap
        self.total = 0

    def run(self) -> None:
        fd = self.source.fileno()
        while chunk := os.read(fd, _CHUNK):
            room = self.cap - self.total
            if room > 0:
                self.sink.write(chunk[:room])
            self.total += len(chunk)


def signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


def wait(
    child: subprocess.Popen[bytes], limits: dict[str, Any], stop: threading.Event
) -> tuple[int, str]:
    """Wait for the command; stop its group at the deadline or on a cancel. Returns its exit
    status and how it ended: "exited", "timed_out" or "cancelled"."""
    deadline = time.monotonic() + float(limits["timeout"])
    while True:
        try:
            return child.wait(timeout=TICK), "exited"
        except subprocess.TimeoutExpired:
            pass
        if stop.is_set():
            ended = "cancelled"
        elif time.monotonic() >= deadline:
            ended = "timed_out"
        else:
            continue
        signal_group(child.pid, signal.SIGTERM)
        try:
            return child.wait(timeout=float(limits["grace"])), ended
        except subprocess.TimeoutExpired:
            signal_group(child.pid, signal.SIGKILL)
            return child.wait(), ended


def supervise(job_dir: Path) -> None:
    spec = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    limits = spec["limits"]
    stop = threading.Event()
    # A cancel signals this process alone: the command runs in a group of its own.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cap = int(limits["max_output_bytes"])
    with (
        (job_dir / "stdout").open("wb", buffering=0) as out,
        (job_dir / "stderr").open("wb", buffering=0) as err,
    ):
        try:
            child = subprocess.Popen(
                spec["command"],
                cwd=job_dir / "work",
                env=spec["env"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            # As a shell would: 127 for a program that cannot be found or started.
            message = f"cannot start {spec['command'][0]!r}: {error}\n".encode()
            err.write(message)
            code, ended, written = 127, "exited", {"stdout": 0, "stderr": len(message)}
        else:
            write_atomically(job_dir / "pgid", str(child.pid))
            assert child.stdout is not None and child.stderr is not None
            pumps = {"stdout": Pump(child.stdout, out, cap), "stderr": Pump(child.stderr, err, cap)}
            for pump in pumps.values():
                pump.start()
            code, ended = wait(child, limits, stop)
            # Nothing the command started outlives it (but what left its group on purpose).
            signal_group(child.pid, signal.SIGKILL)
            for pump in pumps.values():
                # Such a runaway may hold a pipe open: the job's end does not wait for it.
                pump.join(timeout=1.0)
            written = {name: pump.total for name, pump in pumps.items()}
    end = {"exit_code": code, "ended": ended, "timeout": limits["timeout"], "written": written}
    write_atomically(job_dir / "end.json", json.dumps(end))
    write_atomically(job_dir / "exit", str(code))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
