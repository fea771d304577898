"""One set of settings for the command line and the server (issue 13): flags over
`STAFFSTORE_*` over one TOML file over the defaults; one upstream flag name."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import ok, one_line_error
from typer.testing import CliRunner, Result

from staffstore.cli.app import app
from staffstore.testing import FakeOpenRouter

KEY = "sk-or-v1-settings-test-5151"
Cli = Callable[..., Result]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("OPENROUTER_API_KEY", "STAFFSTORE_DB", "STAFFSTORE_OWNER", "STAFFSTORE_MODEL",
                 "STAFFSTORE_UPSTREAM", "STAFFSTORE_UPSTREAM_KEY_ENV"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config.toml"
    monkeypatch.setenv("STAFFSTORE_CONFIG", str(config))
    return config


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenRouter, str]]:
    fake = FakeOpenRouter(api_key=KEY)
    with fake.serve_in_thread() as base_url:
        yield fake, base_url


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    runner = CliRunner()
    db = tmp_path / "s.db"
    return lambda *args, **options: runner.invoke(app, ["--db", str(db), *args], **options)


ADD = ["claims", "add", "--question", "which port does the api use", "--answer", "8080"]


def test_the_owner_comes_from_the_config_file(cli: Cli, clean_env: Path) -> None:
    clean_env.write_text('owner = "acme"\n')
    ok(cli(*ADD))
    out = json.loads(ok(cli("query", "--json", "which port does the api use")).stdout)
    assert out["answer"] == "8080"
    listed = json.loads(ok(cli("claims", "list", "--json", "--owner", "acme")).stdout)
    assert len(listed) == 1


def test_the_environment_wins_over_the_file_and_a_flag_over_both(cli: Cli, clean_env: Path) -> None:
    clean_env.write_text('owner = "from-file"\n')
    ok(cli(*ADD, env={"STAFFSTORE_OWNER": "from-env"}))
    ok(cli(*ADD, "--owner", "from-flag", env={"STAFFSTORE_OWNER": "from-env"}))
    for owner in ("from-env", "from-flag"):
        assert json.loads(ok(cli("claims", "list", "--owner", owner, "--json")).stdout)
    assert json.loads(ok(cli("claims", "list", "--owner", "from-file", "--json")).stdout) == []


def test_ask_takes_upstream_model_and_key_variable_from_settings(
    cli: Cli, clean_env: Path, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, base_url = upstream
    clean_env.write_text(
        f'owner = "acme"\nmodel = "fake/configured"\nupstream = "{base_url}"\n'
        'upstream_key_env = "MY_ROUTER_KEY"\n'
    )
    result = ok(cli("ask", "who wrote the ledger", env={"MY_ROUTER_KEY": KEY}))
    assert result.stdout == "echo: who wrote the ledger\n"
    (sent,) = fake.chat_requests
    assert sent.json["model"] == "fake/configured"


def test_ask_names_the_configured_key_variable_when_it_is_empty(
    cli: Cli, clean_env: Path, upstream: tuple[FakeOpenRouter, str]
) -> None:
    _, base_url = upstream
    clean_env.write_text(f'upstream = "{base_url}"\nupstream_key_env = "MY_ROUTER_KEY"\n')
    line = one_line_error(
        cli("ask", "--owner", "acme", "who wrote it", env={"OPENROUTER_API_KEY": KEY})
    )
    assert "MY_ROUTER_KEY" in line


def test_ask_upstream_is_the_flag_and_base_url_still_works(
    cli: Cli, upstream: tuple[FakeOpenRouter, str]
) -> None:
    fake, base_url = upstream
    for flag in ("--upstream", "--base-url"):
        ok(cli("ask", "--owner", "acme", flag, base_url, f"a question via {flag}",
               env={"OPENROUTER_API_KEY": KEY}))  # fmt: skip
    assert len(fake.chat_requests) == 2
    help_text = ok(cli("ask", "--help")).stdout
    assert "--upstream" in help_text and "--base-url" not in help_text


def test_a_bad_config_file_is_one_line_error(cli: Cli, clean_env: Path) -> None:
    clean_env.write_text("owner = [unclosed\n")
    assert str(clean_env) in one_line_error(cli("ledger"))


def test_the_database_comes_from_the_config_file(clean_env: Path, tmp_path: Path) -> None:
    db = tmp_path / "from-config.db"
    clean_env.write_text(f'db = "{db}"\nowner = "acme"\n')
    ok(CliRunner().invoke(app, ADD))
    assert db.exists()
