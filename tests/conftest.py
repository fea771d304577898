"""Shared fixtures: a real store in a SQLite file under tmp_path, and a way to put claims in it;
a throwaway PostgreSQL server, a fresh database on it, and a store location per backend."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from staffstore.models import Claim, NewClaim
from staffstore.store import StaffStore
from staffstore.testing.postgres import ThrowawayPostgres, find_postgres_bin

#: put(question, answer, **fields) stores a claim (owner "alice" unless given) and returns it.
PutClaim = Callable[..., Awaitable[Claim]]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "s.db"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A module marked `both_backends` runs each test that uses `store` (or `db`) on SQLite and
    # on PostgreSQL: the same test, not a copy of it. Elsewhere `store` is SQLite's.
    if "backend" not in metafunc.fixturenames:
        return
    both = metafunc.definition.get_closest_marker("both_backends") is not None
    both = both and metafunc.definition.get_closest_marker("sqlite_only") is None
    postgres = pytest.param("postgresql", marks=pytest.mark.postgres)
    metafunc.parametrize("backend", ["sqlite", postgres] if both else ["sqlite"], indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(backend: str, request: pytest.FixtureRequest) -> str | Path:
    """Where this test's store lives: db_path on SQLite, else a fresh migrated database."""
    if backend == "sqlite":
        path: Path = request.getfixturevalue("db_path")
        return path
    url: str = request.getfixturevalue("migrated_postgres_url")
    return url


@pytest.fixture
async def store(db: str | Path) -> AsyncIterator[StaffStore]:
    async with StaffStore.open(db) as opened:
        yield opened


@pytest.fixture
def put(store: StaffStore) -> PutClaim:
    async def put(question: str, answer: str, **fields: Any) -> Claim:
        fields.setdefault("owner", "alice")
        return await store.ensure_claim(NewClaim(question=question, answer=answer, **fields))

    return put


# PostgreSQL: one throwaway server per pytest process (each xdist worker has its own), a fresh
# database per test. Without server binaries these tests skip, except where
# STAFFSTORE_REQUIRE_POSTGRES=1 (CI) says they must run: there a missing server fails them.

NO_POSTGRES = "no PostgreSQL server binaries found (apt-get install postgresql)"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "postgres: needs a PostgreSQL server (a throwaway one is started per process)"
    )
    config.addinivalue_line(
        "markers", "both_backends: run the module's store tests on SQLite and on PostgreSQL"
    )
    config.addinivalue_line("markers", "sqlite_only: a test of what only SQLite has (pragmas)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A test that asks for the server (or the binaries) directly is marked too, so
    # `-m "not postgres"` leaves out every test that would start one.
    for item in items:
        if "postgres_bin" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def postgres_bin() -> Path:
    """The directory of the PostgreSQL server binaries, for a test that starts its own server.

    Skips when there are none, or fails when STAFFSTORE_REQUIRE_POSTGRES=1.
    """
    bindir = find_postgres_bin()
    if bindir is None:
        if os.environ.get("STAFFSTORE_REQUIRE_POSTGRES") == "1":
            pytest.fail(
                f"PostgreSQL tests cannot run (STAFFSTORE_REQUIRE_POSTGRES=1): {NO_POSTGRES}",
                pytrace=False,
            )
        pytest.skip(f"PostgreSQL tests skipped: {NO_POSTGRES}")
    return bindir


@pytest.fixture(scope="session")
def postgres_server(postgres_bin: Path) -> Iterator[ThrowawayPostgres]:
    """This process's throwaway PostgreSQL server (durable=False: for tests only)."""
    with ThrowawayPostgres(bindir=postgres_bin) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: ThrowawayPostgres) -> Iterator[str]:
    """A fresh, empty database for this test; dropped after it, so disk use stays flat."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    url = postgres_server.create_database(name)
    yield url
    postgres_server.drop_database(name)


@pytest.fixture(scope="session")
def postgres_template(postgres_server: ThrowawayPostgres) -> str:
    """A database migrated to staffstore's schema, copied for each test that needs one (a
    copy costs a fraction of migrating)."""
    name = "staffstore_template"
    url = postgres_server.create_database(name)

    async def migrate() -> None:
        async with StaffStore.open(url, migrate=True):
            pass

    asyncio.run(migrate())
    return name


@pytest.fixture
def migrated_postgres_url(
    postgres_server: ThrowawayPostgres, postgres_template: str
) -> Iterator[str]:
    """A fresh database with staffstore's schema for this test; dropped after it."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    url = postgres_server.create_database(name, template=postgres_template)
    yield url
    postgres_server.drop_database(name)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives, once per backend: a SQLite file path, or a PostgreSQL URL.

    The PostgreSQL server is asked for only by the postgresql case, so the sqlite case runs
    (and a machine without PostgreSQL runs it) without starting one.
    """
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    url: str = request.getfixturevalue("postgres_url")
    return url
