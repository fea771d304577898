"""The `memory` commands: what a workflow's earlier runs left for its next ones.

`ls` lists every entry (lessons, run records, the digest), newest first; `show` prints the
section the next run's steps read, then the entries; `add` writes a lesson by hand, `edit`
rewrites one entry's text, `forget` deletes one entry or all of a workflow's; `config` sets
what a workflow (or a step, only narrowing) remembers; `digest` folds old records now, or with
`--model` has a model rewrite the digest (one paid call, with its receipt); `start`, `remember`
and `finish` open a run, record a lesson during it and end it with its record. Every text is
scrubbed of secrets before it is stored: the values of $STAFFSTORE_SECRET_ENV's variables, of
staffstore's own keys, of any variable named like a secret, of `--secret-env NAME`, and
anything shaped like an API key. Loaded through `cli.app.EXTENSIONS`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable
from typing import Annotated, Any

import typer

from ..memory import (
    EffectiveMemory,
    HumanDecision,
    MemoryEntries,
    MemoryEntry,
    RunStep,
    WorkflowMemory,
)
from ..memory.models import RUN_ENDS, STEP_STATUSES
from ..state.scoped import DEFAULT_PROJECT
from ..state.secrets import Scrubber
from ..store import StaffStore
from ..upstream import OpenRouter
from .app import (
    JsonOption,
    OwnerOption,
    clip,
    db_address,
    fail,
    print_json,
    print_table,
    run,
    settings_of,
    utf8,
    when,
    with_store,
)

memory_app = typer.Typer(
    help="Workflow memory: run records, lessons and the bounded section later runs read.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

WorkflowOption = Annotated[
    str, typer.Option("--workflow", callback=utf8, help="The workflow whose memory this is.")
]
ProjectOption = Annotated[
    str, typer.Option("--project", callback=utf8, help="The workflow's project.")
]
StepOption = Annotated[
    str | None, typer.Option("--step", callback=utf8, help="As this step of it reads it.")
]


def utf8_list(values: list[str] | None) -> list[str] | None:
    """`utf8` for an option given several times."""
    return None if values is None else [utf8(value) or "" for value in values]


SecretEnvOption = Annotated[
    list[str] | None,
    typer.Option(
        "--secret-env",
        metavar="NAME",
        callback=utf8_list,
        help="Also scrub the value of this environment variable (repeat for more).",
    ),
]


def _scrubber(secret_env: list[str] | None) -> Scrubber:
    return Scrubber.from_env(secret_env or [])


def _memory(
    store: StaffStore, owner: str, workflow: str, project: str, secret_env: list[str] | None
) -> WorkflowMemory:
    return WorkflowMemory(store, owner, workflow, project=project, scrubber=_scrubber(secret_env))


def _entries(store: StaffStore, owner: str, secret_env: list[str] | None = None) -> MemoryEntries:
    return MemoryEntries(store, owner, scrubber=_scrubber(secret_env))


def _entry_rows(entries: list[MemoryEntry]) -> list[list[str]]:
    return [
        [entry.id, entry.kind, entry.status or entry.source or "-", when(entry.at),
         clip(entry.text, 70)]
        for entry in entries
    ]  # fmt: skip


def _print_settings(settings: EffectiveMemory) -> None:
    where = f"{settings.project}/{settings.workflow}"
    if settings.step is not None:
        where += f" step {settings.step}"
    state = "on" if settings.enabled else "off"
    include = ", ".join(settings.include) or "-"
    typer.echo(
        f"{where}: memory {state}, budget {settings.budget} tokens, retain {settings.retain} "
        f"records, digest {settings.digest_chars} characters, include {include}"
    )


@memory_app.command("ls")
def memory_ls(
    ctx: typer.Context,
    owner: OwnerOption,
    workflow: WorkflowOption,
    project: ProjectOption = DEFAULT_PROJECT,
    as_json: JsonOption = False,
) -> None:
    """List every entry of a workflow's memory, newest first."""
    view = with_store(
        ctx, lambda store: _memory(store, owner, workflow, project, None).view(), create=False
    )
    if as_json:
        print_json(view.model_dump(mode="json"))
        return
    typer.echo(
        f"{view.lessons} lessons, {view.runs} run records ({view.running} running), "
        f"{view.runs_folded} runs folded into the digest"
    )
    print_table(["ID", "KIND", "STATUS", "AT", "TEXT"], _entry_rows(view.entries))


