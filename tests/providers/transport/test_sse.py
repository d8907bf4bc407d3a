"""The one SSE decoder, fed the way networks deliver streams: split anywhere, any line end."""

from __future__ import annotations

import pytest

from providers.transport import sse
from providers.transport.sse import SseDecodeError, SseDecoder


def decode(reads: list[bytes], decoder: SseDecoder | None = None) -> list[bytes]:
    """Every payload of the reads, the stream's end (`flush`) included."""
    decoder = decoder or SseDecoder()
    return [payload for read in reads for payload in decoder.feed(read)] + decoder.flush()


STREAMS = {
    "openai": (
        b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n',
        [b'{"a":1}', b'{"b":2}', b"[DONE]"],
    ),
    "anthropic": (
        b'event: message_start\ndata: {"x":1}\n\nevent: ping\ndata: {}\n\n',
        [b'{"x":1}', b"{}"],
    ),
    "crlf": (b"data: a\r\n\r\ndata: b\r\n\r\n", [b"a", b"b"]),
    "lone-cr": (b"data: a\r\rdata: b\r\r", [b"a", b"b"]),
    "multi-line": (b"data: {\ndata:  1\ndata:}\n\n", [b"{\n 1\n}"]),
    "fields-and-comments": (
        b": keep-alive\n\nevent: x\nid: 7\nretry: 10\ndata: a\n: note\ndata: b\n\n",
        [b"a\nb"],
    ),
    "mixed-ends": (b": c\r\nevent: x\rdata: a\r\ndata:b\n\r\ndata:\r\n\r", [b"a\nb", b""]),
    "no-data": (b"event: x\n\n:\n\nid: 1\n\n", []),
    "last-without-blank-line": (
        b'data: {"a":1}\n\n: c\n\ndata: {"b":2}\r\n\r\ndata: [3]',
        [
            b'{"a":1}',
            b'{"b":2}',
            b"[3]",
        ],
    ),
}


@pytest.mark.parametrize(("stream", "expected"), STREAMS.values(), ids=STREAMS.keys())
def test_every_split_point_gives_the_same_events(stream: bytes, expected: list[bytes]) -> None:
    assert decode([stream]) == expected
    for at in range(len(stream) + 1):
        assert decode([stream[:at], stream[at:]]) == expected, at
    assert decode([stream[at : at + 1] for at in range(len(stream))]) == expected


@pytest.mark.parametrize(
    ("reads", "expected"),
    [
        pytest.param([b"data: a\r", b"\ndata: b\r\n\r\n"], [b"a\nb"], id="crlf-split"),
        pytest.param([b"data: a\r", b"", b"\ndata: b\r\n\r\n"], [b"a\nb"], id="empty-read-between"),
        pytest.param([b"data: a\r", b"\rdata: b\r\r"], [b"a", b"b"], id="cr-then-cr"),
        pytest.param([b"data: a\r\n\r", b"\ndata: b\n\n"], [b"a", b"b"], id="blank-line-split"),
        pytest.param([b"data: a\r", b"\n", b"\r", b"\n"], [b"a"], id="a-byte-a-read"),
        pytest.param([b"data: a\r", b"data: b\n\n"], [b"a\nb"], id="cr-then-whole-event"),
    ],
)
def test_a_cr_lf_pair_split_across_reads_is_one_line_end(
    reads: list[bytes], expected: list[bytes]
) -> None:
    assert decode(reads) == expected


@pytest.mark.parametrize(
    "reads",
    [
        [b"data: {}\n\n", b"data: [DONE]\n\n"],  # one event a read: taken whole
        [b"data: {}\n", b"\ndata: [DONE]\n\n"],  # split at the blank line
        [b"data: {}\r\n\r\n", b"data: [DONE]\r\n\r\n"],  # CRLF lines
        [b"data:", b" {}\n\n", b"data: [DONE]\n\n"],  # split in the field name
        [b"data: {}\n\ndata: [DONE]\n\n"],  # two events in one read
        [b"da", b"ta: {", b"}", b"\n\nda", b"ta: [DONE]", b"\r\n\r\n"],  # lines in pieces
        [b"data: {}\n\ndata: [DONE]\n\n\n\n"],  # extra blank lines
        [b"data:{}\n\ndata:[DONE]\n\n"],  # no space after the colon
    ],
    ids=["whole", "split-blank", "crlf", "split-field", "two", "pieces", "blank", "no-space"],
)
def test_the_same_payloads_however_the_reads_fall(reads: list[bytes]) -> None:
    assert decode(reads) == [b"{}", b"[DONE]"]


