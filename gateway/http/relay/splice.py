"""Relaying a stream by callbacks: each upstream chunk written to the client's socket from
the upstream connection's data callback, with no task woken and no ASGI `send` per chunk.

The pulled relay (`streaming.relay`) costs a task wake-up, a chain of async generators and
an ASGI message per chunk: on uvicorn that is more CPU per chunk at one stream than the
whole relay may cost (docs/benchmarks.md). When the upstream stream can be piped (the
plain-HTTP client's, uncompressed) and the server is uvicorn's httptools protocol with a
chunked response, `Splice` writes the chunked framing itself to the connection's transport
and the response task only waits for the end. Everything else (another server, an HTTP/1.0
client, an aiohttp or native-provider stream) takes the pulled relay; both keep their books
through the same `RelayState`. A translating ingress's stream is spliced too, its format's
events written from the same callback (`Shape`).

Flow control: when the client's transport asks writers to pause, the splice pauses reading
the backend until uvicorn says the client can take more, or until the request's deadline,
which then ends the stream.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Protocol

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from gateway.errors import SwitchyardError
from providers.errors import UpstreamProtocolError

if TYPE_CHECKING:
    from starlette.types import Send

    from gateway.http.relay.streaming import RelayState
    from providers.base import PipeableStream, StreamValve

logger = logging.getLogger("switchyard")

CYCLE_ATTRIBUTES = (
    "transport",
    "flow",
    "disconnected",
    "response_started",
    "response_complete",
    "chunked_encoding",
)
"""What `ClientWriter` reads of uvicorn's private `RequestResponseCycle`: pyproject caps
uvicorn below its next minor version while it does, and `splice_supported` checks it."""


def splice_supported() -> bool:
    """Whether the installed uvicorn's httptools cycle still sets every attribute the writer
    reads (`CYCLE_ATTRIBUTES`, read off its `__init__`); without them streams go the ASGI
    way, correct but with more CPU per chunk."""
    assigned = set(RequestResponseCycle.__init__.__code__.co_names)
    return all(name in assigned for name in CYCLE_ATTRIBUTES)


class BodyWriter(Protocol):
    """Where a splice writes the response's body."""

    def write(self, data: bytes) -> bool:
        """Write `data` (b"": nothing); True when the client cannot take more now (then stop
        reading the backend until `writable`)."""
        ...

    async def writable(self) -> None:
        """Until the client can take more."""
        ...


class Shape(Protocol):
    """A client format's bytes for the relayed OpenAI bytes (`translated.Translated`);
    a splice without one relays the bytes as they came."""

    @property
    def done(self) -> bool:
        """The client's stream has ended early (a translation that broke): relay no more."""
        ...

    def chunk(self, data: bytes) -> bytes: ...

    def end(self) -> bytes:
        """What closes the client's stream once the backend's ended properly."""
        ...

    def failed(self, state: RelayState, exc: SwitchyardError) -> bytes:
        """The relay broke with `exc` (recorded through `state`): what ends the stream."""
        ...


class ClientWriter:
    """Body bytes of a started chunked response, written straight to the client's
    transport, framed as uvicorn frames them; nothing once the client has gone."""

    __slots__ = ("_cycle", "_flow", "_transport")

    def __init__(self, cycle: RequestResponseCycle) -> None:
        self._cycle = cycle
        self._transport = cycle.transport
        self._flow = cycle.flow

    @classmethod
    def of(cls, send: Send) -> ClientWriter | None:
        """The writer under uvicorn's `send` once the response has started chunked; None
        on any other server or framing (the caller sends through ASGI instead)."""
        cycle = getattr(send, "__self__", None)
        if type(cycle) is not RequestResponseCycle:
            return None
        try:
            started = cycle.response_started and not cycle.response_complete
            chunked = cycle.chunked_encoding is True and not cycle.disconnected
            writer = cls(cycle)
        except AttributeError:  # another uvicorn's cycle: the ASGI way, then
            return None
        return writer if started and chunked else None

    def write(self, data: bytes) -> bool:
        if self._cycle.disconnected:
            return False
        if data:
            self._transport.write(b"%x\r\n%b\r\n" % (len(data), data))
        return bool(self._flow.write_paused)

    async def writable(self) -> None:
        """Until the client's transport takes writes again."""
        await self._cycle.flow.drain()


