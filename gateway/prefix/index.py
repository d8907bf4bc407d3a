"""Which prompt prefixes each backend probably still holds in its KV cache.

Per backend, a bounded LRU of block ids with a retention TTL, sized from the backend's KV
capacity; one shared map from block id to a bitmask of the backends holding it. A
request's blocks are inserted last-block-first, so that LRU eviction takes the tails of
old prompts before their heads, as an engine's cache does; a block's presence then
implies its whole prefix (ids are chained), "longest matching prefix" is well defined,
and a lookup binary-searches for it instead of walking the prompt.

A provider that caches only where the request put a breakpoint (`explicit`) holds a
prompt's blocks only up to its last breakpoint, and a hit only ends at an entry: a block
marked as a breakpoint's end when it was written. Its TTL (every backend's, engines'
too) is calibrated from reported cached tokens between a floor and `max_ttl_s`.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.prefix.fingerprint import BLOCK_BYTES

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

_BYTES_PER_ENTRY = 200
"""Rough CPython cost of one entry: an LRU node, a shared-map slot, an 8-byte key."""


MIN_TTL_S = 30.0
"""TTL calibration never assumes a shorter retention than this (nor than the spec's)."""
_TTL_SHRINK = 0.75
_TTL_GROW_SHARE = 0.1
"""A miss cuts the assumed TTL by a quarter; a hit beyond the prediction adds a tenth of the
configured TTL: misses are costly predictions, so they weigh more."""


@dataclass(frozen=True, slots=True)
class CacheSpec:
    capacity_tokens: int
    ttl_s: float
    bytes_per_token: float = 4.0
    max_ttl_s: float | None = None
    """The longest TTL calibration may learn (None: `ttl_s`, no growth)."""
    refresh_on_hit: bool = True
    """A use restarts a block's TTL; False: it runs from the first write."""
    explicit: bool = False
    """Holds only what ended at a breakpoint (entries), e.g. Anthropic's prompt cache."""

    @property
    def capacity_blocks(self) -> int:
        return max(1, int(self.capacity_tokens * self.bytes_per_token // BLOCK_BYTES))


class PrefixIndex:
    def __init__(
        self, specs: Mapping[str, CacheSpec], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self._specs = dict(specs)
        self._capacity = {name: spec.capacity_blocks for name, spec in specs.items()}
        self._bit = {name: 1 << i for i, name in enumerate(specs)}
        self._lru: dict[str, OrderedDict[bytes, float]] = {name: OrderedDict() for name in specs}
        self._owners: dict[bytes, int] = {}
        self._ttl = {name: spec.ttl_s for name, spec in specs.items()}
        self._entries: dict[str, set[bytes]] = {n: set() for n, s in specs.items() if s.explicit}
        """Per explicit backend: the blocks that end a written breakpoint's prefix."""
        self._oldest = dict.fromkeys(specs, math.inf)
        """Per backend, at most the time its least recently used block was touched: while
        that is within the TTL, nothing can have expired and a lookup need not check."""

    def match(self, blocks: Sequence[bytes], backends: Iterable[str]) -> dict[str, int]:
        """Leading blocks of `blocks` each backend holds (0 when none).

        A backend holding a block holds its whole prefix (module docs), so the set of
        backends holding block i only shrinks as i grows: the prompt splits into runs held
        by the same set, each found by a binary search. That is O(log n) lookups per
        distinct run end (a few) rather than per backend, which matters at 128K-token
        prompts (2,000+ blocks) and 16 backends.
        """
        now = self._clock()
        bits, oldest, ttl = self._bit, self._oldest, self._ttl
        matched: dict[str, int] = {}
        wanted = 0
        for name in backends:
            bit = bits.get(name)
            if bit is None:
                continue
            if oldest[name] <= now - ttl[name]:
                self._expire(name, now)
            matched[name] = 0
            wanted |= bit
        start, held = 0, self._held_by(blocks, 0, wanted)
        while held:
            end = self._run_end(blocks, start, held, wanted)
            rest = self._held_by(blocks, end, wanted)
            ended = held & ~rest
            for name in matched:
                if bits[name] & ended:
                    matched[name] = end
            start, held = end, rest
        for name, entries in self._entries.items():
            if matched.get(name):
                matched[name] = _last_entry(blocks, matched[name], entries)
        return matched

    def _held_by(self, blocks: Sequence[bytes], i: int, wanted: int) -> int:
        """Bitmask of the wanted backends holding blocks[i] (0 past the end)."""
        return self._owners.get(blocks[i], 0) & wanted if i < len(blocks) else 0

    def _run_end(self, blocks: Sequence[bytes], start: int, held: int, wanted: int) -> int:
        """First index after `start` whose block is not held by exactly `held`."""
        owners = self._owners
        low, high = start + 1, len(blocks)  # blocks[start:low] held by `held`; not so past high
        while low < high:
            mid = (low + high) // 2
            if owners.get(blocks[mid], 0) & wanted == held:
                low = mid + 1
            else:
                high = mid
        return low

    def insert(self, name: str, blocks: Sequence[bytes], entries: Sequence[int] = ()) -> None:
        """Record that `name` now holds every block of this prompt; for an explicit
        backend, only up to the last of `entries` (block counts where breakpoints end)."""
        explicit = self._entries.get(name)
        if explicit is not None:
            ends = [n for n in entries if 0 < n <= len(blocks)]
            if not ends:
                return
            blocks = blocks[: max(ends)]
            explicit.update(blocks[n - 1] for n in ends)
        lru = self._lru[name]
        bit = self._bit[name]
        now = self._clock()
        owners = self._owners
        refresh = self._specs[name].refresh_on_hit
        if not lru:
            self._oldest[name] = now
        for block in reversed(blocks):
            if block not in lru:
                owners[block] = owners.get(block, 0) | bit
            elif refresh:
                lru.move_to_end(block)
            else:
                continue
            lru[block] = now
        self._evict_over(name, self._capacity[name])

    def shrink(self, name: str) -> int:
        """The engine holds less than predicted: halve the capacity assumed for it."""
        self._capacity[name] //= 2
        self._evict_over(name, self._capacity[name])
        return self._capacity[name]

    def grow(self, name: str) -> int:
        """The engine holds at least what was predicted: regain capacity, up to the spec."""
        spec = self._specs[name].capacity_blocks
        self._capacity[name] = min(spec, self._capacity[name] + max(1, spec // 20))
        return self._capacity[name]

    def carry_over(self, previous: PrefixIndex, names: Iterable[str]) -> None:
        """Copy what `previous` knew of these backends (a reload kept them as they were);
        each keeps its LRU order and touch times, within this index's capacity."""
        for name in names:
            if name not in self._bit or name not in previous._bit:
                continue
            lru = OrderedDict(previous._lru[name])
            bit = self._bit[name]
            for block in lru:
                self._owners[block] = self._owners.get(block, 0) | bit
            self._lru[name] = lru
            self._oldest[name] = previous._oldest[name]
            self._capacity[name] = min(self._capacity[name], previous._capacity[name])
            # A provider's entries and its calibrated TTL carry over with its blocks.
            if name in self._entries and name in previous._entries:
                self._entries[name] = set(previous._entries[name])
            spec = self._specs[name]
            if previous._specs[name].ttl_s == spec.ttl_s:
                self._ttl[name] = min(previous._ttl[name], max(spec.ttl_s, spec.max_ttl_s or 0))
            self._evict_over(name, self._capacity[name])

    def shorten_ttl(self, name: str) -> float:
        """The provider held less than predicted: entries go sooner than assumed."""
        floor = min(MIN_TTL_S, self._specs[name].ttl_s)
        self._ttl[name] = max(floor, self._ttl[name] * _TTL_SHRINK)
        return self._ttl[name]

    def lengthen_ttl(self, name: str) -> float:
        """The provider held more than predicted: entries last longer than assumed."""
        spec = self._specs[name]
        ceiling = max(spec.ttl_s, spec.max_ttl_s or spec.ttl_s)
        self._ttl[name] = min(ceiling, self._ttl[name] + spec.ttl_s * _TTL_GROW_SHARE)
        return self._ttl[name]

    def ttl_s(self, name: str) -> float:
        """The TTL assumed for `name` now (calibrated)."""
        return self._ttl[name]

    def spec(self, name: str) -> CacheSpec:
        return self._specs[name]

    def capacity_blocks(self, name: str) -> int:
        return self._capacity[name]

    def tracks(self, name: str) -> bool:
        return name in self._bit

    def blocks_held(self, name: str) -> int:
        return len(self._lru[name])

    def describe(self) -> dict[str, object]:
        """Per backend: blocks held and the capacity currently assumed; memory estimate."""
        return {
            "block_bytes": BLOCK_BYTES,
            "memory_bytes": self.memory_bytes(),
            "backends": {
                name: {
                    "blocks_held": len(self._lru[name]),
                    "capacity_blocks": self._capacity[name],
                    "configured_capacity_blocks": spec.capacity_blocks,
                    "ttl_s": spec.ttl_s,
                    "assumed_ttl_s": round(self._ttl[name], 1),
                    "explicit": spec.explicit,
                }
                for name, spec in self._specs.items()
            },
        }

    def memory_bytes(self) -> int:
        return _BYTES_PER_ENTRY * sum(len(lru) for lru in self._lru.values())

    def _expire(self, name: str, now: float) -> None:
        lru = self._lru[name]
        horizon = now - self._ttl[name]
        while lru:
            block, touched = next(iter(lru.items()))
            if touched > horizon:
                self._oldest[name] = touched
                return
            self._drop(name, block)
        self._oldest[name] = math.inf

    def _evict_over(self, name: str, capacity: int) -> None:
        lru = self._lru[name]
        while len(lru) > capacity:
            block = next(iter(lru))
            self._drop(name, block)

    def _drop(self, name: str, block: bytes) -> bool:
        lru = self._lru[name]
        if lru.pop(block, None) is None:
            return False
        entries = self._entries.get(name)
        if entries is not None:
            entries.discard(block)
        remaining = self._owners.get(block, 0) & ~self._bit[name]
        if remaining:
            self._owners[block] = remaining
        else:
            self._owners.pop(block, None)
        return True


def _last_entry(blocks: Sequence[bytes], held: int, entries: set[bytes]) -> int:
    """The longest prefix of `blocks`, at most `held` blocks, that ends at an entry."""
    for end in range(held, 0, -1):
        if blocks[end - 1] in entries:
            return end
    return 0
