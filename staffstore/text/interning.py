"""Share the immutable pieces the gate's caches hold.

A server keeps tens of thousands of analysed questions in its caches, and every frozenset and
`Word` in them is an object the garbage collector walks on each full collection: after
10,000 lookups at 100,000 claims the caches held 850,000 objects, and full collections paused
for up to half a second, and each object is memory the process keeps. Most of those sets are
empty or recur ({1}, {"where"}), and most words recur, so one shared object can stand for each:
the gate's caches after 5,000 lookups at 100,000 claims held 74 MiB instead of 93.
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache, lru_cache
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
#: How many distinct non-empty sets `share_sets` keeps one copy of. The sets an analysis holds
#: are mostly small and recur: word positions ({1}, {3}) and single question words
#: ({"where"}); a frozenset costs 216 bytes at one to four members.
SHARED_SETS = 8_192


def share_sets(instance: Any) -> None:
    """Point each frozenset field of a frozen dataclass at one shared copy of its value: EMPTY
    for the empty ones, the first equal set still held by the LRU for the others (from
    __post_init__)."""
    for name in _field_names(instance.__class__):
        value = getattr(instance, name)
        if type(value) is frozenset:
            shared = shared_set(value)
            if shared is not value:
                object.__setattr__(instance, name, shared)


def shared_set(value: frozenset[Any]) -> frozenset[Any]:
    """One copy of a small set that recurs across analyses: EMPTY for an empty one, else the
    first equal set the LRU still holds."""
    return _shared_set(value) if value else EMPTY


@lru_cache(maxsize=SHARED_SETS)
def _shared_set(value: frozenset[Any]) -> frozenset[Any]:
    return value


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    # dataclasses.fields() builds its answer anew on each call: half the cost of constructing
    # the analysis that calls this, and the gate constructs some on every comparison.
    return tuple(field.name for field in fields(cls))
