"""The `agent-state` commands: declare a schema, write, read, list, export, erase, sweep.

Scope ids and subjects are hashed with the key in $STAFFSTORE_STATE_KEY before they reach the
store; without that key these commands stop with one error line. A write that is not stored
(a conflict, an undeclared field, a wrong type, over the cap) exits 1 and says why; with --json
it prints the answer first. A body or schema file is strict JSON (state.strict_json): NaN,
Infinity, 1e400 or nesting past 64 levels is one error line. A schema file is read here, on the
client's side; a server never reads one. Loaded through `cli.app.EXTENSIONS`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import InputError
from ..state import AgentState, AgentStateWrite, Scope, strict_json
from ..state.agent import sweep_agent_states
from ..state.config import scope_key_from_env
from ..state.models import SCOPE_KINDS
from ..store import StaffStore
from .app import JsonOption, OwnerOption, fail, print_json, print_table, when, with_store

agent_state_app = typer.Typer(
    help="State an agent's code keeps under a declared schema; never shown to a model.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

AgentOption = Annotated[str, typer.Option("--agent", help="The agent whose state this is.")]
KindOption = Annotated[
    str | None, typer.Option("--scope-kind", help=f"One of {', '.join(SCOPE_KINDS)}.")
]
IdOption = Annotated[
    str | None, typer.Option("--scope-id", help="The conversation, task, object or subject id.")
]
SubjectOption = Annotated[
    str | None, typer.Option("--subject", help="The person the state is about.")
]


def _states(store: StaffStore, owner: str) -> AgentState:
    return AgentState(store, owner, scope_key=scope_key_from_env())


def _scope(kind: str | None, scope_id: str | None) -> Scope:
    if kind is None or scope_id is None:
        raise typer.BadParameter("give --scope-kind and --scope-id", param_hint="--scope-kind")
    if kind not in SCOPE_KINDS:
        raise typer.BadParameter(f"one of {', '.join(SCOPE_KINDS)}", param_hint="--scope-kind")
    return Scope.model_validate({"kind": kind, "id": scope_id})


def _body(text: str) -> dict[str, Any]:
    raw = typer.get_text_stream("stdin").read() if text == "-" else text
    try:
        body: Any = strict_json.parse(raw, "the body")
    except InputError as error:
        fail(str(error))
    if not isinstance(body, dict):
        fail("the body must be a JSON object")
    return body


@agent_state_app.command("declare")
def declare(
    ctx: typer.Context,
    schema: Annotated[Path, typer.Argument(metavar="SCHEMA.json", help="The schema file.")],
    owner: OwnerOption,
    agent: AgentOption,
    scope: Annotated[
        str | None, typer.Option("--scope", help="The scope kind, over the file's.")
    ] = None,
    max_bytes: Annotated[
        int | None, typer.Option("--max-bytes", help="The byte cap (16384; at most 65536).")
    ] = None,
    write: Annotated[str | None, typer.Option("--write", help="cas, merge_by_key or both.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Declare the schema of an agent's state from a JSON file (short form or JSON Schema).

    Each field names its type, whether it is `pii`, and its `retention`; the file's
    `agent_state` gives the scope kind, `max_bytes` and the allowed `write` modes.
    """
    declared = with_store(
        ctx,
        lambda store: AgentState(store, owner).declare(
            agent, schema, scope=scope, max_bytes=max_bytes, write=write
        ),
    )
    if as_json:
        print_json(declared.model_dump(mode="json"))
    else:
        typer.echo(
            f"declared {agent}: {len(declared.fields)} fields, {declared.scope} scope, "
            f"{declared.max_bytes} bytes, {' and '.join(declared.write)}"
        )


@agent_state_app.command("schema")
def show_schema(ctx: typer.Context, owner: OwnerOption, agent: AgentOption) -> None:
    """Print the schema declared for an agent, as JSON."""
    declared = with_store(ctx, lambda store: AgentState(store, owner).schema(agent))
    if declared is None:
        fail(f"no schema declared for agent {agent!r} of owner {owner!r}")
    print_json(declared.model_dump(mode="json"))


def _print_write(written: AgentStateWrite, as_json: bool) -> None:
    if as_json:
        print_json(written.model_dump(mode="json"))
    if written.stored:
        if not as_json:
            typer.echo(f"stored: version {written.version}, {written.size} bytes")
        return
    about = f" ({written.field})" if written.field else ""
    fail(f"not stored: {written.reason}{about}; the state stays at version {written.version}")


