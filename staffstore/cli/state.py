"""The `state` commands: an agent's working state from the command line.

`set` and `clear` change one key with a reason; `get` shows every key (expired ones marked),
the handoff and recent history; `history` shows one key's supersession chain; `handoff`
leaves the note for the next wake-up; `section` prints what a prompt carries. A refused
write (a compare-and-swap that found another value, a new key at the cap) exits 1 and says
why; with --json it prints the answer first. Loaded through `cli.app.EXTENSIONS`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..state import StateEntry, StateWrite, WorkingState
from ..state.checks import MAX_HISTORY
from ..state.config import DEFAULT_AGENT
from ..store import StaffStore
from .app import (
    JsonOption,
    OwnerOption,
    clip,
    fail,
    known,
    print_json,
    print_table,
    when,
    with_store,
)

state_app = typer.Typer(
    help="An agent's working state: its current rules, changed only with a reason.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

AgentOption = Annotated[
    str, typer.Option("--agent", help="Whose working state (one table per owner and agent).")
]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why the value changes (required).")]
ByOption = Annotated[
    str | None, typer.Option("--by", help="Who makes the change (default: the agent).")
]


def _state(store: StaffStore, owner: str, agent: str) -> WorkingState:
    return WorkingState(store, owner, agent)


def _entry_text(entry: StateEntry) -> list[str]:
    until = when(entry.expires_at)
    status = "expired" if entry.expired else "live"
    return [
        entry.key,
        clip(entry.value, 40),
        status,
        when(entry.set_at),
        until,
        clip(entry.reason, 50),
    ]


def _report(written: StateWrite, as_json: bool) -> None:
    """Print a set or clear; a refused one exits 1 with its reason."""
    if as_json:
        print_json(written.model_dump(mode="json"))
    if written.written:
        if not as_json:
            was = f" (was {written.previous})" if written.previous is not None else ""
            done = (
                f"{written.key} = {written.value}"
                if written.reason == "set"
                else (f"cleared {written.key}")
            )
            typer.echo(done + was)
        return
    if written.reason == "conflict":
        current = "absent" if written.value is None else repr(written.value)
        fail(f"{written.key} is {current}, not the expected value; nothing was written")
    if written.reason == "at_cap":
        fail(
            f"{len(written.keys)} live keys is the cap; clear one or reuse one of: "
            + ", ".join(written.keys)
        )
    fail(f"no key {written.key!r} to clear")


@state_app.command("set")
def state_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The key, e.g. stop_loss.2317.")],
    value: Annotated[str, typer.Argument(help="Its value, one line.")],
    owner: OwnerOption,
    reason: ReasonOption,
    agent: AgentOption = DEFAULT_AGENT,
    ttl_hours: Annotated[
        float | None, typer.Option("--ttl-hours", help="Hours until the key stops being injected.")
    ] = None,
    expect: Annotated[
        str | None,
        typer.Option("--expect", help="Write only if the stored value is this (compare-and-swap)."),
    ] = None,
    by: ByOption = None,
    as_json: JsonOption = False,
) -> None:
    """Set one key of an agent's working state, with the reason why.

    The value it replaces joins the key's supersession chain. With --expect, nothing is written
    unless the stored value is exactly that, and the error names the current value.
    """
    written = with_store(
        ctx,
        lambda store: _state(store, owner, agent).set(
            key, value, reason, ttl_hours=ttl_hours, expected_value=expect, by=by
        ),
    )
    _report(written, as_json)


@state_app.command("clear")
def state_clear(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The key to retire.")],
    owner: OwnerOption,
    reason: ReasonOption,
    agent: AgentOption = DEFAULT_AGENT,
    by: ByOption = None,
    as_json: JsonOption = False,
) -> None:
    """Retire one key, with the reason why; its last value joins the chain."""
    written = with_store(ctx, lambda store: _state(store, owner, agent).clear(key, reason, by=by))
    _report(written, as_json)


@state_app.command("get")
def state_get(
    ctx: typer.Context,
    owner: OwnerOption,
    agent: AgentOption = DEFAULT_AGENT,
    history: Annotated[
        int,
        typer.Option("--history", min=0, max=MAX_HISTORY, help="How many recent changes to show."),
    ] = 10,
    as_json: JsonOption = False,
) -> None:
    """Show every key (expired ones marked), the handoff and the most recent changes."""
    view = with_store(ctx, lambda store: _state(store, owner, agent).get(history=history))
    if as_json:
        print_json(view.model_dump(mode="json"))
        return
    typer.echo(f"{view.live_keys} of {view.max_keys} live keys")
    print_table(
        ["KEY", "VALUE", "STATUS", "SET", "UNTIL", "REASON"],
        [_entry_text(entry) for entry in view.entries],
    )
    if view.handoff is not None:
        handoff = view.handoff
        status = f" [{handoff.status}]" if handoff.status else ""
        typer.echo(f"handoff ({when(handoff.set_at)}){status}: {handoff.note}")
        for label, text in (
            ("next steps", handoff.next_steps),
            ("evidence", handoff.evidence),
            ("blocker", handoff.blocker),
        ):
            if text:
                typer.echo(f"  {label}: {text}")
    if view.history:
        typer.echo("recent changes:")
        for event in view.history:
            change = f"{known(event.old_value)} -> {known(event.new_value)}"
            typer.echo(
                f"  {when(event.at)}  {event.action} {event.key or ''}  {clip(change, 50)}"
                f"  by {event.by}: {clip(event.reason, 60)}"
            )


@state_app.command("history")
def state_history(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The key whose chain to show.")],
    owner: OwnerOption,
    agent: AgentOption = DEFAULT_AGENT,
    as_json: JsonOption = False,
) -> None:
    """Show one key's whole supersession chain, oldest first: who, when, why, old, new."""
    chain = with_store(ctx, lambda store: _state(store, owner, agent).chain(key))
    if as_json:
        print_json([event.model_dump(mode="json") for event in chain])
        return
    if not chain:
        typer.echo(f"no changes to {key}", err=True)
        return
    print_table(
        ["AT", "ACTION", "OLD", "NEW", "BY", "REASON"],
        [
            [when(e.at), e.action, clip(e.old_value, 24), clip(e.new_value, 24), e.by,
             clip(e.reason, 60)]
            for e in chain
        ],
    )  # fmt: skip


