"""Where a store lives: a SQLite file (a path, or sqlite:///PATH) or a PostgreSQL database
(postgresql://...), from `--db`, $STAFFSTORE_DB or the config file.

A URL staffstore cannot use is one clear error, never a file named after it. What messages
show of a URL (`label`) never carries its password.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import StoreError
from .database import Dialect

_POSTGRES_SCHEMES = ("postgresql", "postgres")
_USAGE = (
    "give a SQLite file (a path, or sqlite:///PATH) or a PostgreSQL URL "
    "(postgresql://USER@HOST:PORT/DATABASE)"
)


@dataclass(frozen=True)
class StoreLocation:
    """A parsed --db value."""

    dialect: Dialect
    #: The SQLite file (None for PostgreSQL).
    path: Path | None = None
    #: The PostgreSQL URL as given, password included: handed to the driver, never shown.
    url: str | None = field(default=None, repr=False)
    #: What messages name: the path, or the URL with any password masked.
    label: str = ""


def parse_location(value: str | Path) -> StoreLocation:
    """The store `value` names; StoreError for a URL that is neither SQLite nor PostgreSQL."""
    if isinstance(value, Path):
        return _sqlite(value)
    text = value.strip()
    if "://" not in text:
        return _sqlite(Path(text))
    scheme = text.split("://", 1)[0].lower()
    if scheme == "sqlite":
        # As SQLAlchemy reads it: sqlite:///relative/file.db, sqlite:////absolute/file.db.
        rest = text.split("://", 1)[1]
        if not rest.startswith("/") or rest == "/":
            raise StoreError(f"cannot use {text!r} as a store: write sqlite:///PATH")
        return _sqlite(Path(rest[1:]))
    if scheme in _POSTGRES_SCHEMES:
        parts = urlsplit(text)
        if not parts.path.strip("/"):
            raise StoreError(
                f"cannot use {mask_password(text)!r} as a store: name the database "
                "(postgresql://USER@HOST:PORT/DATABASE)"
            )
        return StoreLocation("postgresql", url=text, label=mask_password(text))
    raise StoreError(f"cannot use {mask_password(text)!r} as a store ({scheme}:// is not one): "
                     f"{_USAGE}")  # fmt: skip


def _sqlite(path: Path) -> StoreLocation:
    path = path.expanduser()
    return StoreLocation("sqlite", path=path, label=str(path))


def mask_password(url: str) -> str:
    """The URL with any password (in its user part or a `password=` parameter) masked."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            user, host = netloc.rsplit("@", 1)
            if ":" in user:
                user = user.split(":", 1)[0] + ":***"
            netloc = f"{user}@{host}"
        query = urlencode(
            [
                (name, "***" if name.lower() == "password" else value)
                for name, value in parse_qsl(parts.query, keep_blank_values=True)
            ]
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return url.split("://", 1)[0] + "://***"


#: A store as the CLI and the server's config carry it: a SQLite file's Path, or a
#: postgresql:// URL (a str: Path would fold its "//" and name a local file after it).
StoreAddress = Path | str


def store_address(value: str | Path) -> StoreAddress:
    """The address `value` names (StoreError for a URL staffstore cannot use)."""
    location = parse_location(value)
    if location.path is not None:
        return location.path
    assert location.url is not None
    return location.url


def shown(address: StoreAddress) -> str:
    """The address as messages show it: never a password."""
    return parse_location(address).label
