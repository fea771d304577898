"""The `kept` commands: the answers kept for exact repeats, listed, forgotten and pruned.

Loaded through `cli.app.EXTENSIONS`. A kept answer is named by the id of the receipt that paid
for it (the proxy's `X-Staffstore-Kept-From`, `ask`'s "from a kept answer (receipt ...)").
Forgetting one makes the next exact repeat of its request a miss, paid for again; its receipt
and the ledger stay as they were.

Retention: `kept_retention_days` in the config file (or `$STAFFSTORE_KEPT_RETENTION_DAYS`;
none by default, which keeps every answer) is applied to every owner's kept answers when
`staffstore serve` starts and whenever `staffstore kept prune` runs, say from cron.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from ..money import usd
from ..store.retention import KeptRow, retention_cutoff
from .app import (
    AnyOwnerOption,
    JsonOption,
    LimitOption,
    OwnerOption,
    clip,
    fail,
    print_json,
    print_table,
    settings_of,
    utf8,
    when,
    with_store,
)
from .times import when_option

kept_app = typer.Typer(
    help="List, forget and prune the answers kept for exact repeats.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

BeforeOption = Annotated[
    datetime | None, when_option("--before", "Forget every answer kept before this time")
]


def _positive(value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise typer.BadParameter("give a number of days above 0")
    return value


def _all_utf8(values: list[str] | None) -> list[str]:
    return [value for value in values or [] if utf8(value) is not None]


def _row_json(row: KeptRow) -> dict[str, object]:
    return {
        "id": row.receipt_id,
        "owner": row.owner,
        "namespace": row.namespace,
        "model": row.model,
        "kept_at": row.kept_at.isoformat(),
        "expires_at": None if row.expires_at is None else row.expires_at.isoformat(),
        "cost_usd": row.cost_usd,
        "prompt": row.prompt,
        "answer": row.answer,
    }


@kept_app.command("list")
def kept_list(
    ctx: typer.Context,
    owner: OwnerOption,
    limit: LimitOption = 20,
    as_json: JsonOption = False,
) -> None:
    """Show the owner's kept answers, the most recently kept first, each by the id of the
    receipt that paid for it, with the prompt a reworded question is compared with ("-": not
    context-free, served to exact repeats only)."""
    rows = with_store(ctx, lambda store: store.list_kept_answers(owner, limit=limit), create=False)
    if as_json:
        print_json([_row_json(row) for row in rows])
        return
    if not rows:
        typer.echo("no kept answers", err=True)
        return
    print_table(
        ["ID", "KEPT", "EXPIRES", "MODEL", "COST", "PROMPT", "ANSWER"],
        [
            [row.receipt_id, when(row.kept_at), when(row.expires_at), clip(row.model, 24),
             usd(row.cost_usd, unknown="-"), clip(row.prompt or "-", 32), clip(row.answer, 32)]
            for row in rows
        ],
    )  # fmt: skip


@kept_app.command("forget")
def kept_forget(
    ctx: typer.Context,
    owner: OwnerOption,
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[ID]...",
            callback=_all_utf8,
            help="Receipt ids of the kept answers to forget (see `kept list`).",
        ),
    ] = None,
    before: BeforeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forget the owner's kept answers named by id, and with --before every one kept before
    WHEN. Their next exact repeat is a miss, paid for again; receipts and ledger stay."""
    chosen = list(ids or [])
    if not chosen and before is None:
        fail("name the kept answers to forget: one or more IDs, or --before WHEN")
    forgotten = with_store(
        ctx,
        lambda store: store.forget_kept_answers(owner, receipt_ids=chosen, before=before),
        create=False,
    )
    missing = sorted(set(chosen) - set(forgotten))
    if as_json:
        print_json({"owner": owner, "forgotten": forgotten, "not_found": missing})
    else:
        typer.echo(f"forgot {len(forgotten)} kept answers of {owner}")
    if missing:
        fail(f"no kept answer {', '.join(missing)} for owner {owner!r}")


@kept_app.command("prune")
def kept_prune(
    ctx: typer.Context,
    days: Annotated[
        float | None,
        typer.Option(
            "--days",
            callback=_positive,
            help="Keep answers this many days (default: the kept_retention_days setting).",
        ),
    ] = None,
    owner: AnyOwnerOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete the kept answers past the retention (`kept_retention_days`, or --days) and those
    already expired, of every owner unless --owner narrows it, as `staffstore serve` does when
    it starts. Without a retention only expired answers go."""
    retention = days if days is not None else settings_of(ctx).kept_retention_days
    now = datetime.now(UTC)
    cutoff = retention_cutoff(retention, now) if retention is not None else None
    pruned = with_store(
        ctx,
        lambda store: store.prune_kept_answers(before=cutoff, owner=owner, now=now),
        create=False,
    )
    if as_json:
        print_json({
            "pruned": pruned, "retention_days": retention,
            "before": None if cutoff is None else cutoff.isoformat(), "owner": owner,
        })  # fmt: skip
        return
    rule = (
        "expired (no retention set: kept_retention_days)"
        if cutoff is None
        else f"expired or kept before {when(cutoff)} UTC ({retention:g} days)"
    )
    typer.echo(f"pruned {pruned} kept answers: {rule}")


def register(app: typer.Typer) -> None:
    """Add `kept` (list, forget, prune) to the command line."""
    app.add_typer(kept_app, name="kept")
