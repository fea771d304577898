"""The proxy's collection policy (proxy/heap.py): what survives a young collection is left out
of later ones, and a cycle that frozen objects leave is still collected: by a walk the proxy
makes when one is due, or on the request path once the process has grown by the forced margin."""

from __future__ import annotations

import gc
import os
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_proxy_support import METRICS_KEY, Server, running_proxy

from staffstore.proxy.heap import (
    IDLE_BEFORE_WALK,
    WALK_MARGIN,
    YOUNG_THRESHOLD,
    SurvivorFreezer,
    freeze_startup_heap,
    heap_walks,
    peak_resident_bytes,
    thaw_startup_heap,
    walk_frozen_heap,
)


class _Node:
    """A tracked object that can point at itself."""

    me: _Node | None = None


class _Meter:
    """A resident size the test sets, in bytes."""

    def __init__(self) -> None:
        self.size = 0

    def __call__(self) -> int:
        return self.size


@pytest.fixture
def meter() -> _Meter:
    return _Meter()


@pytest.fixture
def freezer(meter: _Meter) -> Iterator[SurvivorFreezer]:
    started = SurvivorFreezer(margin=1_000, forced_margin=10_000, resident=meter)
    gc.collect()
    started.start()
    try:
        yield started
    finally:
        started.stop()
        gc.unfreeze()


def _collected(objects: object) -> bool:
    """Whether a full collection would walk `objects`: the collector's generations hold it."""
    return any(o is objects for o in gc.get_objects())


def test_what_survives_a_young_collection_is_frozen(freezer: SurvivorFreezer) -> None:
    kept = [[n] for n in range(1_000)]
    frozen = gc.get_freeze_count()
    gc.collect(1)
    assert not _collected(kept)
    assert gc.get_freeze_count() >= frozen + len(kept)


def test_young_collections_run_more_often_while_survivors_are_frozen() -> None:
    before = gc.get_threshold()
    freezer = SurvivorFreezer()
    freezer.start()
    try:
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
    finally:
        freezer.stop()
    assert gc.get_threshold() == before


def _frozen_cycle() -> weakref.ref[_Node]:
    """A cycle frozen while in use, then dropped: garbage only a walk of the frozen heap finds."""
    node = _Node()
    node.me = node
    alive = weakref.ref(node)
    gc.collect(1)  # frozen while still in use
    return alive


def test_a_walk_is_due_once_the_process_grows_by_the_margin(
    freezer: SurvivorFreezer, meter: _Meter
) -> None:
    alive = _frozen_cycle()
    meter.size = 1_000
    gc.collect()
    # The leak the walks find: a full collection does not walk the frozen cycle.
    assert alive() is not None and not freezer.walk_due
    meter.size = 1_001
    assert freezer.walk_due
    # Due is not made: young collections leave the frozen heap alone until the proxy walks it.
    gc.collect(1)
    gc.collect()
    assert alive() is not None and freezer.walks == {"idle": 0, "growth": 0}
    assert freezer.walk() >= 1
    assert alive() is None
    assert freezer.walks == {"idle": 1, "growth": 0} and freezer.freed >= 1
    assert not freezer.walk_due


def test_what_survives_a_walk_is_frozen_again(freezer: SurvivorFreezer, meter: _Meter) -> None:
    kept = [[n] for n in range(1_000)]
    meter.size = 1_001
    freezer.walk()
    assert not _collected(kept)
    # Growth counts from the walk.
    meter.size = 2_001
    assert not freezer.walk_due
    meter.size = 2_002
    assert freezer.walk_due


def test_a_proxy_never_idle_walks_on_the_request_path_past_the_forced_margin(
    freezer: SurvivorFreezer, meter: _Meter
) -> None:
    alive = _frozen_cycle()
    meter.size = 10_000
    gc.collect(1)
    gc.collect()
    assert alive() is not None and freezer.walks["growth"] == 0
    meter.size = 10_001
    gc.collect(1)  # a young collection sees the growth and thaws the frozen heap
    gc.collect()
    assert alive() is None and freezer.walks == {"idle": 0, "growth": 1}


