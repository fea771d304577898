"""Help pages that read cleanly: no `<bool>` after a flag, no `<int range>` for a number.

typer's rich help shows a type after every option, flags included (`--json <bool>`); a flag
takes no value, so it shows none here. `HELP_NAMES` makes `-h` the same as `--help` on every
command. The root group (cli/app.py) tidies its own options each time it runs, because typer
builds it anew on every call; lazy.py tidies each command module's commands as it loads them.
"""

from __future__ import annotations

from typing import Any

import typer

#: The help option's names, on the root and (inherited through click's context) every command.
HELP_NAMES = ["-h", "--help"]

#: typer's type labels, as a number option shows them (its range is stated apart).
_PLAIN = {"<int range>": "<int>", "<float range>": "<float>"}


def tidy_options(command: Any) -> None:
    """Give every option of `command` a label a person reads: none on a flag (the help
    option's too), a plain number type on a ranged number."""
    ctx = typer.Context(command, help_option_names=HELP_NAMES)
    for param in [*command.params, command.get_help_option(ctx)]:
        if param is None or param.param_type_name != "option" or param.metavar is not None:
            continue
        if param.is_flag:
            param.metavar = ""
        else:
            param.metavar = _PLAIN.get(param.display_type(ctx))


def tidy_help(command: Any) -> None:
    """tidy_options for `command` and all its subcommands."""
    tidy_options(command)
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub)
