"""The working set: what is sent upstream for a turn that misses, within a token budget.

Owns build_working_set (build.py): the session's tail, the claims the store relates to the turn,
the agent's working state, a workflow step's memory section (taken as a MemorySource, so
the memory layer is not imported). May import models, errors, store and state (the working-state
section); never the gate, mouth, proxy, cli or replays.
"""

from .build import (
    CUT_MARKER,
    DEFAULT_BUDGET,
    DEFAULT_SYSTEM,
    MemorySource,
    approximate_tokens,
    build_working_set,
)

__all__ = [
    "CUT_MARKER",
    "DEFAULT_BUDGET",
    "DEFAULT_SYSTEM",
    "MemorySource",
    "approximate_tokens",
    "build_working_set",
]
