"""A stream held before the client sees it: held until its end or a bound (content chunks,
seconds), the rest relayed in order after, upstream errors where the reader meets them,
and memory bounded by back-pressure."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from gateway.http.relay.held import QUEUE_CHUNKS, HeldStream
from providers.errors import UpstreamProtocolError, UpstreamTimeout
from providers.rate_limits import RateLimitSignal
from tests.gateway.http.openai_chunks import DONE, call, chunk

ROLE = chunk({"role": "assistant", "content": ""})
STOP = chunk({}, "stop")


def texts(*words: str) -> list[bytes]:
    return [chunk({"content": word}) for word in words]


class FakeUpstream:
    """An upstream stream: its first chunk, then `rest` chunk by chunk, each after
    `delay_s`; `error` raised after them; what was read and whether it was closed kept."""

    content_type = "text/event-stream"
    rate_limit: RateLimitSignal | None = None

    def __init__(
        self,
        first_chunk: bytes,
        rest: list[bytes] | Iterator[bytes],
        *,
        delay_s: float = 0.0,
        error: Exception | None = None,
        then_wait: bool = False,
    ) -> None:
        self.first_chunk = first_chunk
        self._rest = rest
        self._delay_s = delay_s
        self._error = error
        self._then_wait = then_wait
        self.produced = 0
        self.cancelled = False
        self.closed = False

    async def rest(self) -> AsyncIterator[bytes]:
        try:
            for item in self._rest:
                await asyncio.sleep(self._delay_s)  # a read: other tasks run meanwhile
                self.produced += 1
                yield item
            if self._error is not None:
                raise self._error
            if self._then_wait:
                await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise

    async def aclose(self) -> None:
        self.closed = True


async def drain(stream: HeldStream) -> list[bytes]:
    return [item async for item in stream.rest()]


async def test_a_stream_that_ends_within_the_hold_is_held_whole() -> None:
    upstream = FakeUpstream(ROLE, [*texts("Hel", "lo"), STOP, DONE])
    stream = HeldStream(upstream)
    held = await stream.hold(max_tokens=100, max_s=30)
    assert held.ended
    assert held.error is None
    assert held.tokens == 2
    assert held.data == ROLE + b"".join(texts("Hel", "lo")) + STOP + DONE
    assert stream.first_chunk == held.data
    assert await drain(stream) == []


async def test_a_hold_stops_at_max_tokens_and_the_rest_follows_in_order() -> None:
    rest = [*texts("a", "b", "c", "d"), STOP, DONE]
    stream = HeldStream(FakeUpstream(ROLE, rest))
    held = await stream.hold(max_tokens=2, max_s=30)
    assert not held.ended
    assert held.tokens == 2
    assert held.data == ROLE + rest[0] + rest[1]
    assert await drain(stream) == rest[2:]


async def test_role_only_and_empty_chunks_are_not_tokens() -> None:
    rest = [ROLE, chunk({"content": ""}), chunk({}), *texts("a", "b"), STOP, DONE]
    held = await HeldStream(FakeUpstream(ROLE, rest)).hold(max_tokens=1, max_s=30)
    assert held.tokens == 1
    assert held.data == ROLE + b"".join(rest[:4])


async def test_tool_call_parts_are_tokens() -> None:
    parts = [chunk(call(0, "", name="get_time")), chunk(call(0, '{"zone"')), chunk(call(0, ": 1}"))]
    held = await HeldStream(FakeUpstream(ROLE, [*parts, STOP, DONE])).hold(2, 30)
    assert held.tokens == 2
    assert held.data == ROLE + parts[0] + parts[1]


async def test_content_in_the_first_chunk_and_events_split_across_chunks_are_counted() -> None:
    first = ROLE + b"".join(texts("a", "b"))
    split = chunk({"content": "c"})
    held = await HeldStream(FakeUpstream(first, [split[:9], split[9:], DONE])).hold(100, 30)
    assert held.ended
    assert held.tokens == 3


@pytest.mark.usefixtures("virtual_time")
async def test_a_slow_stream_is_held_until_max_s_then_relayed() -> None:
    loop = asyncio.get_running_loop()
    rest = [*texts("a", "b", "c", "d"), STOP, DONE]
    stream = HeldStream(FakeUpstream(ROLE, rest, delay_s=1.0), clock=loop.time)
    started = loop.time()
    held = await stream.hold(max_tokens=100, max_s=2.5)
    assert loop.time() - started == pytest.approx(2.5)
    assert not held.ended
    assert held.tokens == 2
    assert held.data == ROLE + rest[0] + rest[1]
    assert await drain(stream) == rest[2:]


async def test_an_upstream_error_during_the_hold_is_returned() -> None:
    error = UpstreamTimeout("stalled", backend="small")
    stream = HeldStream(FakeUpstream(ROLE, texts("a"), error=error))
    held = await stream.hold(max_tokens=100, max_s=30)
    assert held.error is error
    assert not held.ended
    assert held.tokens == 1
    assert held.data == ROLE + texts("a")[0]


async def test_an_upstream_error_after_the_hold_is_raised_from_rest() -> None:
    error = UpstreamProtocolError("broken stream")
    stream = HeldStream(FakeUpstream(ROLE, texts("a", "b", "c"), error=error))
    held = await stream.hold(max_tokens=1, max_s=30)
    assert held.error is None
    relayed: list[bytes] = []
    with pytest.raises(UpstreamProtocolError) as raised:
        async for item in stream.rest():
            relayed.append(item)
    assert raised.value is error
    assert relayed == texts("b", "c")


async def test_aclose_cancels_the_pump_and_closes_the_upstream() -> None:
    upstream = FakeUpstream(ROLE, texts("a"), then_wait=True)
    stream = HeldStream(upstream)
    held = await stream.hold(max_tokens=5, max_s=0.05)
    assert held.tokens == 1 and not held.ended
    await stream.aclose()
    assert upstream.cancelled
    assert upstream.closed


async def test_aclose_after_the_end_closes_the_upstream() -> None:
    upstream = FakeUpstream(ROLE, [*texts("a"), DONE])
    stream = HeldStream(upstream)
    assert (await stream.hold(10, 30)).ended
    await stream.aclose()
    assert upstream.closed
    assert not upstream.cancelled


async def test_the_upstream_is_read_ahead_only_to_the_queue_bound() -> None:
    def endless() -> Iterator[bytes]:
        while True:
            yield chunk({"content": "x"})

    upstream = FakeUpstream(ROLE, endless())
    stream = HeldStream(upstream)
    for _ in range(3 * QUEUE_CHUNKS):
        await asyncio.sleep(0)
    # The first chunk and QUEUE_CHUNKS - 1 more queued, one in the pump's hand at most.
    assert QUEUE_CHUNKS - 1 <= upstream.produced <= QUEUE_CHUNKS + 1
    before = upstream.produced
    held = await stream.hold(max_tokens=10, max_s=30)
    assert held.tokens == 10
    for _ in range(3 * QUEUE_CHUNKS):
        await asyncio.sleep(0)
    assert before < upstream.produced <= before + 11
    await stream.aclose()
    assert upstream.closed


async def test_the_held_stream_tells_what_the_upstream_told() -> None:
    upstream = FakeUpstream(ROLE, [DONE])
    upstream.rate_limit = RateLimitSignal(retry_after_s=3.0)
    stream = HeldStream(upstream)
    assert stream.content_type == "text/event-stream"
    assert stream.rate_limit is upstream.rate_limit
    await stream.aclose()


async def test_rest_after_an_error_the_hold_took_raises_it_instead_of_waiting() -> None:
    error = UpstreamTimeout("stalled", backend="small")
    stream = HeldStream(FakeUpstream(ROLE, texts("a"), error=error))
    held = await stream.hold(max_tokens=100, max_s=30)
    assert held.error is error
    with pytest.raises(UpstreamTimeout):
        await asyncio.wait_for(drain(stream), 5)
    await stream.aclose()
