"""What one job may take of the host, against a real store file and real local processes.

A run-time limit that kills the whole process group, a cap on unfinished jobs per owner and in
total, output kept up to a cap with a visible marker (read without holding it all in memory),
an environment built from an allow-list, artifacts only from regular files of the job's own
folder, a dispatcher that holds none of the job's pipes, and a status read from the job itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
import uvloop

from staffstore.jobs import (
    AttachPolicy,
    JobCapacity,
    JobLimitError,
    JobLimits,
    JobRequest,
    LocalCommandRunner,
    cancel_job,
    ensure_dispatched,
    refresh_job,
    refresh_jobs,
)
from staffstore.models import Job
from staffstore.processes import running as alive
from staffstore.store import StaffStore

FAST = AttachPolicy(deadline=5.0, poll_limit=20, interval=0.02, wait_timeout=30.0)
FOREVER = [sys.executable, "-c", "import time; time.sleep(3600)"]
MIB = 1024 * 1024


def request(command: list[str], **fields: object) -> JobRequest:
    values: dict[str, object] = {
        "owner": "alice", "agent": "kernel", "kind": "implement", "task": "Scan the ledger",
        "command": command,
    }  # fmt: skip
    values.update(fields)
    return JobRequest.model_validate(values)


def python(script: str) -> list[str]:
    return [sys.executable, "-c", script]


async def artifact(store: StaffStore, job: Job, name: str) -> bytes:
    (found,) = [a for a in job.artifacts if a.name == name]
    return await store.get_artifact(job.owner, found.artifact_id)


def names(job: Job) -> set[str]:
    return {a.name for a in job.artifacts}


async def until(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


# -- a run-time limit ---------------------------------------------------------------------------

#: Ignores SIGTERM and starts a child in its group; both write their pids, then sleep forever.
STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
open("pids", "w").write(f"{os.getpid()} {child.pid}")
time.sleep(3600)
"""


async def test_a_command_past_its_time_limit_is_killed_with_its_group_and_fails(
    store: StaffStore, tmp_path: Path
) -> None:
    runner = LocalCommandRunner(tmp_path / "jobs", limits=JobLimits(timeout=1.0, grace=0.5))
    started = time.monotonic()
    done = await ensure_dispatched(store, request(python(STUBBORN)), runner, wait=True, policy=FAST)
    assert time.monotonic() - started < 10
    assert done.job.status == "failed"
    assert done.job.error is not None and done.job.error.startswith("timed out after 1 s")
    assert done.job.handle is not None
    pids = [int(pid) for pid in (Path(done.job.handle) / "work" / "pids").read_text().split()]
    await until(lambda: not any(alive(pid) for pid in pids))


async def test_a_command_that_ends_in_time_leaves_nothing_of_its_group_running(
    store: StaffStore, tmp_path: Path
) -> None:
    script = (
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)'])\n"
        "open('pids', 'w').write(str(child.pid))\n"
    )
    runner = LocalCommandRunner(tmp_path / "jobs")
    done = await ensure_dispatched(store, request(python(script)), runner, wait=True, policy=FAST)
    assert (done.job.status, done.job.exit_code) == ("succeeded", 0)
    assert done.job.handle is not None
    left = int((Path(done.job.handle) / "work" / "pids").read_text())
    await until(lambda: not alive(left))


# -- concurrency ----------------------------------------------------------------------------------


async def test_an_owner_past_its_cap_of_unfinished_jobs_is_refused_and_nothing_is_written(
    store: StaffStore, tmp_path: Path
) -> None:
    runner = LocalCommandRunner(tmp_path / "jobs")
    capacity = JobCapacity(per_owner=2, total=10)
    first = [await ensure_dispatched(store, request(FOREVER), runner, capacity=capacity)
             for _ in range(2)]  # fmt: skip
    with pytest.raises(JobLimitError, match="alice has 2 unfinished jobs, the most allowed"):
        await ensure_dispatched(store, request(FOREVER), runner, capacity=capacity)
    assert len(await store.list_jobs("alice")) == 2
    bob = await ensure_dispatched(store, request(FOREVER, owner="bob"), runner, capacity=capacity)
    assert bob.action == "launched"
    await cancel_job(store, "alice", first[0].job.id, runner)
    again = await ensure_dispatched(store, request(FOREVER), runner, capacity=capacity)
    assert again.action == "launched"
    for job in await store.list_jobs("alice") + await store.list_jobs("bob"):
        await cancel_job(store, job.owner, job.id, runner)


