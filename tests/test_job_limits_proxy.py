"""Jobs cannot take the host, through a real proxy on 127.0.0.1 (issue 36, item 3).

A dispatch answers at once whatever the command does, on either event loop; a command past its
run-time limit is read back as failed; one owner, and all of them together, get 429 past their
cap of unfinished jobs; a huge output is kept to its cap; the job sees none of the server's
secrets whatever they are called; a GET reads the job's real state; and the job routes use the
server's own store rather than a connection of their own.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from test_proxy_support import ALICE_KEY, BOB_KEY, Server, Upstream, proxy_config, running_proxy

from staffstore.errors import InputError
from staffstore.proxy.app import create_app
from staffstore.proxy.config import build_config
from staffstore.proxy.run import serve_in_thread
from staffstore.store import StaffStore

FOREVER = (sys.executable, "-c", "import time; time.sleep(3600)")
PRINT_ENV = (sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))")
JOB = {"agent": "kernel", "kind": "implement", "task": "Scan the ledger"}
MIB = 1024 * 1024
#: Writes 64 MiB to its standard output.
NOISY = f"import sys\nfor _ in range(64): sys.stdout.write('x' * {MIB})"


def dispatch(base_url: str, command: str, key: str = ALICE_KEY, **fields: Any) -> httpx.Response:
    return httpx.post(
        base_url + "/staffstore/jobs/dispatch",
        json={**JOB, "command": command, **fields},
        headers={"authorization": f"Bearer {key}"},
        timeout=30,
    )


def read_job(server: Server, job_id: str) -> dict[str, Any]:
    response = server.get(f"/v1/staffstore/jobs/{job_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def settled(server: Server, job_id: str, timeout: float = 15.0) -> dict[str, Any]:
    """The job as GET shows it once it no longer says pending or running."""
    deadline = time.monotonic() + timeout
    while True:
        job = read_job(server, job_id)
        if job["status"] not in ("pending", "running"):
            return job
        assert time.monotonic() < deadline, f"GET still says {job['status']}"
        time.sleep(0.05)


async def _artifact(db: Path, owner: str, job_id: str, name: str) -> bytes:
    async with StaffStore.open(db) as store:
        job = await store.get_job(owner, job_id)
        (found,) = [a for a in job.artifacts if a.name == name]
        return await store.get_artifact(owner, found.artifact_id)


@contextmanager
def on_loop(loop: str, db: Path, **overrides: Any) -> Iterator[str]:
    """The proxy served by uvicorn on the named event loop ("asyncio" or "uvloop")."""
    app = create_app(proxy_config(db, **overrides), transport=Upstream())
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, loop=loop, lifespan="on", log_config=None, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the server did not start"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_dispatch_of_a_never_ending_command_answers_at_once(tmp_path: Path, loop: str) -> None:
    commands = {"forever": FOREVER}
    with on_loop(loop, tmp_path / "s.db", job_commands=commands, jobs_dir=tmp_path / "jobs",
                 job_timeout=2.0) as base_url:  # fmt: skip
        started = time.monotonic()
        try:
            response = dispatch(base_url, "forever")
        except httpx.ReadTimeout:
            pytest.fail("no answer within 30 s")
        elapsed = time.monotonic() - started
    assert response.status_code == 201, response.text
    assert response.json()["job"]["status"] == "running"
    assert elapsed < 3.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("job-limits")
    commands = {
        "forever": FOREVER,
        "quick": (sys.executable, "-c", "print('done')"),
        "noisy": (sys.executable, "-c", NOISY),
    }  # fmt: skip
    with running_proxy(
        folder / "s.db", job_commands=commands, jobs_dir=folder / "jobs", job_timeout=1.0,
        job_max_running=100, job_max_output_bytes=MIB,
    ) as run:  # fmt: skip
        yield run


def test_a_command_past_its_time_limit_is_read_back_as_failed(server: Server) -> None:
    launched = dispatch(server.base_url, "forever", task="Sleep past the limit")
    assert launched.status_code == 201, launched.text
    job = settled(server, launched.json()["job"]["id"])
    assert job["status"] == "failed"
    assert job["error"].startswith("timed out after 1 s")


def test_get_reads_a_job_that_ended_as_ended_without_an_attach(server: Server) -> None:
    launched = dispatch(server.base_url, "quick", task="End quickly")
    job = settled(server, launched.json()["job"]["id"], timeout=10)
    assert (job["status"], job["exit_code"]) == ("succeeded", 0)
    assert "stdout" in {artifact["name"] for artifact in job["artifacts"]}
    assert server.get("/v1/staffstore/ledger").json()["jobs"]["attached"] == 0


def test_a_huge_stdout_is_kept_to_its_cap_and_the_job_says_so(server: Server) -> None:
    before = server.db.stat().st_size
    launched = dispatch(server.base_url, "noisy", task="Write 64 MiB", wait=True)
    assert launched.status_code == 201, launched.text
    job = launched.json()["job"]
    assert job["status"] == "succeeded"
    sizes = {artifact["name"]: artifact["size"] for artifact in job["artifacts"]}
    assert MIB < sizes["stdout"] < MIB + 200
    assert "truncated" in sizes  # the note that names what was cut, and how much
    stdout = asyncio.run(_artifact(server.db, "alice", job["id"], "stdout"))
    assert stdout.endswith(b"67108864 bytes were written, the first 1048576 are kept]\n")
    wal = server.db.with_name(server.db.name + "-wal")
    grown = server.db.stat().st_size + (wal.stat().st_size if wal.exists() else 0) - before
    assert grown < 8 * MIB


def _at_once(calls: int, send: Any) -> list[httpx.Response]:
    with ThreadPoolExecutor(calls) as pool:
        return list(pool.map(lambda _: send(), range(calls)))


def test_one_owner_and_all_owners_are_capped_with_429(tmp_path: Path) -> None:
    commands = {"forever": FOREVER}
    with running_proxy(
        tmp_path / "s.db", job_commands=commands, jobs_dir=tmp_path / "jobs", job_timeout=5.0,
        job_max_running_total=6,
    ) as run:  # fmt: skip
        alice = _at_once(12, lambda: dispatch(run.base_url, "forever"))
        bob = _at_once(4, lambda: dispatch(run.base_url, "forever", key=BOB_KEY))
    codes = sorted(response.status_code for response in alice)
    assert codes == [201] * 4 + [429] * 8  # the default cap: 4 unfinished jobs an owner
    assert sorted(response.status_code for response in bob) == [201, 201, 429, 429]
    refused = next(response for response in alice if response.status_code == 429)
    error = refused.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"]) == ("rate_limit_error", "too_many_jobs")
    assert "4 unfinished jobs" in error["message"]
    total = next(response for response in bob if response.status_code == 429).json()["error"]
    assert "as many jobs in all as it allows" in total["message"]
    assert "6" not in total["message"]  # how many other tenants run is not bob's business


def test_a_job_sees_none_of_the_servers_secrets_whatever_their_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_MODEL_TOKEN", "sk-or-v1-upstream-secret-by-another-name")
    monkeypatch.setenv("ACME_STATE_HMAC", "state-secret-by-another-name-0123456789")
    monkeypatch.setenv("SCAN_PROFILE", "quick")
    path = tmp_path / "serve.toml"
    path.write_text(
        '[serve]\nupstream_key_env = "ACME_MODEL_TOKEN"\nstate_key_env = "ACME_STATE_HMAC"\n'
        f'[serve.jobs]\ndir = "jobs"\nenv = ["SCAN_PROFILE"]\n'
        f"[serve.jobs.commands]\nenv = {json.dumps(list(PRINT_ENV))}\n"
    )
    config = build_config(config_file=path, db_path=tmp_path / "s.db",
                          owner_keys=[f"alice={ALICE_KEY}"])  # fmt: skip
    assert config.upstream_key is not None and config.state_key is not None
    with serve_in_thread(config, transport=Upstream()) as base_url:
        done = dispatch(base_url, "env", wait=True)
    assert done.status_code == 201, done.text
    stdout = asyncio.run(_artifact(tmp_path / "s.db", "alice", done.json()["job"]["id"], "stdout"))
    assert b"secret" not in stdout
    env = json.loads(stdout)
    assert env["SCAN_PROFILE"] == "quick" and env["PATH"] == os.environ["PATH"]


def test_a_job_route_uses_the_servers_store_not_a_connection_of_its_own(tmp_path: Path) -> None:
    release, started = tmp_path / "release", tmp_path / "started"
    script = (
        "import os, sys, time\n"
        "open(sys.argv[2], 'w').close()\n"
        "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
    )
    commands = {"held": (sys.executable, "-c", script, str(release), str(started))}
    db = tmp_path / "s.db"
    with running_proxy(db, job_commands=commands, jobs_dir=tmp_path / "jobs") as run:
        before = _open_on(db)
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(dispatch, run.base_url, "held", wait=True)
            deadline = time.monotonic() + 10
            while not started.exists():
                assert time.monotonic() < deadline, "the job never started"
                time.sleep(0.01)
            during = _open_on(db)
            release.touch()
            assert waiting.result().status_code == 201
    assert during == before


def _open_on(db: Path) -> int:
    """How many of this process's descriptors are open on the database or its -wal/-shm."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        count += target.startswith(str(db))
    return count


