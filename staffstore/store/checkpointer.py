"""WAL checkpoints off the request path, for a long-running server.

In WAL mode SQLite appends every commit to the -wal file. By default the commit that takes the
file past 1,000 pages then copies those pages back into the database file and syncs it, which
costs a few milliseconds, and that commit belongs to one request chosen at random. Through the
proxy this was most of a miss's tail: in three interleaved runs of benchmarks/bench_proxy.py on
two cores, a miss's p99 was 7.8 to 10.5 ms with those copies in the commits, and 3.0 to 4.6 ms
with this thread doing them (the p50, about 1.8 ms, did not move).

The Checkpointer does those copies from a thread and a connection of its own. A PASSIVE
checkpoint never waits for, nor blocks, the store's readers and writer; what it cannot copy yet
it copies on a later pass. The store's own connection keeps an automatic checkpoint, at a much
higher mark (`FALLBACK_PAGES`), so the WAL stays bounded even if this thread falls behind.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

#: The store's own connection checkpoints when the WAL reaches this many pages (about 40 MiB
#: at 4 KiB a page): only if the Checkpointer has not kept up.
FALLBACK_PAGES = 10_000

#: Seconds between two checkpoints. A pass with nothing new to copy costs microseconds.
INTERVAL = 0.5

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Checkpoint:
    """What one PASSIVE checkpoint reported: frames in the WAL, and how many are now copied."""

    busy: bool
    wal_frames: int
    copied_frames: int


class Checkpointer:
    """Copies a database's WAL into the database file from a thread of its own.

    `start()` it after the store is open and its connection has deferred checkpoints
    (`StaffStore.defer_checkpoints`); `stop()` it before the store closes.
    """

    def __init__(self, path: Path, interval: float = INTERVAL) -> None:
        self.path = path
        self.interval = interval
        self.last: Checkpoint | None = None
        self.passes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failing: str | None = None  # the error the last pass failed with, if it did

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name="staffstore-checkpointer", daemon=True
        )
        self._thread.start()
        self._ready.wait()

    def stop(self) -> None:
        """Run one last checkpoint, then close the thread's connection."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        try:
            connection = sqlite3.connect(self.path, isolation_level=None)
            # SQLite opens the WAL and its index on a connection's first statement: read once
            # now, so that a server holds every descriptor on its database once it serves (the
            # first pass opened them half a second later, under a running request) and a WAL
            # that cannot be opened is said at start.
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as error:
            _log.warning("WAL checkpoints stay on the request path: %s", error)
            self._ready.set()
            return
        self._ready.set()
        try:
            while not self._stop.wait(self.interval):
                self._checkpoint(connection)
            self._checkpoint(connection)
        finally:
            connection.close()

    def _checkpoint(self, connection: sqlite3.Connection) -> None:
        try:
            busy, frames, copied = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as error:
            # The store's fallback checkpoint still bounds the WAL. Said once, not every pass.
            if str(error) != self._failing:
                _log.warning("a WAL checkpoint failed (will retry): %s", error)
                self._failing = str(error)
            return
        self._failing = None
        self.last = Checkpoint(bool(busy), frames, copied)
        self.passes += 1
