"""The `receipts` and `ledger` commands: what each turn did and cost, listed, shown one by
one, filtered, exported, pruned, and totalled over everything or period by period.

Loaded through `cli.app.EXTENSIONS`. `receipts` lists; `receipts show` prints one receipt;
`receipts export` writes every matching receipt as CSV or JSON Lines, for a spreadsheet or a
notebook; `receipts prune` deletes an owner's old receipts. Every cost is printed by
`money.usd`, with the digits a fraction of a cent needs.
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import typer

from ..config import DEFAULTS
from ..models import JobLedger, Ledger, Outcome, Receipt
from ..money import usd
from ..store import StaffStore
from ..store.receipt_queries import Period, ReceiptFilter
from ..store.rows import RECEIPT_COLUMNS
from .app import (
    AnyOwnerOption,
    JsonOption,
    LimitOption,
    OwnerOption,
    clip,
    known,
    print_json,
    print_table,
    utf8,
    when,
    with_store,
)
from .reasons import receipt_reason
from .times import SinceOption, UntilOption, when_option

SessionFilterOption = Annotated[
    str | None, typer.Option("--session", callback=utf8, help="Only this session's receipts.")
]
OutcomeOption = Annotated[Outcome | None, typer.Option("--outcome", help="Only hits or misses.")]
ReasonOption = Annotated[
    str | None,
    typer.Option(
        "--reason", callback=receipt_reason, help="Only this reason (exact, no_candidate, ...)."
    ),
]

receipts_app = typer.Typer(
    help="Show, filter, export and prune receipts: what each turn did and cost.",
    invoke_without_command=True,
    rich_markup_mode="markdown",
)


def _utc(moment: datetime | None) -> datetime | None:
    # A time without a zone is UTC, as the receipts' own times are.
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def _tokens(receipt: Receipt) -> str:
    if receipt.prompt_tokens is None and receipt.completion_tokens is None:
        return "-"
    return f"{known(receipt.prompt_tokens)}/{known(receipt.completion_tokens)}"


@receipts_app.callback()
def receipts(
    ctx: typer.Context,
    owner: AnyOwnerOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    session: SessionFilterOption = None,
    outcome: OutcomeOption = None,
    reason: ReasonOption = None,
    limit: LimitOption = DEFAULTS.receipts_limit,
    as_json: JsonOption = False,
) -> None:
    """Show the most recent receipts, newest first: what each turn did and cost.

    `receipts export` writes every matching receipt as CSV or JSON Lines.
    """
    if ctx.invoked_subcommand is not None:
        return
    found = with_store(
        ctx,
        lambda store: store.list_receipts(
            owner, limit=limit, since=_utc(since), until=_utc(until), session=session,
            outcome=outcome, reason=reason,
        ),
        create=False,
    )  # fmt: skip
    if as_json:
        print_json([receipt.model_dump(mode="json") for receipt in found])
        return
    if not found:
        typer.echo("no receipts", err=True)
        return
    print_table(
        ["ID", "STARTED", "OWNER", "OUTCOME", "REASON", "STATUS", "MODEL", "TOKENS", "COST",
         "MS", "QUESTION"],
        [
            [
                r.id, when(r.started_at), clip(r.owner, 16), r.outcome, r.reason, r.status,
                clip(r.model, 24), _tokens(r),
                usd(r.cost_usd, unknown="-"),
                f"{r.latency_ms:.0f}", clip(r.question, 40),
            ]
            for r in found
        ],
    )  # fmt: skip


@receipts_app.command("export")
def receipts_export(
    ctx: typer.Context,
    export_format: Annotated[
        Literal["csv", "jsonl"], typer.Option("--format", help="CSV with a header, or JSON Lines.")
    ] = "jsonl",
    owner: AnyOwnerOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    session: SessionFilterOption = None,
    outcome: OutcomeOption = None,
    reason: ReasonOption = None,
) -> None:
    """Write every matching receipt to standard output, newest first (no limit).

    Times are ISO 8601 in UTC; an unknown value (tokens, cost) is empty in CSV and null in
    JSON, never 0.
    """
    chosen = ReceiptFilter(owner, _utc(since), _utc(until), session, outcome, reason)
    stdout = typer.get_text_stream("stdout")
    writer = csv.DictWriter(stdout, fieldnames=RECEIPT_COLUMNS, lineterminator="\n")

    async def work(store: StaffStore) -> int:
        count = 0
        if export_format == "csv":
            writer.writeheader()
        async for receipt in store.iter_receipts(chosen):
            row = receipt.model_dump(mode="json")
            if export_format == "csv":
                writer.writerow({name: "" if row[name] is None else row[name] for name in row})
            else:
                stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
        return count

    count = with_store(ctx, work, create=False)
    typer.echo(f"exported {count} receipts", err=True)


@receipts_app.command("show")
def receipts_show(
    ctx: typer.Context,
    receipt_id: Annotated[str, typer.Argument(metavar="ID", callback=utf8, help="The receipt.")],
    owner: OwnerOption,
    as_json: JsonOption = False,
) -> None:
    """Show one of the owner's receipts in full: what the turn did, what it cost, and for a
    hit the paid receipt whose answer it served and the estimated cost it avoided."""
    receipt = with_store(ctx, lambda store: store.get_receipt(owner, receipt_id), create=False)
    if as_json:
        print_json(receipt.model_dump(mode="json"))
        return
    lines = [
        ("id", receipt.id),
        ("owner", receipt.owner),
        ("started", f"{when(receipt.started_at)} UTC"),
        ("outcome", f"{receipt.outcome} ({receipt.reason})"),
        ("status", receipt.status),
        ("model", known(receipt.model)),
        ("tokens", _tokens(receipt)),
        ("cost", usd(receipt.cost_usd)),
    ]
    if receipt.inference_avoided:
        source = (
            f"what receipt {receipt.served_from} paid"
            if receipt.served_from is not None
            else "no paid call on record"
        )
        lines.append(("cost avoided", f"{usd(receipt.avoided_cost_usd)} (estimate: {source})"))
    lines += [
        (label, value)
        for label, value in (
            ("claim", receipt.claim_id), ("session", receipt.session_id),
            ("question", receipt.question), ("answer", receipt.answer), ("error", receipt.error),
        )
        if value is not None
    ]  # fmt: skip
    if receipt.prompt_parts is not None:  # the working set staffstore built, part by part
        sent = [f"{part} {n:,}" for part, n in receipt.prompt_parts.items() if n]
        lines.append(("prompt", ", ".join(sent) + " (tokens counted when it was built)"))
    lines.append(("latency", f"{receipt.latency_ms:.1f} ms"))
    width = max(len(label) for label, _ in lines)
    for label, value in lines:
        typer.echo(f"{label.ljust(width)}  {value}")


@receipts_app.command("prune")
def receipts_prune(
    ctx: typer.Context,
    owner: OwnerOption,
    before: Annotated[
        datetime,
        when_option(
            "--before",
            "Delete the owner's receipts started before this time; required, so that prune "
            "never deletes everything by default",
        ),
    ],
    as_json: JsonOption = False,
) -> None:
    """Delete the owner's receipts started before WHEN, and print how many went.

    Only this owner's receipts are touched. The ledger then counts the receipts that remain;
    the hits already recorded keep their estimates of the cost avoided, and kept answers and
    claims keep what their paid calls cost.
    """
    deleted = with_store(ctx, lambda store: store.prune_receipts(owner, before), create=False)
    if as_json:
        print_json({"owner": owner, "before": before.isoformat(), "deleted": deleted})
        return
    typer.echo(f"deleted {deleted} receipts of {owner} started before {when(before)} UTC")


def _ledger_json(ledger: Ledger) -> dict[str, Any]:
    return {**ledger.model_dump(mode="json"), "avoidance": ledger.avoidance}


def _avoided(ledger: Ledger) -> str:
    """The estimated cost avoided, for a table cell: unknown when no avoided call has one."""
    return usd(ledger.estimated_avoided_cost_usd, unknown="-")


def _print_periods(periods: list[tuple[str, Ledger]], period: Period) -> None:
    if not periods:
        typer.echo("no receipts", err=True)
        return
    print_table(
        [period.upper(), "TURNS", "HITS", "AVOIDANCE", "CALLS", "FAILED", "REJECTED",
         "COST PAID", "UNKNOWN COST", "COST AVOIDED (EST.)", "UNKNOWN AVOIDED"],
        [
            [
                name, str(t.turns), str(t.hits),
                "-" if t.avoidance is None else f"{t.avoidance:.1%}",
                str(t.attempted_calls), str(t.failed_calls), str(t.rejected),
                usd(t.cost_usd), str(t.unknown_cost_turns), _avoided(t),
                str(t.unknown_avoided_cost_calls),
            ]
            for name, t in periods
        ],
    )  # fmt: skip


def ledger(
    ctx: typer.Context,
    owner: AnyOwnerOption = None,
    by: Annotated[
        Period | None,
        typer.Option(
            "--by", help="One line a UTC day or hour: hit rate, cost paid and avoided over time."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show totals over receipts: turns, hits, calls avoided and made, tokens, cost paid and
    cost avoided, and jobs launched, reused (a job avoided), attached and lost. With --by, turn
    totals period by period instead.

    The cost avoided is an estimate: each hit is priced at what the paid call whose answer it
    served cost (a kept answer's own call, or the call a claim was promoted from). A hit with
    no such call on record (a job's or a person's claim) is counted as unknown, never as $0.
    The ledger counts the receipts that remain: `receipts prune` takes the deleted ones out of
    it, and leaves every other receipt's figures, estimates included, as they were.
    """
    if by is not None:
        periods = with_store(ctx, lambda store: store.ledger_by(by, owner), create=False)
        if as_json:
            print_json([{by: name, **_ledger_json(totals)} for name, totals in periods])
        else:
            _print_periods(periods, by)
        return

    async def both(store: StaffStore) -> tuple[Ledger, JobLedger]:
        return await store.ledger(owner), await store.job_ledger(owner)

    totals, jobs = with_store(ctx, both, create=False)
    if as_json:
        print_json({**_ledger_json(totals), "jobs": jobs.model_dump(mode="json")})
        return
    avoidance = totals.avoidance
    lines = [
        ("turns", str(totals.turns), "" if totals.turns else "no turns yet"),
        ("hits", str(totals.hits), "" if avoidance is None else f"avoidance {avoidance:.1%}"),
        ("misses", str(totals.misses), ""),
        ("calls avoided", str(totals.avoided_calls), ""),
        ("calls attempted", str(totals.attempted_calls), f"{totals.failed_calls} failed"),
        ("not attempted", str(totals.not_attempted), "nothing sent: no API key or no connection"),
        ("rejected", str(totals.rejected), "bad requests refused before the gate; not turns"),
        ("prompt tokens", str(totals.prompt_tokens), ""),
        ("completion tokens", str(totals.completion_tokens), ""),
        ("cost paid", usd(totals.cost_usd), "reported by providers for attempted calls"),
        ("unknown usage", str(totals.unknown_usage_turns), "attempted calls without token counts"),
        ("unknown cost", str(totals.unknown_cost_turns), "attempted calls without a cost"),
        (
            "cost avoided (est.)",
            usd(totals.estimated_avoided_cost_usd),
            "an estimate: each hit at what the paid call it reused cost",
        ),
        (
            "unknown avoided",
            str(totals.unknown_avoided_cost_calls),
            "avoided calls with no paid call on record (a job's or a person's claim)",
        ),
        ("jobs dispatched", str(jobs.dispatches), ""),
        ("jobs launched", str(jobs.launched), ""),
        ("jobs reused", str(jobs.reused), f"{jobs.jobs_avoided} jobs avoided"),
        ("jobs attached", str(jobs.attached), ""),
        ("jobs lost", str(jobs.lost), "no status within the deadline"),
    ]
    width = max(len(label) for label, _, _ in lines)
    number = max(len(value) for _, value, _ in lines)
    for label, value, note in lines:
        typer.echo(f"{label.ljust(width)}  {value.rjust(number)}  {note}".rstrip())


def register(app: typer.Typer) -> None:
    """Add `receipts` (with `show`, `export` and `prune`) and `ledger` to the command line."""
    app.add_typer(receipts_app, name="receipts")
    app.command("ledger")(ledger)
