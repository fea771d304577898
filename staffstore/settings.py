"""The user's settings, shared by the command line and `staffstore serve`: flags over
environment variables over one TOML file over the defaults.

    # ~/.config/staffstore/config.toml  (or the file $STAFFSTORE_CONFIG names)
    owner = "acme"                            # --owner of every command that takes one
    model = "openrouter/auto"                 # ask --model; serve's default_model
    upstream = "https://openrouter.ai/api/v1" # ask --upstream, serve --upstream
    upstream_key_env = "OPENROUTER_API_KEY"   # the variable the upstream key is read from
    db = "~/staffstore.db"                    # --db

    [serve]                                   # the server's own settings (see proxy/config.py)
    port = 8787

Each top-level setting may come from `STAFFSTORE_<NAME>` instead (`STAFFSTORE_OWNER`, ...).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError
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
    db: Path | None = None

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


def load_settings() -> UserSettings:
    """The settings from the environment and the config file; InputError when either is bad."""
    path = config_path()
    try:
        settings = UserSettings()
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        raise InputError(f"bad setting (in ${ENV_PREFIX}* or {path}): {problems}") from None
    except (OSError, ValueError) as error:  # tomllib.TOMLDecodeError is a ValueError
        raise InputError(f"cannot read config file {path}: {error}") from None
    if settings.db is not None:
        return settings.model_copy(update={"db": settings.db.expanduser()})
    return settings
