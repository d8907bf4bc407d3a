"""The emulated engine's KV cache: prefix blocks pinned while in use, evicted LRU after.

Capacity counts blocks of two kinds. Hash-addressed blocks hold full prompt blocks and
can be shared: pinned while any running sequence uses them, kept (unpinned) after, and
evicted least-recently-used first when space is needed. Private blocks hold what is not
shareable (a sequence's partial last prompt block, its output, prompt blocks still being
computed) and are freed when the sequence ends.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(slots=True)
class Allocation:
    """The blocks one sequence holds: shared blocks it pins and a count of private ones."""

    hits: int
    pinned: list[bytes] = field(default_factory=list)
    private: int = 0


class KVCache:
    """A bounded block cache; ``used_blocks`` never exceeds ``capacity_blocks``."""

    def __init__(self, capacity_blocks: int) -> None:
        if capacity_blocks < 1:
            raise ValueError("capacity_blocks must be at least 1")
        self.capacity_blocks = capacity_blocks
        self.evictions = 0
        self._pinned: dict[bytes, int] = {}  # block id -> sequences using it
        self._unpinned: OrderedDict[bytes, None] = OrderedDict()  # least recent first
        self._private = 0

    @property
    def used_blocks(self) -> int:
        return len(self._pinned) + len(self._unpinned) + self._private

    @property
    def pinned_blocks(self) -> int:
        return len(self._pinned)

    @property
    def held_blocks(self) -> int:
        """Blocks running sequences hold (pinned or private): what eviction cannot free."""
        return len(self._pinned) + self._private

    @property
    def cached_blocks(self) -> int:
        """Hash-addressed blocks held, pinned or not."""
        return len(self._pinned) + len(self._unpinned)

    def __contains__(self, block_id: object) -> bool:
        return block_id in self._pinned or block_id in self._unpinned

    def prefix_hits(self, block_ids: Sequence[bytes]) -> int:
        """How many leading blocks are cached; the run stops at the first miss."""
        pinned, unpinned = self._pinned, self._unpinned
        for count, block_id in enumerate(block_ids):
            if block_id not in pinned and block_id not in unpinned:
                return count
        return len(block_ids)

    def allocate(self, block_ids: Sequence[bytes], blocks: int) -> Allocation | None:
        """Pin the cached prefix of ``block_ids`` and reserve the rest of ``blocks`` privately.

        Evicts unpinned blocks as needed; None (and nothing changed) when even evicting
        all of them would not make room.
        """
        hits = self.prefix_hits(block_ids)
        if blocks < hits:
            raise ValueError("a sequence needs at least the blocks it hits")
        shared = block_ids[:hits]
        unpinned = self._unpinned
        evictable = len(unpinned) - sum(1 for block_id in shared if block_id in unpinned)
        needed = blocks - hits
        free = self.capacity_blocks - self.used_blocks
        if needed > free + evictable:
            return None
        for block_id in shared:
            self._pin(block_id)
        self._evict(needed - free)
        self._private += needed
        return Allocation(hits=hits, pinned=list(shared), private=needed)

    def commit(self, allocation: Allocation, block_id: bytes) -> None:
        """A block the sequence computed becomes shared; an identical cached one is reused."""
        if allocation.private < 1:
            raise ValueError("no private block left to commit")
        self._pin(block_id)
        allocation.pinned.append(block_id)
        allocation.private -= 1
        self._private -= 1

    def release(self, allocation: Allocation) -> None:
        """Unpin shared blocks (they stay cached) and free private ones."""
        # Tail blocks first, so they are the first to go: prefixes outlive their suffixes.
        for block_id in reversed(allocation.pinned):
            self._unpin(block_id)
        self._private -= allocation.private
        allocation.pinned = []
        allocation.private = 0

    def _pin(self, block_id: bytes) -> None:
        count = self._pinned.get(block_id)
        if count is None:
            self._unpinned.pop(block_id, None)
            self._pinned[block_id] = 1
        else:
            self._pinned[block_id] = count + 1

    def _unpin(self, block_id: bytes) -> None:
        count = self._pinned[block_id] - 1
        if count:
            self._pinned[block_id] = count
        else:
            del self._pinned[block_id]
            self._unpinned[block_id] = None  # most recently used

    def _evict(self, count: int) -> None:
        for _ in range(count):
            self._unpinned.popitem(last=False)
        self.evictions += max(0, count)
