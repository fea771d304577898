"""The jobs replay: a day of requests for work, through ensure_dispatched and real processes.

Requests for analyses of a few repositories at two revisions, in other words, with changed
inputs, another agent, implement requests, relaunches after a crash between recording a launch
and the runner's answer, and workers killed with SIGKILL, are played (replays/jobs.json) with the
embedded LocalCommandRunner against a temporary store. Each request's gold label (reuse,
attach, launch, lost) was written with the script; the dispatcher never sees it. A job's
command waits for the replay to release it, so which job is still running when a duplicate
arrives is part of the script, not a race; every command run is counted in a file of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from ..jobs import AttachPolicy, Dispatch, JobRequest, LocalCommandRunner, ensure_dispatched
from ..jobs.identity import launch_key_of
from ..models import Job
from ..processes import running
from ..store import StaffStore
from .data import load
from .harness import ReplayError, ReplayOutput, StoreFor, store_at

DATA_FILE = "jobs.json"
OWNER = "acme"
Gold = Literal["reuse", "attach", "launch", "lost"]
#: The action a gold label expects.
EXPECTED = {"reuse": "reused", "attach": "attached", "launch": "launched", "lost": "lost"}

#: Attaches give up on a silent worker after 5 polls 20 ms apart, or 5 seconds.
POLICY = AttachPolicy(deadline=5.0, poll_limit=5, interval=0.02, wait_timeout=60.0)

#: A job's command: count the run, wait to be released, then report the finding (analyses).
COMMAND = """\
import json, os, sys, time
runs, release, question, answer = sys.argv[1:5]
with open(runs, "a") as out:
    out.write(os.environ["STAFFSTORE_JOB_ID"] + "\\n")
deadline = time.monotonic() + 60
while not os.path.exists(release):
    if time.monotonic() > deadline:
        sys.exit("never released")
    time.sleep(0.005)
if question:
    with open(os.environ["STAFFSTORE_FINDINGS"], "a") as out:
        out.write(json.dumps({"question": question, "answer": answer}) + "\\n")
print("done:", question or "implemented")
"""

SUMMARY_DEFINITIONS = {
    "requests": "dispatches played",
    "launched": "requests that recorded and launched a new job",
    "reused": "requests answered by a finished job without a launch (jobs avoided)",
    "attached": "requests that attached to an unfinished job under the same launch key",
    "lost": "requests whose attached job gave no status within the deadline and poll limit",
    "correct": "requests whose action is the one their gold label expects",
    "duplicate_launches": "launches on a request whose gold label is reuse or attach",
    "wrong_reuses": "reuses on a request whose gold label is not reuse",
    "implement_reuses": "implement requests answered by reuse (must be 0)",
    "vanished": "requests whose gold label is lost (their worker was killed with SIGKILL)",
    "lost_within_deadline": "gold-lost requests marked lost within the policy's polls and deadline",
    "reported_succeeded_after_vanishing": "gold-lost requests reported as anything but lost",
    "command_runs": "times a job's command actually started (each run appends to a file)",
    "jobs_recorded": "job records in the store at the end",
    "claims_stored": "job-sourced claims in the store at the end",
}


class SimulatedCrash(Exception):
    """The dispatching process 'dies' here: the replay drops the call, as a crash would."""


class CrashingRunner(LocalCommandRunner):
    """The local runner, crashing its caller around the next launch when told to."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.crash: str | None = None

    async def launch(self, job: Job) -> str:
        crash, self.crash = self.crash, None
        if crash == "before_runner":
            raise SimulatedCrash
        handle = await super().launch(job)
        if crash == "after_runner":
            raise SimulatedCrash  # the runner started it; its answer is never recorded
        return handle


@dataclass(frozen=True)
class Step:
    """One scripted request and what happens around it."""

    number: int
    work: str
    kind: Literal["analyze", "implement"]
    wording: int
    text: str
    agent: str
    repository: str
    revision: str
    inputs_name: str
    inputs: dict[str, Any]
    gold: Gold
    category: str
    wait: bool
    crash: str | None
    vanish: bool
    question: str
    answer: str

    @property
    def work_key(self) -> str:
        """What the script calls this piece of work (its release file): one per analysis,
        revision, inputs and agent; each implement request is work of its own."""
        if self.kind == "implement":
            return f"{self.work}-{self.number}"
        return f"{self.work}-{self.agent}-{self.revision}-{self.inputs_name}"

    def spec(self) -> dict[str, Any]:
        return {
            "request": self.number, "kind": self.kind, "work": self.work, "task": self.text,
            "agent": self.agent, "repository": self.repository, "revision": self.revision,
            "inputs": self.inputs, "gold": self.gold, "category": self.category,
            "wait": self.wait, "crash": self.crash, "vanish": self.vanish,
        }  # fmt: skip


