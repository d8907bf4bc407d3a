"""The prefix index: longest-prefix lookups, bounds, LRU order, TTL and corrections."""

from __future__ import annotations

from gateway.prefix.fingerprint import BLOCK_BYTES
from gateway.prefix.index import CacheSpec, PrefixIndex


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def chain(tag: str, n: int) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(n)]


def spec(blocks: int, ttl_s: float = 300.0) -> CacheSpec:
    return CacheSpec(capacity_tokens=blocks * BLOCK_BYTES // 4, ttl_s=ttl_s)


def test_longest_prefix_per_backend() -> None:
    index = PrefixIndex({"a": spec(100), "b": spec(100), "c": spec(100)})
    prompt = chain("p", 10)
    index.insert("a", prompt[:10])
    index.insert("b", prompt[:4])
    assert index.match(prompt, ["a", "b", "c"]) == {"a": 10, "b": 4, "c": 0}
    longer = [*prompt, b"x", b"y"]
    assert index.match(longer, ["a", "b"]) == {"a": 10, "b": 4}
    assert index.match(chain("q", 5), ["a"]) == {"a": 0}


def test_capacity_is_never_exceeded_and_heads_outlive_tails() -> None:
    index = PrefixIndex({"a": spec(8)})
    old, new = chain("old", 6), chain("new", 6)
    index.insert("a", old)
    index.insert("a", new)
    assert index.blocks_held("a") == 8
    # The old prompt lost its tail, not its head: its prefix still matches.
    assert index.match(old, ["a"]) == {"a": 2}
    assert index.match(new, ["a"]) == {"a": 6}


def test_ttl_expires_entries() -> None:
    clock = Clock()
    index = PrefixIndex({"a": spec(100, ttl_s=60)}, clock=clock)
    prompt = chain("p", 5)
    index.insert("a", prompt)
    clock.now += 30
    assert index.match(prompt, ["a"]) == {"a": 5}
    clock.now += 31
    assert index.match(prompt, ["a"]) == {"a": 0}
    assert index.blocks_held("a") == 0
    assert index.memory_bytes() == 0


def test_reuse_refreshes_recency() -> None:
    index = PrefixIndex({"a": spec(10)})
    hot, cold, newer = chain("hot", 4), chain("cold", 4), chain("newer", 4)
    index.insert("a", hot)
    index.insert("a", cold)
    index.insert("a", hot)  # touched again: now the freshest
    index.insert("a", newer)
    assert index.match(hot, ["a"]) == {"a": 4}
    assert index.match(cold, ["a"]) == {"a": 2}


def test_shrinking_evicts_the_oldest_and_growing_is_bounded_by_the_spec() -> None:
    index = PrefixIndex({"a": spec(40), "b": spec(40)})
    old, new = chain("old", 10), chain("new", 10)
    for name in ("a", "b"):
        index.insert(name, old)
        index.insert(name, new)
    assert index.shrink("a") == 20
    assert index.shrink("a") == 10
    assert index.match(new, ["a", "b"]) == {"a": 10, "b": 10}
    assert index.match(old, ["a", "b"]) == {"a": 0, "b": 10}
    for _ in range(100):
        index.grow("a")
    assert index.capacity_blocks("a") == 40


def test_unknown_backends_are_ignored() -> None:
    index = PrefixIndex({"a": spec(10)})
    assert index.match(chain("p", 3), ["a", "ghost"]) == {"a": 0}


def test_lookup_equals_a_walk_of_the_prompt_under_random_traffic() -> None:
    """The binary searches rely on held blocks forming a run from the start, and on the set
    of backends holding a block only shrinking along the prompt; random conversations that
    branch, grow and get evicted must never break that, for one backend or for all."""
    import random

    rng = random.Random(7)
    clock = Clock()
    names = ["a", "b", "c", "d", "e"]
    index = PrefixIndex({n: spec(rng.randint(20, 80), ttl_s=50.0) for n in names}, clock=clock)
    prompts: list[list[bytes]] = [[]]
    for step in range(3000):
        base = rng.choice(prompts)[: rng.randint(0, 40)]
        # Chained ids: a block's id names its whole prefix, as fingerprints do.
        prompt = base + [f"{base[-1] if base else b''!r}/{step}/{i}".encode() for i in range(5)]
        prompts.append(prompt)
        clock.now += rng.random()
        together = index.match(prompt, names)  # first: it expires what is past the TTL
        walked = {
            name: next(
                (i for i, block in enumerate(prompt) if block not in index._lru[name]),
                len(prompt),
            )
            for name in names
        }
        assert together == walked
        for name in names:
            assert index.match(prompt, [name]) == {name: walked[name]}
        for name in rng.sample(names, rng.randint(1, 3)):
            index.insert(name, prompt)
        if step % 500 == 0:
            index.shrink(rng.choice(names))
