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
#: What they save is mostly within one lookup, which reads a question's analysis from several
#: places, and for the questions asked again soon; every entry stays in memory.
#: benchmarks/bench_gate_caches.py (100,000 claims: 10,000 hits each asked once, 5,000 turns
#: over 500 hot questions, 2,000 misses; ledgers/bench-gate-caches.json): the heap grew by
#: 77 MiB at 16,384 entries, 30 at 2,048 and 25 at 1,024; hit rates barely moved (normalize
#: 72.7%, 66.8%, 66.0%; slots 29.5%, 28.6%, 28.0%), and lookups were as fast within the spread
#: between two rounds of one size (the hits' p50 0.63-0.81 ms at 16,384, 0.71-0.83 at 2,048).
#: 2,048 keeps room for the turns of a few threads at once and a hot set of a few hundred.
QUESTIONS_CACHED = 2_048

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
