"""The `staffstore` command line: each command parses, makes one library call, and prints.

Mistakes a user can make (a missing file, a bad value, a damaged database, no API key, an
unknown claim) end in one `error: ...` line on standard error and a non-zero exit, never a
traceback: exit 1 for a failed command, 2 for a usage error, 130 when interrupted.

This module holds the plumbing every command shares: the root command (`--db`, `-V`, `-h`),
the options and checks several commands use, and the printers (tables in tables.py). The
settings (flags over `STAFFSTORE_*` over the config file, see settings.py) are loaded once by
the root command. The commands plug in through EXTENSIONS (`query` and `ask` in turns.py,
`claims`, `receipts`, `ledger`, `replay`, `charts`, `report`, `serve`, `config`, ...): each
named module has `register(app)`, which adds commands or sub-apps to `app` and may use
`with_store`, `run`, the options and the printers below. A module is imported when one of its
commands is first used (lazy.py), so a command pays for its own imports only.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import (
    Awaitable,
    Callable,
    Coroutine,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar, cast

import typer
from pydantic import ValidationError
from typer.core import TyperGroup

from .. import __version__
from ..config import DB_ENV, default_db_path
from ..errors import ImportFileError, InputError, StaffstoreError
from ..settings import UserSettings, calibrated_gate_budget, check_http_url, load_settings
from ..store import StaffStore
from ..store.importer import validation_message
from ..store.location import StoreAddress, store_address
from .helptext import HELP_NAMES, tidy_options
from .lazy import LazyCommands
from .lazy import register_extensions as register_extensions  # for extensions' authors
from .tables import print_table as print_table  # where every command has found it

T = TypeVar("T")

#: The modules that add commands, each with the root commands its `register(app: typer.Typer)
#: -> None` adds, in the order the root's help lists them. A module is imported only when one
#: of its commands is used (cli/lazy.py): `staffstore receipts` loads neither the gate nor the
#: proxy. Add yours here.
EXTENSIONS: dict[str, tuple[str, ...]] = {
    "staffstore.cli.turns": ("query", "ask"),
    "staffstore.cli.claims": ("claims",),
    "staffstore.cli.receipts": ("receipts", "ledger"),
    "staffstore.cli.kept": ("kept",),
    "staffstore.cli.story": ("story",),
    "staffstore.cli.jobs": ("jobs",),
    "staffstore.cli.replay": ("replay", "charts", "report"),
    "staffstore.cli.serve": ("serve",),
    "staffstore.cli.state": ("state",),
    "staffstore.cli.agent_state": ("agent-state",),
    "staffstore.cli.scoped_state": ("scoped-state",),
    "staffstore.cli.memory": ("memory",),
    "staffstore.cli.config_cmd": ("config",),
    "staffstore.cli.operations": ("migrate", "copy"),
}

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130

#: How typer builds every command: the root's and each extension's alike.
_BUILD: dict[str, Any] = {
    # Locals in a traceback could hold an API key; a bug report does not need them.
    "pretty_exceptions_show_locals": False,
    # Markdown reflows the docstrings' paragraphs to the terminal's width.
    "rich_markup_mode": "markdown",
    # -h as well as --help, on every command; no `<bool>` after a flag in any help page.
    "context_settings": {"help_option_names": HELP_NAMES},
}


class RootGroup(TyperGroup):
    """The root command: its subcommands' modules are imported as they are used, and their
    commands tidied as they load (lazy.py); its own options are tidied before it runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(self.commands, EXTENSIONS, lambda: typer.Typer(**_BUILD))

    def main(self, *args: Any, **kwargs: Any) -> Any:
        tidy_options(self)
        return super().main(*args, **kwargs)


