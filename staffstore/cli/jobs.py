"""The `jobs` commands: dispatch, attach, show, list and cancel an owner's jobs.

Each parses, makes one library call (staffstore.jobs) and prints; `--json` prints the whole
record. Jobs run through the embedded local-command runner, in a fresh folder per job under
--jobs-dir (default: a `jobs` folder beside the database). `show` and `list` read each
unfinished job's state from its runner, so a job that ended says so without an attach; a
`--wait` whose job did not succeed exits 1, naming its exit code and the end of its standard
error. Loaded through `cli.app.EXTENSIONS`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from ..config import DEFAULTS, default_jobs_dir
from ..jobs import (
    AttachPolicy,
    Dispatch,
    JobLimits,
    JobRequest,
    LocalCommandRunner,
    attach_job,
    cancel_job,
    ensure_dispatched,
    parse_inputs,
    refresh_job,
    refresh_jobs,
)
from ..models import Job, JobKind, JobStatus
from ..store import StaffStore
from .app import (
    EXIT_FAILED,
    JsonOption,
    LimitOption,
    OwnerOption,
    clip,
    db_address,
    fail,
    known,
    print_json,
    print_table,
    when,
    with_store,
)

JOBS_DIR_ENV = "STAFFSTORE_JOBS_DIR"
DEFAULT_POLICY = AttachPolicy()
DEFAULT_LIMITS = JobLimits()
#: Lines of a failed job's standard error a `--wait` prints.
STDERR_TAIL = 10

jobs_app = typer.Typer(
    help="Dispatch, attach to, show, list and cancel an owner's jobs: work paid for once.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

JobIdArgument = Annotated[
    str, typer.Argument(metavar="JOB_ID", help="A job id, or a unique prefix of 6+ characters.")
]
JobsDirOption = Annotated[
    Path | None,
    typer.Option(
        "--jobs-dir",
        envvar=JOBS_DIR_ENV,
        metavar="DIR",
        help="Where the local runner makes each job's folder. Default: `jobs` beside the database.",
        show_default=False,
    ),
]
WaitOption = Annotated[
    bool, typer.Option("--wait", help="Wait for the job to end, and store what it left.")
]
DeadlineOption = Annotated[
    float,
    typer.Option(
        "--deadline",
        min=0.0,
        metavar="SECONDS",
        help="A job whose status cannot be had for this long is marked lost.",
    ),
]
PollLimitOption = Annotated[
    int,
    typer.Option(
        "--poll-limit", min=1, help="... as is one after this many polls without a status."
    ),
]


TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        min=0.001,
        metavar="SECONDS",
        help="How long the command may run; then its process group is stopped and it fails.",
    ),
]


def _runner(
    ctx: typer.Context, jobs_dir: Path | None, limits: JobLimits = DEFAULT_LIMITS
) -> LocalCommandRunner:
    root = jobs_dir if jobs_dir is not None else default_jobs_dir(db_address(ctx))
    return LocalCommandRunner(root, limits=limits)


async def _stderr_tail(store: StaffStore, job: Job) -> list[str]:
    """The last lines of a job's standard error, as stored with it."""
    found = next((a for a in job.artifacts if a.name == "stderr"), None)
    if found is None:
        return []
    text = (await store.get_artifact(job.owner, found.artifact_id)).decode("utf-8", "replace")
    return text.rstrip("\n").splitlines()[-STDERR_TAIL:]


def _exit_unless_succeeded(dispatch: Dispatch, tail: list[str]) -> None:
    """After a --wait: a job that ended other than succeeded is the command's failure too."""
    job = dispatch.job
    if job.active or job.status == "succeeded":
        return
    what = f"the job {'was ' if job.status != 'failed' else ''}{job.status}"
    if job.exit_code is not None:
        what += f" with exit code {job.exit_code}"
    if job.error:
        what += f" ({job.error})"
    typer.echo(f"error: {what}" + ("; the end of its standard error:" if tail else ""), err=True)
    for line in tail:
        typer.echo(f"  {line}", err=True)
    raise typer.Exit(EXIT_FAILED)


