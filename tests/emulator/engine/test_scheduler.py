"""Continuous batching on a fake clock: prefill cost, decode cost, admission, cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from emulator.engine.kv_cache import KVCache
from emulator.engine.prompt_blocks import PromptBlocks
from emulator.engine.scheduler import BatchParams, BatchScheduler, EngineSequence

DECODE_ONE_S = (8 + 0.15) / 1000  # default step cost with one sequence decoding


class FakeClock:
    """Sleeps take no real time. Waiters run at the old time, then the clock advances."""

    def __init__(self) -> None:
        self.now_s = 0.0
        self.sleeps: list[float] = []
        self.after_step: Callable[[], None] | None = None

    def now(self) -> float:
        return self.now_s

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0)
        self.sleeps.append(seconds)
        self.now_s += seconds
        if self.after_step is not None:
            self.after_step()


def _prompt(tokens: int, tag: str = "p") -> PromptBlocks:
    return PromptBlocks(tokens, tuple(f"{tag}{index}".encode() for index in range(tokens // 16)))


def _engine(capacity_tokens: int = 1_000_000, **params: Any) -> tuple[BatchScheduler, FakeClock]:
    clock = FakeClock()
    batch = BatchParams(**params)
    scheduler = BatchScheduler(batch, KVCache(capacity_tokens // batch.block_tokens), clock=clock)
    return scheduler, clock


async def _time_to_first_token(
    scheduler: BatchScheduler, clock: FakeClock, sequence: EngineSequence
) -> float:
    started = clock.now()
    scheduler.submit(sequence)
    await sequence.wait_for(1)
    return clock.now() - started


def test_step_cost_formula() -> None:
    params = BatchParams(time_scale=0.5)
    assert params.step_s(1000, 2) == pytest.approx((0.1 + 0.0083) * 0.5)
    assert params.step_s(1000, 0) == pytest.approx(0.05)
    assert params.step_s(0, 1) == pytest.approx(DECODE_ONE_S * 0.5)


async def test_prefill_time_follows_uncached_tokens() -> None:
    scheduler, clock = _engine()
    prompt = _prompt(8000)
    first = EngineSequence(prompt, output_tokens=4)
    cold = await _time_to_first_token(scheduler, clock, first)
    await first.wait_for(4)
    second = EngineSequence(prompt, output_tokens=4)
    warm = await _time_to_first_token(scheduler, clock, second)
    assert (first.cached_tokens, second.cached_tokens) == (0, 7984)  # last token recomputed
    assert cold == pytest.approx(0.8)  # 8000 tokens at 10k/s, in chunks of 4096
    assert warm == pytest.approx(16 / 10_000)
    assert cold / warm > 100
    counters = scheduler.counters
    assert (counters.prefix_cache_queries, counters.prefix_cache_hits) == (16000, 7984)
    assert counters.prefill_busy_s == pytest.approx(0.8 + 0.0016)
    # 8,000 prompt + 4 output tokens: 501 of 62,500 blocks held in every step so far (the
    # second sequence pins the first's cached blocks): the first's two prefill and three
    # decode steps, the second's one prefill step.
    steps = 0.8 + 3 * DECODE_ONE_S + 0.0016
    assert counters.kv_held_s == pytest.approx(501 / 62_500 * steps)


async def test_chunked_prefill_is_first_come_first_served() -> None:
    scheduler, clock = _engine()
    first, second = EngineSequence(_prompt(6000, "a"), 2), EngineSequence(_prompt(6000, "b"), 2)
    scheduler.submit(first)
    scheduler.submit(second)
    await first.wait_for(1)
    assert clock.now() == pytest.approx(0.8192)  # 4096, then 1904 + 2192 of the second
    await second.wait_for(1)
    # The last 3808 tokens share their step with the first sequence's decode.
    assert clock.now() == pytest.approx(0.8192 + 0.3808 + DECODE_ONE_S)


@pytest.mark.parametrize("batch", [1, 16, 64, 200])
async def test_decode_step_grows_with_batch(batch: int) -> None:
    scheduler, clock = _engine()
    sequences = [EngineSequence(_prompt(17, f"s{i}"), output_tokens=11) for i in range(batch)]
    for sequence in sequences:
        scheduler.submit(sequence)
    await sequences[0].wait_for(1)
    started = clock.now()
    await sequences[0].wait_for(11)
    step = (clock.now() - started) / 10
    assert step == pytest.approx((8 + 0.15 * batch) / 1000)


async def test_admission_waits_while_the_cache_is_full() -> None:
    scheduler, clock = _engine(capacity_tokens=128)  # 8 blocks; each sequence needs 7
    cache = scheduler.cache

    def check_capacity() -> None:
        assert cache.used_blocks <= cache.capacity_blocks

    clock.after_step = check_capacity
    first, second = EngineSequence(_prompt(64, "a"), 40), EngineSequence(_prompt(64, "b"), 40)
    scheduler.submit(first)
    scheduler.submit(second)
    await first.wait_for(1)
    assert (scheduler.running, scheduler.waiting, second.state) == (1, 1, "waiting")
    await first.wait_for(40)
    finished_at = clock.now()
    await second.wait_for(1)
    assert clock.now() > finished_at
    assert cache.evictions > 0  # the first sequence's cached blocks made room


async def test_max_num_seqs_limits_the_batch() -> None:
    scheduler, _ = _engine(max_num_seqs=2)
    sequences = [EngineSequence(_prompt(20, f"s{index}"), output_tokens=5) for index in range(3)]
    for sequence in sequences:
        scheduler.submit(sequence)
    await sequences[0].wait_for(1)
    assert (scheduler.running, scheduler.waiting) == (2, 1)
    await sequences[2].wait_for(5)


async def test_output_has_exactly_the_requested_length() -> None:
    scheduler, _ = _engine()
    sequence = EngineSequence(_prompt(100), output_tokens=37, width=2)
    scheduler.submit(sequence)
    await sequence.wait_for(37)
    assert (sequence.produced, sequence.state) == (37, "finished")
    assert scheduler.counters.generation_tokens == 74
    with pytest.raises(asyncio.CancelledError):
        await sequence.wait_for(38)
    assert scheduler.cache.pinned_blocks == 0


async def test_cancel_unpins_and_keeps_blocks_cached() -> None:
    scheduler, _ = _engine()
    running = EngineSequence(_prompt(320), output_tokens=1000)
    scheduler.submit(running)
    await running.wait_for(1)
    cache = scheduler.cache
    assert cache.pinned_blocks == 20
    scheduler.cancel(running)
    assert (scheduler.running, running.state) == (0, "aborted")
    assert cache.pinned_blocks == 0
    assert cache.used_blocks == cache.cached_blocks == 20
    again = EngineSequence(_prompt(320), output_tokens=1)
    scheduler.submit(again)
    await again.wait_for(1)
    assert again.cached_tokens == 304


async def test_cancel_while_waiting_and_stop() -> None:
    scheduler, _ = _engine(capacity_tokens=128)
    first, second, third = (EngineSequence(_prompt(64, tag), 40) for tag in "abc")
    for sequence in (first, second, third):
        scheduler.submit(sequence)
    await first.wait_for(1)
    scheduler.cancel(second)
    assert (second.state, scheduler.waiting) == ("aborted", 1)
    await scheduler.stop()
    assert {first.state, third.state} == {"aborted"}
    with pytest.raises(asyncio.CancelledError):
        await third.wait_for(1)
    assert scheduler.cache.pinned_blocks == 0


async def test_a_sequence_larger_than_the_cache_is_refused() -> None:
    scheduler, _ = _engine(capacity_tokens=160)
    too_big = EngineSequence(_prompt(150), output_tokens=20)
    assert not scheduler.fits(too_big)
    with pytest.raises(ValueError):
        scheduler.submit(too_big)
    fitting = EngineSequence(_prompt(150), output_tokens=10)
    scheduler.submit(fitting)
    with pytest.raises(ValueError):
        scheduler.submit(fitting)
    await fitting.wait_for(10)


async def test_a_queued_sequence_looks_up_the_cache_when_it_starts() -> None:
    # The second prompt does not fit this step's token budget beside the first, so it
    # starts a step later, when the first one's blocks are computed.
    scheduler, _ = _engine(max_batched_tokens=2048)
    first, second = (EngineSequence(_prompt(2000, "same"), 2) for _ in range(2))
    scheduler.submit(first)
    scheduler.submit(second)
    await second.wait_for(2)
    assert (first.cached_tokens, second.cached_tokens) == (0, 1984)


async def test_identical_prompts_arriving_together_are_computed_once() -> None:
    scheduler, clock = _engine()
    burst = [EngineSequence(_prompt(2048, "shared"), 2) for _ in range(8)]
    other = EngineSequence(_prompt(512, "other"), 2)
    for sequence in [*burst, other]:
        scheduler.submit(sequence)
    await other.wait_for(1)
    # The other prompt is not held up behind the followers waiting for the shared blocks.
    assert clock.now() == pytest.approx((2048 + 512) / 10_000)
    for sequence in burst:
        await sequence.wait_for(2)
    assert [sequence.cached_tokens for sequence in burst] == [0] + [2032] * 7
    counters = scheduler.counters
    assert counters.prefix_cache_hits == 7 * 2032


async def test_cancelling_the_sequence_computing_a_prefix_releases_its_followers() -> None:
    scheduler, _ = _engine(max_batched_tokens=512)
    leader, follower = (EngineSequence(_prompt(4096, "shared"), 2) for _ in range(2))
    scheduler.submit(leader)
    scheduler.submit(follower)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    scheduler.cancel(leader)
    await follower.wait_for(2)
    assert follower.state == "finished"
    assert scheduler.cache.pinned_blocks == 0
