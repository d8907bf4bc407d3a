"""What the dispatcher tells a trace of each upstream attempt (`gateway.tracing` implements
it; the dispatcher knows only this contract, and nothing when tracing is off)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class AttemptSpan(Protocol):
    """One attempt on one backend, as the trace sees it."""

    @property
    def headers(self) -> Mapping[str, str]:
        """What the upstream request carries of the trace (W3C `traceparent`)."""
        ...

    def ended(self, outcome: str) -> None:
        """The attempt's outcome: "ok" (committed: its span lasts until the request's
        end), or the error code that made the dispatcher move on."""
        ...


class AttemptTracer(Protocol):
    """A request's trace, opening a span per attempt."""

    def attempt(self, backend: str, route: str, model: str) -> AttemptSpan: ...
