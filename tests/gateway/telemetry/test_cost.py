"""A finished request's cost: from its normalised usage (cache reads and writes, reasoning,
the tier of its prompt, the fee) at the prices of the backend and model that answered, the
same in the store's rows, Prometheus (by route, backend and model) and the dashboard."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.telemetry.config import TelemetryConfig
from gateway.telemetry.live_prices import LivePrices
from gateway.telemetry.metrics import GatewayMetrics
from gateway.telemetry.series import DashboardSeries
from gateway.telemetry.spend_sink import SpendSink
from gateway.telemetry.store_sink import StoreSink
from policies.prices import PriceBook, Prices
from providers.usage import Usage
from tests.gateway.telemetry.builders import record

SONNET = Prices.model_validate(
    {
        "input_usd_per_mtok": 3.0,
        "cached_input_usd_per_mtok": 0.3,
        "cache_write_usd_per_mtok": 3.75,
        "output_usd_per_mtok": 15.0,
        "reasoning_usd_per_mtok": 20.0,
        "request_usd": 0.001,
        "tiers": [{"above_prompt_tokens": 200_000, "input_usd_per_mtok": 6.0}],
    }
)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(None, 0.0, id="no-usage-no-charge"),
        pytest.param(
            # Anthropic's, normalised: prompt = input + cache read + cache write.
            Usage(10_000, 500, cached_tokens=6_000, cache_write_tokens=3_000),
            0.001 + (1_000 * 3.0 + 6_000 * 0.3 + 3_000 * 3.75 + 500 * 15.0) / 1e6,
            id="cache-reads-and-writes",
        ),
        pytest.param(
            Usage(1_000, 500, cached_tokens=None, reasoning_tokens=200),
            0.001 + (1_000 * 3.0 + 300 * 15.0 + 200 * 20.0) / 1e6,
            id="reasoning",
        ),
        pytest.param(
            Usage(300_000, 0, cached_tokens=None),
            0.001 + 300_000 * 6.0 / 1e6,
            id="long-context-tier",
        ),
    ],
)
def test_record_cost(usage: Usage | None, expected: float) -> None:
    assert record(usage=usage).cost_usd(SONNET) == pytest.approx(expected)


class Rows:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def put(self, table: Any, row: dict[str, Any]) -> bool:
        self.rows.append(row)
        return True


def test_every_sink_prices_the_model_that_answered() -> None:
    # The record's model is "m" (no attempt names another); backend "a" has a price for it.
    book = PriceBook(
        {"a": Prices(input_usd_per_mtok=100.0)}, {("a", "m"): Prices(input_usd_per_mtok=1.0)}
    )
    made = record(usage=Usage(1_000_000, 0, cached_tokens=None), at=1_000_000.0)
    metrics = GatewayMetrics(prices=book)
    metrics.consume(made)
    text = metrics.render()[0].decode()
    costs = {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "switchyard_cost_usd_total"
    }
    assert costs == {(("backend", "a"), ("model", "m"), ("route", "default")): 1.0}
    rows = Rows()
    StoreSink(rows, {}, book).consume(made)
    assert rows.rows[0]["cost_usd"] == 1.0
    series = DashboardSeries(TelemetryConfig(), book, {}, clock=lambda: 1_000_000.0)
    series.consume(made)
    assert series.snapshot(600)["fleet"]["summary"]["spend_usd"] == 1.0


def test_a_reload_swaps_the_prices_the_sinks_charge() -> None:
    live = LivePrices(PriceBook({"a": Prices(input_usd_per_mtok=1.0)}, {}))
    rows = Rows()
    sink = StoreSink(rows, {}, live)
    made = record(usage=Usage(1_000_000, 0, cached_tokens=None))
    sink.consume(made)
    live.use(PriceBook({"a": Prices(input_usd_per_mtok=2.0)}, {}))
    sink.consume(made)
    assert [row["cost_usd"] for row in rows.rows] == [1.0, 2.0]


def test_budget_spend_follows_a_reload_of_the_prices() -> None:
    live = LivePrices(PriceBook({"a": Prices(input_usd_per_mtok=1.0)}, {}))
    spent: list[float] = []
    sink = SpendSink(live, lambda key, team, route, cost, at: spent.append(cost))
    made = record(usage=Usage(1_000_000, 0, cached_tokens=None))

    sink.consume(made)
    live.use(PriceBook({"a": Prices(input_usd_per_mtok=2.0)}, {}))
    sink.consume(made)

    assert spent == [1.0, 2.0]
