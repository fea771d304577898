"""What --db (and $STAFFSTORE_DB, and the config file's `db`) may name: a SQLite file, as a
path or sqlite:///PATH, or a PostgreSQL database, as postgresql://. Anything else is one clear
error, never a local file named after the URL, and a URL's password is never shown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_helpers import one_line_error
from typer.testing import CliRunner

from staffstore.cli.app import app
from staffstore.errors import StoreError
from staffstore.store.location import mask_password, parse_location, store_address

SECRET = "pa55-w0rd-never-shown"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Relative paths and stray files land here, where the test can look for them.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STAFFSTORE_DB", raising=False)


@pytest.mark.parametrize(
    ("given", "dialect", "path"),
    [
        ("store.db", "sqlite", "store.db"),
        ("~/x/store.db", "sqlite", str(Path("~/x/store.db").expanduser())),
        ("sqlite:///rel/store.db", "sqlite", "rel/store.db"),
        ("sqlite:////abs/store.db", "sqlite", "/abs/store.db"),
        ("postgresql://u@h:5432/db", "postgresql", None),
        ("postgres://u@h/db", "postgresql", None),
        ("POSTGRESQL://u@h/db", "postgresql", None),
    ],
)
def test_a_location_names_its_backend(given: str, dialect: str, path: str | None) -> None:
    location = parse_location(given)
    assert location.dialect == dialect
    assert (str(location.path) if location.path is not None else None) == path
    if dialect == "postgresql":
        assert store_address(given) == given  # a str: a Path would fold the "//"


@pytest.mark.parametrize(
    "given",
    ["mysql://u@h/db", "http://example.com/db", "file:///tmp/x.db", "sqlite://", "postgresql://h"],
)
def test_a_location_staffstore_cannot_use_is_one_error(given: str) -> None:
    with pytest.raises(StoreError, match="cannot use"):
        parse_location(given)


def test_a_password_is_masked_wherever_a_location_is_shown() -> None:
    url = f"postgresql://staffstore:{SECRET}@db.internal:5432/prod?password={SECRET}&x=1"
    shown = mask_password(url)
    assert SECRET not in shown and "staffstore:***@db.internal:5432/prod" in shown
    assert SECRET not in parse_location(url).label
    with pytest.raises(StoreError) as caught:
        parse_location(f"mysql://root:{SECRET}@h/db")
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("how", ["flag", "env"])
@pytest.mark.parametrize(
    "url",
    [f"mysql://root:{SECRET}@127.0.0.1/db", f"postgresql://u:{SECRET}@127.0.0.1:1/nothing_here"],
)
def test_the_cli_refuses_a_store_it_cannot_use_in_one_line_and_writes_no_file(
    how: str, url: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    if how == "flag":
        result = runner.invoke(app, ["--db", url, "claims", "list", "--owner", "a"])
    else:
        result = runner.invoke(app, ["claims", "list", "--owner", "a"], env={"STAFFSTORE_DB": url})
    line = one_line_error(result)
    assert SECRET not in result.stdout + result.stderr
    assert "cannot" in line
    # Neither a file named after the URL, nor any other, appeared.
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_config_show_never_prints_a_password() -> None:
    url = f"postgresql://staffstore:{SECRET}@127.0.0.1:1/db"
    result = CliRunner().invoke(app, ["--db", url, "config", "show"], env=dict(os.environ))
    assert result.exit_code == 0, result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert "staffstore:***@127.0.0.1:1/db" in result.stdout