@pytest.mark.parametrize(
    ("table", "fields"),
    [
        ("timeout = 30\nmax_running = 2\nmax_running_total = 3\n",
         {"job_timeout": 30.0, "job_max_running": 2, "job_max_running_total": 3}),
        ("max_output_bytes = 1024\nmax_job_bytes = 4096\nenv = ['CI']\n",
         {"job_max_output_bytes": 1024, "job_max_job_bytes": 4096, "job_env": ("CI",)}),
    ],
)  # fmt: skip
def test_the_config_file_sets_the_job_limits(
    tmp_path: Path, table: str, fields: dict[str, Any]
) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(f"[serve.jobs]\n{table}")
    config = build_config(config_file=path, owner_keys=["alice=sk-local-a"], environ={})
    assert {name: getattr(config, name) for name in fields} == fields


def test_the_job_limits_have_defaults() -> None:
    config = proxy_config(Path("s.db"))
    assert (config.job_timeout, config.job_max_running, config.job_max_running_total) == (
        600.0, 4, 16,
    )  # fmt: skip
    assert (config.job_max_output_bytes, config.job_max_job_bytes, config.job_env) == (
        4 * MIB, 16 * MIB, (),
    )  # fmt: skip


@pytest.mark.parametrize(
    "table",
    ["timeout = 0\n", "max_running = 0\n", "max_output_bytes = -1\n", "env = 'PATH'\n",
     "env = ['OPENROUTER_API_KEY']\n", "env = ['STAFFSTORE_STATE_KEY']\n"],
)  # fmt: skip
def test_a_bad_job_limit_is_an_input_error(tmp_path: Path, table: str) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(f"[serve.jobs]\n{table}")
    with pytest.raises(InputError, match=r"\[serve.jobs\]"):
        build_config(config_file=path, owner_keys=["alice=sk-local-a"], environ={})
