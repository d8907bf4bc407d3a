"""The served process's collector settings: applied while open, the previous ones restored."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from gateway.config.root import ServerConfig
from gateway.process.gc_tuning import tuned_collector


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


def test_threshold_raised_and_startup_heap_frozen_then_restored() -> None:
    before = gc.get_threshold()
    start_up = [object(), {"lives": "forever"}]  # built before serving starts
    with tuned_collector(20_000, freeze=True):
        assert gc.get_threshold() == (20_000, *before[1:])
        assert gc.get_freeze_count() > 0
        assert not gc.is_finalized(start_up)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_zero_keeps_cpythons_threshold_and_no_freeze() -> None:
    before = gc.get_threshold()
    with tuned_collector(0, freeze=False):
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() == 0


class _Node:
    def __init__(self) -> None:
        self.me = self


def test_cycles_made_while_tuned_are_still_collected() -> None:
    with tuned_collector(20_000, freeze=True):
        node = _Node()
        watch = weakref.ref(node)
        del node
        assert watch() is not None  # a cycle: reference counting alone cannot free it
        gc.collect()
        assert watch() is None


def test_served_defaults_tune_the_collector() -> None:
    server = ServerConfig()
    assert server.gc_gen0_threshold == 20_000
    assert server.gc_freeze is True
