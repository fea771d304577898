"""What a proxy asks of the garbage collector: leave the startup heap alone.

What a proxy loads before its first request lives as long as the process: the modules, the
gate's trees and the embedding, about 65,000 objects. In the collector's generations they made
every full collection walk them, about 60 ms on a 2-core machine; frozen (gc.freeze), they are
skipped, and a full collection walks only what requests made since. Several proxies can run in
one process (tests do): the heap thaws when the last of them stops.
"""

from __future__ import annotations

import gc
import threading

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
