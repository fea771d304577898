"""Scoped state and workflow memory over HTTP: a real proxy on 127.0.0.1. The owner is the
caller's key's, admin keys included, so another owner's keys, runs and lessons are neither
visible nor writable; bad input is a 400 in OpenAI's error shape that writes nothing; secrets
in a body never reach the database file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from test_proxy_support import ADMIN_KEY, ALICE_ADMIN_KEY, ALICE_KEY, BOB_KEY, Server, running_proxy

from staffstore import __version__
from staffstore.proxy.openapi import openapi_document

BASE = "/v1/staffstore"
TOKEN = "whk-http-0123456789abcdef"
API_KEY = "sk-or-v1-" + "0a1b2c3d" * 8


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("memory-http") / "proxy.db"
    with running_proxy(db) as running:
        yield running


def call(
    server: Server, method: str, path: str, body: Any = None, *, key: str = ALICE_KEY,
    raw: bytes | None = None,
) -> httpx.Response:  # fmt: skip
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    content = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    return httpx.request(
        method, server.root + BASE + path, content=content, headers=headers, timeout=10
    )


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


def test_a_scoped_key_is_its_namespaces_and_its_owners_alone(server: Server) -> None:
    flow = {"scope": "workflow", "workflow": "http-triage"}
    written = call(server, "POST", "/scoped-state/set", {**flow, "key": "last_id", "value": "42"})
    assert written.status_code == 200 and written.json()["entry"]["value"] == "42"
    mine = call(server, "POST", "/scoped-state/get", {**flow, "key": "last_id"}).json()
    assert (mine["object"], mine["present"], mine["value"]) == (
        "staffstore.scoped_value", True, "42",
    )  # fmt: skip
    step = {"scope": "step", "workflow": "http-triage", "step": "fetch", "key": "last_id"}
    absent = call(server, "POST", "/scoped-state/get", step).json()
    assert (absent["present"], absent["value"]) == (False, None)
    for key in (BOB_KEY, ADMIN_KEY):
        other = call(server, "POST", "/scoped-state/get", {**flow, "key": "last_id"}, key=key)
        assert other.json()["present"] is False
        assert call(server, "POST", "/scoped-state/delete", {**flow, "key": "last_id"},
                    key=key).status_code == 404  # fmt: skip
    listed = call(server, "GET", "/scoped-state?scope=workflow&workflow=http-triage").json()
    assert [(v["key"], v["value"]) for v in listed["data"]] == [("last_id", "42")]
    asked = {**flow, "key": "last_id"}
    admin = call(server, "POST", "/scoped-state/get", asked, key=ALICE_ADMIN_KEY)
    assert admin.json()["value"] == "42"  # the owner's admin key is the owner's


def test_a_run_over_http_and_the_section_its_next_run_reads(server: Server) -> None:
    started = call(server, "POST", "/workflows/http-runs/runs",
                   {"input": {"ticket": "T-9", "token": TOKEN}, "secrets": [TOKEN]})  # fmt: skip
    assert started.status_code == 201, started.text
    run = started.json()
    assert run["object"] == "staffstore.run" and TOKEN not in started.text
    remembered = call(server, "POST", f"/runs/{run['id']}/remember",
                      {"body": f"the mirror key is {API_KEY}", "step": "triage"})  # fmt: skip
    assert remembered.status_code == 201 and API_KEY not in remembered.text
    finished = call(server, "POST", f"/runs/{run['id']}/finish", {
        "status": "done", "outcome": "filed 2",
        "steps": [{"name": "fetch", "status": "done", "output": f"hook {TOKEN}"}],
        "decisions": [{"by": "lead", "decision": "approved", "why": "fine"}],
        "secrets": [TOKEN],
    })  # fmt: skip
    assert finished.status_code == 200 and finished.json()["recorded"] is True
    again = call(server, "POST", f"/runs/{run['id']}/finish", {"status": "done"})
    assert "already ended" in error_of(again, 400)["message"]
    memory = call(server, "GET", "/workflows/http-runs/memory?step=triage").json()
    assert memory["object"] == "staffstore.workflow_memory"
    section = memory["section"]["text"]
    assert "- [http-runs] the mirror key is [redacted]" in section
    assert "- fetch: done → hook [redacted]" in section and "- lead: approved" in section
    assert memory["section"]["tokens"] <= memory["section"]["budget"]
    # The database file and its WAL hold neither secret.
    held = b"".join(
        path.read_bytes() for path in (server.db, server.db.with_name(server.db.name + "-wal"))
        if path.exists()
    )  # fmt: skip
    assert TOKEN.encode() not in held and API_KEY.encode() not in held


def test_lessons_by_id_are_the_owners_alone(server: Server) -> None:
    added = call(server, "POST", "/workflows/http-lessons/memory", {"body": "alice's note"})
    assert added.status_code == 201
    lesson_id = added.json()["id"]
    for key in (BOB_KEY, ADMIN_KEY):
        assert call(server, "GET", f"/memory/{lesson_id}", key=key).status_code == 404
        assert error_of(call(server, "PATCH", f"/memory/{lesson_id}", {"body": "mine now"},
                             key=key), 404)["code"] == "not_found"  # fmt: skip
        assert call(server, "DELETE", f"/memory/{lesson_id}", key=key).status_code == 404
        assert call(server, "GET", "/workflows/http-lessons/memory", key=key).json()[
            "entries"] == []  # fmt: skip
        assert call(server, "DELETE", "/workflows/http-lessons/memory", key=key).json()[
            "forgotten"] == 0  # fmt: skip
    edited = call(server, "PATCH", f"/memory/{lesson_id}", {"body": "alice's note, edited"})
    assert edited.json()["text"] == "alice's note, edited"
    assert call(server, "GET", f"/memory/{lesson_id}").json()["text"] == "alice's note, edited"
    assert call(server, "DELETE", f"/memory/{lesson_id}").json()["forgotten"] == 1
    assert call(server, "GET", f"/memory/{lesson_id}").status_code == 404


def test_settings_over_http_and_a_refused_remember_is_409(server: Server) -> None:
    put = call(server, "PUT", "/workflows/http-config/memory/config",
               {"step": "fetch", "enabled": False})  # fmt: skip
    assert put.status_code == 200 and put.json()["enabled"] is False
    shown = call(server, "GET", "/workflows/http-config/memory/config?step=fetch").json()
    assert (shown["object"], shown["enabled"], shown["budget"]) == (
        "staffstore.memory_settings", False, 1500,
    )  # fmt: skip
    run = call(server, "POST", "/workflows/http-config/runs", {}).json()
    refused = call(server, "POST", f"/runs/{run['id']}/remember", {"body": "x", "step": "fetch"})
    assert error_of(refused, 409)["code"] == "step_memory_off"
    assert refused.json()["stored"] is False


@pytest.mark.parametrize(
    ("method", "path", "body", "raw"),
    [
        ("POST", "/scoped-state/set", None, b"not json"),
        ("POST", "/scoped-state/set", ["a list"], None),
        ("POST", "/scoped-state/set", {"scope": "workflow", "key": "k"}, None),
        ("POST", "/scoped-state/set", {"scope": "session", "key": "k", "value": "v"}, None),
        ("POST", "/scoped-state/set",
         {"scope": "workflow", "workflow": "a/b", "key": "k", "value": "v"}, None),
        ("POST", "/scoped-state/set",
         {"scope": "workflow", "workflow": "w", "key": "k", "value": API_KEY}, None),
        ("POST", "/scoped-state/set",
         {"scope": "workflow", "workflow": "w", "key": "k", "value": "v", "extra": 1}, None),
        ("GET", "/scoped-state?scope=step&workflow=w", None, None),
        ("POST", "/workflows/bad%20name/memory", {"body": "x"}, None),
        ("POST", "/workflows/w/memory", {"body": "   "}, None),
        ("POST", "/workflows/w/memory", {"body": "x", "secrets": "not a list"}, None),
        ("PUT", "/workflows/w/memory/config", {"budget": 1}, None),
        ("PUT", "/workflows/w/memory/config", {"step": "s", "retain": 3}, None),
        ("PATCH", "/memory/lsn_x", {"text": "wrong field"}, None),
    ],
)  # fmt: skip
def test_bad_input_is_a_400_in_openais_shape_and_writes_nothing(
    server: Server, method: str, path: str, body: Any, raw: bytes | None
) -> None:
    response = call(server, method, path, body, key=BOB_KEY, raw=raw)
    error = error_of(response, 400)
    assert error["type"] == "invalid_request_error" and API_KEY not in response.text
    listed = call(server, "GET", "/scoped-state?scope=workflow&workflow=w", key=BOB_KEY)
    assert listed.json()["data"] == []
    assert call(server, "GET", "/workflows/w/memory", key=BOB_KEY).json()["entries"] == []


def test_an_unknown_run_or_entry_is_a_404(server: Server) -> None:
    assert error_of(call(server, "POST", "/runs/run_none/finish", {"status": "done"}), 404)
    assert error_of(call(server, "GET", "/memory/dig_none"), 404)["type"] == "not_found_error"


def test_no_key_is_a_401(server: Server) -> None:
    response = httpx.get(server.root + BASE + "/workflows/w/memory", timeout=10)
    assert response.status_code == 401


def test_real_answers_meet_the_openapi_document(server: Server) -> None:
    document = openapi_document(__version__)

    def check(method: str, path: str, status: int, body: Any) -> None:
        schema = document["paths"][path][method]["responses"][str(status)]["content"][
            "application/json"
        ]["schema"]
        Draft202012Validator({**schema, "components": document["components"]}).validate(body)

    flow = "/v1/staffstore/workflows/{name}"
    run = call(server, "POST", "/workflows/http-doc/runs", {"input": "plain text"})
    check("post", f"{flow}/runs", 201, run.json())
    finished = call(server, "POST", f"/runs/{run.json()['id']}/finish", {"status": "cancelled"})
    check("post", "/v1/staffstore/runs/{run_id}/finish", 200, finished.json())
    lesson = call(server, "POST", "/workflows/http-doc/memory", {"body": "a note"})
    check("post", f"{flow}/memory", 201, lesson.json())
    check("get", f"{flow}/memory", 200, call(server, "GET", "/workflows/http-doc/memory").json())
    entry = call(server, "GET", f"/memory/{lesson.json()['id']}").json()
    check("get", "/v1/staffstore/memory/{entry_id}", 200, entry)
    got = call(server, "POST", "/scoped-state/get", {"scope": "global", "key": "k"}).json()
    check("post", "/v1/staffstore/scoped-state/get", 200, got)
    refused = call(server, "POST", "/scoped-state/delete", {"scope": "global", "key": "k"})
    check("post", "/v1/staffstore/scoped-state/delete", 404, refused.json())


def test_a_workflow_of_another_project_is_another_workflow(server: Server) -> None:
    added = call(server, "POST", "/workflows/http-proj/memory?project=acme-api", {"body": "api"})
    assert added.status_code == 201 and added.json()["project"] == "acme-api"
    shown = call(server, "GET", "/workflows/http-proj/memory?project=acme-api").json()
    assert [entry["text"] for entry in shown["entries"]] == ["api"]
    assert call(server, "GET", "/workflows/http-proj/memory").json()["entries"] == []


def test_a_variable_the_config_names_as_secret_never_reaches_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The [serve] table's secret_env: a variable no built-in rule would take for a secret.
    value = "plain-looking-value-4417"
    monkeypatch.setenv("DEPLOY_NOTE_VALUE", value)
    db = tmp_path / "proxy.db"
    with running_proxy(db, secret_env=("DEPLOY_NOTE_VALUE",)) as server:
        started = call(server, "POST", "/workflows/cfg/runs", {"input": {"note": value}})
        assert started.status_code == 201, started.text
        run = started.json()
        remembered = call(server, "POST", f"/runs/{run['id']}/remember",
                          {"body": f"the note was {value}"})  # fmt: skip
        assert remembered.status_code == 201 and value not in remembered.text
        finished = call(server, "POST", f"/runs/{run['id']}/finish", {"status": "done"})
        assert finished.status_code == 200
    held = b"".join(
        path.read_bytes() for path in (db, db.with_name(db.name + "-wal")) if path.exists()
    )
    assert value.encode() not in held
