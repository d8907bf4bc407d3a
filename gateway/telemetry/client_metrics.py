"""Client connections: how many are open, and how many the client bounds ended
(`server.clients`, `server.keep_alive_s`), counted by the HTTP server and exported by the
sampler."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge

Bound = Literal["header_timeout", "body_timeout", "body_rate", "max_connections", "keep_alive"]
"""What ended a client connection: its head or its body too slow, the process full (the
connection refused), idle past `keep_alive_s`."""


@dataclass(slots=True)
class ConnectionTally:
    """This process's client connections, written by the HTTP server on the event loop."""

    open: int = 0
    closed: dict[Bound, int] = field(default_factory=dict)
    """Running totals since start, by bound."""

    def count(self, bound: Bound) -> None:
        self.closed[bound] = self.closed.get(bound, 0) + 1


class ClientMetrics:
    """Part of `GatewayMetrics`' registry; `bound` takes the five values of `Bound`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.open = Gauge(
            "switchyard_client_connections",
            "Client connections open now (summed over workers).",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.closed = Counter(
            "switchyard_client_connections_closed",
            "Client connections the gateway ended for a bound: header_timeout, "
            "body_timeout, body_rate (408), max_connections (refused with 503), keep_alive "
            "(idle).",
            ("bound",),
            registry=registry,
        )
