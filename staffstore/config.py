"""Where staffstore keeps its database, and the defaults the command line starts from.

The database lives at `$STAFFSTORE_DB` when that is set (the CLI's `--db` wins over it), else
under the XDG data directory: `$XDG_DATA_HOME/staffstore/staffstore.db`, falling back to
`~/.local/share/staffstore/staffstore.db`. Every other default is gathered in `DEFAULTS`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .store.importer import NAMED_BAD_LINES
from .store.location import StoreAddress, store_address

DB_ENV = "STAFFSTORE_DB"
APP_DIR = "staffstore"
DB_FILENAME = "staffstore.db"


@dataclass(frozen=True)
class Settings:
    """The defaults of the command line; one instance, `DEFAULTS`, holds them. The model, the
    upstream and the prompt's budget default as the client (upstream.py) and the working set
    (working_set/build.py) do: every command imports this module, which so imports neither
    httpx nor the working set."""

    #: Claims stored per transaction by an import (None: the importer's default for the
    #: store's backend).
    import_batch_size: int | None = None
    #: How many bad lines an import error names before it only counts them.
    bad_lines_named: int = NAMED_BAD_LINES
    list_limit: int = 50
    search_limit: int = 20
    receipts_limit: int = 20
    timeout: float = 60.0


DEFAULTS = Settings()


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The directory staffstore keeps its data in, by the XDG base directory rules."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_DATA_HOME", "")
    # The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / APP_DIR


def default_db_path(environ: Mapping[str, str] | None = None) -> StoreAddress:
    """The store when none is given: `$STAFFSTORE_DB` (a path or a URL), else
    `data_dir()/staffstore.db`."""
    env = os.environ if environ is None else environ
    given = env.get(DB_ENV, "")
    if given:
        return store_address(given)
    return data_dir(env) / DB_FILENAME


def default_jobs_dir(store: StoreAddress, environ: Mapping[str, str] | None = None) -> Path:
    """Where jobs run when no folder is given: beside a SQLite store's file; for a
    PostgreSQL store, in the data folder (each replica's own)."""
    return (store.parent if isinstance(store, Path) else data_dir(environ)) / "jobs"