def script(data: dict[str, Any], quick: bool) -> list[Step]:
    revisions = data["revisions"]
    steps = []
    for number, item in enumerate(data["script"], start=1):
        analysis = data["analyses"].get(item["work"])
        kind: Literal["analyze", "implement"] = "analyze" if analysis else "implement"
        work = analysis or data["implements"][item["work"]]
        inputs_name = item.get("inputs", "base")
        steps.append(
            Step(
                number=number,
                work=item["work"],
                kind=kind,
                wording=item["wording"],
                text=work["wordings"][item["wording"]],
                agent=item.get("agent", work["agent"]),
                repository=work["repository"],
                revision=revisions[item["revision"]],
                inputs_name=inputs_name,
                inputs=analysis["inputs"][inputs_name] if analysis else {"step": number},
                gold=item["gold"],
                category=item["category"],
                wait=item.get("wait", False),
                crash=item.get("crash"),
                vanish=item.get("vanish", False),
                question=analysis["question"] if analysis else "",
                answer=f"{analysis['answer']} (at {item['revision']})" if analysis else "",
            )
        )
    return steps[:12] if quick else steps


async def _gone(pid: int) -> None:
    """Wait until `pid` no longer runs (a zombie runs nothing)."""
    for _ in range(1000):
        if not running(pid):
            return
        await asyncio.sleep(0.01)
    raise ReplayError(f"process {pid} survived SIGKILL")


class Player:
    """Plays the steps, one dispatch each, and turns each into a ledger row."""

    def __init__(self, store: StaffStore, workdir: Path, start: datetime, step: timedelta):
        self.store = store
        self.runner = CrashingRunner(workdir / "jobs")
        self.releases = workdir / "release"
        self.releases.mkdir()
        self.runs = workdir / "runs.txt"
        self.start, self.step = start, step
        self.labels: dict[str, str] = {}  # job id -> "request N", the request that made it

    def _request(self, step: Step) -> JobRequest:
        command = [
            sys.executable, "-c", COMMAND, str(self.runs), str(self.releases / step.work_key),
            step.question, step.answer,
        ]  # fmt: skip
        return JobRequest(
            owner=OWNER, agent=step.agent, kind=step.kind, task=step.text,
            repository=step.repository, revision=step.revision, inputs=step.inputs,
            command=command,
        )  # fmt: skip

    async def _started(self, job_id: str) -> None:
        for _ in range(1000):
            if self.runs.exists() and job_id in self.runs.read_text().split():
                return
            await asyncio.sleep(0.005)
        raise ReplayError(f"job {job_id} never started its command")

    def _label(self, job_id: str | None, step: Step) -> str | None:
        if job_id is None:
            return None
        return self.labels.setdefault(job_id, f"request {step.number}")

    async def play(self, step: Step) -> dict[str, Any]:
        now = self.start + (step.number - 1) * self.step
        request = self._request(step)
        if step.wait:
            (self.releases / step.work_key).touch()
        self.runner.crash = step.crash
        started = time.monotonic()
        dispatch: Dispatch | None = None
        with contextlib.suppress(SimulatedCrash):
            dispatch = await ensure_dispatched(
                self.store, request, self.runner, policy=POLICY, wait=step.wait, now=now
            )
        elapsed = time.monotonic() - started
        if dispatch is None:
            # The crash left the launch record (and its receipt) behind: that is the launch.
            job = await self.store.launch_key_job(OWNER, launch_key_of(request))
            if job is None:
                raise ReplayError(f"request {step.number} crashed before recording its job")
            action, reason, matched, mismatched, polls = "launched", "crashed", [], [], 0
        else:
            job, action, reason = dispatch.job, dispatch.action, dispatch.reason
            matched, mismatched, polls = dispatch.matched, dispatch.mismatched, dispatch.polls
        if step.vanish:
            if job.handle is None:
                raise ReplayError(f"request {step.number} has no process to kill")
            await self._started(job.id)  # a worker that was at work, then vanished
            folder = Path(job.handle)
            pid = int((folder / "pid").read_text())
            # The supervisor, and the command in a process group of its own (whose id the
            # supervisor writes just after the command starts).
            for _ in range(1000):
                if (folder / "pgid").exists():
                    break
                await asyncio.sleep(0.005)
            for name in ("pid", "pgid"):
                with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                    os.killpg(int((folder / name).read_text()), signal.SIGKILL)
            await _gone(pid)
        expected = EXPECTED[step.gold]
        return {
            **step.spec(),
            "action": action,
            "reason": reason,
            "matched": matched,
            "mismatched": mismatched,
            "job": self._label(job.id, step),
            "job_status": job.status,
            # Only a lost job's polls are fixed by the script: all of them went unanswered.
            "polls_until_lost": polls if action == "lost" else None,
            "correct": action == expected,
            "duplicate_launch": action == "launched" and step.gold in ("reuse", "attach"),
            "wrong_reuse": action == "reused" and step.gold != "reuse",
            "implement_reuse": action == "reused" and step.kind == "implement",
            "lost_within_deadline": step.gold == "lost"
            and action == "lost"
            and polls <= POLICY.poll_limit
            and elapsed < POLICY.deadline,
        }