def test_growth_counts_again_from_the_collection_that_walked_the_thawed_heap(
    freezer: SurvivorFreezer, meter: _Meter
) -> None:
    meter.size = 10_001
    gc.collect(1)
    gc.collect()
    kept = [[n] for n in range(1_000)]
    meter.size = 20_000  # grown by less than the forced margin since that collection
    gc.collect(1)
    assert freezer.walks["growth"] == 1 and not _collected(kept)


def test_a_stopped_freezer_walks_nothing() -> None:
    freezer = SurvivorFreezer(margin=0, resident=lambda: 1 << 40)
    assert not freezer.walk_due
    assert freezer.walk() == 0 and freezer.walks == {"idle": 0, "growth": 0}


def test_a_program_without_a_proxy_freezes_and_walks_as_the_proxy_does() -> None:
    # What the README's "Long-running processes" asks of a program that queries in-process.
    if not SurvivorFreezer.supported():
        pytest.skip("no resident size to read here")
    freeze_startup_heap()
    try:
        alive = _frozen_cycle()
        gc.collect()
        assert alive() is not None  # frozen: full collections leave it alone
        walks = heap_walks()[0]["idle"]
        assert walk_frozen_heap() >= 1
        assert alive() is None and heap_walks()[0]["idle"] == walks + 1
    finally:
        thaw_startup_heap()


# -- the proxy walks its frozen heap while no request is in flight ---------------------------


def _grow_past_the_walk_margin() -> list[bytes]:
    """Raise the process's peak resident size by more than WALK_MARGIN above its peak so far
    (and so above the peak when the frozen heap was last walked); what was allocated. In 16 MiB
    pieces, each written (so resident), so that other threads run in between."""
    peak = peak_resident_bytes()
    if peak is None:
        pytest.skip("no resident size to read here")
    resident = os.sysconf("SC_PAGE_SIZE") * int(Path("/proc/self/statm").read_text().split()[1])
    piece = 16 << 20
    return [b"\x01" * piece for _ in range((peak - resident + WALK_MARGIN) // piece + 3)]


class _Pinger(threading.Thread):
    """Keeps a proxy busy: a request every quarter of IDLE_BEFORE_WALK until stopped."""

    def __init__(self, server: Server) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.stopped = threading.Event()
        self.failures = 0

    def run(self) -> None:
        while not self.stopped.is_set():
            self.failures += self.server.get("/healthz", key=None).status_code != 200
            self.stopped.wait(IDLE_BEFORE_WALK / 4)

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def _idle_walks() -> int:
    return heap_walks()[0]["idle"]


def _wait_for_idle_walk(after: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _idle_walks() > after:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc")
def test_a_proxy_walks_a_due_heap_only_once_no_request_has_been_in_flight_for_a_while(
    tmp_path: Path,
) -> None:
    with running_proxy(tmp_path / "walk.db") as running:
        before = _idle_walks()
        # Busy from before the walk is due until four times IDLE_BEFORE_WALK after.
        pinger = _Pinger(running)
        pinger.start()
        try:
            grown = _grow_past_the_walk_margin()
            del grown
            time.sleep(4 * IDLE_BEFORE_WALK)
            assert _idle_walks() == before
        finally:
            pinger.stop()
        assert pinger.failures == 0
        # Quiet: the walk comes.
        assert _wait_for_idle_walk(before, 10 * IDLE_BEFORE_WALK)
        text = running.get("/metrics", key=METRICS_KEY).text
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    assert float(samples['staffstore_gc_heap_walks_total{trigger="idle"}']) == before + 1
    # What the walks found, as the freezer counted it.
    assert float(samples["staffstore_gc_heap_walk_freed_objects_total"]) == heap_walks()[1]
