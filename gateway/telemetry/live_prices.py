"""The prices the telemetry sinks charge records at, swapped when a reload changes them.

Telemetry outlives config generations (a reload keeps its thread, sinks and registry), so
its sinks read prices through this one holder rather than the book of the config they
were built with. The swap is a single attribute store: the telemetry thread sees the old
book or the new one, never a mix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.telemetry.record import usage_cost_usd

if TYPE_CHECKING:
    from policies.prices import PriceBook, Prices
    from providers.usage import Usage


class LivePrices:
    """A `PriceLookup` whose book the gateway replaces on reload (`use`)."""

    __slots__ = ("book",)

    def __init__(self, book: PriceBook) -> None:
        self.book = book

    def use(self, book: PriceBook) -> None:
        self.book = book

    def lookup(self, backend: str | None, model: str) -> Prices | None:
        return self.book.lookup(backend, model)

    def cost_usd(self, backend: str, model: str, usage: Usage) -> float:
        """What an answer cost, as its record is charged (a trace's spans say it)."""
        return usage_cost_usd(self.book.lookup(backend, model), usage)
