"""`staffstore config show`: the settings in force, each with where it came from.

Loaded through `cli.app.EXTENSIONS`. The shared settings (settings.py) come from a flag, the
environment, the config file or the default; the server's own, from the config file's [serve]
table or their defaults (a `serve` flag wins over both when the server starts). A key is never
printed: a client key's or the metrics key's setting shows as "set", the upstream key as the
variable it is read from and whether that variable is set, and a URL without its password.
docs/config.md is the reference of every key.
"""

from __future__ import annotations

import os
from typing import Any

import typer

from ..gate.scoring import DEFAULT_BUDGET
from ..proxy.config import DEFAULTS as SERVE_DEFAULTS
from ..proxy.config import FILE_SETTINGS, SECRET_SETTINGS, read_config_file
from ..settings import CONFIG_ENV, SERVE_TABLE, config_document, config_path, setting_sources
from ..store.location import shown
from ..upstream import shown_url
from .app import (
    GATE_BUDGET_ENV,
    JsonOption,
    db_address,
    print_json,
    print_table,
    settings_of,
    user_errors,
)

config_app = typer.Typer(
    help="Show the settings in force and where each came from (docs/config.md lists them).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

#: One setting as shown: its value (None: unset) and where it came from.
Shown = dict[str, Any]


def _shared(ctx: typer.Context) -> dict[str, Shown]:
    settings = settings_of(ctx)
    sources: dict[str, str] = dict(setting_sources())
    found: dict[str, Shown] = {
        name: {"value": getattr(settings, name), "from": sources[name]}
        for name in type(settings).model_fields
    }
    found["upstream"]["value"] = shown_url(settings.upstream)
    # shown(): a PostgreSQL URL's password is never printed.
    found["db"] = {"value": shown(db_address(ctx)), "from": ctx.find_root().meta["db_source"]}
    key_env = settings.upstream_key_env
    found["upstream_key"] = {
        "value": f"${key_env} is {'set' if os.environ.get(key_env) else 'not set'}",
        "from": "env",
    }
    given = os.environ.get(GATE_BUDGET_ENV)
    found["gate_budget"] = {
        "value": given if given else DEFAULT_BUDGET,
        "from": "env" if given else "default",
    }
    return found


def _serve(table: dict[str, Any]) -> dict[str, Shown]:
    """The [serve] settings: what the table sets (keys hidden), then the defaults it leaves."""
    found: dict[str, Shown] = {}
    for name, value in sorted(table.items()):
        if name in SECRET_SETTINGS:
            value = f"{len(value)} owner(s)" if name == "owners" else "set"
        if isinstance(value, dict):
            for key, inner in sorted(value.items()):
                found[f"{name}.{key}"] = {"value": inner, "from": "config file"}
        else:
            found[name] = {"value": value, "from": "config file"}
    # The file's names that are the server's own fields too; the rest (upstream, db, the
    # upstream key's variable) default to the shared settings above.
    for name in sorted(FILE_SETTINGS - SECRET_SETTINGS - set(found)):
        default = getattr(SERVE_DEFAULTS, name, dict)
        if default is None or isinstance(default, bool | int | float | str):
            found[name] = {"value": default, "from": "default"}
    return found


@config_app.command("show")
def config_show(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Print every setting in force: its value and where it came from (flag, env, config file
    or default), the shared settings first, then the server's ([serve] in the same file).

    The config file is `$STAFFSTORE_CONFIG`, else `~/.config/staffstore/config.toml`; a key it
    does not know is an error naming it.
    """
    path = config_path()
    with user_errors():
        document = config_document(path)
        shared = _shared(ctx)
        table = read_config_file(path) if isinstance(document.get(SERVE_TABLE), dict) else {}
    config = {
        "value": str(path),
        "exists": path.exists(),
        "from": "env" if os.environ.get(CONFIG_ENV) else "default",
    }
    serve = _serve(table)
    if as_json:
        print_json({"config_file": config, "settings": shared, SERVE_TABLE: serve})
        return
    file = f"{path}" if path.exists() else f"{path} (none)"
    rows = [["config_file", file, str(config["from"])]]
    rows += [[name, _text(item["value"]), item["from"]] for name, item in shared.items()]
    rows += [[f"serve.{name}", _text(item["value"]), item["from"]] for name, item in serve.items()]
    print_table(["SETTING", "VALUE", "FROM"], rows)


def _text(value: Any) -> str:
    """A value as the config file would spell it; unset as "-"."""
    if value is None:
        return "-"
    return str(value).lower() if isinstance(value, bool) else str(value)


def register(app: typer.Typer) -> None:
    """Add `config show` to the command line."""
    app.add_typer(config_app, name="config")
