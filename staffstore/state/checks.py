"""What a name, key, value or reason must look like before it reaches the store.

A key or value is one line of the prompt's working-state section, so none may hold a newline or
another control character: a value could otherwise forge a line of its own. Every name (an
owner, an agent, a schema's field) passes `check_name`, whichever door it came in by: the
library, the proxy's URLs and bodies, or the command line.
"""

from __future__ import annotations

import re
import unicodedata

from ..errors import InputError

_AGENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
MAX_KEY_CHARS = 64
MAX_VALUE_CHARS = 256
MAX_REASON_CHARS = 300
MAX_ACTOR_CHARS = 64
MAX_OWNER_CHARS = 200
MAX_FIELD_NAME_CHARS = 128
#: The most recent events a read may ask for.
MAX_HISTORY = 1_000
#: The most characters of a refused name an error message repeats.
_SHOWN = 40


def is_control(ch: str) -> bool:
    """Whether `ch` is a control, format or line/paragraph separator character: one that can
    break a line, hide text or reorder it (U+0085, U+2028, U+202E and their kind)."""
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


def _controls(text: str) -> bool:
    return any(is_control(ch) for ch in text)


def shown(text: str) -> str:
    """`text` as an error message may repeat it: quoted, escaped, and cut at 40 characters."""
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def check_name(name: object, what: str, max_chars: int) -> str:
    """A name: a string of 1-`max_chars` characters, none a control character (a trailing
    newline included), without blanks at either end; InputError says which rule it breaks."""
    if not isinstance(name, str):
        raise InputError(f"{what} must be a string")
    if not name or len(name) > max_chars:
        raise InputError(f"{what} must have 1-{max_chars} characters")
    if _controls(name) or name.strip() != name:
        raise InputError(
            f"{what} {shown(name)} must not hold control characters (a newline included) "
            "or begin or end with a space"
        )
    return name


def check_owner(owner: str) -> str:
    if not isinstance(owner, str) or not owner.strip():
        raise InputError("an owner must not be blank")
    return check_name(owner, "an owner", MAX_OWNER_CHARS)


def check_agent(agent: str) -> str:
    """An agent's name: 1-64 letters, digits, `_`, `.`, `:` or `-`, from a letter or digit."""
    check_name(agent, "an agent name", 64)
    # fullmatch, not match with `$`: `$` also matches before a trailing newline.
    if not _AGENT.fullmatch(agent):
        raise InputError(
            f"agent name {shown(agent)} must be 1-64 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit"
        )
    return agent


def check_field_name(name: str) -> str:
    """A field a schema declares: a name of 1-128 characters (see check_name)."""
    return check_name(name, "a field name", MAX_FIELD_NAME_CHARS)


def check_history(count: int) -> int:
    """How many recent events to return: 0 to MAX_HISTORY."""
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_HISTORY:
        raise InputError(f"history must be a whole number from 0 to {MAX_HISTORY}")
    return count


def check_key(key: str) -> str:
    """A working-state key: 1-64 characters, no whitespace, '=' or control characters."""
    check_name(key, "a working-state key", MAX_KEY_CHARS)
    if any(ch.isspace() for ch in key) or "=" in key:
        raise InputError(f"working-state key {shown(key)} must not hold spaces or '='")
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
