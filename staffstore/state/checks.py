"""What a name, key, value or reason must look like before it reaches the store.

A key or value is one line of the prompt's working-state section, so none may hold a newline or
another control character: a value could otherwise forge a line of its own.
"""

from __future__ import annotations

import re
import unicodedata

from ..errors import InputError

_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
MAX_KEY_CHARS = 64
MAX_VALUE_CHARS = 256
MAX_REASON_CHARS = 300
MAX_ACTOR_CHARS = 64


def _controls(text: str) -> bool:
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in text)


def check_owner(owner: str) -> str:
    if not owner.strip():
        raise InputError("an owner must not be blank")
    return owner


def check_agent(agent: str) -> str:
    """An agent's name: 1-64 letters, digits, `_`, `.`, `:` or `-`, from a letter or digit."""
    if not _AGENT.match(agent):
        raise InputError(
            f"agent name {agent!r} must be 1-64 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit"
        )
    return agent


def check_key(key: str) -> str:
    """A working-state key: 1-64 characters, no whitespace, '=' or control characters."""
    if not key or len(key) > MAX_KEY_CHARS:
        raise InputError(f"a working-state key must have 1-{MAX_KEY_CHARS} characters")
    if any(ch.isspace() for ch in key) or "=" in key or _controls(key):
        raise InputError(
            f"working-state key {key!r} must not hold spaces, '=' or control characters"
        )
    return key


def check_value(value: str) -> str:
    """A working-state value: 1-256 characters on one line."""
    if not isinstance(value, str):
        raise InputError("a working-state value must be a string")
    if not value.strip() or len(value) > MAX_VALUE_CHARS:
        raise InputError(f"a working-state value must have 1-{MAX_VALUE_CHARS} characters")
    if _controls(value):
        raise InputError("a working-state value must be one line, without control characters")
    return value.strip()


def check_reason(reason: str | None) -> str:
    """The reason a change is made: required, whitespace collapsed, at most 300 characters."""
    text = " ".join((reason or "").split())
    if not text:
        raise InputError("a reason is required: say why the value changes")
    if len(text) > MAX_REASON_CHARS or _controls(text):
        raise InputError(f"a reason must be at most {MAX_REASON_CHARS} characters of plain text")
    return text


def check_actor(actor: str) -> str:
    text = " ".join(actor.split())
    if not text or len(text) > MAX_ACTOR_CHARS or _controls(text):
        raise InputError(f"who made a change must be named in 1-{MAX_ACTOR_CHARS} characters")
    return text
