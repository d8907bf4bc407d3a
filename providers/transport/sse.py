"""Server-sent events decoded incrementally: network reads in, each event's `data` out.

The product's one SSE decoder (STYLE 15). Everything that reads an event stream goes
through it: the adapters translating an upstream's own stream (Anthropic, Gemini), the
gateway's relay translating OpenAI chunks into another client format, and the usage and
quality taps reading a stream at its end. It sits in `providers/transport` because it is
wire framing under the adapters, and the gateway may import `providers` but never the
reverse.

Reads split events anywhere (mid-line, mid-JSON, between the CR and the LF of one line
end), so a line is only taken once its end has arrived: LF, CRLF or a lone CR, as the SSE
spec allows. Only `data` fields are kept, an event's several lines joined by LF; comments,
`id` and `retry` are skipped, and `event` too unless asked for (`keep_event_types`). What
the decoder holds between reads is bounded: an unfinished line, or an unfinished event's
data, longer than `MAX_PENDING_BYTES` is a broken stream, not an event to wait for, and
raises `SseDecodeError` (a ValueError each caller maps into its own error tree).

Most reads of a stream are whole events of one LF-ended `data:` line each with nothing
pending: those are sliced out without walking lines (one event, the usual read, or many).
"""

from __future__ import annotations

from operator import itemgetter

MAX_PENDING_BYTES = 8 * 1024 * 1024
"""An unfinished line, or an unfinished event's data, longer than this is a broken stream."""
_CR, _LF = 0x0D, 0x0A
"""Looked for as ints: `_CR in chunk` is one memchr, where a one-byte bytes needle goes
through the substring search, several times slower on a short read (CPython 3.11)."""
_AFTER_DATA_FIELD = itemgetter(slice(len(b"data: "), None))
"""`line[6:]` of a `data: ` line, mapped in C over many lines (no Python step per line)."""


class SseDecodeError(ValueError):
    """The stream cannot be events: something pending grew past `MAX_PENDING_BYTES`."""


class SseDecoder:
    """One stream's decoder: `feed` each read, `flush` when the stream has ended."""

    __slots__ = (
        "_after_cr",
        "_data",
        "_data_bytes",
        "_event_type",
        "_idle",
        "_partial",
        "_partial_bytes",
        "event_types",
    )

    def __init__(self, *, keep_event_types: bool = False) -> None:
        self._partial: list[bytes] = []
        """The pieces of an unfinished line, joined once its end comes (not per read)."""
        self._partial_bytes = 0
        self._data: list[bytes] = []
        """The data lines of an unfinished event."""
        self._data_bytes = 0
        self._event_type = b""
        self._idle = True
        """No line, data or type is pending: a read of whole events may be sliced."""
        self._after_cr = False
        """The last read ended with a CR: an LF that starts the next one ends no line."""
        self.event_types: list[bytes] | None = [] if keep_event_types else None
        """With `keep_event_types`: the `event` field (b"" without one) of each event
        returned so far, in order. For a decoder fed a whole stream once (the quality tap
        reads `event: error`), as the list grows with the stream."""

    def feed(self, chunk: bytes) -> list[bytes]:
        """The payloads of the events `chunk` completes, in order."""
        if _CR in chunk or self._after_cr:
            chunk = self._lf_ended(chunk)
        if self._idle and chunk.startswith(b"data: ") and chunk.endswith(b"\n\n"):
            # The first LF is the last but one: one event, the usual read of a stream.
            if chunk.find(_LF) == len(chunk) - 2:
                payloads: list[bytes] | None = [chunk[6:-2]]
            else:
                payloads = _one_line_events(chunk)
            if payloads is not None:
                if self.event_types is not None:
                    self.event_types += [b""] * len(payloads)
                return payloads
        if not chunk:
            return []
        if _LF not in chunk:  # more of an unfinished line: kept, joined when it ends
            self._partial.append(chunk)
            self._partial_bytes += len(chunk)
            lines: list[bytes] = []
        else:
            if self._partial:
                self._partial.append(chunk)
                chunk = b"".join(self._partial)
            lines = chunk.split(b"\n")
            rest = lines.pop()
            self._partial = [rest] if rest else []
            self._partial_bytes = len(rest)
        if self._partial_bytes > MAX_PENDING_BYTES:
            raise SseDecodeError(f"an event line exceeds {MAX_PENDING_BYTES} bytes")
        return self._events(lines)

    def flush(self) -> list[bytes]:
        """The last event, when the stream ended without the blank line after it (an
        unfinished last line counts as ended): the end read as a line end and a blank line."""
        return self.feed(b"\n\n")

    def _lf_ended(self, chunk: bytes) -> bytes:
        """The read with every line end an LF (CRLF and lone CRs are line ends too)."""
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]  # the LF of a CRLF split across reads
        if _CR in chunk:
            self._after_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return chunk

    def _events(self, lines: list[bytes]) -> list[bytes]:
        """The payloads of the events these lines end; an unfinished one's lines are kept."""
        payloads: list[bytes] = []
        data, data_bytes = self._data, self._data_bytes
        types, event_type = self.event_types, self._event_type
        for line in lines:
            if not line:  # a blank line ends an event
                if data:
                    payloads.append(b"\n".join(data))
                    data.clear()
                    data_bytes = 0
                    if types is not None:
                        types.append(event_type)
                event_type = b""
            elif line.startswith(b"data:"):
                value = line[6:] if line.startswith(b" ", 5) else line[5:]
                data.append(value)
                data_bytes += len(value) + 1  # and the LF that joins it
            elif types is not None and line.startswith(b"event:"):
                event_type = line[7:] if line.startswith(b" ", 6) else line[6:]
        self._data_bytes, self._event_type = data_bytes, event_type
        if data_bytes > MAX_PENDING_BYTES:
            raise SseDecodeError(f"an event's data exceeds {MAX_PENDING_BYTES} bytes")
        self._idle = not (self._partial or data or event_type)
        return payloads


def _one_line_events(chunk: bytes) -> list[bytes] | None:
    """The payloads of a read of whole events of one `data: ` line each, LF-ended; None for
    any other read. Every other line must be blank, and the others start with `data: `:
    exactly the lines between that prefix and its successor `data:!` in byte order, which
    `min` and `max` check without a Python step per line."""
    lines = chunk.split(b"\n")
    events = lines[:-1:2]
    if any(lines[1::2]) or min(events) < b"data: " or max(events) >= b"data:!":
        return None
    return list(map(_AFTER_DATA_FIELD, events))
