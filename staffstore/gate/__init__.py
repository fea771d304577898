"""The gate: query_first decides whether a stored claim answers a turn, before any model call.

Owns the decision (query_first.py), the relative periods a question names (relative_time.py)
and the same decision over kept answers for a reworded context-free question (kept_reuse.py).
May import models, errors, text and store; never upstream, mouth, proxy, cli or replays: the
gate knows nothing of HTTP or of the model it saves a call to.
"""

from .kept_reuse import KeptCandidates, kept_candidates, reuse_kept_sync
from .query_first import (
    Candidates,
    decide,
    look_up,
    points_elsewhere,
    query_first,
    query_first_sync,
)
from .scoring import warm_up

__all__ = [
    "Candidates",
    "KeptCandidates",
    "decide",
    "kept_candidates",
    "look_up",
    "points_elsewhere",
    "query_first",
    "query_first_sync",
    "reuse_kept_sync",
    "warm_up",
]