@pytest.mark.parametrize(
    ("reads", "fed", "flushed"),
    [
        pytest.param([b"data: [3]"], [], [b"[3]"], id="unfinished-line"),
        pytest.param([b"data: a\n"], [], [b"a"], id="no-blank-line"),
        pytest.param([b"data: a\ndata: b"], [], [b"a\nb"], id="two-lines"),
        pytest.param([b"data: a\r"], [], [b"a"], id="cr-ended"),
        pytest.param([b"data: a\n\n"], [b"a"], [], id="nothing-left"),
        pytest.param([b"data: a\n\n: comment"], [b"a"], [], id="a-comment-left"),
        pytest.param(
            [b'data: {"a":1}\n\n: c\n\ndata: {"b"', b":2}\r", b"\n\r\ndata: [3]"],
            [b'{"a":1}', b'{"b":2}'],
            [b"[3]"],
            id="gemini",
        ),
    ],
)
def test_flush_gives_the_last_event_without_its_blank_line(
    reads: list[bytes], fed: list[bytes], flushed: list[bytes]
) -> None:
    decoder = SseDecoder()
    assert [payload for read in reads for payload in decoder.feed(read)] == fed
    assert decoder.flush() == flushed
    assert decoder.flush() == []
    assert decoder.feed(b"data: next\n\n") == [b"next"]  # empty again, nothing carried over


CAP = 64


@pytest.mark.parametrize(
    ("reads", "says"),
    [
        pytest.param([b"data: " + b"x" * CAP], "an event line exceeds", id="line-in-one-read"),
        pytest.param([b"data: "] + [b"x" * 8] * 8, "an event line exceeds", id="line-in-pieces"),
        pytest.param([b"data: xx\r\n"] * 30, "an event's data exceeds", id="event-of-lines"),
        pytest.param([b"data:\n"] * (CAP + 1), "an event's data exceeds", id="empty-lines"),
        pytest.param([b"data: " + b"x" * CAP + b"\n"], "an event's data exceeds", id="one-line"),
    ],
)
def test_what_is_held_between_reads_is_bounded(
    monkeypatch: pytest.MonkeyPatch, reads: list[bytes], says: str
) -> None:
    monkeypatch.setattr(sse, "MAX_PENDING_BYTES", CAP)
    decoder = SseDecoder()
    with pytest.raises(SseDecodeError, match=says):
        for read in reads:
            decoder.feed(read)
    assert issubclass(SseDecodeError, ValueError)


@pytest.mark.parametrize(
    "reads",
    [
        pytest.param([b"data: " + b"x" * CAP + b"\n\n"], id="whole-event-one-read"),
        pytest.param([b"event: big\ndata: " + b"x" * CAP + b"\n\n"], id="whole-event-walked"),
        pytest.param([b"data: " + b"x" * 40, b"x" * 10, b"\n\n"], id="line-within-the-cap"),
    ],
)
def test_whole_events_pass_the_bound(monkeypatch: pytest.MonkeyPatch, reads: list[bytes]) -> None:
    """The bound is on what the decoder keeps between reads, not on what a read returns."""
    monkeypatch.setattr(sse, "MAX_PENDING_BYTES", CAP)
    assert len(decode(reads)) == 1


def test_a_long_line_in_many_reads_is_kept_in_pieces_and_bounded() -> None:
    piece = b"x" * (64 * 1024)
    decoder = SseDecoder()
    with pytest.raises(SseDecodeError):
        for _ in range(8 * 16 + 1):  # 8 MiB and a piece, no line end: appended, not rejoined
            decoder.feed(piece)
    long = SseDecoder()
    assert long.feed(b"data: " + piece) == []
    assert long.feed(piece) == [] and long.feed(b"\n\n") == [piece + piece]


@pytest.mark.parametrize(
    ("reads", "types"),
    [
        pytest.param([b"event: error\ndata: a\n\ndata: b\n\n"], [b"error", b""], id="walked"),
        pytest.param([b"data: a\n\ndata: b\n\n"], [b"", b""], id="sliced"),
        pytest.param([b"event: error\n", b"data: a\n\n"], [b"error"], id="type-then-data-read"),
        pytest.param([b"event:x\nevent: y\n\n", b"data: a\n\n"], [b""], id="reset-by-blank"),
        pytest.param([b"event: error\ndata: a"], [b"error"], id="flushed"),
    ],
)
def test_event_types_when_asked(reads: list[bytes], types: list[bytes]) -> None:
    decoder = SseDecoder(keep_event_types=True)
    assert len(decode(reads, decoder)) == len(types)
    assert decoder.event_types == types
    assert SseDecoder().event_types is None
