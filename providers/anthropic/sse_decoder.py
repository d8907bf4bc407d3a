"""Server-sent events, decoded incrementally: network reads in, complete `data` payloads out.

Reads split events anywhere (mid-line, mid-JSON), so lines are only taken once their end
has arrived. Only `data` fields matter: every Anthropic payload names its own `type`, so
the `event:` line is redundant and skipped with comments and other fields.
"""

from __future__ import annotations

MAX_PENDING_BYTES = 8 * 1024 * 1024
"""An unfinished line, or an unfinished event's data lines, longer than this is a broken
stream, not an event to wait for."""


class SseDecodeError(ValueError):
    pass


class SseDecoder:
    __slots__ = ("_data", "_data_bytes", "_partial", "_partial_bytes")

    def __init__(self) -> None:
        self._partial: list[bytes] = []
        """The pieces of an unfinished line, joined once its end comes (not per read)."""
        self._partial_bytes = 0
        self._data: list[bytes] = []
        self._data_bytes = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The payloads of the events that `chunk` completes, in order."""
        if (
            not self._partial
            and not self._data
            and chunk.startswith(b"data: ")
            and chunk.endswith(b"\n\n")
            and chunk.count(b"\n") == 2
            and b"\r" not in chunk
        ):
            return [chunk[6:-2]]  # the usual read of a stream: one event, one data line
        lines: list[bytes] = []
        if b"\n" not in chunk:  # more of an unfinished line: kept, joined when it ends
            self._partial.append(chunk)
            self._partial_bytes += len(chunk)
        else:
            if self._partial:
                chunk = b"".join(self._partial) + chunk
            *lines, rest = chunk.split(b"\n")
            self._partial = [rest] if rest else []
            self._partial_bytes = len(rest)
        if self._partial_bytes > MAX_PENDING_BYTES:
            raise SseDecodeError(f"an event line exceeds {MAX_PENDING_BYTES} bytes")
        payloads: list[bytes] = []
        for line in lines:
            line = line.removesuffix(b"\r")
            if not line:
                # A blank line ends an event; its data lines are joined by newlines.
                if self._data:
                    payloads.append(b"\n".join(self._data))
                    self._data = []
                    self._data_bytes = 0
            elif line.startswith(b"data:"):
                value = line[len(b"data:") :].removeprefix(b" ")
                self._data.append(value)
                self._data_bytes += len(value)
                if self._data_bytes > MAX_PENDING_BYTES:
                    raise SseDecodeError(f"an event's data exceeds {MAX_PENDING_BYTES} bytes")
        return payloads
