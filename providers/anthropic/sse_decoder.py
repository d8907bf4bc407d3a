"""Server-sent events, decoded incrementally: network reads in, complete `data` payloads out.

Reads split events anywhere (mid-line, mid-JSON), so lines are only taken once their end
has arrived. Only `data` fields matter: every Anthropic payload names its own `type`, so
the `event:` line is redundant and skipped with comments and other fields.
"""

from __future__ import annotations

MAX_PENDING_BYTES = 8 * 1024 * 1024
"""An unfinished line longer than this is a broken stream, not an event to wait for."""


class SseDecodeError(ValueError):
    pass


class SseDecoder:
    __slots__ = ("_data", "_partial")

    def __init__(self) -> None:
        self._partial = b""
        self._data: list[bytes] = []

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
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        if len(self._partial) > MAX_PENDING_BYTES:
            raise SseDecodeError(f"an event line exceeds {MAX_PENDING_BYTES} bytes")
        payloads: list[bytes] = []
        for line in lines:
            line = line.removesuffix(b"\r")
            if not line:
                # A blank line ends an event; its data lines are joined by newlines.
                if self._data:
                    payloads.append(b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                value = line[len(b"data:") :]
                self._data.append(value.removeprefix(b" "))
        return payloads
