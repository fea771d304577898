"""Several `staffstore serve` processes on one PostgreSQL store behave as one proxy.

Two real replicas (separate processes, `staffstore --db postgresql://... serve`) share a fresh
migrated database on the throwaway server, in front of one fake upstream that counts its calls.
An exact repeat sent to both at once is paid once; a claim promoted on one answers on the
other; a compare-and-swap has one winner and a launch key one job whichever replica each
request reaches; 200 clients at once over both lose no receipt; a lease left by a replica that
died holds its call up only until it runs out.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from test_serve_command import free_port

from staffstore.models import Receipt
from staffstore.proxy.config import hash_key
from staffstore.proxy.wire import read_chat_request
from staffstore.store import StaffStore
from staffstore.testing import FakeOpenRouter
from staffstore.testing.postgres import ThrowawayPostgres

pytestmark = pytest.mark.postgres

UPSTREAM_KEY = "sk-replicas-upstream"
#: Client keys by owner: each test that counts an owner's receipts has an owner of its own.
KEYS = {owner: f"sk-replicas-{owner}" for owner in ("acme", "solo", "load", "crash")}
ADMIN_KEY = "sk-replicas-acme-admin"
#: Long enough that a slow answer (below) never times out, so every lease outlives its call.
UPSTREAM_TIMEOUT = 10.0
#: How long the fake upstream takes to answer a call that others should be waiting on.
SLOW = 0.4
#: A job's command: note that it ran (in a file every replica's jobs share), then take a
#: moment, so the job is still running while the other replica's dispatch arrives.
JOB_SCRIPT = "import sys, time\nopen(sys.argv[1], 'a').write('ran\\n')\ntime.sleep(0.5)\n"


@dataclass
class Replicas:
    """The running replicas, the store they share and the upstream behind them."""

    url: str
    ports: list[int]
    fake: FakeOpenRouter
    job_runs: Path

    def base_url(self, replica: int) -> str:
        return f"http://127.0.0.1:{self.ports[replica]}/v1"

    def sdk(self, replica: int, owner: str = "acme") -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=self.base_url(replica), api_key=KEYS[owner], max_retries=0, timeout=30
        )

    def calls_asking(self, question: str) -> int:
        """The upstream calls whose last message was `question`."""
        return sum(
            1
            for request in self.fake.chat_requests
            if request.json["messages"][-1]["content"] == question
        )


def _start(
    url: str, upstream_url: str, port: int, config: Path, log: Path
) -> subprocess.Popen[bytes]:
    keys = [
        option
        for owner, key in KEYS.items()
        for option in ("--owner-key", f"{owner}=sha256:{hash_key(key)}")
    ]
    command = [
        sys.executable, "-m", "staffstore", "--db", url, "serve", "--port", str(port),
        "--upstream", upstream_url, *keys, "--admin-key", f"acme=sha256:{hash_key(ADMIN_KEY)}",
        "--config", str(config), "--timeout", str(UPSTREAM_TIMEOUT), "--upstream-retries", "0",
        "--log-level", "warning",
    ]  # fmt: skip
    env = {**os.environ, "OPENROUTER_API_KEY": UPSTREAM_KEY}
    with log.open("wb") as output:
        return subprocess.Popen(command, env=env, stdout=output, stderr=output)


def _wait_until_up(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError(f"serve did not start: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def replicas(
    postgres_server: ThrowawayPostgres,
    postgres_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Replicas]:
    folder = tmp_path_factory.mktemp("replicas")
    name = f"replicas_{uuid.uuid4().hex[:12]}"
    url = postgres_server.create_database(name, template=postgres_template)
    job_runs = folder / "job-runs.txt"
    config = folder / "serve.toml"
    # One jobs folder for both replicas, as replicas on one machine (or one shared volume)
    # have: a job's folder is its one launch, whichever replica gets there first.
    scan = json.dumps([sys.executable, "-c", JOB_SCRIPT, str(job_runs)])
    config.write_text(f'[serve.jobs]\ndir = "jobs"\n[serve.jobs.commands]\nscan = {scan}\n')
    fake = FakeOpenRouter(api_key=UPSTREAM_KEY)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with fake.serve_in_thread() as upstream_url:
            ports = [free_port(), free_port()]
            logs = [folder / f"replica-{n}.log" for n in range(len(ports))]
            processes = [
                _start(url, upstream_url, port, config, log)
                for port, log in zip(ports, logs, strict=True)
            ]
            for port, process, log in zip(ports, processes, logs, strict=True):
                _wait_until_up(port, process, log)
            yield Replicas(url, ports, fake, job_runs)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        postgres_server.drop_database(name)


async def _receipts(url: str, owner: str) -> list[Receipt]:
    async with StaffStore.open(url) as store:
        return await store.list_receipts(owner, limit=10_000)


def _ask(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": "fake/model", "messages": [{"role": "user", "content": question}], **extra}


async def test_an_exact_repeat_sent_to_both_replicas_at_once_is_paid_once(
    replicas: Replicas,
) -> None:
    question = "Which replica pays for a question both are asked at once?"
    replicas.fake.answer(delay=SLOW)  # both requests are in before the answer is
    clients = [replicas.sdk(n, owner="solo") for n in (0, 1)]
    raws = await asyncio.gather(
        *(
            client.chat.completions.with_raw_response.create(
                model="fake/model", messages=[{"role": "user", "content": question}]
            )
            for client in clients
        )
    )
    for client in clients:
        await client.close()
    assert replicas.calls_asking(question) == 1
    answers = [raw.parse().choices[0].message.content for raw in raws]
    assert answers == [f"echo: {question}"] * 2
    by_outcome = {raw.headers["x-staffstore-outcome"]: raw for raw in raws}
    assert set(by_outcome) == {"miss", "hit"}
    paid_id = by_outcome["miss"].headers["x-staffstore-receipt"]
    assert by_outcome["hit"].headers["x-staffstore-reason"] == "exact_repeat"
    assert by_outcome["hit"].headers["x-staffstore-kept-from"] == paid_id

    receipts = {r.id: r for r in await _receipts(replicas.url, "solo")}
    assert len(receipts) == 2
    paid, hit = receipts[paid_id], receipts[by_outcome["hit"].headers["x-staffstore-receipt"]]
    assert (paid.status, paid.inference_attempted, paid.cost_usd) == ("ok", True, 0.0001)
    assert (hit.status, hit.inference_attempted, hit.inference_avoided) == ("hit", False, True)
    assert (hit.served_from, hit.avoided_cost_usd, hit.cost_usd) == (paid_id, 0.0001, None)
    ledger = httpx.get(
        f"{replicas.base_url(1)}/staffstore/ledger",
        headers={"authorization": f"Bearer {KEYS['solo']}"},
    ).json()
    assert (ledger["turns"], ledger["misses"], ledger["hits"]) == (2, 1, 1)
    assert (ledger["attempted_calls"], ledger["avoided_calls"]) == (1, 1)


async def test_a_claim_promoted_on_one_replica_answers_on_the_other(replicas: Replicas) -> None:
    question = "What port does the billing service listen on in staging?"
    async with httpx.AsyncClient(timeout=30) as http:
        paid = await http.post(
            f"{replicas.base_url(0)}/chat/completions",
            json=_ask(question),
            headers={"authorization": f"Bearer {KEYS['acme']}"},
        )
        assert paid.headers["x-staffstore-outcome"] == "miss"
        promoted = await http.post(
            f"{replicas.base_url(0)}/staffstore/claims",
            json={"receipt_id": paid.headers["x-staffstore-receipt"]},
            headers={"authorization": f"Bearer {ADMIN_KEY}"},
        )
        assert promoted.status_code == 201, promoted.text
        # Not an exact repeat (another temperature): only the claim can answer it.
        served = await http.post(
            f"{replicas.base_url(1)}/chat/completions",
            json=_ask(question, temperature=0.7),
            headers={"authorization": f"Bearer {KEYS['acme']}"},
        )
    assert served.headers["x-staffstore-outcome"] == "hit", served.headers
    assert served.headers["x-staffstore-claim"] == promoted.json()["id"]
    assert served.json()["choices"][0]["message"]["content"] == f"echo: {question}"
    assert replicas.calls_asking(question) == 1


async def test_twenty_compare_and_swaps_across_replicas_have_one_winner(
    replicas: Replicas,
) -> None:
    headers = {"authorization": f"Bearer {KEYS['acme']}"}
    path = "/staffstore/state/deployer/set"
    async with httpx.AsyncClient(timeout=30) as http:
        first = await http.post(
            replicas.base_url(0) + path,
            json={"key": "phase", "value": "planned", "reason": "start"},
            headers=headers,
        )
        assert first.status_code == 200, first.text
        swap = {"key": "phase", "reason": "race", "expected_value": "planned"}
        swaps = await asyncio.gather(
            *(
                http.post(
                    replicas.base_url(n % 2) + path,  # even to one replica, odd to the other
                    json={**swap, "value": f"taken by writer {n}"},
                    headers=headers,
                )
                for n in range(20)
            )
        )
        state = await http.get(replicas.base_url(1) + "/staffstore/state/deployer", headers=headers)
    statuses = [swap.status_code for swap in swaps]
    assert statuses.count(200) == 1 and statuses.count(412) == 19, statuses
    assert {s.json()["error"]["code"] for s in swaps if s.status_code == 412} == {
        "working_state_conflict"
    }
    (winner,) = [swap for swap in swaps if swap.status_code == 200]
    value = winner.json()["value"]
    assert value.startswith("taken by writer")
    entries = state.json()["entries"]
    assert [entry["value"] for entry in entries if entry["key"] == "phase"] == [value]


async def test_one_launch_key_dispatched_on_both_replicas_launches_one_job(
    replicas: Replicas,
) -> None:
    job = {
        "agent": "scanner", "task": "Scan the payments service for flaky tests",
        "command": "scan", "repository": "acme/payments", "launch_key": "nightly-scan-1",
    }  # fmt: skip
    async with httpx.AsyncClient(timeout=30) as http:
        dispatches = await asyncio.gather(
            *(
                http.post(
                    f"{replicas.base_url(n)}/staffstore/jobs/dispatch",
                    json=job,
                    headers={"authorization": f"Bearer {KEYS['acme']}"},
                )
                for n in (0, 1)
            )
        )
        bodies = [d.json() for d in dispatches]
        assert sorted(body["action"] for body in bodies) == ["attached", "launched"], bodies
        job_ids = {body["job"]["id"] for body in bodies}
        assert len(job_ids) == 1
        (job_id,) = job_ids
        deadline = time.monotonic() + 15
        while True:  # until the job has ended, so every run it made is on record
            shown = await http.get(
                f"{replicas.base_url(1)}/staffstore/jobs/{job_id}",
                headers={"authorization": f"Bearer {KEYS['acme']}"},
            )
            if shown.json()["status"] not in ("pending", "running"):
                break
            assert time.monotonic() < deadline, shown.json()
            await asyncio.sleep(0.1)
    assert shown.json()["status"] == "succeeded"
    assert replicas.job_runs.read_text() == "ran\n"  # the command ran once
    async with StaffStore.open(replicas.url) as store:
        jobs = await store.list_jobs("acme")
    assert [j.id for j in jobs if j.launch_key == "nightly-scan-1"] == [job_id]


async def test_two_hundred_clients_over_both_replicas_lose_no_receipt(
    replicas: Replicas,
) -> None:
    new = [f"load question number {n}, asked once" for n in range(120)]
    repeated = [f"load question number {n}, asked by four clients" for n in range(20)]
    questions = new + [q for q in repeated for _ in range(4)]
    assert len(questions) == 200
    for _ in range(len(new) + len(repeated)):
        replicas.fake.answer(delay=0.2)  # the calls overlap, and so do the repeats
    clients = [replicas.sdk(n, owner="load") for n in (0, 1)]

    async def ask(number: int, question: str) -> Any:
        client = clients[number % 2]
        return await client.chat.completions.with_raw_response.create(
            model="fake/model", messages=[{"role": "user", "content": question}]
        )

    started = time.perf_counter()
    raws = await asyncio.gather(*(ask(n, q) for n, q in enumerate(questions)))
    elapsed = time.perf_counter() - started
    for client in clients:
        await client.close()
    told = [raw.headers["x-staffstore-receipt"] for raw in raws]
    for raw, question in zip(raws, questions, strict=True):
        assert raw.parse().choices[0].message.content == f"echo: {question}"
    stored = {r.id: r for r in await _receipts(replicas.url, "load")}
    assert len(told) == len(set(told)) == 200
    assert set(told) == set(stored)
    # Each question paid once: the four clients of a repeated one, over two replicas, share
    # its one call.
    for question in new + repeated:
        assert replicas.calls_asking(question) == 1, question
    outcomes = [raw.headers["x-staffstore-outcome"] for raw in raws]
    assert (outcomes.count("miss"), outcomes.count("hit")) == (140, 60)
    assert sum(r.inference_attempted for r in stored.values()) == 140
    print(f"200 clients over 2 replicas: {elapsed:.2f} s")


async def test_a_lease_left_by_a_dead_replica_holds_the_call_only_until_it_runs_out(
    replicas: Replicas,
) -> None:
    question = "What did the replica that died halfway through this call say?"
    body = _ask(question)
    request_hash = read_chat_request(
        json.dumps(body).encode(), default_working_set="forward"
    ).request_hash
    lease = 1.0
    async with StaffStore.open(replicas.url) as store:
        # What a replica killed mid-call leaves behind: its claim on the call, and no answer.
        assert await store.claim_call("crash", "", request_hash, "rcpt_dead", ttl=lease)
    async with httpx.AsyncClient(timeout=30) as http:
        started = time.perf_counter()
        response = await http.post(
            f"{replicas.base_url(0)}/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {KEYS['crash']}"},
        )
        waited = time.perf_counter() - started
    assert response.status_code == 200
    assert response.headers["x-staffstore-outcome"] == "miss"  # it paid, once the lease ran out
    assert replicas.calls_asking(question) == 1
    assert lease * 0.8 <= waited < lease + 5
    async with StaffStore.open(replicas.url) as store:
        assert await store.call_holder("crash", "", request_hash) is None  # released after
