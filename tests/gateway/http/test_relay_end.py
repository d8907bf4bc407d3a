"""How a relay judges the end of an OpenAI stream: `[DONE]` or the backend's own error
event as the last event ends it, anything else gets the gateway's error event, whatever the
sizes of the chunks the end came in; a stream that carried the backend's error event is
relayed as it came and recorded as the backend's failure; the same whether the stream is
pulled (`relay`) or spliced (`Splice`, the chunks pushed from callbacks)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gateway.errors import SwitchyardError
from gateway.http.relay.splice import Splice
from gateway.http.relay.streaming import RelayState, StreamOutcome, relay
from providers.base import StreamSink, StreamValve
from providers.rate_limits import RateLimitSignal

EVENT = b'data: {"choices": [{"index": 0, "delta": {"content": "some words here"}}]}\n\n'
DONE = b"data: [DONE]\n\n"
LONG_ERROR = b'data: {"error": {"message": "' + b"the engine ran out of memory " * 4 + b'"}}\n\n'


class Stream:
    """An upstream stream whose chunks are given."""

    content_type = "text/event-stream"
    rate_limit: RateLimitSignal | None = None

    def __init__(self, *chunks: bytes) -> None:
        self.first_chunk, *self._rest = chunks
        self.closed = False

    async def rest(self) -> AsyncIterator[bytes]:
        for chunk in self._rest:
            yield chunk

    @property
    def can_pipe(self) -> bool:
        return True

    def pipe(self, sink: StreamSink) -> StreamValve:
        """Each chunk from its own callback, as a connection's `data_received` would."""
        loop = asyncio.get_running_loop()
        for chunk in self._rest:
            loop.call_soon(sink.data, chunk)
        loop.call_soon(sink.end, None)
        return Valve()

    async def aclose(self) -> None:
        self.closed = True


class Valve:
    def pause(self) -> None:
        raise AssertionError("the writer never asks to pause")

    def resume(self) -> None:
        raise AssertionError("the writer never asks to pause")


class Body:
    """A client that takes everything at once."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> bool:
        if data:
            self.parts.append(data)
        return False

    async def writable(self) -> None:
        return None


@pytest.fixture(params=["pulled", "spliced"])
def way(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _relayed(stream: Stream, way: str) -> tuple[bytes, StreamOutcome]:
    outcome = StreamOutcome()
    state = RelayState(float("inf"), outcome, stream.content_type)
    if way == "pulled":
        out = b"".join([chunk async for chunk in relay(stream, state)])
    else:
        body = Body()
        await Splice(stream, state).run(body)
        out = b"".join(body.parts)
    assert stream.closed
    return out, outcome


@pytest.mark.parametrize(
    "chunks",
    [
        (EVENT, EVENT + DONE),
        (EVENT, EVENT, DONE),
        # [DONE] cut in short pieces: the tail is put together across chunks.
        (EVENT, b"data: [DO", b"NE]\n", b"\n"),
        (EVENT, b"data: [DONE]\r\n\r\n"),
    ],
    ids=["done-in-a-long-chunk", "done-alone", "done-in-pieces", "done-crlf"],
)
async def test_a_stream_that_ends_properly_is_relayed_as_it_came(
    chunks: tuple[bytes], way: str
) -> None:
    out, outcome = await _relayed(Stream(*chunks), way)
    assert out == b"".join(chunks)
    assert (outcome.error, outcome.status, outcome.chunks) == (None, "ok", len(chunks))


@pytest.mark.parametrize(
    "chunks",
    [
        (EVENT, LONG_ERROR),
        (EVENT + LONG_ERROR,),
        # vLLM's way: the error event, then [DONE].
        (EVENT, LONG_ERROR, DONE),
        # The error event's start split across two of the taps' batches.
        (EVENT * 250 + b'data: {"err', b'or": {"message": "x"}}\n\n', DONE),
    ],
    ids=["long-error", "one-chunk", "error-then-done", "error-across-batches"],
)
async def test_a_stream_with_the_backends_error_event_is_relayed_and_its_failure_recorded(
    chunks: tuple[bytes], way: str
) -> None:
    out, outcome = await _relayed(Stream(*chunks), way)
    assert out == b"".join(chunks), "the backend's own error event reaches the client as it came"
    assert outcome.status == "upstream_stream_error"
    assert outcome.error is not None and outcome.error.retryable


# Text of the answer that reads "data: [DONE]" is inside a JSON string, never a line.
QUOTING_DONE = b'data: {"choices": [{"index": 0, "delta": {"content": "then data: [DONE]"}}]}\n\n'


@pytest.mark.parametrize(
    "chunks",
    [(EVENT, EVENT), (EVENT,), (EVENT, DONE + EVENT + EVENT), (EVENT, QUOTING_DONE)],
    ids=["cut", "first-chunk-only", "events-after-done", "done-in-the-text"],
)
async def test_a_stream_that_stops_short_gets_the_gateways_error_event(
    chunks: tuple[bytes], way: str
) -> None:
    out, outcome = await _relayed(Stream(*chunks), way)
    assert out.startswith(b"".join(chunks))
    assert out[len(b"".join(chunks)) :].startswith(b'data: {"error"')
    assert outcome.error is not None and outcome.status == outcome.error.code


class BrokenShape:
    """A client format whose translation has a bug on the second chunk."""

    done = False

    def __init__(self) -> None:
        self.seen = 0

    def chunk(self, data: bytes) -> bytes:
        self.seen += 1
        if self.seen == 2:
            raise RuntimeError("a bug in the gateway")
        return data

    def end(self) -> bytes:
        return b""

    def failed(self, state: RelayState, exc: Exception) -> bytes:
        assert isinstance(exc, SwitchyardError)
        state.failed(exc)
        return b"<failed %b>" % (exc.code or "").encode()


async def test_a_bug_in_a_splice_callback_is_the_gateways_error_not_the_backends() -> None:
    stream = Stream(EVENT, EVENT, EVENT, DONE)
    outcome = StreamOutcome()
    state = RelayState(float("inf"), outcome, stream.content_type)
    body = Body()
    await asyncio.wait_for(Splice(stream, state, BrokenShape()).run(body), 5)
    assert b"".join(body.parts) == EVENT + b"<failed internal_error>"
    assert outcome.status == "internal_error" and outcome.error is not None
    assert not outcome.error.retryable, "not counted against the backend"
    assert stream.closed
