"""Continuous batching: one loop per engine runs steps of chunked prefill and decode.

Each step, as in vLLM's scheduler, first gives running sequences their prefill chunks
(in admission order) out of ``max_batched_tokens``, then admits waiting sequences first
come, first served while that token budget, the KV cache and ``max_num_seqs`` allow. A
sequence looks up the prefix cache when it is admitted, i.e. when it starts prefilling,
so one queued behind another with the same prefix hits the blocks the first computed.
As in SGLang's in-batch prefix caching, a waiting sequence whose next uncached block is
being computed by a running one is passed over until that block is done, rather than
computing it twice. Every sequence whose prefill finished earlier decodes one token.
The step lasts ``prefill / prefill_tokens_per_s`` plus, when anything decodes,
``decode_base_ms + decode_per_seq_ms * decoding``; then its tokens are delivered.

Unlike vLLM, a sequence reserves KV for its whole output on admission, so it is never
preempted; and decodes do not count against ``max_batched_tokens``.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from emulator.engine.kv_cache import Allocation, KVCache
from emulator.engine.metrics import EngineCounters, EngineSnapshot
from emulator.engine.prompt_blocks import PromptBlocks
from emulator.settings import EmulatorSettings

# How far the loop may fall behind its timeline and still catch up (by shortening the
# next sleeps): asyncio oversleeps each short step a little, which would slow the engine.
_MAX_LAG_S = 0.02

SequenceState = Literal["new", "waiting", "running", "finished", "aborted"]


class StepClock(Protocol):
    """Time source of the scheduler; tests inject a fake one that never really sleeps."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class LoopClock:
    """The running event loop's clock."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(frozen=True, slots=True)
class BatchParams:
    """Cost and limits of one engine; step times are multiplied by ``time_scale``."""

    block_tokens: int = 16
    prefill_tokens_per_s: float = 10_000.0
    decode_base_ms: float = 8.0
    decode_per_seq_ms: float = 0.15
    max_batched_tokens: int = 4096
    max_num_seqs: int = 256
    time_scale: float = 1.0

    @classmethod
    def from_settings(cls, settings: EmulatorSettings) -> BatchParams:
        return cls(
            block_tokens=settings.block_tokens,
            prefill_tokens_per_s=settings.prefill_tokens_per_s,
            decode_base_ms=settings.decode_base_ms,
            decode_per_seq_ms=settings.decode_per_seq_ms,
            max_batched_tokens=settings.max_batched_tokens,
            max_num_seqs=settings.max_num_seqs,
            time_scale=settings.time_scale,
        )

    def step_s(self, prefill_tokens: int, decoding: int) -> float:
        """Duration of a step that prefills ``prefill_tokens`` and decodes ``decoding`` seqs."""
        seconds = prefill_tokens / self.prefill_tokens_per_s
        if decoding:
            seconds += (self.decode_base_ms + self.decode_per_seq_ms * decoding) / 1000
        return seconds * self.time_scale


class EngineSequence:
    """One request in the engine: its prompt blocks, its progress and its output so far.

    ``width`` sequences decode in lockstep (``n`` choices); one step makes one token each.
    ``produced`` counts steps that made tokens; the first is the one finishing prefill.
    """

    __slots__ = (
        "_committed",
        "_waiter",
        "allocation",
        "block_ids",
        "cached_tokens",
        "computed",
        "output_tokens",
        "produced",
        "prompt_tokens",
        "state",
        "width",
    )

    def __init__(self, prompt: PromptBlocks, output_tokens: int, width: int = 1) -> None:
        if output_tokens < 1 or width < 1:
            raise ValueError("a sequence makes at least one token in at least one choice")
        self.prompt_tokens = prompt.tokens
        self.block_ids = prompt.block_ids
        self.output_tokens = output_tokens
        self.width = width
        self.state: SequenceState = "new"
        self.cached_tokens = 0
        self.computed = 0  # prompt tokens whose KV exists, cached ones included
        self.produced = 0
        self.allocation: Allocation | None = None
        self._committed = 0
        self._waiter: asyncio.Future[None] | None = None

    def kv_blocks(self, block_tokens: int) -> int:
        """Blocks held while running: prompt and whole output (shared ones included)."""
        tokens = self.prompt_tokens + self.output_tokens * self.width
        return max(len(self.block_ids), math.ceil(tokens / block_tokens))

    def cacheable_ids(self, block_tokens: int) -> tuple[bytes, ...]:
        # As in vLLM the last prompt token is always computed, for its logits.
        return self.block_ids[: (self.prompt_tokens - 1) // block_tokens]

    async def wait_for(self, produced: int) -> None:
        """Return once ``produced`` steps have made tokens; cancelled if the sequence is."""
        while self.produced < produced:
            if self.state in ("finished", "aborted"):
                raise asyncio.CancelledError
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            await waiter

    def _wake(self, *, abort: bool = False) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if abort:
                waiter.cancel()
            elif not waiter.done():
                waiter.set_result(None)


# A sequence and how many of its prompt tokens one step prefills.
PrefillChunk = tuple[EngineSequence, int]


class BatchScheduler:
    """Admission, chunked prefill and decode for one engine; the loop runs only while busy."""

    def __init__(
        self,
        params: BatchParams,
        cache: KVCache,
        counters: EngineCounters | None = None,
        clock: StepClock | None = None,
    ) -> None:
        self.params = params
        self.cache = cache
        self.counters = counters or EngineCounters()
        self._clock = clock or LoopClock()
        self._waiting: deque[EngineSequence] = deque()
        self._running: list[EngineSequence] = []
        self._running_width = 0
        self._pending: dict[bytes, int] = {}  # block id -> running sequences computing it
        self._finished_some = False
        self._deadline = 0.0
        self._task: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def running(self) -> int:
        return len(self._running)

    def fits(self, sequence: EngineSequence) -> bool:
        """Whether ``sequence`` could ever run: alone, with every other block evicted."""
        return sequence.kv_blocks(self.params.block_tokens) <= self.cache.capacity_blocks

    def submit(self, sequence: EngineSequence) -> None:
        """Queue ``sequence``; its tokens arrive through ``EngineSequence.wait_for``."""
        if sequence.state != "new":
            raise ValueError("a sequence is submitted once")
        if not self.fits(sequence):
            raise ValueError("sequence needs more KV blocks than the cache holds")
        sequence.state = "waiting"
        self._waiting.append(sequence)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def cancel(self, sequence: EngineSequence) -> None:
        """Take ``sequence`` out (client left); its shared blocks stay cached, unpinned."""
        if sequence.state == "waiting":
            self._waiting.remove(sequence)
        elif sequence.state == "running":
            self._release(sequence)
            self._running.remove(sequence)
        else:
            return
        sequence.state = "aborted"
        sequence._wake(abort=True)

    def snapshot(self, model_name: str) -> EngineSnapshot:
        cache = self.cache
        return EngineSnapshot(
            model_name,
            self.running,
            self.waiting,
            kv_usage=cache.used_blocks / cache.capacity_blocks,
            kv_held=cache.held_blocks / cache.capacity_blocks,
            counters=replace(self.counters, evicted_blocks=cache.evictions),
        )

    async def stop(self) -> None:
        """Stop the loop and abort every sequence."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait((task,))
        for sequence in [*self._waiting, *self._running]:
            self.cancel(sequence)

    async def _run(self) -> None:
        self._deadline = self._clock.now()
        try:
            while self._waiting or self._running:
                await self._step()
        finally:
            self._task = None

    async def _step(self) -> None:
        prefills, decoders, budget = self._plan()
        self._admit(prefills, budget)
        if not prefills and not decoders:
            # Nothing runs, yet the head cannot start: only a cache accounting bug gets
            # here; dropping the head beats spinning forever.
            self.cancel(self._waiting[0])
            return
        prefill_tokens = sum(tokens for _, tokens in prefills)
        duration = self.params.step_s(prefill_tokens, sum(seq.width for seq in decoders))
        held = self.cache.held_blocks / self.cache.capacity_blocks
        await self._sleep_step(duration)
        self._record(duration, prefill_tokens, held)
        self._apply(prefills, decoders)

    def _admit(self, prefills: list[PrefillChunk], budget: int) -> None:
        """Start waiting sequences while the step has prefill budget, KV and batch room."""
        waiting, limit = self._waiting, self.params.max_num_seqs
        block_tokens = self.params.block_tokens
        index = 0
        while budget and index < len(waiting):
            sequence = waiting[index]
            if self._running and self._running_width + sequence.width > limit:
                return
            cacheable = sequence.cacheable_ids(block_tokens)
            hits = self.cache.prefix_hits(cacheable)
            if hits < len(cacheable) and cacheable[hits] in self._pending:
                index += 1  # its prefix is being computed: it will hit once that is done
                continue
            allocation = self.cache.allocate(cacheable, sequence.kv_blocks(block_tokens))
            if allocation is None:
                return  # head-of-line blocking, as in vLLM's waiting queue
            del waiting[index]
            self._start(sequence, allocation)
            chunk = min(sequence.prompt_tokens - sequence.computed, budget)
            prefills.append((sequence, chunk))
            budget -= chunk

    def _start(self, sequence: EngineSequence, allocation: Allocation) -> None:
        cached = allocation.hits * self.params.block_tokens
        sequence.state = "running"
        sequence.allocation = allocation
        sequence.cached_tokens = sequence.computed = cached
        sequence._committed = allocation.hits
        self._mark_pending(sequence, +1)
        self._running.append(sequence)
        self._running_width += sequence.width
        counters = self.counters
        counters.prompt_tokens += sequence.prompt_tokens
        counters.prefix_cache_queries += sequence.prompt_tokens
        counters.prefix_cache_hits += cached

    def _plan(self) -> tuple[list[PrefillChunk], list[EngineSequence], int]:
        """Running sequences' prefill chunks, those to decode, and the token budget left."""
        budget = self.params.max_batched_tokens
        prefills: list[PrefillChunk] = []
        decoders: list[EngineSequence] = []
        for sequence in self._running:
            left = sequence.prompt_tokens - sequence.computed
            if not left:
                decoders.append(sequence)
            elif budget:
                chunk = min(left, budget)
                prefills.append((sequence, chunk))
                budget -= chunk
        return prefills, decoders, budget

    def _mark_pending(self, sequence: EngineSequence, delta: int) -> None:
        """Count (or uncount) the blocks ``sequence`` has yet to compute as pending."""
        for block_id in sequence.block_ids[sequence._committed :]:
            self._count_pending(block_id, delta)

    def _count_pending(self, block_id: bytes, delta: int) -> None:
        count = self._pending.get(block_id, 0) + delta
        if count > 0:
            self._pending[block_id] = count
        else:
            self._pending.pop(block_id, None)

    async def _sleep_step(self, duration: float) -> None:
        now = self._clock.now()
        self._deadline = max(self._deadline, now - _MAX_LAG_S) + duration
        # Sleep even for nothing: clients must get to read what the last step made.
        await self._clock.sleep(max(0.0, self._deadline - now))

    def _record(self, duration: float, prefill_tokens: int, held: float) -> None:
        counters = self.counters
        counters.steps += 1
        counters.step_busy_s += duration
        counters.kv_held_s += duration * held
        if prefill_tokens:
            counters.prefill_busy_s += duration

    def _apply(self, prefills: list[PrefillChunk], decoders: list[EngineSequence]) -> None:
        for sequence, tokens in prefills:
            if sequence.state == "running":  # not cancelled during the step
                sequence.computed += tokens
                self._commit_computed(sequence)
                if sequence.computed == sequence.prompt_tokens:
                    self._emit(sequence)
        for sequence in decoders:
            if sequence.state == "running":
                self._emit(sequence)
        if self._finished_some:
            self._finished_some = False
            self._running = [seq for seq in self._running if seq.state == "running"]

    def _commit_computed(self, sequence: EngineSequence) -> None:
        """Computed full prompt blocks become shared, so later prompts can hit them."""
        ids, allocation = sequence.block_ids, sequence.allocation
        assert allocation is not None
        ready = len(ids)
        if sequence.computed < sequence.prompt_tokens:
            ready = min(ready, sequence.computed // self.params.block_tokens)
        for index in range(sequence._committed, ready):
            block_id = ids[index]
            self.cache.commit(allocation, block_id)
            self._count_pending(block_id, -1)
        sequence._committed = max(sequence._committed, ready)

    def _emit(self, sequence: EngineSequence) -> None:
        sequence.produced += 1
        self.counters.generation_tokens += sequence.width
        if sequence.produced >= sequence.output_tokens:
            sequence.state = "finished"
            self._release(sequence)
            self._finished_some = True
        sequence._wake()

    def _release(self, sequence: EngineSequence) -> None:
        if sequence.allocation is not None:
            self._mark_pending(sequence, -1)
            self.cache.release(sequence.allocation)
        self._running_width -= sequence.width
