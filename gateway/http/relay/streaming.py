"""Relaying a committed upstream stream to the client, byte for byte (but for the model
field, when the backend was asked for another id than the route's name).

A stream always ends with the backend's `data: [DONE]` (as its last event) or an error
event, the backend's own or the gateway's: never a silent truncation. A stream that
carried the backend's own error event is relayed as it came and recorded as the
backend's failure. A client that goes away cancels the upstream request at once.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from gateway.errors import SwitchyardError
from gateway.http.responses import error_event
from providers.errors import UpstreamError, UpstreamProtocolError, UpstreamTimeout
from providers.usage import UsageTap

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from starlette.types import Receive

    from gateway.http.model_rename import StreamRenamer
    from gateway.quality.signals.collect import StreamCollector
    from gateway.tracing.finish_reasons import FinishReasonTap
    from providers.base import UpstreamStream

_DONE = b"data: [DONE]"
_ERROR_EVENT = b'data: {"error"'
"""An OpenAI-style error event; never inside a JSON string, whose quotes are escaped."""
_TAIL_BYTES = 64
_BATCH_BYTES = 16 * 1024
"""Chunks held back from the taps at most (then handed over in one piece)."""


class StreamOutcome:
    """What happened to one relayed stream; filled in as it runs.

    The chunks reach the usage and quality taps in batches (`settle`): per chunk, only a
    count and a list append, so the relay's per-chunk path touches little code.
    """

    __slots__ = (
        "_held",
        "_held_bytes",
        "_tail",
        "chunks",
        "collector",
        "error",
        "error_event",
        "finish_tap",
        "first_chunk_at",
        "last_chunk_at",
        "status",
        "tap",
    )

    def __init__(self, collector: StreamCollector | None = None) -> None:
        self.chunks = 0
        self.error: SwitchyardError | None = None
        self.error_event = False
        """The backend sent an error event (seen once the chunks are settled)."""
        self.first_chunk_at: float | None = None
        self.last_chunk_at = 0.0
        self.status = "ok"
        self.tap = UsageTap()
        """The usage of the stream; read after `settle()`."""
        self.collector = collector
        """Keeps the stream's bytes (bounded) for the quality signals, parsed at the end;
        read after `settle()`."""
        self.finish_tap: FinishReasonTap | None = None
        """Reads the finish reasons for a sampled trace (`gateway.tracing`)."""
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._tail = b""

    def observe(self, chunk: bytes) -> None:
        """One upstream chunk, as the backend sent it, for the usage and quality taps."""
        self.chunks += 1
        self._held.append(chunk)
        self._held_bytes += len(chunk)
        if self._held_bytes >= _BATCH_BYTES:
            self.settle()

    def settle(self) -> None:
        """Hand the chunks held so far to the taps."""
        if not self._held:
            return
        held = self._held
        data = held[0] if len(held) == 1 else b"".join(held)
        self._held = []
        self._held_bytes = 0
        self.tap.feed(data)
        if self.collector is not None:
            self.collector.feed(data)
        if self.finish_tap is not None:
            self.finish_tap.feed(data)
        if not self.error_event:
            self.error_event = _ERROR_EVENT in data or _ERROR_EVENT in (
                self._tail[-len(_ERROR_EVENT) :] + data[: len(_ERROR_EVENT)]  # across batches
            )
        self._tail = data if len(data) >= _TAIL_BYTES else (self._tail + data)[-_TAIL_BYTES:]

    @property
    def tail(self) -> bytes:
        """The upstream stream's last bytes (at least the last `_TAIL_BYTES`, or all of a
        shorter stream), to see how it ended."""
        self.settle()
        return self._tail


class RelayState:
    """One relayed stream's bookkeeping, chunk by chunk, for both ways of relaying it: the
    pulled `relay` and the callback-driven `Splice` (gateway/http/relay/splice.py)."""

    __slots__ = ("_clock", "_deadline", "_is_sse", "_rename", "late", "outcome")

    def __init__(
        self,
        deadline: float,
        outcome: StreamOutcome,
        content_type: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        rename: StreamRenamer | None = None,
    ) -> None:
        self._deadline = deadline
        self.outcome = outcome
        self._is_sse = content_type.startswith("text/event-stream")
        self._clock = clock
        self._rename = rename
        self.late = False
        """The last chunk came past the request's deadline: relay it, then end."""

    def begin(self, first_chunk: bytes) -> bytes:
        """The bytes to send for the stream's first chunk."""
        outcome = self.outcome
        outcome.first_chunk_at = outcome.last_chunk_at = self._clock()
        outcome.observe(first_chunk)
        return first_chunk if self._rename is None else self._rename.feed(first_chunk)

    def chunk(self, chunk: bytes) -> bytes:
        """The bytes to send for one more chunk; sets `late` past the deadline."""
        outcome = self.outcome
        outcome.observe(chunk)
        outcome.last_chunk_at = now = self._clock()
        if now > self._deadline:
            self.late = True
        return chunk if self._rename is None else self._rename.feed(chunk)

    def left_s(self) -> float:
        """Seconds left before the request's deadline (negative past it)."""
        return self._deadline - self._clock()

    def overdue(self) -> UpstreamTimeout:
        # The gateway's own deadline, not the backend's fault: its own code, which the
        # quality signals do not count as an error of the backend.
        return UpstreamTimeout(
            "request exceeded its total deadline mid-stream", code="request_deadline"
        )

    def held(self) -> bytes:
        """What the renamer still holds once the backend's stream has ended."""
        return b"" if self._rename is None else self._rename.flush()

    def check_end(self) -> None:
        """Raises UpstreamProtocolError when an SSE stream's last event is neither `[DONE]`
        nor an error event. One that carried the backend's own error event anywhere is
        recorded as the backend's failure (`upstream_stream_error`), relayed as it came."""
        if not self._is_sse:
            return
        outcome = self.outcome
        last = outcome.tail.rstrip().rsplit(b"\n", 1)[-1].rstrip()
        if outcome.error_event and outcome.error is None:
            outcome.error = backend_error_event()
            outcome.status = "upstream_stream_error"
        if last != _DONE and not last.startswith(_ERROR_EVENT):
            raise UpstreamProtocolError("backend ended the stream without [DONE]")

    def failed(self, exc: SwitchyardError) -> bytes:
        """The stream broke: what to send to end it (held bytes, then an error event)."""
        self.outcome.error = exc
        self.outcome.status = exc.code or "error"
        return self.held() + error_event(exc)


def backend_error_event() -> UpstreamError:
    """The backend sent its own error event mid-stream. Its message is not quoted: it may
    echo the request, the provider's key with it."""
    return UpstreamError(
        "backend ended the stream with an error event", code="upstream_stream_error"
    )


async def relay(stream: UpstreamStream, state: RelayState) -> AsyncIterator[bytes]:
    """Yield the upstream bytes (renamed, if the state says so); finish with an error event
    if the stream breaks."""
    try:
        if out := state.begin(stream.first_chunk):
            yield out
        async for chunk in stream.rest():
            if out := state.chunk(chunk):
                yield out
            if state.late:
                raise state.overdue()
        if held := state.held():
            yield held
        state.check_end()
    except SwitchyardError as exc:
        yield state.failed(exc)
    except asyncio.CancelledError:
        state.outcome.status = "cancelled"
        raise
    finally:
        await stream.aclose()


async def wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