@agent_state_app.command("put")
def put(
    ctx: typer.Context,
    body: Annotated[str, typer.Argument(metavar="BODY", help="A JSON object, or - for stdin.")],
    owner: OwnerOption,
    agent: AgentOption,
    scope_kind: KindOption = None,
    scope_id: IdOption = None,
    subject: SubjectOption = None,
    mode: Annotated[str, typer.Option("--mode", help="merge_by_key or cas.")] = "merge_by_key",
    if_version: Annotated[
        int | None, typer.Option("--if-version", help="Write only at this version (0: new).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Write an agent's state for one scope: merge named fields, or replace it whole (cas).

    In a merge, `{"$delete": true}` removes a field. Every stored write adds 1 to the version.
    """
    scope = _scope(scope_kind, scope_id)
    given = _body(body)
    if mode not in ("cas", "merge_by_key"):
        raise typer.BadParameter("cas or merge_by_key", param_hint="--mode")
    written = with_store(
        ctx,
        lambda store: _states(store, owner).put(
            agent, scope, given, mode=mode,  # type: ignore[arg-type]
            if_version=if_version, subject=subject,
        ),
    )  # fmt: skip
    _print_write(written, as_json)


@agent_state_app.command("read")
def read(
    ctx: typer.Context,
    owner: OwnerOption,
    agent: AgentOption,
    scope_kind: KindOption = None,
    scope_id: IdOption = None,
    mask_pii: Annotated[
        bool, typer.Option("--mask-pii", help="Show fields the schema marks pii as [pii].")
    ] = False,
) -> None:
    """Print an agent's state for one scope as JSON: body, version, when it changed."""
    scope = _scope(scope_kind, scope_id)
    state = with_store(
        ctx, lambda store: _states(store, owner).read(agent, scope, mask_pii=mask_pii)
    )
    print_json(state.model_dump(mode="json"))


@agent_state_app.command("list")
def list_states(
    ctx: typer.Context,
    owner: OwnerOption,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List an owner's states by size, version and dates, never their content."""
    infos = with_store(ctx, lambda store: AgentState(store, owner).list(agent))
    if as_json:
        print_json([info.model_dump(mode="json") for info in infos])
        return
    if not infos:
        typer.echo("no agent states", err=True)
        return
    print_table(
        ["AGENT", "SCOPE", "SCOPE HASH", "VERSION", "FIELDS", "BYTES", "CREATED", "UPDATED"],
        [
            [i.agent, i.scope_kind, i.scope_hash, str(i.version), str(i.fields), str(i.size),
             when(i.created_at), when(i.updated_at)]
            for i in infos
        ],
    )  # fmt: skip


@agent_state_app.command("export")
def export(ctx: typer.Context, owner: OwnerOption, subject: SubjectOption = None) -> None:
    """Print every state about a subject as JSON, by declared field."""
    if subject is None:
        raise typer.BadParameter("give --subject", param_hint="--subject")
    print_json(with_store(ctx, lambda store: _states(store, owner).export(subject)))


@agent_state_app.command("erase")
def erase(
    ctx: typer.Context,
    owner: OwnerOption,
    subject: SubjectOption = None,
    scope_kind: KindOption = None,
    scope_id: IdOption = None,
    as_json: JsonOption = False,
) -> None:
    """Erase every state about a subject, or of one scope, and print the proof."""
    if (subject is None) == (scope_kind is None and scope_id is None):
        raise typer.BadParameter("give --subject, or --scope-kind and --scope-id", param_hint="")
    scope = _scope(scope_kind, scope_id) if subject is None else None
    proof = with_store(ctx, lambda store: _states(store, owner).erase(subject=subject, scope=scope))
    if as_json:
        print_json(proof.model_dump(mode="json"))
        return
    typer.echo(
        f"erased {proof.states} state(s) ({proof.fields} fields, {proof.bytes} bytes) of "
        f"{', '.join(proof.agents) or 'no agent'}; proof {proof.digest}"
    )


@agent_state_app.command("sweep")
def sweep(
    ctx: typer.Context,
    owner: Annotated[
        str | None, typer.Option("--owner", help="Only this owner's (default: every owner).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Remove what retention says is gone: states past their time and expired fields."""

    report = with_store(ctx, lambda store: sweep_agent_states(store, owner=owner))
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        typer.echo(
            f"swept {report.schemas} schemas: {report.states_removed} states removed, "
            f"{report.states_trimmed} trimmed"
        )


def register(app: typer.Typer) -> None:
    """Add `agent-state` to the command line."""
    app.add_typer(agent_state_app, name="agent-state")