def summarize(rows: list[dict[str, Any]], extra: dict[str, int]) -> dict[str, Any]:
    actions = Counter(row["action"] for row in rows)
    vanished = [row for row in rows if row["gold"] == "lost"]
    return {
        "requests": len(rows),
        "launched": actions["launched"],
        "reused": actions["reused"],
        "attached": actions["attached"],
        "lost": actions["lost"],
        "correct": sum(row["correct"] for row in rows),
        "duplicate_launches": sum(row["duplicate_launch"] for row in rows),
        "wrong_reuses": sum(row["wrong_reuse"] for row in rows),
        "implement_reuses": sum(row["implement_reuse"] for row in rows),
        "vanished": len(vanished),
        "lost_within_deadline": sum(row["lost_within_deadline"] for row in rows),
        "reported_succeeded_after_vanishing": sum(row["action"] != "lost" for row in vanished),
        **extra,
    }


def categories(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per category of request: its gold labels and what the dispatcher did."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = found.setdefault(
            row["category"], {"requests": 0, "gold": [], "actions": {}, "correct": 0}
        )
        entry["requests"] += 1
        if row["gold"] not in entry["gold"]:
            entry["gold"].append(row["gold"])
        entry["actions"][row["action"]] = entry["actions"].get(row["action"], 0) + 1
        entry["correct"] += row["correct"]
    return found


async def play(
    workdir: Path, seed: int, quick: bool, store_for: StoreFor | None = None
) -> ReplayOutput:
    """Play the jobs replay in `workdir`; the seed is recorded (the script is fixed)."""
    data = load(DATA_FILE)
    steps = script(data, quick)
    start = datetime.fromisoformat(data["clock"]["start"])
    step = timedelta(minutes=data["clock"]["step_minutes"])
    async with StaffStore.open(store_at(workdir, "jobs.db", store_for)) as store:
        player = Player(store, workdir, start, step)
        rows = [await player.play(item) for item in steps]
        for job in await store.list_jobs(OWNER, status="running", limit=10_000):
            if job.handle is not None:  # a script that ends with work in flight: stop it
                await player.runner.cancel(job.handle)
        ledger = await store.job_ledger(OWNER)
        jobs = await store.list_jobs(OWNER, limit=10_000)
        claims = await store.count_claims(OWNER)
    runs = player.runs.read_text().splitlines() if player.runs.exists() else []
    extra = {"command_runs": len(runs), "jobs_recorded": len(jobs), "claims_stored": claims}
    spec = {
        "name": "jobs",
        "seed": seed,
        "quick": quick,
        "owner": OWNER,
        "clock": {"start": start.isoformat(), "step_minutes": data["clock"]["step_minutes"]},
        "runner": "local (LocalCommandRunner): one process per job, released by the replay",
        "policy": {
            "deadline_seconds": POLICY.deadline,
            "poll_limit": POLICY.poll_limit,
            "interval_seconds": POLICY.interval,
        },
        "requests": [item.spec() for item in steps],
    }
    result = {
        "name": "jobs",
        "seed": seed,
        "quick": quick,
        "definitions": SUMMARY_DEFINITIONS,
        "summary": summarize(rows, extra),
        "store_ledger": ledger.model_dump(),
        "categories": categories(rows),
        "rows": rows,
    }
    return ReplayOutput(spec=spec, ledger=json.loads(json.dumps(result)))
