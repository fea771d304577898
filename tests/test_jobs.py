"""ensure_dispatched against a real store file and real local processes.

Reuse by identity, attach by launch key, launch otherwise, fail closed when a worker vanishes;
a crash (SIGKILL) between recording a launch and the runner's answer, and two processes racing
on one launch key, each end in one job, not two.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from staffstore.errors import InputError, NotFoundError
from staffstore.identity import bytes_hash
from staffstore.jobs import (
    AttachPolicy,
    Collected,
    JobLimits,
    JobRequest,
    LocalCommandRunner,
    Runner,
    RunnerStatus,
    attach_job,
    cancel_job,
    ensure_dispatched,
)
from staffstore.jobs.identity import new_job
from staffstore.models import Job
from staffstore.processes import running as alive
from staffstore.store import StaffStore
from staffstore.store.jobs import LaunchRefused

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

WORKER = Path(__file__).with_name("jobs_worker.py")
QUESTION = "Which tests are flaky in the ledger replay?"
ANSWER = "test_ledger_order fails one run in ten."
FAST = AttachPolicy(deadline=5.0, poll_limit=20, interval=0.02, wait_timeout=30.0)


def job_command(
    counter: Path, *, finding: bool = True, exit_code: int = 0, release: Path | None = None
) -> list[str]:
    """A command that counts its runs in `counter`, waits for `release` to exist if given,
    prints a line and reports a finding."""
    script = (
        "import json, os, sys, time\n"
        f"open({str(counter)!r}, 'a').write('ran\\n')\n"
        + (
            f"while not os.path.exists({str(release)!r}):\n    time.sleep(0.01)\n"
            if release is not None
            else ""
        )
        + "print('scanned 12 files')\n"
        + (
            "open(os.environ['STAFFSTORE_FINDINGS'], 'a').write(json.dumps("
            f"{{'question': {QUESTION!r}, 'answer': {ANSWER!r}}}) + '\\n')\n"
            if finding
            else ""
        )
        + f"sys.exit({exit_code})\n"
    )
    return [sys.executable, "-c", script]


def runs(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def request(counter: Path, **fields: object) -> JobRequest:
    values: dict[str, object] = {
        "owner": "alice",
        "agent": "kernel",
        "kind": "analyze",
        "task": "Find the flaky tests in the ledger replay",
        "repository": "acme/staffstore",
        "revision": "abc123",
        "inputs": {"paths": ["tests/"]},
        "command": job_command(counter),
    }
    values.update(fields)
    return JobRequest.model_validate(values)


@pytest.fixture
def runner(tmp_path: Path) -> LocalCommandRunner:
    return LocalCommandRunner(tmp_path / "jobs")


@pytest.fixture
def counter(tmp_path: Path) -> Path:
    return tmp_path / "runs.txt"


# -- reuse, attach, launch ------------------------------------------------------------------------


async def test_a_finished_analysis_is_reused_naming_every_matched_field(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    first = await ensure_dispatched(store, request(counter), runner, wait=True, policy=FAST)
    again = await ensure_dispatched(
        store, request(counter, task="find flaky tests in the ledger replay"), runner, wait=True
    )
    assert (first.action, first.job.status) == ("launched", "succeeded")
    assert (again.action, again.reason, again.job.id) == ("reused", "same_identity", first.job.id)
    assert again.matched == ["agent", "task", "repository", "profile", "revision", "inputs"]
    assert again.mismatched == []
    assert runs(counter) == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"revision": "def456"}, "revision"),
        ({"inputs": {"paths": ["src/"]}}, "inputs"),
        ({"agent": "scout"}, "agent"),
        ({"profile": "strict"}, "profile"),
    ],
)
async def test_a_changed_identity_field_launches_and_is_named(
    store: StaffStore,
    runner: LocalCommandRunner,
    counter: Path,
    change: dict[str, object],
    field: str,
) -> None:
    await ensure_dispatched(store, request(counter), runner, wait=True, policy=FAST)
    changed = await ensure_dispatched(
        store, request(counter, **change), runner, wait=True, policy=FAST
    )
    assert (changed.action, changed.reason) == ("launched", "identity_changed")
    assert changed.mismatched == [field]
    assert field not in changed.matched
    assert runs(counter) == 2


@pytest.mark.parametrize(
    "task", ["Find the slow tests in the ledger replay", "Measure the build cache hit rate"]
)
async def test_a_new_task_launches_as_a_first_request_naming_no_unrelated_job(
    store: StaffStore, runner: LocalCommandRunner, counter: Path, task: str
) -> None:
    await ensure_dispatched(store, request(counter), runner, wait=True, policy=FAST)
    new = await ensure_dispatched(store, request(counter, task=task), runner, wait=True,
                                  policy=FAST)  # fmt: skip
    assert (new.action, new.reason, new.prior_job_id) == ("launched", "first_request", None)
    assert (new.matched, new.mismatched) == ([], [])


async def test_a_relaunch_after_a_failure_names_the_failed_job(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    failing = request(counter, command=job_command(counter, exit_code=3))
    first = await ensure_dispatched(store, failing, runner, wait=True, policy=FAST)
    again = await ensure_dispatched(store, request(counter), runner, wait=True, policy=FAST)
    assert (again.action, again.reason, again.prior_job_id) == (
        "launched", "prior_failed", first.job.id,
    )  # fmt: skip


async def test_an_implement_job_is_never_reused(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    implement = request(counter, kind="implement")
    first = await ensure_dispatched(store, implement, runner, wait=True, policy=FAST)
    second = await ensure_dispatched(store, implement, runner, wait=True, policy=FAST)
    assert [first.action, second.action] == ["launched", "launched"]
    assert second.reason == "implement_never_reused"
    assert first.job.id != second.job.id
    assert runs(counter) == 2


async def test_a_second_dispatch_of_a_running_job_attaches(
    store: StaffStore, runner: LocalCommandRunner, tmp_path: Path
) -> None:
    slow = request(tmp_path / "n", command=[sys.executable, "-c", "import time; time.sleep(30)"])
    first = await ensure_dispatched(store, slow, runner, policy=FAST)
    second = await ensure_dispatched(store, slow, runner, policy=FAST)
    assert (first.action, first.job.status) == ("launched", "running")
    assert (second.action, second.reason, second.job.id) == (
        "attached",
        "launch_key_unfinished",
        first.job.id,
    )
    await cancel_job(store, "alice", first.job.id, runner)


async def test_a_failed_job_makes_no_claim_and_is_not_reused(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    failing = request(counter, command=job_command(counter, exit_code=3))
    first = await ensure_dispatched(store, failing, runner, wait=True, policy=FAST)
    second = await ensure_dispatched(store, failing, runner, wait=True, policy=FAST)
    assert (first.job.status, first.job.exit_code, first.job.claim_ids) == ("failed", 3, [])
    assert await store.count_claims("alice") == 0
    assert second.action == "launched"


async def test_a_job_with_no_output_is_not_reused(
    store: StaffStore, runner: LocalCommandRunner, tmp_path: Path
) -> None:
    silent = request(tmp_path / "n", command=[sys.executable, "-c", "pass"])
    first = await ensure_dispatched(store, silent, runner, wait=True, policy=FAST)
    second = await ensure_dispatched(store, silent, runner, wait=True, policy=FAST)
    assert (first.job.status, first.job.substantive) == ("succeeded", False)
    assert (second.action, second.reason) == ("launched", "prior_not_substantive")


async def test_an_expired_job_is_not_reused(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    now = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    dated = request(counter, expires_at=now + timedelta(hours=1))
    await ensure_dispatched(store, dated, runner, wait=True, policy=FAST, now=now)
    later = await ensure_dispatched(
        store, dated, runner, wait=True, policy=FAST, now=now + timedelta(hours=2)
    )
    assert (later.action, later.reason) == ("launched", "prior_expired")


async def test_a_job_whose_claims_are_retracted_is_not_reused(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    first = await ensure_dispatched(store, request(counter), runner, wait=True, policy=FAST)
    for claim_id in first.job.claim_ids:
        await store.retract_claim("alice", claim_id)
    again = await ensure_dispatched(store, request(counter), runner, wait=True, policy=FAST)
    assert (again.action, again.reason) == ("launched", "prior_not_live")


# -- completion ---------------------------------------------------------------------------------


async def test_findings_become_job_sourced_claims_with_provenance(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    done = await ensure_dispatched(store, request(counter), runner, wait=True, policy=FAST)
    (claim_id,) = done.job.claim_ids
    claim = await store.get_claim("alice", claim_id)
    assert (claim.question, claim.answer, claim.source) == (QUESTION, ANSWER, "job")
    assert (claim.job_id, claim.agent) == (done.job.id, "kernel")
    assert (claim.repository, claim.revision) == ("acme/staffstore", "abc123")
    assert claim.inputs_fingerprint == done.job.inputs_fingerprint


async def test_outputs_are_stored_as_content_addressed_artifacts(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    done = await ensure_dispatched(store, request(counter), runner, wait=True, policy=FAST)
    stdout = next(a for a in done.job.artifacts if a.name == "stdout")
    assert stdout.artifact_id == bytes_hash(b"scanned 12 files\n")
    assert await store.get_artifact("alice", stdout.artifact_id) == b"scanned 12 files\n"


async def test_each_job_runs_in_a_fresh_working_directory(
    store: StaffStore, runner: LocalCommandRunner, tmp_path: Path
) -> None:
    # Lists the directory it starts in, then leaves a file there for the next job to find.
    script = "import os; print(sorted(os.listdir('.'))); open('left.txt', 'w').write('x')"
    look = request(tmp_path / "n", kind="implement", command=[sys.executable, "-c", script])
    outputs = []
    for _ in range(2):
        done = await ensure_dispatched(store, look, runner, wait=True, policy=FAST)
        stdout = next(a for a in done.job.artifacts if a.name == "stdout")
        outputs.append(await store.get_artifact("alice", stdout.artifact_id))
    assert outputs == [b"[]\n", b"[]\n"]


async def test_unreadable_findings_fail_the_job(
    store: StaffStore, runner: LocalCommandRunner, tmp_path: Path
) -> None:
    script = "import os; open(os.environ['STAFFSTORE_FINDINGS'], 'w').write('not json\\n')"
    bad = request(tmp_path / "n", command=[sys.executable, "-c", script])
    done = await ensure_dispatched(store, bad, runner, wait=True, policy=FAST)
    assert (done.job.status, done.job.error) == ("failed", "findings line 1 is not JSON")
    assert done.job.claim_ids == []


# -- failing closed -----------------------------------------------------------------------------


async def test_a_vanished_worker_is_lost_within_its_poll_limit(
    store: StaffStore, runner: LocalCommandRunner, tmp_path: Path
) -> None:
    slow = request(tmp_path / "n", command=[sys.executable, "-c", "import time; time.sleep(30)"])
    launched = await ensure_dispatched(store, slow, runner, policy=FAST)
    assert launched.job.handle is not None
    folder = Path(launched.job.handle)
    while not (folder / "pgid").exists():  # written once the command has started
        await asyncio.sleep(0.01)
    pid, command = (int((folder / name).read_text()) for name in ("pid", "pgid"))
    for group in (pid, command):  # the worker and its command vanish without a word
        os.killpg(group, signal.SIGKILL)
    await _gone(pid)
    policy = AttachPolicy(deadline=30.0, poll_limit=4, interval=0.01)
    again = await ensure_dispatched(store, slow, runner, policy=policy)
    assert (again.action, again.reason, again.polls) == ("lost", "status_unavailable", 4)
    assert (await store.get_job("alice", launched.job.id)).status == "lost"
    assert await store.count_claims("alice") == 0


async def _gone(pid: int) -> None:
    """Wait until `pid` has died (a zombie counts: it runs nothing)."""
    for _ in range(500):
        if not alive(pid):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"process {pid} is still running")


class SilentRunner:
    """A runner whose jobs start and are never heard of again (a queue that lost them)."""

    name = "silent"

    def __init__(self) -> None:
        self.launched: list[str] = []
        self.polls = 0

    async def launch(self, job: Job) -> str:
        self.launched.append(job.id)
        return f"silent:{job.id}"

    async def status(self, handle: str) -> RunnerStatus | None:
        self.polls += 1
        return None

    async def cancel(self, handle: str) -> None:
        return None

    async def collect(self, handle: str) -> Collected:
        raise AssertionError("a job with no status is never collected")


async def test_an_attach_waits_for_the_handle_of_a_job_another_process_is_launching(
    store: StaffStore,
) -> None:
    # Another process (a replica) recorded the job and is waiting for its runner's answer:
    # attaching now must wait for that handle, not launch the command a second time.
    silent = SilentRunner()
    record = await store.ensure_job_launch(
        new_job(request(Path("unused"), command=None), silent.name), reason="first_request"
    )
    assert not isinstance(record, LaunchRefused)
    job, _new = record
    policy = AttachPolicy(deadline=0.2, poll_limit=10_000, interval=0.02)
    attaching = asyncio.create_task(attach_job(store, "alice", job.id, silent, policy=policy))
    await asyncio.sleep(0.3)
    assert not attaching.done()
    await store.set_job_handle("alice", job.id, f"silent:{job.id}")
    attached = await attaching
    assert silent.launched == []  # watched through the other launcher's handle
    assert attached.job.handle == f"silent:{job.id}" and silent.polls > 0


async def test_an_attach_without_status_ends_lost_by_its_deadline(store: StaffStore) -> None:
    silent = SilentRunner()
    assert isinstance(silent, Runner)
    job = request(Path("unused"), command=None)
    launched = await ensure_dispatched(store, job, silent)
    policy = AttachPolicy(deadline=0.2, poll_limit=10_000, interval=0.02)
    started = asyncio.get_running_loop().time()
    lost = await attach_job(store, "alice", launched.job.id, silent, policy=policy)
    assert (lost.action, lost.job.status) == ("lost", "lost")
    assert asyncio.get_running_loop().time() - started < 2.0
    assert silent.launched == [launched.job.id]
    ledger = await store.job_ledger("alice")
    assert (ledger.launched, ledger.lost, ledger.attached) == (1, 1, 0)


async def test_cancel_stops_the_command(
    store: StaffStore, runner: LocalCommandRunner, tmp_path: Path
) -> None:
    slow = request(tmp_path / "n", command=[sys.executable, "-c", "import time; time.sleep(30)"])
    launched = await ensure_dispatched(store, slow, runner, policy=FAST)
    cancelled = await cancel_job(store, "alice", launched.job.id, runner)
    assert cancelled.status == "cancelled"
    assert launched.job.handle is not None
    assert await runner.status(launched.job.handle) == RunnerStatus("cancelled")
    await _gone(int((Path(launched.job.handle) / "pid").read_text()))


# -- bad input writes nothing -------------------------------------------------------------------


async def _nothing_written(store: StaffStore) -> None:
    assert await store.list_jobs("alice") == []
    assert (await store.job_ledger("alice")).dispatches == 0


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "deploy"},
        {"inputs": {"when": datetime(2026, 1, 1)}},
        {"inputs": {"ratio": float("nan")}},
        {"inputs": ["not", "an", "object"]},
    ],
)
async def test_bad_input_is_refused_and_writes_nothing(
    store: StaffStore, counter: Path, fields: dict[str, object]
) -> None:
    with pytest.raises(ValidationError):
        request(counter, **fields)
    await _nothing_written(store)


async def test_a_launch_key_reused_for_other_inputs_is_refused_and_writes_nothing(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    first = await ensure_dispatched(
        store, request(counter, launch_key="nightly"), runner, wait=True, policy=FAST
    )
    before = (await store.list_jobs("alice"), await store.job_ledger("alice"))
    with pytest.raises(InputError, match=r"launch key .nightly. already names job .* inputs"):
        await ensure_dispatched(
            store, request(counter, launch_key="nightly", inputs={"paths": ["src/"]}), runner
        )
    assert (await store.list_jobs("alice"), await store.job_ledger("alice")) == before
    assert first.job.status == "succeeded"


# -- owners -------------------------------------------------------------------------------------


async def test_one_owners_job_is_invisible_to_another(
    store: StaffStore, runner: LocalCommandRunner, counter: Path
) -> None:
    alice = await ensure_dispatched(store, request(counter), runner, wait=True, policy=FAST)
    bob = await ensure_dispatched(
        store, request(counter, owner="bob"), runner, wait=True, policy=FAST
    )
    assert bob.action == "launched" and bob.job.id != alice.job.id
    assert [job.id for job in await store.list_jobs("bob")] == [bob.job.id]
    for call in (
        store.get_job("bob", alice.job.id),
        attach_job(store, "bob", alice.job.id, runner),
        cancel_job(store, "bob", alice.job.id, runner),
    ):
        with pytest.raises(NotFoundError):
            await call
    assert (await store.get_job("alice", alice.job.id)).status == "succeeded"


# -- real processes: a crash mid-launch, and a race on one launch key ----------------------------


def _worker(tmp_path: Path, name: str, **args: str) -> subprocess.Popen[str]:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(args))
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(path)], stdout=subprocess.PIPE, text=True
    )


async def _wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    for _ in range(1000):
        if path.exists():
            return
        assert process.poll() is None, "the worker ended before it was ready"
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.parametrize("moment", ["stall-before", "stall-after"])
async def test_a_relaunch_after_sigkill_mid_launch_makes_one_job(
    db_path: Path, tmp_path: Path, counter: Path, moment: str
) -> None:
    job = request(counter, launch_key="crash-me")
    ready = tmp_path / "ready"
    root = tmp_path / "jobs"
    worker = _worker(
        tmp_path, "w", db=str(db_path), root=str(root), request=job.model_dump_json(),
        mode=moment, ready=str(ready),
    )  # fmt: skip
    await _wait_for(ready, worker)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    async with StaffStore.open(db_path) as store:
        (recorded,) = await store.list_jobs("alice")
        assert (recorded.status, recorded.handle) == ("pending", None)
        again = await ensure_dispatched(
            store, job, LocalCommandRunner(root), wait=True, policy=FAST
        )
        assert (again.action, again.job.id, again.job.status) == (
            "attached",
            recorded.id,
            "succeeded",
        )
        assert len(await store.list_jobs("alice")) == 1
    assert runs(counter) == 1


async def test_two_processes_racing_on_one_launch_key_launch_once(
    db_path: Path, tmp_path: Path, counter: Path
) -> None:
    async with StaffStore.open(db_path):
        pass  # migrated once, so the race is on the launch and not on the schema
    release = tmp_path / "release"
    # The job cannot end before the test releases it, so the second dispatcher always meets
    # it unfinished, however late the machine lets that process start.
    job = request(counter, launch_key="race", command=job_command(counter, release=release))
    go = tmp_path / "go"
    workers = [
        _worker(
            tmp_path,
            f"w{n}",
            db=str(db_path),
            root=str(tmp_path / "jobs"),
            request=job.model_dump_json(),
            mode="plain",
            go=str(go),
            ready=str(tmp_path / f"ready{n}"),
            wait="no",
        )
        for n in range(2)
    ]
    for n, worker in enumerate(workers):
        await _wait_for(tmp_path / f"ready{n}", worker)  # both wait for the go file
    go.touch()
    results = [json.loads(worker.communicate(timeout=60)[0]) for worker in workers]
    assert sorted(result["action"] for result in results) == ["attached", "launched"]
    assert {result["job"]["id"] for result in results} == {results[0]["job"]["id"]}
    release.touch()
    async with StaffStore.open(db_path) as store:
        done = await attach_job(
            store, "alice", results[0]["job"]["id"], LocalCommandRunner(tmp_path / "jobs"),
            wait=True, policy=FAST,
        )  # fmt: skip
        assert done.job.status == "succeeded"
        assert len(await store.list_jobs("alice")) == 1
    assert runs(counter) == 1


async def test_the_command_never_sees_staffstores_secrets(
    store: StaffStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-v1-secret-never-in-a-job")
    monkeypatch.setenv("SOME_SETTING", "kept")  # named by the operator: passed on
    script = "import os; print(os.environ.get('OPENROUTER_API_KEY'), os.environ['SOME_SETTING'])"
    look = request(tmp_path / "n", command=[sys.executable, "-c", script])
    runner = LocalCommandRunner(tmp_path / "jobs", limits=JobLimits(env=("SOME_SETTING",)))
    done = await ensure_dispatched(store, look, runner, wait=True, policy=FAST)
    stdout = next(a for a in done.job.artifacts if a.name == "stdout")
    assert await store.get_artifact("alice", stdout.artifact_id) == b"None kept\n"


async def test_a_job_is_attached_only_through_the_runner_that_runs_it(
    store: StaffStore, runner: LocalCommandRunner
) -> None:
    silent = SilentRunner()
    launched = await ensure_dispatched(store, request(Path("unused"), command=None), silent)
    with pytest.raises(InputError, match="was run by the 'silent' runner"):
        await attach_job(store, "alice", launched.job.id, runner)
    assert (await store.job_ledger("alice")).attached == 0
