"""The working set: what is sent upstream for a turn that misses, within token budgets.

Owns build_working_set (build.py): the session's tail, the claims the store relates to the turn,
the agent's working state, a workflow step's memory section (taken as a MemorySource, so
the memory layer is not imported); the session's story (story.py, from key sentences:
extract.py), its fidelity rungs (rungs.py: raw, handle, searchable), its vault hits (vault.py)
and warm-up (warmup.py); the budgets of the whole prompt and of each part, with
defaults per role (budgets.py); and counting tokens (tokens.py). May import models, errors,
store and state (the working-state section); never the gate, mouth, proxy, cli or replays.
"""

from .budgets import PARTS, ROLE_BUDGETS, ROLES, Budgets, budgets_for, parse_part_budgets
from .build import (
    CUT_MARKER,
    DEFAULT_BUDGET,
    DEFAULT_SYSTEM,
    MemorySource,
    build_working_set,
)
from .rungs import DEFAULT_RUNGS, RungRules, rung_of
from .story import MAX_STORY_CHARS, extract_story, refresh_story, write_story
from .tokens import TokenCounter, approximate_tokens, token_counter
from .vault import VaultHit, vault_hits
from .warmup import WarmUp, warm_up_session

__all__ = [
    "CUT_MARKER",
    "DEFAULT_BUDGET",
    "DEFAULT_RUNGS",
    "DEFAULT_SYSTEM",
    "MAX_STORY_CHARS",
    "PARTS",
    "ROLES",
    "ROLE_BUDGETS",
    "Budgets",
    "MemorySource",
    "RungRules",
    "TokenCounter",
    "VaultHit",
    "WarmUp",
    "approximate_tokens",
    "budgets_for",
    "build_working_set",
    "extract_story",
    "parse_part_budgets",
    "refresh_story",
    "rung_of",
    "token_counter",
    "vault_hits",
    "warm_up_session",
    "write_story",
]
