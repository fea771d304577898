"""The proxy and the garbage collector: leave the startup heap alone, and time the pauses.

What a proxy loads before its first request lives as long as the process: the modules, the
gate's trees and the embedding, about 65,000 objects. In the collector's generations they made
every full collection walk them, about 60 ms on a 2-core machine; frozen (gc.freeze), they are
skipped, and a full collection walks only what requests made since. Several proxies can run in
one process (tests do): the heap thaws when the last of them stops.

What remains to walk grows with the gate's caches, so the pauses are timed
(CollectionPauses: the proxy's /metrics and benchmarks/bench_store.py).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable

_lock = threading.Lock()
_running = 0


def freeze_startup_heap() -> None:
    """Collect what is garbage now, and leave everything still alive out of later collections."""
    global _running
    with _lock:
        _running += 1
        gc.collect()
        gc.freeze()


def thaw_startup_heap() -> None:
    """Undo freeze_startup_heap once every proxy that called it has stopped."""
    global _running
    with _lock:
        _running = max(0, _running - 1)
        if _running == 0:
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
