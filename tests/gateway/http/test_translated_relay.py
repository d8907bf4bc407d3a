"""The chunk loop the translating ingresses share: what a client format is told of the
backend's chunks, and how the relay ends a stream that fails, breaks or stops short."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.http.openai_reply import ChatReply, MessageOut
from gateway.http.streaming import StreamOutcome
from gateway.http.translated_relay import StreamSummary, TranslatedStream, relay_translated
from providers.errors import ApiError, UpstreamTimeout
from tests.gateway.http.openai_chunks import DONE, TEXT_STREAM, chunk, feed_in_pieces


class Recorder:
    """A client format that names what it is told."""

    def __init__(self) -> None:
        self.started = False
        self.summary: StreamSummary | None = None

    def start(self, chunk: ChatReply | None) -> bytes:
        if self.started:
            return b""
        self.started = True
        return b"<start>"

    def delta(self, delta: MessageOut) -> bytes:
        return f"<{delta.content}>".encode() if delta.content else b""

    def end(self, summary: StreamSummary) -> bytes:
        self.summary = summary
        return b"<end>"

    def fail(self, error: ApiError) -> bytes:
        return f"<fail {error.code}>".encode()


def test_chunks_are_told_in_order_and_summed_up() -> None:
    recorder = Recorder()
    translator, out = feed_in_pieces(recorder, TEXT_STREAM, 3)
    assert out == b"<start><Hel><lo><end>"
    assert translator.finished and translator.failure is None
    summary = recorder.summary
    assert summary is not None and summary.usage is not None
    assert (summary.finish_reason, summary.output_chunks) == ("stop", 2)
    assert (summary.usage.prompt_tokens, summary.usage.cached_tokens) == (10, 4)


def test_a_backend_error_event_fails_the_stream_and_nothing_follows() -> None:
    error = b'data: {"error": "engine fell over"}\n\n'
    translator, out = feed_in_pieces(Recorder(), chunk({"content": "a"}) + error + DONE)
    assert out == b"<start><a><fail bad_gateway>"
    assert translator.finished and translator.failure is None


def test_unreadable_bytes_set_failure() -> None:
    translator, out = feed_in_pieces(Recorder(), chunk({"content": "a"}) + b"data: {nope\n\n")
    assert out == b"<start><a>"
    assert translator.failure is not None and not translator.finished


async def relayed(
    parts: list[bytes], outcome: StreamOutcome, *, error_before: int | None = None
) -> tuple[bytes, bool]:
    """What the client gets, and whether the relayed chunks were closed; `error_before`: the
    relay records its own error before that part."""
    closed = False

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal closed
        try:
            for position, part in enumerate(parts):
                if position == error_before:
                    outcome.error = UpstreamTimeout("too slow")
                yield part
        finally:
            closed = True

    stream = TranslatedStream(Recorder())
    out = b"".join([part async for part in relay_translated(chunks(), outcome, stream)])
    return out, closed


async def test_a_whole_stream_is_relayed() -> None:
    outcome = StreamOutcome()
    out, closed = await relayed([chunk({"content": "a"}), DONE], outcome)
    assert out == b"<start><a><end>" and closed
    assert outcome.error is None and outcome.status == "ok"


async def test_the_relays_own_error_ends_the_stream() -> None:
    out, closed = await relayed(
        [chunk({"content": "a"}), b"", DONE], StreamOutcome(), error_before=1
    )
    assert out == b"<start><a><fail upstream_timeout>" and closed


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([chunk({"content": "a"}), b"data: {nope\n\n", DONE], "unreadable stream chunk"),
        ([chunk({"content": "a"})], "before its end"),
    ],
    ids=["unreadable", "short"],
)
async def test_an_unreadable_or_short_stream_is_ended_by_the_gateway(
    parts: list[bytes], message: str
) -> None:
    outcome = StreamOutcome()
    out, closed = await relayed(parts, outcome)
    assert out == b"<start><a><fail upstream_protocol_error>" and closed
    assert outcome.error is not None and message in outcome.error.message
    assert outcome.status == "upstream_protocol_error"
