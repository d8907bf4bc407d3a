"""KV cache: capacity bound, LRU eviction, pinning, longest cached prefix."""

from __future__ import annotations

import random

import pytest

from emulator.engine.kv_cache import Allocation, KVCache


def _hold(cache: KVCache, *block_ids: bytes) -> Allocation:
    """Run a sequence that computes ``block_ids`` (cached ones are hits) and keeps them."""
    allocation = cache.allocate(block_ids, len(block_ids))
    assert allocation is not None
    for block_id in block_ids[allocation.hits :]:
        cache.commit(allocation, block_id)
    return allocation


def _cache_blocks(cache: KVCache, *block_ids: bytes) -> None:
    """Compute ``block_ids`` and finish: they stay cached, unpinned."""
    cache.release(_hold(cache, *block_ids))


def test_longest_prefix_stops_at_first_miss() -> None:
    cache = KVCache(8)
    _cache_blocks(cache, b"a", b"c")
    assert cache.prefix_hits([b"a", b"b", b"c"]) == 1
    assert cache.prefix_hits([b"b", b"a"]) == 0
    assert cache.prefix_hits([b"a", b"c"]) == 2


def test_evicts_least_recently_used_first() -> None:
    cache = KVCache(4)
    _cache_blocks(cache, b"a")
    _cache_blocks(cache, b"b")
    _cache_blocks(cache, b"c")
    _cache_blocks(cache, b"a")  # a hit: a becomes the most recently used
    _cache_blocks(cache, b"d")
    _cache_blocks(cache, b"e")  # full: evicts b, the least recently used
    assert b"b" not in cache
    assert all(block in cache for block in (b"a", b"c", b"d", b"e"))
    _cache_blocks(cache, b"f")
    assert b"c" not in cache and b"a" in cache
    assert cache.evictions == 2


def test_a_finished_sequence_loses_its_tail_blocks_first() -> None:
    cache = KVCache(3)
    _cache_blocks(cache, b"p1", b"p2", b"p3")
    _cache_blocks(cache, b"x")
    assert b"p3" not in cache
    assert cache.prefix_hits([b"p1", b"p2"]) == 2


def test_pinned_blocks_are_never_evicted() -> None:
    cache = KVCache(4)
    held = _hold(cache, b"a", b"b")
    _cache_blocks(cache, b"c", b"d")
    assert cache.allocate([], 3) is None  # only c and d could go
    private = cache.allocate([], 2)
    assert private is not None
    assert b"a" in cache and b"b" in cache
    assert b"c" not in cache and b"d" not in cache
    assert cache.held_blocks == cache.used_blocks == 4
    cache.release(held)
    cache.release(private)
    assert cache.used_blocks == cache.cached_blocks == 2


def test_refused_allocation_changes_nothing() -> None:
    cache = KVCache(4)
    _cache_blocks(cache, b"a", b"b")
    held = _hold(cache, b"c")
    before = (cache.used_blocks, cache.pinned_blocks, cache.evictions)
    assert cache.allocate([b"a", b"b"], 5) is None
    assert (cache.used_blocks, cache.pinned_blocks, cache.evictions) == before
    # Hits are no room: with a and b pinned by this very request only one block is free.
    assert cache.allocate([b"a", b"b"], 4) is None
    assert cache.allocate([b"a", b"b"], 3) is not None
    cache.release(held)


def test_identical_blocks_committed_twice_are_stored_once() -> None:
    cache = KVCache(8)
    first = cache.allocate([b"a"], 2)
    second = cache.allocate([b"a"], 2)
    assert first is not None and second is not None and first.hits == second.hits == 0
    cache.commit(first, b"a")
    cache.commit(second, b"a")
    assert cache.cached_blocks == 1 and cache.used_blocks == 3
    cache.release(first)
    assert cache.pinned_blocks == 1
    cache.release(second)
    assert cache.pinned_blocks == 0 and cache.used_blocks == 1


def test_random_workload_keeps_every_invariant() -> None:
    rng = random.Random(7)
    cache = KVCache(64)
    live: list[Allocation] = []
    for _ in range(3000):
        if live and rng.random() < 0.45:
            cache.release(live.pop(rng.randrange(len(live))))
        else:
            prefix = rng.randrange(6)
            ids = [f"{prefix}-{index}".encode() for index in range(rng.randrange(1, 12))]
            allocation = cache.allocate(ids, len(ids) + rng.randrange(4))
            if allocation is not None:
                for block_id in ids[allocation.hits :]:
                    cache.commit(allocation, block_id)
                live.append(allocation)
        assert cache.used_blocks <= cache.capacity_blocks
        assert all(block in cache for held in live for block in held.pinned)
    for held in live:
        cache.release(held)
    assert cache.pinned_blocks == 0 and cache.used_blocks == cache.cached_blocks


def test_rejects_bad_use() -> None:
    with pytest.raises(ValueError):
        KVCache(0)
    cache = KVCache(4)
    _cache_blocks(cache, b"a", b"b")
    with pytest.raises(ValueError):
        cache.allocate([b"a", b"b"], 1)
    allocation = cache.allocate([], 0)
    assert allocation is not None
    with pytest.raises(ValueError):
        cache.commit(allocation, b"z")
