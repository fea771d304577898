"""GET /openapi.json: a valid OpenAPI 3.1 document that lists every route the app really has,
served without a key, whose schemas the real answers meet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from starlette.routing import Route
from test_proxy_support import ALICE_ADMIN_KEY, ALICE_KEY, proxy_config, running_proxy

from staffstore import __version__
from staffstore.proxy.app import create_app
from staffstore.proxy.openapi import openapi_document

DOCUMENT = openapi_document(__version__)


def _app_operations(tmp_path: Path) -> set[tuple[str, str]]:
    """(method, path) of every route in the app's own route table (HEAD comes with GET)."""
    app = create_app(proxy_config(tmp_path / "p.db"))
    return {
        (method.lower(), route.path)
        for route in app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }


def _documented() -> set[tuple[str, str]]:
    return {(method, path) for path, item in DOCUMENT["paths"].items() for method in item}


def test_every_route_of_the_app_is_documented_and_no_other(tmp_path: Path) -> None:
    served = _app_operations(tmp_path)
    assert len({op for op in served if op[1].startswith("/v1/staffstore/")}) >= 15
    assert served - _documented() == set(), "routes missing from /openapi.json"
    assert _documented() - served == set(), "documented routes the app does not have"


def test_the_document_is_valid_openapi_3_1() -> None:
    validate(DOCUMENT)  # openapi-spec-validator: the structure and every schema in it
    assert DOCUMENT["openapi"] == "3.1.0"
    schemes = DOCUMENT["components"]["securitySchemes"]
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    error = {"$ref": "#/components/schemas/ErrorResponse"}
    for path, item in DOCUMENT["paths"].items():
        if not path.startswith("/v1/staffstore/"):
            continue
        for method, operation in item.items():
            assert operation["security"] == [{"bearer": []}], (method, path)
            assert operation["responses"]["401"]["content"]["application/json"]["schema"] == error
            if method in ("post", "put") and not path.endswith("/sweep"):
                assert "requestBody" in operation, (method, path)


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    # The components travel with the schema, so its #/components/... references resolve.
    return Draft202012Validator({**schema, "components": DOCUMENT["components"]})


def _reply_schema(method: str, path: str, status: int) -> dict[str, Any]:
    response = DOCUMENT["paths"][path][method]["responses"][str(status)]
    schema: dict[str, Any] = response["content"]["application/json"]["schema"]
    return schema


def test_served_without_a_key_and_real_answers_meet_it(tmp_path: Path) -> None:
    with running_proxy(tmp_path / "p.db") as server:
        served = server.get("/openapi.json", key=None)
        claim = server.post(
            {"question": "Which port?", "answer": "8787"},
            key=ALICE_ADMIN_KEY,
            path="/staffstore/claims",
        )
        ledger = server.get("/v1/staffstore/ledger")
        written = server.post(
            {"key": "port", "value": "8787", "reason": "the default"},
            path="/staffstore/state/kernel/set",
        )
        state = server.get("/v1/staffstore/state/kernel")
        refused = httpx.get(server.root + "/v1/staffstore/ledger", headers={"x": ALICE_KEY})
    assert served.status_code == 200 and served.json() == DOCUMENT
    for response, method, path, status in (
        (claim, "post", "/v1/staffstore/claims", 201),
        (ledger, "get", "/v1/staffstore/ledger", 200),
        (written, "post", "/v1/staffstore/state/{agent}/set", 200),
        (state, "get", "/v1/staffstore/state/{agent}", 200),
        (refused, "get", "/v1/staffstore/ledger", 401),
    ):
        assert response.status_code == status, response.text
        _validator(_reply_schema(method, path, status)).validate(response.json())


def test_the_schemas_refuse_what_the_endpoints_refuse() -> None:
    claim = _validator(_reply_schema("post", "/v1/staffstore/claims", 201))
    assert not claim.is_valid({"object": "staffstore.claim"})  # no id, question, answer, ...
    body = DOCUMENT["paths"]["/v1/staffstore/jobs/dispatch"]["post"]["requestBody"]
    dispatch = _validator(body["content"]["application/json"]["schema"])
    assert dispatch.is_valid({"agent": "kernel", "task": "scan", "command": "scan-flaky"})
    assert not dispatch.is_valid({"agent": "kernel", "task": "scan", "command": ["/bin/sh"]})
    job = _reply_schema("get", "/v1/staffstore/jobs/{job_id}", 200)
    assert {"command", "handle", "runner"}.isdisjoint(job["properties"])
