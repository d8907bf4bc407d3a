"""The metrics sink: whole-number counts held back during a drain read, after its flush,
exactly as one update per request left them; histograms still see every value."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from gateway.telemetry.metrics import GatewayMetrics
from gateway.telemetry.record import RequestRecord
from policies.prices import PriceBook, Prices
from providers.usage import Usage
from tests.gateway.telemetry.builders import record

BOOK = PriceBook({"a": Prices(input_usd_per_mtok=0.3, output_usd_per_mtok=1.1)}, {})


def _records() -> list[RequestRecord]:
    return [
        record(usage=Usage(4102, 16, 3968), e2e_s=0.41),
        record(usage=Usage(12, 4, None), stream=True, ttft_s=0.05, decode_s=0.2),
        record(
            usage=Usage(10, 2, 0),
            attempts=(("b", "upstream_unavailable", 5.0), ("a", "ok", 100.0)),
        ),
        record(
            backend=None,
            status=502,
            error="upstream_unavailable",
            attempts=(("a", "upstream_unavailable", 5.0), ("b", "upstream_timeout", 9.0)),
        ),
        record(status=499, error="client_disconnected", e2e_s=2.0),
        record(usage=Usage(7, 3, 1), e2e_s=0.003),
    ]


def _values(metrics: GatewayMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics.render()[0].decode())
        for s in family.samples
        if not s.name.endswith("_created")
    }


def test_a_drain_flushed_once_reads_as_one_update_per_request() -> None:
    one_by_one, batched = GatewayMetrics(prices=BOOK), GatewayMetrics(prices=BOOK)
    for made in _records():
        one_by_one.consume(made)
        one_by_one.flush()
    for made in _records():
        batched.consume(made)
    batched.flush()
    values = _values(batched)
    assert values == _values(one_by_one)
    requests = ("switchyard_requests_total", "switchyard_team_requests_total")
    assert sum(v for (name, _), v in values.items() if name in requests) == 2 * 6
    assert values[("switchyard_prompt_tokens_total", (("backend", "a"), ("route", "default")))] == (
        4102 + 12 + 10 + 7
    )
    assert (
        values[
            (
                "switchyard_retries_total",
                (("backend", "b"), ("outcome", "upstream_unavailable"), ("route", "default")),
            )
        ]
        == 1
    )


def test_counts_wait_for_the_flush_but_latencies_do_not() -> None:
    metrics = GatewayMetrics()
    metrics.consume(record(e2e_s=0.3))
    key = (("backend", "a"), ("route", "default"))
    assert _values(metrics)[("switchyard_request_duration_seconds_count", key)] == 1
    held = (
        "switchyard_requests_total",
        (
            ("backend", "a"),
            ("endpoint", "chat.completions"),
            ("route", "default"),
            ("status_class", "2xx"),
        ),
    )
    assert _values(metrics)[held] == 0
    metrics.flush()
    assert _values(metrics)[held] == 1
