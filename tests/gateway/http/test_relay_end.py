"""How `relay` judges the end of an OpenAI stream: `[DONE]` or the backend's own error
event ends it cleanly, anything else gets the gateway's error event, whatever the sizes of
the chunks the end came in."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.http.streaming import StreamOutcome, relay
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

    async def aclose(self) -> None:
        self.closed = True


async def _relayed(stream: Stream) -> tuple[bytes, StreamOutcome]:
    outcome = StreamOutcome()
    out = b"".join([chunk async for chunk in relay(stream, float("inf"), outcome)])
    assert stream.closed
    return out, outcome


@pytest.mark.parametrize(
    "chunks",
    [
        (EVENT, EVENT + DONE),
        (EVENT, EVENT, DONE),
        # [DONE] cut in short pieces: the tail is put together across chunks.
        (EVENT, b"data: [DO", b"NE]\n", b"\n"),
        (EVENT, LONG_ERROR),
        (EVENT + LONG_ERROR,),
    ],
    ids=["done-in-a-long-chunk", "done-alone", "done-in-pieces", "long-error", "one-chunk"],
)
async def test_a_stream_that_ends_properly_is_relayed_as_it_came(chunks: tuple[bytes]) -> None:
    out, outcome = await _relayed(Stream(*chunks))
    assert out == b"".join(chunks)
    assert (outcome.error, outcome.status, outcome.chunks) == (None, "ok", len(chunks))


@pytest.mark.parametrize(
    "chunks",
    [(EVENT, EVENT), (EVENT,), (EVENT, DONE + EVENT + EVENT)],
    ids=["cut", "first-chunk-only", "events-after-done"],
)
async def test_a_stream_that_stops_short_gets_the_gateways_error_event(
    chunks: tuple[bytes],
) -> None:
    out, outcome = await _relayed(Stream(*chunks))
    assert out.startswith(b"".join(chunks))
    assert out[len(b"".join(chunks)) :].startswith(b'data: {"error"')
    assert outcome.error is not None and outcome.status == outcome.error.code