async def test_every_owner_together_is_capped_too(store: StaffStore, tmp_path: Path) -> None:
    runner = LocalCommandRunner(tmp_path / "jobs")
    capacity = JobCapacity(per_owner=5, total=2)
    await ensure_dispatched(store, request(FOREVER), runner, capacity=capacity)
    await ensure_dispatched(store, request(FOREVER, owner="bob"), runner, capacity=capacity)
    with pytest.raises(JobLimitError, match="2 unfinished jobs in all"):
        await ensure_dispatched(store, request(FOREVER, owner="carol"), runner, capacity=capacity)
    for owner in ("alice", "bob"):
        for job in await store.list_jobs(owner):
            await cancel_job(store, owner, job.id, runner)


async def test_a_job_that_ended_unseen_does_not_count_against_the_cap(
    store: StaffStore, tmp_path: Path
) -> None:
    runner = LocalCommandRunner(tmp_path / "jobs")
    capacity = JobCapacity(per_owner=1, total=1)
    quick = await ensure_dispatched(store, request(python("print(1)")), runner, capacity=capacity)
    assert quick.job.handle is not None
    await until((Path(quick.job.handle) / "exit").exists)
    # Nobody attached to it: the store still says running, the job's folder says it ended.
    next_one = await ensure_dispatched(store, request(python("print(2)")), runner,
                                       capacity=capacity)  # fmt: skip
    assert next_one.action == "launched"
    assert (await store.get_job("alice", quick.job.id)).status == "succeeded"


# -- bounded output -------------------------------------------------------------------------------


async def test_stdout_past_its_cap_is_cut_with_a_marker_on_disk_and_in_the_store(
    store: StaffStore, tmp_path: Path
) -> None:
    limits = JobLimits(max_output_bytes=64 * 1024)
    runner = LocalCommandRunner(tmp_path / "jobs", limits=limits)
    noisy = python("import sys\nfor _ in range(40): sys.stdout.write('x' * 1024 * 1024)")
    done = await ensure_dispatched(store, request(noisy), runner, wait=True, policy=FAST)
    assert done.job.status == "succeeded"
    stdout = await artifact(store, done.job, "stdout")
    assert stdout.startswith(b"x" * 64 * 1024)
    assert stdout[64 * 1024 :] == (
        b"\n[staffstore: truncated: 41943040 bytes were written, the first 65536 are kept]\n"
    )
    note = await artifact(store, done.job, "truncated")
    assert note == b"stdout: 41943040 bytes, 65536 kept\n"
    assert done.job.handle is not None
    assert (Path(done.job.handle) / "stdout").stat().st_size <= 64 * 1024


async def test_a_huge_output_file_is_read_with_bounded_memory(
    store: StaffStore, tmp_path: Path
) -> None:
    # A sparse file: 300 MiB to any reader, instant to make.
    script = (
        "import os; open(os.environ['STAFFSTORE_OUTPUT'] + '/big.bin', 'wb').truncate(300 << 20)"
    )
    runner = LocalCommandRunner(tmp_path / "jobs", limits=JobLimits(max_output_bytes=MIB))
    launched = await ensure_dispatched(store, request(python(script)), runner, policy=FAST)
    assert launched.job.handle is not None
    await until((Path(launched.job.handle) / "exit").exists)
    tracemalloc.start()
    try:
        job = await refresh_job(store, "alice", launched.job.id, runner)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * MIB
    big = next(a for a in job.artifacts if a.name == "out/big.bin")
    assert MIB < big.size < MIB + 200
    assert b"314572800 bytes" in await artifact(store, job, "out/big.bin")
    assert b"out/big.bin: 314572800 bytes, 1048576 kept" in await artifact(store, job, "truncated")


