"""The `staffstore` command line: each command parses, makes one library call, and prints.

Mistakes a user can make (a missing file, a bad value, a damaged database, no API key, an
unknown claim) end in one `error: ...` line on standard error and a non-zero exit, never a
traceback: exit 1 for a failed command, 2 for a usage error, 130 when interrupted.

This module holds the plumbing every command shares and the turn commands (`query`, `ask`).
The settings (flags over `STAFFSTORE_*` over the config file, see settings.py) are loaded once
by the root command. The rest plug in through EXTENSIONS (`claims`, `receipts`, `ledger`,
`replay`, `charts`, `report`, `serve`, ...): each named module has `register(app)`, which
adds commands or sub-apps to `app` and may use `with_store`, `run`, the options and the
printers below.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sqlite3
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import httpx
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from .. import __version__
from ..config import DB_ENV, DEFAULTS, default_db_path
from ..errors import ImportFileError, InputError, StaffstoreError
from ..gate import query_first
from ..models import Decision, Turn, TurnResult
from ..mouth import MAX_KEEP_SECONDS, CachePolicy, ensure_mouth
from ..settings import UserSettings, load_settings
from ..store import StaffStore
from ..store.importer import parse_json_object, validation_message
from ..upstream import OpenRouter

T = TypeVar("T")

#: Modules that add commands (claims, jobs, replay, charts, report, serve): each is imported
#: when the CLI loads and its `register(app: typer.Typer) -> None` called. Add yours here.
EXTENSIONS: tuple[str, ...] = (
    "staffstore.cli.claims",
    "staffstore.cli.receipts",
    "staffstore.cli.jobs",
    "staffstore.cli.replay",
    "staffstore.cli.serve",
    "staffstore.cli.state",
    "staffstore.cli.agent_state",
)

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130

app = typer.Typer(
    name="staffstore",
    help="A query-first inference cache: answer from verified claims before paying for a model.",
    no_args_is_help=True,
    # Locals in a traceback could hold an API key; a bug report does not need them.
    pretty_exceptions_show_locals=False,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell.
    add_completion=True,
    # Markdown reflows the docstrings' paragraphs to the terminal's width.
    rich_markup_mode="markdown",
)


# -- plumbing shared by every command ----------------------------------------------------------


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    """Print one `error: ...` line to standard error and exit with `code`."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors a user can cause into one line and an exit code."""
    try:
        yield
    except ImportFileError as error:
        fail(f"{error} (fix those lines, or pass --skip-bad to store the good ones)")
    except StaffstoreError as error:
        fail(str(error))
    except ValidationError as error:
        fail(f"invalid input: {validation_message(error)}")
    except sqlite3.DatabaseError as error:
        fail(f"database error: {error}")
    except UnicodeError:
        # Text options are checked as they are parsed (see `utf8`); this is the net for any
        # that is not, so bytes that are not UTF-8 still end in one line.
        fail(NOT_UTF8)
    except KeyboardInterrupt:
        fail("interrupted", EXIT_INTERRUPTED)


def run(work: Coroutine[Any, Any, T]) -> T:
    """Run one async library call to its end, reporting a user's mistakes as one line."""
    with user_errors():
        return asyncio.run(work)


def with_store(
    ctx: typer.Context, call: Callable[[StaffStore], Awaitable[T]], *, create: bool = True
) -> T:
    """Open the command's store, make one library call on it, and close it (see `run`).

    A command that only reads passes `create=False`: a mistyped --db is then an error, not
    a new empty database that answers "no claims".
    """

    async def work() -> T:
        async with StaffStore.open(db_path(ctx), create=create) as store:
            return await call(store)

    return run(work())