@state_app.command("handoff")
def state_handoff(
    ctx: typer.Context,
    owner: OwnerOption,
    note: Annotated[str | None, typer.Argument(help="The note for the next wake-up.")] = None,
    agent: AgentOption = DEFAULT_AGENT,
    status: Annotated[
        str | None, typer.Option("--status", help="continue, complete or blocked.")
    ] = None,
    next_steps: Annotated[
        str | None, typer.Option("--next-steps", help="Required to continue.")
    ] = None,
    evidence: Annotated[
        str | None, typer.Option("--evidence", help="Required to complete.")
    ] = None,
    blocker: Annotated[str | None, typer.Option("--blocker", help="Required when blocked.")] = None,
    by: ByOption = None,
    as_json: JsonOption = False,
) -> None:
    """Leave the handoff note for the next wake-up, replacing the last one.

    A plain note is tidied and cut at 1,200 characters. With --status it is structured and
    checked: continue needs --next-steps (no --blocker), complete needs --evidence (no
    --next-steps or --blocker), blocked needs --blocker; over 16,384 bytes it is refused whole.
    """
    handoff = with_store(
        ctx,
        lambda store: _state(store, owner, agent).handoff(
            note, status=status, next_steps=next_steps, evidence=evidence, blocker=blocker, by=by
        ),
    )
    if as_json:
        print_json(handoff.model_dump(mode="json"))
    else:
        cut = " (cut at 1,200 characters)" if handoff.truncated else ""
        typer.echo(f"handoff left at {when(handoff.set_at)}{cut}")


@state_app.command("section")
def state_section(
    ctx: typer.Context, owner: OwnerOption, agent: AgentOption = DEFAULT_AGENT
) -> None:
    """Print the working-state section a prompt of this agent carries now (nothing if empty)."""
    text = with_store(ctx, lambda store: _state(store, owner, agent).section())
    if text:
        typer.echo(text)
    else:
        typer.echo("no working state: prompts carry no section", err=True)


def register(app: typer.Typer) -> None:
    """Add `state` to the command line."""
    app.add_typer(state_app, name="state")
