"""ASGI response that sends pre-rendered bytes when a pacer says so and notices clients leaving."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from starlette.types import Message, Receive, Scope, Send

from emulator.engine.pacing import LinearPacer, Pacer
from emulator.engine.runtime_state import EmulatorStats
from emulator.wire.openai_bodies import Payload

# (offset in the pacer's unit, payload); offsets never decrease.
TimedEvent = tuple[float, Payload]


class TimedResponse:
    """Sends ``events`` when ``pacer`` (default: seconds, real time) says they are due.

    Events already due go out in one write. A body sent whole in one write gets a
    content-length. A client that disconnects cancels the delivery and counts as
    ``cancelled``. When ``complete`` is false the body is left unfinished, which makes
    the server drop the connection: that is how a stream is cut abruptly. ``pause``
    (events sent, seconds) stalls the delivery once, after that many events.
    """

    def __init__(
        self,
        *,
        status: int,
        headers: list[tuple[bytes, bytes]],
        events: Sequence[TimedEvent],
        stats: EmulatorStats,
        stall_s: float = 0.0,
        headers_first: bool = False,
        complete: bool = True,
        ok: bool = True,
        pacer: Pacer | None = None,
        pause: tuple[int, float] | None = None,
    ) -> None:
        self._status = status
        self._headers = headers
        self._events = events
        self._pacer: Pacer = pacer or LinearPacer()
        self._stats = stats
        self._stall_s = stall_s
        self._headers_first = headers_first
        self._complete = complete
        self._ok = ok and complete and status < 400
        self._pause = pause

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stats = self._stats
        stats.received += 1
        stats.in_flight += 1
        try:
            if self._waits():
                delivered = await self._deliver_watched(receive, send)
            else:
                # Nothing to wait for: skip the watcher task, this is the benchmark hot path.
                await self._deliver(send)
                delivered = True
        finally:
            stats.in_flight -= 1
            self._pacer.close()
        if not delivered:
            stats.cancelled += 1
        elif self._ok:
            stats.completed += 1
        else:
            stats.failed += 1

    def _waits(self) -> bool:
        events = self._events
        if self._stall_s > 0 or self._pause is not None:
            return True
        return bool(events) and self._pacer.may_wait(events[-1][0])

    async def _deliver_watched(self, receive: Receive, send: Send) -> bool:
        """Deliver unless the client leaves first; False when it left."""
        delivery = asyncio.ensure_future(self._deliver(send))
        departure = asyncio.ensure_future(_client_departure(receive))
        try:
            await asyncio.wait((delivery, departure), return_when=asyncio.FIRST_COMPLETED)
        finally:
            departure.cancel()
            if not delivery.done():
                delivery.cancel()
        if delivery.done() and not delivery.cancelled():
            delivery.result()  # re-raises a delivery error, if any
            return True
        await asyncio.wait((delivery,))  # let the cancelled delivery unwind
        return False

    async def _deliver(self, send: Send) -> None:
        if self._stall_s > 0:
            await asyncio.sleep(self._stall_s)
        pacer = self._pacer
        pacer.start()
        headers_sent = self._headers_first
        if headers_sent:
            await send(self._response_start(None))
        events, count, first = self._events, len(self._events), 0
        while first < count:
            await pacer.wait_until(events[first][0])
            end = _due_until(events, first, pacer.reached())
            pause_at, pause_s = self._pause or (0, 0.0)
            if first < pause_at < end:
                end = pause_at
            body = b"".join(_render(event[1]) for event in events[first:end])
            final = end == count and self._complete
            if not headers_sent:
                await send(self._response_start(len(body) if final else None))
                headers_sent = True
            await send({"type": "http.response.body", "body": body, "more_body": not final})
            first = end
            if end == pause_at:
                await asyncio.sleep(pause_s)
        if not headers_sent:
            await send(self._response_start(None))
        if count == 0 and self._complete:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _response_start(self, content_length: int | None) -> Message:
        headers = self._headers
        if content_length is not None:
            headers = [*headers, (b"content-length", str(content_length).encode())]
        return {"type": "http.response.start", "status": self._status, "headers": headers}


def _render(payload: Payload) -> bytes:
    return payload if isinstance(payload, bytes) else payload()


def _due_until(events: Sequence[TimedEvent], first: int, elapsed: float) -> int:
    """Index after the last event due by ``elapsed``; always past ``first``."""
    end = first + 1
    while end < len(events) and events[end][0] <= elapsed:
        end += 1
    return end


async def _client_departure(receive: Receive) -> None:
    # The request body was already read, so the next message is the disconnect.
    while (await receive())["type"] != "http.disconnect":
        pass
