"""Share the immutable pieces the gate's caches hold.

A server keeps tens of thousands of analysed questions in its caches, and every frozenset and
`Word` in them is an object the garbage collector walks on each full collection: after
10,000 lookups at 100,000 claims the caches held 850,000 objects, and full collections paused
for up to half a second. Most of those sets are empty and
most words recur, so one shared object can stand for each.
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any

#: How many questions' analyses each of the gate's caches keeps (normalize, words, slots, ...).
#: Their hit rates stop rising by 16,384 entries (benchmarks/bench_store.py's lookups, 10,000
#: turns: normalize 88.6% at 10,000 claims, 68.9% at 100,000; slots 32.8% and 14.2%, the same
#: as at 65,536), and every entry stays in memory, frozen (proxy/heap.py). At 65,536 each, a
#: process held 845,000 frozen objects and 683 MiB after 30,000 turns at 100,000 claims, still
#: growing; at 16,384, 367,000 and 455 MiB, level from 16,000 turns on.
QUESTIONS_CACHED = 16_384

#: The one empty frozenset the analyses hold (CPython makes a new one for each frozenset()).
EMPTY: frozenset[Any] = frozenset()


def share_empty_sets(instance: Any) -> None:
    """Point each empty frozenset field of a frozen dataclass at EMPTY (from __post_init__)."""
    for name in _field_names(instance.__class__):
        value = getattr(instance, name)
        if type(value) is frozenset and not value and value is not EMPTY:
            object.__setattr__(instance, name, EMPTY)


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    # dataclasses.fields() builds its answer anew on each call: half the cost of constructing
    # the analysis that calls this, and the gate constructs some on every comparison.
    return tuple(field.name for field in fields(cls))
