"""The root command's subcommands, each module imported when one of its commands is first used.

Every `staffstore` run imports the CLI; importing every command module with it cost about
0.9 s a run on a 2-core machine, most of it in what a few commands need (the gate's tables and
numpy, the proxy, the replays, httpx). `LazyCommands` is the root group's command mapping: it
knows each command's name and the module that adds it (cli.app.EXTENSIONS), lists the names
without importing anything, and imports a module the first time one of its commands is looked
up. So `staffstore receipts` imports receipts.py alone; the root's help, which shows every
command, imports them all; shell completion of a command's name imports none.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING

import typer
import typer.main

from .helptext import tidy_help

if TYPE_CHECKING:  # typer carries its own copy of click; its commands are these
    from typer._click import Command


#: Commands already loaded in this process, by module: typer builds the root group again on
#: each call of the app (a test calls it hundreds of times), the modules once.
_LOADED: dict[str, dict[str, Command]] = {}


class ExtensionError(RuntimeError):
    """A command module adds other commands than EXTENSIONS says it does."""


def register_extensions(target: typer.Typer, names: Sequence[str]) -> None:
    """Import each named module and let it add its commands to `target`, at once (the root
    command imports EXTENSIONS' modules as they are used instead)."""
    for name in names:
        importlib.import_module(name).register(target)


def extension_commands(module: str, make_holder: Callable[[], typer.Typer]) -> dict[str, Command]:
    """Import `module`, let its `register` add its commands to a Typer made by `make_holder`
    (with the root's settings, which typer builds the commands with), and return them."""
    holder = make_holder()
    register_extensions(holder, [module])
    commands = dict(typer.main.get_group(holder).commands)
    for command in commands.values():
        tidy_help(command)
    return commands


class LazyCommands(MutableMapping[str, "Command"]):
    """A group's commands: those given, then those of `extensions` (module -> the names it
    adds, in the order help lists them), each module imported on the first lookup of one of
    its names. Iterating gives every name without importing; reading an item imports."""

    def __init__(
        self,
        given: Mapping[str, Command],
        extensions: Mapping[str, tuple[str, ...]],
        make_holder: Callable[[], typer.Typer],
    ) -> None:
        self._commands = dict(given)
        for command in self._commands.values():
            tidy_help(command)
        self._owner = {name: module for module, names in extensions.items() for name in names}
        self._extensions = extensions
        self._make_holder = make_holder

    def _load(self, module: str) -> None:
        if module not in _LOADED:
            commands = extension_commands(module, self._make_holder)
            if set(commands) != set(self._extensions[module]):
                raise ExtensionError(
                    f"{module} adds the commands {sorted(commands)}, not "
                    f"{sorted(self._extensions[module])} as cli.app.EXTENSIONS says"
                )
            _LOADED[module] = commands
        for name, command in _LOADED[module].items():
            self._commands.setdefault(name, command)

    def __getitem__(self, name: str) -> Command:
        if name not in self._commands and name in self._owner:
            self._load(self._owner[name])
        return self._commands[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]
        self._owner.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._commands, *self._owner]))

    def __len__(self) -> int:
        return len(self._commands.keys() | self._owner.keys())
