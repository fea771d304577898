"""Run one local job's command and leave its end on disk: `python supervise.py JOB_DIR`.

Started by LocalCommandRunner, it forks a supervisor in a session of its own, writes that
supervisor's pid to JOB_DIR/pid and exits, so the job outlives the process that dispatched it
and that process has no child left to reap. The supervisor runs the command in JOB_DIR/work
with output to JOB_DIR/stdout and JOB_DIR/stderr, then writes the exit status to JOB_DIR/exit
(atomically): any process can read the job's state from the directory alone. Standard library
only, run as a script, so starting it costs no import of staffstore.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


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
    # Let go of the starter's pipes: its caller reads them to their end, which must come now.
    devnull = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(devnull, stream)
    supervise(job_dir)
    return 0


def supervise(job_dir: Path) -> None:
    spec = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    env = {name: value for name, value in os.environ.items() if name not in spec["withheld"]}
    env.update(spec["env"])
    with (job_dir / "stdout").open("wb") as out, (job_dir / "stderr").open("wb") as err:
        try:
            child = subprocess.Popen(
                spec["command"],
                cwd=job_dir / "work",
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
        except OSError as error:
            # As a shell would: 127 for a program that cannot be found or started.
            err.write(f"cannot start {spec['command'][0]!r}: {error}\n".encode())
            code = 127
        else:
            code = child.wait()
    write_atomically(job_dir / "exit", str(code))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