def _job_json(job: Job) -> dict[str, Any]:
    return job.model_dump(mode="json")


def _dispatch_json(dispatch: Dispatch) -> dict[str, Any]:
    return dispatch.model_dump(mode="json")


def _print_dispatch(dispatch: Dispatch) -> None:
    """One line: what was done with which job, and why (naming the fields compared)."""
    job = dispatch.job
    line = f"{dispatch.action} job {job.id} ({job.status}): {dispatch.reason}"
    if dispatch.mismatched:
        line += f"; changed {', '.join(dispatch.mismatched)}"
        if dispatch.prior_job_id:
            line += f" since job {dispatch.prior_job_id}"
    elif dispatch.matched:
        line += f"; matched {', '.join(dispatch.matched)}"
    typer.echo(line)
    if job.claim_ids:
        typer.echo(f"claims: {', '.join(job.claim_ids)}")


@jobs_app.command(
    "dispatch", context_settings={"allow_interspersed_args": False}, no_args_is_help=True
)
def jobs_dispatch(
    ctx: typer.Context,
    command: Annotated[
        list[str],
        typer.Argument(metavar="-- COMMAND...", help="What the job runs, after `--`."),
    ],
    owner: OwnerOption,
    agent: Annotated[str, typer.Option(help="The agent that owns the job.")],
    task: Annotated[str, typer.Option(help="What the job is to do, in words.")],
    kind: Annotated[
        JobKind, typer.Option(help="analyze (reusable) or implement (always launched).")
    ] = "analyze",
    repository: Annotated[str | None, typer.Option(help="The repository it works on.")] = None,
    profile: Annotated[str | None, typer.Option(help="The profile it runs with.")] = None,
    revision: Annotated[str | None, typer.Option(help="The revision it works on.")] = None,
    inputs: Annotated[
        str, typer.Option(metavar="JSON", help="The inputs that decide the result: an object.")
    ] = "{}",
    launch_key: Annotated[
        str | None,
        typer.Option(help="Names this launch; a repeat attaches. Default: from the identity."),
    ] = None,
    expires_at: Annotated[
        datetime | None, typer.Option(help="When its result stops being reusable (ISO 8601).")
    ] = None,
    wait: WaitOption = False,
    deadline: DeadlineOption = DEFAULT_POLICY.deadline,
    poll_limit: PollLimitOption = DEFAULT_POLICY.poll_limit,
    timeout: TimeoutOption = DEFAULT_LIMITS.timeout,
    jobs_dir: JobsDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Reuse, attach to or launch a job, and say which and why.

    An analysis that matches a finished, live one of yours (agent, task, repository, profile,
    revision, inputs) is reused without running anything; a launch key whose job is still
    running is attached to; anything else is recorded, then launched. With --wait, a job that
    fails exits 1, naming its exit code and the end of its standard error.
    """
    try:
        parsed = parse_inputs(inputs)
    except ValueError as error:
        fail(f"invalid input: {error}")
    request = {
        "owner": owner, "agent": agent, "kind": kind, "task": task, "repository": repository,
        "profile": profile, "revision": revision, "inputs": parsed, "launch_key": launch_key,
        "command": command, "expires_at": expires_at,
    }  # fmt: skip
    policy = AttachPolicy(deadline=deadline, poll_limit=poll_limit)
    runner = _runner(ctx, jobs_dir, JobLimits(timeout=timeout))

    async def work(store: StaffStore) -> tuple[Dispatch, list[str]]:
        dispatch = await ensure_dispatched(
            store, JobRequest.model_validate(request), runner, policy=policy, wait=wait
        )
        return dispatch, await _stderr_tail(store, dispatch.job) if wait else []

    dispatch, tail = with_store(ctx, work)
    if as_json:
        print_json(_dispatch_json(dispatch))
    else:
        _print_dispatch(dispatch)
    if wait:
        _exit_unless_succeeded(dispatch, tail)


@jobs_app.command("attach")
def jobs_attach(
    ctx: typer.Context,
    job_id: JobIdArgument,
    owner: OwnerOption,
    wait: WaitOption = False,
    deadline: DeadlineOption = DEFAULT_POLICY.deadline,
    poll_limit: PollLimitOption = DEFAULT_POLICY.poll_limit,
    jobs_dir: JobsDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Attach to a job: ask its runner how it is, store what it left when it has ended, and
    mark it lost when no status comes within the deadline. With --wait, a job that did not
    succeed exits 1, as `dispatch --wait` does."""
    policy = AttachPolicy(deadline=deadline, poll_limit=poll_limit)
    runner = _runner(ctx, jobs_dir)

    async def work(store: StaffStore) -> tuple[Dispatch, list[str]]:
        dispatch = await attach_job(store, owner, job_id, runner, policy=policy, wait=wait)
        return dispatch, await _stderr_tail(store, dispatch.job) if wait else []

    dispatch, tail = with_store(ctx, work)
    if as_json:
        print_json(_dispatch_json(dispatch))
    else:
        _print_dispatch(dispatch)
    if dispatch.action == "lost":
        raise typer.Exit(EXIT_FAILED)
    if wait:
        _exit_unless_succeeded(dispatch, tail)


@jobs_app.command("show")
def jobs_show(
    ctx: typer.Context,
    job_id: JobIdArgument,
    owner: OwnerOption,
    jobs_dir: JobsDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one job in full, as it is now: its identity, status, artifacts and the claims it
    produced."""
    runner = _runner(ctx, jobs_dir)
    job = with_store(ctx, lambda store: refresh_job(store, owner, job_id, runner))
    if as_json:
        print_json(_job_json(job))
        return
    fields = job.model_dump(exclude={"artifacts", "claim_ids"})
    width = max(len(name) for name in fields)
    for name, value in fields.items():
        if isinstance(value, datetime):
            shown = when(value)
        elif isinstance(value, list):
            shown = " ".join(value)
        else:
            shown = known(value)
        typer.echo(f"{name.ljust(width)}  {shown}")
    for artifact in job.artifacts:
        typer.echo(f"artifact  {artifact.name}  {artifact.artifact_id}  {artifact.size} bytes")
    for claim_id in job.claim_ids:
        typer.echo(f"claim     {claim_id}")


@jobs_app.command("list")
def jobs_list(
    ctx: typer.Context,
    owner: OwnerOption,
    status: Annotated[
        JobStatus | None, typer.Option("--status", help="Only jobs with this status.")
    ] = None,
    kind: Annotated[JobKind | None, typer.Option("--kind", help="Only jobs of this kind.")] = None,
    limit: LimitOption = DEFAULTS.list_limit,
    jobs_dir: JobsDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """List an owner's jobs, newest first, each with its status as it is now."""
    runner = _runner(ctx, jobs_dir)
    jobs = with_store(
        ctx,
        lambda store: refresh_jobs(store, owner, runner, status=status, kind=kind, limit=limit),
    )
    if as_json:
        print_json([_job_json(job) for job in jobs])
        return
    if not jobs:
        typer.echo("no jobs", err=True)
        return
    print_table(
        ["ID", "CREATED", "KIND", "STATUS", "AGENT", "REPOSITORY", "REVISION", "TASK"],
        [
            [job.id, when(job.created_at), job.kind, job.status, clip(job.agent, 16),
             clip(job.repository, 24), clip(job.revision, 12), clip(job.task, 48)]
            for job in jobs
        ],
    )  # fmt: skip


@jobs_app.command("cancel")
def jobs_cancel(
    ctx: typer.Context,
    job_id: JobIdArgument,
    owner: OwnerOption,
    jobs_dir: JobsDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop a running job and record it cancelled; a job that has ended is left as it is."""
    runner = _runner(ctx, jobs_dir)

    job = with_store(ctx, lambda store: cancel_job(store, owner, job_id, runner))
    if as_json:
        print_json(_job_json(job))
    else:
        typer.echo(f"job {job.id} is {job.status}")


def register(app: typer.Typer) -> None:
    """Add `jobs` and its subcommands to the command line."""
    app.add_typer(jobs_app, name="jobs")