async def test_a_jobs_outputs_together_stop_at_the_job_cap(
    store: StaffStore, tmp_path: Path
) -> None:
    script = (
        "import os\n"
        "for n in range(8):\n"
        "    open(os.path.join(os.environ['STAFFSTORE_OUTPUT'], f'part{n}'), 'wb')"
        ".write(b'y' * 300_000)\n"
    )
    limits = JobLimits(max_output_bytes=MIB, max_job_bytes=MIB, max_artifacts=6)
    runner = LocalCommandRunner(tmp_path / "jobs", limits=limits)
    done = await ensure_dispatched(store, request(python(script)), runner, wait=True, policy=FAST)
    kept = [a for a in done.job.artifacts if a.name.startswith("out/")]
    assert sum(a.size for a in kept) <= MIB + 200
    note = (await artifact(store, done.job, "truncated")).decode()
    assert "out/part3: 300000 bytes, 148576 kept" in note
    assert "out/part4: 300000 bytes, dropped (the job's outputs reached 1048576 bytes)" in note
    assert "out/part7: dropped (more than 6 files)" in note


async def test_findings_past_the_cap_fail_the_job(store: StaffStore, tmp_path: Path) -> None:
    script = (
        "import json, os\n"
        "line = json.dumps({'question': 'Which?', 'answer': 'z' * 1000}) + '\\n'\n"
        "open(os.environ['STAFFSTORE_FINDINGS'], 'w').write(line * 100)\n"
    )
    runner = LocalCommandRunner(tmp_path / "jobs", limits=JobLimits(max_output_bytes=10_000))
    done = await ensure_dispatched(
        store, request(python(script), kind="analyze"), runner, wait=True, policy=FAST
    )
    assert done.job.status == "failed"
    assert done.job.error == "the findings file is larger than the limit of 10000 bytes"
    assert done.job.claim_ids == []


# -- the environment ------------------------------------------------------------------------------

PRINT_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


