"""The proxy and the garbage collector: keep long-lived objects out of collections, walk them
only while no request waits, and time the pauses.

What a proxy loads before its first request lives as long as the process: the modules, the
gate's trees and the embedding, about 65,000 objects. In the collector's generations they made
every full collection walk them, about 60 ms on a 2-core machine; frozen (gc.freeze), they are
skipped. What requests leave behind for longer is mostly the gate's caches (analysed questions,
comparisons, assessments): after 5,000 lookups at 100,000 claims, 210,000 objects that full
collections walked for up to 200 ms, and nothing but the caches' own evictions frees them. So
what survives a young collection is frozen too (SurvivorFreezer), and a full collection walks
only what is younger than that.

A frozen object is still freed when its last reference goes (an entry an lru_cache evicts is);
only a reference cycle among frozen objects is never found. To find those, the frozen heap is
walked once by a full collection, and what survives is frozen again. That walk is as long as
the heap is big: with the caches full at 100,000 claims, 250-500 ms, which every request that
arrives meanwhile waits out. So a walk is made when it is due (the process has grown by
WALK_MARGIN since the last) and the proxy has served nothing for IDLE_BEFORE_WALK; only a proxy
that is never idle that long walks on a young collection's callback, once it has grown by
FORCED_MARGIN. Several proxies can run in one process (tests do): they share one freezer, and
the heap thaws when the last of them stops.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

try:
    import resource
except ImportError:  # Windows: no cheap way to read the resident size, so no survivors frozen
    resource = None  # type: ignore[assignment]

_lock = threading.Lock()
_running = 0

#: How far the process's peak resident size may grow, in bytes, past where the frozen heap was
#: last walked before a walk is due: the proxy makes it once no request has been in flight for
#: IDLE_BEFORE_WALK seconds. An idle walk costs no request anything, so the margin is small
#: enough that a quiet proxy finds the cycles frozen objects leave long before they matter.
WALK_MARGIN = 128 << 20

#: How far it may grow before the walk is made whether or not the proxy is idle, on the request
#: path: the most that cycles among frozen objects can leak in a proxy never idle for
#: IDLE_BEFORE_WALK. Well above what the gate's caches take when full: a proxy over 100,000
#: claims grew from 182 to 488 MiB resident over 64,000 requests, level from 52,000 on
#: (/metrics and VmRSS every 4,000 requests, half hits, half misses), and at a margin of
#: 256 MiB it paid one walk of 250-500 ms about 35,000 requests in.
FORCED_MARGIN = 1 << 30

#: How long, in seconds, a proxy must have served nothing before it walks a frozen heap that is
#: due: long enough that a client in the middle of a conversation is not likely to arrive
#: during the walk, short enough that a proxy with quiet seconds walks during them.
IDLE_BEFORE_WALK = 1.0

#: The young generation's threshold while survivors are frozen (CPython's default is 700). It
#: counts allocations less deallocations, and once the gate's caches are full each entry they
#: evict cancels one they add: at 700 young collections then came so seldom that the young
#: generation grew to 400,000 objects, walked in up to 460 ms (40,000 lookups at 100,000
#: claims). At 100 none took over 7 ms, at a collection every fourth lookup or so.
YOUNG_THRESHOLD = 100

#: What made a walk of the frozen heap: a quiet moment, or growth past FORCED_MARGIN.
WalkTrigger = Literal["idle", "growth"]


def peak_resident_bytes() -> int | None:
    """The process's peak resident size so far, or None where it cannot be read cheaply."""
    if resource is None:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux counts KiB, macOS bytes.
    return peak if sys.platform == "darwin" else peak * 1024


class SurvivorFreezer:
    """While started, freezes what survives each young collection (generation 1), and has the
    frozen heap walked by a full collection: by `walk()` once `walk_due` (the process has grown
    by `margin` bytes since the last walk, by `resident()`), or on a young collection's
    callback once it has grown by `forced_margin`.

    Frozen objects are freed as usual when their last reference goes (an entry evicted from an
    lru_cache is), so without cycles the frozen heap is as big as what is alive. A cycle among
    frozen objects is never found while frozen: that is the leak the walks find.
    """

    def __init__(
        self,
        margin: int = WALK_MARGIN,
        forced_margin: int = FORCED_MARGIN,
        resident: Callable[[], int | None] = peak_resident_bytes,
    ) -> None:
        self.margin = margin
        self.forced_margin = max(margin, forced_margin)
        #: How many times the frozen heap was walked, by what made the walk.
        self.walks: dict[WalkTrigger, int] = {"idle": 0, "growth": 0}
        #: How many unreachable objects those walks found: the cycles frozen objects had left,
        #: and any garbage younger collections had not reached yet.
        self.freed = 0
        self._resident = resident
        self._walked_at = 0
        self._started = False
        self._thawed: WalkTrigger | None = None
        self._thresholds = gc.get_threshold()

    @staticmethod
    def supported() -> bool:
        return peak_resident_bytes() is not None

    def start(self) -> None:
        self._walked_at = self._resident() or 0
        self._thawed = None
        self._thresholds = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, *self._thresholds[1:])
        gc.callbacks.append(self._on_collection)
        self._started = True

    def stop(self) -> None:
        self._started = False
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
            gc.set_threshold(*self._thresholds)

    @property
    def walk_due(self) -> bool:
        """Whether the process has grown by the margin since the frozen heap was last walked."""
        return self._started and self._grown() > self.margin

    def walk(self) -> int:
        """Walk the frozen heap now: thaw it, collect everything, freeze what survives. Returns
        how many unreachable objects the collection found. Blocks every thread that needs the
        interpreter until done: call it when nothing waits."""
        if not self._started:
            return 0
        self._thawed = "idle"
        gc.unfreeze()
        return gc.collect()

    def _grown(self) -> int:
        return (self._resident() or 0) - self._walked_at

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] == 0:
            return
        if info["generation"] == 2:
            if self._thawed is not None:
                # This collection walked the thawed heap: growth counts from here.
                self.walks[self._thawed] += 1
                self.freed += info["collected"]
                self._thawed = None
                self._walked_at = self._resident() or 0
            gc.freeze()
        elif self._thawed is not None:
            # Waiting for the full collection the thaw asked for: freezing now would hide the
            # frozen heap from it again.
            return
        elif self._grown() > self.forced_margin:
            self._thawed = "growth"
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


def heap_walk_due() -> bool:
    """Whether the process's frozen heap is due a walk (SurvivorFreezer.walk_due)."""
    return _freezer.walk_due


def walk_frozen_heap() -> int:
    """Walk the process's frozen heap now (SurvivorFreezer.walk); the number of objects freed."""
    with _lock:
        return _freezer.walk()


def heap_walks() -> tuple[dict[WalkTrigger, int], int]:
    """How many times this process's frozen heap was walked, by trigger, and the objects freed."""
    return dict(_freezer.walks), _freezer.freed


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
