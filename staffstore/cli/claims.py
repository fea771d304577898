"""The `claims` commands: store, import, export, list, search, show, retract, unretract,
supersede, promote claims, and list the conflicts among them.

A claim is a verified answer with its provenance; these commands are how a person or a script
puts claims in and looks at them. `claims promote` turns the answer a paid turn's receipt
recorded into a claim, on purpose: a chat answer never becomes a claim by itself. Loaded
through `cli.app.EXTENSIONS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

import typer

from ..config import DEFAULTS
from ..errors import NotFoundError
from ..gate import points_elsewhere
from ..gate.relative_time import relative_period
from ..models import Claim, ClaimSource, ClaimStatus, Job, NewClaim
from ..store import StaffStore
from ..store.corrections import (
    claim_conflicts,
    claim_line,
    iter_claims,
    supersede_claim,
    unretract_claim,
)
from ..store.importer import ImportReport, describe_bad_lines, new_claim, read_claims, store_claims
from ..store.promote import promote_receipt
from .app import (
    JsonOption,
    LimitOption,
    OwnerOption,
    RepositoryOption,
    RevisionOption,
    clip,
    db_address,
    known,
    print_json,
    print_table,
    run,
    utf8,
    when,
    with_store,
)
from .progress import progress_bar

ClaimIdArgument = Annotated[
    str, typer.Argument(metavar="ID", callback=utf8, help="A claim id, or 6+ characters.")
]

claims_app = typer.Typer(
    help="Store, import, export, list, search, show, correct and promote an owner's claims.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)


def _claim_json(claim: Claim) -> dict[str, Any]:
    return claim.model_dump(mode="json")


def _print_claims(claims: Sequence[Claim], as_json: bool) -> None:
    if as_json:
        print_json([_claim_json(claim) for claim in claims])
        return
    if not claims:
        typer.echo("no claims", err=True)
        return
    print_table(
        ["ID", "STATUS", "CREATED", "REPOSITORY", "REVISION", "QUESTION"],
        [
            [
                claim.id[:12], claim.status, when(claim.created_at),
                clip(claim.repository, 24), clip(claim.revision, 12), clip(claim.question, 60),
            ]
            for claim in claims
        ],
    )  # fmt: skip


def _warn_if_never_served(question: str) -> None:
    # Stored, but no turn can hit it: the gate misses every turn that asks about "this error"
    # or "the following code", since two people may mean two different things by it.
    if points_elsewhere(question):
        typer.echo(
            'note: the question points at something it does not carry ("this ...", "the '
            'following ..."), so the gate will never serve it; name the thing in --question',
            err=True,
        )
    # Served for a while only: "yesterday" means another day tomorrow.
    period = relative_period(question)
    if period is not None:
        typer.echo(
            f"note: the question names a time relative to when it is asked, so the claim "
            f"serves only during the {period} (UTC) it was stored in; name the date to keep it",
            err=True,
        )


@claims_app.command("add")
def claims_add(
    ctx: typer.Context,
    owner: OwnerOption,
    question: Annotated[
        str, typer.Option("--question", callback=utf8, help="The question it answers.")
    ],
    answer: Annotated[str, typer.Option("--answer", callback=utf8, help="The verified answer.")],
    agent: Annotated[
        str | None, typer.Option("--agent", callback=utf8, help="Who found it.")
    ] = None,
    source: Annotated[ClaimSource, typer.Option("--source", help="Where it came from.")] = "manual",
    job_id: Annotated[
        str | None, typer.Option("--job-id", callback=utf8, help="The job that found it.")
    ] = None,
    repository: RepositoryOption = None,
    revision: RevisionOption = None,
    profile: Annotated[
        str | None, typer.Option("--profile", callback=utf8, help="The profile used.")
    ] = None,
    inputs_fingerprint: Annotated[
        str | None,
        typer.Option("--inputs-fingerprint", callback=utf8, help="A hash of the job's inputs."),
    ] = None,
    expires_at: Annotated[
        str | None,
        typer.Option(
            "--expires-at", metavar="ISO8601", callback=utf8, help="When it stops being served."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Store one claim; storing the same claim again adds nothing and says so."""
    fields = {
        "owner": owner, "question": question, "answer": answer, "agent": agent,
        "source": source, "job_id": job_id, "repository": repository, "profile": profile,
        "revision": revision, "inputs_fingerprint": inputs_fingerprint, "expires_at": expires_at,
    }  # fmt: skip

    async def work() -> tuple[Claim, bool]:
        claim = new_claim(fields)
        async with StaffStore.open(db_address(ctx)) as store:
            return (await store.ensure_claims([claim]))[0]

    stored, added = run(work())
    if as_json:
        print_json({"id": stored.id, "added": added, "claim": _claim_json(stored)})
    else:
        typer.echo(f"{'added' if added else 'already stored'} {stored.id}")
    _warn_if_never_served(stored.question)