class Splice:
    """Relays one piped stream by callbacks (a `StreamSink`); `run` waits for its end."""

    __slots__ = (
        "_closed",
        "_done",
        "_drain",
        "_shape",
        "_state",
        "_stream",
        "_valve",
        "_writer",
    )

    def __init__(
        self, stream: PipeableStream, state: RelayState, shape: Shape | None = None
    ) -> None:
        self._stream = stream
        self._state = state
        self._shape = shape
        """The client's format; None: OpenAI's own, the bytes as they came."""
        self._writer: BodyWriter | None = None
        self._valve: StreamValve | None = None
        self._done: asyncio.Future[None] | None = None
        self._drain: asyncio.Task[None] | None = None
        self._closed = False

    async def run(self, writer: BodyWriter) -> None:
        """Relay the whole stream through `writer`; returns once it has ended (with the
        backend's last bytes or an error event written), closing the upstream stream."""
        self._writer = writer
        self._done = done = asyncio.get_running_loop().create_future()
        try:
            if self._relay(self._state.begin(self._stream.first_chunk)):
                self._valve = self._stream.pipe(self)
                if not self._closed and self._write(b""):  # b"": is the client paused?
                    self._hold()
            await done
        except asyncio.CancelledError:
            self._state.outcome.status = "cancelled"
            raise
        finally:
            self._closed = True
            if self._drain is not None:
                self._drain.cancel()
            await self._stream.aclose()

    def data(self, chunk: bytes) -> None:
        # Per chunk: kept short, it runs from the upstream connection's callback.
        if self._closed:
            return
        try:
            state = self._state
            out = state.chunk(chunk)
            if self._shape is not None:
                if not self._relay(out):
                    return
            else:  # the usual case, without `_relay`'s calls
                writer = self._writer
                assert writer is not None
                if writer.write(out):
                    self._hold()
            if state.late:
                self._fail(state.overdue())
        except Exception:  # raised into the connection, it would read as the backend's
            logger.exception("relaying a stream chunk failed in the gateway")
            self._bug()

    def end(self, error: Exception | None) -> None:
        if self._closed:
            return
        try:
            self._end(error)
        except Exception:  # as in `data`
            logger.exception("ending a relayed stream failed in the gateway")
            self._bug()

    def _end(self, error: Exception | None) -> None:
        if error is not None:
            self._fail(
                error
                if isinstance(error, SwitchyardError)
                else UpstreamProtocolError(f"the stream broke: {type(error).__name__}")
            )
            return
        state = self._state
        if not self._relay(state.held()):
            return
        try:
            state.check_end()
        except SwitchyardError as exc:
            self._fail(exc)
            return
        if self._shape is not None:
            self._write(self._shape.end())
        self._close()

    def _bug(self) -> None:
        """The gateway's own code broke in a callback: end the stream with the gateway's
        error (not retryable, so not counted against the backend)."""
        if self._closed:
            return
        try:
            self._fail(SwitchyardError("internal error in the gateway while relaying the stream"))
        except Exception:  # the error event itself could not be written: end it anyway
            logger.exception("the error event of a broken relay could not be written")
            self._close()

    def _relay(self, data: bytes) -> bool:
        """Write `data` in the client's format; False when that ended the client's stream."""
        shape = self._shape
        if shape is not None:
            data = shape.chunk(data)
        paused = self._write(data)
        if shape is not None and shape.done:
            self._close()
            return False
        if paused:
            self._hold()
        return True

    def _write(self, data: bytes) -> bool:
        assert self._writer is not None
        return self._writer.write(data)

    def _fail(self, exc: SwitchyardError) -> None:
        state = self._state
        self._write(state.failed(exc) if self._shape is None else self._shape.failed(state, exc))
        self._close()

    def _close(self) -> None:
        self._closed = True
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _hold(self) -> None:
        """Stop reading the backend until the client can take more."""
        if self._drain is not None or self._valve is None or self._closed:
            return
        self._valve.pause()
        self._drain = asyncio.ensure_future(self._resume())

    async def _resume(self) -> None:
        assert self._writer is not None
        left = self._state.left_s()
        try:
            # A client that stops reading holds the backend no longer than the request's
            # deadline: then the stream ends (the error event waits in the client's buffer).
            await asyncio.wait_for(self._writer.writable(), None if math.isinf(left) else left)
        except TimeoutError:
            self._drain = None
            if not self._closed:
                self._fail(self._state.overdue())
            return
        self._drain = None
        if not self._closed and self._valve is not None:
            self._valve.resume()
