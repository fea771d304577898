"""The proxy's job endpoints through a real server on 127.0.0.1: dispatch, reuse, read back,
owners kept apart, and bad input refused in OpenAI's error shape with nothing written."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_proxy_support import ALICE_ADMIN_KEY, ALICE_KEY, BOB_KEY, Server, running_proxy

from staffstore.errors import InputError
from staffstore.proxy.config import build_config

FINDING = (
    "import json, os\n"
    "open(os.environ['STAFFSTORE_FINDINGS'], 'a').write(json.dumps("
    "{'question': 'Which tests are flaky?', 'answer': 'test_ledger_order'}) + '\\n')\n"
    "print('scanned')\n"
)
JOB = {
    "agent": "kernel", "task": "Find the flaky tests", "command": "scan",
    "repository": "acme/api", "revision": "3f2a9c1", "inputs": {"paths": ["tests/"]},
}  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("proxy-jobs")
    commands = {"scan": (sys.executable, "-c", FINDING)}
    with running_proxy(folder / "s.db", job_commands=commands, jobs_dir=folder / "jobs") as run:
        yield run


def dispatch(server: Server, key: str = ALICE_KEY, **fields: Any) -> httpx.Response:
    return server.post({**JOB, **fields}, key=key, path="/staffstore/jobs/dispatch")


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


def test_a_dispatch_launches_and_a_repeat_reuses(server: Server) -> None:
    first = dispatch(server, task="Find the flaky tests in the api", wait=True)
    again = dispatch(server, task="find flaky tests in the api")
    assert first.status_code == 201 and again.status_code == 200
    launched, reused = first.json(), again.json()
    assert (launched["action"], launched["job"]["status"]) == ("launched", "succeeded")
    assert (reused["action"], reused["reason"]) == ("reused", "same_identity")
    assert reused["job"]["id"] == launched["job"]["id"]
    assert reused["matched"] == ["agent", "task", "repository", "profile", "revision", "inputs"]
    assert not {"command", "handle", "runner"} & set(reused["job"])  # the operator's business


def test_get_returns_the_callers_job_and_hides_it_from_others(server: Server) -> None:
    job = dispatch(server, task="Find the flaky tests in the web", wait=True).json()["job"]
    mine = server.get(f"/v1/staffstore/jobs/{job['id']}")
    assert mine.status_code == 200
    assert (mine.json()["id"], len(mine.json()["claim_ids"])) == (job["id"], 1)
    error_of(server.get(f"/v1/staffstore/jobs/{job['id']}", key=BOB_KEY), 404)


def test_another_owner_never_reuses_or_attaches_a_job(server: Server) -> None:
    alice = dispatch(server, task="Find the flaky tests in billing", wait=True).json()
    bob = dispatch(server, key=BOB_KEY, task="Find the flaky tests in billing", wait=True).json()
    assert bob["action"] == "launched" and bob["job"]["id"] != alice["job"]["id"]
    error = error_of(dispatch(server, key=BOB_KEY, owner="alice"), 400)
    assert error["param"] == "owner"
    admin = dispatch(server, key=ALICE_ADMIN_KEY, owner="bob")
    assert error_of(admin, 400)["code"] == "another_owner"


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"kind": "deploy"}, "kind"),
        ({"inputs": [1, 2]}, "inputs"),
        ({"command": "rm"}, "command"),
        ({"command": ["sh", "-c", "id"]}, "command"),
        ({"task": ""}, "task"),
    ],
)
def test_bad_input_is_a_400_and_writes_nothing(
    server: Server, fields: dict[str, Any], param: str
) -> None:
    before = server.get("/v1/staffstore/ledger", key=BOB_KEY).json()["jobs"]
    error = error_of(dispatch(server, key=BOB_KEY, **fields), 400)
    assert error["param"] == param
    assert server.get("/v1/staffstore/ledger", key=BOB_KEY).json()["jobs"] == before


def test_a_launch_key_reused_for_other_work_is_a_400(server: Server) -> None:
    dispatch(server, task="Find the flaky tests in search", launch_key="k1", wait=True)
    error = error_of(
        dispatch(server, task="Find the flaky tests in search", launch_key="k1", revision="9"),
        400,
    )
    assert (error["param"], error["code"]) == ("launch_key", "launch_key_taken")


def test_the_ledger_counts_the_callers_jobs(server: Server) -> None:
    # Its own launch and reuse: with two workers, the module's other tests may run elsewhere.
    dispatch(server, task="Find the flaky tests in the ledger", wait=True)
    dispatch(server, task="find flaky tests in the ledger")
    jobs = server.get("/v1/staffstore/ledger").json()["jobs"]
    assert jobs["dispatches"] == jobs["launched"] + jobs["reused"] + jobs["attached"] + jobs["lost"]
    assert jobs["jobs_avoided"] == jobs["reused"] >= 1


def test_without_configured_commands_jobs_are_off(tmp_path: Path) -> None:
    with running_proxy(tmp_path / "s.db") as plain:
        error = error_of(dispatch(plain), 403)
    assert error["code"] == "jobs_disabled"


def test_an_unknown_key_gets_401(server: Server) -> None:
    error_of(dispatch(server, key="sk-wrong"), 401)


def test_the_config_file_names_the_commands_and_the_jobs_folder(tmp_path: Path) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(
        '[serve.jobs]\ndir = "work"\ndeadline = 5\npoll_limit = 7\n'
        '[serve.jobs.commands]\nscan = ["/opt/scan", "--quick"]\n'
    )
    config = build_config(config_file=path, owner_keys=["alice=sk-local-a"], environ={})
    assert config.job_commands == {"scan": ("/opt/scan", "--quick")}
    assert (config.jobs_dir, config.job_deadline, config.job_poll_limit) == (
        tmp_path / "work", 5.0, 7,
    )  # fmt: skip


@pytest.mark.parametrize(
    "table",
    ['[serve.jobs.commands]\nscan = "/opt/scan"\n', "[serve.jobs]\ndeadline = 0\n",
     "[serve.jobs]\nshell = true\n"],
)  # fmt: skip
def test_a_bad_jobs_table_is_an_input_error(tmp_path: Path, table: str) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(table)
    with pytest.raises(InputError, match=r"\[serve.jobs\]"):
        build_config(config_file=path, owner_keys=["alice=sk-local-a"], environ={})
