"""Client bounds, the part that knows no server: `RequestClock` (one per connection: by when
the request being read must have arrived, and which bound it broke) and `ClientGuard` (one
per process: the bounds, the count of open connections, the answers, the log line).

The HTTP server (`gateway.http.bounded_protocol`) drives both; the app's lifespan builds
the guard from `server.clients` and hands it to the server in the lifespan state
(`GUARD_STATE_KEY`), which uvicorn gives every connection it makes.
"""

from __future__ import annotations

import http
import logging
from enum import Enum
from typing import Literal

from gateway.config.clients import ClientsConfig
from gateway.errors import RequestTimeout, SwitchyardError, TooManyConnections
from gateway.http.responses import error_bytes, error_headers
from gateway.telemetry.client_metrics import Bound, ConnectionTally
from gateway.telemetry.log_budget import LogBudget

logger = logging.getLogger("switchyard")

GUARD_STATE_KEY = "switchyard.client_guard"
"""Where the lifespan state holds the process's `ClientGuard`."""
LOG_BURST = 10
LOG_EVERY_S = 10.0
"""Lines about ended connections: 10 at once, then one per 10 s (a flood of slow clients
logs under 9,000 lines a day); each line says how many were held back before it."""
SLACK_S = 0.001
"""A timer may fire this much before its time (the loop's clock resolution): already due."""


Ending = Literal["answered", "closed", "after_response"]
"""How a bound ended a connection: its answer (408, 503) sent and closed; closed (its
response had been sent); to be closed once the response under way is sent."""
_ENDINGS = {"closed": "closed", "after_response": "closed once its response is sent"}


class Phase(Enum):
    IDLE = "idle"
    """Nothing being read: between requests (`keep_alive_s` bounds that) or answering."""
    HEAD = "head"
    BODY = "body"
    ENDED = "ended"
    """A bound ended the connection (or will once its response is sent)."""


class RequestClock:
    """By when the request being read must have arrived.

    Its head: within `header_timeout_s` of the connection's start, or of the first byte of
    a next request. Its body: never `body_timeout_s` without a byte, and, with a rate, by
    `since + body_timeout_s + received / body_min_bytes_per_s` (each so many bytes buy a
    second more, after an allowance of `body_timeout_s`).
    """

    __slots__ = ("_body_s", "_head_s", "_last", "_rate", "_received", "_since", "phase")

    def __init__(self, bounds: ClientsConfig) -> None:
        # Plain floats: these are read for every request.
        self._head_s = bounds.header_timeout_s
        self._body_s = bounds.body_timeout_s
        self._rate = float(bounds.body_min_bytes_per_s)
        self.phase = Phase.IDLE
        self._since = self._last = 0.0
        self._received = 0

    def head(self, now: float) -> float:
        """A request's first byte (or the connection) at `now`; returns its deadline."""
        self.phase = Phase.HEAD
        self._since = now
        return now + self._head_s

    def body(self, now: float) -> float:
        """The head is complete at `now`; returns the body's first deadline."""
        self.phase = Phase.BODY
        self._since = self._last = now
        self._received = 0
        return now + self._body_s

    def read(self, now: float, size: int) -> None:
        self._last = now
        self._received += size

    def idle(self) -> None:
        """The request is read whole."""
        self.phase = Phase.IDLE

    def end(self) -> None:
        self.phase = Phase.ENDED

    def restart(self, now: float) -> None:
        """The server held the reading (the app not reading yet): none of the time so far
        counts against the client."""
        self._since = self._last = now
        self._received = 0

    def deadline(self) -> float | None:
        if self.phase is Phase.HEAD:
            return self._since + self._head_s
        if self.phase is not Phase.BODY:
            return None
        gap = self._last + self._body_s
        if not self._rate:
            return gap
        return min(gap, self._since + self._body_s + self._received / self._rate)

    def overdue(self, now: float) -> Bound | None:
        """The bound the request has broken by `now`, if any."""
        due = self.deadline()
        if due is None or now + SLACK_S < due:
            return None
        if self.phase is Phase.HEAD:
            return "header_timeout"
        gap_due = self._last + self._body_s
        return "body_timeout" if now + SLACK_S >= gap_due else "body_rate"


class ClientGuard:
    """One process's client bounds, shared by all its connections (on the event loop)."""

    def __init__(
        self, bounds: ClientsConfig, tally: ConnectionTally, budget: LogBudget | None = None
    ) -> None:
        self.bounds = bounds
        self.tally = tally
        self._budget = budget or LogBudget(LOG_BURST, LOG_EVERY_S)
        self._errors: dict[Bound, SwitchyardError] = {
            "header_timeout": RequestTimeout(
                f"the request's head did not arrive within {bounds.header_timeout_s:g} s"
            ),
            "body_timeout": RequestTimeout(
                f"the request body's next bytes did not arrive within {bounds.body_timeout_s:g} s"
            ),
            "body_rate": RequestTimeout(
                f"the request body arrived slower than {bounds.body_min_bytes_per_s} bytes/s"
            ),
            "max_connections": TooManyConnections(
                f"the gateway has its limit of {bounds.max_connections} client connections "
                "open; try again shortly"
            ),
        }
        self._answers = {bound: _answer(error) for bound, error in self._errors.items()}

    def admit(self) -> bool:
        """A new connection: True (counted open) while the process holds fewer than
        `max_connections`, else False (refuse it)."""
        if self.tally.open >= self.bounds.max_connections:
            return False
        self.tally.open += 1
        return True

    def release(self) -> None:
        """An admitted connection has closed."""
        self.tally.open -= 1

    def answer(self, bound: Bound, default_headers: list[tuple[bytes, bytes]]) -> bytes:
        """The whole response a bound's connection gets before it is closed."""
        head, body = self._answers[bound]
        extra = b"".join(name + b": " + value + b"\r\n" for name, value in default_headers)
        return head + extra + b"\r\n" + body

    def ended(self, bound: Bound, peer: tuple[str, int] | None, how: Ending) -> None:
        """A bound ended a connection: counted, and logged within the log budget."""
        self.tally.count(bound)
        held = self._budget.take()
        if held is None:
            return
        error = self._errors[bound]
        logger.warning(
            "client %s: %s; %s%s",
            _address(peer),
            error.message,
            f"answered {error.status} and closed" if how == "answered" else _ENDINGS[how],
            f" ({held} more such lines not logged)" if held else "",
        )

    def idle_closed(self) -> None:
        """A kept-alive connection closed for being idle: counted, not logged (routine)."""
        self.tally.count("keep_alive")


def _address(peer: tuple[str, int] | None) -> str:
    if peer is None:
        return "?"
    host, port = peer
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _answer(error: SwitchyardError) -> tuple[bytes, bytes]:
    """Status line and own headers (without the server's date), and the body."""
    body = error_bytes(error)
    headers = {
        "content-type": "application/json",
        "content-length": str(len(body)),
        "connection": "close",
        **error_headers(error),
    }
    status = http.HTTPStatus(error.status)
    head = f"HTTP/1.1 {status.value} {status.phrase}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()
    )
    return head.encode("ascii"), body