@claims_app.command("import")
def claims_import(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(metavar="FILE", help="A JSON Lines file, or - for stdin.")],
    skip_bad: Annotated[
        bool, typer.Option("--skip-bad", help="Skip bad lines (and count them) instead.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Import claims from a JSON Lines file: one claim a line.

    Each line is a JSON object with `owner`, `question` and `answer`, and optionally `agent`,
    `source` (job, chat or manual), `job_id`, `repository`, `profile`, `revision`,
    `inputs_fingerprint` and `expires_at` (ISO 8601). Blank lines are ignored. A claim already
    stored is not added again, so importing a file twice adds nothing.

    The whole file is read and checked before anything is stored (the valid claims wait in a
    temporary file, so a long file needs little memory). A bad line (not UTF-8, not JSON, or
    failing a field) rejects the whole file: nothing is stored and the error names the first
    bad lines and counts them. With --skip-bad the bad lines are skipped and counted and the
    good ones stored; --json lists the first 1,000 bad lines with their reasons.
    """

    async def work() -> tuple[ImportReport, int, int]:
        source = typer.get_binary_stream("stdin") if file == "-" else file
        notes = {"never_served": 0, "dated": 0}

        def inspect(claim: NewClaim) -> None:
            notes["never_served"] += points_elsewhere(claim.question)
            notes["dated"] += relative_period(claim.question) is not None

        with read_claims(source, inspect=inspect) as parsed:
            async with StaffStore.open(db_address(ctx)) as store:
                with progress_bar("storing claims", quiet=as_json) as progress:
                    report = await store_claims(
                        store, parsed, skip_bad=skip_bad,
                        batch_size=DEFAULTS.import_batch_size, progress=progress,
                    )  # fmt: skip
        return report, notes["never_served"], notes["dated"]

    report, never_served, dated = run(work())
    if as_json:
        print_json(
            {
                "file": report.name, "added": report.added, "present": report.present,
                "skipped": report.skipped,
                "bad_lines": [{"line": b.number, "reason": b.reason} for b in report.bad],
            }
        )  # fmt: skip
    else:
        typer.echo(
            f"{report.added} added, {report.present} already present, {report.skipped} skipped"
        )
    if report.bad:
        typer.echo(f"skipped {describe_bad_lines(report.bad, total=report.skipped)}", err=True)
    if never_served:
        typer.echo(
            f"note: {never_served} of the questions point at something they do not carry "
            '("this ...", "the following ..."), so the gate will never serve them',
            err=True,
        )
    if dated:
        typer.echo(
            f"note: {dated} of the questions name a time relative to when they are asked "
            '("yesterday", "last week"), so each serves only during the day, week, month or '
            "year (UTC) it was stored in",
            err=True,
        )


@claims_app.command("list")
def claims_list(
    ctx: typer.Context,
    owner: OwnerOption,
    status: Annotated[
        ClaimStatus | None, typer.Option("--status", help="Only claims with this status.")
    ] = None,
    limit: LimitOption = DEFAULTS.list_limit,
    as_json: JsonOption = False,
) -> None:
    """List an owner's claims, newest first."""
    _print_claims(
        with_store(
            ctx, lambda store: store.list_claims(owner, status=status, limit=limit), create=False
        ),
        as_json,
    )


@claims_app.command("search")
def claims_search(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(callback=utf8, help="Words that must all appear.")],
    owner: OwnerOption,
    limit: LimitOption = DEFAULTS.search_limit,
    as_json: JsonOption = False,
) -> None:
    """Full-text search of an owner's claims, best match first."""
    _print_claims(
        with_store(ctx, lambda store: store.search_claims(owner, text, limit=limit), create=False),
        as_json,
    )


@claims_app.command("show")
def claims_show(
    ctx: typer.Context,
    claim_id: ClaimIdArgument,
    owner: OwnerOption,
    as_json: JsonOption = False,
) -> None:
    """Show one claim in full, and the job that produced it when a job did."""
    claim, job = with_store(ctx, lambda store: _claim_and_job(store, owner, claim_id), create=False)
    if as_json:
        print_json({**_claim_json(claim), "job": job.model_dump(mode="json") if job else None})
        return
    fields = claim.model_dump()
    width = max(len(name) for name in fields)
    for name, value in fields.items():
        shown = when(value) if isinstance(value, datetime) else known(value)
        typer.echo(f"{name.ljust(width)}  {shown}")
    if job is not None:
        typer.echo(
            f"{'job'.ljust(width)}  {job.kind} by {job.agent}, {job.status}: {clip(job.task, 60)}"
        )


async def _claim_and_job(store: StaffStore, owner: str, claim_id: str) -> tuple[Claim, Job | None]:
    """The claim, and its job's record when the claim names a job this store has."""
    claim = await store.get_claim(owner, claim_id)
    if claim.job_id is None or len(claim.job_id) < 6:
        return claim, None
    try:
        job = await store.get_job(owner, claim.job_id)
    except NotFoundError:  # a job-sourced claim imported from elsewhere
        return claim, None
    return claim, job if job.id == claim.job_id else None  # an id, not a prefix of one


@claims_app.command("retract")
def claims_retract(
    ctx: typer.Context,
    claim_id: ClaimIdArgument,
    owner: OwnerOption,
    as_json: JsonOption = False,
) -> None:
    """Retract a claim: it stays on record but is never served again."""
    claim = with_store(ctx, lambda store: store.retract_claim(owner, claim_id))
    if as_json:
        print_json(_claim_json(claim))
    else:
        typer.echo(f"retracted {claim.id}")


@claims_app.command("unretract")
def claims_unretract(
    ctx: typer.Context,
    claim_id: ClaimIdArgument,
    owner: OwnerOption,
    as_json: JsonOption = False,
) -> None:
    """Undo a retraction: the claim is served again."""
    claim = with_store(ctx, lambda store: unretract_claim(store, owner, claim_id))
    if as_json:
        print_json(_claim_json(claim))
    else:
        typer.echo(f"unretracted {claim.id} ({claim.status})")


@claims_app.command("supersede")
def claims_supersede(
    ctx: typer.Context,
    claim_id: ClaimIdArgument,
    owner: OwnerOption,
    answer: Annotated[str, typer.Option("--answer", callback=utf8, help="The corrected answer.")],
    question: Annotated[
        str | None,
        typer.Option("--question", callback=utf8, help="A reworded question, if it needs one."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Correct a claim: store the new answer as a claim that supersedes this one.

    Every other live claim asking the same question (same words, repository and profile) is
    superseded too, which settles a `conflict`. The old claims stay on record, marked
    superseded by the new one, and are no longer served.
    """
    old, new = with_store(
        ctx,
        lambda store: supersede_claim(store, owner, claim_id, answer=answer, question=question),
    )
    if as_json:
        print_json({"superseded": [_claim_json(claim) for claim in old], "claim": _claim_json(new)})
    else:
        typer.echo(f"added {new.id}, superseding {', '.join(claim.id for claim in old)}")
    _warn_if_never_served(new.question)


@claims_app.command("conflicts")
def claims_conflicts(ctx: typer.Context, owner: OwnerOption, as_json: JsonOption = False) -> None:
    """List the live claims that answer one question differently (the gate's `conflict`).

    Fix one with `claims supersede` or `claims retract` on the claim that is wrong.
    """
    found = with_store(ctx, lambda store: claim_conflicts(store, owner), create=False)
    if as_json:
        print_json(
            [
                {"question": c.question, "repository": c.repository, "profile": c.profile,
                 "claims": [_claim_json(claim) for claim in c.claims]}
                for c in found
            ]
        )  # fmt: skip
        return
    if not found:
        typer.echo("no conflicts", err=True)
        return
    for conflict in found:
        where = f" ({conflict.repository})" if conflict.repository else ""
        typer.echo(f"{clip(conflict.question, 70)}{where}")
        for claim in conflict.claims:
            typer.echo(f"  {claim.id}  {when(claim.created_at)}  {clip(claim.answer, 60)}")


@claims_app.command("export")
def claims_export(
    ctx: typer.Context,
    owner: OwnerOption,
    status: Annotated[
        ClaimStatus | None,
        typer.Option("--status", help="Only claims with this status (default: live)."),
    ] = "live",
    all_statuses: Annotated[
        bool, typer.Option("--all", help="Every claim, whatever its status.")
    ] = False,
) -> None:
    """Write the owner's claims as JSON Lines on standard output, newest first.

    `claims import` reads the file back to the same claims (the same ids). Only what a claim
    says and where it came from is written, not its status: by default only live claims, so
    an import elsewhere serves what this store serves.
    """
    stdout = typer.get_text_stream("stdout")

    async def work(store: StaffStore) -> int:
        count = 0
        async for claim in iter_claims(store, owner, status=None if all_statuses else status):
            stdout.write(claim_line(claim) + "\n")
            count += 1
        return count

    count = with_store(ctx, work, create=False)
    typer.echo(f"exported {count} claims", err=True)


@claims_app.command("promote")
def claims_promote(
    ctx: typer.Context,
    receipt_id: Annotated[
        str, typer.Argument(metavar="RECEIPT_ID", callback=utf8, help="A paid turn's receipt.")
    ],
    owner: OwnerOption,
    question: Annotated[
        str | None, typer.Option(callback=utf8, help="The question to store, if not the one asked.")
    ] = None,
    answer: Annotated[
        str | None, typer.Option(callback=utf8, help="The answer to store, if tidied.")
    ] = None,
    agent: Annotated[str | None, typer.Option(callback=utf8, help="Who verified it.")] = None,
    repository: Annotated[
        str | None, typer.Option(callback=utf8, help="The repository it is about.")
    ] = None,
    revision: Annotated[
        str | None, typer.Option(callback=utf8, help="The revision it holds at.")
    ] = None,
    profile: Annotated[
        str | None, typer.Option(callback=utf8, help="The profile it was made with.")
    ] = None,
    expires_at: Annotated[
        datetime | None, typer.Option(help="When it stops being served (ISO 8601).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Make a paid answer (by its receipt) a verified claim that later turns can hit."""
    claim = with_store(
        ctx,
        lambda store: promote_receipt(
            store, owner, receipt_id, question=question, answer=answer, agent=agent,
            repository=repository, revision=revision, profile=profile, expires_at=expires_at,
        ),
    )  # fmt: skip
    if as_json:
        print_json(claim.model_dump(mode="json"))
    else:
        typer.echo(f"promoted {receipt_id} to claim {claim.id}")
    _warn_if_never_served(claim.question)


def register(app: typer.Typer) -> None:
    """Add `claims` and its subcommands to the command line."""
    app.add_typer(claims_app, name="claims")
