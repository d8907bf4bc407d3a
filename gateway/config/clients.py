"""Bounds on client connections (`server.clients`): how long a client may take to send its
request, and how many connections one process keeps open.

uvicorn bounds neither: a client that sends half its headers, or announces a body it never
sends, would keep its connection (and a slot of the process) for ever. The HTTP server
(`gateway.http.bounded_protocol`) enforces these; `server.keep_alive_s` bounds the idle
wait between two requests. docs/reliability.md#client-side-bounds says what a client sees.
"""

from __future__ import annotations

from pydantic import Field

from gateway.config.strict import StrictConfig


class ClientsConfig(StrictConfig):
    """Bounds on reading a client's request, never on the response the gateway sends."""

    header_timeout_s: float = Field(
        20.0,
        gt=0,
        le=3600,
        description="A request's whole head (request line and headers) must arrive within "
        "this of the connection's start, or of its first byte on a kept-alive connection; "
        "else 408 and the connection closed. Apache's mod_reqtimeout starts at 20 s, Envoy "
        "advises 10 s at the edge, nginx waits 60 s; an SDK sends its head in one write.",
    )
    body_timeout_s: float = Field(
        20.0,
        gt=0,
        le=3600,
        description="The longest wait for the next bytes of a request's body (nginx's "
        "client_body_timeout, between two reads); also the body's allowance before "
        "`body_min_bytes_per_s` applies. Past it: 408 and the connection closed.",
    )
    body_min_bytes_per_s: int = Field(
        500,
        ge=0,
        le=1 << 30,
        description="A body must arrive at this average rate once `body_timeout_s` has "
        "passed (mod_reqtimeout's MinRate: each such many bytes buy a second more); "
        "0: no rate, only the gap between reads.",
    )
    max_connections: int = Field(
        4096,
        ge=1,
        le=1_000_000,
        description="Client connections one process keeps open; one more is answered 503 "
        "`too_many_connections` and closed at once. Keep it under the open-file limit "
        "(`ulimit -n`) less the connections to backends.",
    )