@memory_app.command("show")
def memory_show(
    ctx: typer.Context,
    owner: OwnerOption,
    workflow: WorkflowOption,
    project: ProjectOption = DEFAULT_PROJECT,
    step: StepOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the section the next run reads (as --step reads it), then every entry."""

    async def work(store: StaffStore) -> tuple[Any, Any]:
        memory = _memory(store, owner, workflow, project, None)
        return await memory.section(step), await memory.view()

    section, view = with_store(ctx, work, create=False)
    if as_json:
        print_json({"section": section.model_dump(mode="json"), **view.model_dump(mode="json")})
        return
    if section.text:
        typer.echo(section.text)
        typer.echo(f"({section.tokens} of {section.budget} tokens)\n")
    else:
        off = "memory is off" if not section.enabled else "nothing remembered yet"
        typer.echo(f"no section: {off}", err=True)
    print_table(["ID", "KIND", "STATUS", "AT", "TEXT"], _entry_rows(view.entries))


@memory_app.command("add")
def memory_add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(callback=utf8, help="The lesson.")],
    owner: OwnerOption,
    workflow: WorkflowOption,
    project: ProjectOption = DEFAULT_PROJECT,
    secret_env: SecretEnvOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write a lesson by hand; the next run's steps read it like a remembered one."""
    lesson = with_store(
        ctx, lambda store: _memory(store, owner, workflow, project, secret_env).add(text)
    )
    if as_json:
        print_json(lesson.model_dump(mode="json"))
    else:
        typer.echo(f"added {lesson.id}: {clip(lesson.body, 70)}")


@memory_app.command("edit")
def memory_edit(
    ctx: typer.Context,
    entry_id: Annotated[
        str, typer.Argument(metavar="ID", callback=utf8, help="lsn_... or dig_...")
    ],
    text: Annotated[str, typer.Argument(callback=utf8, help="The new text.")],
    owner: OwnerOption,
    secret_env: SecretEnvOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rewrite one lesson's (or the digest's) text in place."""
    entry = with_store(ctx, lambda store: _entries(store, owner, secret_env).edit(entry_id, text))
    if as_json:
        print_json(entry.model_dump(mode="json"))
    else:
        typer.echo(f"edited {entry.id}: {clip(entry.text, 70)}")


@memory_app.command("forget")
def memory_forget(
    ctx: typer.Context,
    owner: OwnerOption,
    entry_id: Annotated[
        str | None, typer.Argument(metavar="[ID]", callback=utf8, help="One entry to delete.")
    ] = None,
    workflow: Annotated[
        str | None,
        typer.Option("--workflow", callback=utf8, help="Delete all of this workflow's memory."),
    ] = None,
    project: ProjectOption = DEFAULT_PROJECT,
    as_json: JsonOption = False,
) -> None:
    """Delete one entry (ID), or every entry of a workflow (--workflow)."""
    if (entry_id is None) == (workflow is None):
        raise typer.BadParameter("give an ID or --workflow, not both", param_hint="ID")
    if entry_id is not None:
        entry = with_store(ctx, lambda store: _entries(store, owner).forget(entry_id))
        if as_json:
            print_json({"forgotten": 1, "entry": entry.model_dump(mode="json")})
        else:
            typer.echo(f"forgot {entry.kind} {entry.id}")
        return
    assert workflow is not None
    gone = with_store(ctx, lambda store: _memory(store, owner, workflow, project, None).forget())
    if as_json:
        print_json({"forgotten": gone})
    else:
        typer.echo(f"forgot {gone} entries of {project}/{workflow}")


@memory_app.command("config")
def memory_config(
    ctx: typer.Context,
    owner: OwnerOption,
    workflow: WorkflowOption,
    project: ProjectOption = DEFAULT_PROJECT,
    step: Annotated[
        str | None, typer.Option("--step", callback=utf8, help="Narrow one step's setting.")
    ] = None,
    enabled: Annotated[
        bool | None, typer.Option("--on/--off", help="Turn memory on or off.", show_default=False)
    ] = None,
    budget: Annotated[
        int | None, typer.Option("--budget", help="Tokens of memory a step's prompt may get.")
    ] = None,
    retain: Annotated[
        int | None, typer.Option("--retain", help="Raw run records kept before folding.")
    ] = None,
    include: Annotated[
        list[str] | None,
        typer.Option(
            "--include",
            callback=utf8_list,
            help="workflow:NAME, workflow:PROJECT/NAME, project or global (repeat for more).",
        ),
    ] = None,
    no_include: Annotated[
        bool, typer.Option("--no-include", help="Include no other workflow.")
    ] = False,
    digest_chars: Annotated[
        int | None, typer.Option("--digest-chars", help="The digest's size cap, in characters.")
    ] = None,
    reset: Annotated[
        bool, typer.Option("--reset", help="Forget this level's stored settings first.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Show or change what a workflow (or one step, only narrowing) remembers."""
    chosen = [] if no_include else include or None

    def change(store: StaffStore) -> Awaitable[EffectiveMemory]:
        return _memory(store, owner, workflow, project, None).configure(
            step=step, enabled=enabled, budget=budget, retain=retain, include=chosen,
            digest_chars=digest_chars, reset=reset,
        )  # fmt: skip

    settings = with_store(ctx, change)
    if as_json:
        print_json(settings.model_dump(mode="json"))
    else:
        _print_settings(settings)


@memory_app.command("digest")
def memory_digest(
    ctx: typer.Context,
    owner: OwnerOption,
    workflow: WorkflowOption,
    project: ProjectOption = DEFAULT_PROJECT,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            callback=utf8,
            help="Have this model rewrite the digest: one paid call, with its receipt.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Fold the records past retain into the digest now, or have a model rewrite it."""
    if model is None:
        folded = with_store(
            ctx, lambda store: _memory(store, owner, workflow, project, None).fold()
        )
        if as_json:
            print_json({"folded": folded})
        else:
            typer.echo(f"folded {folded} run records into the digest of {project}/{workflow}")
        return
    settings = settings_of(ctx)

    async def work() -> Any:
        async with (
            StaffStore.open(db_address(ctx), create=False) as store,
            OpenRouter(
                api_key=os.environ.get(settings.upstream_key_env) or "",
                base_url=settings.upstream, model=model, title="staffstore",
            ) as chat,
        ):  # fmt: skip
            return await _memory(store, owner, workflow, project, None).rewrite_digest(
                chat, model=model
            )

    written = run(work())
    if as_json:
        print_json(written.model_dump(mode="json"))
    receipt = written.receipt
    if not written.written:
        fail(f"the model call failed ({receipt.status}); the digest is unchanged "
             f"(receipt {receipt.id})")  # fmt: skip
    if not as_json:
        typer.echo(f"the digest of {project}/{workflow} was rewritten by {receipt.model} "
                   f"(receipt {receipt.id})")  # fmt: skip


# -- runs ---------------------------------------------------------------------------------------


def _given(text: str | None) -> Any:
    """--input: JSON when it parses as JSON, else the text as it is."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _step(spec: str) -> RunStep:
    """`NAME=STATUS[:TEXT]`: the text is the step's error when it failed, else its output."""
    name, equals, rest = spec.partition("=")
    status, _, text = rest.partition(":")
    if not equals or status not in STEP_STATUSES:
        raise typer.BadParameter(
            f"give NAME=STATUS[:TEXT], STATUS one of {', '.join(STEP_STATUSES)}",
            param_hint="--step",
        )
    failed = status == "failed"
    return RunStep.model_validate(
        {"name": name, "status": status, "output": None if failed else text or None,
         "error": text or None if failed else None}
    )  # fmt: skip


def _decision(spec: str) -> HumanDecision:
    """`WHO=DECISION[:WHY]`."""
    who, equals, rest = spec.partition("=")
    decision, _, why = rest.partition(":")
    if not equals or not who or not decision:
        raise typer.BadParameter("give WHO=DECISION[:WHY]", param_hint="--decision")
    return HumanDecision(by=who, decision=decision, why=why or None)


@memory_app.command("start")
def memory_start(
    ctx: typer.Context,
    owner: OwnerOption,
    workflow: WorkflowOption,
    project: ProjectOption = DEFAULT_PROJECT,
    given: Annotated[
        str | None,
        typer.Option("--input", callback=utf8, help="What the run was asked (JSON or text)."),
    ] = None,
    secret_env: SecretEnvOption = None,
    as_json: JsonOption = False,
) -> None:
    """Open a run of a workflow; print its id (for remember and finish)."""
    record = with_store(
        ctx,
        lambda store: _entries(store, owner, secret_env).start(workflow, project, _given(given)),
    )
    if as_json:
        print_json(record.model_dump(mode="json"))
    else:
        typer.echo(record.id)


@memory_app.command("remember")
def memory_remember(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", callback=utf8, help="The run.")],
    text: Annotated[str, typer.Argument(callback=utf8, help="The lesson.")],
    owner: OwnerOption,
    step: Annotated[
        str | None, typer.Option("--step", callback=utf8, help="The step that learned it.")
    ] = None,
    secret_env: SecretEnvOption = None,
    as_json: JsonOption = False,
) -> None:
    """Record a lesson, during a run, for later runs of its workflow."""
    found = with_store(
        ctx, lambda store: _entries(store, owner, secret_env).remember(run_id, text, step=step)
    )
    if as_json:
        print_json(found.model_dump(mode="json"))
    if not found.stored:
        off = "this step" if found.reason == "step_memory_off" else "this workflow"
        fail(f"not remembered: memory is off for {off}")
    if not as_json and found.lesson is not None:
        typer.echo(f"remembered {found.lesson.id}")


@memory_app.command("finish")
def memory_finish(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", callback=utf8, help="The run.")],
    owner: OwnerOption,
    status: Annotated[str, typer.Option("--status", help=f"How it ended: {', '.join(RUN_ENDS)}.")],
    outcome: Annotated[
        str | None, typer.Option("--outcome", callback=utf8, help="What it came to.")
    ] = None,
    steps: Annotated[
        list[str] | None,
        typer.Option("--step", metavar="NAME=STATUS[:TEXT]", help="A step (repeat for more)."),
    ] = None,
    decisions: Annotated[
        list[str] | None,
        typer.Option("--decision", metavar="WHO=DECISION[:WHY]", help="A person's decision."),
    ] = None,
    secret_env: SecretEnvOption = None,
    as_json: JsonOption = False,
) -> None:
    """End a run (done, failed or cancelled) and keep its record."""
    parsed_steps = [_step(utf8(spec) or "") for spec in steps or []]
    parsed_decisions = [_decision(utf8(spec) or "") for spec in decisions or []]
    finished = with_store(
        ctx,
        lambda store: _entries(store, owner, secret_env).finish(
            run_id, status, outcome=outcome, steps=parsed_steps, decisions=parsed_decisions
        ),
    )
    if as_json:
        print_json(finished.model_dump(mode="json"))
    elif finished.recorded:
        folded = f"; {finished.folded} older folded into the digest" if finished.folded else ""
        typer.echo(f"{run_id} {status}: recorded{folded}")
    else:
        typer.echo(f"{run_id} {status}: not recorded (memory is off for its workflow)")


def register(app: typer.Typer) -> None:
    """Add `memory` to the command line."""
    app.add_typer(memory_app, name="memory")
