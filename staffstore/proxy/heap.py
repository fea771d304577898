"""The proxy and the garbage collector: keep long-lived objects out of collections, and time
the pauses.

What a proxy loads before its first request lives as long as the process: the modules, the
gate's trees and the embedding, about 65,000 objects. In the collector's generations they made
every full collection walk them, about 60 ms on a 2-core machine; frozen (gc.freeze), they are
skipped. What requests leave behind for longer is mostly the gate's caches (analysed questions,
comparisons, assessments): after 5,000 lookups at 100,000 claims, 210,000 objects that full
collections walked for up to 200 ms, and nothing but the caches' own evictions frees them. So
what survives a young collection is frozen too (SurvivorFreezer), and a full collection walks
only what is younger than that.

A frozen object is still freed when its last reference goes (an entry an lru_cache evicts is);
only a reference cycle among frozen objects is never found. That leak is bounded: once the
process has grown by GROWTH_MARGIN since the frozen heap was last walked, it is thawed, the next
full collection walks it once, and what survives is frozen again. Several proxies can run in
one process (tests do): the heap thaws when the last of them stops.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

try:
    import resource
except ImportError:  # Windows: no cheap way to read the resident size, so no survivors frozen
    resource = None  # type: ignore[assignment]

_lock = threading.Lock()
_running = 0

#: How far the process's peak resident size may grow, in bytes, before the frozen heap is thawed
#: and walked once by a full collection: the most that cycles among frozen objects can leak.
#: Above what the gate's caches take when full (about 120 MiB at 100,000 claims), so that a
#: proxy that leaks nothing never pays for that walk.
GROWTH_MARGIN = 256 << 20

#: The young generation's threshold while survivors are frozen (CPython's default is 700). It
#: counts allocations less deallocations, and once the gate's caches are full each entry they
#: evict cancels one they add: at 700 young collections then came so seldom that the young
#: generation grew to 400,000 objects, walked in up to 460 ms (40,000 lookups at 100,000
#: claims). At 100 none took over 7 ms, at a collection every fourth lookup or so.
YOUNG_THRESHOLD = 100


def peak_resident_bytes() -> int | None:
    """The process's peak resident size so far, or None where it cannot be read cheaply."""
    if resource is None:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux counts KiB, macOS bytes.
    return peak if sys.platform == "darwin" else peak * 1024


class SurvivorFreezer:
    """While started, freezes what survives each young collection (generation 1), and thaws
    the frozen heap whenever `resident()` has grown by more than `margin` bytes since the last
    walk of it, so that the next full collection finds the cycles frozen objects may have left.

    Frozen objects are freed as usual when their last reference goes (an entry evicted from an
    lru_cache is), so without cycles the frozen heap is as big as what is alive. A cycle among
    frozen objects is never found while frozen: that is the leak the margin bounds.
    """

    def __init__(
        self,
        margin: int = GROWTH_MARGIN,
        resident: Callable[[], int | None] = peak_resident_bytes,
    ) -> None:
        self.margin = margin
        #: How many times the frozen heap was thawed for a full collection to walk.
        self.thaws = 0
        self._resident = resident
        self._limit = 0
        self._thawed = False
        self._thresholds = gc.get_threshold()

    @staticmethod
    def supported() -> bool:
        return peak_resident_bytes() is not None

    def start(self) -> None:
        self._limit = (self._resident() or 0) + self.margin
        self._thawed = False
        self._thresholds = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, *self._thresholds[1:])
        gc.callbacks.append(self._on_collection)

    def stop(self) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
            gc.set_threshold(*self._thresholds)

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] == 0:
            return
        if info["generation"] == 2:
            if self._thawed:
                # This collection walked the thawed heap: the growth allowed counts from here.
                self._thawed = False
                self._limit = (self._resident() or 0) + self.margin
            gc.freeze()
        elif self._thawed:
            # Waiting for the full collection the thaw asked for: freezing now would hide the
            # frozen heap from it again.
            return
        elif (self._resident() or 0) > self._limit:
            self._thawed = True
            self.thaws += 1
            # gc.collect() does nothing from inside a collection's callback: the collector's
            # own thresholds start the full collection, a few young ones later.
            gc.unfreeze()
        else:
            gc.freeze()


_freezer = SurvivorFreezer()


def freeze_startup_heap() -> None:
    """Collect what is garbage now, leave everything still alive out of later collections, and
    from now on leave what survives a young collection out of them too (SurvivorFreezer)."""
    global _running
    with _lock:
        _running += 1
        gc.collect()
        gc.freeze()
        if _running == 1 and SurvivorFreezer.supported():
            _freezer.start()


def thaw_startup_heap() -> None:
    """Undo freeze_startup_heap once every proxy that called it has stopped."""
    global _running
    with _lock:
        _running = max(0, _running - 1)
        if _running == 0:
            _freezer.stop()
            gc.unfreeze()


class CollectionPauses:
    """While started, hands each of the garbage collector's pauses to `record(generation,
    seconds)` (generation 2 is a full collection)."""

    def __init__(self, record: Callable[[int, float], None]) -> None:
        self._record = record
        self._began = 0.0

    def start(self) -> None:
        gc.callbacks.append(self._on_collection)

    def stop(self) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        # A collection holds the GIL from start to stop: no other one can begin in between.
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self._record(info["generation"], time.perf_counter() - self._began)
