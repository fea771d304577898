"""The user's settings, shared by the command line and `staffstore serve`: flags over
environment variables over one TOML file over the defaults.

    # ~/.config/staffstore/config.toml  (or the file $STAFFSTORE_CONFIG names)
    owner = "acme"                            # --owner of every command that takes one
    model = "openrouter/auto"                 # ask --model; serve's default_model
    upstream = "https://openrouter.ai/api/v1" # ask --upstream, serve --upstream
    upstream_key_env = "OPENROUTER_API_KEY"   # the variable the upstream key is read from
    db = "~/staffstore.db"                    # --db
    kept_retention_days = 30                  # kept answers older are deleted (serve, kept prune)

    [serve]                                   # the server's own settings (see proxy/config.py)
    port = 8787

Each top-level setting may come from `STAFFSTORE_<NAME>` instead (`STAFFSTORE_OWNER`, ...).
A key the file does not know is an error naming it, never ignored: a typo would otherwise leave
the default in force unseen. docs/config.md is the reference of every key; `staffstore config
show` prints the values in force and where each came from.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from .errors import InputError
from .upstream import API_KEY_ENV, DEFAULT_BASE_URL, DEFAULT_MODEL

CONFIG_ENV = "STAFFSTORE_CONFIG"
ENV_PREFIX = "STAFFSTORE_"
#: The config file's table of the server's own settings (proxy/config.py reads it).
SERVE_TABLE = "serve"

#: Where a setting in force came from, as `staffstore config show` names it.
Source = Literal["default", "config file", "env", "flag"]


def check_http_url(value: str) -> str:
    """`value` when it is an http(s) URL with a host and a possible port, else a ValueError
    that does not repeat it (a URL may carry a password)."""
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL:
        raise ValueError("not a URL") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("give an http:// or https:// URL with a host")
    if url.port is not None and not 0 < url.port < 65536:
        raise ValueError(f"port {url.port} is not between 1 and 65535")
    return value


def calibrated_gate_budget(value: float) -> float:
    """`value` when the gate was calibrated at that error budget, else an InputError listing
    the budgets it was (the gate would quietly take the nearest stricter one)."""
    from .gate.scoring import default_model  # the gate's model loads only when a budget is given

    budgets = default_model().budgets
    for budget in budgets:
        if abs(value - budget) <= 1e-9:
            return budget
    listed = ", ".join(f"{budget:g}" for budget in budgets)
    raise InputError(f"gate_budget {value:g} is not a calibrated budget: give one of {listed}")


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The config file: `$STAFFSTORE_CONFIG`, else `$XDG_CONFIG_HOME/staffstore/config.toml`
    (`~/.config/staffstore/config.toml`). It need not exist."""
    env = os.environ if environ is None else environ
    given = env.get(CONFIG_ENV, "")
    if given:
        return Path(given).expanduser()
    xdg = env.get("XDG_CONFIG_HOME", "")
    # The XDG spec: a relative XDG_CONFIG_HOME is invalid and must be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "staffstore" / "config.toml"


class UserSettings(BaseSettings):
    """Settings every command and the server share; None where nothing set one."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    owner: str | None = None
    model: str = DEFAULT_MODEL
    upstream: str = DEFAULT_BASE_URL
    upstream_key_env: str = API_KEY_ENV
    #: A SQLite path or a postgresql:// URL, as given (the CLI parses it).
    db: str | None = None
    #: Days a kept answer is kept before `staffstore serve` (at startup) or `staffstore kept
    #: prune` deletes it; None keeps them until they expire or are forgotten.
    kept_retention_days: float | None = Field(default=None, gt=0)

    @field_validator("upstream")
    @classmethod
    def _http_upstream(cls, value: str) -> str:
        return check_http_url(value)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # No .env file and no secrets directory: the environment and one TOML file.
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_path())
        return (init_settings, env_settings, toml)


def config_document(path: Path) -> dict[str, Any]:
    """The config file's TOML as a dict (empty when there is no file), its top-level keys
    checked; InputError when it cannot be read or names a setting that does not exist."""
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:  # tomllib.TOMLDecodeError is a ValueError
        raise InputError(f"cannot read config file {path}: {error}") from None
    unknown = sorted(set(document) - set(UserSettings.model_fields) - {SERVE_TABLE})
    if unknown:
        known = ", ".join(sorted(UserSettings.model_fields))
        raise InputError(
            f"{path}: unknown setting {', '.join(repr(name) for name in unknown)} (the settings "
            f"are {known}; the server's go under [{SERVE_TABLE}]; see docs/config.md)"
        )
    return document


def setting_sources(environ: Mapping[str, str] | None = None) -> dict[str, Source]:
    """Where each shared setting in force comes from: the environment, the config file or the
    default (a flag's own, `--db`, is the command line's to tell)."""
    env = os.environ if environ is None else environ
    # pydantic-settings matches variable names without regard to case.
    given = {name.upper() for name in env}
    document = config_document(config_path(env))

    def source(name: str) -> Source:
        if f"{ENV_PREFIX}{name}".upper() in given:
            return "env"
        return "config file" if name in document else "default"

    return {name: source(name) for name in UserSettings.model_fields}


def load_settings() -> UserSettings:
    """The settings from the environment and the config file; InputError when either is bad."""
    path = config_path()
    config_document(path)
    try:
        settings = UserSettings()
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: "
            + item["msg"].removeprefix("Value error, ")
            for item in error.errors()
        )
        raise InputError(f"bad setting (in ${ENV_PREFIX}* or {path}): {problems}") from None
    except (OSError, ValueError) as error:  # tomllib.TOMLDecodeError is a ValueError
        raise InputError(f"cannot read config file {path}: {error}") from None
    return settings
