"""uvicorn's httptools protocol with the client bounds (`server.clients`): a request's head
and body must arrive in time, and a process keeps at most so many client connections.

uvicorn bounds only the idle wait between two requests (`timeout_keep_alive`): a client
that sends half its head, or announces a body and sends part of it, keeps its connection
for ever, and `limit_concurrency` counts such connections but refuses only requests whose
head is complete. `BoundedHttpToolsProtocol` adds, per connection:

- a cap, at `connection_made`: past `max_connections` open in this process the new
  connection gets 503 `too_many_connections` and is closed at once. A slow connection
  counts until its own bound ends it, which is what frees its slot;
- a `RequestClock` read by one timer: a head not complete in time, or a body whose next
  bytes or average rate lag, ends with 408 `request_timeout` and the connection closed.
  If a response has begun (an early 413, a response under way while the next request
  trickles in or waits queued behind it), nothing is written into it: the connection
  closes once it is sent, and a request queued behind it is never started. Only
  reading the request is bounded, never the response: a stream may take its minutes.
  While the server itself holds the reading (the app not reading the body yet, a
  pipelined request queued, `Expect: 100-continue` unanswered) the client's time stops.

The timer is lazy: a phase change moves a deadline, and the timer, when it fires, re-arms
itself for the current one, so a request costs a few attribute writes and one clock reading
per read, no timer of its own. Each ended connection is counted and logged by the
`ClientGuard` the app put in the lifespan state; without one (another app) this is
uvicorn's protocol unchanged.

This reaches into uvicorn's private protocol (the hooks it overrides, the attributes it
reads): pyproject caps uvicorn below its next minor version, and `bounded_supported`
checks them, so that another uvicorn gets its plain protocol with a warning instead.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from gateway.http.client_guard import GUARD_STATE_KEY, ClientGuard, Phase, RequestClock
from gateway.telemetry.client_metrics import Bound

HOOKS = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_message_begin",
    "on_headers_complete",
    "on_body",
    "on_message_complete",
    "on_response_complete",
    "timeout_keep_alive_handler",
)
"""uvicorn's methods the protocol overrides (each calls uvicorn's)."""
PROTOCOL_ATTRIBUTES = ("app_state", "loop", "transport", "flow", "client", "cycle", "pipeline")
CYCLE_ATTRIBUTES = (
    "response_started",
    "response_complete",
    "keep_alive",
    "disconnected",
    "message_event",
    "waiting_for_100_continue",
)
"""What it reads and writes of uvicorn's private protocol and `RequestResponseCycle`."""

_IDLE, _HEAD, _BODY, _ENDED = Phase.IDLE, Phase.HEAD, Phase.BODY, Phase.ENDED
"""Read for every request: a module's name is quicker to look up than an Enum member."""


