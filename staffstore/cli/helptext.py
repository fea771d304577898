"""Help pages that read cleanly: no `<bool>` after a flag, no `<int range>` for a number.

typer's rich help shows a type after every option, flags included (`--json <bool>`); a flag
takes no value, so it shows none here. `HELP_NAMES` makes `-h` the same as `--help` on every
command. The root group tidies the whole command tree each time it runs, because typer builds
the click commands anew on every call.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

#: The help option's names, on the root and (inherited through click's context) every command.
HELP_NAMES = ["-h", "--help"]

#: typer's type labels, as a number option shows them (its range is stated apart).
_PLAIN = {"<int range>": "<int>", "<float range>": "<float>"}


def tidy_help(command: Any) -> None:
    """Give every option of `command` and its subcommands a label a person reads: none on a
    flag (the help option's too), a plain number type on a ranged number."""
    ctx = typer.Context(command, help_option_names=HELP_NAMES)
    for param in [*command.params, command.get_help_option(ctx)]:
        if param is None or param.param_type_name != "option" or param.metavar is not None:
            continue
        if param.is_flag:
            param.metavar = ""
        else:
            param.metavar = _PLAIN.get(param.display_type(ctx))
    commands = getattr(command, "commands", {})
    # A lazy mapping (lazy.py) gives the commands it has loaded; it tidies the rest as it
    # loads them.
    loaded = commands.loaded() if hasattr(commands, "loaded") else commands
    for sub in loaded.values():
        tidy_help(sub)


class TidyGroup(TyperGroup):
    """The root command: tidies the help of the whole tree before it runs."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        tidy_help(self)
        return super().main(*args, **kwargs)