def db_path(ctx: typer.Context) -> Path:
    """The database the command works on: `--db`, else `$STAFFSTORE_DB`, else the default."""
    given = ctx.find_root().obj
    return given if isinstance(given, Path) else default_db_path()


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print rows as aligned columns under a header (rich): fitted to a terminal's width, one
    line a row when piped, no trailing spaces."""
    if not rows:
        return
    stdout = typer.get_text_stream("stdout")
    terminal = stdout.isatty()
    # Piped, a row stays one line whatever its length: a script reads it with split().
    console = Console(
        file=stdout, width=None if terminal else 100_000, highlight=False, markup=False,
        emoji=False, force_terminal=terminal, no_color=not terminal,
    )  # fmt: skip
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold" if terminal else "")
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row)
    with console.capture() as captured:
        console.print(table)
    for line in captured.get().splitlines():
        typer.echo(line.rstrip())


def clip(text: str | None, width: int) -> str:
    if text is None:
        return "-"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment is not None else "-"


def known(value: object) -> str:
    """A value for a table cell: unknown shows as '-', never as 0."""
    return "-" if value is None else str(value)


def _print_version(given: bool) -> None:
    if given:
        typer.echo(f"staffstore {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            envvar=DB_ENV,
            metavar="PATH",
            help="The database file. Default: $XDG_DATA_HOME/staffstore/staffstore.db, "
            "else ~/.local/share/staffstore/staffstore.db.",
            show_default=False,
        ),
    ] = None,
    _version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    with user_errors():
        settings = load_settings()
    ctx.meta["settings"] = settings
    chosen = db if db is not None else settings.db
    ctx.obj = chosen.expanduser() if chosen is not None else default_db_path()
    # `serve` lets its own config file name the database unless the user named one.
    ctx.meta["db_given"] = chosen is not None
    if settings.owner is not None:
        # The configured owner is the default of every --owner that names whose data a
        # command works on (not of the filters that default to every owner).
        ctx.default_map = _owner_defaults(ctx.command, settings.owner)


def _owner_defaults(command: Any, owner: str) -> dict[str, Any]:
    """click's default_map, giving `owner` to every command's --owner but the filters."""
    found: dict[str, Any] = {}
    for name, sub in getattr(command, "commands", {}).items():
        if hasattr(sub, "commands"):
            found[name] = _owner_defaults(sub, owner)
        elif any(
            param.name == "owner" and (param.help or "").startswith(OWNER_HELP_PREFIX)
            for param in sub.params
        ):
            found[name] = {"owner": owner}
    # A group with its own --owner (receipts) is a filter: only its subcommands get one.
    return found


def settings_of(ctx: typer.Context) -> UserSettings:
    """The settings the root command loaded (environment and config file)."""
    settings = ctx.find_root().meta.get("settings")
    return settings if isinstance(settings, UserSettings) else load_settings()


# -- options used by several commands ----------------------------------------------------------

NOT_UTF8 = "not valid UTF-8 text (the shell passed bytes that are not UTF-8)"


def utf8(value: str | None) -> str | None:
    """A text option's check: refuse bytes that are not UTF-8 before they are matched or stored.

    Python hands such an argument over with each bad byte as a lone surrogate, which no store,
    matcher or UTF-8 output can take. File names are bytes to the system: those options skip it.
    """
    if value is not None:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise typer.BadParameter(NOT_UTF8) from None
    return value


def http_url(value: str | None) -> str | None:
    """A base URL option's check: an http(s) URL with a host and a port that can exist."""
    if value is None:
        return None
    utf8(value)
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL as error:
        raise typer.BadParameter(f"not a URL ({error})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise typer.BadParameter("give an http:// or https:// URL with a host")
    if url.port is not None and not 0 < url.port < 65536:
        raise typer.BadParameter(f"port {url.port} is not between 1 and 65535")
    return value


#: How an --owner that names whose data a command works on starts its help; the configured
#: owner (STAFFSTORE_OWNER, `owner` in the config file) is its default.
OWNER_HELP_PREFIX = "Whose"
OwnerOption = Annotated[
    str, typer.Option("--owner", callback=utf8, help="Whose claims and receipts.")
]
AnyOwnerOption = Annotated[
    str | None,
    typer.Option("--owner", callback=utf8, help="Only this owner's rows (default: every owner)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
GateBudgetOption = Annotated[
    float | None,
    typer.Option(
        "--gate-budget",
        min=0.0,
        max=1.0,
        envvar="STAFFSTORE_GATE_BUDGET",
        help="The gate's error budget: the share of turns that may be served another "
        "question's answer (0.001 by default; the README's gate card lists the calibrated ones).",
    ),
]
RepositoryOption = Annotated[
    str | None,
    typer.Option("--repository", callback=utf8, help="The repository the question is about."),
]
RevisionOption = Annotated[
    str | None, typer.Option("--revision", callback=utf8, help="The revision of that repository.")
]
SessionOption = Annotated[
    str | None, typer.Option("--session", callback=utf8, help="The session's name.")
]
#: SQLite's largest integer: a larger limit would overflow the query instead of meaning "all".
MAX_LIMIT = 2**63 - 1
LimitOption = Annotated[
    int, typer.Option("--limit", min=1, max=MAX_LIMIT, help="Show at most this many.")
]


# -- query: the gate's decision, no model call -------------------------------------------------

_QUERY_FIELDS = frozenset({"owner", "text", "session", "repository", "revision", "gate_budget"})


def _decision_json(decision: Decision) -> dict[str, Any]:
    return {
        "outcome": decision.outcome,
        "reason": decision.reason,
        "answer": decision.answer,
        "claim_id": decision.claim_id,
        "score": decision.score,
        "threshold": decision.threshold,
        "budget": decision.budget,
        "differs_in": decision.differs_in,
        "asked_only": decision.asked_only,
        "stored_only": decision.stored_only,
    }


def _print_decision(decision: Decision) -> None:
    parts = [decision.outcome, decision.reason]
    if decision.score is not None:
        parts.append(f"score {decision.score:.3f}")
    if decision.threshold is not None and decision.budget is not None:
        # The second look's verdict: its score against the threshold calibrated for the budget.
        sign = ">=" if decision.hit else "<"
        parts[-1] += f" {sign} threshold {decision.threshold:.3f} (budget {decision.budget:g})"
    if decision.differs_in is not None:
        parts.append(f"differs in {decision.differs_in.replace('_', ' ')}")
    if decision.claim_id is not None:
        parts.append(f"{'claim' if decision.hit else 'nearest'} {decision.claim_id}")
    typer.echo("  ".join(parts))
    if decision.asked_only or decision.stored_only:
        asked = ", ".join(decision.asked_only) or "-"
        stored = ", ".join(decision.stored_only) or "-"
        typer.echo(f"  only in the question asked: {asked}; only in the stored one: {stored}")
    if decision.answer is not None:
        typer.echo(decision.answer)


def _turn_from_line(raw: bytes, defaults: dict[str, Any]) -> tuple[Turn, Any]:
    """Parse one --jsonl input line into a Turn and the caller's `id`; InputError if bad."""
    obj = parse_json_object(raw)
    ident = obj.pop("id", None)
    unknown = sorted(set(obj) - _QUERY_FIELDS)
    if unknown:
        raise InputError(f"unknown field(s): {', '.join(unknown)}")
    if "text" not in obj:
        raise InputError("text: Field required")
    try:
        return Turn.model_validate({**defaults, **obj}), ident
    except ValidationError as error:
        raise InputError(validation_message(error)) from None


async def _query_lines(db: Path, defaults: dict[str, Any]) -> dict[str, int]:
    """Answer each standard-input line with one output line; count the outcomes."""
    counts = {"hit": 0, "miss": 0, "error": 0}
    stdin = typer.get_binary_stream("stdin")
    stdout = typer.get_text_stream("stdout")
    async with StaffStore.open(db, create=False) as store:
        for number, raw in enumerate(stdin, start=1):
            if not raw.strip():
                continue
            ident: Any = None
            try:
                turn, ident = _turn_from_line(raw, defaults)
            except InputError as error:
                out: dict[str, Any] = {"outcome": "error", "error": str(error), "line": number}
            else:
                out = {**_decision_json(await query_first(store, turn)), "line": number}
            if ident is not None:
                out["id"] = ident
            counts[out["outcome"]] += 1
            stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
            stdout.flush()
    return counts


@app.command("query")
def query(
    ctx: typer.Context,
    question: Annotated[
        str | None, typer.Argument(callback=utf8, help="The question (omit with --jsonl).")
    ] = None,
    owner: Annotated[
        str | None,
        typer.Option(
            "--owner", callback=utf8, help="Whose claims to answer from (required without --jsonl)."
        ),
    ] = None,
    repository: RepositoryOption = None,
    revision: RevisionOption = None,
    session: SessionOption = None,
    gate_budget: GateBudgetOption = None,
    as_json: JsonOption = False,
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="Read queries from stdin, one JSON object a line.")
    ] = False,
) -> None:
    """Show the gate's decision for a question: a hit with its claim, or a miss and why.

    No model is called. With --jsonl, each standard-input line is a JSON object with `text`,
    `owner` and optionally `repository`, `revision`, `session` (the options of those names
    give defaults) and `id`; each gets one output line with `outcome`, `reason`, `answer`
    (null on a miss), `claim_id`, `score`, `line` and the `id` given. Blank lines are
    skipped. A line that cannot be read gets `{"outcome": "error", "error": "...", "line": N}`
    and the rest go on; the exit code stays 0 and a summary on standard error counts errors.

    Put `--` before a question that starts with "-".
    """
    if jsonl:
        if question is not None:
            raise typer.BadParameter("give a question or --jsonl, not both", param_hint="QUESTION")
        given = {
            "owner": owner, "repository": repository, "revision": revision, "session": session,
            "gate_budget": gate_budget,
        }  # fmt: skip
        defaults = {name: value for name, value in given.items() if value is not None}
        counts = run(_query_lines(db_path(ctx), defaults))
        total = sum(counts.values())
        typer.echo(
            f"query: {total} lines, {counts['hit']} hits, {counts['miss']} misses, "
            f"{counts['error']} errors",
            err=True,
        )
        return
    if question is None:
        raise typer.BadParameter("give a question, or --jsonl to read them", param_hint="QUESTION")
    if owner is None:
        raise typer.BadParameter("required without --jsonl", param_hint="--owner")

    decision = with_store(
        ctx,
        lambda store: query_first(
            store,
            Turn(
                owner=owner, text=question, session=session, repository=repository,
                revision=revision, gate_budget=gate_budget,
            ),
        ),
        create=False,
    )  # fmt: skip
    if as_json:
        print_json(_decision_json(decision))
    else:
        _print_decision(decision)


# -- ask: a whole turn, the model called only on a miss ----------------------------------------


def answer_source(result: TurnResult, now: datetime) -> str:
    """One line saying where an answer came from: a claim, a kept answer, or the model."""
    receipt, decision, kept = result.receipt, result.decision, result.kept_from
    if kept is not None:
        return (
            f"from a kept answer (receipt {kept.receipt_id}, {_ago(kept.kept_at, now)}; "
            "no model call)"
        )
    if decision.hit:
        how = (
            decision.reason
            if decision.score is None
            else (f"{decision.reason}, score {decision.score:.2f}")
        )
        return f"from claim {decision.claim_id} ({how}; no model call)"
    tokens = (
        None
        if receipt.prompt_tokens is None or receipt.completion_tokens is None
        else receipt.prompt_tokens + receipt.completion_tokens
    )
    cost = "cost unknown" if receipt.cost_usd is None else f"${receipt.cost_usd:.4f}"
    used = "tokens unknown" if tokens is None else f"{tokens} tokens"
    return f"from the model {receipt.model or 'unknown'} ({used}, {cost})"


def _ago(moment: datetime, now: datetime) -> str:
    seconds = max((now - moment).total_seconds(), 0.0)
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def _result_json(result: TurnResult) -> dict[str, Any]:
    working_set = result.working_set
    kept = result.kept_from
    return {
        **_decision_json(result.decision),
        "source": result.source,
        "kept_from": None if kept is None else kept.model_dump(mode="json"),
        "answer": result.answer,
        "status": result.receipt.status,
        "error": result.receipt.error,
        "receipt_id": result.receipt.id,
        "receipt": result.receipt.model_dump(mode="json"),
        "working_set": None
        if working_set is None
        else working_set.model_dump(mode="json", exclude={"messages"}),
    }


@app.command("ask")
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(callback=utf8, help="The question.")],
    owner: OwnerOption,
    session: SessionOption = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", callback=utf8, help="The agent whose working state the prompt carries."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            callback=utf8,
            help=f"The model to ask on a miss (default: settings, else {DEFAULTS.model}).",
        ),
    ] = None,
    upstream: Annotated[
        str | None,
        typer.Option(
            "--upstream",
            callback=http_url,
            help="An OpenAI-compatible API base URL (default: settings, else "
            f"{DEFAULTS.base_url}).",
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", callback=http_url, hidden=True)
    ] = None,
    budget: Annotated[
        int, typer.Option("--budget", min=64, help="Token budget of the prompt sent on a miss.")
    ] = DEFAULTS.budget,
    repository: RepositoryOption = None,
    revision: RevisionOption = None,
    gate_budget: GateBudgetOption = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds to wait for the model.")
    ] = DEFAULTS.timeout,
    max_retries: Annotated[
        int, typer.Option("--max-retries", min=0, help="Retries on 429, 5xx or no connection.")
    ] = 2,
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh",
            help="Ask the model even for a repeat or a question a claim answers, and keep the "
            "new answer (the proxy's no-cache).",
        ),
    ] = False,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Neither serve from the store nor keep the answer: a plain model call "
            "(the proxy's no-cache and no-store; the receipt is written as always).",
        ),
    ] = False,
    ttl: Annotated[
        float | None,
        typer.Option(
            "--ttl",
            min=0,
            max=MAX_KEEP_SECONDS,
            help="Seconds the kept answer may serve repeats (default: until replaced).",
        ),
    ] = None,
    max_age: Annotated[
        float | None,
        typer.Option(
            "--max-age",
            min=0,
            max=MAX_KEEP_SECONDS,
            help="Serve a repeat only from an answer kept at most this many seconds ago.",
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="Do not say on standard error where the answer came from."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Answer a question: from a kept answer to the same question, else from a stored claim,
    else by asking the model.

    The model is asked only on a miss, with the key in $OPENROUTER_API_KEY; its answer is kept,
    so the exact same question (same owner, model, session, agent, repository, revision and
    working state) is answered again without a call. Standard output is the answer alone;
    standard error says where it came from. Every turn writes a receipt, failed ones included
    (see `staffstore receipts`).
    """

    settings = settings_of(ctx)
    model = model or settings.model
    key_env = settings.upstream_key_env

    async def work() -> TurnResult:
        turn = Turn(
            owner=owner,
            text=question,
            session=session,
            agent=agent,
            repository=repository,
            revision=revision,
            gate_budget=gate_budget,
        )
        async with (
            StaffStore.open(db_path(ctx)) as store,
            OpenRouter(
                # "" rather than None: OpenRouter would read its own variable on None.
                api_key=os.environ.get(key_env) or "",
                base_url=upstream or base_url or settings.upstream,
                model=model,
                title="staffstore",
                timeout=timeout,
                max_retries=max_retries,
            ) as chat,
        ):
            return await ensure_mouth(store, turn, chat, model=model, budget=budget, cache=cache)

    cache = CachePolicy.from_flags(refresh=refresh, no_cache=no_cache, ttl=ttl, max_age=max_age)
    result = run(work())
    receipt = result.receipt
    if as_json:
        print_json(_result_json(result))
    elif result.answer is not None:
        typer.echo(result.answer)
        if not quiet:
            typer.echo(answer_source(result, datetime.now(UTC)), err=True)
    if result.answer is None:
        if receipt.status == "rejected":
            fail(f"{receipt.error} (receipt {receipt.id})")
        if receipt.status == "no_api_key":
            fail(
                f"no API key: set {key_env} to ask a model on a miss "
                f"(nothing was sent; receipt {receipt.id})"
            )
        fail(f"the model call failed ({receipt.status}): {receipt.error} (receipt {receipt.id})")


# -- entry point -------------------------------------------------------------------------------


def register_extensions(target: typer.Typer, names: Sequence[str] = EXTENSIONS) -> None:
    """Import each named module and let it add its commands to `target`."""
    for name in names:
        importlib.import_module(name).register(target)


register_extensions(app)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code (the console script's entry point)."""
    try:
        result = app(args=argv, prog_name="staffstore", standalone_mode=False)
    except typer.TyperException as error:  # a usage error: unknown option, bad value, ...
        code = int(getattr(error, "exit_code", 2))
        message = " ".join(error.format_message().split())
        if not message:  # `staffstore claims` alone: rich has already printed the help
            return code
        # Typer's usage errors carry the context of the command they were made on.
        ctx = getattr(error, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        typer.echo(f"error: {message}{hint}", err=True)
        return code
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("error: interrupted", err=True)
        return EXIT_INTERRUPTED
    except StaffstoreError as error:  # raised outside a command's run(), e.g. by an extension
        typer.echo(f"error: {' '.join(str(error).split())}", err=True)
        return EXIT_FAILED
    except UnicodeError:  # text that is not UTF-8 met outside a command's run()
        typer.echo(f"error: {NOT_UTF8}", err=True)
        return EXIT_FAILED
    return result if isinstance(result, int) else 0