async def test_the_command_gets_only_allowed_variables_whatever_the_secrets_are_called(
    store: StaffStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_UPSTREAM_TOKEN", "sk-or-v1-secret-under-another-name")
    monkeypatch.setenv("HMAC_FOR_STATE", "state-secret-0123456789abcdef")
    monkeypatch.setenv("LC_TIME", "C")
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("SCAN_PROFILE", "quick")
    runner = LocalCommandRunner(tmp_path / "jobs", limits=JobLimits(env=("SCAN_PROFILE",)))
    done = await ensure_dispatched(
        store, request(python(PRINT_ENV)), runner, wait=True, policy=FAST
    )
    stdout = await artifact(store, done.job, "stdout")
    assert b"secret" not in stdout
    env = json.loads(stdout)
    assert "MY_UPSTREAM_TOKEN" not in env and "HMAC_FOR_STATE" not in env
    assert (env["LC_TIME"], env["TZ"], env["SCAN_PROFILE"]) == ("C", "UTC", "quick")
    assert env["PATH"] == os.environ["PATH"] and env["STAFFSTORE_JOB_ID"] == done.job.id


async def test_the_supervisor_holds_no_secret_either(
    store: StaffStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its parent's environment is readable by the job (/proc/PPID/environ, same user).
    monkeypatch.setenv("MY_UPSTREAM_TOKEN", "sk-or-v1-secret-under-another-name")
    script = "import os; print(open(f'/proc/{os.getppid()}/environ', 'rb').read())"
    runner = LocalCommandRunner(tmp_path / "jobs")
    done = await ensure_dispatched(store, request(python(script)), runner, wait=True, policy=FAST)
    assert done.job.status == "succeeded"
    assert b"secret" not in await artifact(store, done.job, "stdout")


# -- artifacts ------------------------------------------------------------------------------------


async def test_only_regular_files_of_the_output_folder_become_artifacts(
    store: StaffStore, tmp_path: Path
) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the operator's secret")
    script = (
        "import os\n"
        "out = os.environ['STAFFSTORE_OUTPUT']\n"
        f"os.symlink({str(secret)!r}, os.path.join(out, 'link.txt'))\n"
        f"os.symlink({str(secret.parent)!r}, os.path.join(out, 'folder'))\n"
        f"os.link({str(secret)!r}, os.path.join(out, 'hard.txt'))\n"
        "os.mkfifo(os.path.join(out, 'pipe'))\n"
        "os.mkdir(os.path.join(out, 'sub'))\n"
        "open(os.path.join(out, 'sub', 'report.txt'), 'w').write('kept')\n"
    )
    runner = LocalCommandRunner(tmp_path / "jobs")
    done = await ensure_dispatched(store, request(python(script)), runner, wait=True, policy=FAST)
    assert done.job.status == "succeeded"
    assert {name for name in names(done.job) if name.startswith("out/")} == {"out/sub/report.txt"}
    for found in done.job.artifacts:
        assert b"secret" not in await store.get_artifact("alice", found.artifact_id)
    skipped = (await artifact(store, done.job, "skipped")).decode().splitlines()
    assert skipped == [
        "out/folder: not a regular file (a symbolic link)",
        "out/hard.txt: a hard link to a file with other names",
        "out/link.txt: not a regular file (a symbolic link)",
        "out/pipe: not a regular file (a FIFO)",
    ]


# -- starting without holding on ------------------------------------------------------------------


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_launch_answers_at_once_on_either_event_loop(tmp_path: Path, loop: str) -> None:
    factory = uvloop.new_event_loop if loop == "uvloop" else asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        elapsed = runner.run(_timed_launch(tmp_path))
    assert elapsed < 3.0


async def _timed_launch(tmp_path: Path) -> float:
    async with StaffStore.open(tmp_path / "s.db") as store:
        runner = LocalCommandRunner(tmp_path / "jobs")
        started = time.monotonic()
        try:
            async with asyncio.timeout(10):
                dispatch = await ensure_dispatched(store, request(FOREVER), runner)
        except TimeoutError:
            return float("inf")
        elapsed = time.monotonic() - started
        await cancel_job(store, "alice", dispatch.job.id, runner)
        return elapsed


async def test_the_command_inherits_no_descriptor_but_its_three_streams(
    store: StaffStore, tmp_path: Path
) -> None:
    script = "import os; print(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))"
    runner = LocalCommandRunner(tmp_path / "jobs")
    done = await ensure_dispatched(store, request(python(script)), runner, wait=True, policy=FAST)
    shown = json.loads(await artifact(store, done.job, "stdout"))
    assert shown[:3] == [0, 1, 2] and len(shown) == 4  # the fourth: the listing's own


# -- a status read from the job -----------------------------------------------------------------


async def test_a_job_that_ended_is_read_as_ended_without_an_attach(
    store: StaffStore, tmp_path: Path
) -> None:
    runner = LocalCommandRunner(tmp_path / "jobs")
    fails = await ensure_dispatched(store, request(python("raise SystemExit(3)")), runner)
    ends = await ensure_dispatched(store, request(python("print('ok')")), runner)
    for launched in (fails, ends):
        assert launched.job.handle is not None
        await until((Path(launched.job.handle) / "exit").exists)
    assert {job.status for job in await store.list_jobs("alice")} == {"running"}
    read = await refresh_job(store, "alice", fails.job.id, runner)
    assert (read.status, read.exit_code) == ("failed", 3)
    assert await refresh_jobs(store, "alice", runner, status="running") == []
    listed = await refresh_jobs(store, "alice", runner)
    assert [job.status for job in listed] == ["succeeded", "failed"]
    assert (await store.job_ledger("alice")).attached == 0  # a read is not a dispatch


async def test_a_job_whose_supervisor_vanished_is_read_as_lost_after_the_deadline(
    store: StaffStore, tmp_path: Path
) -> None:
    runner = LocalCommandRunner(tmp_path / "jobs")
    launched = await ensure_dispatched(store, request(FOREVER), runner)
    assert launched.job.handle is not None
    folder = Path(launched.job.handle)
    await until((folder / "pgid").exists)  # written once the command has started
    supervisor, command = (int((folder / name).read_text()) for name in ("pid", "pgid"))
    os.kill(supervisor, 9)
    os.killpg(command, 9)
    await until(lambda: not alive(supervisor))
    soon = await refresh_job(store, "alice", launched.job.id, runner, policy=FAST)
    assert soon.status == "running"  # within the deadline it may yet be heard of
    quick = AttachPolicy(deadline=0.0)
    lost = await refresh_job(store, "alice", launched.job.id, runner, policy=quick)
    assert lost.status == "lost"