app = typer.Typer(
    name="staffstore",
    help="A query-first inference cache: answer from verified claims before paying for a model.",
    no_args_is_help=True,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell.
    add_completion=True,
    cls=RootGroup,
    **_BUILD,
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
        async with StaffStore.open(db_address(ctx), create=create) as store:
            return await call(store)

    return run(work())


def db_address(ctx: typer.Context) -> StoreAddress:
    """The store the command works on: `--db`, else `$STAFFSTORE_DB`, else the default (a
    SQLite file's path, or a postgresql:// URL)."""
    given = ctx.find_root().obj
    return given if isinstance(given, Path | str) else default_db_path()


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))


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
        str | None,
        typer.Option(
            "--db",
            envvar=DB_ENV,
            metavar="PATH|URL",
            help="The store: a SQLite file (a path, or sqlite:///PATH), or a PostgreSQL "
            "database (postgresql://USER@HOST:PORT/DB). Default: "
            "$XDG_DATA_HOME/staffstore/staffstore.db, else "
            "~/.local/share/staffstore/staffstore.db.",
            show_default=False,
        ),
    ] = None,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    with user_errors():
        settings = load_settings()
        chosen = db if db is not None else settings.db
        ctx.obj = store_address(chosen) if chosen is not None else default_db_path()
    ctx.meta["settings"] = settings
    # `serve` lets its own config file name the database unless the user named one.
    ctx.meta["db_given"] = chosen is not None
    ctx.meta["db_source"] = _db_source(ctx, db, settings)
    if settings.owner is not None:
        # The configured owner is the default of every --owner that names whose data a
        # command works on (not of the filters that default to every owner).
        # click only reads a default map (Context.lookup_default, a subcommand's context).
        ctx.default_map = cast(
            MutableMapping[str, Any], _OwnerDefaults(ctx.command, settings.owner)
        )


def _db_source(ctx: typer.Context, db: str | None, settings: UserSettings) -> str:
    """Where the database path came from: "flag", "env", "config file" or "default"."""
    if db is not None:
        source = ctx.get_parameter_source("db")
        return "env" if source is not None and source.name == "ENVIRONMENT" else "flag"
    return "config file" if settings.db is not None else "default"


class _OwnerDefaults(Mapping[str, Any]):
    """click's default_map for a group: `owner` as the default of every --owner that names
    whose data a command works on, not of the filters. click only asks it for the command
    about to run, so only that command's module is imported to answer."""

    def __init__(self, group: Any, owner: str) -> None:
        self._group, self._owner = group, owner

    def __getitem__(self, name: str) -> Any:
        sub = self._group.commands[name]
        if hasattr(sub, "commands"):
            # A group with its own --owner (receipts) is a filter: only its subcommands get one.
            return _OwnerDefaults(sub, self._owner)
        if any(
            param.name == "owner" and (param.help or "").startswith(OWNER_HELP_PREFIX)
            for param in sub.params
        ):
            return {"owner": self._owner}
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._group.commands)

    def __len__(self) -> int:
        return len(self._group.commands)


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
        return check_http_url(value)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None


def _calibrated(value: float) -> float:
    try:
        return calibrated_gate_budget(value)
    except InputError as error:
        raise typer.BadParameter(str(error).removeprefix("gate_budget ")) from None


def gate_budget(value: float | None) -> float | None:
    """A --gate-budget option's check: one of the budgets the gate was calibrated at (the gate
    would take the nearest stricter one without a word)."""
    return None if value is None else _calibrated(value)


def gate_budgets(values: list[float] | None) -> list[float] | None:
    """`gate_budget` for an option given several times."""
    return None if values is None else [_calibrated(value) for value in values]


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
#: The variable --gate-budget's default comes from (`staffstore config show` shows it).
GATE_BUDGET_ENV = "STAFFSTORE_GATE_BUDGET"
GateBudgetOption = Annotated[
    float | None,
    typer.Option(
        "--gate-budget",
        callback=gate_budget,
        metavar="BUDGET",
        envvar=GATE_BUDGET_ENV,
        help="The gate's error budget: the share of turns that may be served another "
        "question's answer; one of the calibrated budgets (0.001 by default; the README's gate "
        "card lists them).",
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


def _limit(value: int) -> int:
    # Checked here rather than by max=: the help would print the 19-digit bound.
    if value > MAX_LIMIT:
        raise typer.BadParameter(f"{value} is more than any store holds")
    return value


LimitOption = Annotated[
    int, typer.Option("--limit", min=1, callback=_limit, help="Show at most this many.")
]


# -- entry point -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code (the console script's entry point)."""
    try:
        result = app(args=argv, prog_name="staffstore", standalone_mode=False)
    except typer.TyperException as error:  # a usage error: unknown option, bad value, ...
        code = int(getattr(error, "exit_code", 2))
        # typer words a Literal's refusal as pydantic does ("Value error, 'x' is not one of").
        message = " ".join(error.format_message().replace("Value error, ", "").split())
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
