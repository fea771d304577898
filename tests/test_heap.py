"""The proxy's collection policy (proxy/heap.py): what survives a young collection is left out
of later ones, and a cycle that frozen objects leave is still collected once the process has
grown by the margin."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from staffstore.proxy.heap import YOUNG_THRESHOLD, SurvivorFreezer


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
    started = SurvivorFreezer(margin=1_000, resident=meter)
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


def test_a_frozen_cycle_is_kept_until_the_process_grows_by_the_margin(
    freezer: SurvivorFreezer, meter: _Meter
) -> None:
    node = _Node()
    node.me = node
    alive = weakref.ref(node)
    gc.collect(1)  # frozen while still in use
    del node
    meter.size = 999
    gc.collect()
    # The leak the margin bounds: a full collection does not walk the frozen cycle.
    assert alive() is not None and freezer.thaws == 0
    meter.size = 1_001
    gc.collect(1)  # a young collection sees the growth and thaws the frozen heap
    gc.collect()
    assert alive() is None and freezer.thaws == 1


def test_growth_counts_again_from_the_collection_that_walked_the_thawed_heap(
    freezer: SurvivorFreezer, meter: _Meter
) -> None:
    meter.size = 1_001
    gc.collect(1)
    gc.collect()
    kept = [[n] for n in range(1_000)]
    meter.size = 2_000  # grown by less than the margin since that collection
    gc.collect(1)
    assert freezer.thaws == 1 and not _collected(kept)