def bounded_supported() -> bool:
    """Whether the installed uvicorn's httptools protocol still has every hook and sets
    every attribute the bounded protocol uses (read off the `__init__`s, as
    `splice_supported` does)."""
    hooks = all(callable(getattr(HttpToolsProtocol, hook, None)) for hook in HOOKS)
    made = set(HttpToolsProtocol.__init__.__code__.co_names)
    cycle = set(RequestResponseCycle.__init__.__code__.co_names)
    flow = set(FlowControl.__init__.__code__.co_names)
    parameters = inspect.signature(HttpToolsProtocol.__init__).parameters
    return (
        hooks
        and all(name in made for name in PROTOCOL_ATTRIBUTES)
        and all(name in cycle for name in CYCLE_ATTRIBUTES)
        and "read_paused" in flow
        and "app_state" in parameters
    )


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the client bounds of the app's `ClientGuard`."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        guard = app_state.get(GUARD_STATE_KEY)
        self._guard = guard if isinstance(guard, ClientGuard) else None
        self._clock: RequestClock | None = None
        """Set while an admitted connection is open."""
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        self._read_at = 0.0
        """When the bytes being parsed were read."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        guard = self._guard
        if guard is None:
            return
        if not guard.admit():
            transport.write(guard.answer("max_connections", self.server_state.default_headers))
            transport.close()
            guard.ended("max_connections", self.client, "answered")
            return
        self._clock = clock = RequestClock(guard.bounds)
        self._arm(clock.head(self.loop.time()))

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._clock is not None and self._guard is not None:
            self._clock = None
            self._guard.release()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        clock = self._clock
        if clock is not None:
            # One clock reading per read: the parser's callbacks below happen "at" it.
            self._read_at = now = self.loop.time()
            if clock.phase is _IDLE:
                # Any byte after a whole request starts the next head's clock, even bytes
                # the parser skips (CRLFs between requests), which stop uvicorn's idle timer.
                self._arm(clock.head(now))
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        clock = self._clock
        if clock is not None and clock.phase is _IDLE:  # a next request, same read
            self._arm(clock.head(self._read_at))

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        clock = self._clock
        if clock is not None and clock.phase is _HEAD:
            self._arm(clock.body(self._read_at))

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        clock = self._clock
        if clock is not None and clock.phase is _BODY:
            clock.read(self._read_at, len(body))

    def on_message_complete(self) -> None:
        super().on_message_complete()
        clock = self._clock
        if clock is not None and clock.phase is _BODY:
            clock.idle()

    def on_response_complete(self) -> None:
        clock = self._clock
        if clock is not None and clock.phase is _ENDED:
            # A bound ended the request being read while this response was under way:
            # nothing more on this connection (not a request queued behind it either).
            self.transport.close()
        super().on_response_complete()

    def timeout_keep_alive_handler(self) -> None:
        if self._guard is not None and not self.transport.is_closing():
            self._guard.idle_closed()
        super().timeout_keep_alive_handler()

    def _arm(self, at: float) -> None:
        """Have the timer fire by `at`: an earlier one stays (it re-arms when it fires)."""
        timer = self._timer
        if timer is not None:
            if self._timer_at <= at:
                return
            timer.cancel()
        self._timer = self.loop.call_at(at, self._check)
        self._timer_at = at

    def _check(self) -> None:
        self._timer = None
        clock = self._clock
        if clock is None or self.transport.is_closing():
            return
        now = self.loop.time()
        if self._held():
            clock.restart(now)
        bound = clock.overdue(now)
        if bound is not None:
            self._end(clock, bound)
            return
        at = clock.deadline()
        if at is not None:
            self._arm(at)

    def _held(self) -> bool:
        """The server, not the client, is why nothing is read now."""
        cycle = self.cycle
        return self.flow.read_paused or (cycle is not None and cycle.waiting_for_100_continue)

    def _end(self, clock: RequestClock, bound: Bound) -> None:
        """End the connection for `bound`: 408 when no response is under way on it."""
        guard = self._guard
        assert guard is not None
        reading_body = clock.phase is _BODY
        clock.end()
        cycle = self.cycle
        if cycle is None or (not reading_body and cycle.response_complete):
            self._answer(guard, bound)  # a head, with nothing else under way
        elif reading_body and not cycle.response_started and not self.pipeline:
            # The app waits for this body: it sees the client gone and sends nothing more.
            cycle.disconnected = True
            cycle.message_event.set()
            self._answer(guard, bound)
        elif cycle.response_complete:
            self.transport.close()  # answered early (413): the rest of its body is not read
            guard.ended(bound, self.client, "closed")
        else:
            # A response under way (or one queued before this request) is sent whole, then
            # the connection closes (`on_response_complete`); the header says so if it can.
            cycle.keep_alive = False
            guard.ended(bound, self.client, "after_response")

    def _answer(self, guard: ClientGuard, bound: Bound) -> None:
        self.transport.write(guard.answer(bound, self.server_state.default_headers))
        self.transport.close()
        guard.ended(bound, self.client, "answered")
