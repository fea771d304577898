"""The `scoped-state` commands: a workflow's keys in four namespaces that never fall back.

The namespace is the narrowest one the flags name: `--step S --workflow W` a step of a
workflow, `--workflow W` a workflow, `--project P` alone a project, `--global` everything of the
owner (`--project` also places a step or a workflow; `default` when left out). `get` of a key
never written there prints nothing, says `absent: ...` on standard error and exits 1, as `git
config --get` does; with --json it prints `"present": false` and exits 0. A value that holds a
secret is refused with one error line that does not repeat it. Loaded through
`cli.app.EXTENSIONS`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..state.scoped import DEFAULT_PROJECT, ScopedState, ScopedValue, ScopedWrite, ScopeRef
from ..store import StaffStore
from .app import (
    JsonOption,
    OwnerOption,
    clip,
    fail,
    print_json,
    print_table,
    utf8,
    when,
    with_store,
)

scoped_app = typer.Typer(
    help="A workflow's explicit state: step, workflow, project and global keys, never mixed.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

StepOption = Annotated[
    str | None,
    typer.Option("--step", callback=utf8, help="A step's namespace (with --workflow)."),
]
WorkflowOption = Annotated[
    str | None, typer.Option("--workflow", callback=utf8, help="A workflow's namespace.")
]
ProjectOption = Annotated[
    str | None,
    typer.Option(
        "--project",
        callback=utf8,
        help=f"A project's namespace (alone), or the project of --workflow ({DEFAULT_PROJECT}).",
    ),
]
GlobalOption = Annotated[bool, typer.Option("--global", help="The owner's global namespace.")]


def where(
    step: str | None, workflow: str | None, project: str | None, everything: bool
) -> ScopeRef:
    """The namespace the flags name: the narrowest one, or a usage error."""
    if everything:
        if step or workflow or project:
            raise typer.BadParameter(
                "--global names the owner's namespace alone", param_hint="--global"
            )
        return ScopeRef.everything()
    if step is not None:
        if workflow is None:
            raise typer.BadParameter("a step's namespace needs --workflow", param_hint="--step")
        return ScopeRef.named("step", project=project, workflow=workflow, step=step)
    if workflow is not None:
        return ScopeRef.named("workflow", project=project, workflow=workflow)
    if project is not None:
        return ScopeRef.named("project", project=project)
    raise typer.BadParameter(
        "name a namespace: --step (with --workflow), --workflow, --project or --global",
        param_hint="--workflow",
    )


def _state(store: StaffStore, owner: str) -> ScopedState:
    return ScopedState(store, owner)


def _row(value: ScopedValue) -> list[str]:
    return [value.key, clip(value.value, 60), value.set_by or "-", when(value.set_at)]


@scoped_app.command("list")
def scoped_list(
    ctx: typer.Context,
    owner: OwnerOption,
    step: StepOption = None,
    workflow: WorkflowOption = None,
    project: ProjectOption = None,
    everything: GlobalOption = False,
    as_json: JsonOption = False,
) -> None:
    """List every key of one namespace."""
    ref = where(step, workflow, project, everything)
    values = with_store(ctx, lambda store: _state(store, owner).list(ref), create=False)
    if as_json:
        print_json([value.model_dump(mode="json") for value in values])
        return
    if not values:
        typer.echo(f"no keys in {ref.label}", err=True)
        return
    print_table(["KEY", "VALUE", "SET BY", "SET"], [_row(value) for value in values])


@scoped_app.command("get")
def scoped_get(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(callback=utf8, help="The key, e.g. last_id.")],
    owner: OwnerOption,
    step: StepOption = None,
    workflow: WorkflowOption = None,
    project: ProjectOption = None,
    everything: GlobalOption = False,
    as_json: JsonOption = False,
) -> None:
    """Print one key's value in one namespace (exit 1 when it was never written there)."""
    ref = where(step, workflow, project, everything)
    value = with_store(ctx, lambda store: _state(store, owner).get(ref, key), create=False)
    if as_json:
        print_json(value.model_dump(mode="json"))
        return
    if not value.present:
        typer.echo(f"absent: {key} was never written in {ref.label}", err=True)
        raise typer.Exit(1)
    typer.echo(value.value)


def _report(written: ScopedWrite, as_json: bool) -> None:
    if as_json:
        print_json(written.model_dump(mode="json"))
    entry = written.entry
    place = ScopeRef.model_validate(
        {"scope": entry.scope, "project": entry.project, "workflow": entry.workflow,
         "step": entry.step}
    ).label  # fmt: skip
    if written.reason == "at_cap":
        fail(f"{place} holds as many keys as it may; delete one first")
    if written.reason == "not_found":
        fail(f"no key {entry.key!r} in {place}")
    if not as_json:
        was = f" (was {clip(written.previous, 60)})" if written.previous is not None else ""
        done = f"{entry.key} = {clip(entry.value, 60)}" if entry.present else f"deleted {entry.key}"
        typer.echo(f"{place}: {done}{was}")


@scoped_app.command("set")
def scoped_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(callback=utf8, help="The key, e.g. last_id.")],
    value: Annotated[str, typer.Argument(callback=utf8, help="Its value (text).")],
    owner: OwnerOption,
    step: StepOption = None,
    workflow: WorkflowOption = None,
    project: ProjectOption = None,
    everything: GlobalOption = False,
    by: Annotated[
        str | None, typer.Option("--by", callback=utf8, help="Who sets it (default: cli).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Set one key of one namespace (a value holding a secret is refused)."""
    ref = where(step, workflow, project, everything)
    written = with_store(
        ctx, lambda store: _state(store, owner).set(ref, key, value, by=by or "cli")
    )
    _report(written, as_json)


@scoped_app.command("delete")
def scoped_delete(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(callback=utf8, help="The key to remove.")],
    owner: OwnerOption,
    step: StepOption = None,
    workflow: WorkflowOption = None,
    project: ProjectOption = None,
    everything: GlobalOption = False,
    as_json: JsonOption = False,
) -> None:
    """Remove one key of one namespace: it reads as absent again."""
    ref = where(step, workflow, project, everything)
    written = with_store(ctx, lambda store: _state(store, owner).delete(ref, key))
    _report(written, as_json)


def register(app: typer.Typer) -> None:
    """Add `scoped-state` to the command line."""
    app.add_typer(scoped_app, name="scoped-state")
