"""The limits of working state and agent state, gathered in one literal, and the scope key.

The scope key is the HMAC key agent-state scope ids and subjects are hashed with; it comes from
the environment (`$STAFFSTORE_STATE_KEY` unless a config names another variable) and is never
written to the store, a ledger or a message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import MissingScopeKeyError

DEFAULT_AGENT = "default"
SCOPE_KEY_ENV = "STAFFSTORE_STATE_KEY"
#: A shorter key would make the hashes of short ids (phone numbers) cheap to guess.
MIN_SCOPE_KEY_BYTES = 16


@dataclass(frozen=True)
class StateConfig:
    """Limits of working state; one instance, `DEFAULTS`, holds the defaults."""

    #: Live keys an agent may hold: a table that grows past this is a second pile of notes.
    max_keys: int = 32
    #: A structured handoff (note, next steps, evidence, blocker) over this many UTF-8 bytes
    #: is refused whole: cut, it could lose the very evidence that made it credible.
    handoff_max_bytes: int = 16_384
    #: A plain handoff is whitespace-collapsed and cut at this many characters, as before.
    plain_handoff_chars: int = 1_200
    #: The most UTF-8 bytes the working-state section adds to a prompt.
    section_max_bytes: int = 3_072
    #: How many recent events `get` returns.
    history: int = 20


DEFAULTS = StateConfig()


def scope_key_from_env(
    environ: Mapping[str, str] | None = None, variable: str = SCOPE_KEY_ENV
) -> bytes:
    """The HMAC key for agent-state scopes from the environment, or MissingScopeKeyError."""
    env = os.environ if environ is None else environ
    return check_scope_key(env.get(variable, "").encode("utf-8"), variable)


def check_scope_key(key: bytes | None, where: str = SCOPE_KEY_ENV) -> bytes:
    """The scope key, or MissingScopeKeyError naming where it should come from (never its text)."""
    if not key:
        raise MissingScopeKeyError(
            f"agent state needs a scope key: set {where} to a secret of at least "
            f"{MIN_SCOPE_KEY_BYTES} bytes (scope ids are stored only as keyed hashes)"
        )
    if len(key) < MIN_SCOPE_KEY_BYTES:
        raise MissingScopeKeyError(
            f"the scope key in {where} is shorter than {MIN_SCOPE_KEY_BYTES} bytes"
        )
    return key
