"""A dispatching process for the crash and concurrency tests: `python jobs_worker.py ARGS.json`.

ARGS holds the database, the runner's root, the request, and a mode:
  plain        dispatch (wait for the job to end) and print the Dispatch as JSON
  stall-before write the `ready` marker once the job is recorded, then hang before the runner
               is called (the test kills this process with SIGKILL there)
  stall-after  let the runner start the job, write `ready`, then hang before its answer is
               recorded (killed there too)
A `go` file, when named, is waited for before dispatching (after touching `ready`), so two
workers start together; `wait` "no" returns as soon as the job is launched or attached.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from staffstore.jobs import JobRequest, LocalCommandRunner, ensure_dispatched
from staffstore.models import Job
from staffstore.store import StaffStore


class StallingRunner(LocalCommandRunner):
    """The local runner, hanging around its launch so a test can kill the process there."""

    def __init__(self, root: Path, ready: Path, after: bool) -> None:
        super().__init__(root)
        self.ready = ready
        self.after = after

    async def launch(self, job: Job) -> str:
        if self.after:
            await super().launch(job)
        self.ready.write_text(job.id)
        await asyncio.sleep(3600)
        raise AssertionError("the test should have killed this process")


async def main(args: dict[str, str]) -> None:
    go = args.get("go")
    if args.get("ready") and go:
        Path(args["ready"]).touch()  # started, and waiting for the go file
    while go and not Path(go).exists():
        time.sleep(0.005)
    request = JobRequest.model_validate_json(args["request"])
    mode = args["mode"]
    runner = (
        LocalCommandRunner(args["root"])
        if mode == "plain"
        else StallingRunner(Path(args["root"]), Path(args["ready"]), mode == "stall-after")
    )
    async with StaffStore.open(args["db"]) as store:
        dispatch = await ensure_dispatched(
            store, request, runner, wait=args.get("wait", "yes") == "yes"
        )
    print(dispatch.model_dump_json())


if __name__ == "__main__":
    asyncio.run(main(json.loads(Path(sys.argv[1]).read_text())))
