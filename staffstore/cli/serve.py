"""The `serve` command: the OpenAI-compatible caching proxy.

Loaded through `cli.app.EXTENSIONS`. `serve` merges its flags over a TOML config file over the
defaults (see proxy/config.py). The address is tried before the server starts, so a port in
use is one `error:` line and exit 1, not uvicorn's log of a failed startup.
"""

from __future__ import annotations

import errno
import socket
import tomllib
from pathlib import Path
from typing import Annotated

import typer

from ..proxy.config import ServeConfig, build_config
from ..proxy.run import run_server
from ..settings import config_path
from ..store.location import shown
from ..upstream import API_KEY_ENV, shown_url
from .app import db_address, fail, http_url, settings_of, user_errors
from .app import gate_budget as calibrated_budget


def serve(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option("--config", help="A TOML file of these settings.")
    ] = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on (127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (8787).")] = None,
    upstream: Annotated[
        str | None,
        typer.Option(
            callback=http_url,
            help="Upstream base URL, http:// or https:// (default: settings, else OpenRouter's). "
            "Key: the variable upstream_key_env names, else OPENROUTER_API_KEY.",
        ),
    ] = None,
    owner_key: Annotated[
        list[str] | None,
        typer.Option(
            help="A client key and its owner, OWNER=sha256:HEX (a plain OWNER=KEY shows in the "
            "process list); repeat. Or owners in the --config file."
        ),
    ] = None,
    admin_key: Annotated[
        list[str] | None, typer.Option(help="A key that may store claims, as --owner-key.")
    ] = None,
    trusted: Annotated[
        bool | None,
        typer.Option(
            "--trusted/--no-trusted",
            help="Single-tenant: take the owner from X-Staffstore-Owner, no client keys.",
        ),
    ] = None,
    default_owner: Annotated[
        str | None, typer.Option(help="Owner of requests that name none (trusted mode).")
    ] = None,
    working_set: Annotated[
        str | None,
        typer.Option(help="forward: send the client's messages as sent; bounded: the working set."),
    ] = None,
    budget: Annotated[int | None, typer.Option(help="Token budget of a bounded prompt.")] = None,
    gate_budget: Annotated[
        float | None,
        typer.Option(
            callback=calibrated_budget,
            metavar="BUDGET",
            help="The gate's error budget: the share of turns that may be served another "
            "question's answer; one of the calibrated budgets (0.001 by default; see the "
            "README's gate card).",
        ),
    ] = None,
    max_body_bytes: Annotated[
        int | None, typer.Option(help="Largest request body accepted (413 beyond).")
    ] = None,
    timeout: Annotated[float | None, typer.Option(help="Upstream timeout in seconds.")] = None,
    upstream_retries: Annotated[
        int | None, typer.Option(help="Retries on upstream 429 and 5xx.")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="uvicorn's log level.")] = None,
    access_log: Annotated[
        bool | None,
        typer.Option(
            "--access-log/--no-access-log",
            help="One line per HTTP request (time, client, method, path without its query, "
            "status, ms, owner, the gate's outcome and reason); never a key, header or body. "
            "Off by default: a line a request costs I/O (see the README's figures).",
        ),
    ] = None,
    access_log_format: Annotated[
        str | None,
        typer.Option(help="text (default), or json: one JSON object a line, for log shippers."),
    ] = None,
    access_log_file: Annotated[
        Path | None,
        typer.Option(help="Write the access log to this file (turns it on); default: stderr."),
    ] = None,
    metrics_key: Annotated[
        str | None,
        typer.Option(
            help="The key GET /metrics needs, as sha256:HEX (or set STAFFSTORE_METRICS_KEY)."
        ),
    ] = None,
    default_model: Annotated[
        str | None,
        typer.Option(help="The model for requests that name none (without it: 400)."),
    ] = None,
) -> None:
    """Run the OpenAI-compatible proxy: point any client's base URL at it."""
    database = db_address(ctx) if ctx.find_root().meta.get("db_given") else None
    shared = settings_of(ctx)
    given = shared.model_fields_set  # what the environment or the config file set
    if config is None and config_path().exists() and _has_serve_table(config_path()):
        config = config_path()  # one file for the command line and the server
    with user_errors():
        settings = build_config(
            config_file=config,
            upstream_key_env=shared.upstream_key_env if "upstream_key_env" in given else None,
            db_path=database,
            host=host,
            port=port,
            upstream_url=upstream or (shared.upstream if "upstream" in given else None),
            owner_keys=owner_key or (),
            admin_keys=admin_key or (),
            trusted=trusted,
            default_owner=default_owner,
            working_set=working_set,
            budget=budget,
            gate_budget=gate_budget,
            max_body_bytes=max_body_bytes,
            timeout=timeout,
            upstream_retries=upstream_retries,
            log_level=log_level,
            access_log=access_log,
            access_log_format=access_log_format,
            access_log_file=access_log_file,
            metrics_key=metrics_key,
            default_model=default_model or (shared.model if "model" in given else None),
            kept_retention_days=shared.kept_retention_days,
        )
        problem = _cannot_listen(settings.host, settings.port)
        if problem is not None:
            fail(problem)
        _banner(settings)
        run_server(settings)


def _cannot_listen(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port, or None when it can.

    The socket is bound as uvicorn binds its own (SO_REUSEADDR, IPv6 for an address with a
    colon) and closed at once; another process could still take the port in between.
    """
    if port == 0:  # the system picks a free port
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return (
                    f"port {port} on {host} is in use (another server?): give --port, "
                    "or port in the config file's [serve] table"
                )
            return f"cannot listen on {host}:{port}: {error.strerror or error}"
    return None


def _has_serve_table(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return isinstance(tomllib.load(handle).get("serve"), dict)
    except (OSError, tomllib.TOMLDecodeError):
        return False  # settings_of has already said what is wrong with it


def _banner(config: ServeConfig) -> None:
    """What the server runs on, on standard error, and a warning a misses-only setup needs."""
    owners = len({entry.owner for entry in config.keys.values()})
    who = "trusted single-tenant mode" if config.trusted else f"{owners} owner(s)"
    key = "set" if config.upstream_key else "NOT set"
    typer.echo(
        f"staffstore serve: database {shown(config.db_path)}, {who}, "
        f"upstream {shown_url(config.upstream_url)} (key {key})",
        err=True,
    )
    if not config.upstream_key:
        typer.echo(
            f"warning: no upstream API key (set {API_KEY_ENV}, or the variable the config's "
            "upstream_key_env names): hits are served, every miss gets 503 upstream_key_missing",
            err=True,
        )


def register(app: typer.Typer) -> None:
    """Add `serve` to the command line."""
    app.command("serve")(serve)
