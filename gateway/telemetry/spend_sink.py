"""A telemetry sink that prices each finished request for the budgets' accounting.

Runs on the telemetry thread, so pricing stays off the request path: the cost is the
record's own (`RequestRecord.cost_usd` at the prices of the backend and model that
answered, read through telemetry's live prices, which follow a reload; failed attempts
report no usage and cost nothing), handed on with the key, team and route to a callback
that must not block (the budget ledger's bounded queue).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.telemetry.record import RequestRecord
    from policies.prices import PriceLookup

OnSpend = Callable[[str | None, str | None, str, float, float], None]
"""(key id, team, route, cost in USD, when it finished in Unix seconds)."""


class SpendSink:
    name = "spend"

    def __init__(self, prices: PriceLookup, on_spend: OnSpend) -> None:
        self._prices = prices
        self._on_spend = on_spend

    def consume(self, record: RequestRecord) -> None:
        if record.backend is None or record.usage is None:
            return
        cost = record.cost_usd(self._prices.lookup(record.backend, record.model))
        if cost > 0:
            self._on_spend(record.key_id, record.team, record.route, cost, record.at + record.e2e_s)
